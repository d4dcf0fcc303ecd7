package indexer

import (
	"context"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	gethtypes "github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/calldata"
	"github.com/govgate/govgate/core/internal/dev/devchain"
)

// BenchmarkIndex10kVotes indexes 10,000 VoteCast events of one OpenZeppelin
// proposal on the devchain, through the chain gateway into the in-memory
// reference store, and compares that with a bare eth_getLogs of the same
// range in the same run, with the calldata decoder wired in as govgate
// wires it (proposal.created carries decoded actions):
//
//	index_events_per_s    events indexed per second (decode, tallies,
//	                      notifications, store)
//	getlogs_events_per_s  events fetched per second by a bare eth_getLogs
//	index_ratio           index_events_per_s / getlogs_events_per_s
//
// The 10,000 voters are distinct accounts casting signed ballots
// (castVoteBySig) relayed 200 per transaction by the BatchVoter contract, so
// every vote weighs 0: the indexer's work per event does not depend on it.
// Setup (signing and mining the ballots, about 10 s here) runs once per
// test binary and is not timed.
func BenchmarkIndex10kVotes(b *testing.B) {
	const votes = 10_000
	ctx := context.Background()
	f := tenKVotes(b, votes)
	c, dao := f.chain, f.chain.OZ.DAO()
	gw := newGateway(b, c.ChainConfig())
	raw, err := ethclient.Dial(c.RPCURL())
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	q := ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(dao.StartBlock), ToBlock: f.head,
		Addresses: []common.Address{c.OZ.Governor}, Topics: [][]common.Hash{EventTopics()},
	}

	dec, err := calldata.New(calldata.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var rawTime, indexTime time.Duration
	var fetched, indexed int
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		logs, err := raw.FilterLogs(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		rawTime += time.Since(start)
		fetched += len(logs)

		store := newMemStore()
		// As govgate wires it: proposal.created carries decoded actions.
		dao := dao
		dao.NotifyHistory = true
		r, err := NewRunner(gw, store, NewLocalLocker(), devchain.ChainID, 0, []core.DAO{dao}, Config{}, Options{Logger: quiet, Actions: dec})
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if err := r.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		indexTime += time.Since(start)
		ns := store.allNotifications()
		if got := len(typesOf(ns, dao.Slug)); got < votes+1 {
			b.Fatalf("%d notifications, want at least %d", got, votes+1)
		}
		indexed += len(store.allVotes(dao.Slug)) + 1
	}
	b.StopTimer()
	idx := float64(indexed) / indexTime.Seconds()
	get := float64(fetched) / rawTime.Seconds()
	b.ReportMetric(idx, "index_events_per_s")
	b.ReportMetric(get, "getlogs_events_per_s")
	b.ReportMetric(idx/get, "index_ratio")
}

// voteFixture is a devchain with many votes, built once per test binary
// (the benchmark function runs more than once) and never closed.
type voteFixture struct {
	chain *devchain.Chain
	head  *big.Int
	err   error
}

var (
	voteFixtureOnce sync.Once
	voteFixtureVal  voteFixture
)

func tenKVotes(b *testing.B, votes int) voteFixture {
	voteFixtureOnce.Do(func() {
		ctx := context.Background()
		f := &voteFixtureVal
		start := time.Now()
		f.chain, f.err = devchain.Start(ctx, devchain.Options{Accounts: 4, BlockGasLimit: 200_000_000, Logger: quiet})
		if f.err != nil {
			return
		}
		p, err := f.chain.Propose(ctx, f.chain.OZ, 1, "benchmark: many voters", 1)
		if err == nil {
			err = f.chain.OpenVoting(ctx, p)
		}
		if err == nil {
			_, err = f.chain.CastVotesBySig(ctx, p, 0, votes, func(i int) uint8 { return uint8(i % 3) })
		}
		if err == nil {
			var h *gethtypes.Header
			h, err = f.chain.Head(ctx)
			if h != nil {
				f.head = h.Number
			}
		}
		f.err = err
		b.Logf("setup: %d signed votes mined in %v", votes, time.Since(start))
	})
	if voteFixtureVal.err != nil {
		b.Fatal(voteFixtureVal.err)
	}
	return voteFixtureVal
}

// BenchmarkStateCalls100Proposals measures what keeping proposal states true
// to the governor costs in eth_calls. On dev-oz4 (an OpenZeppelin 4.9
// governor, 150-block voting period), 100 proposals are created in 100
// blocks, so that all 100 are open together, and 1,000 more blocks follow,
// during which each proposal opens, gets its quorum read and closes. The
// indexer polls after every block (1,100 polls):
//
//	state_rpc_calls_per_1k_blocks  eth_calls the indexer made (state,
//	                               quorum, deadline), per 1,000 polled blocks
//	naive_state_calls_per_1k_blocks what asking state() of every open
//	                               proposal at every poll would have cost
//
// Setup (deploying, proposing) is not timed; the figure is a count, not a
// time, so it is the same on any machine.
func BenchmarkStateCalls100Proposals(b *testing.B) {
	const proposals, blocks = 100, 1000
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		c := startChain(b, devchain.Options{Accounts: 4})
		gw := newGateway(b, c.ChainConfig())
		d := c.OZ4
		store := newMemStore()
		r := newRunner(b, gw, store, []core.DAO{d.DAO()}, 0, Config{})
		if err := r.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before, naive, polls := r.ContractCalls(), 0, 0
		poll := func() {
			if err := r.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			open, _ := store.OpenProposals(ctx, d.Slug)
			naive += len(open)
			polls++
		}
		var props []*devchain.Proposal
		for i := range proposals {
			p, err := c.Propose(ctx, d, i%4, fmt.Sprintf("# Bench proposal %d", i), uint64(i))
			if err != nil {
				b.Fatal(err)
			}
			props = append(props, p)
			poll()
		}
		for range blocks {
			c.Mine(1)
			poll()
		}
		calls := r.ContractCalls() - before
		b.StopTimer()
		for _, p := range props {
			if got, _, _ := store.Proposal(ctx, d.Slug, p.ID.String()); got.State != core.ProposalDefeated {
				b.Fatalf("proposal %s: %s after voting, want defeated (no votes)", p.ID, got.State)
			}
		}
		b.ReportMetric(float64(calls)*1000/float64(polls), "state_rpc_calls_per_1k_blocks")
		b.ReportMetric(float64(naive)*1000/float64(polls), "naive_state_calls_per_1k_blocks")
		c.Close()
	}
}
