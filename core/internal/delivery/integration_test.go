package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/delivery"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/ssrf"
	"github.com/govgate/govgate/core/internal/store"
)

type rig struct {
	dbPath string
	st     *store.Store
	d      *delivery.Dispatcher
	cancel context.CancelFunc
	done   chan struct{}
}

func newRig(t *testing.T, allowPrivate bool, caPEM []byte, perWebhook int, opts ...func(*delivery.Config)) *rig {
	t.Helper()
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	dbPath := filepath.Join(t.TempDir(), "d.db")
	st := storetest.Open(t, "sqlite:"+dbPath, box, store.Options{})
	caFile := ""
	if caPEM != nil {
		caFile = filepath.Join(t.TempDir(), "ca.pem")
		os.WriteFile(caFile, caPEM, 0o600)
	}
	client, err := ssrf.NewClient(ssrf.ClientOptions{AllowPrivate: allowPrivate, CAFile: caFile, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := delivery.Config{
		Queue: st, Client: client, UserAgent: "govgate-test", Timeout: 5 * time.Second, Workers: 16, PerWebhookConcurrency: perWebhook,
		Schedule: []time.Duration{time.Hour}, Lease: time.Minute, BatchSize: 16, PollInterval: 20 * time.Millisecond, Backlog: 64,
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := delivery.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{dbPath: dbPath, st: st, d: d, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done; st.Close() })
	return r
}

func (r *rig) notify(t *testing.T, id string) {
	t.Helper()
	// As govgate serve does: the dispatcher takes what it has room for
	// straight from the fan-out, the queue the rest.
	if _, err := r.st.CreateNotificationHandoff(context.Background(), core.Notification{ID: id, Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: json.RawMessage(`{}`)}, "test", r.d); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) deliveries(t *testing.T, webhook int64) []core.DeliveryDetail {
	items, _, err := r.st.ListDeliveries(context.Background(), webhook, "", core.Page{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// waitUntil polls cond, which reads the store or a receiver, until it holds
// or 15 s have passed. The dispatcher records its results from its own
// goroutines, a batch at a time, and announces neither them nor its start:
// there is no event to wait on, so the wait is a bounded poll.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A name that resolves to loopback passes registration (which does no DNS)
// but is refused when the dispatcher dials it.
func TestDialTimeSSRFRefusal(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	r := newRig(t, false, nil, 4)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	wh, _, err := r.st.RegisterWebhook(context.Background(), "https://localhost:"+port+"/hook", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	r.notify(t, "n-ssrf")
	waitUntil(t, "the refused attempt to be recorded", func() bool {
		d := r.deliveries(t, wh.ID)
		return len(d) == 1 && len(d[0].AttemptLog) == 1
	})
	a := r.deliveries(t, wh.ID)[0].AttemptLog[0]
	if a.Outcome != "retry" || !strings.Contains(a.Error, "forbidden") {
		t.Fatalf("attempt %+v, want a retry refused as forbidden", a)
	}
	if hits.Load() != 0 {
		t.Fatal("the loopback receiver was reached")
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	var target atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			target.Add(1)
			return
		}
		http.Redirect(w, r, srv.URL+"/moved", http.StatusFound)
	}))
	defer srv.Close()
	r := newRig(t, true, caOf(srv), 4)
	wh, _, _ := r.st.RegisterWebhook(context.Background(), srv.URL+"/hook", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	r.notify(t, "n-redirect")
	waitUntil(t, "the attempt", func() bool {
		d := r.deliveries(t, wh.ID)
		return len(d) == 1 && len(d[0].AttemptLog) == 1
	})
	a := r.deliveries(t, wh.ID)[0].AttemptLog[0]
	if a.StatusCode != http.StatusFound || a.Outcome != "retry" || target.Load() != 0 {
		t.Fatalf("attempt %+v, redirect target hit %d times", a, target.Load())
	}
}

// One slow receiver cannot starve the others, and never gets more than its
// concurrency limit at once.
func TestPerWebhookConcurrency(t *testing.T) {
	const limit = 3
	var (
		mu        sync.Mutex
		inSlow    int
		maxSlow   int
		fastAt    time.Time
		release   = make(chan struct{})
		closeOnce sync.Once
	)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fast" {
			mu.Lock()
			if fastAt.IsZero() {
				fastAt = time.Now()
			}
			mu.Unlock()
			return
		}
		mu.Lock()
		inSlow++
		maxSlow = max(maxSlow, inSlow)
		mu.Unlock()
		select {
		case <-release:
		case <-time.After(3 * time.Second):
		}
		mu.Lock()
		inSlow--
		mu.Unlock()
	}))
	defer srv.Close()
	defer closeOnce.Do(func() { close(release) })
	r := newRig(t, true, caOf(srv), limit)
	ctx := context.Background()
	slow, _, _ := r.st.RegisterWebhook(ctx, srv.URL+"/slow", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	for i := 0; i < 20; i++ {
		r.notify(t, fmt.Sprintf("n-slow-%d", i))
	}
	waitUntil(t, "the slow receiver to be saturated", func() bool { mu.Lock(); defer mu.Unlock(); return inSlow == limit })
	r.st.RegisterWebhook(ctx, srv.URL+"/fast", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	start := time.Now()
	r.notify(t, "n-fast")
	waitUntil(t, "the fast receiver", func() bool { mu.Lock(); defer mu.Unlock(); return !fastAt.IsZero() })
	mu.Lock()
	took, peak := fastAt.Sub(start), maxSlow
	mu.Unlock()
	if took > time.Second {
		t.Errorf("the fast webhook waited %v behind the slow one", took)
	}
	closeOnce.Do(func() { close(release) })
	waitUntil(t, "every slow delivery", func() bool {
		n := 0
		for _, d := range r.deliveries(t, slow.ID) {
			if d.State == core.DeliverySucceeded {
				n++
			}
		}
		return n == 21 // the fast notification fans out to the slow webhook too
	})
	if peak > limit {
		t.Errorf("the slow webhook had %d attempts at once, limit %d", peak, limit)
	}
}

// reserved hands over under a reservation made earlier.
type reserved struct {
	r core.Reservation
	d *delivery.Dispatcher
}

func (f reserved) Reserve(int) core.Reservation             { return f.r }
func (f reserved) Hand(r core.Reservation, jobs []core.Job) { f.d.Hand(r, jobs) }
func (f reserved) Wake()                                    { f.d.Wake() }

// Deliveries handed to a dispatcher that has stopped go back to the queue
// at once, their attempt not counted, instead of waiting out their lease.
func TestHandAfterStopReturnsDeliveriesToTheQueue(t *testing.T) {
	r := newRig(t, true, nil, 4)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		r.st.RegisterWebhook(ctx, fmt.Sprintf("https://127.0.0.1:1/%d", i), "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	}
	// Before Run has started the dispatcher reserves nothing: producers
	// then leave their deliveries in the queue.
	var res core.Reservation
	waitUntil(t, "the dispatcher to run", func() bool { res = r.d.Reserve(10); return res.N > 0 })
	if res.N != 10 || res.Lease != time.Minute {
		t.Fatalf("reservation %+v", res)
	}
	r.cancel()
	<-r.done
	if late := r.d.Reserve(10); late.N != 0 {
		t.Fatalf("a stopped dispatcher reserved room: %+v", late)
	}
	if _, err := r.st.CreateNotificationHandoff(ctx, core.Notification{ID: "late", Type: "test", DAO: "uniswap", OccurredAt: time.Now()}, "test", reserved{res, r.d}); err != nil {
		t.Fatal(err)
	}
	stats, err := r.st.QueueStats(ctx)
	if err != nil || stats.ByState[string(core.DeliveryPending)] != 3 || stats.ByState[string(core.DeliveryInFlight)] != 0 {
		t.Fatalf("after the hand-off to a stopped dispatcher: %+v %v", stats.ByState, err)
	}
	jobs, err := r.st.Claim(ctx, 10, time.Minute, nil)
	if err != nil || len(jobs) != 3 || jobs[0].Attempt != 1 {
		t.Fatalf("claim after release: %d jobs %+v %v", len(jobs), jobs, err)
	}
}

// A delivery that waited behind its webhook's concurrency limit for so long
// that its lease would run out before its attempt could goes back to the
// queue unattempted, and is delivered later, once.
func TestParkedPastItsLeaseGoesBackToTheQueue(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("X-Webhook-Id")]++
		mu.Unlock()
		// Real time: the store issues leases on its own wall clock, which no
		// test outside the store can move.
		time.Sleep(400 * time.Millisecond)
	}))
	defer srv.Close()
	// One attempt at a time; each takes 400 ms of its 600 ms timeout, so the
	// second delivery, parked behind the first, has 900-400 = 500 ms of its
	// lease left when its turn comes: less than a timeout.
	q := &releaseCounter{}
	r := newRig(t, true, caOf(srv), 1, func(c *delivery.Config) {
		c.Timeout, c.Lease, c.PollInterval = 600*time.Millisecond, 900*time.Millisecond, 50*time.Millisecond
		q.Store = c.Queue.(*store.Store)
		c.Queue = q
	})
	wh, _, _ := r.st.RegisterWebhook(context.Background(), srv.URL+"/hook", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	r.notify(t, "n-first")
	r.notify(t, "n-second")
	waitUntil(t, "both deliveries", func() bool {
		n := 0
		for _, d := range r.deliveries(t, wh.ID) {
			if d.State == core.DeliverySucceeded {
				n++
			}
		}
		return n == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if seen["n-first"] != 1 || seen["n-second"] != 1 {
		t.Fatalf("deliveries seen %v, want each once", seen)
	}
	if n := q.released.Load(); n != 1 {
		t.Errorf("%d deliveries given back, want the parked one", n)
	}
	for _, d := range r.deliveries(t, wh.ID) {
		// The second was given back before it was attempted: its attempt
		// count is that of its one real attempt.
		if len(d.AttemptLog) != 1 || d.Attempts != 1 {
			t.Errorf("delivery %d: %d attempts logged, count %d; want 1 and 1", d.ID, len(d.AttemptLog), d.Attempts)
		}
	}
}

// A dispatcher that stops gives the deliveries it holds but has not started
// back to the queue at once, their attempts not counted, instead of
// leaving them to wait out their leases.
func TestStopGivesBackWhatItHasNotStarted(t *testing.T) {
	started := make(chan struct{}, 16)
	unblock := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-unblock
	}))
	defer srv.Close()
	q := &releaseCounter{}
	r := newRig(t, true, caOf(srv), 1, func(c *delivery.Config) { q.Store = c.Queue.(*store.Store); c.Queue = q })
	ctx := context.Background()
	wh, _, _ := r.st.RegisterWebhook(ctx, srv.URL+"/hook", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	for i := 0; i < 5; i++ {
		r.notify(t, fmt.Sprintf("n-stop-%d", i))
	}
	<-started // one attempt under way; four parked behind it
	// Once cancel returns the context is done, and the worker that ends the
	// attempt sees it: it takes no parked job.
	r.cancel()
	close(unblock)
	<-r.done
	stats, err := r.st.QueueStats(ctx)
	if err != nil || stats.ByState[string(core.DeliverySucceeded)] != 1 || stats.ByState[string(core.DeliveryPending)] != 4 || stats.ByState[string(core.DeliveryInFlight)] != 0 {
		t.Fatalf("after stopping: %+v %v", stats.ByState, err)
	}
	for _, d := range r.deliveries(t, wh.ID) {
		if d.State == core.DeliveryPending && d.Attempts != 0 {
			t.Errorf("delivery %d given back with %d attempts counted", d.ID, d.Attempts)
		}
	}
	if n := q.released.Load(); n != 4 {
		t.Errorf("%d deliveries given back, want the 4 parked", n)
	}
}

// releaseCounter counts the deliveries given back to the queue.
type releaseCounter struct {
	*store.Store
	released atomic.Int64
}

func (q *releaseCounter) Release(ctx context.Context, jobs []core.Job, delay time.Duration) error {
	q.released.Add(int64(len(jobs)))
	return q.Store.Release(ctx, jobs, delay)
}

// Producers' hand-offs have their own room (the backlog), so a burst of
// fresh notifications does not take the room claims need.
func TestBacklogIsSeparateFromClaimRoom(t *testing.T) {
	r := newRig(t, true, nil, 4, func(c *delivery.Config) { c.Backlog = 5 })
	var got core.Reservation
	waitUntil(t, "the dispatcher to run", func() bool { got = r.d.Reserve(100); return got.N > 0 })
	if got.N != 5 || !got.Fresh || len(got.Exclude) != 0 {
		t.Fatalf("first reservation %+v, want the whole backlog of 5", got)
	}
	if again := r.d.Reserve(100); again.N != 0 {
		t.Fatalf("second reservation %+v, want none: the backlog is reserved", again)
	}
	r.d.Hand(got, nil)
	if again := r.d.Reserve(3); again.N != 3 {
		t.Fatalf("after handing nothing back: reservation %+v, want 3", again)
	}
}

// With no backlog every delivery goes through the queue: it is delivered
// after a claim, not handed over; with one, a fresh delivery skips the claim.
func TestBacklogZeroDeliversThroughClaims(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, backlog := range []int{0, 16} {
		q := &claimCounter{}
		r := newRig(t, true, caOf(srv), 4, func(c *delivery.Config) {
			c.Backlog = backlog
			q.Store = c.Queue.(*store.Store)
			c.Queue = q
		})
		r.st.RegisterWebhook(context.Background(), srv.URL+"/hook", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
		waitUntil(t, "the dispatcher to run", func() bool {
			if backlog == 0 {
				return q.calls.Load() > 0 // it has polled the queue once
			}
			res := r.d.Reserve(1)
			r.d.Hand(res, nil)
			return res.N > 0
		})
		before := hits.Load()
		r.notify(t, fmt.Sprintf("n-backlog-%d", backlog))
		waitUntil(t, "the delivery", func() bool { return hits.Load() == before+1 })
		want := int64(1)
		if backlog > 0 {
			want = 0
		}
		if got := q.claimed.Load(); got != want {
			t.Errorf("backlog %d: %d deliveries claimed, want %d", backlog, got, want)
		}
	}
}

// claimCounter counts claim calls and the deliveries they claimed.
type claimCounter struct {
	*store.Store
	calls, claimed atomic.Int64
}

func (q *claimCounter) Claim(ctx context.Context, limit int, lease time.Duration, exclude []int64) ([]core.Job, error) {
	jobs, err := q.Store.Claim(ctx, limit, lease, exclude)
	q.calls.Add(1)
	q.claimed.Add(int64(len(jobs)))
	return jobs, err
}

func caOf(srv *httptest.Server) []byte {
	return pemOf(srv.Certificate().Raw)
}

// preparer is a transformer that keeps everything and records Prepare.
type preparer struct {
	mu       sync.Mutex
	prepared []string // notification ids, in order
}

func (p *preparer) Prepare(j core.Job) {
	p.mu.Lock()
	p.prepared = append(p.prepared, j.Notification.ID)
	p.mu.Unlock()
}

func (p *preparer) Transform(context.Context, core.Job) (delivery.TransformResult, error) {
	return delivery.TransformResult{Keep: true}, nil
}

// TestPrepareOncePerNotification: a transformer that is a Preparer hears of
// each notification once when its deliveries are handed to the dispatcher,
// however many webhooks it fans out to, before they are attempted.
func TestPrepareOncePerNotification(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	p := &preparer{}
	r := newRig(t, true, pemOf(srv.Certificate().Raw), 4, func(c *delivery.Config) { c.Transformer = p })
	for i := range 3 {
		r.st.RegisterWebhook(context.Background(), fmt.Sprintf("%s/hook/%d", srv.URL, i), "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	}
	r.notify(t, "n1")
	r.notify(t, "n2")
	waitUntil(t, "six deliveries", func() bool { return hits.Load() == 6 })
	p.mu.Lock()
	defer p.mu.Unlock()
	// In any order: n2's deliveries may reach the dispatcher first (handed
	// over as they are created, while n1's wait for a claim).
	got := slices.Sorted(slices.Values(p.prepared))
	if fmt.Sprint(got) != "[n1 n2]" {
		t.Fatalf("prepared %v, want each notification once", p.prepared)
	}
}

// Results are gathered for a while into one write, but only while attempts
// are under way: once the dispatcher holds no job, the last results are
// written at once. With an hour's linger, only that makes them visible.
func TestLastResultsAreRecordedAtOnce(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	r := newRig(t, true, caOf(srv), 4, func(c *delivery.Config) { c.RecordLinger = time.Hour })
	var hooks []int64
	for i := 0; i < 3; i++ {
		w, _, err := r.st.RegisterWebhook(context.Background(), fmt.Sprintf("%s/hook/%d", srv.URL, i), "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, w.ID)
	}
	for n := 0; n < 2; n++ {
		r.notify(t, fmt.Sprintf("n-quiet-%d", n))
		waitUntil(t, "every delivery recorded", func() bool {
			for _, w := range hooks {
				ds := r.deliveries(t, w)
				if len(ds) != n+1 {
					return false
				}
				for _, d := range ds {
					if d.State != core.DeliverySucceeded {
						return false
					}
				}
			}
			return true
		})
	}
	if got := hits.Load(); got != 6 {
		t.Errorf("receiver saw %d deliveries, want 6", got)
	}
}

// logBuffer is a slog handler's output that tests read while the
// dispatcher writes.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// With the database gone, Shutdown still ends by its deadline: the attempt
// under way finishes, its result cannot be recorded, and rather than retry
// for ever the dispatcher leaves the delivery to its lease and logs how many
// results it could not record. (Before Shutdown existed, the record loop
// retried on context.Background() until the database came back.)
func TestShutdownEndsByItsDeadlineWithTheDatabaseDown(t *testing.T) {
	started := make(chan struct{}, 1)
	unblock := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-unblock
	}))
	defer srv.Close()
	var log logBuffer
	r := newRig(t, true, caOf(srv), 1, func(c *delivery.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	ctx := context.Background()
	wh, _, _ := r.st.RegisterWebhook(ctx, srv.URL+"/hook", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	r.notify(t, "n-down")
	<-started // the attempt is under way
	// The database goes away: every call from now on fails.
	if err := r.st.Close(); err != nil {
		t.Fatal(err)
	}
	const bound = 500 * time.Millisecond
	sctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- r.d.Shutdown(sctx) }()
	close(unblock) // the receiver answers; the result is not recordable
	select {
	case err := <-stopped:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown returned %v, want its deadline's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown did not end 30 s after its 500 ms deadline")
	}
	<-r.done // Run returns once its record loop has given up
	if got := log.String(); !strings.Contains(got, "attempt results not recorded by the shutdown deadline") || !strings.Contains(got, "results=1") {
		t.Fatalf("the log does not say one result went unrecorded:\n%s", got)
	}
	// The delivery is still in flight under its lease, to be taken up again.
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st := storetest.Open(t, "sqlite:"+r.dbPath, box, store.Options{})
	items, _, err := st.ListDeliveries(ctx, wh.ID, "", core.Page{Limit: 10})
	if err != nil || len(items) != 1 || items[0].State != core.DeliveryInFlight || len(items[0].AttemptLog) != 0 {
		t.Fatalf("after the shutdown: %+v %v, want one delivery in flight with no attempt recorded", items, err)
	}
}

// Shutdown before Run makes Run return at once, having claimed nothing.
func TestShutdownBeforeRun(t *testing.T) {
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st := storetest.Open(t, "sqlite:"+filepath.Join(t.TempDir(), "d.db"), box, store.Options{})
	d, err := delivery.New(delivery.Config{Queue: st, Client: http.DefaultClient, Timeout: time.Second, Workers: 1, PerWebhookConcurrency: 1, BatchSize: 1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- d.Run(context.Background()) }()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after an earlier Shutdown")
	}
}
