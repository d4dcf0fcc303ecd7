package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/dev/rpcproxy"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
)

// governorCalls are the calls an indexer made to contracts, as its RPC
// proxy counted them: its probes' (the kind, clock, counting mode,
// timelock, grace period and token reads, a code read where a call says
// nothing) and, on DAOs without proposals, a clock read at their token
// events.
func governorCalls(p *rpcproxy.Proxy) int64 {
	c := p.Calls()
	return c["eth_call"] + c["eth_getCode"]
}

// probeCalls sums the indexer's own count of its probes' calls
// (govgate_indexer_rpc_calls_total{part="probe"}).
func probeCalls(t *testing.T, reg *prometheus.Registry) int64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "govgate_indexer_rpc_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "part" && l.GetValue() == "probe" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return int64(n)
}

// TestTakeoverProbesOnlyChangedDAOs runs two indexers of N scale DAOs on
// one PostgreSQL, each behind its own RPC proxy that counts its calls, as
// two govgate processes do. The first leader probes every DAO and keeps
// what it learned; one DAO is then redefined, the leader dies, and the
// other takes over: it probes the redefined DAO only, not the N−1 that
// did not change. Its proxy sees fewer contract calls than the first
// leader made for one DAO; without the kept details it would see N
// probes.
func TestTakeoverProbesOnlyChangedDAOs(t *testing.T) {
	const n = 40
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4, Logger: quiet})
	deps, err := c.DeployScale(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	filed := make([]core.DAO, n)
	for i, d := range deps {
		filed[i] = d.DAO()
	}
	url := storetest.Postgres.NewDatabase(t)
	open := func() *store.Store {
		st := storetest.Open(t, url, storetest.NewBox(t), store.Options{Logger: quiet})
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
	mk := func(st *store.Store) (*indexer.Runner, *rpcproxy.Proxy, *prometheus.Registry) {
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
		m, reg := indexer.NewMetrics(), prometheus.NewRegistry()
		reg.MustRegister(m.Collectors()...)
		r, err := indexer.NewRunner(gw, st, pgLocker{st}, devchain.ChainID, 0, daos, cfg, indexer.Options{Logger: quiet, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		return r, p, reg
	}
	ra, pa, ma := mk(stA)
	rb, pb, mb := mk(stB)
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
	first, probes := governorCalls(pa), probeCalls(t, ma)
	if first == 0 || first%n != 0 || probes == 0 || probes%n != 0 {
		t.Fatalf("the first leader made %d contract calls, %d of them its probes', for %d identical DAOs", first, probes, n)
	}
	perDAO, perProbe := first/n, probes/n
	t.Logf("the first leader probed %d DAOs: %d contract calls (%d a DAO), %d of them probing (%d a DAO)", n, first, perDAO, probes, perProbe)

	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	go rb.Run(ctxB) // follows while ra leads
	c.Mine(2)
	atHead(ra, daos)
	if got := governorCalls(pb); got != 0 {
		t.Fatalf("the follower made %d contract calls", got)
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
	got, gotProbes := governorCalls(pb), probeCalls(t, mb)
	if gotProbes != perProbe || got == 0 || got > perDAO {
		t.Fatalf("the new leader made %d contract calls, %d probing: want one DAO's probe (%d calls) and no more calls than one DAO costs (%d); without kept details, %d",
			got, gotProbes, perProbe, perDAO, n*perProbe)
	}
	t.Logf("the takeover probed 1 DAO of %d: %d contract calls, %d of them probing, instead of %d probing", n, got, gotProbes, n*perProbe)
}
