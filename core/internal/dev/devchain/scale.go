package devchain

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/govgate/govgate/core"
)

// Scale DAOs: the harness that shows what indexing a whole chain costs.
// Each is an OpenZeppelin 5.x Governor (the upgradeable modules, as
// published) and its ERC20Votes token, both EIP-1167 minimal proxies that
// ScaleFactory clones from one implementation each: a thousand DAOs take
// seconds and a few hundred kilobytes of chain state, not a thousand
// 25 KB deployments.
const (
	scaleVotingDelay   = 1  // blocks
	scaleVotingPeriod  = 20 // blocks
	scaleQuorumPercent = 4
	scaleSupply        = 1_000_000
)

// DeployScale deploys n scale DAOs, slugs scale-0000 on, their tokens' whole
// supply held and self-delegated by account 0. The transactions go in as
// few blocks as the gas limit allows.
func (c *Chain) DeployScale(ctx context.Context, n int) ([]*Deployment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	govImpl, _, err := c.deployLocked(ctx, "ScaleGovernor")
	if err != nil {
		return nil, err
	}
	tokenImpl, _, err := c.deployLocked(ctx, "ScaleToken")
	if err != nil {
		return nil, err
	}
	factory, _, err := c.deployLocked(ctx, "ScaleFactory", govImpl, tokenImpl)
	if err != nil {
		return nil, err
	}
	// As many DAOs a transaction as fit under the gas cap, measured.
	data, err := mustArtifact("ScaleFactory").ABI.Pack("deploy", big.NewInt(1), c.addrs[0], tokens(scaleSupply),
		big.NewInt(scaleVotingDelay), uint32(scaleVotingPeriod), big.NewInt(scaleQuorumPercent))
	if err != nil {
		return nil, err
	}
	one, err := c.client.EstimateGas(ctx, ethereum.CallMsg{From: c.addrs[0], To: &factory, Data: data})
	if err != nil {
		return nil, fmt.Errorf("ScaleFactory.deploy: %w", err)
	}
	perTx := max(1, int(maxTxGas*8/10/one))
	var txs []*types.Transaction
	for left := n; left > 0; left -= perTx {
		k := min(left, perTx)
		tx, err := c.sendGas(ctx, 0, maxTxGas, "ScaleFactory", factory, "deploy", big.NewInt(int64(k)), c.addrs[0], tokens(scaleSupply),
			big.NewInt(scaleVotingDelay), uint32(scaleVotingPeriod), big.NewInt(scaleQuorumPercent))
		if err != nil {
			return nil, err
		}
		txs = append(txs, tx)
	}
	if err := c.sealAll(ctx, txs); err != nil {
		return nil, err
	}
	ev := mustArtifact("ScaleFactory").ABI.Events["Deployed"]
	out := make([]*Deployment, 0, n)
	for _, tx := range txs {
		r, err := c.receipt(ctx, tx)
		if err != nil {
			return nil, fmt.Errorf("ScaleFactory.deploy: %w", err)
		}
		for _, l := range r.Logs {
			if l.Address != factory || len(l.Topics) != 2 || l.Topics[0] != ev.ID {
				continue
			}
			vals, err := ev.Inputs.NonIndexed().Unpack(l.Data)
			if err != nil {
				return nil, fmt.Errorf("decode Deployed: %w", err)
			}
			i := new(big.Int).SetBytes(l.Topics[1][:]).Uint64()
			out = append(out, &Deployment{
				Slug: fmt.Sprintf("scale-%04d", i), Name: fmt.Sprintf("Scale DAO %d", i), Kind: core.KindOZGovernor, Clock: core.ClockBlockNumber,
				Governor: vals[0].(common.Address), Token: vals[1].(common.Address), StartBlock: r.BlockNumber.Uint64(),
				VotingDelay: scaleVotingDelay, VotingPeriod: scaleVotingPeriod, artifact: "ScaleGovernor",
			})
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("ScaleFactory deployed %d DAOs, want %d", len(out), n)
	}
	return out, nil
}

// sealAll seals blocks until every transaction of txs is in one.
func (c *Chain) sealAll(ctx context.Context, txs []*types.Transaction) error {
	for try := 0; try < 100; try++ {
		c.backend.Commit()
		done := true
		for _, tx := range txs {
			if _, err := c.client.TransactionReceipt(ctx, tx.Hash()); err != nil {
				done = false
				break
			}
		}
		if done {
			clear(c.unsealed)
			return nil
		}
	}
	return errors.New("seal: transactions still pending after 100 blocks")
}

// ScaleActivity makes governance happen on scale DAOs, a step at a time:
// each step sends, without sealing a block, a proposal on the next DAO in
// turn, a vote of account 0 on every proposal open for voting that it has
// not voted on, and a token transfer that moves voting power. Run a step
// per block (BlockTime seals them).
type ScaleActivity struct {
	c        *Chain
	daos     []*Deployment
	next     int
	pending  []*scalePending // proposals sent, receipts not read yet
	open     []*Proposal     // created, not voted on yet
	round    uint64
	Proposed int // proposals made so far
	Voted    int
}

type scalePending struct {
	p  *Proposal
	tx *types.Transaction
}

// NewScaleActivity returns an activity over daos (scale DAOs of DeployScale).
func (c *Chain) NewScaleActivity(daos []*Deployment) *ScaleActivity {
	return &ScaleActivity{c: c, daos: daos}
}

// Step sends the step's transactions; it returns how many it sent.
func (a *ScaleActivity) Step(ctx context.Context) (int, error) {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	head, err := c.client.BlockNumber(ctx)
	if err != nil {
		return 0, err
	}
	// Proposals whose propose was sealed since: now they have an id.
	var still []*scalePending
	for _, sp := range a.pending {
		r, err := c.client.TransactionReceipt(ctx, sp.tx.Hash())
		if err != nil {
			still = append(still, sp)
			continue
		}
		if r.Status == types.ReceiptStatusSuccessful && sp.p.created(r) == nil {
			a.open = append(a.open, sp.p)
		}
	}
	a.pending = still
	sent := 0
	var keep []*Proposal
	for _, p := range a.open {
		switch {
		case head > p.VoteEnd:
			// Missed: the proposal closed without the vote.
		case head >= p.VoteStart:
			cl, err := voteCall(p, 0, For, fmt.Sprintf("scale vote %d", a.round))
			if err != nil {
				return sent, err
			}
			if _, err := c.sendGas(ctx, cl.from, 400_000, cl.artifact, cl.to, cl.method, cl.args...); err != nil {
				return sent, err
			}
			sent++
			a.Voted++
		default:
			keep = append(keep, p)
		}
	}
	a.open = keep
	d := a.daos[a.next%len(a.daos)]
	a.next++
	a.round++
	p, cl, err := c.proposeCall(d, 0, fmt.Sprintf("# Scale proposal %d\n\nStore %d in the box.", a.round, a.round), a.round)
	if err != nil {
		return sent, err
	}
	tx, err := c.sendGas(ctx, cl.from, 1_000_000, cl.artifact, cl.to, cl.method, cl.args...)
	if err != nil {
		return sent, err
	}
	a.pending = append(a.pending, &scalePending{p: p, tx: tx})
	a.Proposed++
	sent++
	// Voting power moves: a small transfer to another account.
	to := c.addrs[1+int(a.round)%(len(c.addrs)-1)]
	if _, err := c.sendGas(ctx, 0, 200_000, "ScaleToken", d.Token, "transfer", to, tokens(1)); err != nil {
		return sent, err
	}
	return sent + 1, nil
}
