package indexer

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// governorEventsABI lists the governor events govgate follows, as OpenZeppelin
// Governor 5.x declares them (IGovernor, GovernorPreventLateQuorum, and
// GovernorCountingOverridable's OverrideVoteCast and VoteReduced).
// OpenZeppelin 4.x and Compound GovernorBravo declare the same events with
// other parameter names but the same types, hence the same topics:
// ProposalCreated's startBlock/endBlock (Bravo, OZ 4) are voteStart/voteEnd,
// ProposalQueued's eta (Bravo, OZ 4) is etaSeconds, Bravo's VoteCast votes
// is weight. Decoding is by position, so the names do not matter.
const governorEventsABI = `[
{"type":"event","name":"ProposalCreated","anonymous":false,"inputs":[
 {"name":"proposalId","type":"uint256","indexed":false},
 {"name":"proposer","type":"address","indexed":false},
 {"name":"targets","type":"address[]","indexed":false},
 {"name":"values","type":"uint256[]","indexed":false},
 {"name":"signatures","type":"string[]","indexed":false},
 {"name":"calldatas","type":"bytes[]","indexed":false},
 {"name":"voteStart","type":"uint256","indexed":false},
 {"name":"voteEnd","type":"uint256","indexed":false},
 {"name":"description","type":"string","indexed":false}]},
{"type":"event","name":"VoteCast","anonymous":false,"inputs":[
 {"name":"voter","type":"address","indexed":true},
 {"name":"proposalId","type":"uint256","indexed":false},
 {"name":"support","type":"uint8","indexed":false},
 {"name":"weight","type":"uint256","indexed":false},
 {"name":"reason","type":"string","indexed":false}]},
{"type":"event","name":"VoteCastWithParams","anonymous":false,"inputs":[
 {"name":"voter","type":"address","indexed":true},
 {"name":"proposalId","type":"uint256","indexed":false},
 {"name":"support","type":"uint8","indexed":false},
 {"name":"weight","type":"uint256","indexed":false},
 {"name":"reason","type":"string","indexed":false},
 {"name":"params","type":"bytes","indexed":false}]},
{"type":"event","name":"ProposalQueued","anonymous":false,"inputs":[
 {"name":"proposalId","type":"uint256","indexed":false},
 {"name":"etaSeconds","type":"uint256","indexed":false}]},
{"type":"event","name":"ProposalExecuted","anonymous":false,"inputs":[
 {"name":"proposalId","type":"uint256","indexed":false}]},
{"type":"event","name":"ProposalCanceled","anonymous":false,"inputs":[
 {"name":"proposalId","type":"uint256","indexed":false}]},
{"type":"event","name":"ProposalExtended","anonymous":false,"inputs":[
 {"name":"proposalId","type":"uint256","indexed":true},
 {"name":"extendedDeadline","type":"uint64","indexed":false}]},
{"type":"event","name":"OverrideVoteCast","anonymous":false,"inputs":[
 {"name":"voter","type":"address","indexed":true},
 {"name":"proposalId","type":"uint256","indexed":false},
 {"name":"support","type":"uint8","indexed":false},
 {"name":"weight","type":"uint256","indexed":false},
 {"name":"reason","type":"string","indexed":false}]},
{"type":"event","name":"VoteReduced","anonymous":false,"inputs":[
 {"name":"delegate","type":"address","indexed":true},
 {"name":"proposalId","type":"uint256","indexed":false},
 {"name":"support","type":"uint8","indexed":false},
 {"name":"weight","type":"uint256","indexed":false}]}
]`

// alphaEventsABI is GovernorAlpha's VoteCast, which differs from Bravo's and
// OpenZeppelin's: a for/against boolean, no reason, nothing indexed. Its
// other events are Bravo's.
const alphaEventsABI = `[
{"type":"event","name":"VoteCast","anonymous":false,"inputs":[
 {"name":"voter","type":"address","indexed":false},
 {"name":"proposalId","type":"uint256","indexed":false},
 {"name":"support","type":"bool","indexed":false},
 {"name":"votes","type":"uint256","indexed":false}]}
]`

// tokenEventsABI lists the voting token's delegation events. ERC20Votes and
// ERC721Votes (OpenZeppelin 4.x and 5.x) and Compound's and Uniswap's
// tokens declare them alike (Compound names the amounts previousBalance
// and newBalance): the same topics.
const tokenEventsABI = `[
{"type":"event","name":"DelegateChanged","anonymous":false,"inputs":[
 {"name":"delegator","type":"address","indexed":true},
 {"name":"fromDelegate","type":"address","indexed":true},
 {"name":"toDelegate","type":"address","indexed":true}]},
{"type":"event","name":"DelegateVotesChanged","anonymous":false,"inputs":[
 {"name":"delegate","type":"address","indexed":true},
 {"name":"previousVotes","type":"uint256","indexed":false},
 {"name":"newVotes","type":"uint256","indexed":false}]}
]`

var (
	tokenABI             = mustABI(tokenEventsABI)
	delegateChanged      = tokenABI.Events["DelegateChanged"]
	delegateVotesChanged = tokenABI.Events["DelegateVotesChanged"]
	// tokenTopics is the topic-0 filter of a token's eth_getLogs.
	tokenTopics = []common.Hash{delegateChanged.ID, delegateVotesChanged.ID}
)

var (
	governorABI = mustABI(governorEventsABI)
	// alphaVoteCast is GovernorAlpha's VoteCast event.
	alphaVoteCast = mustABI(alphaEventsABI).Events["VoteCast"]
	// eventsByTopic maps topic 0 to the event it identifies.
	eventsByTopic = map[common.Hash]*abi.Event{}
	// eventTopics is the topic-0 filter of eth_getLogs.
	eventTopics []common.Hash
	// allTopics adds the token's delegation events.
	allTopics []common.Hash
)

func init() {
	for _, name := range []string{"ProposalCreated", "VoteCast", "VoteCastWithParams", "ProposalQueued",
		"ProposalExecuted", "ProposalCanceled", "ProposalExtended", "OverrideVoteCast", "VoteReduced"} {
		ev := governorABI.Events[name]
		eventsByTopic[ev.ID] = &ev
		eventTopics = append(eventTopics, ev.ID)
	}
	eventTopics = append(eventTopics, alphaVoteCast.ID)
	allTopics = append(append([]common.Hash(nil), eventTopics...), tokenTopics...)
}

func mustABI(s string) abi.ABI {
	a, err := abi.JSON(strings.NewReader(s))
	if err != nil {
		panic(fmt.Sprintf("indexer: governor events ABI: %v", err))
	}
	return a
}

// TokenTopics returns the topic-0 hashes of the voting token's delegation
// events, for an eth_getLogs filter.
func TokenTopics() []common.Hash { return append([]common.Hash(nil), tokenTopics...) }

// EventTopics returns the topic-0 hashes of the governor events the indexer
// follows, for an eth_getLogs filter.
func EventTopics() []common.Hash { return append([]common.Hash(nil), eventTopics...) }

// event is one decoded governor log. Fields unused by a kind stay zero.
type event struct {
	name       string
	proposalID *big.Int

	// ProposalCreated
	proposer    common.Address
	targets     []common.Address
	values      []*big.Int
	signatures  []string
	calldatas   [][]byte
	voteStart   *big.Int
	voteEnd     *big.Int
	description string

	// VoteCast, VoteCastWithParams, OverrideVoteCast; VoteReduced's
	// delegate is voter, and it has no reason
	voter     common.Address
	support   uint8
	weight    *big.Int
	reason    string
	params    []byte
	hasParams bool

	// ProposalQueued
	eta *big.Int
	// ProposalExtended
	extendedDeadline uint64
}

var errNotGovernorEvent = errors.New("not a governor event")

// decodeLog decodes a governor log with go-ethereum's ABI decoder.
func decodeLog(l *types.Log) (*event, error) {
	if len(l.Topics) == 0 {
		return nil, errNotGovernorEvent
	}
	if l.Topics[0] == alphaVoteCast.ID {
		return decodeAlphaVote(l)
	}
	def, ok := eventsByTopic[l.Topics[0]]
	if !ok {
		return nil, errNotGovernorEvent
	}
	indexed := 0
	for _, in := range def.Inputs {
		if in.Indexed {
			indexed++
		}
	}
	if len(l.Topics) != 1+indexed {
		return nil, fmt.Errorf("%s: %d topics, want %d", def.Name, len(l.Topics), 1+indexed)
	}
	vals, err := def.Inputs.Unpack(l.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", def.Name, err)
	}
	ev := &event{name: def.Name}
	// A type assertion cannot fail for data the ABI decoder accepted; the
	// checked form keeps a future ABI edit from panicking here.
	bad := func() (*event, error) { return nil, fmt.Errorf("%s: unexpected decoded types", def.Name) }
	switch def.Name {
	case "ProposalCreated":
		var ok [9]bool
		ev.proposalID, ok[0] = vals[0].(*big.Int)
		ev.proposer, ok[1] = vals[1].(common.Address)
		ev.targets, ok[2] = vals[2].([]common.Address)
		ev.values, ok[3] = vals[3].([]*big.Int)
		ev.signatures, ok[4] = vals[4].([]string)
		ev.calldatas, ok[5] = vals[5].([][]byte)
		ev.voteStart, ok[6] = vals[6].(*big.Int)
		ev.voteEnd, ok[7] = vals[7].(*big.Int)
		ev.description, ok[8] = vals[8].(string)
		for _, o := range ok {
			if !o {
				return bad()
			}
		}
	case "VoteCast", "VoteCastWithParams", "OverrideVoteCast", "VoteReduced":
		ev.voter = common.BytesToAddress(l.Topics[1].Bytes())
		var ok [4]bool
		ev.proposalID, ok[0] = vals[0].(*big.Int)
		ev.support, ok[1] = vals[1].(uint8)
		ev.weight, ok[2] = vals[2].(*big.Int)
		ok[3] = true
		if def.Name != "VoteReduced" {
			ev.reason, ok[3] = vals[3].(string)
		}
		if ok != [4]bool{true, true, true, true} {
			return bad()
		}
		if def.Name == "VoteCastWithParams" {
			if ev.params, ok[0] = vals[4].([]byte); !ok[0] {
				return bad()
			}
			ev.hasParams = true
		}
	case "ProposalQueued":
		var ok1, ok2 bool
		ev.proposalID, ok1 = vals[0].(*big.Int)
		ev.eta, ok2 = vals[1].(*big.Int)
		if !ok1 || !ok2 {
			return bad()
		}
	case "ProposalExecuted", "ProposalCanceled":
		var ok1 bool
		if ev.proposalID, ok1 = vals[0].(*big.Int); !ok1 {
			return bad()
		}
	case "ProposalExtended":
		ev.proposalID = new(big.Int).SetBytes(l.Topics[1].Bytes())
		var ok1 bool
		if ev.extendedDeadline, ok1 = vals[0].(uint64); !ok1 {
			return bad()
		}
	}
	return ev, nil
}

// tokenLog is one decoded delegation log.
type tokenLog struct {
	changed                 bool // DelegateChanged, else DelegateVotesChanged
	delegator, from, to     common.Address
	delegate                common.Address
	previousVotes, newVotes *big.Int
}

// decodeTokenLog decodes a DelegateChanged or DelegateVotesChanged log.
func decodeTokenLog(l *types.Log) (*tokenLog, error) {
	if len(l.Topics) == 0 {
		return nil, errNotGovernorEvent
	}
	switch l.Topics[0] {
	case delegateChanged.ID:
		if len(l.Topics) != 4 {
			return nil, fmt.Errorf("DelegateChanged: %d topics, want 4", len(l.Topics))
		}
		return &tokenLog{changed: true, delegator: common.BytesToAddress(l.Topics[1].Bytes()),
			from: common.BytesToAddress(l.Topics[2].Bytes()), to: common.BytesToAddress(l.Topics[3].Bytes())}, nil
	case delegateVotesChanged.ID:
		if len(l.Topics) != 2 {
			return nil, fmt.Errorf("DelegateVotesChanged: %d topics, want 2", len(l.Topics))
		}
		vals, err := delegateVotesChanged.Inputs.NonIndexed().Unpack(l.Data)
		if err != nil {
			return nil, fmt.Errorf("DelegateVotesChanged: %w", err)
		}
		prev, ok1 := vals[0].(*big.Int)
		next, ok2 := vals[1].(*big.Int)
		if !ok1 || !ok2 {
			return nil, errors.New("DelegateVotesChanged: unexpected decoded types")
		}
		return &tokenLog{delegate: common.BytesToAddress(l.Topics[1].Bytes()), previousVotes: prev, newVotes: next}, nil
	}
	return nil, errNotGovernorEvent
}

// decodeAlphaVote decodes GovernorAlpha's VoteCast(address,uint256,bool,uint256)
// as a VoteCast with support 1 (for) or 0 (against).
func decodeAlphaVote(l *types.Log) (*event, error) {
	if len(l.Topics) != 1 {
		return nil, fmt.Errorf("alpha VoteCast: %d topics, want 1", len(l.Topics))
	}
	vals, err := alphaVoteCast.Inputs.Unpack(l.Data)
	if err != nil {
		return nil, fmt.Errorf("alpha VoteCast: %w", err)
	}
	var ok [4]bool
	ev := &event{name: "VoteCast"}
	ev.voter, ok[0] = vals[0].(common.Address)
	ev.proposalID, ok[1] = vals[1].(*big.Int)
	support, ok2 := vals[2].(bool)
	ok[2] = ok2
	ev.weight, ok[3] = vals[3].(*big.Int)
	if ok != [4]bool{true, true, true, true} {
		return nil, errors.New("alpha VoteCast: unexpected decoded types")
	}
	if support {
		ev.support = 1
	}
	return ev, nil
}

// clampUint64 returns v as a uint64 no larger than math.MaxInt64, the most
// a signed BIGINT column holds. Timepoints never come near it; a contract
// that emits such a value gets it clamped rather than a failed batch.
func clampUint64(v *big.Int) uint64 {
	if v == nil || v.Sign() < 0 {
		return 0
	}
	if !v.IsInt64() {
		return math.MaxInt64
	}
	return v.Uint64()
}
