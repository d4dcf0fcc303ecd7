// Package store is govgate's persistence: webhooks, notifications, the
// delivery queue and its attempt log, on PostgreSQL or an embedded pure-Go
// SQLite, through GORM and versioned migrations. The queue lives here, in
// the same database as everything else, so an accepted notification is never
// only in memory.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	sqlitedriver "github.com/libtnb/sqlite"
	pgdriver "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/govgate/govgate/core"
)

// Cipher seals webhook secrets before they reach the database.
type Cipher interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(ciphertext, aad []byte) ([]byte, error)
}

// Dialect names the database behind a Store.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Store is the GORM-backed store.
type Store struct {
	db      *gorm.DB
	dialect dialect
	cipher  Cipher
	log     *slog.Logger
	now     func() time.Time
	tracer  NotificationTracer // nil: tracing off
	// settingsUntil is when, in Unix nanoseconds, this store's fan-outs
	// next try the plain statements, after one found an active webhook
	// with a subscription or ordering (see plainFanOut).
	settingsUntil atomic.Int64
}

// Options tune Open.
type Options struct {
	Logger *slog.Logger
	// MaxOpenConns caps PostgreSQL connections (default 20). SQLite always
	// uses one writer connection.
	MaxOpenConns int
	// Tracer starts each new notification's trace; nil (the default) stores
	// no trace context and costs nothing.
	Tracer NotificationTracer

	// sqliteDriver is the database/sql driver of SQLite: "" for the
	// default; tests put a fault-injecting wrapper in (export_test.go).
	sqliteDriver string
}

// Open connects to url ("sqlite:PATH" or "postgres://…"), runs pending
// migrations and returns the store.
func Open(ctx context.Context, url string, cipher Cipher, opts Options) (*Store, error) {
	if cipher == nil {
		return nil, errors.New("open store: a secret cipher is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	gcfg := &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
	var (
		db  *gorm.DB
		d   dialect
		err error
	)
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" {
			return nil, errors.New("open store: sqlite: empty path")
		}
		if path != ":memory:" {
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return nil, fmt.Errorf("open store: %w", err)
			}
		}
		// WAL lets readers run beside the writer; synchronous(FULL) makes a
		// commit durable before govgate acknowledges it. Times are stored as
		// "2006-01-02 15:04:05.999999999-07:00" in UTC, text that sorts as
		// the time does: the queue compares them in SQL, and databases
		// written by earlier versions hold that form.
		dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_time_format=sqlite"
		db, err = gorm.Open(sqlitedriver.New(sqlitedriver.Config{DriverName: opts.sqliteDriver, DSN: dsn}), gcfg)
		d = sqlite{}
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		db, err = gorm.Open(pgdriver.Open(url), gcfg)
		d = postgres{}
	default:
		return nil, fmt.Errorf("open store: unsupported database url (want sqlite:PATH or postgres://…)")
	}
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	d.configurePool(sqlDB, opts.MaxOpenConns)
	s := &Store{db: db, dialect: d, cipher: cipher, log: log, now: func() time.Time { return time.Now().UTC() }, tracer: opts.Tracer}
	if err := d.migrate(ctx, db); err != nil {
		return nil, errors.Join(err, sqlDB.Close())
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Dialect reports which database the store uses.
func (s *Store) Dialect() Dialect { return s.dialect.name() }

// DB exposes the GORM handle to sibling files and tests.
func (s *Store) DB() *gorm.DB { return s.db }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

func notFound(what string) error {
	return core.Errorf(core.ECodeNotFound, "%s not found", what)
}
