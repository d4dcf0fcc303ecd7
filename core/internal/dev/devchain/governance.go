package devchain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
)

// Vote types shared by OpenZeppelin's GovernorCountingSimple and GovernorBravo.
// GovernorAlpha takes a bool: For is true, Against false, and it has no
// abstention.
const (
	Against uint8 = 0
	For     uint8 = 1
	Abstain uint8 = 2
)

// Proposal is a proposal made through Propose, with what is needed to act on it.
type Proposal struct {
	DAO         *Deployment
	ID          *big.Int
	Proposer    int // account index
	Targets     []common.Address
	Values      []*big.Int
	Signatures  []string // Bravo and Alpha style "store(uint256)"; empty for OpenZeppelin
	Calldatas   [][]byte
	Description string
	// VoteStart and VoteEnd are timepoints of the DAO's clock (block
	// numbers, or Unix seconds on a timestamp clock): voting opens after
	// VoteStart and closes after VoteEnd, before any late-quorum extension.
	VoteStart uint64
	VoteEnd   uint64
	Receipt   *types.Receipt
	// Expect is the state (core.ProposalPending, …) that StageAllStates left
	// the proposal in; empty for proposals made otherwise.
	Expect string
}

func (p *Proposal) descriptionHash() common.Hash {
	return crypto.Keccak256Hash([]byte(p.Description))
}

// contract is the name of the governor's artifact.
func (d *Deployment) contract() string {
	if d.artifact != "" {
		return d.artifact
	}
	if d.Kind == core.KindGovernorBravo {
		return "BravoGovernor"
	}
	return "OZGovernor"
}

// byID reports whether the governor acts on proposal ids with
// Bravo-style signatures and calldatas (GovernorBravo, GovernorAlpha)
// rather than on hashed actions (OpenZeppelin).
func (d *Deployment) byID() bool {
	return d.Kind == core.KindGovernorBravo || d.Kind == core.KindGovernorAlpha
}

// Propose makes account proposer propose to store value in the Box.
func (c *Chain) Propose(ctx context.Context, d *Deployment, proposer int, description string, value uint64) (*Proposal, error) {
	p, cl, err := c.proposeCall(d, proposer, description, value)
	if err != nil {
		return nil, err
	}
	r, err := c.transact(ctx, cl.from, cl.artifact, cl.to, cl.method, cl.args...)
	if err != nil {
		return nil, err
	}
	return p, p.created(r)
}

// txCall is a contract call to send as a transaction.
type txCall struct {
	from     int
	artifact string
	to       common.Address
	method   string
	args     []any
	gas      uint64 // 0: the estimate at the head, with a margin
}

// proposeCall returns the proposal that propose will create, without its
// id and voting window, and the call that creates it.
func (c *Chain) proposeCall(d *Deployment, proposer int, description string, value uint64) (*Proposal, txCall, error) {
	box := mustArtifact("Box")
	p := &Proposal{
		DAO:         d,
		Proposer:    proposer,
		Targets:     []common.Address{c.Box},
		Values:      []*big.Int{new(big.Int)},
		Description: description,
	}
	cl := txCall{from: proposer, artifact: d.contract(), to: d.Governor, method: "propose"}
	if d.byID() {
		// Bravo style: a signature plus ABI-encoded arguments.
		args, err := box.ABI.Methods["store"].Inputs.Pack(new(big.Int).SetUint64(value))
		if err != nil {
			return nil, cl, err
		}
		p.Signatures, p.Calldatas = []string{"store(uint256)"}, [][]byte{args}
		cl.args = []any{p.Targets, p.Values, p.Signatures, p.Calldatas, description}
	} else {
		data, err := box.ABI.Pack("store", new(big.Int).SetUint64(value))
		if err != nil {
			return nil, cl, err
		}
		p.Calldatas = [][]byte{data}
		cl.args = []any{p.Targets, p.Values, p.Calldatas, description}
	}
	return p, cl, nil
}

// created fills in p's id and voting window from the receipt of propose.
func (p *Proposal) created(r *types.Receipt) error {
	p.Receipt = r
	// Every family emits ProposalCreated with the same fields, in the same order.
	ev := mustArtifact(p.DAO.contract()).ABI.Events["ProposalCreated"]
	for _, l := range r.Logs {
		if len(l.Topics) == 0 || l.Topics[0] != ev.ID || l.Address != p.DAO.Governor {
			continue
		}
		vals, err := ev.Inputs.Unpack(l.Data)
		if err != nil {
			return fmt.Errorf("decode ProposalCreated: %w", err)
		}
		p.ID = vals[0].(*big.Int)
		p.VoteStart = vals[6].(*big.Int).Uint64()
		p.VoteEnd = vals[7].(*big.Int).Uint64()
		return nil
	}
	return errors.New("propose: no ProposalCreated event")
}

// AdvanceTo moves d's clock at the head to at least timepoint: it seals
// blocks up to that number on a block-number clock, or one block that
// much later on a timestamp clock.
func (c *Chain) AdvanceTo(ctx context.Context, d *Deployment, timepoint uint64) error {
	if d.Clock != core.ClockTimestamp {
		if timepoint < d.ClockOffset {
			return nil
		}
		return c.MineTo(ctx, timepoint-d.ClockOffset)
	}
	head, err := c.Head(ctx)
	if err != nil {
		return err
	}
	if head.Time >= timepoint {
		return nil
	}
	return c.AdjustTime(time.Duration(timepoint-head.Time) * time.Second)
}

// OpenVoting advances the DAO's clock until voting on p is open at the
// head (so that a vote's gas estimate, which runs at the head, passes too).
func (c *Chain) OpenVoting(ctx context.Context, p *Proposal) error {
	return c.AdvanceTo(ctx, p.DAO, p.VoteStart+1)
}

// Vote casts account voter's vote, with a reason when reason is not empty.
// GovernorAlpha takes neither a reason nor an abstention: asked for one,
// Vote fails without voting.
func (c *Chain) Vote(ctx context.Context, p *Proposal, voter int, support uint8, reason string) (*types.Receipt, error) {
	cl, err := voteCall(p, voter, support, reason)
	if err != nil {
		return nil, err
	}
	return c.transact(ctx, cl.from, cl.artifact, cl.to, cl.method, cl.args...)
}

func voteCall(p *Proposal, voter int, support uint8, reason string) (txCall, error) {
	cl := txCall{from: voter, artifact: p.DAO.contract(), to: p.DAO.Governor, method: "castVote"}
	switch {
	case p.DAO.Kind == core.KindGovernorAlpha:
		if support != Against && support != For {
			return cl, fmt.Errorf("vote: GovernorAlpha takes only for or against, not %d", support)
		}
		if reason != "" {
			return cl, errors.New("vote: GovernorAlpha takes no reason")
		}
		cl.args = []any{p.ID, support == For}
	case reason == "":
		cl.args = []any{p.ID, support}
	default:
		cl.method, cl.args = "castVoteWithReason", []any{p.ID, support, reason}
	}
	return cl, nil
}

// VoteWithParams casts a vote with params (OpenZeppelin only), which emits
// VoteCastWithParams.
func (c *Chain) VoteWithParams(ctx context.Context, p *Proposal, voter int, support uint8, reason string, params []byte) (*types.Receipt, error) {
	if p.DAO.Kind != core.KindOZGovernor {
		return nil, errors.New("vote with params: only OpenZeppelin governors take params")
	}
	return c.transact(ctx, voter, p.DAO.contract(), p.DAO.Governor, "castVoteWithReasonAndParams", p.ID, support, reason, params)
}

// fractionalCall is voter's vote of support 255 on a GovernorCountingFractional
// proposal: params pack against, for and abstain as three uint128, 48 bytes
// (OpenZeppelin's GovernorCountingFractional._countVote). Together they may
// be less than the voter's weight: the rest is left for a later call.
func fractionalCall(p *Proposal, voter int, against, forV, abstain *big.Int, reason string) txCall {
	return txCall{from: voter, artifact: p.DAO.contract(), to: p.DAO.Governor, method: "castVoteWithReasonAndParams",
		args: []any{p.ID, uint8(Fractional), reason, FractionalParams(against, forV, abstain)}}
}

// Fractional is GovernorCountingFractional's support value of a split vote.
const Fractional uint8 = 255

// FractionalParams packs a split vote's weights as GovernorCountingFractional
// reads them: three big-endian uint128, against, for, abstain.
func FractionalParams(against, forV, abstain *big.Int) []byte {
	out := make([]byte, 48)
	against.FillBytes(out[0:16])
	forV.FillBytes(out[16:32])
	abstain.FillBytes(out[32:48])
	return out
}

// VoteFractional casts voter's split vote (support 255) on a
// GovernorCountingFractional proposal.
func (c *Chain) VoteFractional(ctx context.Context, p *Proposal, voter int, against, forV, abstain *big.Int, reason string) (*types.Receipt, error) {
	cl := fractionalCall(p, voter, against, forV, abstain, reason)
	return c.transact(ctx, cl.from, cl.artifact, cl.to, cl.method, cl.args...)
}

// overrideCall is delegator voter's castOverrideVote on a
// GovernorCountingOverridable proposal.
func overrideCall(p *Proposal, voter int, support uint8, reason string) txCall {
	return txCall{from: voter, artifact: p.DAO.contract(), to: p.DAO.Governor, method: "castOverrideVote",
		args: []any{p.ID, support, reason}}
}

// OverrideVote has delegator voter override its delegate's vote on a
// GovernorCountingOverridable proposal with its own balance.
func (c *Chain) OverrideVote(ctx context.Context, p *Proposal, voter int, support uint8, reason string) (*types.Receipt, error) {
	cl := overrideCall(p, voter, support, reason)
	return c.transact(ctx, cl.from, cl.artifact, cl.to, cl.method, cl.args...)
}

// oz5 reports whether d's governor is one of the OpenZeppelin 5.x governors
// of Governor.sol.in (behind a TimelockController, whose queued proposals
// never expire).
func (d *Deployment) oz5() bool {
	switch d.contract() {
	case "OZGovernor", "FractionalGovernor", "OverridableGovernor":
		return true
	}
	return false
}

// Deadline returns the last timepoint of voting, late-quorum extension
// included, in the DAO's clock units.
func (c *Chain) Deadline(ctx context.Context, p *Proposal) (uint64, error) {
	if p.DAO.byID() {
		return p.VoteEnd, nil
	}
	out, err := c.call(ctx, p.DAO.contract(), p.DAO.Governor, "proposalDeadline", p.ID)
	if err != nil {
		return 0, err
	}
	return out[0].(*big.Int).Uint64(), nil
}

// CloseVoting advances the DAO's clock until voting on p has ended.
func (c *Chain) CloseVoting(ctx context.Context, p *Proposal) error {
	end, err := c.Deadline(ctx, p)
	if err != nil {
		return err
	}
	return c.AdvanceTo(ctx, p.DAO, end+1)
}

// Queue queues a succeeded proposal in its timelock.
func (c *Chain) Queue(ctx context.Context, p *Proposal) (*types.Receipt, error) {
	cl := actionCall(p, "queue")
	return c.transact(ctx, cl.from, cl.artifact, cl.to, cl.method, cl.args...)
}

// Execute moves time past the timelock delay and executes a queued proposal.
func (c *Chain) Execute(ctx context.Context, p *Proposal) (*types.Receipt, error) {
	if err := c.AdjustTime(p.DAO.TimelockDelay + time.Second); err != nil {
		return nil, fmt.Errorf("execute: %w", err)
	}
	cl := actionCall(p, "execute")
	return c.transact(ctx, cl.from, cl.artifact, cl.to, cl.method, cl.args...)
}

// actionCall is the proposer's call of method (queue, execute, cancel) on
// p: by id on Bravo and Alpha, by actions and description hash on
// OpenZeppelin.
func actionCall(p *Proposal, method string) txCall {
	cl := txCall{from: p.Proposer, artifact: p.DAO.contract(), to: p.DAO.Governor, method: method}
	if p.DAO.byID() {
		cl.args = []any{p.ID}
	} else {
		cl.args = []any{p.Targets, p.Values, p.Calldatas, p.descriptionHash()}
	}
	return cl
}

// Cancel cancels a proposal. OpenZeppelin governors let the proposer cancel
// only before voting opens; the Bravo-style governor lets the proposer
// cancel until execution. GovernorAlpha lets anyone cancel, until
// execution, but only a proposal whose proposer's votes have fallen below
// the proposal threshold: Cancel has the proposer delegate its votes to
// the next account, cancels, and has it delegate them back to itself.
func (c *Chain) Cancel(ctx context.Context, p *Proposal) (*types.Receipt, error) {
	d := p.DAO
	if d.Kind == core.KindGovernorAlpha {
		c.mu.Lock()
		defer c.mu.Unlock()
		away := (p.Proposer + 1) % c.holders
		if _, err := c.transactLocked(ctx, p.Proposer, "Uni", d.Token, "delegate", c.addrs[away]); err != nil {
			return nil, fmt.Errorf("cancel: %w", err)
		}
		// Alpha reads the proposer's votes at the block before the one it
		// runs in, and the gas estimate runs at the head: one more block.
		c.commitLocked()
		r, err := c.transactLocked(ctx, p.Proposer, d.contract(), d.Governor, "cancel", p.ID)
		if err != nil {
			return nil, err
		}
		if _, err := c.transactLocked(ctx, p.Proposer, "Uni", d.Token, "delegate", c.addrs[p.Proposer]); err != nil {
			return nil, fmt.Errorf("cancel: %w", err)
		}
		c.commitLocked() // so that the proposer may propose again at once
		return r, nil
	}
	cl := actionCall(p, "cancel")
	return c.transact(ctx, cl.from, cl.artifact, cl.to, cl.method, cl.args...)
}

// State returns the governor's state() of p: 0 Pending, 1 Active,
// 2 Canceled, 3 Defeated, 4 Succeeded, 5 Queued, 6 Expired, 7 Executed (the
// same numbering in every family; core.StateName names them).
func (c *Chain) State(ctx context.Context, p *Proposal) (uint8, error) {
	out, err := c.call(ctx, p.DAO.contract(), p.DAO.Governor, "state", p.ID)
	if err != nil {
		return 0, err
	}
	return out[0].(uint8), nil
}

// BoxValue returns the value that the last executed proposal stored.
func (c *Chain) BoxValue(ctx context.Context) (uint64, error) {
	out, err := c.call(ctx, "Box", c.Box, "value")
	if err != nil {
		return 0, err
	}
	return out[0].(*big.Int).Uint64(), nil
}
