package devchain

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/govgate/govgate/core"
)

// States returns the proposal states that d's governor can reach, in
// core.ProposalStates order. Every family reaches all eight but the
// OpenZeppelin 5.x governors behind a TimelockController, whose queued
// proposals never expire.
func (d *Deployment) States() []string {
	if d.oz5() {
		var s []string
		for _, st := range core.ProposalStates {
			if st != core.ProposalExpired {
				s = append(s, st)
			}
		}
		return s
	}
	return append([]string(nil), core.ProposalStates...)
}

// StageAllStates leaves proposals on every DAO in every state its governor
// can reach (Deployment.States), and returns them, each with Expect set to
// the state it is in on return. Across the five DAOs that is all eight
// states.
//
// The proposals carry realistic votes: for, against and abstain (for and
// against on GovernorAlpha) with reasons; on dev-oz and dev-oz4 one
// proposal reaches quorum only in the last blocks of voting, which extends
// its deadline (ProposalExtended); on dev-oz-time the voting ends as the
// clock crosses the deadline, not as blocks are sealed. Every proposal
// stores its own value in the Box, as Compound's Timelock refuses two
// identical actions with one ETA.
//
// The pending and active proposals are made last and are still pending and
// active on return; sealing blocks or moving time afterwards moves them on
// (the pending ones of the block-clock DAOs open two blocks later, dev-oz
// and dev-bravo's active ones close some seven blocks later). Voting on
// GovernorAlpha lasts 40,320 blocks, which StageAllStates seals once
// (MineTo fast-forwards them): about 20 s on two cores, nearly all of its
// run time. Time jumps of over 16 days follow (timelock delay, grace
// period). With fewer than five dev accounts it funds staging proposers
// beyond Accounts with ETH and UNI, as GovernorAlpha allows one live
// proposal per proposer.
func (c *Chain) StageAllStates(ctx context.Context) ([]*Proposal, error) {
	return c.StageStates(ctx, c.Deployments()...)
}

// StageStates is StageAllStates on the given DAOs only. Without dev-alpha
// it seals some hundreds of blocks instead of GovernorAlpha's 40,320, and
// takes well under a second.
func (c *Chain) StageStates(ctx context.Context, daos ...*Deployment) ([]*Proposal, error) {
	c.scene.Lock()
	defer c.scene.Unlock()
	s := &stager{c: c, daos: daos}
	if err := s.run(ctx); err != nil {
		return nil, fmt.Errorf("stage states: %w", err)
	}
	return s.all, nil
}

// stager runs StageAllStates, and the activity's staging scenes, on daos.
type stager struct {
	c     *Chain
	daos  []*Deployment
	all   []*Proposal
	alpha []int // GovernorAlpha proposers, one per live proposal
}

// alphaRoles are the states of the proposals that vote in the one long
// GovernorAlpha voting period; each needs a proposer of its own.
var alphaRoles = []string{core.ProposalDefeated, core.ProposalSucceeded, core.ProposalQueued, core.ProposalExpired, core.ProposalExecuted}

func (s *stager) run(ctx context.Context) error {
	if slices.Contains(s.daos, s.c.Alpha) {
		var err error
		if s.alpha, err = s.c.alphaProposers(ctx, len(alphaRoles)); err != nil {
			return err
		}
	}
	if err := s.cancel(ctx); err != nil {
		return err
	}
	decided, err := s.decide(ctx)
	if err != nil {
		return err
	}
	for _, p := range decided {
		if err := s.c.CloseVoting(ctx, p); err != nil {
			return err
		}
	}
	if err := s.settle(ctx, decided); err != nil {
		return err
	}
	return s.standing(ctx)
}

// cancel leaves a canceled proposal on each DAO. OpenZeppelin governors
// allow it only while the proposal is pending, at most one block here: the
// cancel goes in the block of the proposal, with a fixed gas limit (its
// estimate, at the head, would not find the proposal). Bravo and Alpha
// allow it later; on Alpha the proposer's votes must first fall below the
// threshold.
func (s *stager) cancel(ctx context.Context) error {
	canceled, err := s.proposeThen(ctx, 0, func(d *Deployment) []string { return []string{core.ProposalCanceled} },
		func(p *Proposal) *txCall {
			if p.DAO.byID() {
				return nil // needs the id, which the receipt tells
			}
			cl := actionCall(p, "cancel")
			cl.gas = cancelGas
			return &cl
		})
	if err != nil {
		return err
	}
	for _, p := range canceled {
		if p.DAO.byID() {
			if _, err := s.c.Cancel(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// cancelGas is the gas limit of a cancel sent with its proposal: more than
// twice what OpenZeppelin's cancel uses.
const cancelGas = 200_000

// decide makes the proposals to be defeated, succeeded, queued, expired
// (where the governor can expire) and executed, one voting period per DAO,
// and casts their votes. On dev-oz and dev-oz4 the proposal to succeed gets
// only an against vote early; the for votes that reach quorum come in the
// last blocks of voting, which extends the deadline. Voting is still open
// on return: CloseVoting ends it.
func (s *stager) decide(ctx context.Context) ([]*Proposal, error) {
	c := s.c
	decided, err := s.propose(ctx, 0, func(d *Deployment) []string {
		var roles []string
		for _, r := range alphaRoles {
			if r != core.ProposalExpired || !d.oz5() {
				roles = append(roles, r)
			}
		}
		return roles
	})
	if err != nil {
		return nil, err
	}
	if err := s.open(ctx, decided); err != nil {
		return nil, err
	}
	late := map[*Proposal]bool{}
	for _, p := range decided {
		if (p.DAO == c.OZ || p.DAO == c.OZ4) && p.Expect == core.ProposalSucceeded {
			late[p] = true
		}
	}
	var votes []txCall
	for _, p := range decided {
		if late[p] {
			votes = append(votes, mustVote(p, 2, Against, "quorum will not be reached"))
			continue
		}
		votes = append(votes, s.tally(p, p.Expect == core.ProposalDefeated)...)
	}
	if _, err := c.sealCalls(ctx, votes); err != nil {
		return nil, err
	}
	// A block later: the second partial votes and the overrides of
	// delegates that have voted.
	var more []txCall
	for _, p := range decided {
		more = append(more, s.followUp(p, p.Expect == core.ProposalDefeated)...)
	}
	if _, err := c.sealCalls(ctx, more); err != nil {
		return nil, err
	}
	for _, p := range decided {
		if !late[p] {
			continue
		}
		if err := c.AdvanceTo(ctx, p.DAO, lateTimepoint(p)); err != nil {
			return nil, err
		}
		if _, err := c.sealCalls(ctx, []txCall{
			mustVote(p, 0, For, "just in time"), mustVote(p, 1, For, ""), mustVote(p, 3, Abstain, ""),
		}); err != nil {
			return nil, err
		}
	}
	return decided, nil
}

// settle queues the decided proposals to be executed and to expire; after
// the delay it executes the first, after the grace period the others have
// expired; then it queues those to stay queued.
func (s *stager) settle(ctx context.Context, decided []*Proposal) error {
	c := s.c
	if err := s.act(ctx, decided, "queue", core.ProposalExecuted, core.ProposalExpired); err != nil {
		return err
	}
	if err := c.AdjustTime(compoundTimelockDelay + time.Second); err != nil {
		return err
	}
	if err := s.act(ctx, decided, "execute", core.ProposalExecuted); err != nil {
		return err
	}
	if err := c.AdjustTime(compoundGracePeriod + time.Second); err != nil {
		return err
	}
	return s.act(ctx, decided, "queue", core.ProposalQueued)
}

// standing makes an active proposal, with some votes, then a pending one on
// each DAO: last, so that they still are on return.
func (s *stager) standing(ctx context.Context) error {
	active, err := s.propose(ctx, 0, func(d *Deployment) []string { return []string{core.ProposalActive} })
	if err != nil {
		return err
	}
	if err := s.open(ctx, active); err != nil {
		return err
	}
	// On dev-oz-override a delegator overrides before its delegate votes,
	// which then casts what is left of its weight.
	var early []txCall
	for _, p := range active {
		if p.DAO == s.c.OZOverride && s.c.overrides() {
			early = append(early, overrideCall(p, overrideDelegators[1], Abstain, "my own say"))
		}
	}
	if _, err := s.c.sealCalls(ctx, early); err != nil {
		return err
	}
	var votes, more []txCall
	for _, p := range active {
		if p.DAO == s.c.OZFrac {
			votes = append(votes, fractionalCall(p, 0, tokens(20_000), tokens(40_000), new(big.Int), "mostly for"),
				mustVote(p, 1, Against, ""), mustVote(p, 2, Abstain, "need more details"))
			more = append(more, fractionalCall(p, 0, new(big.Int), tokens(5_000), tokens(1_000), "a little more"))
			continue
		}
		votes = append(votes, mustVote(p, 0, For, ""), mustVote(p, 1, Against, ""))
		if p.DAO.Kind != core.KindGovernorAlpha {
			votes = append(votes, mustVote(p, 2, Abstain, "need more details"))
		}
		if p.DAO == s.c.OZOverride && s.c.overrides() {
			more = append(more, overrideCall(p, overrideDelegators[0], Against, "not with my tokens"))
		}
	}
	if _, err := s.c.sealCalls(ctx, votes); err != nil {
		return err
	}
	if _, err := s.c.sealCalls(ctx, more); err != nil {
		return err
	}
	// On GovernorAlpha by another proposer: the active one is live.
	if _, err = s.propose(ctx, 1, func(d *Deployment) []string { return []string{core.ProposalPending} }); err != nil {
		return err
	}
	return s.verify(ctx)
}

// verify checks that every proposal made is in the state it was made for.
func (s *stager) verify(ctx context.Context) error {
	for _, p := range s.all {
		st, err := s.c.State(ctx, p)
		if err != nil {
			return err
		}
		if got := core.StateName(st); got != p.Expect {
			return fmt.Errorf("%s proposal %s is %s, not %s", p.DAO.Slug, p.ID, got, p.Expect)
		}
	}
	return nil
}

// propose makes, in one block, a proposal on every DAO for each state that
// roles names for it, and records them with that state as Expect. The
// proposers are accounts first+1, first+2, …, and on GovernorAlpha
// s.alpha[first], s.alpha[first+1], ….
func (s *stager) propose(ctx context.Context, first int, roles func(d *Deployment) []string) ([]*Proposal, error) {
	return s.proposeThen(ctx, first, roles, nil)
}

// proposeThen is propose, with then's call, if any, sent in the same block
// right after each propose (from the proposer, so after it by nonce).
func (s *stager) proposeThen(ctx context.Context, first int, roles func(d *Deployment) []string, then func(p *Proposal) *txCall) ([]*Proposal, error) {
	var ps []*Proposal
	var calls []txCall
	var at []int // index of each proposal's propose in calls
	for _, d := range s.daos {
		for i, role := range roles(d) {
			proposer := (first + i + 1) % s.c.holders
			if d.Kind == core.KindGovernorAlpha {
				proposer = s.alpha[(first+i)%len(s.alpha)]
			}
			value := s.c.staged.Add(1) + 1_000_000
			p, cl, err := s.c.proposeCall(d, proposer, fmt.Sprintf("# Staged: %s\n\nStore %d in the box; this proposal is left %s.", role, value, role), value)
			if err != nil {
				return nil, err
			}
			p.Expect = role
			ps, at, calls = append(ps, p), append(at, len(calls)), append(calls, cl)
			if then != nil {
				if next := then(p); next != nil {
					calls = append(calls, *next)
				}
			}
		}
	}
	rs, err := s.c.sealCalls(ctx, calls)
	if err != nil {
		return nil, err
	}
	for i, p := range ps {
		if err := p.created(rs[at[i]]); err != nil {
			return nil, err
		}
	}
	s.all = append(s.all, ps...)
	return ps, nil
}

// open advances every clock until voting on all of ps is open.
func (s *stager) open(ctx context.Context, ps []*Proposal) error {
	for _, p := range ps {
		if err := s.c.OpenVoting(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// tally is the votes of the dev accounts on p: for winning, or against
// winning when defeat is set; account 3 abstains where the governor counts
// abstentions. With equal shares either side has a clear majority. On
// dev-oz-fractional accounts 0 and 3 split their weight (0 partly, the rest
// in followUp); on dev-oz-override account 0 votes with its delegators'
// weight too, which followUp's overrides take back.
func (s *stager) tally(p *Proposal, defeat bool) []txCall {
	second := For
	if defeat {
		second = Against
	}
	if p.DAO == s.c.OZFrac {
		return []txCall{
			fractionalCall(p, 0, tokens(10_000), tokens(50_000), tokens(5_000), "split"),
			mustVote(p, 1, second, ""),
			mustVote(p, 2, Against, "the treasury cannot afford it"),
			fractionalCall(p, 3, tokens(30_000), new(big.Int), tokens(70_000), ""),
		}
	}
	alpha := p.DAO.Kind == core.KindGovernorAlpha
	reason := func(r string) string {
		if alpha {
			return ""
		}
		return r
	}
	calls := []txCall{
		mustVote(p, 0, For, reason("worth a try")),
		mustVote(p, 1, second, ""),
		mustVote(p, 2, Against, reason("the treasury cannot afford it")),
	}
	if !alpha {
		calls = append(calls, mustVote(p, 3, Abstain, ""))
	}
	return calls
}

// followUp is what comes a block after tally: on dev-oz-fractional account
// 0's second partial vote; on dev-oz-override the overrides of account 0's
// delegators (against when defeat is set, which turns the outcome; an
// abstention otherwise).
func (s *stager) followUp(p *Proposal, defeat bool) []txCall {
	switch p.DAO {
	case s.c.OZFrac:
		return []txCall{fractionalCall(p, 0, new(big.Int), tokens(20_000), new(big.Int), "and some more for")}
	case s.c.OZOverride:
		if !s.c.overrides() {
			return nil
		}
		if defeat {
			return []txCall{
				overrideCall(p, overrideDelegators[0], Against, "not with my tokens"),
				overrideCall(p, overrideDelegators[1], Against, ""),
			}
		}
		return []txCall{overrideCall(p, overrideDelegators[0], Abstain, "")}
	}
	return nil
}

// act calls method (queue, execute) on every proposal of ps expected in
// one of states, in one block.
func (s *stager) act(ctx context.Context, ps []*Proposal, method string, states ...string) error {
	var calls []txCall
	for _, p := range ps {
		for _, st := range states {
			if p.Expect == st {
				calls = append(calls, actionCall(p, method))
			}
		}
	}
	_, err := s.c.sealCalls(ctx, calls)
	return err
}

// mustVote is voteCall for votes that every family takes.
func mustVote(p *Proposal, voter int, support uint8, reason string) txCall {
	cl, err := voteCall(p, voter, support, reason)
	if err != nil {
		panic(err) // a staging bug: an abstention or a reason for GovernorAlpha
	}
	return cl
}

// alphaProposers returns n accounts that can each have a live GovernorAlpha
// proposal: the dev accounts, then, when there are fewer than n, staging
// proposers (dev keys past Options.Accounts, not in Accounts) to which
// account 0 gives 1 ETH and just over the proposal threshold of UNI, which
// they delegate to themselves. n is at most sceneAccounts(): the accounts
// after those are the delegation scene's, which hold no such stake.
func (c *Chain) alphaProposers(ctx context.Context, n int) ([]int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var added []int
	for i := len(c.addrs); i < n; i++ {
		key := DevKey(i)
		c.keys, c.addrs = append(c.keys, key), append(c.addrs, crypto.PubkeyToAddress(key.PublicKey))
		added = append(added, i)
	}
	if len(added) > 0 {
		out, err := c.call(ctx, "GovernorAlpha", c.Alpha.Governor, "proposalThreshold")
		if err != nil {
			return nil, err
		}
		stake := new(big.Int).Add(out[0].(*big.Int), ether)
		for _, i := range added {
			if err := c.sendValueLocked(ctx, 0, c.addrs[i], ether); err != nil {
				return nil, err
			}
			if _, err := c.send(ctx, 0, "Uni", c.Alpha.Token, "transfer", c.addrs[i], stake); err != nil {
				return nil, err
			}
		}
		c.commitLocked()
		for _, i := range added {
			if _, err := c.send(ctx, i, "Uni", c.Alpha.Token, "delegate", c.addrs[i]); err != nil {
				return nil, err
			}
		}
		c.commitLocked()
		c.commitLocked() // Alpha reads a proposer's votes at the block before
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids, nil
}
