package store

import (
	"context"
	"database/sql"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// dialect is what differs between the databases a Store runs on. Every
// place the store's SQL or its algorithm depends on the database asks its
// dialect, so that the rest of the store reads the same for both and a
// caller never asks which database it is on. The implementations are
// postgres (dialect_postgres.go) and sqlite (dialect_sqlite.go).
//
// A method that is a whole algorithm of its own on one database (a claim
// that skips other claimers' locked rows, a batch sent as arrays) is that
// algorithm; the Store it is given supplies the connection, clock and
// secrets.
type dialect interface {
	// name is the database's name.
	name() Dialect
	// bindFrom rewrites a statement's ? placeholders as the driver wants
	// them, numbering from first for a fragment placed after a
	// statement's own parameters.
	bindFrom(query string, first int) string
	// lockForUpdate makes q, a read in a transaction, lock the rows it
	// reads until the transaction ends.
	lockForUpdate(q *gorm.DB) *gorm.DB
	// containsFormat is a condition, with %s for a column and ? for a
	// string, true when the column's text contains the string.
	containsFormat() string
	// greatest is the SQL function returning the greatest of its
	// arguments.
	greatest() string
	// rowsPerInsert is how many rows one multi-row INSERT writes.
	rowsPerInsert() int
	// configurePool sizes the connection pool; maxOpen is Options'.
	configurePool(db *sql.DB, maxOpen int)
	// migrate runs the pending migrations.
	migrate(ctx context.Context, db *gorm.DB) error
	// serializeSeeding makes the seeding transactions tx of processes
	// starting together run one after the other.
	serializeSeeding(tx *gorm.DB) error
	// tableBytes is the bytes tables take with their indexes, 0 where the
	// database has no such figure.
	tableBytes(ctx context.Context, db *gorm.DB, tables ...string) (int64, error)
	// tryChainLock takes a chain's indexer lease for s if nobody holds it.
	tryChainLock(ctx context.Context, s *Store, chainID uint64, l *ChainLease) (bool, error)

	// claim leases up to the limit of due deliveries whose condition is
	// where (with args, then the limit last), until until, under token.
	claim(ctx context.Context, s *Store, where string, args []any, token string, now, until time.Time) ([]core.Job, error)
	// release hands claimed deliveries back without counting an attempt,
	// due at next.
	release(ctx context.Context, s *Store, jobs []core.Job, next, now time.Time) error
	// completeFast completes results by a way of the dialect's own where
	// one fits them, handing on ordered lines within r (see
	// Store.CompleteHandingOn); done reports whether it did.
	completeFast(ctx context.Context, s *Store, results []core.AttemptResult, disableAfter time.Duration, r core.Reservation) (deactivated []int64, next []core.Job, done bool, err error)
	// lookUpByKey readies a completion's transaction for statements that
	// look every row up by its primary key.
	lookUpByKey(tx *gorm.DB) error
	// updateFinished moves the deliveries of f whose lease is still held
	// to their next state and returns their ids.
	updateFinished(tx *gorm.DB, results []core.AttemptResult, f finishedBatch, now time.Time) (map[int64]bool, error)
	// insertAttempts appends attempts to the attempt log.
	insertAttempts(tx *gorm.DB, attempts []attemptRow) error
	// createNotification stores n with its deliveries, as
	// CreateNotificationHandoff, reserving r's in flight.
	createNotification(ctx context.Context, s *Store, n core.Notification, source string, r core.Reservation, traceParent string) (fanOut, error)
	// insertNotificationTx stores n with its deliveries in the caller's
	// transaction tx.
	insertNotificationTx(tx *gorm.DB, s *Store, n core.Notification, source string, traceParent string) (fanOut, error)
	// lockLines locks ordered webhooks' rows (ids sorted, distinct, not
	// empty) for promoting their lines, until tx ends.
	lockLines(tx *gorm.DB, ids []int64) error
	// promoteLines is Store.promoteLines for ids (sorted, distinct, not
	// empty) in the caller's transaction tx.
	promoteLines(tx *gorm.DB, ids []int64, now time.Time) (int, error)

	// insertTokenEvents appends a batch's events to the event log.
	insertTokenEvents(tx *gorm.DB, rows []tokenEventRow) error
	// upsertDelegations writes a batch's delegation rows.
	upsertDelegations(tx *gorm.DB, list []delegationRow, conflict string) error
	// upsertDelegates writes a batch's delegate rows.
	upsertDelegates(tx *gorm.DB, out []delegateRow, cols, conflict string) error
}

// finished are a completion's deliveries, one entry each in results'
// order: what finishDeliveries writes.
type finishedBatch struct {
	ids                  []int64
	tokens, states, errs []string
	next                 []time.Time
	status               []int32
}
