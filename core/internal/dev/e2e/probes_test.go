package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/dev/rpcproxy"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
)

// probeCalls are the calls a probe makes (the kind, clock, timelock,
// grace period and token reads, and a code read where a call says
// nothing); the indexer makes no other on DAOs without proposals.
func probeCalls(p *rpcproxy.Proxy) int64 {
	c := p.Calls()
	return c["eth_call"] + c["eth_getCode"]
}

// TestTakeoverProbesOnlyChangedDAOs runs two indexers of N scale DAOs on
// one PostgreSQL, each behind its own RPC proxy that counts its calls, as
// two govgate processes do. The first leader probes every DAO and keeps
// what it learned; one DAO is then redefined, the leader dies, and the
// other takes over: it probes the redefined DAO only, not the N−1 that
// did not change (without the kept details it probed them all: N probes).
func TestTakeoverProbesOnlyChangedDAOs(t *testing.T) {
	const n = 40
	ctx := context.Background()
	c, err := devchain.Start(ctx, devchain.Options{Accounts: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deps, err := c.DeployScale(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	filed := make([]core.DAO, n)
	for i, d := range deps {
		filed[i] = d.DAO()
	}
	url, _ := pgURL(t)
	open := func() *store.Store {
		st, err := store.Open(ctx, url, testBox(t), store.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	stA, stB := open(), open()
	if err := stA.SeedDAOs(ctx, filed); err != nil {
		t.Fatal(err)
	}
	daos, _, err := stA.DAOs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := indexer.Config{PollInterval: 100 * time.Millisecond, LockRetry: 200 * time.Millisecond}
	mk := func(st *store.Store) (*indexer.Runner, *rpcproxy.Proxy) {
		p, err := rpcproxy.Start(c.RPCURL(), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		cc := c.ChainConfig()
		cc.RPC = []string{p.URL()}
		gw, err := chain.New(cc, chain.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(gw.Close)
		r, err := indexer.NewRunner(gw, st, pgLocker{st}, devchain.ChainID, 0, daos, cfg, indexer.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return r, p
	}
	ra, pa := mk(stA)
	rb, pb := mk(stB)
	// atHead waits until r leads and every DAO of list is indexed to the head.
	atHead := func(r *indexer.Runner, list []core.DAO) {
		t.Helper()
		head, err := c.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the leader at the head", 60*time.Second, func() bool {
			for _, d := range list {
				s, ok := r.Status(d.Slug)
				if !ok || !s.Leader || !s.CaughtUp || s.LastIndexedBlock < head.Number.Uint64() {
					return false
				}
			}
			return true
		})
	}
	// kept waits until the store has every DAO's details, of its generation.
	kept := func(list []core.DAO) {
		t.Helper()
		waitFor(t, "every DAO's governor details kept", 30*time.Second, func() bool {
			got, err := stB.GovernorDetails(ctx, devchain.ChainID)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range list {
				if gd, ok := got[d.Slug]; !ok || gd.Generation != d.Generation {
					return false
				}
			}
			return true
		})
	}

	ctxA, stopA := context.WithCancel(ctx)
	doneA := make(chan struct{})
	go func() { ra.Run(ctxA); close(doneA) }()
	atHead(ra, daos)
	kept(daos)
	first := probeCalls(pa)
	if first == 0 || first%n != 0 {
		t.Fatalf("the first leader made %d probe calls for %d identical DAOs", first, n)
	}
	perDAO := first / n
	t.Logf("the first leader probed %d DAOs: %d calls, %d a DAO", n, first, perDAO)

	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	go rb.Run(ctxB) // follows while ra leads
	c.Mine(2)
	atHead(ra, daos)
	if got := probeCalls(pb); got != 0 {
		t.Fatalf("the follower made %d probe calls", got)
	}

	// One DAO is redefined (a new start block: a new generation), as a
	// restart with a changed file does; the leader dies and the other
	// takes over with the new list.
	changed := filed[0]
	changed.StartBlock++
	if err := stB.SeedDAOs(ctx, append([]core.DAO{changed}, filed[1:]...)); err != nil {
		t.Fatal(err)
	}
	stopA()
	<-doneA
	now, _, err := stB.DAOs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now[0].Generation == daos[0].Generation || now[1].Generation != daos[1].Generation {
		t.Fatalf("generations after the change: %d → %d, %d → %d", daos[0].Generation, now[0].Generation, daos[1].Generation, now[1].Generation)
	}
	if err := rb.SetDAOs(now); err != nil {
		t.Fatal(err)
	}
	c.Mine(2)
	atHead(rb, now)
	kept(now)
	if got := probeCalls(pb); got != perDAO {
		t.Fatalf("the new leader made %d probe calls, want %d: one probe, of the redefined DAO only (without kept details, %d)", got, perDAO, first)
	}
	t.Logf("the takeover probed 1 DAO of %d: %d calls instead of %d", n, perDAO, first)
}
