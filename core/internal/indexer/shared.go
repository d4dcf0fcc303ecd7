package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"golang.org/x/sync/errgroup"

	"github.com/govgate/govgate/core"
)

// poll is one pass over the chain: it reads the head, checks for a
// reorganisation, starts sweeps for the DAOs that are behind (and with wait,
// waits for them), then moves the shared cursor to the confirmed head with
// one read of every joined DAO's logs.
func (r *Runner) poll(ctx context.Context, wait bool) (err error) {
	calls := &pollCalls{}
	ctx = withPoll(withPart(ctx, "head"), calls)
	start := r.now()
	defer func() { r.metrics.polled(r.chainID, calls.n.Load(), r.now().Sub(start)) }()
	r.applyWanted()
	if !r.checked {
		id, err := r.chain.ChainID(ctx)
		if err != nil {
			return r.fail(fmt.Errorf("chain id: %w", err))
		}
		if id != r.chainID {
			// Every DAO fails health with this cause until the RPC is fixed.
			r.chainErr = fmt.Errorf("chain id mismatch: the RPC serves chain %d, configured as %d (check chains[].rpc and chains[].id)", id, r.chainID)
			r.log.Error("indexer cannot index", "err", r.chainErr)
			return r.fail(r.chainErr)
		}
		r.checked, r.chainErr = true, nil
		r.mu.Lock()
		r.faultErr = nil
		r.mu.Unlock()
	}
	headNum, headHash, headParent, headTime, err := r.chain.BlockHeader(ctx, nil)
	if err != nil {
		return r.fail(fmt.Errorf("head: %w", err))
	}
	if headNum < r.confirmations {
		r.setHead(headNum, headHash, headTime, 0, headTime)
		r.touchAll(nil)
		return nil
	}
	target, tHash, tParent, tTime := headNum-r.confirmations, headHash, headParent, headTime
	if r.confirmations > 0 {
		if _, tHash, tParent, tTime, err = r.chain.BlockHeader(ctx, new(big.Int).SetUint64(target)); err != nil {
			return r.fail(fmt.Errorf("confirmed head %d: %w", target, err))
		}
	}
	r.setHead(headNum, headHash, headTime, target, tTime)
	if err := r.loadCursors(ctx); err != nil {
		return r.fail(err)
	}

	// A confirmed head that is the shared cursor, or its child, proves the
	// indexed chain canonical without a look back.
	r.headMu.Lock()
	sh := r.shared
	r.headMu.Unlock()
	extends := sh != nil && ((target == sh.Block && strings.EqualFold(tHash.Hex(), sh.Hash)) ||
		(target == sh.Block+1 && strings.EqualFold(tParent.Hex(), sh.Hash)))
	if !extends {
		rolled, err := r.checkReorg(ctx, headNum)
		if err != nil {
			return r.fail(err)
		}
		if rolled {
			r.sweeps.stop()
			r.sharedLoaded = false
			if err := r.loadCursors(ctx); err != nil {
				return r.fail(err)
			}
		}
	}
	r.headMu.Lock()
	sh = r.shared
	r.headMu.Unlock()
	if sh == nil {
		// The chain's first poll: the shared cursor starts at the
		// confirmed head, and every DAO catches up to it.
		next := Cursor{Block: target, Hash: tHash.Hex()}
		if _, err := r.store.ApplyBatches(ctx, core.ChainBatch{ChainID: r.chainID, Shared: &core.SharedMove{Next: next},
			Blocks: []BlockRef{{Number: target, Hash: next.Hash}}}); err != nil {
			r.sharedLoaded = false
			return r.fail(fmt.Errorf("start shared cursor: %w", err))
		}
		r.headMu.Lock()
		r.shared = &next
		r.headMu.Unlock()
	}
	// Joined DAOs need their governor's details: a new leader has them
	// from the store (loadCursors), and probes only the DAOs it has not.
	var atHead, needInfo []*daoState
	for _, d := range r.snapshot() {
		if ph := r.phaseOf(d); ph == phaseJoined || ph == phaseReady {
			atHead = append(atHead, d)
			if d.info == nil {
				needInfo = append(needInfo, d)
			}
		}
	}
	var errs []error
	if err := r.probeAll(withPart(ctx, "probe"), needInfo); err != nil {
		errs = append(errs, err)
	}
	// A DAO checked at start, before the store gave it a generation, is
	// kept now.
	r.keepDetails(ctx, atHead)
	r.startSweep(ctx)
	if wait {
		for r.sweeps.running() > 0 {
			errs = append(errs, r.sweeps.wait()...)
			r.startSweep(ctx) // the DAOs a failed sweep left behind wait for the next poll
			if len(errs) > 0 {
				break
			}
		}
	}
	if err := r.advance(ctx, target, tHash, tTime); err != nil {
		return r.fail(errors.Join(append(errs, err)...))
	}
	r.touchAll(nil)
	return errors.Join(errs...)
}

// loadCursors reads the cursors of the DAOs whose cursor is not known:
// every DAO when the runner starts leading (with the shared cursor and the
// DAOs with open proposals), the new ones after SetDAOs.
func (r *Runner) loadCursors(ctx context.Context) error {
	full := !r.sharedLoaded
	var todo []*daoState
	for _, d := range r.snapshot() {
		ph := r.phaseOf(d)
		if ph == phaseRefused || ph == phaseSweeping {
			continue
		}
		if full || ph == phaseNew {
			todo = append(todo, d)
		}
	}
	if !full && len(todo) == 0 {
		return nil
	}
	curs, err := r.store.Cursors(ctx, r.chainID)
	if err != nil {
		return err
	}
	if full {
		sh, ok, err := r.store.SharedCursor(ctx, r.chainID)
		if err != nil {
			return err
		}
		open, err := r.store.OpenDAOs(ctx, r.chainID)
		if err != nil {
			return err
		}
		isOpen := map[string]bool{}
		for _, s := range open {
			isOpen[s] = true
		}
		r.headMu.Lock()
		r.shared, r.ready = nil, nil
		if ok {
			r.shared = &sh
		}
		r.headMu.Unlock()
		for _, d := range todo {
			d.open = isOpen[d.dao.Slug]
		}
	}
	if err := r.recallDetails(ctx, todo); err != nil {
		return err
	}
	later := r.settleLegacy(ctx, todo, curs)
	r.headMu.Lock()
	hasShared := r.shared != nil
	r.headMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range todo {
		if later[d.dao.Slug] {
			d.phase = phaseNew // not indexed until its legacy cursor is settled
			continue
		}
		c, ok := curs[d.dao.Slug]
		switch {
		case ok && c.Joined && hasShared:
			d.phase, d.hasCursor = phaseJoined, false
		case ok:
			d.phase, d.cursor, d.hasCursor = phaseBehind, c.Cursor, true
		default:
			d.phase, d.hasCursor = phaseBehind, false
			d.cursor = Cursor{Block: max(d.dao.StartBlock, 1) - 1}
		}
		if ok {
			d.notifyFrom = c.NotifyFrom
			d.status.LastIndexedBlock = c.Block
		}
		if nf, set := configuredNotifyFrom(d.dao); set {
			d.notifyFrom = nf
		}
		if ok || d.status.NotifyFromBlock == 0 {
			d.status.NotifyFromBlock = d.notifyFrom
		}
	}
	r.sharedLoaded = true
	return nil
}

func (r *Runner) phaseOf(d *daoState) phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return d.phase
}

// advance moves the shared cursor to target: one read of the logs of every
// joined DAO (and of those joining) per range, routed to their DAOs, and
// one transaction per range. A joined DAO with no log and nothing its
// clock can change costs nothing.
func (r *Runner) advance(ctx context.Context, target uint64, tHash common.Hash, tTime uint64) error {
	r.headMu.Lock()
	defer r.headMu.Unlock()
	if r.shared == nil {
		return nil
	}
	var members, joining []*daoState
	isJoining := map[*daoState]bool{}
	r.mu.Lock()
	leaving := r.leaving
	for _, d := range r.daos {
		if d.removed.Load() {
			continue
		}
		switch d.phase {
		case phaseJoined:
			if d.info == nil {
				// Moving the shared cursor without its logs would skip them.
				r.mu.Unlock()
				return fmt.Errorf("dao %s: governor details not read yet", d.dao.Slug)
			}
			members = append(members, d)
		case phaseReady:
			members = append(members, d)
			joining = append(joining, d)
			isJoining[d] = true
		}
	}
	r.mu.Unlock()
	r.ready = nil
	sh := *r.shared
	if target <= sh.Block {
		if len(joining) == 0 && len(leaving) == 0 {
			return nil
		}
		parts := make([]core.IndexBatch, 0, len(joining))
		for _, d := range joining {
			parts = append(parts, r.emptyPart(d, sh.Block, sh.Hash))
		}
		return r.applyShared(ctx, sh, sh, parts, joining, nil, 0)
	}
	size := r.cfg.InitialRange
	for from := sh.Block + 1; from <= target; {
		to := min(from+size-1, target)
		var known *blockInfo
		if to == target {
			known = &blockInfo{hash: tHash, time: tTime}
		}
		logs, toHash, toTime, err := r.readLogs(ctx, addressesOf(members), from, to, known)
		if err != nil {
			if isRangeError(err) && to > from {
				size = max(1, (to-from+1)/2)
				r.metrics.shrink(r.chainID)
				continue
			}
			return fmt.Errorf("blocks %d-%d: %w", from, to, err)
		}
		byDAO := route(logs, members, func(*daoState) uint64 { return from - 1 })
		settle := to == target
		var jobs []partJob
		for _, d := range members {
			if dl := byDAO[d]; len(dl) > 0 || (settle && d.open) || isJoining[d] {
				jobs = append(jobs, partJob{d: d, logs: dl})
			}
		}
		built, err := r.buildParts(ctx, jobs, to, toHash, toTime, settle)
		if err != nil {
			return fmt.Errorf("blocks %d-%d: %w", from, to, err)
		}
		var parts []core.IndexBatch
		blocks := blockRefs(logs)
		for i, part := range built {
			d := jobs[i].d
			if isJoining[d] {
				part.Prev = d.ownPrev()
				part.Cursor = Cursor{Block: to, Hash: toHash.Hex(), NotifyFrom: d.notifyFrom}
			} else {
				part.Joined = true
			}
			parts = append(parts, part)
			// Blocks that a part's time-driven changes name.
			blocks = mergeRefs(blocks, part.Blocks)
		}
		next := Cursor{Block: to, Hash: toHash.Hex()}
		blocks = appendRef(blocks, BlockRef{Number: to, Hash: next.Hash})
		if err := r.applyShared(ctx, sh, next, parts, joining, blocks, to); err != nil {
			return fmt.Errorf("store blocks %d-%d: %w", from, to, err)
		}
		joining = nil
		r.moved(members, to, toTime, target)
		sh = next
		if len(logs) < growBelow && size < r.cfg.MaxRange {
			size = min(size*2, r.cfg.MaxRange)
		}
		from = to + 1
	}
	return nil
}

// applyShared writes one step of the shared cursor, from prev to next,
// with the joining DAOs joining it. headMu is held.
func (r *Runner) applyShared(ctx context.Context, prev, next Cursor, parts []core.IndexBatch, joining []*daoState, blocks []BlockRef, to uint64) error {
	b := core.ChainBatch{ChainID: r.chainID, Shared: &core.SharedMove{Prev: &prev, Next: next}, DAOs: parts, Blocks: blocks}
	for _, d := range joining {
		b.Join = append(b.Join, d.dao.Slug)
	}
	r.mu.Lock()
	b.Leave = r.leaving
	r.mu.Unlock()
	if to > r.cfg.KeepBlocks {
		b.PruneBelow = to - r.cfg.KeepBlocks
	}
	start := r.now()
	dropped, err := r.store.ApplyBatches(ctx, b)
	if err != nil {
		if errors.Is(err, ErrCursorMoved) {
			r.sharedLoaded = false // another indexer moved it: read everything again
		}
		return err
	}
	r.metrics.batch(r.chainID, r.now().Sub(start))
	r.shared = &next
	r.mu.Lock()
	r.leaving = r.leaving[len(b.Leave):]
	r.mu.Unlock()
	gone := map[string]bool{}
	for _, s := range dropped {
		gone[s] = true
	}
	r.mu.Lock()
	for _, d := range joining {
		if !gone[d.dao.Slug] {
			d.phase, d.hasCursor = phaseJoined, false
			d.caughtUp = true
		}
	}
	for _, d := range r.daos {
		if gone[d.dao.Slug] {
			// Redefined or removed meanwhile, or its cursor moved: read
			// it again (SetDAOs has or will have the news).
			d.phase = phaseNew
		}
	}
	r.mu.Unlock()
	for _, p := range parts {
		if !gone[p.DAO] {
			r.counted(p)
		}
	}
	return nil
}

// emptyPart is a DAO's part that only moves its own cursor.
func (r *Runner) emptyPart(d *daoState, block uint64, hash string) core.IndexBatch {
	p := core.IndexBatch{DAO: d.dao.Slug, ChainID: r.chainID, Prev: d.ownPrev(), Generation: d.dao.Generation,
		Cursor: Cursor{Block: block, Hash: hash, NotifyFrom: d.notifyFrom}}
	r.withGovernor(d, &p)
	return p
}

// withGovernor adds to a DAO's part what its governor said of itself,
// until a part has taken it to the store: kept with the DAO, every
// process serving it (not only this one, which read it) knows how it
// counts and what its timepoints are.
func (r *Runner) withGovernor(d *daoState, p *core.IndexBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.info != nil && !d.infoStored {
		p.Governor = &core.GovernorInfo{CountingMode: d.info.countingMode, ClockMode: d.info.clock}
	}
}

// ownPrev is the DAO's own stored cursor, nil when it has none yet.
func (d *daoState) ownPrev() *Cursor {
	if !d.hasCursor {
		return nil
	}
	c := d.cursor
	return &c
}

// buildPart folds one DAO's logs of a range into its part of a batch,
// settling its open proposals at `to` when settle is set.
func (r *Runner) buildPart(ctx context.Context, d *daoState, logs []types.Log, to uint64, toHash common.Hash, toTime uint64, settle bool, notifyFrom uint64) (core.IndexBatch, error) {
	ctx = withDAO(withPart(ctx, "settle"), d.dao.Slug)
	b := newBuilder(r, d, notifyFrom)
	if err := b.add(ctx, logs); err != nil {
		return core.IndexBatch{}, err
	}
	if settle {
		// Time-driven states are read at the end of a step: every node
		// has its state, and the crossings since the last one all show.
		if err := b.settle(ctx, to, toHash, toTime); err != nil {
			return core.IndexBatch{}, fmt.Errorf("proposal states at block %d: %w", to, err)
		}
	}
	if err := b.finish(); err != nil {
		return core.IndexBatch{}, err
	}
	open := false
	for _, t := range b.proposals {
		if t != nil && (t.p.State == core.ProposalPending || t.p.State == core.ProposalActive || t.p.State == core.ProposalQueued) {
			open = true
		}
	}
	if settle {
		d.open = open
	} else if open {
		d.open = true
	}
	b.batch.Generation = d.dao.Generation
	r.withGovernor(d, &b.batch)
	if to > r.cfg.KeepBlocks {
		b.batch.PruneBelow = to - r.cfg.KeepBlocks
	}
	r.mu.Lock()
	d.events += uint64(len(logs))
	r.mu.Unlock()
	return b.batch, nil
}

// partJob is one DAO's share of a range: the logs routed to it.
type partJob struct {
	d    *daoState
	logs []types.Log
}

// buildParts builds the parts of a range's DAOs, in the order of jobs,
// DAOConcurrency at a time: a part's eth_calls wait on the node, and the
// gateway bounds the calls in flight (max_concurrency), so DAOs with
// proposals to read no longer queue behind each other. Each DAO is in one
// job only, and its builder touches only that DAO's state.
func (r *Runner) buildParts(ctx context.Context, jobs []partJob, to uint64, toHash common.Hash, toTime uint64, settle bool) ([]core.IndexBatch, error) {
	parts := make([]core.IndexBatch, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.DAOConcurrency)
	for i, j := range jobs {
		g.Go(func() error {
			p, err := r.buildPart(gctx, j.d, j.logs, to, toHash, toTime, settle, j.d.notifyFrom)
			if err != nil {
				return fmt.Errorf("dao %s: %w", j.d.dao.Slug, err)
			}
			parts[i] = p
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return parts, nil
}

// counted tallies what a written part held, for the progress log.
func (r *Runner) counted(p core.IndexBatch) {
	r.mu.Lock()
	if d := r.bySlug[p.DAO]; d != nil {
		d.notes += uint64(len(p.Notifications))
		if p.Governor != nil {
			d.infoStored = true
		}
	}
	r.mu.Unlock()
}

// moved records that members are indexed up to block to.
func (r *Runner) moved(members []*daoState, to, toTime, target uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	t := time.Unix(int64(toTime), 0)
	for _, d := range members {
		d.lastBlockTime = t
		d.status.LastIndexedBlock = to
		d.status.LastIndexedAt = now
		d.status.LastIndexedBlockTime = t.UTC()
		d.status.LagBlocks = target - to
		d.status.LagSeconds = 0
		d.status.Backfill = nil
		d.status.NotifyFromBlock = d.notifyFrom
	}
}

// blockInfo is what a poll already knows of a block.
type blockInfo struct {
	hash common.Hash
	time uint64
}

// readLogs reads the logs of addrs over blocks from..to, and the hash and
// time of block to, in requests of at most addrLimit addresses sent
// together. A one-block range whose hash is known is read by that hash
// (EIP-234), which pins it to that block; a longer one reads the end
// block before and after the logs, and fails with errRangeRaced when a
// reorganisation changed it meanwhile (the reorg check of the next poll
// undoes what it must).
func (r *Runner) readLogs(ctx context.Context, addrs []common.Address, from, to uint64, known *blockInfo) ([]types.Log, common.Hash, uint64, error) {
	toBig := new(big.Int).SetUint64(to)
	if len(addrs) == 0 {
		if known != nil {
			return nil, known.hash, known.time, nil
		}
		_, h, t, err := r.chain.BlockStamp(ctx, toBig)
		if err != nil {
			return nil, common.Hash{}, 0, fmt.Errorf("block %d: %w", to, err)
		}
		return nil, h, t, nil
	}
	byHash := known != nil && from == to
	var before common.Hash
	var beforeTime uint64
	switch {
	case byHash:
	case known != nil:
		before, beforeTime = known.hash, known.time
	default:
		_, h, t, err := r.chain.BlockStamp(ctx, toBig)
		if err != nil {
			return nil, common.Hash{}, 0, fmt.Errorf("block %d: %w", to, err)
		}
		before, beforeTime = h, t
	}
	chunks := chunk(addrs, r.addrLimit)
	results := make([][]types.Log, len(chunks))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for i, part := range chunks {
		q := ethereum.FilterQuery{Addresses: part, Topics: [][]common.Hash{allTopics}}
		if byHash {
			h := known.hash
			q.BlockHash = &h
		} else {
			q.FromBlock, q.ToBlock = new(big.Int).SetUint64(from), toBig
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = r.chain.FilterLogs(ctx, q)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range errs {
			if isRangeError(e) {
				return nil, common.Hash{}, 0, e
			}
		}
		return nil, common.Hash{}, 0, err
	}
	var logs []types.Log
	for _, res := range results {
		logs = append(logs, res...)
	}
	if len(chunks) > 1 {
		sort.SliceStable(logs, func(i, j int) bool {
			if logs[i].BlockNumber != logs[j].BlockNumber {
				return logs[i].BlockNumber < logs[j].BlockNumber
			}
			return logs[i].Index < logs[j].Index
		})
	}
	if byHash {
		return logs, known.hash, known.time, nil
	}
	_, after, _, err := r.chain.BlockStamp(ctx, toBig)
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
	return logs, after, beforeTime, nil
}

// errRangeRaced is a range whose end block changed while it was read.
var errRangeRaced = errors.New("chain reorganised while reading a range")

func chunk(addrs []common.Address, n int) [][]common.Address {
	var out [][]common.Address
	for i := 0; i < len(addrs); i += n {
		out = append(out, addrs[i:min(i+n, len(addrs))])
	}
	return out
}

// addressesOf returns the governors and voting tokens of the DAOs, each
// address once (DAOs may share a token).
func addressesOf(list []*daoState) []common.Address {
	seen := make(map[common.Address]bool, 2*len(list))
	out := make([]common.Address, 0, 2*len(list))
	add := func(a common.Address) {
		if a != (common.Address{}) && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, d := range list {
		add(d.governor)
		if d.info != nil {
			add(d.info.token)
		}
	}
	return out
}

// route hands each log to the DAOs whose governor or token emitted it,
// above the block each DAO is indexed to (after(d)) and from its start
// block on, in chain order.
func route(logs []types.Log, list []*daoState, after func(*daoState) uint64) map[*daoState][]types.Log {
	owners := make(map[common.Address][]*daoState, 2*len(list))
	for _, d := range list {
		owners[d.governor] = append(owners[d.governor], d)
		if d.info != nil && d.info.token != (common.Address{}) && d.info.token != d.governor {
			owners[d.info.token] = append(owners[d.info.token], d)
		}
	}
	out := map[*daoState][]types.Log{}
	for i := range logs {
		l := &logs[i]
		for _, d := range owners[l.Address] {
			if l.BlockNumber > after(d) && l.BlockNumber >= d.dao.StartBlock {
				out[d] = append(out[d], *l)
			}
		}
	}
	return out
}

func blockRefs(logs []types.Log) []BlockRef {
	var out []BlockRef
	for i := range logs {
		if n := len(out); n == 0 || out[n-1].Number != logs[i].BlockNumber {
			out = append(out, BlockRef{Number: logs[i].BlockNumber, Hash: logs[i].BlockHash.Hex()})
		}
	}
	return out
}

// mergeRefs returns refs and more in block order, one ref a block.
func mergeRefs(refs, more []BlockRef) []BlockRef {
	out := append(append([]BlockRef(nil), refs...), more...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	n := 0
	for _, r := range out {
		if n > 0 && out[n-1].Number == r.Number {
			continue
		}
		out[n] = r
		n++
	}
	return out[:n]
}

func appendRef(refs []BlockRef, ref BlockRef) []BlockRef {
	if n := len(refs); n > 0 && refs[n-1].Number == ref.Number {
		return refs
	}
	return append(refs, ref)
}

// checkReorg compares the highest remembered block with the chain and, if
// the chain no longer has it, finds the highest remembered block it still
// has and rolls the store back to it. It reports whether it rolled back.
func (r *Runner) checkReorg(ctx context.Context, head uint64) (bool, error) {
	ctx = withPart(ctx, "reorg")
	refs, err := r.store.RecentBlocks(ctx, r.chainID, int(r.cfg.KeepBlocks))
	if err != nil {
		return false, fmt.Errorf("recent blocks: %w", err)
	}
	if len(refs) == 0 {
		return false, nil
	}
	ok, err := r.canonical(ctx, refs[0], head)
	if err != nil || ok {
		return false, err
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
		return false, searchErr
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
	r.log.Warn("chain reorganised: rolling back; notifications of the orphaned blocks get a notification.orphaned each",
		"from_block", refs[0].Number, "common_ancestor", to.Number, "depth", refs[0].Number-to.Number)
	// Sweeps write below the head: stop them before the store moves back.
	r.sweeps.stop()
	if err := r.store.Rollback(ctx, r.chainID, to); err != nil {
		return false, fmt.Errorf("roll back to block %d: %w", to.Number, err)
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
	return true, nil
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
