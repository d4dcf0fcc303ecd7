package devchain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/govgate/govgate/core"
)

// RunActivity plays a script of governance on the five DAOs, one scene
// every `every`, until ctx ends: full lifecycles (propose, for/against/abstain
// votes with reasons, queue, execute), late quorums that extend the
// deadline, a vote with params, cancellations, and scenes that leave
// proposals standing in every state that each governor reaches: defeated,
// succeeded and never queued, queued, expired, executed, canceled, active
// for minutes (GovernorAlpha's 40,320-block vote is moved along a chunk of
// blocks a round); and, twice a cycle, delegation rounds that move voting
// power on every DAO's token among accounts the other scenes do not use
// (MoveDelegations). It returns ctx's error, or the first failure of a scene.
// A later call goes on with the script where the last one stopped.
func (c *Chain) RunActivity(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		round := int(c.round.Add(1) - 1)
		scene := scenes[round%len(scenes)]
		if err := scene.run(ctx, c, round); err != nil {
			if err := ended(ctx); err != nil {
				return err
			}
			return fmt.Errorf("devchain activity %q: %w", scene.name, err)
		}
		c.log.Debug("devchain activity", "scene", scene.name, "round", round)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

type scene struct {
	name string
	run  func(ctx context.Context, c *Chain, round int) error
}

// scenes is the script, cheap scenes first: a short run of RunActivity
// (tests, the first seconds of govgate dev) sees every kind of event.
var scenes = []scene{
	{"oz lifecycle", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.OZ, round, false)
	}},
	{"bravo lifecycle", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.Bravo, round, false)
	}},
	{"oz cancel", func(ctx context.Context, c *Chain, round int) error {
		return c.proposeAndCancel(ctx, c.OZ, round)
	}},
	{"oz late quorum", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.OZ, round, true)
	}},
	{"bravo cancel", func(ctx context.Context, c *Chain, round int) error {
		return c.proposeAndCancel(ctx, c.Bravo, round)
	}},
	{"oz actions", actionsScene},
	{"delegation", delegationScene},
	{"oz4 late quorum", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.OZ4, round, true)
	}},
	{"oz-time late quorum", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.OZTime, round, true)
	}},
	{"alpha cancel", func(ctx context.Context, c *Chain, round int) error {
		return c.proposeAndCancel(ctx, c.Alpha, round)
	}},
	{"standing states", func(ctx context.Context, c *Chain, round int) error {
		return c.stageStanding(ctx)
	}},
	{"delegation", delegationScene},
	{"alpha window", func(ctx context.Context, c *Chain, round int) error {
		return c.alphaStep(ctx)
	}},
	{"fractional lifecycle", func(ctx context.Context, c *Chain, round int) error {
		return c.countingLifecycle(ctx, c.OZFrac, round)
	}},
	{"override lifecycle", func(ctx context.Context, c *Chain, round int) error {
		return c.countingLifecycle(ctx, c.OZOverride, round)
	}},
	{"offset-clock late quorum", func(ctx context.Context, c *Chain, round int) error {
		return c.Lifecycle(ctx, c.OZOffset, round, true)
	}},
}

// delegationScene is a round of MoveDelegations.
func delegationScene(ctx context.Context, c *Chain, round int) error {
	_, err := c.MoveDelegations(ctx, round)
	return err
}

// stageStanding is StageAllStates on every DAO but GovernorAlpha, whose
// long vote alphaStep moves along: on each it leaves a canceled, a
// defeated, a succeeded (never queued), a queued, an expired (where the
// governor expires proposals), an executed, an active and a pending
// proposal. The active ones stay so for the voting period: minutes on
// dev-oz4 and dev-oz-time at govgate dev's one block a second, unless a
// later scene's blocks or time jumps end it sooner.
func (c *Chain) stageStanding(ctx context.Context) error {
	_, err := c.StageStates(ctx, c.OZ, c.Bravo, c.OZ4, c.OZTime, c.OZFrac, c.OZOverride, c.OZOffset)
	return err
}

// alphaWindow is the activity's GovernorAlpha proposals in voting.
type alphaWindow struct{ decided []*Proposal }

// alphaChunk is how many blocks one alphaStep seals: some seconds' work.
const alphaChunk = 4096

// alphaStep moves the activity's GovernorAlpha proposals along: the first
// step proposes one to be defeated, succeeded, queued, expired and executed
// and votes on them, which leaves them active for the 40,320 blocks of
// Alpha's voting period (hours at one block a second); each step then
// seals alphaChunk blocks of it, and the step after voting ends queues,
// executes and lets expire as StageAllStates does.
func (c *Chain) alphaStep(ctx context.Context) error {
	c.scene.Lock()
	defer c.scene.Unlock()
	s := &stager{c: c, daos: []*Deployment{c.Alpha}}
	var err error
	if s.alpha, err = c.alphaProposers(ctx, len(alphaRoles)); err != nil {
		return err
	}
	if c.alphaRun == nil {
		decided, err := s.decide(ctx)
		if err != nil {
			return err
		}
		c.alphaRun = &alphaWindow{decided: decided}
		return nil
	}
	var end uint64
	for _, p := range c.alphaRun.decided {
		end = max(end, p.VoteEnd+1)
	}
	head, err := c.client.BlockNumber(ctx)
	if err != nil {
		return err
	}
	if head < end {
		return c.MineTo(ctx, min(end, head+alphaChunk))
	}
	if err := s.settle(ctx, c.alphaRun.decided); err != nil {
		return err
	}
	c.alphaRun = nil
	return nil
}

// Lifecycle runs one proposal from creation to execution: account 1
// proposes; account 2 votes against and 3 for, with reasons, then 0 for and
// 1 abstains without (on GovernorAlpha, which takes neither reasons nor
// abstentions, the same votes without reasons, and 1 does not vote).
// With late set (OpenZeppelin only), quorum is reached in the last blocks
// (or seconds) of voting, which extends the deadline (ProposalExtended),
// and the abstention carries params (VoteCastWithParams).
func (c *Chain) Lifecycle(ctx context.Context, d *Deployment, round int, late bool) error {
	c.scene.Lock()
	defer c.scene.Unlock()
	p, err := c.Propose(ctx, d, 1, fmt.Sprintf("# Dev proposal %d\n\nStore %d in the box.", round, round), uint64(round))
	if err != nil {
		return err
	}
	if err := c.OpenVoting(ctx, p); err != nil {
		return err
	}
	alpha := d.Kind == core.KindGovernorAlpha
	reason := func(r string) string {
		if alpha {
			return ""
		}
		return r
	}
	if _, err := c.Vote(ctx, p, 2, Against, reason("not convinced")); err != nil {
		return err
	}
	late = late && d.Kind == core.KindOZGovernor
	if late {
		// Quorum at the deadline: the deadline moves by the extension.
		if err := c.AdvanceTo(ctx, d, lateTimepoint(p)); err != nil {
			return err
		}
	}
	if _, err := c.Vote(ctx, p, 3, For, reason("ship it")); err != nil {
		return err
	}
	if _, err := c.Vote(ctx, p, 0, For, ""); err != nil {
		return err
	}
	switch {
	case late:
		_, err = c.VoteWithParams(ctx, p, 1, Abstain, "abstaining, with params", []byte{0xca, 0xfe})
	case !alpha:
		_, err = c.Vote(ctx, p, 1, Abstain, "")
	}
	if err != nil {
		return err
	}
	if err := c.CloseVoting(ctx, p); err != nil {
		return err
	}
	if _, err := c.Queue(ctx, p); err != nil {
		return err
	}
	if _, err := c.Execute(ctx, p); err != nil {
		return err
	}
	return nil
}

// countingLifecycle runs one proposal from creation to execution on
// dev-oz-fractional or dev-oz-override, with the votes only they count: on
// the first, account 0 splits part of its weight over two calls in two
// blocks, account 2 casts part of its weight against, account 3 votes for; on the second, one of account 0's delegators
// overrides before account 0 votes and the other after, which reduces
// account 0's vote.
func (c *Chain) countingLifecycle(ctx context.Context, d *Deployment, round int) error {
	c.scene.Lock()
	defer c.scene.Unlock()
	p, err := c.Propose(ctx, d, 1, fmt.Sprintf("# Dev proposal %d (%s)\n\nStore %d in the box.", round, d.Slug, round), uint64(round))
	if err != nil {
		return err
	}
	if err := c.OpenVoting(ctx, p); err != nil {
		return err
	}
	var steps [][]txCall
	if d == c.OZFrac {
		steps = [][]txCall{
			{fractionalCall(p, 0, tokens(5_000), tokens(30_000), tokens(5_000), "a split vote")},
			{fractionalCall(p, 2, tokens(20_000), new(big.Int), new(big.Int), "a little against")},
			{fractionalCall(p, 0, new(big.Int), tokens(25_000), tokens(10_000), "more of my split")},
			{mustVote(p, 3, For, "")},
		}
	} else if c.overrides() {
		steps = [][]txCall{
			{overrideCall(p, overrideDelegators[1], Abstain, "I speak for myself")},
			{mustVote(p, 0, For, "ship it")},
			{overrideCall(p, overrideDelegators[0], Against, "not with my tokens")},
			{mustVote(p, 3, For, "")},
		}
	} else {
		steps = [][]txCall{{mustVote(p, 0, For, "ship it")}, {mustVote(p, 3, For, "")}}
	}
	for _, calls := range steps {
		if _, err := c.sealCalls(ctx, calls); err != nil {
			return err
		}
	}
	if err := c.CloseVoting(ctx, p); err != nil {
		return err
	}
	if _, err := c.Queue(ctx, p); err != nil {
		return err
	}
	_, err = c.Execute(ctx, p)
	return err
}

// lateTimepoint is when to bring the votes that reach a late quorum on p:
// close enough to the end of voting that the late-quorum extension moves
// the deadline, and far enough that a vote sealed a block later than the
// next one (the pool can promote a transaction late) still counts.
func lateTimepoint(p *Proposal) uint64 {
	if p.DAO.Clock == core.ClockTimestamp {
		return p.VoteEnd - 5 // seconds; the extension is 60
	}
	return p.VoteEnd - 2 // blocks; the extensions are 3 and 20
}

// proposeAndCancel has an account propose and the proposal canceled: by
// account 2, or on GovernorAlpha by a proposer that the activity's other
// Alpha proposals leave free.
func (c *Chain) proposeAndCancel(ctx context.Context, d *Deployment, round int) error {
	c.scene.Lock()
	defer c.scene.Unlock()
	proposer := 2
	if d.Kind == core.KindGovernorAlpha {
		ids, err := c.alphaProposers(ctx, len(alphaRoles)+1)
		if err != nil {
			return err
		}
		proposer = ids[len(alphaRoles)]
	}
	p, err := c.Propose(ctx, d, proposer, fmt.Sprintf("Dev proposal %d, withdrawn", round), uint64(round))
	if err != nil {
		return err
	}
	if _, err := c.Cancel(ctx, p); err != nil {
		return err
	}
	if s, err := c.State(ctx, p); err != nil || s != 2 {
		return errors.Join(err, fmt.Errorf("state after cancel is %d, not canceled", s))
	}
	return nil
}

// ended returns why ctx ended, or nil while it runs. Past ctx's deadline it
// returns context.DeadlineExceeded even before ctx.Err does: Err turns
// non-nil only once the context's timer has fired and its goroutine has run,
// which on a loaded machine lags the deadline, while go-ethereum's
// in-process RPC client (net.Pipe) already fails any call from the deadline
// on, with a "write pipe: i/o timeout" that does not wrap the context's
// error. Judged by Err alone, such a failure of a scene cut short by ctx
// looked like a broken scene.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
