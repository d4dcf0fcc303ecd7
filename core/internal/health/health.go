// Package health builds govgate's per-DAO health documents: database
// reachability and latency, the chain head, the indexer's freshness and the
// RPC gateway's circuit breakers, with an overall pass, warn or fail in the
// spirit of draft-inadarei-api-health-check. A Monitor refreshes every
// document in the background from small non-blocking sources and keeps it
// marshalled, so that serving one costs a map lookup and never waits on a
// hanging database or RPC node.
//
// Overall status is the worst of the four checks:
//
//	database  fail: ping failed, no answer within ProbeTimeout, or no result
//	                for 3 intervals; warn: slower than DBSlowAfter, or not
//	                checked yet
//	gateway   fail: every upstream's breaker open (or no upstream);
//	          warn: some breaker open or half-open
//	chainHead warn: head unknown yet, or older than HeadStaleAfter
//	indexer   fail: a fault (the chain refutes the DAO, or the RPC serves
//	                another chain), or stalled (no successful poll, or no
//	                progress while behind, for StalledAfter, counted from
//	                the DAO's addition before its first poll); warn:
//	                syncing (before the first poll covers a DAO: "added,
//	                waiting for the first poll"), lagging (more than
//	                LaggingBlocks or LaggingAfter behind), or no status
//
// HTTPStatus maps pass and warn to 200 and fail to 503.
package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/govgate/govgate/core"
)

// Status is a check's or a document's verdict.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

func worst(a, b Status) Status {
	rank := map[Status]int{Pass: 0, Warn: 1, Fail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Thresholds decide when a check warns or fails.
type Thresholds struct {
	// An indexer the thresholds find lagging warns, stalled fails
	// (lagging_blocks, lagging_after, stalled_after): the indexer's own rule
	// (core.IndexingThresholds.Classify).
	core.IndexingThresholds `yaml:",inline"`
	// HeadStaleAfter: a chain head older than this warns.
	HeadStaleAfter time.Duration `yaml:"head_stale_after"`
	// DBSlowAfter: a database ping slower than this warns.
	DBSlowAfter time.Duration `yaml:"db_slow_after"`
}

// Config configures a Monitor. Zero fields take the defaults.
type Config struct {
	// Interval is how often the documents are rebuilt and the database pinged.
	Interval time.Duration `yaml:"interval"`
	// ProbeTimeout bounds one database ping.
	ProbeTimeout time.Duration `yaml:"probe_timeout"`
	Thresholds   Thresholds    `yaml:"thresholds"`
}

// Defaults of Config.
const (
	DefaultInterval       = time.Second
	DefaultProbeTimeout   = 2 * time.Second
	DefaultHeadStaleAfter = 5 * time.Minute
	DefaultDBSlowAfter    = 250 * time.Millisecond
)

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.Interval, DefaultInterval)
	set(&c.ProbeTimeout, DefaultProbeTimeout)
	c.Thresholds.IndexingThresholds = c.Thresholds.IndexingThresholds.WithDefaults()
	set(&c.Thresholds.HeadStaleAfter, DefaultHeadStaleAfter)
	set(&c.Thresholds.DBSlowAfter, DefaultDBSlowAfter)
	return c
}

// Validate names the first field that cannot work, as the YAML file does.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"health: interval", c.Interval},
		{"health: probe_timeout", c.ProbeTimeout},
		{"health: thresholds.lagging_after", c.Thresholds.LaggingAfter},
		{"health: thresholds.stalled_after", c.Thresholds.StalledAfter},
		{"health: thresholds.head_stale_after", c.Thresholds.HeadStaleAfter},
		{"health: thresholds.db_slow_after", c.Thresholds.DBSlowAfter},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s: must be positive", f.name)
		}
	}
	if c.Thresholds.StalledAfter <= c.Interval {
		return errors.New("health: thresholds.stalled_after: must be longer than interval")
	}
	return nil
}

// Upstream is one RPC upstream as core/internal/chain's Gateway.Status reports it; the
// fields match chain.UpstreamStatus, so health.Upstream(s) converts one.
type Upstream struct {
	URL                 string    `json:"url"`
	State               string    `json:"state"` // closed, open, half-open
	ConsecutiveFailures uint32    `json:"consecutiveFailures"`
	TotalFailures       uint64    `json:"totalFailures"`
	LastError           string    `json:"lastError,omitempty"`
	LastErrorAt         time.Time `json:"lastErrorAt,omitzero"`
	LastSuccessAt       time.Time `json:"lastSuccessAt,omitzero"`
}

// IndexerStatus is one DAO's indexing status as the indexer reports it
// (core.IndexerStatus); the monitor judges it with its own thresholds.
type IndexerStatus = core.IndexerStatus

// Sources are what the monitor reads. Upstreams and Indexer are called on
// every refresh and must not block (Gateway.Status and Runner.Status
// don't); PingDB is called from its own goroutine with a timeout.
type Sources struct {
	PingDB    func(ctx context.Context) error
	Upstreams func(chainID uint64) []Upstream
	Indexer   func(dao string) (IndexerStatus, bool)
}

// Snapshot is one DAO's health document.
type Snapshot struct {
	Status    Status    `json:"status"`
	DAO       string    `json:"dao"`
	ChainID   uint64    `json:"chainId"`
	CheckedAt time.Time `json:"checkedAt"`
	// Output says why the status is not pass, one clause per failing check.
	Output string `json:"output,omitempty"`
	Checks Checks `json:"checks"`
}

// Checks are the four aspects of a Snapshot.
type Checks struct {
	Database  DatabaseCheck  `json:"database"`
	ChainHead ChainHeadCheck `json:"chainHead"`
	Indexer   IndexerCheck   `json:"indexer"`
	Gateway   GatewayCheck   `json:"gateway"`
}

// DatabaseCheck reports the last database ping.
type DatabaseCheck struct {
	Status    Status    `json:"status"`
	LatencyMs float64   `json:"latencyMs"`
	CheckedAt time.Time `json:"checkedAt,omitzero"`
	Output    string    `json:"output,omitempty"`
}

// ChainHeadCheck reports the chain head the indexer last saw.
type ChainHeadCheck struct {
	Status     Status    `json:"status"`
	Number     uint64    `json:"number"`
	Hash       string    `json:"hash,omitempty"`
	Timestamp  time.Time `json:"timestamp,omitzero"`
	AgeSeconds float64   `json:"ageSeconds"`
	Output     string    `json:"output,omitempty"`
}

// IndexerCheck reports how fresh the DAO's index is.
type IndexerCheck struct {
	Status           Status    `json:"status"`
	State            string    `json:"state"`
	LastIndexedBlock uint64    `json:"lastIndexedBlock"`
	ConfirmedHead    uint64    `json:"confirmedHead"`
	LagBlocks        uint64    `json:"lagBlocks"`
	LagSeconds       float64   `json:"lagSeconds"`
	LastIndexedAt    time.Time `json:"lastIndexedAt,omitzero"`
	Leader           bool      `json:"leader"`
	// Backfill is the progress of a catch-up from far behind; absent at the head.
	Backfill *core.Backfill `json:"backfill,omitempty"`
	// NotifyFromBlock is the first block whose changes are pushed to
	// webhooks (0: all); history below it is served, not pushed.
	NotifyFromBlock uint64 `json:"notifyFromBlock"`
	LastError       string `json:"lastError,omitempty"`
	// Fault is what stops the DAO's indexing until the operator acts (a
	// governor without code or of another kind, a voting token not found,
	// an RPC serving another chain); the check fails with it.
	Fault      string          `json:"fault,omitempty"`
	Thresholds ThresholdValues `json:"thresholds"`
	Output     string          `json:"output,omitempty"`
}

// ThresholdValues are the thresholds in force, in JSON-friendly units.
type ThresholdValues struct {
	LaggingBlocks       uint64  `json:"laggingBlocks"`
	LaggingAfterSeconds float64 `json:"laggingAfterSeconds"`
	StalledAfterSeconds float64 `json:"stalledAfterSeconds"`
}

// GatewayCheck reports the circuit breakers of the DAO's chain.
type GatewayCheck struct {
	Status Status `json:"status"`
	Open   int    `json:"open"`
	// RecentFailures adds up the upstreams' consecutive failures.
	RecentFailures uint64     `json:"recentFailures"`
	Upstreams      []Upstream `json:"upstreams"`
	Output         string     `json:"output,omitempty"`
}

// HTTPStatus is the HTTP status to serve s with: 503 for fail, else 200.
func HTTPStatus(s Snapshot) int {
	if s.Status == Fail {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// Options are the optional collaborators of a Monitor.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time // replaces the clock in tests
}

// Monitor keeps every DAO's Snapshot fresh. Snapshot and JSON are safe for
// concurrent use and never block.
type Monitor struct {
	daos    core.DAOCatalog
	src     Sources
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	started time.Time

	docs atomic.Pointer[map[string]*doc]
	db   atomic.Pointer[dbResult]
	// dbSince is when the ping under way started (Unix nanoseconds); 0 when
	// none is.
	dbSince atomic.Int64
}

type doc struct {
	snap Snapshot
	body []byte
}

type dbResult struct {
	err     error
	latency time.Duration
	at      time.Time
}

// NewMonitor returns a monitor of the catalog's DAOs, which may change at
// run time (each refresh takes the list in force). Call Run to keep it fresh.
func NewMonitor(daos core.DAOCatalog, src Sources, cfg Config, opts Options) (*Monitor, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src.PingDB == nil || src.Upstreams == nil || src.Indexer == nil {
		return nil, errors.New("health: PingDB, Upstreams and Indexer sources are required")
	}
	m := &Monitor{daos: daos, src: src, cfg: cfg, log: opts.Logger, now: opts.Now}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.started = m.now()
	m.Refresh()
	return m, nil
}

// Run pings the database and rebuilds the documents every Interval until
// ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	go m.pingLoop(ctx)
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Refresh()
		}
	}
}

// pingLoop pings the database, one ping at a time. A ping that ignores its
// context holds this goroutine, not the monitor: Refresh sees it overdue.
func (m *Monitor) pingLoop(ctx context.Context) {
	for {
		start := m.now()
		m.dbSince.Store(start.UnixNano())
		pctx, cancel := context.WithTimeout(ctx, m.cfg.ProbeTimeout)
		err := m.src.PingDB(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		m.db.Store(&dbResult{err: err, latency: m.now().Sub(start), at: m.now()})
		m.dbSince.Store(0)
		if err != nil {
			m.log.Debug("health: database ping failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.cfg.Interval):
		}
	}
}

// Snapshot returns the latest document of dao. Its slices are shared: do
// not modify them.
func (m *Monitor) Snapshot(dao string) (Snapshot, bool) {
	d, ok := (*m.docs.Load())[dao]
	if !ok {
		return Snapshot{}, false
	}
	return d.snap, true
}

// JSON returns the latest document of dao, marshalled, with the HTTP status
// to serve it with. The bytes are shared: do not modify them.
func (m *Monitor) JSON(dao string) (body []byte, status int, ok bool) {
	d, ok := (*m.docs.Load())[dao]
	if !ok {
		return nil, 0, false
	}
	return d.body, HTTPStatus(d.snap), true
}

// Snapshots returns every DAO's latest document, in configured order.
func (m *Monitor) Snapshots() []Snapshot {
	docs := *m.docs.Load()
	list := m.daos.DAOs()
	out := make([]Snapshot, 0, len(list))
	for _, d := range list {
		if doc, ok := docs[d.Slug]; ok {
			out = append(out, doc.snap)
		}
	}
	return out
}

// Overall returns the worst status over every DAO (pass with none).
func (m *Monitor) Overall() Status {
	s := Pass
	for _, d := range *m.docs.Load() {
		s = worst(s, d.snap.Status)
	}
	return s
}

// Refresh rebuilds every document now from the sources. Run calls it every
// Interval; tests call it directly.
func (m *Monitor) Refresh() {
	now := m.now()
	dbCheck := m.databaseCheck(now)
	upstreams := map[uint64][]Upstream{}
	list := m.daos.DAOs()
	docs := make(map[string]*doc, len(list))
	for _, d := range list {
		ups, ok := upstreams[d.ChainID]
		if !ok {
			ups = m.src.Upstreams(d.ChainID)
			upstreams[d.ChainID] = ups
		}
		st, found := m.src.Indexer(d.Slug)
		s := Snapshot{
			DAO:       d.Slug,
			ChainID:   d.ChainID,
			CheckedAt: now.UTC(),
			Checks: Checks{
				Database:  dbCheck,
				ChainHead: m.headCheck(st, found, now),
				Indexer:   m.indexerCheck(st, found, now),
				Gateway:   gatewayCheck(ups),
			},
		}
		var why []string
		s.Status = Pass
		for _, c := range []struct {
			name   string
			status Status
			output string
		}{
			{"database", s.Checks.Database.Status, s.Checks.Database.Output},
			{"chainHead", s.Checks.ChainHead.Status, s.Checks.ChainHead.Output},
			{"indexer", s.Checks.Indexer.Status, s.Checks.Indexer.Output},
			{"gateway", s.Checks.Gateway.Status, s.Checks.Gateway.Output},
		} {
			s.Status = worst(s.Status, c.status)
			if c.status != Pass {
				why = append(why, c.name+": "+c.output)
			}
		}
		s.Output = strings.Join(why, "; ")
		body, err := json.Marshal(s)
		if err != nil { // cannot happen with these types
			m.log.Error("health: marshal snapshot", "dao", d.Slug, "err", err)
			continue
		}
		docs[d.Slug] = &doc{snap: s, body: body}
	}
	m.docs.Store(&docs)
}

func (m *Monitor) databaseCheck(now time.Time) DatabaseCheck {
	r := m.db.Load()
	c := DatabaseCheck{Status: Pass}
	if r != nil {
		c.LatencyMs = float64(r.latency.Microseconds()) / 1000
		c.CheckedAt = r.at.UTC()
	}
	stale := 3*m.cfg.Interval + m.cfg.ProbeTimeout
	if since := m.dbSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) > m.cfg.ProbeTimeout {
		c.Status, c.Output = Fail, fmt.Sprintf("no answer to a ping for %s", now.Sub(time.Unix(0, since)).Round(time.Millisecond))
		return c
	}
	switch {
	case r == nil && now.Sub(m.started) > stale:
		c.Status, c.Output = Fail, "never answered a ping"
	case r == nil:
		c.Status, c.Output = Warn, "not checked yet"
	case r.err != nil:
		// The driver's message stays in the log: it may name hosts and users.
		c.Status, c.Output = Fail, "ping failed"
		if errors.Is(r.err, context.DeadlineExceeded) {
			c.Output = "ping timed out"
		}
	case now.Sub(r.at) > stale:
		c.Status, c.Output = Fail, fmt.Sprintf("last ping answered %s ago", now.Sub(r.at).Round(time.Second))
	case r.latency > m.cfg.Thresholds.DBSlowAfter:
		c.Status, c.Output = Warn, fmt.Sprintf("ping took %s", r.latency.Round(time.Millisecond))
	}
	return c
}

func (m *Monitor) headCheck(st IndexerStatus, found bool, now time.Time) ChainHeadCheck {
	c := ChainHeadCheck{Status: Pass}
	if !found || st.HeadTime.IsZero() {
		c.Status, c.Output = Warn, "head not seen yet"
		return c
	}
	c.Number, c.Hash, c.Timestamp = st.Head, st.HeadHash, st.HeadTime.UTC()
	c.AgeSeconds = max(0, now.Sub(st.HeadTime).Seconds())
	if age := now.Sub(st.HeadTime); age > m.cfg.Thresholds.HeadStaleAfter {
		c.Status, c.Output = Warn, fmt.Sprintf("head is %s old", age.Round(time.Second))
	}
	return c
}

func (m *Monitor) indexerCheck(st IndexerStatus, found bool, now time.Time) IndexerCheck {
	th := m.cfg.Thresholds
	c := IndexerCheck{
		Thresholds: ThresholdValues{
			LaggingBlocks:       th.LaggingBlocks,
			LaggingAfterSeconds: th.LaggingAfter.Seconds(),
			StalledAfterSeconds: th.StalledAfter.Seconds(),
		},
	}
	if !found {
		c.Status, c.State, c.Output = Warn, core.IndexingSyncing, "no indexer status"
		return c
	}
	c.LastIndexedBlock, c.ConfirmedHead = st.LastIndexedBlock, st.ConfirmedHead
	c.LagBlocks, c.LagSeconds = st.LagBlocks, st.LagSeconds
	c.LastIndexedAt, c.Leader, c.LastError = st.LastIndexedAt, st.Leader, st.LastError
	c.Backfill, c.NotifyFromBlock = st.Backfill, st.NotifyFromBlock
	c.State = m.classify(st, now)
	if st.Fault != "" {
		// The chain refutes the DAO, or the RPC serves another chain:
		// indexing cannot go on until the operator acts.
		c.Status, c.Fault, c.Output = Fail, st.Fault, st.Fault
		return c
	}
	switch c.State {
	case core.IndexingStalled:
		c.Status, c.Output = Fail, "stalled"
		if st.LastError != "" {
			c.Output = "stalled: " + st.LastError
		}
	case core.IndexingLagging:
		c.Status, c.Output = Warn, fmt.Sprintf("lagging %d blocks behind", st.LagBlocks)
	case core.IndexingSyncing:
		c.Status, c.Output = Warn, fmt.Sprintf("syncing, %d blocks to go", st.LagBlocks)
		if st.Waiting != "" {
			c.Output = "syncing: " + st.Waiting
		}
		if b := st.Backfill; b != nil && b.BlocksTotal > 0 {
			c.Output = fmt.Sprintf("backfilling: %d of %d blocks (%.0f%%), %.0f events/s", b.BlocksDone, b.BlocksTotal,
				100*float64(b.BlocksDone)/float64(b.BlocksTotal), b.EventsPerSecond)
			if b.ETASeconds >= 0 {
				c.Output += fmt.Sprintf(", about %s left", (time.Duration(b.ETASeconds) * time.Second).Round(time.Second))
			}
		}
	default:
		c.Status = Pass
	}
	return c
}

// classify is the indexer's state rule with the monitor's thresholds.
func (m *Monitor) classify(st IndexerStatus, now time.Time) string {
	return m.cfg.Thresholds.Classify(st, m.started, now)
}

func gatewayCheck(ups []Upstream) GatewayCheck {
	c := GatewayCheck{Status: Pass, Upstreams: ups}
	if c.Upstreams == nil {
		c.Upstreams = []Upstream{}
	}
	if len(ups) == 0 {
		c.Status, c.Output = Fail, "no upstream configured"
		return c
	}
	halfOpen := 0
	for _, u := range ups {
		c.RecentFailures += uint64(u.ConsecutiveFailures)
		switch u.State {
		case "open":
			c.Open++
		case "half-open":
			halfOpen++
		}
	}
	switch {
	case c.Open == len(ups):
		c.Status, c.Output = Fail, "every upstream's circuit breaker is open"
	case c.Open > 0 || halfOpen > 0:
		c.Status, c.Output = Warn, fmt.Sprintf("%d of %d upstreams open, %d half-open", c.Open, len(ups), halfOpen)
	}
	return c
}
