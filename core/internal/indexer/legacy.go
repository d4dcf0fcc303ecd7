package indexer

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
)

// A legacy cursor was written before DAOs had generations (generation 0):
// for whichever DAO the configuration file then named under its slug. The
// store cannot say which governor that was, and refuses to write a DAO of
// a generation over it until the indexer settles it, before indexing the
// DAO:
//
//   - the index holds a governor event (a proposal's creation or a vote):
//     one eth_getLogs at that event's block tells whether the DAO's
//     governor emitted it. If it did, the index is the DAO's and its cursor
//     stays where it is; if not, the slug named another governor, and the
//     DAO is indexed afresh, as a new DAO (its history not pushed).
//   - the index holds no governor event: it cannot say which governor it
//     followed, so the DAO is indexed again from its start block, which
//     costs a catch-up and changes nothing if the governor is the same;
//     what follows the old cursor is pushed, as it would have been.
//
// The store deletes the legacy index of a slug that no DAO names any more,
// or whose DAO is on another chain, when it seeds the file's DAOs.

// settleLegacy settles the legacy cursors among curs of the DAOs of list
// (curs is updated to what the store holds after). It returns the DAOs
// that could not be settled now (the chain or the store did not answer, or
// the DAO changed meanwhile): they are read again at the next poll.
func (r *Runner) settleLegacy(ctx context.Context, list []*daoState, curs map[string]core.DAOCursor) map[string]bool {
	var legacy []*daoState
	for _, d := range list {
		if c, ok := curs[d.dao.Slug]; ok && c.Generation == 0 && d.dao.Generation > 0 {
			legacy = append(legacy, d)
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	ctx = withPart(ctx, "probe")
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		later = map[string]bool{}
		slots = make(chan struct{}, r.cfg.ProbeConcurrency)
	)
	for _, d := range legacy {
		old := curs[d.dao.Slug]
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			next, keep, err := r.settle(withDAO(ctx, d.dao.Slug), d, old)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				later[d.dao.Slug] = true
				r.log.Warn("could not settle an index written before the upgrade; tried again at the next poll", "dao", d.dao.Slug, "err", err)
			case keep:
				old.Generation = d.dao.Generation
				curs[d.dao.Slug] = old
			case next != nil:
				curs[d.dao.Slug] = core.DAOCursor{Cursor: *next, Generation: d.dao.Generation}
			default:
				delete(curs, d.dao.Slug)
			}
		}()
	}
	wg.Wait()
	return later
}

// settle decides whose the legacy cursor old is and tells the store. It
// returns keep when the index is the DAO's, or the cursor the DAO starts
// again from (nil: none, a new DAO).
func (r *Runner) settle(ctx context.Context, d *daoState, old core.DAOCursor) (next *Cursor, keep bool, err error) {
	block, tx, found, err := r.store.GovernorEvent(ctx, d.dao.Slug)
	if err != nil {
		return nil, false, err
	}
	if found {
		logs, err := r.chain.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(block), ToBlock: new(big.Int).SetUint64(block),
			Addresses: []common.Address{d.governor}})
		if err != nil {
			return nil, false, fmt.Errorf("governor logs of block %d: %w", block, err)
		}
		for _, l := range logs {
			if strings.EqualFold(l.TxHash.Hex(), tx) {
				keep = true
				break
			}
		}
	} else {
		// Nothing in the index says which governor it followed: index the
		// DAO again from its start, pushing from where the old index
		// stood on.
		next = &Cursor{Block: max(d.dao.StartBlock, 1) - 1, NotifyFrom: max(old.NotifyFrom, old.Block+1)}
	}
	ok, err := r.store.SettleLegacyCursor(ctx, d.dao.Slug, d.dao.Generation, keep, next)
	switch {
	case err != nil:
		return nil, false, err
	case !ok:
		return nil, false, fmt.Errorf("the cursor or the dao changed meanwhile")
	case keep:
		r.log.Info("index written before the upgrade kept: it follows this governor", "dao", d.dao.Slug, "block", old.Block)
	case found:
		r.log.Warn("index written before the upgrade dropped: it followed another governor under this slug; the DAO is indexed anew, its history not pushed",
			"dao", d.dao.Slug, "governor", d.dao.Governor, "evidence_block", block, "evidence_tx", tx)
	default:
		r.log.Info("index written before the upgrade holds no governor event to check it by: the DAO is indexed again from its start block, pushing from the block after the old cursor",
			"dao", d.dao.Slug, "old_cursor", old.Block, "notify_from", next.NotifyFrom)
	}
	return next, keep, nil
}
