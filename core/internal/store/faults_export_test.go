package store

// WithSQLiteDriver returns opts with SQLite opened through the database/sql
// driver registered as name: a fault-injecting wrapper of the real one.
func WithSQLiteDriver(opts Options, name string) Options {
	opts.sqliteDriver = name
	return opts
}
