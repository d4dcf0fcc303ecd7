// Package indexer follows the governor contracts of govgate's DAOs: it reads
// their events with eth_getLogs in adaptive block ranges, from each DAO's
// stored cursor up to the head minus the chain's confirmations, and writes
// proposals, votes and one notification per event through the Store
// interface, in the same transaction that moves the cursor. It remembers
// recent block hashes to detect reorganisations, and rolls back to the
// common ancestor before indexing again. One Runner indexes one chain; with
// several govgate processes, a Locker lets only one of them do so.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/govgate/govgate/core"
)

// Chain is what the indexer needs of a chain gateway (core/internal/chain's Gateway).
type Chain interface {
	ChainID(ctx context.Context) (uint64, error)
	// BlockStamp returns the number, hash (as the node reports it) and Unix
	// time of a block, the latest one for a nil number; ethereum.NotFound if
	// there is no such block.
	BlockStamp(ctx context.Context, number *big.Int) (num uint64, hash common.Hash, timestamp uint64, err error)
	FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error)
	// CallContract runs eth_call at a block (the latest for nil).
	CallContract(ctx context.Context, msg ethereum.CallMsg, number *big.Int) ([]byte, error)
}

// Config tunes a Runner. Zero fields take the defaults (WithDefaults).
type Config struct {
	// PollInterval is the pause between two polls of the head once caught up.
	PollInterval time.Duration `yaml:"poll_interval"`
	// InitialRange and MaxRange bound the block range of one eth_getLogs:
	// it halves when a provider refuses it and doubles while results are few.
	InitialRange uint64 `yaml:"initial_range"`
	MaxRange     uint64 `yaml:"max_range"`
	// KeepBlocks is how far back reorganisations are detected and undone.
	KeepBlocks uint64 `yaml:"keep_blocks"`
	// LockRetry is how often a process without the chain's lease tries to
	// take it, hence how soon it takes over from a dead holder.
	LockRetry time.Duration `yaml:"lock_retry"`
	// LaggingBlocks and LaggingAfter make a DAO "lagging" when it is more
	// blocks, or more seconds of chain time, behind the confirmed head.
	LaggingBlocks uint64        `yaml:"lagging_blocks"`
	LaggingAfter  time.Duration `yaml:"lagging_after"`
	// StalledAfter makes a DAO "stalled" when no poll has succeeded, or the
	// cursor has not moved while behind, for that long.
	StalledAfter time.Duration `yaml:"stalled_after"`
	// EndingSoon are the leads before a proposal's voteEnd at which
	// proposal.ending_soon is pushed, longest first. A lead longer than the
	// proposal's whole voting period is skipped for it.
	EndingSoon []time.Duration `yaml:"ending_soon"`
}

// Defaults of Config.
const (
	DefaultPollInterval  = 2 * time.Second
	DefaultInitialRange  = 1000
	DefaultMaxRange      = 10_000
	DefaultKeepBlocks    = 128
	DefaultLockRetry     = 2 * time.Second
	DefaultLaggingBlocks = 20
	DefaultLaggingAfter  = 5 * time.Minute
	DefaultStalledAfter  = 2 * time.Minute
)

// growBelow: a range that returned fewer logs than this may double.
const growBelow = 2000

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	set := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	set(&c.PollInterval, DefaultPollInterval)
	set(&c.LockRetry, DefaultLockRetry)
	set(&c.LaggingAfter, DefaultLaggingAfter)
	set(&c.StalledAfter, DefaultStalledAfter)
	if c.InitialRange == 0 {
		c.InitialRange = DefaultInitialRange
	}
	if c.MaxRange == 0 {
		c.MaxRange = max(DefaultMaxRange, c.InitialRange)
	}
	if c.KeepBlocks == 0 {
		c.KeepBlocks = DefaultKeepBlocks
	}
	if c.LaggingBlocks == 0 {
		c.LaggingBlocks = DefaultLaggingBlocks
	}
	if c.EndingSoon == nil {
		c.EndingSoon = []time.Duration{24 * time.Hour, time.Hour}
	}
	c.EndingSoon = append([]time.Duration(nil), c.EndingSoon...)
	sort.Slice(c.EndingSoon, func(i, j int) bool { return c.EndingSoon[i] > c.EndingSoon[j] })
	return c
}

// Validate names the first field that cannot work, as the YAML file does.
func (c Config) Validate() error {
	switch {
	case c.PollInterval <= 0:
		return errors.New("indexer: poll_interval: must be positive")
	case c.LockRetry <= 0:
		return errors.New("indexer: lock_retry: must be positive")
	case c.InitialRange == 0:
		return errors.New("indexer: initial_range: must be at least 1")
	case c.MaxRange < c.InitialRange:
		return fmt.Errorf("indexer: max_range: %d is less than initial_range %d", c.MaxRange, c.InitialRange)
	case c.KeepBlocks < 2:
		return errors.New("indexer: keep_blocks: must be at least 2")
	case c.StalledAfter <= c.PollInterval:
		return errors.New("indexer: stalled_after: must be longer than poll_interval")
	case c.LaggingAfter <= 0:
		return errors.New("indexer: lagging_after: must be positive")
	case len(c.EndingSoon) > maxLeads:
		return fmt.Errorf("indexer: ending_soon: at most %d leads", maxLeads)
	}
	for _, l := range c.EndingSoon {
		if l < time.Second {
			return fmt.Errorf("indexer: ending_soon: lead %s is shorter than a second", l)
		}
	}
	return nil
}

// ActionDecoder decodes a proposal's calls (core/internal/calldata's
// Decoder): proposal.created carries them decoded.
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
}

// Runner indexes the DAOs of one chain.
type Runner struct {
	chain         Chain
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

	daos    []*daoState
	bySlug  map[string]*daoState
	checked bool // the upstream's chain id was verified

	// calls counts eth_calls to governors, for the benchmark.
	calls atomic.Int64
	// pace is the chain's recent seconds per block, sampled at paceBlock.
	pace      float64
	paceBlock uint64

	mu sync.Mutex // guards the status fields of daoState and leader
}

// daoState is one DAO's indexing state; the status fields are guarded by
// Runner.mu, the rest belongs to the goroutine running Sync.
type daoState struct {
	dao         core.DAO
	governor    common.Address
	governorHex string
	rangeSize   uint64

	status        DAOStatus
	caughtUp      bool
	lastBlockTime time.Time // time of the last indexed block, if known

	info       *governorInfo // read once from the governor; nil until then
	infoStored bool          // info went to the store with a batch
	clockState               // the governor's clock as read so far (clock.go)
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
		chain: c, store: store, locker: locker, chainID: chainID, confirmations: confirmations,
		cfg: cfg, log: opts.Logger, metrics: opts.Metrics, actions: opts.Actions, now: opts.Now,
		bySlug: map[string]*daoState{},
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("chain", chainID)
	if r.now == nil {
		r.now = time.Now
	}
	r.started = r.now()
	for _, d := range daos {
		if d.ChainID != chainID {
			return nil, fmt.Errorf("indexer: dao %q is on chain %d, not %d", d.Slug, d.ChainID, chainID)
		}
		if !common.IsHexAddress(d.Governor) {
			return nil, fmt.Errorf("indexer: dao %q: governor %q is not an address", d.Slug, d.Governor)
		}
		if _, dup := r.bySlug[d.Slug]; dup {
			return nil, fmt.Errorf("indexer: dao %q listed twice", d.Slug)
		}
		gov := common.HexToAddress(d.Governor)
		s := &daoState{
			dao: d, governor: gov, governorHex: gov.Hex(), rangeSize: cfg.InitialRange,
			// Until the store says otherwise, everything below the start block is done.
			status: DAOStatus{DAO: d.Slug, ChainID: chainID, State: StatusSyncing, LastIndexedBlock: max(d.StartBlock, 1) - 1},
		}
		r.daos = append(r.daos, s)
		r.bySlug[d.Slug] = s
	}
	return r, nil
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
			r.follow(ctx)
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.retryDelay(ok)):
		}
	}
	return nil
}

func (r *Runner) retryDelay(wasLeader bool) time.Duration {
	if wasLeader {
		return 0 // lost the lease: try again at once, another process may not have it
	}
	return r.cfg.LockRetry
}

// lead indexes while the lease holds.
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
	r.log.Info("indexing chain")
	for {
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("indexer sync", "err", err)
		}
		select {
		case <-ctx.Done():
			select {
			case <-lease.Done():
				r.log.Warn("indexer lease lost")
			default:
			}
			return
		case <-time.After(r.cfg.PollInterval):
		}
	}
}

// Sync indexes every DAO of the chain up to the confirmed head, once. It is
// what Run does each poll; tests and one-shot tools call it directly. It must
// not run concurrently with itself or with Run.
func (r *Runner) Sync(ctx context.Context) error {
	if !r.checked {
		id, err := r.chain.ChainID(ctx)
		if err != nil {
			return r.fail(fmt.Errorf("chain id: %w", err))
		}
		if id != r.chainID {
			return r.fail(fmt.Errorf("upstream serves chain %d, configured as %d", id, r.chainID))
		}
		r.checked = true
	}
	headNum, headHash, headTime, err := r.chain.BlockStamp(ctx, nil)
	if err != nil {
		return r.fail(fmt.Errorf("head: %w", err))
	}
	if err := r.checkReorg(ctx, headNum); err != nil {
		return r.fail(err)
	}
	target, targetTime := uint64(0), headTime
	hasTarget := headNum >= r.confirmations
	if hasTarget {
		target = headNum - r.confirmations
		if r.confirmations > 0 {
			if _, _, targetTime, err = r.chain.BlockStamp(ctx, new(big.Int).SetUint64(target)); err != nil {
				return r.fail(fmt.Errorf("confirmed head %d: %w", target, err))
			}
		}
	}
	r.setHead(headNum, headHash, headTime, target, targetTime)

	var errs []error
	for _, d := range r.daos {
		if !hasTarget {
			r.touchStatus(d, nil)
			continue
		}
		err := r.syncDAO(ctx, d, target, targetTime)
		r.touchStatus(d, err)
		if err != nil {
			r.metrics.failure(r.chainID)
			errs = append(errs, fmt.Errorf("dao %s: %w", d.dao.Slug, err))
		}
	}
	return errors.Join(errs...)
}

// checkReorg compares the highest remembered block with the chain and, if
// the chain no longer has it, finds the highest remembered block it still
// has and rolls the store back to it.
func (r *Runner) checkReorg(ctx context.Context, head uint64) error {
	refs, err := r.store.RecentBlocks(ctx, r.chainID, int(r.cfg.KeepBlocks))
	if err != nil {
		return fmt.Errorf("recent blocks: %w", err)
	}
	if len(refs) == 0 {
		return nil
	}
	ok, err := r.canonical(ctx, refs[0], head)
	if err != nil || ok {
		return err
	}
	// Blocks below the fork point are canonical, those above are not: the
	// first canonical ref (refs are highest first) is the common ancestor.
	var searchErr error
	i := sort.Search(len(refs), func(i int) bool {
		if i == 0 || searchErr != nil {
			return false
		}
		ok, err := r.canonical(ctx, refs[i], head)
		if err != nil {
			searchErr = err
		}
		return ok
	})
	if searchErr != nil {
		return searchErr
	}
	var to BlockRef
	if i < len(refs) {
		to = refs[i]
	} else {
		// Deeper than anything remembered: start again below the oldest.
		oldest := refs[len(refs)-1]
		if oldest.Number > 0 {
			to = BlockRef{Number: oldest.Number - 1}
		}
		r.log.Error("reorg deeper than the remembered blocks", "oldest_kept", oldest.Number)
	}
	r.log.Warn("chain reorganised", "from_block", refs[0].Number, "common_ancestor", to.Number, "depth", refs[0].Number-to.Number)
	if err := r.store.Rollback(ctx, r.chainID, to); err != nil {
		return fmt.Errorf("roll back to block %d: %w", to.Number, err)
	}
	r.metrics.reorg(r.chainID)
	r.mu.Lock()
	for _, d := range r.daos {
		if d.status.LastIndexedBlock > to.Number {
			d.status.LastIndexedBlock = to.Number
			d.lastBlockTime = time.Time{}
		}
	}
	r.mu.Unlock()
	return nil
}

// canonical reports whether ref is still a block of the chain.
func (r *Runner) canonical(ctx context.Context, ref BlockRef, head uint64) (bool, error) {
	if ref.Number > head {
		return false, nil
	}
	_, hash, _, err := r.chain.BlockStamp(ctx, new(big.Int).SetUint64(ref.Number))
	if errors.Is(err, ethereum.NotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("block %d: %w", ref.Number, err)
	}
	return strings.EqualFold(hash.Hex(), ref.Hash), nil
}

// errRangeRaced is a range whose end block changed while it was read.
var errRangeRaced = errors.New("chain reorganised while reading a range")

func (r *Runner) syncDAO(ctx context.Context, d *daoState, target uint64, targetTime uint64) error {
	cur, found, err := r.store.Cursor(ctx, d.dao.Slug)
	if err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	if d.info == nil {
		gi, err := caller{r: r, d: d, governor: d.governor}.info(ctx)
		if err != nil {
			return fmt.Errorf("governor: %w", err)
		}
		d.info = &gi
		r.mu.Lock()
		d.status.CountingMode, d.status.ClockMode = gi.countingMode, gi.clock
		r.mu.Unlock()
		r.log.Info("governor", "counting_mode", gi.countingMode, "dao", d.dao.Slug, "kind", d.dao.Kind, "clock", gi.clock, "grace_period_s", gi.grace, "token", gi.token)
	}
	from := d.dao.StartBlock
	var prev *Cursor
	notifyFrom := r.notifyFrom(d, cur, found, target)
	if found {
		prev = &cur
		from = max(cur.Block+1, d.dao.StartBlock)
		if d.lastBlockTime.IsZero() && cur.Block <= target {
			if _, _, t, err := r.chain.BlockStamp(ctx, new(big.Int).SetUint64(cur.Block)); err == nil {
				d.lastBlockTime = time.Unix(int64(t), 0)
			}
		}
		r.mu.Lock()
		d.status.LastIndexedBlock = cur.Block
		r.mu.Unlock()
	}
	r.mu.Lock()
	d.status.NotifyFromBlock = notifyFrom
	r.mu.Unlock()
	bf := r.startBackfill(d, from, target)
	defer r.endBackfill(d, bf)
	// The next range is read while the current one is written: reading
	// (the node's JSON, decoded here) and writing (the database) take
	// different resources, and a backfill is a long run of both.
	var ahead *prefetch
	defer func() { ahead.stop() }()
	for from <= target {
		if err := ctx.Err(); err != nil {
			return err
		}
		to := min(from+d.rangeSize-1, target)
		var rd rangeRead
		if ahead.covers(from, to) {
			rd = ahead.wait()
		} else {
			ahead.stop()
			rd = r.readRangeAt(ctx, d, from, to)
		}
		ahead = nil
		logs, toHash, toTime, err := rd.logs, rd.hash, rd.time, rd.err
		if err != nil {
			if isRangeError(err) && to > from {
				d.rangeSize = max(1, (to-from+1)/2)
				r.metrics.shrink(r.chainID)
				r.log.Debug("getLogs range refused, shrinking", "dao", d.dao.Slug, "from", from, "to", to, "range", d.rangeSize)
				continue
			}
			return fmt.Errorf("blocks %d-%d: %w", from, to, err)
		}
		nextSize := d.rangeSize
		if len(logs) < growBelow && nextSize < r.cfg.MaxRange {
			nextSize = min(nextSize*2, r.cfg.MaxRange)
		}
		if to < target {
			ahead = r.readAhead(ctx, d, to+1, min(to+nextSize, target))
		}
		b := newBuilder(r, d, notifyFrom)
		if err := b.add(ctx, logs); err != nil {
			return fmt.Errorf("blocks %d-%d: %w", from, to, err)
		}
		if to == target {
			// Time-driven states are read at the confirmed head only: every
			// node has its state, and the proposals' crossings since the
			// last poll all show there.
			if err := b.settle(ctx, to, toHash, toTime); err != nil {
				return fmt.Errorf("proposal states at block %d: %w", to, err)
			}
		}
		if err := b.finish(); err != nil {
			return fmt.Errorf("blocks %d-%d: %w", from, to, err)
		}
		b.batch.Prev = prev
		b.batch.Cursor = Cursor{Block: to, Hash: toHash.Hex(), NotifyFrom: notifyFrom}
		if !d.infoStored {
			// Kept with the DAO, so that every process serving it
			// (not only this one, which read it) knows how it counts
			// and what its timepoints are.
			b.batch.Governor = &core.GovernorInfo{CountingMode: d.info.countingMode, ClockMode: d.info.clock}
		}
		if n := len(b.batch.Blocks); n == 0 || b.batch.Blocks[n-1].Number != to {
			b.batch.Blocks = append(b.batch.Blocks, BlockRef{Number: to, Hash: b.batch.Cursor.Hash})
		}
		if to > r.cfg.KeepBlocks {
			b.batch.PruneBelow = to - r.cfg.KeepBlocks
		}
		if err := r.store.ApplyBatch(ctx, b.batch); err != nil {
			return fmt.Errorf("store blocks %d-%d: %w", from, to, err)
		}
		r.metrics.batch(r.chainID, r.now().Sub(rd.start))
		d.infoStored = true
		next := b.batch.Cursor
		prev = &next
		d.lastBlockTime = time.Unix(int64(toTime), 0)
		r.mu.Lock()
		d.status.LastIndexedBlock = to
		d.status.LastIndexedAt = r.now()
		d.status.LastIndexedBlockTime = d.lastBlockTime.UTC()
		d.status.LagBlocks = target - to
		d.status.LagSeconds = lagSeconds(targetTime, d.lastBlockTime)
		r.mu.Unlock()
		r.progress(d, bf, to, len(logs))
		d.rangeSize = nextSize
		from = to + 1
	}
	d.caughtUp = true
	return nil
}

// notifyFrom returns the first block whose changes the DAO pushes: the
// configured block, the start block with notify_history, the stored one,
// or, for a DAO indexed for the first time, the block after the confirmed
// head it starts from: what lies below it is history.
func (r *Runner) notifyFrom(d *daoState, cur Cursor, found bool, target uint64) uint64 {
	switch {
	case d.dao.NotifyHistory:
		return 0
	case d.dao.NotifyFromBlock > 0:
		return d.dao.NotifyFromBlock
	case found:
		return cur.NotifyFrom
	}
	return target + 1
}

// readRange reads the governor's logs of blocks from..to and the hash and
// time of block to. The end block is read before and after the logs: if it
// changed, a reorganisation raced the read and the range is read again on
// the next poll (the reorg check runs first).
func (r *Runner) readRange(ctx context.Context, d *daoState, from, to uint64) ([]types.Log, common.Hash, uint64, error) {
	toBig := new(big.Int).SetUint64(to)
	_, before, _, err := r.chain.BlockStamp(ctx, toBig)
	if err != nil {
		return nil, common.Hash{}, 0, fmt.Errorf("block %d: %w", to, err)
	}
	addrs, topics := []common.Address{d.governor}, eventTopics
	if d.info != nil && d.info.token != (common.Address{}) {
		// One eth_getLogs for the governor and its token.
		addrs, topics = append(addrs, d.info.token), allTopics
	}
	logs, err := r.chain.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from),
		ToBlock:   toBig,
		Addresses: addrs,
		Topics:    [][]common.Hash{topics},
	})
	if err != nil {
		return nil, common.Hash{}, 0, err
	}
	_, after, t, err := r.chain.BlockStamp(ctx, toBig)
	if err != nil {
		return nil, common.Hash{}, 0, fmt.Errorf("block %d: %w", to, err)
	}
	if before != after {
		return nil, common.Hash{}, 0, errRangeRaced
	}
	for i := range logs {
		if logs[i].BlockNumber == to && logs[i].BlockHash != after {
			return nil, common.Hash{}, 0, errRangeRaced
		}
	}
	return logs, after, t, nil
}

// rangeRead is what readRange returned for blocks from..to, and when the
// read started.
type rangeRead struct {
	from, to uint64
	start    time.Time
	logs     []types.Log
	hash     common.Hash
	time     uint64
	err      error
}

func (r *Runner) readRangeAt(ctx context.Context, d *daoState, from, to uint64) rangeRead {
	rd := rangeRead{from: from, to: to, start: r.now()}
	rd.logs, rd.hash, rd.time, rd.err = r.readRange(ctx, d, from, to)
	return rd
}

// prefetch is a range being read ahead, in its own goroutine.
type prefetch struct {
	from, to uint64
	cancel   context.CancelFunc
	done     chan rangeRead
}

// readAhead starts reading blocks from..to. Nothing but the chain is
// touched: the range is built and written in order, once it is the next.
func (r *Runner) readAhead(ctx context.Context, d *daoState, from, to uint64) *prefetch {
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetch{from: from, to: to, cancel: cancel, done: make(chan rangeRead, 1)}
	go func() { p.done <- r.readRangeAt(ctx, d, from, to) }()
	return p
}

// covers reports whether p reads exactly blocks from..to.
func (p *prefetch) covers(from, to uint64) bool { return p != nil && p.from == from && p.to == to }

// wait returns the read.
func (p *prefetch) wait() rangeRead {
	rd := <-p.done
	p.cancel()
	return rd
}

// stop abandons the read and waits for its goroutine; a nil p is none.
func (p *prefetch) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}

// isRangeError recognises a provider refusing an eth_getLogs range as too
// wide or too rich, which a narrower range fixes.
func isRangeError(err error) bool {
	if err == nil {
		return false
	}
	var rpcErr rpc.Error
	if errors.As(err, &rpcErr) && rpcErr.ErrorCode() == -32005 {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range rangeErrorHints {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// rangeErrorHints are fragments of the messages with which providers refuse
// a getLogs range (go-ethereum, Erigon, Infura, Alchemy, QuickNode, Ankr,
// public endpoints).
var rangeErrorHints = []string{
	"too many results", "query returned more than", "more than 10000 results",
	"range too large", "range is too large", "block range", "blocks range",
	"limit exceeded", "response size exceeded", "response is too big", "exceed maximum",
	"exceeds the range", "exceeds max", "too many blocks", "query timeout exceeded",
	"logs matched by query exceeds", "max results", "is limited to", "range limit", "-32005",
}

func lagSeconds(target uint64, last time.Time) float64 {
	if last.IsZero() {
		return 0
	}
	return max(0, float64(int64(target)-last.Unix()))
}
