package health_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/health"
	"github.com/govgate/govgate/core/internal/indexer"
)

var quiet = slog.New(slog.DiscardHandler)

// The health sources mirror core/internal/chain and core/internal/indexer field for field, so
// that wiring is a conversion. This fails to compile if they drift apart.
var (
	_ = health.Upstream(chain.UpstreamStatus{})
	_ = health.IndexerStatus(indexer.DAOStatus{})
)

var dao = core.DAO{Slug: "acme", ChainID: 1, Kind: core.KindOZGovernor}

// fakeClock is a clock stopped at a set time.
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.Unix(0, c.t.Load()) }

func TestRules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fresh := health.IndexerStatus{
		DAO: "acme", ChainID: 1, LastIndexedBlock: 100, LastIndexedAt: t0, LastCheckedAt: t0,
		Head: 100, HeadHash: "0xabc", HeadTime: t0.Add(-5 * time.Second), ConfirmedHead: 100, CaughtUp: true,
	}
	closed := health.Upstream{URL: "https://rpc.example", State: "closed"}
	open := health.Upstream{URL: "https://rpc2.example", State: "open", ConsecutiveFailures: 5}
	tests := []struct {
		name      string
		ping      error
		ups       []health.Upstream
		idx       *health.IndexerStatus
		want      health.Status
		wantState string
	}{
		{name: "all good", ups: []health.Upstream{closed}, idx: &fresh, want: health.Pass, wantState: "fresh"},
		{name: "database down", ping: errors.New("dial tcp: connection refused"), ups: []health.Upstream{closed}, idx: &fresh, want: health.Fail},
		{name: "one upstream open", ups: []health.Upstream{closed, open}, idx: &fresh, want: health.Warn},
		{name: "all upstreams open", ups: []health.Upstream{open}, idx: &fresh, want: health.Fail},
		{name: "half-open", ups: []health.Upstream{{State: "half-open"}}, idx: &fresh, want: health.Warn},
		{name: "no indexer status", ups: []health.Upstream{closed}, want: health.Warn, wantState: "syncing"},
		{name: "lagging", ups: []health.Upstream{closed}, idx: func() *health.IndexerStatus {
			s := fresh
			s.LagBlocks = 50
			return &s
		}(), want: health.Warn, wantState: "lagging"},
		{name: "syncing", ups: []health.Upstream{closed}, idx: func() *health.IndexerStatus {
			s := fresh
			s.LagBlocks, s.CaughtUp = 5000, false
			return &s
		}(), want: health.Warn, wantState: "syncing"},
		{name: "stalled: no poll", ups: []health.Upstream{closed}, idx: func() *health.IndexerStatus {
			s := fresh
			s.LastCheckedAt = t0.Add(-3 * time.Minute)
			return &s
		}(), want: health.Fail, wantState: "stalled"},
		{name: "stalled: no progress while behind", ups: []health.Upstream{closed}, idx: func() *health.IndexerStatus {
			s := fresh
			s.LagBlocks, s.LastIndexedAt = 3, t0.Add(-3*time.Minute)
			return &s
		}(), want: health.Fail, wantState: "stalled"},
		{name: "stale head", ups: []health.Upstream{closed}, idx: func() *health.IndexerStatus {
			s := fresh
			s.HeadTime = t0.Add(-time.Hour)
			return &s
		}(), want: health.Warn, wantState: "fresh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{}
			clock.t.Store(t0.UnixNano())
			rebuilt := newRebuilds()
			m, err := health.NewMonitor(core.FixedDAOs{dao}, health.Sources{
				PingDB:    func(context.Context) error { return tt.ping },
				Upstreams: func(uint64) []health.Upstream { rebuilt.note(); return tt.ups },
				Indexer: func(string) (health.IndexerStatus, bool) {
					if tt.idx == nil {
						return health.IndexerStatus{}, false
					}
					return *tt.idx, true
				},
			}, health.Config{Interval: 10 * time.Millisecond, ProbeTimeout: 50 * time.Millisecond}, health.Options{Logger: quiet, Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go m.Run(ctx)
			waitFor(t, 2*time.Second, "a database result", rebuilt, func() bool {
				s, _ := m.Snapshot("acme")
				return !s.Checks.Database.CheckedAt.IsZero()
			})
			m.Refresh()
			s, ok := m.Snapshot("acme")
			if !ok {
				t.Fatal("no snapshot")
			}
			if s.Status != tt.want {
				t.Fatalf("status %s (%s), want %s", s.Status, s.Output, tt.want)
			}
			if tt.wantState != "" && s.Checks.Indexer.State != tt.wantState {
				t.Fatalf("indexer state %s, want %s", s.Checks.Indexer.State, tt.wantState)
			}
			body, code, _ := m.JSON("acme")
			if code != health.HTTPStatus(s) || (code == 503) != (tt.want == health.Fail) {
				t.Fatalf("http status %d for %s", code, s.Status)
			}
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil || doc["status"] != string(tt.want) {
				t.Fatalf("json %s: %v", body, err)
			}
			checks := doc["checks"].(map[string]any)
			for _, k := range []string{"database", "chainHead", "indexer", "gateway"} {
				if _, ok := checks[k].(map[string]any)["status"]; !ok {
					t.Fatalf("check %s without status in %s", k, body)
				}
			}
		})
	}
}

// TestHangingDatabaseDoesNotBlock pings a database that never answers:
// the document turns fail once the probe timeout has passed on the
// monitor's clock, and rebuilding and reading it stay instant.
func TestHangingDatabaseDoesNotBlock(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	pinging := make(chan struct{})
	var once sync.Once
	clock := &fakeClock{}
	clock.t.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	const probeTimeout = 100 * time.Millisecond
	// Run rebuilds each minute: the test rebuilds after moving the clock, and no
	// rebuild of Run's that read the clock before can land after it.
	m, err := health.NewMonitor(core.FixedDAOs{dao}, health.Sources{
		PingDB: func(context.Context) error { // ignores its context
			once.Do(func() { close(pinging) })
			<-block
			return nil
		},
		Upstreams: func(uint64) []health.Upstream { return []health.Upstream{{State: "closed"}} },
		Indexer:   func(string) (health.IndexerStatus, bool) { return health.IndexerStatus{}, false },
	}, health.Config{Interval: time.Minute, ProbeTimeout: probeTimeout}, health.Options{Logger: quiet, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	select {
	case <-pinging:
	case <-time.After(10 * time.Second):
		t.Fatal("Run never pinged the database")
	}
	database := func() health.DatabaseCheck {
		t.Helper()
		rebuilt := make(chan struct{})
		go func() { defer close(rebuilt); m.Refresh() }()
		select {
		case <-rebuilt:
		case <-time.After(10 * time.Second):
			t.Fatal("Refresh waits for the hanging ping")
		}
		start := time.Now()
		s, _ := m.Snapshot("acme")
		if d := time.Since(start); d > 10*time.Millisecond {
			t.Fatalf("Snapshot took %v", d)
		}
		return s.Checks.Database
	}
	if c := database(); c.Status != health.Warn {
		t.Fatalf("before the probe timeout, database check %+v; want warn, not checked yet", c)
	}
	clock.t.Add(int64(probeTimeout + time.Millisecond))
	if c := database(); c.Status != health.Fail || !strings.Contains(c.Output, "no answer to a ping") {
		t.Fatalf("after the probe timeout, database check %+v; want fail, no answer", c)
	}
}

// switchable serves a handler on a fixed loopback address that can be
// taken down (connections refused) and brought back.
type switchable struct {
	mu      sync.Mutex
	addr    string
	handler http.Handler
	srv     *http.Server
}

func (s *switchable) up(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	addr := s.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	// down closed the listener, and Go listens with SO_REUSEADDR: the
	// connections it leaves in TIME_WAIT do not hold the port.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.srv = &http.Server{Handler: s.handler}
	go s.srv.Serve(l)
}

func (s *switchable) down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv.Close()
}

// TestUpstreamOutage takes the only RPC upstream down: its breaker opens and
// the DAO's health turns fail within seconds, then pass again when the
// upstream comes back.
func TestUpstreamOutage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := devchain.Start(ctx, devchain.Options{Accounts: 4, BlockTime: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	target, _ := url.Parse(c.RPCURL())
	// The proxy drops the path, where hosted providers keep the API key.
	up := &switchable{handler: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.URL.Path, r.Out.URL.RawPath = "/", ""
	}}}
	up.up(t)
	defer up.down()

	cfg := c.ChainConfig()
	cfg.RPC = []string{"http://" + up.addr + "/v3/SECRETKEY"}
	cfg.RequestTimeout = time.Second
	cfg.Breaker = chain.BreakerConfig{FailuresToOpen: 3, OpenTimeout: 500 * time.Millisecond, HalfOpenMaxRequests: 1}
	gw, err := chain.New(cfg, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	r, err := indexer.NewRunner(gw, newStore(), indexer.NewLocalLocker(), cfg.ID, cfg.Confirmations, c.DAOs(),
		indexer.Config{PollInterval: 100 * time.Millisecond}, indexer.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	go r.Run(ctx)

	// The wiring core/cmd/govgate does: conversions, no adapters.
	rebuilt := newRebuilds()
	m, err := health.NewMonitor(core.FixedDAOs(c.DAOs()), health.Sources{
		PingDB: func(context.Context) error { return nil },
		Upstreams: func(uint64) []health.Upstream {
			rebuilt.note()
			var out []health.Upstream
			for _, s := range gw.Status() {
				out = append(out, health.Upstream(s))
			}
			return out
		},
		Indexer: func(dao string) (health.IndexerStatus, bool) {
			s, ok := r.Status(dao)
			return health.IndexerStatus(s), ok
		},
	}, health.Config{Interval: 100 * time.Millisecond}, health.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	go m.Run(ctx)
	slug := c.OZ.Slug
	status := func() health.Snapshot { s, _ := m.Snapshot(slug); return s }

	waitFor(t, 10*time.Second, "pass", rebuilt, func() bool { return status().Status == health.Pass })

	up.down()
	downAt := time.Now()
	waitFor(t, 10*time.Second, "fail", rebuilt, func() bool { return status().Status == health.Fail })
	t.Logf("fail %v after the upstream went down: %s", time.Since(downAt).Round(time.Millisecond), status().Output)
	s := status()
	if s.Checks.Gateway.Upstreams[0].State != chain.StateOpen || s.Checks.Gateway.Status != health.Fail {
		t.Fatalf("gateway check %+v", s.Checks.Gateway)
	}
	body, code, _ := m.JSON(slug)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("http status %d", code)
	}
	if u := s.Checks.Gateway.Upstreams[0]; u.URL != "http://"+up.addr || containsSecret(body) {
		t.Fatalf("secret in the health document: url %s, body %s", u.URL, body)
	}

	up.up(t)
	upAt := time.Now()
	waitFor(t, 10*time.Second, "pass again", rebuilt, func() bool { return status().Status == health.Pass })
	t.Logf("pass %v after the upstream came back", time.Since(upAt).Round(time.Millisecond))
	if st := gw.Status()[0]; st.State != chain.StateClosed || st.TotalFailures == 0 {
		t.Fatalf("upstream %+v", st)
	}
}

func containsSecret(b []byte) bool {
	return bytes.Contains(b, []byte("SECRETKEY")) || bytes.Contains(b, []byte("/v3/"))
}

// cursorStore is the least of an indexer.Store that lets a runner index
// governors without events: cursors, the shared cursor and block refs. The
// full reference store is core/internal/indexer's memStore.
type cursorStore struct {
	mu      sync.Mutex
	cursors map[string]core.DAOCursor
	shared  *indexer.Cursor
	blocks  map[uint64]string
}

func newStore() *cursorStore {
	return &cursorStore{cursors: map[string]core.DAOCursor{}, blocks: map[uint64]string{}}
}

func (s *cursorStore) SharedCursor(context.Context, uint64) (indexer.Cursor, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shared == nil {
		return indexer.Cursor{}, false, nil
	}
	return *s.shared, true, nil
}

func (s *cursorStore) Cursors(context.Context, uint64) (map[string]core.DAOCursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]core.DAOCursor{}
	for k, c := range s.cursors {
		if c.Joined && s.shared != nil {
			c.Block, c.Hash = s.shared.Block, s.shared.Hash
		}
		out[k] = c
	}
	return out, nil
}

func (s *cursorStore) OpenDAOs(context.Context, uint64) ([]string, error) { return nil, nil }

// The DAOs here have no generation: nothing of this is asked for.
func (s *cursorStore) GovernorDetails(context.Context, uint64) (map[string]core.GovernorDetails, error) {
	return nil, nil
}

func (s *cursorStore) SaveGovernorDetails(context.Context, []core.GovernorDetails) error { return nil }

func (s *cursorStore) GovernorEvent(context.Context, string) (uint64, string, bool, error) {
	return 0, "", false, nil
}

func (s *cursorStore) SettleLegacyCursor(context.Context, string, int64, bool, *indexer.Cursor) (bool, error) {
	return false, nil
}

func (s *cursorStore) RecentBlocks(_ context.Context, _ uint64, limit int) ([]indexer.BlockRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []indexer.BlockRef
	for n, h := range s.blocks {
		out = append(out, indexer.BlockRef{Number: n, Hash: h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	return out[:min(limit, len(out))], nil
}

func (s *cursorStore) Proposal(context.Context, string, string) (indexer.Proposal, bool, error) {
	return indexer.Proposal{}, false, nil
}

func (s *cursorStore) OpenProposals(context.Context, string) ([]indexer.Proposal, error) {
	return nil, nil
}

func (s *cursorStore) ApplyBatches(_ context.Context, b core.ChainBatch) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range b.Blocks {
		s.blocks[r.Number] = r.Hash
	}
	for n := range s.blocks {
		if n < b.PruneBelow {
			delete(s.blocks, n)
		}
	}
	for _, d := range b.DAOs {
		if !d.Joined {
			s.cursors[d.DAO] = core.DAOCursor{Cursor: d.Cursor}
		}
	}
	for _, slug := range b.Join {
		c := s.cursors[slug]
		c.Joined = true
		s.cursors[slug] = c
	}
	if b.Shared != nil {
		next := b.Shared.Next
		s.shared = &next
	}
	return nil, nil
}

func (s *cursorStore) Rollback(_ context.Context, _ uint64, to indexer.BlockRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.blocks {
		if n > to.Number {
			delete(s.blocks, n)
		}
	}
	for k, c := range s.cursors {
		if !c.Joined && c.Block > to.Number {
			c.Block, c.Hash = to.Number, to.Hash
			s.cursors[k] = c
		}
	}
	if s.shared != nil && s.shared.Block > to.Number {
		s.shared = &indexer.Cursor{Block: to.Number, Hash: to.Hash}
	}
	return nil
}

// rebuilds signals a monitor's rebuilds of its documents: a test's
// Upstreams source notes each call. The monitor asks for the upstreams in
// every rebuild, one rebuild at a time, so each call says that the rebuild
// before it has stored its documents.
type rebuilds chan struct{}

func newRebuilds() rebuilds { return make(rebuilds, 1) }

func (r rebuilds) note() {
	select {
	case r <- struct{}{}:
	default:
	}
}

// waitFor checks cond after each rebuild, since only a rebuild changes a
// document, until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, what string, rebuilt rebuilds, cond func() bool) {
	t.Helper()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-rebuilt:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// BenchmarkSnapshotJSON is the cost of serving one health document.
func BenchmarkSnapshotJSON(b *testing.B) {
	m, err := health.NewMonitor(core.FixedDAOs{dao}, health.Sources{
		PingDB:    func(context.Context) error { return nil },
		Upstreams: func(uint64) []health.Upstream { return []health.Upstream{{State: "closed"}} },
		Indexer:   func(string) (health.IndexerStatus, bool) { return health.IndexerStatus{}, false },
	}, health.Config{}, health.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, ok := m.JSON("acme"); !ok {
				b.Fatal("no document")
			}
		}
	})
}

// TestAddedDAOSyncsUntilThePoll adds DAOs at run time, as govgate does
// when the admin API stores one (the runner first, then the catalog, then
// a refresh): from that moment the DAO's health is syncing, saying why,
// and not stalled however long the process has run; the first poll that
// covers it ends the wait, and a DAO no poll covers for stalled_after is
// stalled, counted from its addition.
func TestAddedDAOSyncsUntilThePoll(t *testing.T) {
	ctx := context.Background()
	c, err := devchain.Start(ctx, devchain.Options{Accounts: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gw, err := chain.New(c.ChainConfig(), chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	var (
		mu    sync.Mutex
		clock = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	daos := c.DAOs()
	r, err := indexer.NewRunner(gw, newStore(), indexer.NewLocalLocker(), devchain.ChainID, 0, daos[:1], indexer.Config{}, indexer.Options{Logger: quiet, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	catalog := core.NewLiveDAOs(daos[:1])
	m, err := health.NewMonitor(catalog, health.Sources{
		PingDB:    func(context.Context) error { return nil },
		Upstreams: func(uint64) []health.Upstream { return []health.Upstream{{URL: "rpc", State: "closed"}} },
		Indexer: func(dao string) (health.IndexerStatus, bool) {
			s, ok := r.Status(dao)
			return s, ok
		},
	}, health.Config{Thresholds: health.Thresholds{IndexingThresholds: core.IndexingThresholds{StalledAfter: 2 * time.Minute}}}, health.Options{Logger: quiet, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	indexerOf := func(slug string) health.IndexerCheck {
		t.Helper()
		m.Refresh()
		s, ok := m.Snapshot(slug)
		if !ok {
			t.Fatalf("no health document for %s", slug)
		}
		return s.Checks.Indexer
	}
	first := daos[0].Slug
	if got := indexerOf(first); got.State != core.IndexingSyncing || got.Output != "syncing: waiting for the first poll" {
		t.Fatalf("at start: %s %q", got.State, got.Output)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := indexerOf(first); got.Status != health.Pass {
		t.Fatalf("after the first poll: %s %s %q", got.Status, got.State, got.Output)
	}

	// Ten minutes later, a DAO is added: syncing from then on, not stalled.
	advance(10 * time.Minute)
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	added := daos[1].Slug
	if err := r.SetDAOs(daos[:2]); err != nil {
		t.Fatal(err)
	}
	catalog.Replace(daos[:2])
	for _, wait := range []time.Duration{0, 90 * time.Second} {
		advance(wait)
		if got := indexerOf(added); got.Status != health.Warn || got.State != core.IndexingSyncing || got.Output != "syncing: added, waiting for the first poll" {
			t.Fatalf("%v after the addition: %s %s %q", wait, got.Status, got.State, got.Output)
		}
	}
	st, ok := r.Status(added)
	if !ok || st.Waiting != indexer.WaitingAdded || !st.Since.Equal(now().Add(-90*time.Second)) || st.State != core.IndexingSyncing {
		t.Fatalf("the runner's status of the added DAO: %+v", st)
	}
	if list := r.Statuses(); len(list) != 2 || list[1].DAO != added {
		t.Fatalf("the runner lists %+v", list)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := indexerOf(added); got.Status != health.Pass || got.Output != "" {
		t.Fatalf("after the poll that covers it: %s %s %q", got.Status, got.State, got.Output)
	}

	// A DAO no poll covers is stalled stalled_after from its addition.
	third := daos[2].Slug
	if err := r.SetDAOs(daos[:3]); err != nil {
		t.Fatal(err)
	}
	catalog.Replace(daos[:3])
	advance(time.Minute)
	if got := indexerOf(third); got.State != core.IndexingSyncing {
		t.Fatalf("a minute after the addition: %s %q", got.State, got.Output)
	}
	advance(2 * time.Minute)
	if got := indexerOf(third); got.Status != health.Fail || got.State != core.IndexingStalled {
		t.Fatalf("three minutes after the addition, no poll: %s %s %q", got.Status, got.State, got.Output)
	}
}
