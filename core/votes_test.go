package core_test

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/govgate/govgate/core"
)

// pack128 packs three values as GovernorCountingFractional's params.
func pack128(against, forV, abstain *big.Int) []byte {
	out := make([]byte, core.FractionalParamsLen)
	against.FillBytes(out[0:16])
	forV.FillBytes(out[16:32])
	abstain.FillBytes(out[32:48])
	return out
}

func TestSplitVote(t *testing.T) {
	w := big.NewInt(1000)
	max128 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
	for _, c := range []struct {
		name                   string
		support                uint8
		params                 []byte
		against, forV, abstain string
	}{
		{"against", 0, nil, "1000", "0", "0"},
		{"for", 1, nil, "0", "1000", "0"},
		{"abstain", 2, nil, "0", "0", "1000"},
		{"for with params (Simple ignores them)", 1, []byte{1, 2, 3}, "0", "1000", "0"},
		{"split", 255, pack128(big.NewInt(100), big.NewInt(700), big.NewInt(200)), "100", "700", "200"},
		{"partial split", 255, pack128(big.NewInt(0), big.NewInt(5), big.NewInt(0)), "0", "5", "0"},
		{"split of uint128 max", 255, pack128(max128, max128, max128), max128.String(), max128.String(), max128.String()},
		{"split too short", 255, make([]byte, 47), "0", "0", "0"},
		{"split too long", 255, make([]byte, 49), "0", "0", "0"},
		{"split without params", 255, nil, "0", "0", "0"},
		{"unknown support", 3, nil, "0", "0", "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := core.SplitVote(c.support, w, c.params)
			if s.Against.String() != c.against || s.For.String() != c.forV || s.Abstain.String() != c.abstain {
				t.Fatalf("split %s/%s/%s, want %s/%s/%s", s.Against, s.For, s.Abstain, c.against, c.forV, c.abstain)
			}
		})
	}
}

// FuzzSplitVote checks the split of any support, weight and params: a
// whole vote puts its weight on one side, a split vote's parts re-pack to
// its params byte for byte, anything else counts nothing; the input is
// never changed.
func FuzzSplitVote(f *testing.F) {
	f.Add(uint8(1), []byte{0x03, 0xe8}, []byte(nil))
	f.Add(uint8(0), []byte{0xff}, []byte{0xde, 0xad})
	f.Add(uint8(255), []byte{0x01}, pack128(big.NewInt(1), big.NewInt(2), big.NewInt(3)))
	f.Add(uint8(255), []byte{}, make([]byte, 48))
	f.Add(uint8(255), []byte{}, make([]byte, 47))
	f.Add(uint8(7), []byte{0x10}, make([]byte, 48))
	f.Fuzz(func(t *testing.T, support uint8, weightBytes, params []byte) {
		weight := new(big.Int).SetBytes(weightBytes)
		keep := bytes.Clone(params)
		s := core.SplitVote(support, weight, params)
		if !bytes.Equal(keep, params) {
			t.Fatal("params changed")
		}
		for _, n := range []*big.Int{s.Against, s.For, s.Abstain} {
			if n.Sign() < 0 {
				t.Fatalf("negative part %s", n)
			}
		}
		switch {
		case support <= 2:
			sides := []*big.Int{s.Against, s.For, s.Abstain}
			for i, n := range sides {
				want := new(big.Int)
				if i == int(support) {
					want = weight
				}
				if n.Cmp(want) != 0 {
					t.Fatalf("support %d: side %d is %s, want %s", support, i, n, want)
				}
			}
		case support == core.SupportFractional && len(params) == core.FractionalParamsLen:
			for _, n := range []*big.Int{s.Against, s.For, s.Abstain} {
				if n.BitLen() > 128 {
					t.Fatalf("part %s wider than uint128", n)
				}
			}
			if got := pack128(s.Against, s.For, s.Abstain); !bytes.Equal(got, params) {
				t.Fatalf("parts re-pack to %x, params %x", got, params)
			}
		default:
			if s.Total().Sign() != 0 {
				t.Fatalf("support %d, %d bytes of params: counted %s", support, len(params), s.Total())
			}
		}
	})
}
