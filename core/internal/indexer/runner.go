package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// ActionDecoder decodes a proposal's calls (core/internal/calldata's
// Decoder): proposal.created carries them decoded. It must be safe for
// concurrent use: sweeps and head polls build batches at once.
type ActionDecoder interface {
	Actions(p core.Proposal) []core.Action
}

// Options are the optional collaborators of a Runner.
type Options struct {
	Logger  *slog.Logger
	Metrics *Metrics
	// Actions decodes the calls of each new proposal for proposal.created;
	// nil leaves "actions" out of it.
	Actions ActionDecoder
	// Now replaces the clock in tests.
	Now func() time.Time
	// AddressesPerRequest splits an eth_getLogs over more contracts than
	// this (chain.ChainConfig.MaxAddressesPerRequest); 0: 1000.
	AddressesPerRequest int
}

// Runner indexes the DAOs of one chain.
type Runner struct {
	chain         Chain // counts every call (countingChain)
	store         Store
	locker        Locker
	chainID       uint64
	confirmations uint64
	cfg           Config
	log           *slog.Logger
	metrics       *Metrics
	actions       ActionDecoder
	now           func() time.Time
	started       time.Time
	addrLimit     int

	// calls counts eth_calls to governors, for the benchmark.
	calls atomic.Int64

	// mu guards daos, bySlug, want, leader and every daoState's status,
	// phase and cursor fields.
	mu      sync.Mutex
	daos    []*daoState
	bySlug  map[string]*daoState
	want    []core.DAO // a DAO list SetDAOs asked for, applied by the next poll
	wantSet bool
	wantAt  time.Time     // when SetDAOs asked
	wake    chan struct{} // SetDAOs wakes the poll loop
	// leaving are joined DAOs refused since: the next step of the shared
	// cursor gives them their own cursor back, so that their index stays
	// exact (what is below it was indexed).
	leaving []string
	// faultErr stops every DAO of the chain: the RPC serves another chain.
	faultErr error

	// The rest belongs to the goroutine that polls (Sync, Run).
	checked      bool  // the upstream's chain id was verified
	chainErr     error // the upstream serves another chain: every DAO fails (faultErr)
	sharedLoaded bool  // cursors and the shared cursor were read since leading
	failures     int   // failed polls in a row
	progress     progressLog
	sweeps       sweeps // catch-ups under way
	// afterRound, when set (by tests, before Run), runs after each round
	// of Run: a poll while leading, a lease try and a read of the store's
	// cursors while not. Leadership, checks and cursors change in rounds
	// (a sweep's end starts one): a test waits for them round by round
	// instead of polling.
	afterRound func()

	// headMu is held while the shared cursor moves; a sweep takes it to
	// join the shared cursor. It guards shared and ready.
	headMu sync.Mutex
	shared *Cursor     // the chain's shared cursor; nil before the first
	ready  []*daoState // at the shared cursor, joining at the next advance
}

// phase is where a DAO stands in the indexing of its chain.
type phase int

const (
	phaseNew      phase = iota // cursor not read yet (or reset)
	phaseBehind                // behind the shared cursor, waiting for a sweep
	phaseSweeping              // in a sweep
	phaseReady                 // at the shared cursor, joins at the next advance
	phaseJoined                // follows the shared cursor
	phaseRefused               // failed its probe: not indexed
)

// daoState is one DAO's indexing state. The builder reads dao, governor,
// governorHex and info; the status fields, phase and cursor are guarded by
// Runner.mu.
type daoState struct {
	dao         core.DAO
	governor    common.Address
	governorHex string
	rangeSize   uint64

	status        DAOStatus
	caughtUp      bool
	lastBlockTime time.Time // time of the last indexed block, if known

	info       *governorInfo // read once from the governor, or from the store (recallDetails); nil until then
	infoStored bool          // info went to the store with a part (withGovernor)
	// detailsKept: the store holds info for this generation
	// (Store.SaveGovernorDetails), for the next leader.
	detailsKept atomic.Bool
	clockState  // the governor's clock as read so far (clock.go)

	phase      phase
	cursor     Cursor // the DAO's own cursor while not joined
	hasCursor  bool
	notifyFrom uint64
	// open: the DAO may have proposals whose state the clock can change,
	// so each poll at the head settles it even without events.
	open    bool
	refusal *ProbeError
	// removed is set when SetDAOs drops the DAO: a sweep leaves it out.
	removed atomic.Bool
	// tally of what was indexed since the last progress report
	events, notes uint64
}

// NewRunner returns a runner for the DAOs of one chain. Every DAO must be on
// chainID. confirmations is the chain's (core/internal/chain ChainConfig.Confirmations).
func NewRunner(c Chain, store Store, locker Locker, chainID, confirmations uint64, daos []core.DAO, cfg Config, opts Options) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c == nil || store == nil || locker == nil {
		return nil, errors.New("indexer: chain, store and locker are required")
	}
	r := &Runner{
		store: store, locker: locker, chainID: chainID, confirmations: confirmations,
		cfg: cfg, log: opts.Logger, metrics: opts.Metrics, actions: opts.Actions, now: opts.Now, addrLimit: opts.AddressesPerRequest,
		bySlug: map[string]*daoState{}, wake: make(chan struct{}, 1),
	}
	r.chain = countingChain{Chain: c, m: opts.Metrics, chainID: chainID}
	if r.addrLimit <= 0 {
		r.addrLimit = 1000
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("chain", chainID)
	if r.now == nil {
		r.now = time.Now
	}
	r.started = r.now()
	if err := checkDAOs(chainID, daos); err != nil {
		return nil, err
	}
	for _, d := range daos {
		s := r.newState(d)
		s.status.Waiting, s.status.Since = WaitingStart, r.started
		r.daos = append(r.daos, s)
		r.bySlug[d.Slug] = s
	}
	return r, nil
}

func checkDAOs(chainID uint64, daos []core.DAO) error {
	seen := map[string]bool{}
	for _, d := range daos {
		if d.ChainID != chainID {
			return fmt.Errorf("indexer: dao %q is on chain %d, not %d", d.Slug, d.ChainID, chainID)
		}
		if !common.IsHexAddress(d.Governor) {
			return fmt.Errorf("indexer: dao %q: governor %q is not an address", d.Slug, d.Governor)
		}
		if seen[d.Slug] {
			return fmt.Errorf("indexer: dao %q listed twice", d.Slug)
		}
		seen[d.Slug] = true
	}
	return nil
}

func (r *Runner) newState(d core.DAO) *daoState {
	gov := common.HexToAddress(d.Governor)
	return &daoState{
		dao: d, governor: gov, governorHex: gov.Hex(), rangeSize: r.cfg.InitialRange, open: true,
		// Until the store says otherwise, everything below the start block is done.
		status: DAOStatus{DAO: d.Slug, ChainID: r.chainID, State: core.IndexingSyncing, LastIndexedBlock: max(d.StartBlock, 1) - 1, Leader: false},
	}
}

// SetDAOs replaces the runner's DAOs, at run time: the next poll starts
// indexing the new ones (a sweep catches them up, history not pushed),
// stops the removed ones, and indexes anew a DAO whose generation changed.
// A name or notify change applies to the DAO as it stands.
func (r *Runner) SetDAOs(daos []core.DAO) error {
	if err := checkDAOs(r.chainID, daos); err != nil {
		return err
	}
	r.mu.Lock()
	r.want, r.wantSet, r.wantAt = append([]core.DAO(nil), daos...), true, r.now()
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// applyWanted makes the list SetDAOs asked for the runner's. Removed DAOs
// leave their sweeps (which see removed) and the shared group.
func (r *Runner) applyWanted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.wantSet {
		return
	}
	want := r.want
	r.want, r.wantSet = nil, false
	keep := map[string]bool{}
	var list []*daoState
	bySlug := map[string]*daoState{}
	for _, d := range want {
		old, ok := r.bySlug[d.Slug]
		switch {
		case ok && !old.dao.IndexingChanged(d) && (old.dao.Generation == d.Generation || old.dao.Generation == 0):
			// The same definition (a DAO checked before it was stored
			// takes its generation now): what was read of it stays.
			if notifyChanged(old.dao, d) && old.hasCursor {
				// The store moved the stored value; the next read of the
				// cursor takes it. Until then, follow the new setting.
				if nf, ok := configuredNotifyFrom(d); ok {
					old.notifyFrom = nf
				}
			}
			old.dao = d
			keep[d.Slug] = true
			list = append(list, old)
			bySlug[d.Slug] = old
		default:
			s := r.newState(d)
			s.status.Leader = r.isLeaderLocked()
			// Health says why it is syncing until a poll covers it.
			s.status.Waiting, s.status.Since = WaitingAdded, r.wantAt
			list = append(list, s)
			bySlug[d.Slug] = s
			r.log.Info("dao added", "dao", d.Slug, "governor", d.Governor, "kind", d.Kind, "start_block", d.StartBlock)
		}
	}
	for _, old := range r.daos {
		if keep[old.dao.Slug] {
			continue
		}
		old.removed.Store(true)
		if _, again := bySlug[old.dao.Slug]; !again {
			r.log.Info("dao removed", "dao", old.dao.Slug)
		}
	}
	r.daos, r.bySlug = list, bySlug
}

func (r *Runner) isLeaderLocked() bool {
	for _, d := range r.daos {
		return d.status.Leader
	}
	return false
}

func notifyChanged(a, b core.DAO) bool {
	na, nb := a.NotifyFromBlock, b.NotifyFromBlock
	return a.NotifyHistory != b.NotifyHistory || (na == nil) != (nb == nil) || (na != nil && *na != *nb)
}

// configuredNotifyFrom returns the first pushed block a DAO's settings
// name: 0 with notify_history or notify_from_block 0.
func configuredNotifyFrom(d core.DAO) (uint64, bool) {
	switch {
	case d.NotifyHistory:
		return 0, true
	case d.NotifyFromBlock != nil:
		return *d.NotifyFromBlock, true
	}
	return 0, false
}

// ContractCalls returns how many eth_calls the runner has made to governors
// and their timelocks.
func (r *Runner) ContractCalls() int64 { return r.calls.Load() }

// ChainID returns the chain this runner indexes.
func (r *Runner) ChainID() uint64 { return r.chainID }

// Run indexes until ctx ends, while this process holds the chain's lease;
// without it, it keeps the statuses fresh from the store and retries the
// lease every LockRetry. It returns nil when ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		lease, ok, err := r.locker.TryLock(ctx, r.chainID)
		switch {
		case err != nil:
			r.log.Warn("indexer lease", "err", err)
			r.setError(fmt.Errorf("lease: %w", err))
		case ok:
			r.lead(ctx, lease)
			lease.Release()
		default:
			r.applyWanted()
			r.follow(ctx)
		}
		r.roundDone()
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-time.After(r.retryDelay(ok)):
		}
	}
	return nil
}

func (r *Runner) roundDone() {
	if r.afterRound != nil {
		r.afterRound()
	}
}

func (r *Runner) retryDelay(wasLeader bool) time.Duration {
	if wasLeader {
		return 0 // lost the lease: try again at once, another process may not have it
	}
	return r.cfg.LockRetry
}

// lead indexes while the lease holds. The sweeps it starts end with it.
func (r *Runner) lead(ctx context.Context, lease Lease) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lease.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	r.setLeader(true)
	defer r.setLeader(false)
	// Another process may have moved every cursor since this one last led.
	r.sharedLoaded = false
	defer r.sweeps.stop()
	r.log.Info("indexing chain")
	for {
		began := time.Now()
		err := r.poll(ctx, false)
		// Polls start every PollInterval, not PollInterval after the last
		// one ended: a poll that took a second still leaves the head read
		// a block time after the one before, so the lag behind the head is
		// the interval's, not the interval plus the poll's.
		delay := max(0, r.cfg.PollInterval-time.Since(began))
		switch {
		case err != nil && ctx.Err() == nil:
			r.failures++
			delay = r.failureDelay()
			if r.failures == 1 || r.failures%10 == 0 {
				r.log.Warn("indexer poll failed", "err", err, "failures_in_a_row", r.failures, "retry_in", delay)
			} else {
				r.log.Debug("indexer poll failed", "err", err, "failures_in_a_row", r.failures, "retry_in", delay)
			}
		case err == nil:
			if r.failures > 0 {
				r.log.Info("indexer recovered", "after_failures", r.failures)
			}
			r.failures = 0
		}
		r.logProgress()
		r.roundDone()
		select {
		case <-ctx.Done():
			select {
			case <-lease.Done():
				r.log.Warn("indexer lease lost")
			default:
			}
			return
		case <-r.wake:
		case <-r.sweeps.finished():
		case <-time.After(delay):
		}
	}
}

// failureDelay doubles the poll interval with each failed poll in a row,
// up to MaxFailureBackoff.
func (r *Runner) failureDelay() time.Duration {
	d := r.cfg.PollInterval
	for i := 1; i < r.failures && d < r.cfg.MaxFailureBackoff; i++ {
		d *= 2
	}
	return min(d, r.cfg.MaxFailureBackoff)
}

// Sync indexes every DAO of the chain up to the confirmed head, once,
// waiting for the DAOs that are behind to catch up. It is what Run does
// each poll without the wait; tests and one-shot tools call it directly.
// It must not run concurrently with itself or with Run.
func (r *Runner) Sync(ctx context.Context) error {
	return r.poll(ctx, true)
}

// snapshot returns the runner's DAOs.
func (r *Runner) snapshot() []*daoState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*daoState(nil), r.daos...)
}
