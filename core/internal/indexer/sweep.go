package indexer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/govgate/govgate/core"
)

// A sweep catches up DAOs that are behind the shared cursor (new ones, and
// those a restart or a failure left behind). It reads history once for all
// of them: each range is one eth_getLogs over every member still below its
// end (split by the address limit), routed to the members above their own
// cursors. It settles the members' open proposals where the range ends at
// its first goal (the shared cursor when it started, the block after which
// a new DAO's events are pushed) and at the end. When every member is at
// the shared cursor, the sweep hands them to the next advance, which joins
// them; if the shared cursor moved on meanwhile, the sweep reads the gap
// first, the last range while holding the shared cursor still.
type sweep struct {
	members []*daoState
	goal0   uint64
	started time.Time
	logged  time.Time
	from    uint64 // lowest member cursor + 1 at the start, for progress
	events  uint64
}

// sweeps owns the running sweeps: each runs in a goroutine of its own,
// which ends with the sweep or when stop cancels it.
type sweeps struct {
	mu     sync.Mutex
	n      int
	cancel context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
	errs   []error
	done   chan struct{} // a sweep finished since the last look
}

func (s *sweeps) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *sweeps) finished() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{}, 1)
	}
	return s.done
}

func (s *sweeps) start(parent context.Context, run func(context.Context) error) {
	s.mu.Lock()
	if s.ctx == nil || s.ctx.Err() != nil {
		s.ctx, s.cancel = context.WithCancel(parent)
	}
	if s.done == nil {
		s.done = make(chan struct{}, 1)
	}
	ctx, done := s.ctx, s.done
	s.n++
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		err := run(ctx)
		s.mu.Lock()
		s.n--
		if err != nil && ctx.Err() == nil {
			s.errs = append(s.errs, err)
		}
		s.mu.Unlock()
		select {
		case done <- struct{}{}:
		default:
		}
	}()
}

// wait waits for every sweep and returns their errors.
func (s *sweeps) wait() []error {
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := s.errs
	s.errs = nil
	return errs
}

// stop cancels the sweeps and waits for them.
func (s *sweeps) stop() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wait()
}

// startSweep starts a sweep of the DAOs waiting for one, if fewer than
// CatchUpConcurrency run.
func (r *Runner) startSweep(ctx context.Context) {
	if r.sweeps.running() >= r.cfg.CatchUpConcurrency {
		return
	}
	r.headMu.Lock()
	sh := r.shared
	r.headMu.Unlock()
	if sh == nil {
		return
	}
	r.mu.Lock()
	var members []*daoState
	for _, d := range r.daos {
		if d.phase == phaseBehind && !d.removed.Load() {
			d.phase = phaseSweeping
			members = append(members, d)
		}
	}
	r.mu.Unlock()
	if len(members) == 0 {
		return
	}
	sw := &sweep{members: members, goal0: sh.Block, started: r.now()}
	sw.logged = sw.started
	r.sweeps.start(ctx, func(ctx context.Context) error {
		err := r.runSweep(withPart(ctx, "catch_up"), sw)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("catch-up failed; its DAOs are tried again", "daos", len(sw.members), "err", err)
			}
			r.mu.Lock()
			for _, d := range sw.members {
				if d.phase == phaseSweeping {
					d.phase = phaseBehind
					if ctx.Err() == nil {
						d.status.LastError, d.status.LastErrorAt = err.Error(), r.now()
					}
				}
			}
			r.mu.Unlock()
		}
		return err
	})
}

func (r *Runner) runSweep(ctx context.Context, sw *sweep) error {
	if err := r.probeAll(withPart(ctx, "probe"), sw.members); err != nil {
		return err
	}
	r.mu.Lock()
	first := true
	for _, d := range sw.members {
		if d.phase != phaseSweeping {
			continue
		}
		if !d.hasCursor {
			// A DAO indexed for the first time: what lies up to the block
			// it catches up to is history, stored but not pushed.
			d.notifyFrom = sw.goal0 + 1
			if nf, ok := configuredNotifyFrom(d.dao); ok {
				d.notifyFrom = nf
			}
		}
		d.status.NotifyFromBlock = d.notifyFrom
		if first || d.cursor.Block+1 < sw.from {
			sw.from, first = d.cursor.Block+1, false
		}
	}
	r.mu.Unlock()
	if sw.goal0+1 > sw.from && sw.goal0+1-sw.from > r.cfg.InitialRange {
		r.log.Info("backfill started", "daos", len(sw.members), "from_block", sw.from, "to_block", sw.goal0, "blocks", sw.goal0+1-sw.from)
	}
	size := r.cfg.InitialRange
	goal := sw.goal0
	// The next range is read while this one is written: a backfill's
	// reads and writes overlap, as the node and the database are
	// different machines (or cores).
	var ahead *sweepAhead
	defer func() { ahead.stop() }()
	next := func(low uint64) (from, to uint64) {
		from = low + 1
		to = min(from+size-1, goal)
		if from <= sw.goal0 && to > sw.goal0 {
			to = sw.goal0
		}
		return from, to
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		low, active := r.lowest(sw, goal)
		if !active {
			ahead.stop()
			ahead = nil
			done, err := r.tryJoin(ctx, sw, &goal, &size)
			if err != nil || done {
				return err
			}
			continue
		}
		from, to := next(low)
		var rd sweepRead
		var err error
		if ahead.covers(from, to) {
			rd, err = ahead.wait()
		} else {
			ahead.stop()
			rd, err = r.sweepReadRange(ctx, sw, from, to)
		}
		ahead = nil
		if err != nil {
			if isRangeError(err) && to > from {
				size = max(1, (to-from+1)/2)
				r.metrics.shrink(r.chainID)
				r.log.Debug("getLogs range refused, shrinking", "from", from, "to", to, "range", size)
				continue
			}
			return fmt.Errorf("blocks %d-%d: %w", from, to, err)
		}
		if len(rd.logs) < growBelow && size < r.cfg.MaxRange {
			size = min(size*2, r.cfg.MaxRange)
		}
		// Every member below to is at to once this range is written, so
		// the next range starts after it.
		if to < goal {
			if nf, nt := next(to); nf <= nt {
				ahead = r.readAhead(ctx, sw, nf, nt)
			}
		}
		if err := r.sweepApply(ctx, sw, rd, to == goal || to == sw.goal0); err != nil {
			return fmt.Errorf("blocks %d-%d: %w", from, to, err)
		}
	}
}

// sweepAhead is a sweep's next range being read in a goroutine of its
// own, which runSweep owns: it waits for it or stops it.
type sweepAhead struct {
	from, to uint64
	cancel   context.CancelFunc
	done     chan struct{}
	rd       sweepRead
	err      error
}

// readAhead starts reading blocks from..to of the sweep's members.
func (r *Runner) readAhead(ctx context.Context, sw *sweep, from, to uint64) *sweepAhead {
	ctx, cancel := context.WithCancel(ctx)
	a := &sweepAhead{from: from, to: to, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.rd, a.err = r.sweepReadRange(ctx, sw, from, to)
	}()
	return a
}

func (a *sweepAhead) covers(from, to uint64) bool { return a != nil && a.from == from && a.to == to }

func (a *sweepAhead) wait() (sweepRead, error) {
	<-a.done
	a.cancel()
	return a.rd, a.err
}

// stop cancels the read and waits for its goroutine; nil is stopped.
func (a *sweepAhead) stop() {
	if a == nil {
		return
	}
	a.cancel()
	<-a.done
}

// lowest returns the lowest cursor of the members below goal.
func (r *Runner) lowest(sw *sweep, goal uint64) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var low uint64
	found := false
	for _, d := range sw.members {
		if d.phase != phaseSweeping || d.removed.Load() || d.cursor.Block >= goal {
			continue
		}
		if !found || d.cursor.Block < low {
			low, found = d.cursor.Block, true
		}
	}
	return low, found
}

// tryJoin hands the members to the next advance when they are at the
// shared cursor. When it moved on by no more than a range, the sweep reads
// the gap holding the shared cursor, so that it cannot move again; a
// longer gap is read as usual first (goal moves to it).
func (r *Runner) tryJoin(ctx context.Context, sw *sweep, goal, size *uint64) (bool, error) {
	r.headMu.Lock()
	defer r.headMu.Unlock()
	if r.shared == nil {
		return false, errors.New("no shared cursor")
	}
	s := r.shared.Block
	for {
		low, behind := r.lowest(sw, s)
		if !behind {
			break
		}
		if s-low > *size {
			*goal = s
			return false, nil
		}
		if err := r.sweepRange(ctx, sw, low+1, s, true); err != nil {
			if isRangeError(err) && s > low+1 {
				*size = max(1, (s-low)/2)
				*goal = s
				return false, nil
			}
			return false, fmt.Errorf("blocks %d-%d: %w", low+1, s, err)
		}
	}
	r.mu.Lock()
	joined := 0
	for _, d := range sw.members {
		if d.phase == phaseSweeping && !d.removed.Load() {
			d.phase = phaseReady
			d.status.Backfill = nil
			r.ready = append(r.ready, d)
			joined++
		}
	}
	r.mu.Unlock()
	if sw.goal0+1 > sw.from && sw.goal0+1-sw.from > r.cfg.InitialRange {
		r.log.Info("backfill done", "daos", joined, "blocks", s+1-sw.from, "events", sw.events, "seconds", r.now().Sub(sw.started).Seconds())
	}
	return true, nil
}

// sweepRange indexes blocks from..to for the members below to: one read,
// one transaction.
func (r *Runner) sweepRange(ctx context.Context, sw *sweep, from, to uint64, settle bool) error {
	rd, err := r.sweepReadRange(ctx, sw, from, to)
	if err != nil {
		return err
	}
	return r.sweepApply(ctx, sw, rd, settle)
}

// sweepRead is what a sweep read of blocks from..to: the logs of the
// members then below to.
type sweepRead struct {
	from, to uint64
	parts    []*daoState
	logs     []types.Log
	toHash   common.Hash
	toTime   uint64
	started  time.Time
}

// sweepReadRange reads blocks from..to for the members below to. It
// touches nothing of the runner's but its reads of the members, so it
// may run while the range before is written.
func (r *Runner) sweepReadRange(ctx context.Context, sw *sweep, from, to uint64) (sweepRead, error) {
	rd := sweepRead{from: from, to: to, started: r.now()}
	r.mu.Lock()
	for _, d := range sw.members {
		if d.phase == phaseSweeping && !d.removed.Load() && d.cursor.Block < to && d.info != nil {
			rd.parts = append(rd.parts, d)
		}
	}
	r.mu.Unlock()
	if len(rd.parts) == 0 {
		return rd, nil
	}
	var err error
	rd.logs, rd.toHash, rd.toTime, err = r.readLogs(ctx, addressesOf(rd.parts), from, to, nil)
	return rd, err
}

// sweepApply writes what rd read in one transaction and moves its
// members' cursors to rd.to.
func (r *Runner) sweepApply(ctx context.Context, sw *sweep, rd sweepRead, settle bool) error {
	var parts []*daoState
	r.mu.Lock()
	for _, d := range rd.parts {
		// A member removed, or gone back to be read again, since the read.
		if d.phase == phaseSweeping && !d.removed.Load() {
			parts = append(parts, d)
		}
	}
	r.mu.Unlock()
	if len(parts) == 0 {
		return nil
	}
	from, to, logs, toHash, toTime, start := rd.from, rd.to, rd.logs, rd.toHash, rd.toTime, rd.started
	var err error
	cursorOf := map[*daoState]uint64{}
	for _, d := range parts {
		cursorOf[d] = d.cursor.Block
	}
	byDAO := route(logs, parts, func(d *daoState) uint64 { return cursorOf[d] })
	batch := core.ChainBatch{ChainID: r.chainID, Blocks: appendRef(blockRefs(logs), BlockRef{Number: to, Hash: toHash.Hex()})}
	next := Cursor{Block: to, Hash: toHash.Hex()}
	var jobs []partJob
	for _, d := range parts {
		if dl := byDAO[d]; len(dl) > 0 || (settle && d.open) {
			jobs = append(jobs, partJob{d: d, logs: dl})
		}
	}
	built, err := r.buildParts(ctx, jobs, to, toHash, toTime, settle)
	if err != nil {
		return err
	}
	builtOf := make(map[*daoState]*core.IndexBatch, len(jobs))
	for i := range jobs {
		builtOf[jobs[i].d] = &built[i]
	}
	for _, d := range parts {
		var part core.IndexBatch
		if p := builtOf[d]; p != nil {
			part = *p
		} else {
			part = core.IndexBatch{DAO: d.dao.Slug, ChainID: r.chainID, Generation: d.dao.Generation}
			r.withGovernor(d, &part)
		}
		batch.Blocks = mergeRefs(batch.Blocks, part.Blocks)
		part.Prev = d.ownPrev()
		part.Cursor = Cursor{Block: to, Hash: next.Hash, NotifyFrom: d.notifyFrom}
		batch.DAOs = append(batch.DAOs, part)
	}
	if to > r.cfg.KeepBlocks {
		batch.PruneBelow = to - r.cfg.KeepBlocks
	}
	dropped, err := r.store.ApplyBatches(ctx, batch)
	if err != nil {
		return fmt.Errorf("store blocks %d-%d: %w", from, to, err)
	}
	r.metrics.batch(r.chainID, r.now().Sub(start))
	gone := map[string]bool{}
	for _, s := range dropped {
		gone[s] = true
	}
	now := r.now()
	r.mu.Lock()
	for _, d := range parts {
		if gone[d.dao.Slug] {
			d.phase = phaseNew // read its cursor again
			continue
		}
		d.cursor, d.hasCursor = Cursor{Block: to, Hash: next.Hash, NotifyFrom: d.notifyFrom}, true
		d.lastBlockTime = time.Unix(int64(toTime), 0)
		d.status.LastIndexedBlock = to
		d.status.LastIndexedAt = now
		d.status.LastIndexedBlockTime = d.lastBlockTime.UTC()
		d.status.LagSeconds = 0
	}
	r.mu.Unlock()
	for _, p := range batch.DAOs {
		if !gone[p.DAO] {
			r.counted(p)
		}
	}
	sw.events += uint64(len(logs))
	r.sweepProgress(sw, to)
	return nil
}

// sweepProgress records a sweep's progress in its members' statuses and,
// every progressEvery, in the log.
func (r *Runner) sweepProgress(sw *sweep, to uint64) {
	now := r.now()
	total := max(sw.goal0+1, to+1) - sw.from
	done := to + 1 - sw.from
	p := Backfill{FromBlock: sw.from, ToBlock: max(sw.goal0, to), BlocksDone: done, BlocksTotal: total, Events: sw.events, ETASeconds: -1}
	if secs := now.Sub(sw.started).Seconds(); secs > 0 {
		p.EventsPerSecond = float64(sw.events) / secs
		p.BlocksPerSecond = float64(done) / secs
		if p.BlocksPerSecond > 0 {
			p.ETASeconds = float64(total-done) / p.BlocksPerSecond
		}
	}
	r.mu.Lock()
	target := uint64(0)
	for _, d := range sw.members {
		if d.phase == phaseSweeping {
			bf := p
			d.status.Backfill = &bf
			target = d.status.ConfirmedHead
			// At the confirmed head, no lag is left: the figure of the
			// poll that started the sweep must not stay.
			d.status.LagBlocks = 0
			if target > d.cursor.Block {
				d.status.LagBlocks = target - d.cursor.Block
			}
		}
	}
	r.mu.Unlock()
	if now.Sub(sw.logged) >= progressEvery && total > r.cfg.InitialRange {
		sw.logged = now
		r.log.Info("backfill progress", "daos", len(sw.members), "blocks_done", done, "blocks_total", total,
			"events", sw.events, "events_per_s", int64(p.EventsPerSecond), "eta_s", int64(p.ETASeconds))
	}
}
