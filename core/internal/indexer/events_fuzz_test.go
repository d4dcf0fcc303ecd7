package indexer

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/govgate/govgate/core"
)

// voteEvents are the vote events whose data FuzzDecodeVoteLog feeds:
// the fractional module's VoteCastWithParams, and the overridable
// module's OverrideVoteCast and VoteReduced.
var voteEvents = []string{"VoteCast", "VoteCastWithParams", "OverrideVoteCast", "VoteReduced"}

// packVote encodes a vote event's data as a governor emits it.
func packVote(t testing.TB, name string, id, weight *big.Int, support uint8, reason string, params []byte) []byte {
	t.Helper()
	args := []any{id, support, weight}
	switch name {
	case "VoteCast", "OverrideVoteCast":
		args = append(args, reason)
	case "VoteCastWithParams":
		args = append(args, reason, params)
	}
	data, err := governorABI.Events[name].Inputs.NonIndexed().Pack(args...)
	if err != nil {
		t.Fatalf("pack %s: %v", name, err)
	}
	return data
}

// FuzzDecodeVoteLog feeds arbitrary data to the decoder of vote logs. A
// log it accepts must encode back to data that decodes to the same vote,
// and a split vote (support 255, 48 bytes of params) must count exactly the
// three uint128 its params pack; nothing may panic.
func FuzzDecodeVoteLog(f *testing.F) {
	split := make([]byte, 48)
	big.NewInt(100).FillBytes(split[0:16])
	big.NewInt(700).FillBytes(split[16:32])
	big.NewInt(200).FillBytes(split[32:48])
	id := new(big.Int).Lsh(big.NewInt(1), 200)
	f.Add(uint8(1), packVote(f, "VoteCastWithParams", id, big.NewInt(1000), 255, "split", split))
	f.Add(uint8(1), packVote(f, "VoteCastWithParams", id, big.NewInt(5), 255, "", split[:47]))
	f.Add(uint8(1), packVote(f, "VoteCastWithParams", id, big.NewInt(5), 1, "nominal", nil))
	f.Add(uint8(2), packVote(f, "OverrideVoteCast", id, big.NewInt(42), 0, "not with my tokens", nil))
	f.Add(uint8(3), packVote(f, "VoteReduced", id, big.NewInt(42), 1, "", nil))
	f.Add(uint8(0), packVote(f, "VoteCast", big.NewInt(7), big.NewInt(1), 2, "", nil))
	f.Add(uint8(1), []byte{0x01})
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		name := voteEvents[int(which)%len(voteEvents)]
		def := governorABI.Events[name]
		voter := common.HexToAddress("0x8E4ED221fa034245F14205f781E0b13C5bd6a42E")
		l := types.Log{Topics: []common.Hash{def.ID, common.BytesToHash(voter.Bytes())}, Data: data}
		ev, err := decodeLog(&l)
		if err != nil {
			return
		}
		if ev.name != name || ev.voter != voter {
			t.Fatalf("decoded %s by %s from a %s by %s", ev.name, ev.voter, name, voter)
		}
		again, err := decodeLog(&types.Log{Topics: l.Topics, Data: packVote(t, name, ev.proposalID, ev.weight, ev.support, ev.reason, ev.params)})
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", name, err)
		}
		if again.proposalID.Cmp(ev.proposalID) != 0 || again.weight.Cmp(ev.weight) != 0 || again.support != ev.support ||
			again.reason != ev.reason || !bytes.Equal(again.params, ev.params) || again.hasParams != ev.hasParams {
			t.Fatalf("%s decodes to %+v, re-encoded to %+v", name, ev, again)
		}
		s := core.SplitVote(ev.support, ev.weight, ev.params)
		if ev.support == core.SupportFractional && len(ev.params) == core.FractionalParamsLen {
			want := []*big.Int{new(big.Int).SetBytes(ev.params[0:16]), new(big.Int).SetBytes(ev.params[16:32]), new(big.Int).SetBytes(ev.params[32:48])}
			if s.Against.Cmp(want[0]) != 0 || s.For.Cmp(want[1]) != 0 || s.Abstain.Cmp(want[2]) != 0 {
				t.Fatalf("split %s/%s/%s of params %x", s.Against, s.For, s.Abstain, ev.params)
			}
		}
	})
}
