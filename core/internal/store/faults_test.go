package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

// faultDriver is the real SQLite driver with faults injected into the
// statements of one database (by its file path): a query whose rows end
// early with an error, a query that fails at once, an exec that fails. It
// is how a flaky disk or a driver bug looks to the store.
type faultDriver struct {
	base driver.Driver

	mu     sync.Mutex
	faults map[string][]*fault // by database path
}

// fault applies to the statements whose text contains match.
type fault struct {
	match string
	// rowsThen cuts a query's rows short: after that many rows, Next fails
	// with err. -1: the query itself fails with err. For an exec, any value
	// fails it with err.
	rowsThen int
	exec     bool
	err      error
	hits     int
}

var (
	faultsOnce sync.Once
	faults     *faultDriver
)

// faultyStore opens a SQLite store at a new path through the fault driver
// and returns it with a function that sets the faults (none to clear them).
func faultyStore(t *testing.T) (*store.Store, func(...*fault)) {
	t.Helper()
	faultsOnce.Do(func() {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		faults = &faultDriver{base: db.Driver(), faults: map[string][]*fault{}}
		db.Close()
		sql.Register("sqlite-faults", faults)
	})
	path := filepath.Join(t.TempDir(), "faults.db")
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st := storetest.Open(t, "sqlite:"+path, box, store.WithSQLiteDriver(store.Options{}, "sqlite-faults"))
	return st, func(fs ...*fault) {
		faults.mu.Lock()
		defer faults.mu.Unlock()
		faults.faults[path] = fs
	}
}

func (d *faultDriver) Open(name string) (driver.Conn, error) {
	c, err := d.base.Open(name)
	if err != nil {
		return nil, err
	}
	path := strings.TrimPrefix(name, "file:")
	path, _, _ = strings.Cut(path, "?")
	return &faultConn{Conn: c, d: d, path: path}, nil
}

// find returns the fault that applies to query, counting the hit.
func (d *faultDriver) find(path, query string, exec bool) *fault {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.faults[path] {
		if f.exec == exec && strings.Contains(query, f.match) {
			f.hits++
			return f
		}
	}
	return nil
}

type faultConn struct {
	driver.Conn
	d    *faultDriver
	path string
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	f := c.d.find(c.path, query, false)
	if f != nil && f.rowsThen < 0 {
		return nil, f.err
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != nil || f == nil {
		return rows, err
	}
	return &cutRows{Rows: rows, left: f.rowsThen, err: f.err}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if f := c.d.find(c.path, query, true); f != nil {
		return nil, f.err
	}
	return e.ExecContext(ctx, query, args)
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *faultConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *faultConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// cutRows ends a query's rows after left rows with err, as a read that
// breaks off does.
type cutRows struct {
	driver.Rows
	left int
	err  error
}

func (r *cutRows) Next(dest []driver.Value) error {
	if r.left == 0 {
		return r.err
	}
	r.left--
	return r.Rows.Next(dest)
}

var _ io.Closer = (*cutRows)(nil)

// A claim whose reads fail cancels nothing: it fails, and every delivery it
// leased is claimed again once its lease ends, with nothing recorded
// against it. (The claim once ignored a read that ended early: the
// deliveries whose notification or webhook it had not read looked
// orphaned and were canceled as "webhook deactivated".)
func TestAFailedClaimReadCancelsNothing(t *testing.T) {
	readErr := errors.New("disk I/O error (injected)")
	for _, tc := range []struct {
		name  string
		fault *fault
	}{
		{"notifications cut short", &fault{match: "FROM notifications WHERE id IN", rowsThen: 1, err: readErr}},
		{"notifications cut at once", &fault{match: "FROM notifications WHERE id IN", rowsThen: 0, err: readErr}},
		{"notifications fail", &fault{match: "FROM notifications WHERE id IN", rowsThen: -1, err: readErr}},
		{"webhooks cut short", &fault{match: "FROM webhooks WHERE id IN", rowsThen: 1, err: readErr}},
		{"webhooks cut at once", &fault{match: "FROM webhooks WHERE id IN", rowsThen: 0, err: readErr}},
		{"webhooks fail", &fault{match: "FROM webhooks WHERE id IN", rowsThen: -1, err: readErr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, inject := faultyStore(t)
			for i := range 2 {
				if _, _, err := st.RegisterWebhook(ctx, fmt.Sprintf("https://hook-%d.example.com/h", i), "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 3 {
				n := core.Notification{ID: fmt.Sprintf("n-%d", i), Type: core.TypeVoteCast, DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}
				if _, err := st.CreateNotification(ctx, n, "test"); err != nil {
					t.Fatal(err)
				}
			}
			inject(tc.fault)
			// A lease of 0: the deliveries are due again at once.
			jobs, err := st.Claim(ctx, 10, 0, nil)
			if !errors.Is(err, readErr) {
				t.Fatalf("claim with a failed read: %d jobs, err %v; want the read's error", len(jobs), err)
			}
			if tc.fault.hits == 0 {
				t.Fatal("the fault never applied: the claim's queries changed")
			}
			inject()
			stats, err := st.QueueStats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := stats.ByState[string(core.DeliveryCanceled)]; n != 0 {
				t.Fatalf("%d deliveries canceled by a failed read (%v)", n, stats.ByState)
			}
			jobs, err = st.Claim(ctx, 10, time.Minute, nil)
			if err != nil || len(jobs) != 6 {
				t.Fatalf("claim after the fault: %d jobs, %v; want all 6", len(jobs), err)
			}
		})
	}
}

// A delivery whose webhook was deactivated between fan-out and claim is
// canceled by the claim; when that update fails, the claim says so rather
// than carry on as if it had.
func TestAFailedCancelFailsTheClaim(t *testing.T) {
	ctx := context.Background()
	st, inject := faultyStore(t)
	wh, _, err := st.RegisterWebhook(ctx, "https://hook.example.com/h", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateNotification(ctx, core.Notification{ID: "n", Type: core.TypeVoteCast, DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}, "test"); err != nil {
		t.Fatal(err)
	}
	// Deactivated behind the queue's back, as a concurrent deactivation
	// between the fan-out and this claim would be.
	if err := st.DB().Exec(`UPDATE webhooks SET state = ? WHERE id = ?`, string(core.WebhookDeactivated), wh.ID).Error; err != nil {
		t.Fatal(err)
	}
	writeErr := errors.New("disk full (injected)")
	cancelFault := &fault{match: "last_error = ? WHERE id = ? AND lease_token = ?", exec: true, err: writeErr}
	inject(cancelFault)
	jobs, err := st.Claim(ctx, 10, 0, nil)
	if !errors.Is(err, writeErr) || len(jobs) != 0 {
		t.Fatalf("claim with a failed cancel: %d jobs, err %v; want the update's error", len(jobs), err)
	}
	if cancelFault.hits == 0 {
		t.Fatal("the fault never applied: the claim's cancel changed")
	}
	inject()
	if jobs, err := st.Claim(ctx, 10, time.Minute, nil); err != nil || len(jobs) != 0 {
		t.Fatalf("claim after the fault: %d jobs, %v", len(jobs), err)
	}
	stats, _ := st.QueueStats(ctx)
	if n := stats.ByState[string(core.DeliveryCanceled)]; n != 1 {
		t.Fatalf("%d deliveries canceled, want the deactivated webhook's one (%v)", n, stats.ByState)
	}
}
