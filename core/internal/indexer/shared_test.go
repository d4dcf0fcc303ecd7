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
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/devchain"
)

// callLog is a Chain that records the calls it passes on, by method.
type callLog struct {
	Chain
	mu    sync.Mutex
	calls map[string]int
	logs  []ethereum.FilterQuery
}

func (c *callLog) note(m string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[m]++
}

func (c *callLog) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls, c.logs = nil, nil
	return out
}

func (c *callLog) BlockStamp(ctx context.Context, n *big.Int) (uint64, common.Hash, uint64, error) {
	c.note("eth_getBlockByNumber")
	return c.Chain.BlockStamp(ctx, n)
}

func (c *callLog) BlockHeader(ctx context.Context, n *big.Int) (uint64, common.Hash, common.Hash, uint64, error) {
	c.note("eth_getBlockByNumber")
	return c.Chain.BlockHeader(ctx, n)
}

func (c *callLog) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	c.note("eth_getLogs")
	c.mu.Lock()
	c.logs = append(c.logs, q)
	c.mu.Unlock()
	return c.Chain.FilterLogs(ctx, q)
}

func (c *callLog) CallContract(ctx context.Context, msg ethereum.CallMsg, n *big.Int) ([]byte, error) {
	c.note("eth_call")
	return c.Chain.CallContract(ctx, msg, n)
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func scaleDAOs(ds []*devchain.Deployment) []core.DAO {
	out := make([]core.DAO, len(ds))
	for i, d := range ds {
		out[i] = d.DAO()
	}
	return out
}

// TestSharedReadsCostOnePerChain indexes 40 DAOs with their logs split 10
// addresses a request: at the head, a poll that finds one new block costs
// one head read and one eth_getLogs per 10 addresses, whatever the number
// of DAOs, and none per DAO; events of one DAO reach that DAO only.
func TestSharedReadsCostOnePerChain(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	ds, err := c.DeployScale(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	cl := &callLog{Chain: newGateway(t, c.ChainConfig())}
	store := newMemStore()
	r, err := NewRunner(cl, store, NewLocalLocker(), devchain.ChainID, 0, scaleDAOs(ds), Config{}, Options{Logger: quiet, AddressesPerRequest: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c.Mine(1)
		cl.reset()
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		calls := cl.reset()
		// 40 governors and 40 tokens, 10 a request.
		if calls["eth_getLogs"] != 8 || calls["eth_getBlockByNumber"] != 1 || total(calls) != 9 {
			t.Fatalf("a poll at the head: %v, want one head read and 8 eth_getLogs", calls)
		}
	}
	// A proposal on one DAO: its notifications and nobody else's.
	p, err := c.Propose(ctx, ds[7], 0, "# One of forty", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range store.allNotifications() {
		if n.DAO != ds[7].Slug && n.Type == core.TypeProposalCreated {
			t.Errorf("%s notified %s of another DAO's proposal", n.DAO, n.ID)
		}
	}
	if got := store.allProposals(ds[7].Slug)[p.ID.String()]; got.ProposalID == "" {
		t.Fatal("the proposal was not indexed")
	}
	for _, d := range ds {
		cur, ok, _ := store.Cursor(ctx, d.Slug)
		if !ok || !store.cursors[d.Slug].joined {
			t.Fatalf("%s is not joined to the shared cursor: %+v", d.Slug, cur)
		}
	}
}

// TestDAOsChangeAtRunTime adds a DAO with history to a running runner: it
// catches up without pushing its history (unless notify_from_block 0
// says so), joins the shared cursor, and notifies what happens next; once
// removed, nothing of it is indexed.
func TestDAOsChangeAtRunTime(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	if err := c.Lifecycle(ctx, c.OZ, 1, false); err != nil {
		t.Fatal(err)
	}
	zero := uint64(0)
	for _, tc := range []struct {
		name    string
		from    *uint64
		history bool
	}{
		{"history not pushed", nil, false},
		{"notify_from_block 0 pushes it", &zero, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			r, err := NewRunner(newGateway(t, c.ChainConfig()), store, NewLocalLocker(), devchain.ChainID, 0, []core.DAO{c.Bravo.DAO()}, Config{}, Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			oz := c.OZ.DAO()
			oz.NotifyFromBlock = tc.from
			if err := r.SetDAOs([]core.DAO{c.Bravo.DAO(), oz}); err != nil {
				t.Fatal(err)
			}
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(store.allProposals(oz.Slug)); n == 0 {
				t.Fatal("the added DAO's history was not indexed")
			}
			pushed := len(typesOf(store.allNotifications(), oz.Slug))
			if (pushed > 0) != tc.history {
				t.Fatalf("%d notifications of the history", pushed)
			}
			if s, _ := r.Status(oz.Slug); !s.CaughtUp || (tc.from != nil && s.NotifyFromBlock != 0) {
				t.Fatalf("status %+v", s)
			}
			p, err := c.Propose(ctx, c.OZ, 1, "# After it was added: "+tc.name, 99)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if countOf(store.allNotifications(), oz.Slug, created, p.ID.String()) != 1 {
				t.Fatal("the added DAO's new proposal was not notified")
			}
			if err := r.SetDAOs([]core.DAO{c.Bravo.DAO()}); err != nil {
				t.Fatal(err)
			}
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			later, err := c.Propose(ctx, c.OZ, 1, "# After it was removed: "+tc.name, 98)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if countOf(store.allNotifications(), oz.Slug, created, later.ID.String()) != 0 {
				t.Fatal("a removed DAO was notified")
			}
			if _, ok := r.Status(oz.Slug); ok {
				t.Fatal("a removed DAO has a status")
			}
		})
	}
}

// overlapLog is a Chain that counts the eth_calls in flight. Until two
// overlap, a call waits for another (at most a while): DAOs whose parts are
// built one after the other never overlap, and the test sees it without
// depending on how fast the machine is.
type overlapLog struct {
	Chain
	mu       sync.Mutex
	inFlight int
	most     int
	overlap  chan struct{}
	closed   bool
	waited   bool // a call gave up waiting for another
}

func (c *overlapLog) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.overlap, c.closed, c.most = make(chan struct{}), false, 0
}

func (c *overlapLog) CallContract(ctx context.Context, msg ethereum.CallMsg, n *big.Int) ([]byte, error) {
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	gate := c.overlap
	if gate != nil && c.inFlight >= 2 && !c.closed {
		close(gate)
		c.closed = true
	}
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
			c.mu.Lock()
			if !c.closed {
				close(gate)
				c.closed, c.waited = true, true
			}
			c.mu.Unlock()
		}
	}
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	return c.Chain.CallContract(ctx, msg, n)
}

// TestPartsOfARangeAreBuiltTogether: at the head, the DAOs with proposals
// to read in one range read them concurrently, never more than
// dao_concurrency at once.
func TestPartsOfARangeAreBuiltTogether(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	ds, err := c.DeployScale(ctx, 12)
	if err != nil {
		t.Fatal(err)
	}
	cl := &overlapLog{Chain: newGateway(t, c.ChainConfig())}
	store := newMemStore()
	const limit = 3
	r, err := NewRunner(cl, store, NewLocalLocker(), devchain.ChainID, 0, scaleDAOs(ds), Config{DAOConcurrency: limit}, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		if _, err := c.Propose(ctx, d, 0, fmt.Sprintf("# Proposal %d", i), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	cl.arm()
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	cl.mu.Lock()
	most, waited := cl.most, cl.waited
	cl.mu.Unlock()
	if waited || most < 2 {
		t.Fatalf("the DAOs' parts read one at a time (most calls in flight: %d)", most)
	}
	if most > limit {
		t.Fatalf("%d calls in flight, dao_concurrency is %d", most, limit)
	}
	for _, d := range ds {
		if n := len(store.allProposals(d.Slug)); n != 1 {
			t.Fatalf("%s: %d proposals indexed, want 1", d.Slug, n)
		}
	}
}
