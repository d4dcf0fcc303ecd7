package indexer

import (
	"context"
	"sync"

	"github.com/govgate/govgate/core"
)

// The indexer's records are govgate's domain types (core/governance.go);
// these aliases let this package read on its own.
type (
	// Cursor is how far a DAO has been indexed: every block up to and
	// including Block is in the store.
	Cursor = core.Cursor
	// BlockRef is a block the indexer has seen, kept to detect reorganisations.
	BlockRef = core.BlockRef
	// Proposal is a proposal as it stood at the end of block UpdatedBlock.
	Proposal = core.Proposal
	// Vote is one VoteCast or VoteCastWithParams event.
	Vote = core.Vote
	// Batch is what one indexing step writes, all or nothing. Its Prev field
	// fences concurrent indexers: the store refuses a batch built on a
	// cursor that has since moved, with ErrCursorMoved. Proposals holds one
	// revision per proposal per block in which it changed, in block order.
	Batch = core.IndexBatch
)

// ErrCursorMoved is returned (wrapped) by Store.ApplyBatch when the stored
// cursor is not Batch.Prev: another indexer moved it.
var ErrCursorMoved = core.ErrCursorMoved

// Store is the indexer's storage, implemented by core/internal/store. STORE.md in
// this directory describes the tables it expects. Every method is safe for
// concurrent use.
type Store interface {
	// SharedCursor returns the chain's shared cursor (core.ChainBatch);
	// false if the chain has none yet.
	SharedCursor(ctx context.Context, chainID uint64) (Cursor, bool, error)
	// Cursors returns the cursor of every DAO indexed on the chain, by
	// slug; a joined DAO's block and hash are the shared cursor's.
	Cursors(ctx context.Context, chainID uint64) (map[string]core.DAOCursor, error)
	// OpenDAOs returns the DAOs of the chain that have pending, active or
	// queued proposals: those whose states the chain's clock can change.
	OpenDAOs(ctx context.Context, chainID uint64) ([]string, error)
	// RecentBlocks returns up to limit block refs of the chain, highest first.
	RecentBlocks(ctx context.Context, chainID uint64, limit int) ([]BlockRef, error)
	// Proposal returns the latest revision of a proposal.
	Proposal(ctx context.Context, daoSlug, proposalID string) (Proposal, bool, error)
	// OpenProposals returns the latest revision of the DAO's pending,
	// active and queued proposals: those whose state the chain's clock can
	// change.
	OpenProposals(ctx context.Context, daoSlug string) ([]Proposal, error)
	// GovernorDetails returns what probes learned of the governors of the
	// chain's DAOs (SaveGovernorDetails), by slug, for each DAO's current
	// generation only.
	GovernorDetails(ctx context.Context, chainID uint64) (map[string]core.GovernorDetails, error)
	// SaveGovernorDetails keeps what probes learned, each for its DAO's
	// generation.
	SaveGovernorDetails(ctx context.Context, details []core.GovernorDetails) error
	// GovernorEvent returns the block and transaction of the latest
	// governor event (a proposal's creation or a vote) stored of the DAO;
	// false when there is none. It is how the indexer checks a legacy
	// cursor (legacy.go).
	GovernorEvent(ctx context.Context, dao string) (block uint64, tx string, ok bool, err error)
	// SettleLegacyCursor makes a legacy cursor (generation 0) of the DAO
	// its generation gen's: with keep, as it stands; without, what was
	// indexed of the slug is deleted and, with restart, the DAO's cursor
	// starts again there. False, changing nothing, when the cursor is not
	// legacy any more or the DAO's generation is not gen.
	SettleLegacyCursor(ctx context.Context, dao string, gen int64, keep bool, restart *Cursor) (bool, error)
	// ApplyBatches writes one step of the chain in one transaction (see
	// core.ChainBatch) and returns the DAOs whose parts no longer applied.
	ApplyBatches(ctx context.Context, b core.ChainBatch) (dropped []string, err error)
	// Rollback undoes everything indexed above block to.Number on the chain,
	// in one transaction: it deletes votes and block refs above it, deletes
	// proposals created above it, restores proposals changed above it from
	// their latest revision at or below it (and deletes the later
	// revisions), and moves every cursor of the chain that is above it back
	// to it, the shared cursor with them. Notifications stay: they may
	// already be delivered. Those of the blocks rolled back (a reorg deeper
	// than the confirmations) are marked orphaned, each with a
	// notification.orphaned notice for the receivers.
	Rollback(ctx context.Context, chainID uint64, to BlockRef) error
}

// A Lease is the right to index one chain, held by one govgate process at a
// time.
type Lease interface {
	// Done is closed when the lease is lost (its database session ended, a
	// renewal failed): the holder stops writing at once.
	Done() <-chan struct{}
	// Release gives the lease up; it is safe to call more than once.
	Release()
}

// Locker hands out leases, so that of several govgate processes sharing a
// database one indexes a chain and another takes over within seconds of its
// death. core/internal/store implements it on PostgreSQL (see STORE.md); LocalLocker
// serves a single process.
type Locker interface {
	// TryLock returns a lease on chainID, or false if another holder has it.
	// It does not wait.
	TryLock(ctx context.Context, chainID uint64) (Lease, bool, error)
}

// LocalLocker is a Locker for one process (SQLite, tests): leases are only
// exclusive within it.
type LocalLocker struct {
	mu   sync.Mutex
	held map[uint64]bool
}

// NewLocalLocker returns an in-process Locker.
func NewLocalLocker() *LocalLocker { return &LocalLocker{held: map[uint64]bool{}} }

// TryLock implements Locker.
func (l *LocalLocker) TryLock(_ context.Context, chainID uint64) (Lease, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[chainID] {
		return nil, false, nil
	}
	l.held[chainID] = true
	return &localLease{l: l, chainID: chainID, done: make(chan struct{})}, true, nil
}

type localLease struct {
	l       *LocalLocker
	chainID uint64
	once    sync.Once
	done    chan struct{}
}

func (s *localLease) Done() <-chan struct{} { return s.done }

func (s *localLease) Release() {
	s.once.Do(func() {
		s.l.mu.Lock()
		delete(s.l.held, s.chainID)
		s.l.mu.Unlock()
		close(s.done)
	})
}
