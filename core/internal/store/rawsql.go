package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
)

// The delivery queue's hot paths (claim and complete) use database/sql
// directly: GORM's Raw(...).Scan renders every statement with its values for
// its trace recorder, which costs more than the statement itself for a
// batch of a hundred rows.

// querier runs statements: the *sql.DB, or a transaction's *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// preparer prepares a statement on a transaction's connection.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// txPrepare prepares query on the connection of the transaction under tx.
// On SQLite, where a statement costs no round trip, a batch runs one
// prepared single-row statement per row: a VALUES list of a hundred rows is
// parsed anew each time, and the driver binds each of its parameters by a
// search through all of them.
func txPrepare(tx *gorm.DB, query string) (*sql.Stmt, error) {
	p, ok := tx.Statement.ConnPool.(preparer)
	if !ok {
		return nil, fmt.Errorf("prepare: %T cannot prepare statements", tx.Statement.ConnPool)
	}
	return p.PrepareContext(tx.Statement.Context, query)
}

// pool is the store's database/sql handle.
func (s *Store) pool() querier {
	db, _ := s.db.DB()
	return db
}

// txQuerier is the database/sql transaction under a GORM transaction.
func txQuerier(tx *gorm.DB) querier { return tx.Statement.ConnPool }

// bind rewrites ? placeholders as $1, $2 … for PostgreSQL. The queries it
// is given hold no ? inside literals.
func (s *Store) bind(query string) string { return s.bindFrom(query, 1) }

// bindFrom is bind numbering from $first, for a fragment placed after a
// statement's own parameters.
func (s *Store) bindFrom(query string, first int) string { return s.dialect.bindFrom(query, first) }

// marks returns n comma-separated placeholders.
func marks(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// pgBatch runs fn on one pgx connection of the pool (PostgreSQL), for
// statements sent together in one round trip (pgx.Batch). A transaction
// that fn leaves open, as a failed batch does, is rolled back before the
// connection goes back to the pool.
func (s *Store) pgBatch(ctx context.Context, fn func(c *pgx.Conn) error) error {
	db, err := s.db.DB()
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c := dc.(*stdlib.Conn).Conn()
		err := fn(c)
		if c.PgConn().TxStatus() != 'I' {
			if _, rerr := c.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && err == nil {
				err = rerr
			}
		}
		return err
	})
}
