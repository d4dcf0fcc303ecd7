package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
)

var quiet = slog.New(slog.DiscardHandler)

func startChain(t testing.TB, opts devchain.Options) *devchain.Chain {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	c, err := devchain.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newGateway(t testing.TB, cfg chain.ChainConfig) *chain.Gateway {
	t.Helper()
	g, err := chain.New(cfg, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// newRunner returns a runner that pushes the DAOs' whole history
// (notify_history): most tests here check what a chain's events yield,
// whenever they happened. TestHistoryIsNotPushed checks the default.
func newRunner(t testing.TB, c Chain, store Store, daos []core.DAO, confirmations uint64, cfg Config) *Runner {
	t.Helper()
	daos = append([]core.DAO(nil), daos...)
	for i := range daos {
		daos[i].NotifyHistory = true
	}
	r, err := NewRunner(c, store, NewLocalLocker(), devchain.ChainID, confirmations, daos, cfg, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// typesOf lists the types of a DAO's governor notifications, in order
// (its token's delegation notifications are left out).
func typesOf(ns []core.Notification, dao string) []string {
	var out []string
	for _, n := range ns {
		if n.DAO == dao && !strings.HasPrefix(n.Type, "delegate.") {
			out = append(out, n.Type)
		}
	}
	return out
}

const (
	created   = core.TypeProposalCreated
	vote      = core.TypeVoteCast
	queued    = core.TypeProposalQueued
	executed  = core.TypeProposalExecuted
	canceled  = core.TypeProposalCanceled
	extended  = core.TypeProposalExtended
	active    = core.TypeProposalActive
	succeeded = core.TypeProposalSucceeded
	defeated  = core.TypeProposalDefeated
	expired   = core.TypeProposalExpired
	ending    = core.TypeProposalEndingSoon
)

// TestLifecycleNotifications runs full proposal lifecycles on both governor
// kinds and checks that exactly the expected notifications, proposals and
// votes come out, once, across failed batches and restarts.
func TestLifecycleNotifications(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	gw := newGateway(t, c.ChainConfig())

	if err := c.Lifecycle(ctx, c.OZ, 1, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Lifecycle(ctx, c.Bravo, 2, false); err != nil {
		t.Fatal(err)
	}
	ozCancel, err := c.Propose(ctx, c.OZ, 2, "withdrawn", 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, ozCancel); err != nil {
		t.Fatal(err)
	}

	// Small ranges make many batches; the third batch fails once, as a
	// database error or a crash between batches would.
	store := newMemStore()
	failed := false
	store.failApply = func(b Batch) error {
		if store.applied == 2 && !failed {
			failed = true
			return errors.New("database went away")
		}
		return nil
	}
	cfg := Config{InitialRange: 3, MaxRange: 3}
	r := newRunner(t, gw, store, c.DAOs(), 0, cfg)
	if err := r.Sync(ctx); err == nil || !failed {
		t.Fatalf("first sync: %v, want the injected failure", err)
	}
	for range 2 {
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A restarted process on the same store adds nothing.
	if err := newRunner(t, gw, store, c.DAOs(), 0, Config{}).Sync(ctx); err != nil {
		t.Fatal(err)
	}

	ns := store.allNotifications()
	// A vote proves voting open (proposal.active), a queue that the
	// proposal passed (proposal.succeeded): no call to the governor needed.
	wantOZ := []string{created, active, vote, vote, extended, vote, vote, succeeded, queued, executed, created, canceled}
	wantBravo := []string{created, active, vote, vote, vote, vote, succeeded, queued, executed}
	if got := typesOf(ns, c.OZ.Slug); strings.Join(got, ",") != strings.Join(wantOZ, ",") {
		t.Errorf("oz notifications\n got %v\nwant %v", got, wantOZ)
	}
	if got := typesOf(ns, c.Bravo.Slug); strings.Join(got, ",") != strings.Join(wantBravo, ",") {
		t.Errorf("bravo notifications\n got %v\nwant %v", got, wantBravo)
	}
	ids := map[string]bool{}
	for _, n := range ns {
		if ids[n.ID] || !strings.HasPrefix(n.ID, "evt_") || len(n.ID) != 36 {
			t.Errorf("notification id %q duplicated or malformed", n.ID)
		}
		ids[n.ID] = true
		if n.OccurredAt.IsZero() || !json.Valid(n.Data) {
			t.Errorf("notification %s: occurredAt %v, data %s", n.ID, n.OccurredAt, n.Data)
		}
	}

	accts := c.Accounts()
	share := new(big.Int).Div(new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(1e18)), big.NewInt(4))

	t.Run("vote data", func(t *testing.T) {
		var withParams map[string]any
		for _, n := range ns {
			if n.Type != vote || n.DAO != c.OZ.Slug {
				continue
			}
			var d map[string]any
			if err := json.Unmarshal(n.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d["params"] != nil {
				withParams = d
			}
		}
		want := map[string]any{
			"chainId": float64(devchain.ChainID), "governor": c.OZ.Governor.Hex(), "voter": accts[1].Hex(),
			"support": float64(2), "supportLabel": "abstain", "weight": share.String(),
			"reason": "abstaining, with params", "params": "0xcafe",
		}
		for k, v := range want {
			if withParams[k] != v {
				t.Errorf("%s = %#v, want %#v", k, withParams[k], v)
			}
		}
		for _, k := range []string{"proposalId", "blockNumber", "blockHash", "txHash", "logIndex"} {
			if _, ok := withParams[k]; !ok {
				t.Errorf("no %s in %v", k, withParams)
			}
		}
		if _, ok := withParams["proposalId"].(string); !ok {
			t.Errorf("proposalId is not a string: %#v", withParams["proposalId"])
		}
	})

	t.Run("created data", func(t *testing.T) {
		for _, n := range ns {
			if n.Type != created || n.DAO != c.Bravo.Slug {
				continue
			}
			var d proposalCreatedData
			if err := json.Unmarshal(n.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.ProposalID != "1" || d.Proposer != accts[1].Hex() || d.Targets[0] != c.Box.Hex() ||
				d.Signatures[0] != "store(uint256)" || d.Values[0] != "0" || !strings.Contains(d.Description, "Dev proposal 2") {
				t.Errorf("bravo created data %+v", d)
			}
		}
	})

	t.Run("proposals", func(t *testing.T) {
		tests := []struct {
			name                  string
			dao                   string
			state                 string
			forV, against, abstan *big.Int
			extended              bool
		}{
			{"oz lifecycle", c.OZ.Slug, core.ProposalExecuted, new(big.Int).Mul(share, big.NewInt(2)), share, share, true},
			{"oz canceled", c.OZ.Slug, core.ProposalCanceled, new(big.Int), new(big.Int), new(big.Int), false},
			{"bravo lifecycle", c.Bravo.Slug, core.ProposalExecuted, new(big.Int).Mul(share, big.NewInt(2)), share, share, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var found bool
				for _, p := range store.allProposals(tt.dao) {
					if p.State != tt.state {
						continue
					}
					found = true
					if p.ForVotes != tt.forV.String() || p.AgainstVotes != tt.against.String() || p.AbstainVotes != tt.abstan.String() {
						t.Errorf("tallies for %s against %s abstain %s", p.ForVotes, p.AgainstVotes, p.AbstainVotes)
					}
					if tt.state == core.ProposalExecuted && p.ETA == 0 {
						t.Error("executed proposal without eta")
					}
					if tt.extended != (p.VoteEnd > p.VoteStart+10) {
						t.Errorf("vote window %d-%d, extended %v", p.VoteStart, p.VoteEnd, tt.extended)
					}
					if len(p.Calldatas) != 1 || !strings.HasPrefix(p.Calldatas[0], "0x") || p.Targets[0] != c.Box.Hex() {
						t.Errorf("content %+v", p)
					}
				}
				if !found {
					t.Fatalf("no %s proposal in %v", tt.state, store.allProposals(tt.dao))
				}
			})
		}
	})

	if n := len(store.allVotes(c.OZ.Slug)); n != 4 {
		t.Errorf("%d oz votes, want 4", n)
	}
	s, ok := r.Status(c.OZ.Slug)
	if !ok || s.State != core.IndexingFresh || s.LagBlocks != 0 || !s.CaughtUp || s.LastIndexedBlock != s.Head {
		t.Errorf("status %+v", s)
	}

	t.Run("metrics", func(t *testing.T) {
		// One runner per DAO here, as with one runner per chain in govgate:
		// the collector reports both.
		m := NewMetrics()
		var runners []*Runner
		for _, d := range c.DAOs() {
			r, err := NewRunner(gw, newMemStore(), NewLocalLocker(), devchain.ChainID, 0, []core.DAO{d}, Config{}, Options{Logger: quiet, Metrics: m})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			runners = append(runners, r)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(m.Collectors()...)
		for _, r := range runners {
			reg.MustRegister(r.Collector())
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			for _, mm := range f.GetMetric() {
				if mm.GetCounter() != nil {
					got[f.GetName()] += mm.GetCounter().GetValue()
				}
			}
		}
		if got["govgate_indexer_events_total"] != float64(len(ns)) {
			byType := map[string]int{}
			for _, n := range ns {
				byType[n.DAO+" "+n.Type]++
			}
			for _, f := range families {
				if f.GetName() == "govgate_indexer_events_total" {
					for _, mm := range f.GetMetric() {
						t.Logf("%v %v (notified %d)", mm.GetLabel(), mm.GetCounter().GetValue(), byType[mm.GetLabel()[0].GetValue()+" "+mm.GetLabel()[1].GetValue()])
					}
				}
			}
			t.Fatalf("events counted %v, want %d", got, len(ns))
		}
	})
}

// TestUnconfirmedBlocksNotNotified forks away a proposal while it is
// younger than the confirmations. The pool may put the transaction in a new
// block, as on a live chain: then it is notified once, from the canonical
// block, and never from the orphaned one.
func TestUnconfirmedBlocksNotNotified(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	gw := newGateway(t, c.ChainConfig())
	store := newMemStore()
	r := newRunner(t, gw, store, c.DAOs(), 3, Config{})

	head, err := c.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Propose(ctx, c.OZ, 1, "orphan", 1)
	if err != nil {
		t.Fatal(err)
	}
	orphan := p.Receipt.BlockHash
	c.Mine(1)
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := typesOf(store.allNotifications(), c.OZ.Slug); len(got) != 0 {
		t.Fatalf("notified an unconfirmed block: %v", got)
	}
	if err := c.Fork(head.Hash()); err != nil {
		t.Fatal(err)
	}
	c.Mine(6)
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Re-included, the proposal is notified once, and its voting opened
	// in the blocks mined since.
	ns := store.allNotifications()
	if got := strings.Join(typesOf(ns, c.OZ.Slug), ","); got != "" && got != created+","+active {
		t.Fatalf("notified %v", got)
	}
	for _, n := range ns {
		var d eventMeta
		json.Unmarshal(n.Data, &d)
		hdr, err := c.Client().HeaderByNumber(ctx, new(big.Int).SetUint64(d.BlockNumber))
		if err != nil || d.BlockHash == orphan.Hex() || hdr.Hash().Hex() != d.BlockHash {
			t.Fatalf("notified from block %s, orphan %s (%v)", d.BlockHash, orphan, err)
		}
	}
	assertCanonical(t, c, store)
	if s, _ := r.Status(c.OZ.Slug); s.LastIndexedBlock+3 != s.Head {
		t.Fatalf("cursor %d, head %d", s.LastIndexedBlock, s.Head)
	}
}

// TestDeepReorgRollsBack indexes votes with no confirmations, forks the
// chain below them and checks that the store then matches the new chain.
func TestDeepReorgRollsBack(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	gw := newGateway(t, c.ChainConfig())
	store := newMemStore()
	r := newRunner(t, gw, store, c.DAOs(), 0, Config{})

	p, err := c.Propose(ctx, c.Bravo, 1, "reorged votes", 1)
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
	for i, voter := range []int{0, 2} {
		if _, err := c.Vote(ctx, p, voter, devchain.For, fmt.Sprint("old chain ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(store.allVotes(c.Bravo.Slug)); n != 2 {
		t.Fatalf("%d votes before the reorg", n)
	}
	before := len(store.allNotifications())

	// The new chain: a different vote, then enough blocks to be longer.
	if err := c.Fork(fork.Hash()); err != nil {
		t.Fatal(err)
	}
	c.Mine(1) // lets the pool settle: it may re-include the old chain's votes
	if _, err := c.Vote(ctx, p, 3, devchain.Against, "new chain"); err != nil {
		t.Fatal(err)
	}
	c.Mine(3)
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if store.rollbacks != 1 {
		t.Fatalf("%d rollbacks, want 1", store.rollbacks)
	}
	assertCanonical(t, c, store)

	// The proposal's tallies are those of the votes on the new chain.
	var forV, against = new(big.Int), new(big.Int)
	for _, v := range store.allVotes(c.Bravo.Slug) {
		w, _ := new(big.Int).SetString(v.Weight, 10)
		if v.Support == devchain.For {
			forV.Add(forV, w)
		} else {
			against.Add(against, w)
		}
	}
	got := store.allProposals(c.Bravo.Slug)[p.ID.String()]
	if got.ForVotes != forV.String() || got.AgainstVotes != against.String() || against.Sign() == 0 {
		t.Errorf("tallies for %s against %s, votes say %s and %s", got.ForVotes, got.AgainstVotes, forV, against)
	}
	// Orphaned notifications stay (documented); the new vote is notified once.
	if n := len(store.allNotifications()); n <= before {
		t.Errorf("%d notifications after the reorg, %d before", n, before)
	}
}

// assertCanonical checks that every stored vote, block ref and cursor is on
// the canonical chain, and that every canonical governor event is stored.
func assertCanonical(t *testing.T, c *devchain.Chain, store *memStore) {
	t.Helper()
	ctx := context.Background()
	cl := c.Client()
	for n, h := range store.blockRefs(devchain.ChainID) {
		hdr, err := cl.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil || !strings.EqualFold(hdr.Hash().Hex(), h) {
			t.Errorf("block ref %d %s is not canonical (%v)", n, h, err)
		}
	}
	for _, d := range []*devchain.Deployment{c.OZ, c.Bravo} {
		cur, ok, _ := store.Cursor(ctx, d.Slug)
		if !ok {
			t.Fatalf("no cursor for %s", d.Slug)
		}
		hdr, err := cl.HeaderByNumber(ctx, new(big.Int).SetUint64(cur.Block))
		if err != nil || !strings.EqualFold(hdr.Hash().Hex(), cur.Hash) {
			t.Errorf("cursor %+v of %s is not canonical", cur, d.Slug)
		}
		logs, err := cl.FilterLogs(ctx, ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(d.StartBlock), ToBlock: new(big.Int).SetUint64(cur.Block),
			Addresses: []common.Address{d.Governor}, Topics: [][]common.Hash{EventTopics()},
		})
		if err != nil {
			t.Fatal(err)
		}
		wantVotes := map[string]string{}
		for _, l := range logs {
			if ev, _ := decodeLog(&l); ev != nil && strings.HasPrefix(ev.name, "VoteCast") {
				wantVotes[l.TxHash.Hex()] = l.BlockHash.Hex()
			}
		}
		gotVotes := map[string]string{}
		for _, v := range store.allVotes(d.Slug) {
			gotVotes[v.TxHash] = v.BlockHash
		}
		if fmt.Sprint(gotVotes) != fmt.Sprint(wantVotes) {
			t.Errorf("%s votes (tx → block)\n got %v\nwant %v", d.Slug, gotVotes, wantVotes)
		}
		for id, p := range store.allProposals(d.Slug) {
			hdr, err := cl.HeaderByNumber(ctx, new(big.Int).SetUint64(p.CreatedBlock))
			if err != nil || hdr == nil {
				t.Errorf("proposal %s created in missing block %d", id, p.CreatedBlock)
			}
		}
	}
}

// limitProxy forwards JSON-RPC to upstream but refuses eth_getLogs over
// more than maxRange blocks, as public providers do.
type limitProxy struct {
	upstream *url.URL
	maxRange uint64
	refused  atomic.Int64
	mu       sync.Mutex
	widest   uint64 // widest range let through
}

func (p *limitProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params []struct {
			FromBlock string `json:"fromBlock"`
			ToBlock   string `json:"toBlock"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) == nil && req.Method == "eth_getLogs" && len(req.Params) == 1 {
		from, err1 := hexutil.DecodeUint64(req.Params[0].FromBlock)
		to, err2 := hexutil.DecodeUint64(req.Params[0].ToBlock)
		if err1 == nil && err2 == nil {
			if to-from+1 > p.maxRange {
				p.refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32005,"message":"query returned more than 10000 results. Try with this block range [%#x, %#x]."}}`,
					req.ID, from, from+p.maxRange-1)
				return
			}
			p.mu.Lock()
			p.widest = max(p.widest, to-from+1)
			p.mu.Unlock()
		}
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	r.ContentLength = int64(len(body))
	httputil.NewSingleHostReverseProxy(p.upstream).ServeHTTP(w, r)
}

// TestRangeShrinksOnProviderLimit indexes through a proxy that refuses
// getLogs ranges wider than 4 blocks.
func TestRangeShrinksOnProviderLimit(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	if err := c.Lifecycle(ctx, c.OZ, 1, false); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(c.RPCURL())
	proxy := &limitProxy{upstream: u, maxRange: 4}
	srv := httptest.NewServer(proxy)
	defer srv.Close()

	cfg := c.ChainConfig()
	cfg.RPC = []string{srv.URL}
	gw := newGateway(t, cfg)
	store := newMemStore()
	r := newRunner(t, gw, store, c.DAOs()[:1], 0, Config{InitialRange: 64, MaxRange: 1024})
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if proxy.refused.Load() == 0 || proxy.widest > 4 {
		t.Fatalf("refused %d, widest range let through %d", proxy.refused.Load(), proxy.widest)
	}
	want := []string{created, active, vote, vote, vote, vote, succeeded, queued, executed}
	if got := typesOf(store.allNotifications(), c.OZ.Slug); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("notifications %v, want %v", got, want)
	}
	// Refusals are answers, not outages: the breaker stayed closed.
	if st := gw.Status()[0]; st.State != chain.StateClosed || st.TotalFailures != 0 {
		t.Fatalf("upstream %+v", st)
	}
}

// TestLeaseTakeover runs two runners on one store: one indexes; when it
// stops, the other takes over within the lock retry.
func TestLeaseTakeover(t *testing.T) {
	c := startChain(t, devchain.Options{Accounts: 4, BlockTime: 100 * time.Millisecond})
	gw := newGateway(t, c.ChainConfig())
	store := newMemStore()
	locker := NewLocalLocker()
	cfg := Config{PollInterval: 50 * time.Millisecond, LockRetry: 100 * time.Millisecond}
	mk := func() *Runner {
		r, err := NewRunner(gw, store, locker, devchain.ChainID, 0, c.DAOs(), cfg, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := mk(), mk()
	// Either runner's rounds: each may have changed what the test waits for.
	rounds := make(chan struct{}, 1)
	a.afterRound = func() { signal(rounds) }
	b.afterRound = a.afterRound
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneA := make(chan struct{})
	go func() { a.Run(ctxA); close(doneA) }()
	waitFor(t, 5*time.Second, "a leads", rounds, func() bool { s, _ := a.Status(c.OZ.Slug); return s.Leader && s.CaughtUp })
	go b.Run(ctxB)
	// b has tried the lock once it has checked the chain; a holds it.
	waitFor(t, 5*time.Second, "b checks", rounds, func() bool { s, _ := b.Status(c.OZ.Slug); return !s.LastCheckedAt.IsZero() })
	if s, _ := b.Status(c.OZ.Slug); s.Leader || s.LastCheckedAt.IsZero() {
		t.Fatalf("b while a leads: %+v", s)
	}
	stopA()
	<-doneA
	stoppedAt := time.Now()
	waitFor(t, 5*time.Second, "b leads", rounds, func() bool { s, _ := b.Status(c.OZ.Slug); return s.Leader })
	t.Logf("took over in %v", time.Since(stoppedAt))
	head, _ := c.Head(context.Background())
	waitFor(t, 5*time.Second, "b indexes", rounds, func() bool {
		cur, _, _ := store.Cursor(context.Background(), c.OZ.Slug)
		return cur.Block >= head.Number.Uint64()
	})
}

// signal notes an event on ch without waiting: one pending note is enough
// for a waiter that rechecks its condition.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// waitFor checks cond after each event on changed until it holds or d has
// passed.
func waitFor(t *testing.T, d time.Duration, what string, changed <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
