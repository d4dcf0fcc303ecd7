// Package pgtest starts a real PostgreSQL server for tests from the binaries
// installed on the machine (initdb and pg_ctl in a temporary directory, on a
// free port), and hands each test a database of its own. When the binaries
// are missing a test skips with a clear message, except under CI=true, where
// it fails: CI must exercise PostgreSQL.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// Server is a PostgreSQL cluster owned by the test binary.
type Server struct {
	dir, bin, port string
	runAs          string // "postgres" when the tests run as root
	admin          *sql.DB
}

var (
	once    sync.Once
	shared  *Server
	initErr error
	seq     atomic.Int64
)

// Shared returns the test binary's server, starting it on first use. Call
// Stop from TestMain (or rely on the process exit killing nothing: the
// server would linger, so do call it).
func Shared(t testing.TB) *Server {
	t.Helper()
	once.Do(func() { shared, initErr = Start() })
	if initErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("postgresql: %v (CI=true: PostgreSQL tests must run)", initErr)
		}
		t.Skipf("postgresql not available, skipping: %v (install postgresql, or set CI=true to make this a failure)", initErr)
	}
	return shared
}

// StopShared stops the shared server if it was started.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// findBin locates the directory holding initdb and pg_ctl.
func findBin() (string, error) {
	if d := os.Getenv("GOVGATE_PG_BIN"); d != "" {
		return d, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("no pg_ctl in /usr/lib/postgresql/*/bin or PATH")
}

// Start creates and starts a new cluster.
func Start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "govgate-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		s.runAs = "postgres"
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.port = port
	if out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 300\nshared_buffers = 128MB\n", port, dir)
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	if os.Getenv("GOVGATE_BENCH_DEBUG") != "" {
		// Per-statement costs for govgate-bench's debug output.
		conf += "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track_planning = on\n"
	}
	f.WriteString(conf)
	f.Close()
	if err := s.Start(); err != nil {
		return nil, err
	}
	admin, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return nil, err
	}
	s.admin = admin
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) run(tool string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, tool)
	var cmd *exec.Cmd
	if s.runAs != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// Start (re)starts the server and waits until it accepts connections.
func (s *Server) Start() error {
	if out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	return nil
}

// Stop stops the server, fast mode (connections are cut).
func (s *Server) Stop() error {
	if out, err := s.run("pg_ctl", "-D", s.data(), "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Destroy stops the server and removes its files.
func (s *Server) Destroy() {
	if s.admin != nil {
		s.admin.Close()
	}
	s.Stop()
	os.RemoveAll(s.dir)
}

// URL is the connection URL of database db.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable", s.port, db)
}

// CreateDatabase creates an empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return s.URL(name), nil
}

// DropDatabase drops a database, closing its connections.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	if _, err := s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database: %w", err)
	}
	return nil
}

// NewDatabase creates an empty database for t and drops it when t ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return s.URL(name)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port, nil
}
