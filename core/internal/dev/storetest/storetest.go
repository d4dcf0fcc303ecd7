// Package storetest runs a test on every database the store supports: an
// embedded SQLite file and a throw-away PostgreSQL database on the test
// binary's own server (pgtest), each test on a database of its own. It is
// the one place the suites that need a store (store, httpapi, delivery,
// webui, pluginmgr, e2e) get one, so that adding a database adds it to all
// of them.
//
// PostgreSQL is started from the binaries installed on the machine. When
// they are missing a PostgreSQL test skips with a message saying so, except
// under CI=true, where it fails: CI must exercise both databases.
package storetest

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/dev/pgtest"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

// Backend is one database a store runs on.
type Backend struct {
	// Name is the database's name, "sqlite" or "postgres": the name of the
	// subtest that runs on it.
	Name string
	// newDatabase creates an empty database for t and returns its URL.
	newDatabase func(t testing.TB) string
}

var (
	// SQLite is an embedded SQLite file in the test's temporary directory.
	SQLite = Backend{Name: "sqlite", newDatabase: func(t testing.TB) string {
		return "sqlite:" + filepath.Join(t.TempDir(), "govgate.db")
	}}
	// Postgres is a database of its own on the test binary's PostgreSQL
	// server, dropped when the test ends.
	Postgres = Backend{Name: "postgres", newDatabase: func(t testing.TB) string {
		return pgtest.Shared(t).NewDatabase(t)
	}}
)

// Backends are the databases every store-backed test runs on.
func Backends() []Backend { return []Backend{SQLite, Postgres} }

// Run runs fn as a subtest on each backend, named after it. A subtest that
// can run beside the other calls t.Parallel itself.
func Run(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// Each runs fn as a subtest on each backend with a store open on a new
// database.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	Run(t, func(t *testing.T, b Backend) { fn(t, b.Open(t, store.Options{})) })
}

// NewDatabase creates an empty database for t, removed when t ends, and
// returns the URL that store.Open takes: "sqlite:PATH" or "postgres://…".
func (b Backend) NewDatabase(t testing.TB) string {
	t.Helper()
	return b.newDatabase(t)
}

// Open opens a store on a new database with a key of its own; the store is
// closed when t ends.
func (b Backend) Open(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	return Open(t, b.NewDatabase(t), NewBox(t), opts)
}

// Open opens the store at url, as a govgate process does, and closes it
// when t ends. Stores opened on one url stand for processes sharing a
// database; they must share box to read each other's secrets.
func Open(t testing.TB, url string, box *secrets.Box, opts store.Options) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), url, box, opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// NewBox returns a secrets box with a random key.
func NewBox(t testing.TB) *secrets.Box {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secrets.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// Path is the file of a SQLite URL, "" for any other.
func Path(url string) string {
	if p, ok := strings.CutPrefix(url, "sqlite:"); ok {
		return p
	}
	return ""
}

// Main runs a test binary's tests and then stops the PostgreSQL server they
// started, if any: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the PostgreSQL server that the test binary's databases are
// on, if it started one: a TestMain that cannot use Main (it has more to
// do after the tests) calls it after m.Run.
func Stop() { pgtest.StopShared() }
