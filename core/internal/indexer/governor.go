package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// governorCallsABI is what the indexer asks a governor (and its timelock)
// with eth_call. The state enum is the same on OpenZeppelin 4.x/5.x,
// GovernorBravo and GovernorAlpha; quorum is quorum(timepoint) on
// OpenZeppelin and quorumVotes() on Bravo and Alpha.
const governorCallsABI = `[
{"type":"function","name":"state","stateMutability":"view","inputs":[{"name":"proposalId","type":"uint256"}],"outputs":[{"name":"","type":"uint8"}]},
{"type":"function","name":"quorum","stateMutability":"view","inputs":[{"name":"timepoint","type":"uint256"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"quorumVotes","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"CLOCK_MODE","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]},
{"type":"function","name":"timelock","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"address"}]},
{"type":"function","name":"GRACE_PERIOD","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"token","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"address"}]},
{"type":"function","name":"uni","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"address"}]},
{"type":"function","name":"comp","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"address"}]},
{"type":"function","name":"proposalDeadline","stateMutability":"view","inputs":[{"name":"proposalId","type":"uint256"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"clock","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint48"}]},
{"type":"function","name":"COUNTING_MODE","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"string"}]}
]`

var callsABI = mustABI(governorCallsABI)

// governorInfo is what the indexer learns once about a DAO's governor.
type governorInfo struct {
	clock string // core.ClockBlockNumber or core.ClockTimestamp
	// grace is the timelock's GRACE_PERIOD in seconds: a queued proposal
	// expires grace seconds after its ETA. Zero when the governor's
	// timelock has none (OpenZeppelin's TimelockController).
	grace uint64
	// token is the voting token; zero when the governor names none and
	// none is configured.
	token common.Address
	// countingMode is the governor's COUNTING_MODE(), "" without one.
	countingMode string
	// quorumAbstain is true where abstentions count towards quorum: the
	// quorum= of COUNTING_MODE names abstain (every OpenZeppelin module).
	// Bravo and Alpha count for votes only.
	quorumAbstain bool
	// hasClock is true where the governor answers clock() (ERC-6372:
	// OpenZeppelin 4.9 and 5.x); others are read with evmNumberCode.
	hasClock bool
}

// caller makes the indexer's eth_calls against one governor, counting them.
type caller struct {
	r        *Runner
	d        *daoState
	governor common.Address
}

// call packs method(args), runs it at block (nil: latest) and unpacks the
// single result.
func (c caller) call(ctx context.Context, to common.Address, block *big.Int, method string, args ...any) (any, error) {
	data, err := callsABI.Pack(method, args...)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", method, err)
	}
	c.r.metrics.call(c.r.chainID, method)
	c.r.calls.Add(1)
	out, err := c.r.chain.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, block)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	vals, err := callsABI.Methods[method].Outputs.Unpack(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if len(vals) != 1 {
		return nil, fmt.Errorf("%s: %d results", method, len(vals))
	}
	return vals[0], nil
}

// state returns the governor's state(id) at block.
func (c caller) state(ctx context.Context, id *big.Int, block uint64) (string, error) {
	v, err := c.call(ctx, c.governor, new(big.Int).SetUint64(block), "state", id)
	if err != nil {
		return "", err
	}
	n, ok := v.(uint8)
	if !ok || core.StateName(n) == "" {
		return "", fmt.Errorf("state: unexpected value %v", v)
	}
	return core.StateName(n), nil
}

// quorum returns the quorum of a proposal whose snapshot is voteStart, read
// at block: quorum(voteStart) on OpenZeppelin governors, quorumVotes() on
// Bravo and Alpha.
func (c caller) quorum(ctx context.Context, voteStart, block uint64) (*big.Int, error) {
	var v any
	var err error
	if c.d.dao.Kind == core.KindOZGovernor {
		v, err = c.call(ctx, c.governor, new(big.Int).SetUint64(block), "quorum", new(big.Int).SetUint64(voteStart))
	} else {
		v, err = c.call(ctx, c.governor, new(big.Int).SetUint64(block), "quorumVotes")
	}
	if err != nil {
		return nil, err
	}
	q, ok := v.(*big.Int)
	if !ok {
		return nil, fmt.Errorf("quorum: unexpected value %v", v)
	}
	return q, nil
}

// deadline returns an OpenZeppelin governor's proposalDeadline(id) at block.
func (c caller) deadline(ctx context.Context, id *big.Int, block uint64) (uint64, error) {
	v, err := c.call(ctx, c.governor, new(big.Int).SetUint64(block), "proposalDeadline", id)
	if err != nil {
		return 0, err
	}
	d, ok := v.(*big.Int)
	if !ok {
		return 0, fmt.Errorf("proposalDeadline: unexpected value %v", v)
	}
	return clampUint64(d), nil
}

// evmNumberCode is init code that returns the EVM's NUMBER: run by an
// eth_call without a recipient (a simulated creation) at a block, it
// answers the block.number that a contract there sees, which on an L2
// such as Arbitrum is the layer-1 block number, not the block's own. It is
// the clock of governors without clock() (Bravo, Alpha, OpenZeppelin
// before 4.9), whose code reads block.number.
//
//	NUMBER PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN
var evmNumberCode = []byte{0x43, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3}

// clockAt returns the governor's clock at block: clock() where it has one;
// otherwise the block's timestamp on a timestamp clock, or the EVM's
// block.number.
func (c caller) clockAt(ctx context.Context, block uint64) (uint64, error) {
	at := new(big.Int).SetUint64(block)
	if c.d.info.hasClock {
		v, err := c.call(ctx, c.governor, at, "clock")
		if err != nil {
			return 0, err
		}
		n, ok := v.(*big.Int)
		if !ok {
			return 0, fmt.Errorf("clock: unexpected value %v", v)
		}
		return clampUint64(n), nil
	}
	if c.d.info.clock == core.ClockTimestamp {
		_, _, t, err := c.r.chain.BlockStamp(ctx, at)
		return t, err
	}
	c.r.metrics.call(c.r.chainID, "block.number")
	c.r.calls.Add(1)
	out, err := c.r.chain.CallContract(ctx, ethereum.CallMsg{Data: evmNumberCode}, at)
	if err != nil {
		return 0, fmt.Errorf("block.number: %w", err)
	}
	if len(out) != 32 {
		return 0, fmt.Errorf("block.number: %d bytes", len(out))
	}
	return clampUint64(new(big.Int).SetBytes(out)), nil
}

// info reads the governor's clock mode (ERC-6372 CLOCK_MODE, block numbers
// when it has none) and its timelock's grace period. A call that reverts
// means the contract lacks the function; any other failure is returned, to
// be tried again on the next poll. countingMode is the governor's
// COUNTING_MODE() answer as checkKind read it (nil: not read).
func (c caller) info(ctx context.Context, countingMode []byte) (governorInfo, error) {
	gi := governorInfo{clock: core.ClockBlockNumber}
	if c.d.dao.Kind == core.KindOZGovernor {
		v, err := c.call(ctx, c.governor, nil, "CLOCK_MODE")
		switch {
		case err == nil:
			mode, _ := v.(string)
			if clockModeIs(mode, "timestamp") {
				gi.clock = core.ClockTimestamp
			}
		case !isRevert(err):
			return gi, err
		}
		_, err = c.call(ctx, c.governor, nil, "clock")
		switch {
		case err == nil:
			gi.hasClock = true
		case !isRevert(err):
			return gi, err
		}
		if countingMode != nil {
			vals, err := callsABI.Methods["COUNTING_MODE"].Outputs.Unpack(countingMode)
			if err != nil {
				return gi, fmt.Errorf("COUNTING_MODE: %w", err)
			}
			gi.countingMode, _ = vals[0].(string)
		} else {
			v, err = c.call(ctx, c.governor, nil, "COUNTING_MODE")
			switch {
			case err == nil:
				gi.countingMode, _ = v.(string)
			case !isRevert(err):
				return gi, err
			}
		}
		// An OpenZeppelin governor: its COUNTING_MODE's quorum= rule.
		gi.quorumAbstain = core.GovernorInfo{CountingMode: gi.countingMode}.QuorumCountsAbstain(core.KindOZGovernor)
	}
	// The grace period is the timelock's (Compound's Timelock behind Bravo,
	// Alpha and OpenZeppelin's GovernorTimelockCompound), or the governor's
	// own where it times itself.
	holder := c.governor
	v, err := c.call(ctx, c.governor, nil, "timelock")
	switch {
	case err == nil:
		if tl, _ := v.(common.Address); tl != (common.Address{}) {
			holder = tl
		}
	case !isRevert(err):
		return gi, err
	}
	g, err := c.call(ctx, holder, nil, "GRACE_PERIOD")
	switch {
	case err == nil:
		if n, ok := g.(*big.Int); ok {
			gi.grace = clampUint64(n)
		}
	case !isRevert(err):
		return gi, err
	}
	if c.d.dao.Token != "" {
		gi.token = common.HexToAddress(c.d.dao.Token)
		return gi, nil
	}
	for _, getter := range []string{"token", "uni", "comp"} {
		v, err := c.call(ctx, c.governor, nil, getter)
		switch {
		case err == nil:
			if a, _ := v.(common.Address); a != (common.Address{}) {
				gi.token = a
				return gi, nil
			}
		case !isRevert(err):
			return gi, err
		}
	}
	return gi, nil
}

// clockModeIs reports whether an ERC-6372 CLOCK_MODE string such as
// "mode=blocknumber&from=default" names mode.
func clockModeIs(s, mode string) bool {
	for _, kv := range strings.Split(s, "&") {
		if kv == "mode="+mode {
			return true
		}
	}
	return false
}

// isRevert recognises a call that the node ran and the contract refused
// (a revert, a missing function, an empty return), as opposed to a node or
// network failure.
func isRevert(err error) bool {
	var de interface{ ErrorData() interface{} }
	if errors.As(err, &de) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"execution reverted", "revert", "abi: attempting to unmarshal an empty string", "invalid opcode", "out of gas"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
