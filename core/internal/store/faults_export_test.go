package store

import "time"

// WithSQLiteDriver returns opts with SQLite opened through the database/sql
// driver registered as name: a fault-injecting wrapper of the real one.
func WithSQLiteDriver(opts Options, name string) Options {
	opts.sqliteDriver = name
	return opts
}

// SetNow replaces the store's clock: a test moves time past a lease
// instead of sleeping through it.
func SetNow(s *Store, now func() time.Time) { s.now = now }
