package indexer

import (
	"context"
	"encoding/json"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/devchain"
)

// countOf counts a DAO's notifications of one type about one proposal.
func countOf(ns []core.Notification, dao, typ, proposalID string) int {
	n := 0
	for _, x := range ns {
		if x.DAO != dao || x.Type != typ {
			continue
		}
		var d struct{ ProposalID string }
		json.Unmarshal(x.Data, &d)
		if d.ProposalID == proposalID {
			n++
		}
	}
	return n
}

// wantState checks the stored proposal against the governor's state().
func wantState(t *testing.T, c *devchain.Chain, store *memStore, p *devchain.Proposal, want string) core.Proposal {
	t.Helper()
	got, ok, _ := store.Proposal(context.Background(), p.DAO.Slug, p.ID.String())
	if !ok {
		t.Fatalf("%s proposal %s not stored", p.DAO.Slug, p.ID)
	}
	onChain, err := c.State(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != want || core.StateName(onChain) != want {
		t.Fatalf("%s proposal %s: served %q, governor says %q, want %q", p.DAO.Slug, p.ID, got.State, core.StateName(onChain), want)
	}
	return got
}

// TestTimeDrivenStates follows proposals on both governor kinds through
// the states that only the clock changes: pending, active, then succeeded
// or defeated at voteEnd, with an ending_soon lead before it. Each
// time-driven notification goes out once, also when a reorganisation
// replaces the block where voteEnd was crossed, and the state calls cost a
// few per proposal, not one per block.
func TestTimeDrivenStates(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	gw := newGateway(t, c.ChainConfig())
	store := newMemStore()
	// One lead longer than the 10-block voting period (skipped), one shorter.
	r := newRunner(t, gw, store, c.DAOs(), 0, Config{EndingSoon: []time.Duration{time.Hour, 4 * time.Second}})
	syncs := 0
	sync := func() {
		t.Helper()
		syncs++
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}

	type pair struct{ pass, fail *devchain.Proposal }
	var props []pair
	for _, d := range []*devchain.Deployment{c.OZ, c.Bravo} {
		pass, err := c.Propose(ctx, d, 1, "# Pass\n\nStore 7.", 7)
		if err != nil {
			t.Fatal(err)
		}
		fail, err := c.Propose(ctx, d, 2, "# Fail", 8)
		if err != nil {
			t.Fatal(err)
		}
		props = append(props, pair{pass, fail})
	}
	sync()
	// Each proposal took a block: the last one is still pending, the
	// earlier ones may have opened already. Served and governor agree.
	for _, pp := range props {
		for _, p := range []*devchain.Proposal{pp.pass, pp.fail} {
			st, _ := c.State(ctx, p)
			wantState(t, c, store, p, core.StateName(st))
		}
	}
	last := props[len(props)-1]
	if p := wantState(t, c, store, last.fail, core.ProposalPending); p.Quorum != nil || p.Clock != core.ClockBlockNumber {
		t.Fatalf("pending proposal: quorum %v, clock %q", p.Quorum, p.Clock)
	}
	callsAtPending, syncsAtPending := r.ContractCalls(), syncs

	if err := c.OpenVoting(ctx, last.fail); err != nil {
		t.Fatal(err)
	}
	sync()
	for _, pp := range props {
		wantState(t, c, store, pp.pass, core.ProposalActive)
		p := wantState(t, c, store, pp.fail, core.ProposalActive)
		if p.Quorum == nil || *p.Quorum == "0" {
			t.Fatalf("active proposal without its quorum: %+v", p)
		}
	}
	// A quarter of the supply for one proposal, a quarter against the other.
	minEnd, maxEnd := ^uint64(0), uint64(0)
	for _, pp := range props {
		if _, err := c.Vote(ctx, pp.pass, 0, devchain.For, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Vote(ctx, pp.fail, 2, devchain.Against, ""); err != nil {
			t.Fatal(err)
		}
		minEnd, maxEnd = min(minEnd, pp.pass.VoteEnd, pp.fail.VoteEnd), max(maxEnd, pp.pass.VoteEnd, pp.fail.VoteEnd)
	}
	if err := c.MineTo(ctx, minEnd); err != nil {
		t.Fatal(err)
	}
	sync()
	for _, pp := range props {
		wantState(t, c, store, pp.pass, core.ProposalActive)
		wantState(t, c, store, pp.fail, core.ProposalActive)
	}
	head, err := c.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	beforeCrossing := head.Hash()

	// Block by block past every voteEnd: each proposal comes within the
	// 4 s lead once, then closes with the outcome the governor computes.
	for n := head.Number.Uint64(); n <= maxEnd; n++ {
		c.Mine(1)
		sync()
	}
	ns := store.allNotifications()
	for _, pp := range props {
		for _, p := range []*devchain.Proposal{pp.pass, pp.fail} {
			if n := countOf(ns, p.DAO.Slug, ending, p.ID.String()); n != 1 {
				t.Errorf("%s proposal %s: %d ending_soon, want 1 (the 4 s lead; the 1 h lead exceeds the voting period)", p.DAO.Slug, p.ID, n)
			}
		}
	}
	for _, pp := range props {
		p := wantState(t, c, store, pp.pass, core.ProposalSucceeded)
		if !p.QuorumReached {
			t.Errorf("%s: succeeded without quorum reached: %+v", pp.pass.DAO.Slug, p)
		}
		if p = wantState(t, c, store, pp.fail, core.ProposalDefeated); p.QuorumReached {
			t.Errorf("%s: a vote against reached the quorum? %+v", pp.fail.DAO.Slug, p)
		}
	}
	// A reorganisation replaces the blocks where voteEnd was crossed: the
	// crossing moves to other blocks. What the old blocks notified is
	// orphaned (receivers get a notification.orphaned for each) and
	// notified again where it now happens: nothing stands notified twice.
	if err := c.Fork(beforeCrossing); err != nil {
		t.Fatal(err)
	}
	c.Mine(int(maxEnd-minEnd) + 3)
	sync()
	if store.rollbacks == 0 {
		t.Fatal("the fork was not noticed")
	}
	ns = store.liveNotifications()
	for _, pp := range props {
		wantState(t, c, store, pp.pass, core.ProposalSucceeded)
		wantState(t, c, store, pp.fail, core.ProposalDefeated)
		for _, tc := range []struct {
			p   *devchain.Proposal
			typ string
		}{{pp.pass, active}, {pp.pass, succeeded}, {pp.fail, active}, {pp.fail, defeated}} {
			if n := countOf(ns, tc.p.DAO.Slug, tc.typ, tc.p.ID.String()); n != 1 {
				t.Errorf("%s proposal %s: %d %s, want 1", tc.p.DAO.Slug, tc.p.ID, n, tc.typ)
			}
		}
		if n := countOf(ns, pp.pass.DAO.Slug, defeated, pp.pass.ID.String()); n != 0 {
			t.Errorf("%s: the passing proposal was also announced defeated", pp.pass.DAO.Slug)
		}
	}
	// Each orphaned notification was announced once. An ending_soon of
	// the old chain stays orphaned: the new chain's first poll already
	// saw the vote closed, and a lead before a past deadline is news to
	// no one.
	if len(store.orphanNotices) == 0 || len(store.orphanNotices) != len(store.orphaned) {
		t.Errorf("%d orphan notices for %d orphaned notifications", len(store.orphanNotices), len(store.orphaned))
	}
	// A restarted process on the same store emits nothing new.
	n := len(store.allNotifications())
	if err := newRunner(t, gw, store, c.DAOs(), 0, Config{EndingSoon: []time.Duration{time.Hour, 4 * time.Second}}).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(store.allNotifications()); got != n {
		t.Errorf("a restart added %d notifications", got-n)
	}

	t.Run("data", func(t *testing.T) {
		for _, x := range ns {
			if x.Type != succeeded || x.DAO != c.OZ.Slug {
				continue
			}
			var d proposalStateData
			if err := json.Unmarshal(x.Data, &d); err != nil {
				t.Fatal(err)
			}
			quarter := new(big.Int).Div(new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(1e18)), big.NewInt(4))
			if d.State != core.ProposalSucceeded || d.ForVotes != quarter.String() || d.Quorum == nil || !d.QuorumReached ||
				d.Title != "Pass" || d.Clock != core.ClockBlockNumber || d.Governor != c.OZ.Governor.Hex() {
				t.Errorf("succeeded data %+v", d)
			}
		}
	})

	// The state calls grow with the proposals that change, not with blocks:
	// at most a state call per crossing plus a quorum read per proposal,
	// and a read of each governor's clock per poll while it has open
	// proposals (crossings are judged by it, never by the block number).
	calls := r.ContractCalls() - callsAtPending
	t.Logf("%d contract calls for %d proposals over %d blocks", calls, 2*len(props), maxEnd-minEnd+60)
	if limit := int64(len(props))*2*4 + int64(syncs-syncsAtPending)*int64(len(props)); calls > limit {
		t.Errorf("%d contract calls for %d proposals, want at most %d", calls, 2*len(props), limit)
	}
	before := r.ContractCalls()
	c.Mine(50)
	sync()
	if extra := r.ContractCalls() - before; extra != 0 {
		t.Errorf("%d contract calls for 50 blocks with no proposal open", extra)
	}
}

// TestHistoryIsNotPushed backfills a DAO whose history is older than its
// first poll: everything is stored and served, nothing is notified, until
// what happens after the head it started from. notify_history pushes all.
func TestHistoryIsNotPushed(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	gw := newGateway(t, c.ChainConfig())
	for i := range 3 {
		if err := c.Lifecycle(ctx, c.OZ, i, false); err != nil {
			t.Fatal(err)
		}
	}
	daos := []core.DAO{c.OZ.DAO()}
	store := newMemStore()
	r, err := NewRunner(gw, store, NewLocalLocker(), devchain.ChainID, 0, daos, Config{InitialRange: 4, MaxRange: 4}, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if ns := store.allNotifications(); len(ns) != 0 {
		t.Fatalf("history pushed: %v", typesOf(ns, c.OZ.Slug))
	}
	if got := len(store.allProposals(c.OZ.Slug)); got != 3 {
		t.Fatalf("%d proposals stored, want 3", got)
	}
	if got := len(store.allVotes(c.OZ.Slug)); got != 12 {
		t.Fatalf("%d votes stored, want 12", got)
	}
	s, _ := r.Status(c.OZ.Slug)
	if s.NotifyFromBlock != s.LastIndexedBlock+1 || s.Backfill != nil {
		t.Fatalf("status %+v: want notify-from right after the head it started from, and no backfill left", s)
	}
	// What happens from there is pushed, including time-driven changes.
	if err := c.Lifecycle(ctx, c.OZ, 9, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{created, active, vote, vote, vote, vote, succeeded, queued, executed}
	if got := typesOf(store.allNotifications(), c.OZ.Slug); len(got) != len(want) {
		t.Fatalf("after the head: %v, want %v", got, want)
	}

	t.Run("notify_history", func(t *testing.T) {
		all := newMemStore()
		d := daos[0]
		d.NotifyHistory = true
		r, err := NewRunner(gw, all, NewLocalLocker(), devchain.ChainID, 0, []core.DAO{d}, Config{}, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(typesOf(all.allNotifications(), c.OZ.Slug)); got != 4*len(want) {
			t.Fatalf("%d notifications with notify_history, want %d", got, 4*len(want))
		}
	})
	t.Run("notify_from_block", func(t *testing.T) {
		some := newMemStore()
		d := daos[0]
		var blocks []uint64
		for _, p := range store.allProposals(c.OZ.Slug) {
			blocks = append(blocks, p.CreatedBlock)
		}
		slices.Sort(blocks)
		d.NotifyFromBlock = &blocks[2]
		r, err := NewRunner(gw, some, NewLocalLocker(), devchain.ChainID, 0, []core.DAO{d}, Config{}, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(typesOf(some.allNotifications(), c.OZ.Slug)); got != 2*len(want) {
			t.Fatalf("%d notifications from the third proposal's block, want %d", got, 2*len(want))
		}
	})
}
