package e2e_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/govgate/govgate/core/internal/dev/pgtest"
	"github.com/govgate/govgate/core/internal/dev/testcert"
)

// shutdownConfig delivers with a short timeout and lease, and stops within
// shutdownBound.
const shutdownConfig = deliveryConfig + `
shutdown_timeout: 4s
`

// shutdownBound is shutdownConfig's shutdown_timeout; the process must have
// exited by then and a little more for the exit itself.
const shutdownBound = 4 * time.Second

// heldReceiver is an HTTPS receiver whose answers wait for release; until
// then it counts the requests it holds. Once released it answers 204.
type heldReceiver struct {
	url, caFile string
	arrived     chan struct{}
	release     chan struct{}
	answered    atomic.Int64
}

func newHeldReceiver(t *testing.T) *heldReceiver {
	t.Helper()
	cert, caPEM, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	r := &heldReceiver{caFile: filepath.Join(t.TempDir(), "ca.pem"), arrived: make(chan struct{}, 1024), release: make(chan struct{})}
	os.WriteFile(r.caFile, caPEM, 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.url = "https://" + l.Addr().String() + "/hook"
	srv := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case r.arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.release:
			r.answered.Add(1)
			w.WriteHeader(http.StatusNoContent)
		case <-req.Context().Done():
		}
	})}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return r
}

// notRecordedLine is the dispatcher's log line when it gives results up.
var notRecordedLine = regexp.MustCompile(`attempt results not recorded by the shutdown deadline.* results=(\d+)`)

// sigtermWithDatabaseDown starts govgate on dbURL, has it start three
// deliveries that the receiver holds, makes the database unusable (down),
// and sends SIGTERM: govgate must exit within shutdownBound, saying how many
// results it left to their leases. Then the database comes back (up), a new
// process starts, and every delivery still arrives: nothing accepted was
// lost.
func sigtermWithDatabaseDown(t *testing.T, dbURL string, down, up func()) {
	rcv := newHeldReceiver(t)
	p := startGovgate(t, dbURL, rcv.caFile, shutdownConfig)
	p.register(t, rcv.url)
	for i := range 3 {
		p.notify(t, fmt.Sprintf("n-shutdown-%d", i), "uniswap", map[string]int{"i": i})
	}
	select {
	case <-rcv.arrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("no delivery reached the receiver:\n%s", p.logs())
	}
	down()
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.kill()
		t.Fatalf("govgate did not exit 60 s after SIGTERM with the database down (shutdown_timeout %s):\n%s", shutdownBound, p.logs())
	}
	took := time.Since(start)
	logs := p.logs()
	if took > shutdownBound+2*time.Second {
		t.Errorf("govgate took %s to exit after SIGTERM, shutdown_timeout %s:\n%s", took, shutdownBound, logs)
	}
	m := notRecordedLine.FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("the log does not say how many results were left to their leases:\n%s", logs)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("results left to their leases: %d, want at least the one the receiver held", n)
	}
	t.Logf("exited %s after SIGTERM; %s results left to their leases", took.Round(time.Millisecond), m[1])
	if os.Getenv("E2E_SHOW_LOG") != "" {
		t.Log(logs)
	}

	// Nothing is lost: the database back, a new process delivers all three
	// once their leases (5 s) run out.
	up()
	close(rcv.release)
	p.start()
	waitFor(t, "every delivery answered", 60*time.Second, func() bool { return rcv.answered.Load() >= 3 })
}

// TestSIGTERMWithSQLiteLockedExitsWithinTheBound: another process holds
// SQLite's write lock (BEGIN EXCLUSIVE), so that no write of govgate's can
// succeed, and govgate still stops within shutdown_timeout.
func TestSIGTERMWithSQLiteLockedExitsWithinTheBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "govgate.db")
	var locker *sql.DB
	var conn *sql.Conn
	down := func() {
		var err error
		if locker, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)"); err != nil {
			t.Fatal(err)
		}
		if conn, err = locker.Conn(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
			t.Fatalf("lock the database: %v", err)
		}
	}
	up := func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		locker.Close()
	}
	sigtermWithDatabaseDown(t, "sqlite:"+path, down, up)
}

// TestSIGTERMWithPostgresStoppedExitsWithinTheBound: the PostgreSQL server
// is stopped, and govgate still stops within shutdown_timeout.
func TestSIGTERMWithPostgresStoppedExitsWithinTheBound(t *testing.T) {
	srv, err := pgtest.Start()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL: %v", err)
		}
		t.Skipf("PostgreSQL: %v", err)
	}
	defer srv.Destroy()
	url := srv.NewDatabase(t)
	sigtermWithDatabaseDown(t, url, func() {
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
	}, func() {
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	})
}
