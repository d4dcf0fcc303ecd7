package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
)

// pgLocker hands out the store's PostgreSQL chain leases to runners.
type pgLocker struct{ st *store.Store }

func (l pgLocker) TryLock(ctx context.Context, chainID uint64) (indexer.Lease, bool, error) {
	lease, ok, err := l.st.TryChainLock(ctx, chainID)
	if !ok || err != nil {
		return nil, ok, err
	}
	return lease, true, nil
}

// orphans returns, by orphaned notification id, how many
// notification.orphaned notices name it.
func orphans(t *testing.T, st *store.Store) map[string]int {
	t.Helper()
	list, err := st.ListNotifications(context.Background(), core.NotificationFilter{Type: core.TypeNotificationOrphaned, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, n := range list {
		var d store.OrphanedData
		if err := json.Unmarshal(n.Data, &d); err != nil {
			t.Fatal(err)
		}
		out[d.OrphanedID]++
	}
	return out
}

// TestDeepReorgOrphanNotices indexes votes a block behind the head (one
// confirmation), then forks the dev chain three blocks below them: every
// notification of the orphaned blocks gets exactly one
// notification.orphaned, none other does, and the new chain's vote is
// notified, on both stores.
func TestDeepReorgOrphanNotices(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			c := startChain(t, devchain.Options{Accounts: 4, Logger: quiet})
			st := storetest.Open(t, b.NewDatabase(t), storetest.NewBox(t), store.Options{})
			daos := c.DAOs()
			for i := range daos {
				daos[i].NotifyHistory = true
			}
			r, err := indexer.NewRunner(newGW(t, c), st, indexer.NewLocalLocker(), devchain.ChainID, 1, daos, indexer.Config{}, indexer.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.Propose(ctx, c.Bravo, 1, "# Reorged votes", 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.OpenVoting(ctx, p); err != nil {
				t.Fatal(err)
			}
			fork, err := c.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, voter := range []int{0, 2} {
				if _, err := c.Vote(ctx, p, voter, devchain.For, "old chain"); err != nil {
					t.Fatal(err)
				}
			}
			c.Mine(2) // the votes are confirmed
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			before, err := st.ListNotifications(ctx, core.NotificationFilter{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, n := range before {
				if blk, ok := store.NotificationBlock(n.Data); ok && blk > fork.Number.Uint64() {
					want[n.ID] = true
				}
			}
			if len(want) < 2 {
				t.Fatalf("%d notifications above the fork point", len(want))
			}
			if err := c.Fork(fork.Hash()); err != nil {
				t.Fatal(err)
			}
			c.Mine(1)
			vote, err := c.Vote(ctx, p, 3, devchain.Against, "new chain")
			if err != nil {
				t.Fatal(err)
			}
			c.Mine(5)
			for range 2 { // a second pass orphans nothing more
				if err := r.Sync(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got := orphans(t, st)
			for id := range want {
				if got[id] != 1 {
					t.Errorf("notification %s of an orphaned block: %d orphan notices, want 1", id, got[id])
				}
			}
			for id, n := range got {
				if !want[id] {
					t.Errorf("orphan notice for %s (%d), which stands", id, n)
				}
			}
			after, _ := st.ListNotifications(ctx, core.NotificationFilter{Type: core.TypeVoteCast, Limit: 1000})
			found := false
			for _, n := range after {
				blk, _ := store.NotificationBlock(n.Data)
				found = found || blk == vote.BlockNumber.Uint64()
			}
			if !found {
				t.Error("the new chain's vote was not notified")
			}
			if t.Failed() {
				return
			}
			t.Logf("%d notifications orphaned, one notice each", len(want))
		})
	}
}

// TestOracleAcrossReorgAndTakeover runs two indexers of the dev chain on
// one PostgreSQL, through the shared path, as two govgate processes do:
// what is served equals what the governors answer at the indexed block
// after activity, after a reorganisation below it, and after the leader
// dies and the other takes over.
func TestOracleAcrossReorgAndTakeover(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4, Logger: quiet})
	url := storetest.Postgres.NewDatabase(t)
	open := func() *store.Store {
		st := storetest.Open(t, url, storetest.NewBox(t), store.Options{})
		return st
	}
	stA, stB := open(), open()
	daos := c.DAOs()
	cfg := indexer.Config{PollInterval: 100 * time.Millisecond, LockRetry: 200 * time.Millisecond}
	mk := func(st *store.Store) *indexer.Runner {
		r, err := indexer.NewRunner(newGW(t, c), st, pgLocker{st}, devchain.ChainID, 0, daos, cfg, indexer.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ra, rb := mk(stA), mk(stB)
	ctxA, stopA := context.WithCancel(ctx)
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	doneA := make(chan struct{})
	go func() { ra.Run(ctxA); close(doneA) }()
	api := serveAPI(t, daos, httpapi.ProposalRoutes(stB, core.FixedDAOs(daos), quiet))
	gw := newGW(t, c)

	// atHead waits until r leads and every DAO is indexed to the head.
	atHead := func(r *indexer.Runner) {
		t.Helper()
		head, err := c.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := head.Number.Uint64()
		waitFor(t, "the leader at the head", 60*time.Second, func() bool {
			for _, d := range daos {
				s, _ := r.Status(d.Slug)
				if !s.Leader || !s.CaughtUp || s.LastIndexedBlock < want {
					return false
				}
			}
			return true
		})
	}
	// compare checks every served proposal against its governor at the
	// cursor's block.
	compare := func(stage string) {
		t.Helper()
		n := 0
		for _, d := range c.Deployments() {
			cur, _, err := stB.Cursor(ctx, d.Slug)
			if err != nil {
				t.Fatal(err)
			}
			o := oracle{t: t, gw: gw, block: new(big.Int).SetUint64(cur.Block)}
			var list struct{ Items []core.Proposal }
			getJSON(t, api.URL+"/"+d.Slug+"/proposals?limit=500", &list)
			for _, p := range list.Items {
				id, _ := new(big.Int).SetString(p.ProposalID, 10)
				tr := o.truth(d, id, p.VoteStart)
				served := fmt.Sprint(p.State, p.ForVotes, p.AgainstVotes, p.AbstainVotes)
				if truth := fmt.Sprint(tr.state, tr.forV, tr.against, tr.abstain); served != truth {
					t.Errorf("%s: %s proposal %s at block %d: served %s, contract %s", stage, d.Slug, p.ProposalID, cur.Block, served, truth)
				}
				if tr.quorum != nil && (p.Quorum == nil || *p.Quorum != *tr.quorum) {
					t.Errorf("%s: %s proposal %s: quorum %s, contract %s", stage, d.Slug, p.ProposalID, deref(p.Quorum), *tr.quorum)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s: no proposal served", stage)
		}
		t.Logf("%s: %d proposals served = contract", stage, n)
	}

	atHead(ra)
	go rb.Run(ctxB) // follows while ra leads
	var props []*devchain.Proposal
	for _, d := range []*devchain.Deployment{c.OZ, c.Bravo} {
		p, err := c.Propose(ctx, d, 1, "# Oracle "+d.Slug, 21)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.OpenVoting(ctx, p); err != nil {
			t.Fatal(err)
		}
		props = append(props, p)
	}
	fork, err := c.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range props {
		if _, err := c.Vote(ctx, p, 0, devchain.For, "old chain"); err != nil {
			t.Fatal(err)
		}
	}
	atHead(ra)
	compare("activity")

	// A reorganisation replaces the votes with others.
	if err := c.Fork(fork.Hash()); err != nil {
		t.Fatal(err)
	}
	c.Mine(1)
	for _, p := range props {
		if _, err := c.Vote(ctx, p, 2, devchain.Against, "new chain"); err != nil {
			t.Fatal(err)
		}
	}
	c.Mine(3)
	atHead(ra)
	compare("reorg")
	if len(orphans(t, stB)) == 0 {
		t.Error("the reorganisation orphaned no notification")
	}

	// The leader dies; the other takes over and goes on.
	stopA()
	<-doneA
	for i, d := range []*devchain.Deployment{c.OZ, c.Bravo} {
		p, err := c.Propose(ctx, d, 1, "# After the takeover "+d.Slug, 22)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.OpenVoting(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Vote(ctx, p, 3, devchain.Abstain, "after the takeover"); err != nil {
			t.Fatal(err)
		}
		props[i] = p
	}
	c.Mine(2)
	atHead(rb)
	compare("takeover")
	if err := c.MineTo(ctx, max(props[0].VoteEnd, props[1].VoteEnd)+2); err != nil {
		t.Fatal(err)
	}
	atHead(rb)
	compare("closed")
}
