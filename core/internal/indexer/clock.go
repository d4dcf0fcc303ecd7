package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/govgate/govgate/core"
)

// The governor's own clock
//
// A governor's timepoints (voteStart, voteEnd, snapshots) are its ERC-6372
// clock(): usually the block number or the block time, but on an L2 such as
// Arbitrum One a token's block-number clock counts layer-1 blocks, far
// from the chain's own numbers. The indexer never assumes either: it reads
// clock() at the confirmed head to decide which timepoints were crossed,
// and finds the first block past a timepoint by reading clock() at a few
// blocks (crossingBlock).

// clockState is what a DAO's indexing remembers of its governor's clock.
type clockState struct {
	// clocks caches clock() by block; it is cleared when it grows past
	// maxClockCache.
	clocks map[uint64]uint64
	// settled is the last block at which settle brought every open
	// proposal up to date (0: none since start).
	settled uint64
	// pace is the seconds per clock unit, sampled at paceBlock.
	pace      float64
	paceBlock uint64
}

const maxClockCache = 4096

// clockAt returns the governor's clock at block.
func (b *builder) clockAt(ctx context.Context, block uint64) (uint64, error) {
	d := b.d
	if v, ok := d.clocks[block]; ok {
		return v, nil
	}
	v, err := caller{r: b.r, d: d, governor: d.governor}.clockAt(ctx, block)
	if err != nil {
		return 0, err
	}
	if d.clocks == nil || len(d.clocks) >= maxClockCache {
		d.clocks = map[uint64]uint64{}
	}
	d.clocks[block] = v
	return v, nil
}

// crossingBlock returns the first block after the proposal's last known
// block and at most hi whose clock is past timepoint: where state() moved
// on. At hi the clock is known to be past it (an event or state() proved
// it). It reads clock() at a few blocks: each step guesses the block by
// interpolating the clock between the bounds, exact in one step for a
// clock that moves with the block number (shifted or not), and every
// other step halves the range, so an irregular clock costs at most about
// twice log2 of the range. A block whose state the node no longer serves
// (a pruned node, far behind) ends the search at the best bound known.
func (b *builder) crossingBlock(ctx context.Context, t *tracked, timepoint, hi uint64) (uint64, error) {
	lo := max(t.p.CreatedBlock, t.p.UpdatedBlock)
	if s := b.d.settled; s > lo && s < hi {
		if c, ok := b.d.clocks[s]; ok && c <= timepoint {
			lo = s
		}
	}
	if hi <= lo+1 {
		return hi, nil
	}
	return b.firstPast(ctx, lo, hi, timepoint, b.clockAt)
}

// expiryBlock returns the first block after the proposal's last known block
// and at most hi whose time is at or past its ETA plus the grace period:
// where a Compound-style timelock's proposal expired.
func (b *builder) expiryBlock(ctx context.Context, t *tracked, hi uint64) (uint64, error) {
	lo := max(t.p.CreatedBlock, t.p.UpdatedBlock)
	if hi <= lo+1 {
		return hi, nil
	}
	timeAt := func(ctx context.Context, block uint64) (uint64, error) {
		at, _, err := b.stampOf(ctx, block)
		return uint64(at.Unix()), err
	}
	return b.firstPast(ctx, lo, hi, t.p.ETA+b.d.info.grace-1, timeAt)
}

// firstPast returns the first block in (lo, hi] where f is past threshold,
// f being monotonic; f(hi) is known to be past it.
func (b *builder) firstPast(ctx context.Context, lo, hi, threshold uint64, f func(context.Context, uint64) (uint64, error)) (uint64, error) {
	fall := func(err error) (uint64, error) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		b.r.log.Debug("crossing block search stopped", "dao", b.d.dao.Slug, "from", lo, "to", hi, "err", err)
		return hi, nil
	}
	flo, err := f(ctx, lo)
	if err != nil {
		return fall(err)
	}
	if flo > threshold {
		return lo + 1, nil // already past at lo: the earliest block still open
	}
	fhi, err := f(ctx, hi)
	if err != nil {
		return fall(err)
	}
	if fhi <= threshold {
		return hi, nil // not past by f: trust what proved it
	}
	for step := 0; hi-lo > 1; step++ {
		var guess uint64
		if step%2 == 0 {
			// Where a clock moving steadily between the bounds passes.
			num := new(big.Int).SetUint64(threshold + 1 - flo)
			num.Mul(num, new(big.Int).SetUint64(hi-lo))
			num.Div(num, new(big.Int).SetUint64(fhi-flo))
			guess = lo + num.Uint64()
		} else {
			guess = lo + (hi-lo)/2
		}
		guess = min(max(guess, lo+1), hi-1)
		v, err := f(ctx, guess)
		if err != nil {
			return fall(err)
		}
		if v > threshold {
			hi, fhi = guess, v
		} else {
			lo, flo = guess, v
		}
	}
	return hi, nil
}

// stampOf returns a block's time and hash, from the batch's logs when it
// has one of that block, else from the node.
func (b *builder) stampOf(ctx context.Context, block uint64) (time.Time, string, error) {
	if t, ok := b.blockTimes[block]; ok {
		if h, ok := b.blockHashes[block]; ok {
			return t, h, nil
		}
	}
	_, hash, ts, err := b.r.chain.BlockStamp(ctx, new(big.Int).SetUint64(block))
	if err != nil {
		return time.Time{}, "", fmt.Errorf("block %d: %w", block, err)
	}
	t := time.Unix(int64(ts), 0).UTC()
	b.blockTimes[block], b.blockHashes[block] = t, hash.Hex()
	return t, hash.Hex(), nil
}

// stampTimepoints sets the governor's clock on the token events added since
// the last call: the timepoint of the checkpoint each wrote, which
// getPastVotes takes. It reads clock() at the first and last block with
// events; where the clock moved with the block number (a block-number
// clock) or with the block time (a timestamp clock) by the same offset at
// both, that offset holds between them (a clock is monotonic and, moving
// as far as the blocks or seconds did, moved with them); otherwise each
// block with events is read.
func (b *builder) stampTimepoints(ctx context.Context) error {
	evs := b.batch.TokenEvents[b.untimed:]
	b.untimed = len(b.batch.TokenEvents)
	if len(evs) == 0 {
		return nil
	}
	first, last := evs[0], evs[len(evs)-1]
	unit := func(e core.TokenEvent) uint64 {
		if b.d.info.clock == core.ClockTimestamp {
			return uint64(e.At.Unix())
		}
		return e.BlockNumber
	}
	c0, err0 := b.clockAt(ctx, first.BlockNumber)
	c1, err1 := b.clockAt(ctx, last.BlockNumber)
	if err := errors.Join(err0, err1); err != nil {
		if !isMissingState(err) {
			return fmt.Errorf("clock at blocks %d-%d: %w", first.BlockNumber, last.BlockNumber, err)
		}
		// A node that no longer serves those blocks' state (a backfill
		// far behind a pruned node): the offset the clock has at the
		// head is the best that can be known of it then.
		head, _, headTime, err := b.r.chain.BlockStamp(ctx, nil)
		if err != nil {
			return fmt.Errorf("head: %w", err)
		}
		ch, err := b.clockAt(ctx, head)
		if err != nil {
			return fmt.Errorf("clock at the head: %w", err)
		}
		headUnit := head
		if b.d.info.clock == core.ClockTimestamp {
			headUnit = headTime
		}
		b.r.log.Debug("clock of past blocks not served; using the head's offset", "dao", b.d.dao.Slug, "from", first.BlockNumber, "to", last.BlockNumber)
		for i := range evs {
			evs[i].Timepoint = unit(evs[i]) + (ch - headUnit)
		}
		return nil
	}
	steady := c0-unit(first) == c1-unit(last)
	for i := range evs {
		e := &evs[i]
		if steady {
			e.Timepoint = unit(*e) + (c0 - unit(first))
			continue
		}
		var err error
		if e.Timepoint, err = b.clockAt(ctx, e.BlockNumber); err != nil {
			return fmt.Errorf("clock at block %d: %w", e.BlockNumber, err)
		}
	}
	return nil
}

// isMissingState recognises a node refusing a call at a block whose state it
// has pruned.
func isMissingState(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, h := range []string{"missing trie node", "state not available", "historical state", "state is not available", "pruned"} {
		if strings.Contains(msg, h) {
			return true
		}
	}
	return false
}
