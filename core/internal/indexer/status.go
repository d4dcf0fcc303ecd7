package indexer

import (
	"context"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govgate/govgate/core"
)

// DAOStatus is how far one DAO's indexing stands (core.IndexerStatus).
type DAOStatus = core.IndexerStatus

// Causes of DAOStatus.Waiting.
const (
	WaitingAdded = "added, waiting for the first poll"
	WaitingStart = "waiting for the first poll"
)

// Backfill is how far a catch-up has come (core.Backfill).
type Backfill = core.Backfill

// Status returns the status of a DAO of this runner.
func (r *Runner) Status(daoSlug string) (DAOStatus, bool) {
	r.mu.Lock()
	d, ok := r.bySlug[daoSlug]
	if !ok {
		defer r.mu.Unlock()
		return r.pendingStatus(daoSlug)
	}
	defer r.mu.Unlock()
	s := d.status
	s.State = r.classify(s, r.now())
	if d.refusal != nil {
		s.Fault = d.refusal.Error()
	} else if e := r.faultErr; e != nil {
		s.Fault = e.Error()
	}
	return s, true
}

// pendingStatus is the status of a DAO that SetDAOs added and no poll has
// taken on yet: syncing, waiting for it. r.mu is held.
func (r *Runner) pendingStatus(slug string) (DAOStatus, bool) {
	if !r.wantSet {
		return DAOStatus{}, false
	}
	for _, d := range r.want {
		if d.Slug == slug {
			s := r.newState(d).status
			s.Waiting, s.Since, s.Leader = WaitingAdded, r.wantAt, r.isLeaderLocked()
			s.State = r.classify(s, r.now())
			return s, true
		}
	}
	return DAOStatus{}, false
}

// Statuses returns the status of every DAO of this runner, in configured
// order: once SetDAOs has asked for a new list, that list's.
func (r *Runner) Statuses() []DAOStatus {
	r.mu.Lock()
	var slugs []string
	if r.wantSet {
		for _, d := range r.want {
			slugs = append(slugs, d.Slug)
		}
	} else {
		for _, d := range r.daos {
			slugs = append(slugs, d.dao.Slug)
		}
	}
	r.mu.Unlock()
	out := make([]DAOStatus, 0, len(slugs))
	for _, slug := range slugs {
		if s, ok := r.Status(slug); ok {
			out = append(out, s)
		}
	}
	return out
}

// classify derives the state of s at now.
func (r *Runner) classify(s DAOStatus, now time.Time) string {
	return r.cfg.IndexingThresholds.Classify(s, r.started, now)
}

func (r *Runner) setHead(num uint64, hash common.Hash, t, target, targetTime uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.daos {
		d.status.Head = num
		d.status.HeadHash = hash.Hex()
		d.status.HeadTime = time.Unix(int64(t), 0).UTC()
		d.status.ConfirmedHead = target
		d.status.LagBlocks = 0
		if target > d.status.LastIndexedBlock {
			d.status.LagBlocks = target - d.status.LastIndexedBlock
		}
		d.status.LagSeconds = lagSeconds(targetTime, d.lastBlockTime)
	}
}

func lagSeconds(target uint64, last time.Time) float64 {
	if last.IsZero() {
		return 0
	}
	return max(0, float64(int64(target)-last.Unix()))
}

// touchAll records a poll that succeeded (err nil) or failed for the whole
// chain.
func (r *Runner) touchAll(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for _, d := range r.daos {
		if err != nil {
			d.status.LastError, d.status.LastErrorAt = err.Error(), now
			continue
		}
		if d.phase == phaseRefused {
			continue
		}
		d.status.LastCheckedAt, d.status.Waiting = now, ""
		if d.phase == phaseJoined {
			d.caughtUp = true
			d.status.LastError = ""
		}
		d.status.CaughtUp = d.caughtUp
	}
}

// fail records an error that concerns the whole chain and returns it.
func (r *Runner) fail(err error) error {
	r.metrics.failure(r.chainID)
	r.setError(err)
	return err
}

func (r *Runner) setError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faultErr = r.chainErr
	now := r.now()
	for _, d := range r.daos {
		d.status.LastError, d.status.LastErrorAt = err.Error(), now
	}
}

// setDAOError records an error of one DAO.
func (r *Runner) setDAOError(d *daoState, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d.status.LastError, d.status.LastErrorAt = err.Error(), r.now()
}

func (r *Runner) setLeader(v bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.daos {
		d.status.Leader = v
	}
}

// follow refreshes the statuses from the store and the chain while another
// process indexes: one head read and one query of the chain's cursors.
func (r *Runner) follow(ctx context.Context) {
	headNum, headHash, headTime, err := r.chain.BlockStamp(ctx, nil)
	if err != nil {
		r.setError(err)
		return
	}
	target := uint64(0)
	if headNum >= r.confirmations {
		target = headNum - r.confirmations
	}
	curs, err := r.store.Cursors(ctx, r.chainID)
	r.mu.Lock()
	now := r.now()
	for _, d := range r.daos {
		cur, found := curs[d.dao.Slug]
		switch {
		case err != nil:
			d.status.LastError, d.status.LastErrorAt = err.Error(), now
		case found:
			if cur.Block != d.status.LastIndexedBlock || d.status.LastIndexedAt.IsZero() {
				d.status.LastIndexedBlock, d.status.LastIndexedAt = cur.Block, now
				d.lastBlockTime = time.Time{}
			}
			if cur.Block >= target || cur.Joined {
				d.caughtUp = true
			}
			d.status.NotifyFromBlock = cur.NotifyFrom
			d.status.CaughtUp = d.caughtUp
			d.status.LastCheckedAt, d.status.Waiting = now, ""
			d.status.LastError = ""
		default:
			d.status.LastCheckedAt, d.status.Waiting = now, ""
		}
	}
	r.mu.Unlock()
	// A follower does not know its cursor's block time (it would cost a call
	// per DAO and poll): its LagSeconds stays 0.
	r.setHead(headNum, headHash, headTime, target, headTime)
}

// Metrics counts indexing work. One Metrics may serve every runner; register
// its Collectors with the registry that serves /metrics, and each runner's
// Collector for the per-DAO gauges.
type Metrics struct {
	events   *prometheus.CounterVec
	reorgs   *prometheus.CounterVec
	shrinks  *prometheus.CounterVec
	failures *prometheus.CounterVec
	batches  *prometheus.HistogramVec
	calls    *prometheus.CounterVec
	rpc      *prometheus.CounterVec
	daoRPC   *prometheus.CounterVec
	polls    *prometheus.HistogramVec
	pollTime *prometheus.HistogramVec
}

// NewMetrics returns unregistered collectors named govgate_indexer_*.
func NewMetrics() *Metrics {
	return &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_indexer_events_total",
			Help: "Governor events indexed, by DAO and notification type.",
		}, []string{"dao", "type"}),
		reorgs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_indexer_reorgs_total",
			Help: "Chain reorganisations detected and rolled back.",
		}, []string{"chain"}),
		shrinks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_indexer_range_shrinks_total",
			Help: "eth_getLogs ranges refused by a provider and halved.",
		}, []string{"chain"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_indexer_failures_total",
			Help: "Failed indexing polls.",
		}, []string{"chain"}),
		batches: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "govgate_indexer_batch_duration_seconds",
			Help:    "Time to read, decode and store one block range.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}, []string{"chain"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_indexer_contract_calls_total",
			Help: "eth_calls made to governors and timelocks (proposal state, quorum, clock), by method.",
		}, []string{"chain", "method"}),
		rpc: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_indexer_rpc_calls_total",
			Help: "JSON-RPC calls the indexer made, by chain, part (head: the polls' shared reads; reorg: looking back for a reorganisation; catch_up: sweeps of DAOs behind; probe: checking a DAO and reading its governor; settle: proposal states and quorums) and method.",
		}, []string{"chain", "part", "method"}),
		daoRPC: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_indexer_dao_rpc_calls_total",
			Help: "JSON-RPC calls made for one DAO alone (its probe, its proposals' states and quorums); the shared reads of a chain are in govgate_indexer_rpc_calls_total.",
		}, []string{"dao"}),
		polls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "govgate_indexer_rpc_calls_per_poll",
			Help:    "JSON-RPC calls of one poll of a chain (head, reorg check, shared log reads, settles), whatever its number of DAOs.",
			Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 50, 100, 1000},
		}, []string{"chain"}),
		pollTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "govgate_indexer_poll_duration_seconds",
			Help:    "Time of one poll of a chain.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}, []string{"chain"}),
	}
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.events, m.reorgs, m.shrinks, m.failures, m.batches, m.calls, m.rpc, m.daoRPC, m.polls, m.pollTime}
}

func (m *Metrics) polled(chain uint64, calls int64, d time.Duration) {
	if m != nil {
		c := strconv.FormatUint(chain, 10)
		m.polls.WithLabelValues(c).Observe(float64(calls))
		m.pollTime.WithLabelValues(c).Observe(d.Seconds())
	}
}

func (m *Metrics) event(dao, typ string) {
	if m != nil {
		m.events.WithLabelValues(dao, typ).Inc()
	}
}

func (m *Metrics) reorg(chain uint64) {
	if m != nil {
		m.reorgs.WithLabelValues(strconv.FormatUint(chain, 10)).Inc()
	}
}

func (m *Metrics) shrink(chain uint64) {
	if m != nil {
		m.shrinks.WithLabelValues(strconv.FormatUint(chain, 10)).Inc()
	}
}

func (m *Metrics) failure(chain uint64) {
	if m != nil {
		m.failures.WithLabelValues(strconv.FormatUint(chain, 10)).Inc()
	}
}

func (m *Metrics) call(chain uint64, method string) {
	if m != nil {
		m.calls.WithLabelValues(strconv.FormatUint(chain, 10), method).Inc()
	}
}

func (m *Metrics) batch(chain uint64, d time.Duration) {
	if m != nil {
		m.batches.WithLabelValues(strconv.FormatUint(chain, 10)).Observe(d.Seconds())
	}
}

var (
	lagBlocksDesc = prometheus.NewDesc("govgate_indexer_lag_blocks",
		"Blocks between a DAO's cursor and the confirmed head.", []string{"dao", "chain"}, nil)
	lagSecondsDesc = prometheus.NewDesc("govgate_indexer_lag_seconds",
		"Chain time between a DAO's cursor and the confirmed head.", []string{"dao", "chain"}, nil)
	lastBlockDesc = prometheus.NewDesc("govgate_indexer_last_indexed_block",
		"A DAO's cursor.", []string{"dao", "chain"}, nil)
	headDesc = prometheus.NewDesc("govgate_chain_head_block",
		"The chain head seen by the indexer.", []string{"dao", "chain"}, nil)
	stateDesc = prometheus.NewDesc("govgate_indexer_state",
		"1 for a DAO's current indexing state.", []string{"dao", "chain", "state"}, nil)
)

// Collector returns a collector that reports the runner's DAO statuses at
// scrape time. It describes no metrics up front (an unchecked collector),
// so the collectors of several runners register side by side; their series
// differ by DAO and chain.
func (r *Runner) Collector() prometheus.Collector { return runnerCollector{r} }

type runnerCollector struct{ r *Runner }

func (c runnerCollector) Describe(chan<- *prometheus.Desc) {}

func (c runnerCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	chain := strconv.FormatUint(r.chainID, 10)
	for _, s := range r.Statuses() {
		ch <- prometheus.MustNewConstMetric(lagBlocksDesc, prometheus.GaugeValue, float64(s.LagBlocks), s.DAO, chain)
		ch <- prometheus.MustNewConstMetric(lagSecondsDesc, prometheus.GaugeValue, s.LagSeconds, s.DAO, chain)
		ch <- prometheus.MustNewConstMetric(lastBlockDesc, prometheus.GaugeValue, float64(s.LastIndexedBlock), s.DAO, chain)
		ch <- prometheus.MustNewConstMetric(headDesc, prometheus.GaugeValue, float64(s.Head), s.DAO, chain)
		for _, st := range core.IndexingStates() {
			v := 0.0
			if s.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, s.DAO, chain, st)
		}
	}
}

// progressEvery is how often a sweep logs its progress.
const progressEvery = 10 * time.Second
