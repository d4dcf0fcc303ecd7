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
	Signatures  []string // Bravo style "store(uint256)"; empty for OpenZeppelin
	Calldatas   [][]byte
	Description string
	VoteStart   uint64 // block after which voting opens
	VoteEnd     uint64 // last block of voting, before any late-quorum extension
	Receipt     *types.Receipt
}

func (p *Proposal) descriptionHash() common.Hash {
	return crypto.Keccak256Hash([]byte(p.Description))
}

func (d *Deployment) contract() string {
	if d.Kind == core.KindGovernorBravo {
		return "BravoGovernor"
	}
	return "OZGovernor"
}

// Propose makes account proposer propose to store value in the Box.
func (c *Chain) Propose(ctx context.Context, d *Deployment, proposer int, description string, value uint64) (*Proposal, error) {
	box := mustArtifact("Box")
	p := &Proposal{
		DAO:         d,
		Proposer:    proposer,
		Targets:     []common.Address{c.Box},
		Values:      []*big.Int{new(big.Int)},
		Description: description,
	}
	if d.Kind == core.KindGovernorBravo {
		// Bravo style: a signature plus ABI-encoded arguments.
		args, err := box.ABI.Methods["store"].Inputs.Pack(new(big.Int).SetUint64(value))
		if err != nil {
			return nil, err
		}
		p.Signatures, p.Calldatas = []string{"store(uint256)"}, [][]byte{args}
	} else {
		data, err := box.ABI.Pack("store", new(big.Int).SetUint64(value))
		if err != nil {
			return nil, err
		}
		p.Calldatas = [][]byte{data}
	}
	var r *types.Receipt
	var err error
	if d.Kind == core.KindGovernorBravo {
		r, err = c.transact(ctx, proposer, d.contract(), d.Governor, "propose", p.Targets, p.Values, p.Signatures, p.Calldatas, description)
	} else {
		r, err = c.transact(ctx, proposer, d.contract(), d.Governor, "propose", p.Targets, p.Values, p.Calldatas, description)
	}
	if err != nil {
		return nil, err
	}
	p.Receipt = r
	ev := mustArtifact(d.contract()).ABI.Events["ProposalCreated"]
	for _, l := range r.Logs {
		if len(l.Topics) == 0 || l.Topics[0] != ev.ID {
			continue
		}
		vals, err := ev.Inputs.Unpack(l.Data)
		if err != nil {
			return nil, fmt.Errorf("decode ProposalCreated: %w", err)
		}
		p.ID = vals[0].(*big.Int)
		p.VoteStart = vals[6].(*big.Int).Uint64()
		p.VoteEnd = vals[7].(*big.Int).Uint64()
		return p, nil
	}
	return nil, errors.New("propose: no ProposalCreated event")
}

// OpenVoting seals blocks until voting on p is open at the head (so that a
// vote's gas estimate, which runs at the head, passes too).
func (c *Chain) OpenVoting(ctx context.Context, p *Proposal) error {
	return c.MineTo(ctx, p.VoteStart+1)
}

// Vote casts account voter's vote, with a reason when reason is not empty.
func (c *Chain) Vote(ctx context.Context, p *Proposal, voter int, support uint8, reason string) (*types.Receipt, error) {
	if reason == "" {
		return c.transact(ctx, voter, p.DAO.contract(), p.DAO.Governor, "castVote", p.ID, support)
	}
	return c.transact(ctx, voter, p.DAO.contract(), p.DAO.Governor, "castVoteWithReason", p.ID, support, reason)
}

// VoteWithParams casts a vote with params (OpenZeppelin only), which emits
// VoteCastWithParams.
func (c *Chain) VoteWithParams(ctx context.Context, p *Proposal, voter int, support uint8, reason string, params []byte) (*types.Receipt, error) {
	if p.DAO.Kind != core.KindOZGovernor {
		return nil, errors.New("vote with params: only OpenZeppelin governors take params")
	}
	return c.transact(ctx, voter, p.DAO.contract(), p.DAO.Governor, "castVoteWithReasonAndParams", p.ID, support, reason, params)
}

// Deadline returns the last block of voting, late-quorum extension included.
func (c *Chain) Deadline(ctx context.Context, p *Proposal) (uint64, error) {
	if p.DAO.Kind == core.KindGovernorBravo {
		return p.VoteEnd, nil
	}
	out, err := c.call(ctx, "OZGovernor", p.DAO.Governor, "proposalDeadline", p.ID)
	if err != nil {
		return 0, err
	}
	return out[0].(*big.Int).Uint64(), nil
}

// CloseVoting seals blocks until voting on p has ended.
func (c *Chain) CloseVoting(ctx context.Context, p *Proposal) error {
	end, err := c.Deadline(ctx, p)
	if err != nil {
		return err
	}
	return c.MineTo(ctx, end+1)
}

// Queue queues a succeeded proposal in its timelock.
func (c *Chain) Queue(ctx context.Context, p *Proposal) (*types.Receipt, error) {
	if p.DAO.Kind == core.KindGovernorBravo {
		return c.transact(ctx, p.Proposer, "BravoGovernor", p.DAO.Governor, "queue", p.ID)
	}
	return c.transact(ctx, p.Proposer, "OZGovernor", p.DAO.Governor, "queue", p.Targets, p.Values, p.Calldatas, p.descriptionHash())
}

// Execute moves time past the timelock delay and executes a queued proposal.
func (c *Chain) Execute(ctx context.Context, p *Proposal) (*types.Receipt, error) {
	if err := c.AdjustTime(p.DAO.TimelockDelay + time.Second); err != nil {
		return nil, fmt.Errorf("execute: %w", err)
	}
	if p.DAO.Kind == core.KindGovernorBravo {
		return c.transact(ctx, p.Proposer, "BravoGovernor", p.DAO.Governor, "execute", p.ID)
	}
	return c.transact(ctx, p.Proposer, "OZGovernor", p.DAO.Governor, "execute", p.Targets, p.Values, p.Calldatas, p.descriptionHash())
}

// Cancel cancels a proposal as its proposer. OpenZeppelin governors allow it
// only before voting opens.
func (c *Chain) Cancel(ctx context.Context, p *Proposal) (*types.Receipt, error) {
	if p.DAO.Kind == core.KindGovernorBravo {
		return c.transact(ctx, p.Proposer, "BravoGovernor", p.DAO.Governor, "cancel", p.ID)
	}
	return c.transact(ctx, p.Proposer, "OZGovernor", p.DAO.Governor, "cancel", p.Targets, p.Values, p.Calldatas, p.descriptionHash())
}

// State returns the governor's state() of p: 0 Pending, 1 Active,
// 2 Canceled, 3 Defeated, 4 Succeeded, 5 Queued, 6 Expired, 7 Executed (the
// same numbering in both kinds).
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
