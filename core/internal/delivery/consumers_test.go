package delivery_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/delivery"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/core/internal/ssrf"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/sdk/receiver"
)

// stores opens a fresh store on each database: every consumer test runs on
// SQLite and on a real PostgreSQL.
func stores(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	storetest.Each(t, fn)
}

// dispatch runs a real dispatcher on st against srv's certificate.
func dispatch(t *testing.T, st *store.Store, srv *httptest.Server, opts ...func(*delivery.Config)) *delivery.Dispatcher {
	t.Helper()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caOf(srv), 0o600)
	client, err := ssrf.NewClient(ssrf.ClientOptions{AllowPrivate: true, CAFile: caFile, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := delivery.Config{
		Queue: st, Client: client, UserAgent: "govgate-test", Timeout: 5 * time.Second, Workers: 16, PerWebhookConcurrency: 4,
		Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond,
			20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond},
		Lease: time.Minute, BatchSize: 16, PollInterval: 20 * time.Millisecond, Backlog: 64,
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := delivery.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return d
}

// arrival is one request a recording receiver got.
type arrival struct {
	path   string
	at     time.Time
	header http.Header
	body   []byte
}

// recorder is a real HTTPS receiver that records every request and answers
// what status says (200 when nil).
type recorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []arrival
	status func(a arrival) int
	signal chan struct{}
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{signal: make(chan struct{}, 1)}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		a := arrival{path: req.URL.Path, at: time.Now(), header: req.Header.Clone(), body: body}
		r.mu.Lock()
		r.got = append(r.got, a)
		status := r.status
		r.mu.Unlock()
		select {
		case r.signal <- struct{}{}:
		default:
		}
		if status != nil {
			w.WriteHeader(status(a))
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) arrivals(path string) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []arrival
	for _, a := range r.got {
		if a.path == path {
			out = append(out, a)
		}
	}
	return out
}

func idOf(a arrival) string { return a.header.Get("X-Webhook-Id") }

// insertMany stores notifications as the indexer does: batches of 500 in
// one transaction each.
func insertMany(t *testing.T, st *store.Store, notes []core.Notification) {
	t.Helper()
	for i := 0; i < len(notes); i += 500 {
		batch := notes[i:min(i+500, len(notes))]
		if err := st.DB().Transaction(func(tx *gorm.DB) error {
			for _, n := range batch {
				if _, err := st.InsertNotificationTx(tx, n, "test"); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func countRows(t *testing.T, st *store.Store, webhook int64) int64 {
	var n int64
	if err := st.DB().Raw(`SELECT COUNT(*) FROM deliveries WHERE webhook_id = ?`, webhook).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

const testSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// A webhook subscribed to proposal.* for one DAO receives exactly those of
// a mixed stream of 10,000 notifications, and the fan-out stores no
// delivery for the others.
func TestSubscriptionReceivesExactlyItsNotifications(t *testing.T) {
	stores(t, func(t *testing.T, st *store.Store) {
		rcv := newRecorder(t)
		ctx := context.Background()
		wh, _, err := st.RegisterWebhookWith(ctx, rcv.srv.URL+"/sub", testSecret,
			core.WebhookSettings{Subscription: core.Subscription{Types: []string{"proposal.*"}, DAOs: []string{"uniswap"}}})
		if err != nil {
			t.Fatal(err)
		}
		// Types that share the prefix's letters but not the prefix, and one
		// whose first word is the prefix itself, must not match.
		types := []string{"proposal.created", "vote.cast", "proposal.queued", "delegate.votes_changed", "proposals.created", "proposal.ending_soon", "proposal", "test"}
		daos := []string{"uniswap", "compound", "ens"}
		var notes []core.Notification
		want := map[string]bool{}
		for i := 0; i < 10000; i++ {
			n := core.Notification{ID: fmt.Sprintf("mix-%05d", i), Type: types[(i*7)%len(types)], DAO: daos[(i/3)%len(daos)], OccurredAt: time.Now(), Data: json.RawMessage(`{}`)}
			notes = append(notes, n)
			if strings.HasPrefix(n.Type, "proposal.") && n.DAO == "uniswap" {
				want[n.ID] = true
			}
		}
		insertMany(t, st, notes)
		if rows := countRows(t, st, wh.ID); rows != int64(len(want)) {
			t.Fatalf("fan-out stored %d deliveries, want %d (one per wanted notification)", rows, len(want))
		}
		dispatch(t, st, rcv.srv)
		waitUntil(t, "every wanted delivery", func() bool {
			n, _ := st.Unfinished(ctx)
			return n == 0 && len(rcv.arrivals("/sub")) >= len(want)
		})
		got := map[string]bool{}
		for _, a := range rcv.arrivals("/sub") {
			if !want[idOf(a)] {
				t.Fatalf("received %s, which the subscription does not want", idOf(a))
			}
			got[idOf(a)] = true
		}
		if len(got) != len(want) {
			t.Fatalf("received %d distinct notifications, want %d", len(got), len(want))
		}
	})
}

// verifyWithNode runs the Standard Webhooks npm verifier on each arrival
// with secret and returns "ok" or the failure of each.
func verifyWithNode(t *testing.T, secret string, got []arrival) []string {
	t.Helper()
	dir, _ := filepath.Abs("testdata/standardwebhooks")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Standard Webhooks verifier is not installed: run npm ci in %s", dir)
		}
		t.Skipf("the Standard Webhooks verifier is not installed (npm ci in %s)", dir)
	}
	var in strings.Builder
	for _, a := range got {
		line, _ := json.Marshal(map[string]any{"secret": secret, "body": string(a.body), "headers": map[string]string{
			"webhook-id": a.header.Get("Webhook-Id"), "webhook-timestamp": a.header.Get("Webhook-Timestamp"), "webhook-signature": a.header.Get("Webhook-Signature"),
		}})
		in.Write(line)
		in.WriteByte('\n')
	}
	cmd := exec.Command("node", "verify.js")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.js: %v", err)
	}
	var res []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		res = append(res, sc.Text())
	}
	if len(res) != len(got) {
		t.Fatalf("node verified %d of %d deliveries: %s", len(res), len(got), out)
	}
	return res
}

// During a rotation's overlap a receiver holding only the old secret and
// one holding only the new both verify every delivery, with sdk/receiver
// and with the Standard Webhooks npm verifier; once the overlap has ended
// only the new secret does.
func TestRotationOverlapVerifiesWithEitherSecret(t *testing.T) {
	stores(t, func(t *testing.T, st *store.Store) {
		rcv := newRecorder(t)
		ctx := context.Background()
		wh, _, err := st.RegisterWebhook(ctx, rcv.srv.URL+"/rot", testSecret)
		if err != nil {
			t.Fatal(err)
		}
		newSecret, _ := signing.NewSecret()
		// Long enough for any machine to deliver during it; the dispatcher's
		// clock, not the test, then moves past its end (less than
		// receiver.Tolerance ahead of the receivers' clocks).
		const overlap = time.Minute
		rot, err := st.RotateWebhookSecret(ctx, wh.ID, newSecret, overlap, core.ActorOwner)
		if err != nil {
			t.Fatal(err)
		}
		var ahead atomic.Int64 // how far the dispatcher's clock runs ahead
		d := dispatch(t, st, rcv.srv, func(c *delivery.Config) {
			c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		})
		notify := func(id string) {
			if _, err := st.CreateNotificationHandoff(ctx, core.Notification{ID: id, Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: json.RawMessage(`{"n":1}`)}, "test", d); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 10; i++ {
			notify(fmt.Sprintf("during-%d", i))
		}
		waitUntil(t, "the deliveries during the overlap", func() bool { return len(rcv.arrivals("/rot")) >= 10 })
		during := rcv.arrivals("/rot")
		for _, a := range during {
			if !a.at.Before(rot.PreviousExpiresAt) {
				t.Fatalf("a delivery arrived after the overlap; the test's overlap is too short for this machine")
			}
			for _, secret := range []string{testSecret, newSecret} {
				if err := receiver.Verify(secret, a.header, a.body, a.at); err != nil {
					t.Errorf("during the overlap, sdk/receiver with one secret refused %s: %v", idOf(a), err)
				}
			}
			// A receiver that follows the contract by hand, holding the old
			// secret, reads X-Webhook-Signature-V2 alone.
			if a.header.Get(signing.HeaderSignatureV2) != hmacHex(testSecret, a.header.Get("X-Webhook-Timestamp")+"."+string(a.body)) {
				t.Errorf("X-Webhook-Signature-V2 is not the previous secret's digest during the overlap")
			}
			if err := receiver.VerifyAny([]string{newSecret, testSecret}, a.header, a.body, a.at); err != nil {
				t.Errorf("sdk/receiver with both secrets: %v", err)
			}
		}
		for _, secret := range []string{testSecret, newSecret} {
			for i, res := range verifyWithNode(t, secret, during) {
				if res != "ok" {
					t.Errorf("during the overlap, the Standard Webhooks verifier with one secret refused %s: %s", idOf(during[i]), res)
				}
			}
		}

		// After the overlap only the new secret verifies. The store still
		// hands out the previous secret until its own clock passes the end:
		// the dispatcher, which signs, must judge the end itself.
		ahead.Store(int64(time.Until(rot.PreviousExpiresAt) + time.Second))
		for i := 0; i < 5; i++ {
			notify(fmt.Sprintf("after-%d", i))
		}
		waitUntil(t, "the deliveries after the overlap", func() bool { return len(rcv.arrivals("/rot")) >= 15 })
		after := rcv.arrivals("/rot")[10:]
		for _, a := range after {
			if err := receiver.Verify(newSecret, a.header, a.body, a.at); err != nil {
				t.Errorf("after the overlap, the new secret refused %s: %v", idOf(a), err)
			}
			if err := receiver.Verify(testSecret, a.header, a.body, a.at); err == nil {
				t.Errorf("after the overlap, the old secret still verified %s", idOf(a))
			}
			if a.header.Get(signing.HeaderSignatureV2Next) != "" || strings.Contains(a.header.Get("Webhook-Signature"), " ") {
				t.Errorf("after the overlap a delivery still carries two signatures: %v", a.header)
			}
		}
		for i, res := range verifyWithNode(t, newSecret, after) {
			if res != "ok" {
				t.Errorf("after the overlap, the Standard Webhooks verifier with the new secret refused %s: %s", idOf(after[i]), res)
			}
		}
		for i, res := range verifyWithNode(t, testSecret, after) {
			if res == "ok" {
				t.Errorf("after the overlap, the Standard Webhooks verifier accepted %s with the old secret", idOf(after[i]))
			}
		}
	})
}

// An ordered endpoint receives every notification in acceptance order while
// its receiver fails for a while; the failing delivery holds back the later
// ones (and the owner's view says so), and an unordered endpoint beside it
// receives everything meanwhile.
func TestOrderedDeliveryHoldsTheLineAndSparesTheNeighbour(t *testing.T) {
	stores(t, func(t *testing.T, st *store.Store) {
		rcv := newRecorder(t)
		ctx := context.Background()
		ordered, _, err := st.RegisterWebhookWith(ctx, rcv.srv.URL+"/ordered", testSecret, core.WebhookSettings{Ordered: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.RegisterWebhook(ctx, rcv.srv.URL+"/free", testSecret); err != nil {
			t.Fatal(err)
		}
		const n, failing = 60, "ord-007"
		release := make(chan struct{})
		rcv.status = func(a arrival) int {
			if a.path == "/ordered" && idOf(a) == failing {
				select {
				case <-release:
				default:
					return http.StatusInternalServerError
				}
			}
			return http.StatusOK
		}
		d := dispatch(t, st, rcv.srv, func(c *delivery.Config) {
			// Enough attempts to outlast the neighbour's deliveries.
			c.Schedule = slices.Repeat([]time.Duration{20 * time.Millisecond}, 2000)
		})
		var sent []string
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("ord-%03d", i)
			sent = append(sent, id)
			if _, err := st.CreateNotificationHandoff(ctx, core.Notification{ID: id, Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: json.RawMessage(`{}`)}, "test", d); err != nil {
				t.Fatal(err)
			}
		}
		// The neighbour gets everything while the line is held.
		waitUntil(t, "the unordered neighbour's deliveries", func() bool { return len(rcv.arrivals("/free")) >= n })
		// The line is held at the failing delivery until the test releases
		// it, and the owner's view says so once that delivery has failed.
		var v core.WebhookView
		waitUntil(t, "the owner's view to say the line is blocked", func() bool {
			var err error
			if v, err = st.WebhookView(ctx, ordered.ID); err != nil {
				t.Fatal(err)
			}
			return v.Ordering.Blocked
		})
		if v.Ordering.Head == nil || v.Ordering.Head.NotificationID != failing || !strings.Contains(v.Ordering.BlockedReason, "500") {
			t.Fatalf("the owner's view does not say the line is blocked by %s: %+v", failing, v.Ordering)
		}
		for _, a := range rcv.arrivals("/ordered") {
			if idOf(a) > failing {
				t.Fatalf("%s reached the ordered endpoint while %s was failing", idOf(a), failing)
			}
		}
		if v.Ordering.Waiting != int64(n-8) {
			t.Errorf("%d deliveries waiting behind the head, want %d", v.Ordering.Waiting, n-8)
		}
		close(release)
		waitUntil(t, "every ordered delivery", func() bool {
			u, _ := st.Unfinished(ctx)
			return u == 0
		})
		var firsts []string
		seen := map[string]bool{}
		for _, a := range rcv.arrivals("/ordered") {
			id := idOf(a)
			if len(firsts) > 0 && id != firsts[len(firsts)-1] && seen[id] {
				t.Fatalf("%s arrived again after a later one", id)
			}
			if !seen[id] {
				seen[id] = true
				firsts = append(firsts, id)
			}
		}
		if !slices.Equal(firsts, sent) {
			t.Fatalf("the ordered endpoint got %v, want %v", firsts, sent)
		}
		if v, _ := st.WebhookView(ctx, ordered.ID); v.Ordering.Blocked || v.Ordering.Waiting != 0 {
			t.Errorf("after the line drained: %+v", v.Ordering)
		}
	})
}

// A throttled endpoint gets at most Burst + MaxPerSecond×t attempts in any
// t seconds after the deliveries were created (each attempt starts after
// the shared bucket granted it, which no scheduling delay can bring
// forward), while an unthrottled endpoint beside it takes everything first.
func TestThrottledEndpointKeepsItsRateAndSparesTheNeighbour(t *testing.T) {
	stores(t, func(t *testing.T, st *store.Store) {
		rcv := newRecorder(t)
		ctx := context.Background()
		th := core.Throttle{MaxPerSecond: 5, Burst: 3}
		if _, _, err := st.RegisterWebhookWith(ctx, rcv.srv.URL+"/slow", testSecret, core.WebhookSettings{Throttle: th}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.RegisterWebhook(ctx, rcv.srv.URL+"/fast", testSecret); err != nil {
			t.Fatal(err)
		}
		const n = 20
		d := dispatch(t, st, rcv.srv)
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := st.CreateNotificationHandoff(ctx, core.Notification{ID: fmt.Sprintf("th-%02d", i), Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: json.RawMessage(`{}`)}, "test", d); err != nil {
				t.Fatal(err)
			}
		}
		waitUntil(t, "the unthrottled endpoint's deliveries", func() bool { return len(rcv.arrivals("/fast")) >= n })
		// (n - Burst) / rate = 3.4 s is the least the throttled one needs,
		// and half of it takes 2 s: the neighbour was not made to wait.
		if got := len(rcv.arrivals("/slow")); got >= n/2+th.Burst {
			t.Errorf("the throttled endpoint had %d of %d when its neighbour had all", got, n)
		}
		waitUntil(t, "the throttled endpoint's deliveries", func() bool { return len(rcv.arrivals("/slow")) >= n })
		for k, a := range rcv.arrivals("/slow") {
			// The (k+1)th attempt was granted no earlier than
			// start + (k+1-Burst)/rate.
			earliest := start.Add(time.Duration(float64(k+1-th.Burst) / th.MaxPerSecond * float64(time.Second)))
			if a.at.Before(earliest) {
				t.Fatalf("attempt %d arrived %v after the start, before the limiter allows (%v)", k+1, a.at.Sub(start), earliest.Sub(start))
			}
		}
	})
}

func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func TestMain(m *testing.M) { storetest.Main(m) }
