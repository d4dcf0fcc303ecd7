package e2e_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	_ "modernc.org/sqlite"
)

func sqliteURL(t *testing.T) (url, path string) {
	url = storetest.SQLite.NewDatabase(t)
	return url, storetest.Path(url)
}

func TestSignedDeliveryAndDeactivation(t *testing.T) {
	rcv := newReceiver(t)
	db, _ := sqliteURL(t)
	p := startGovgate(t, db, rcv.caFile, deliveryConfig)

	secret := p.register(t, rcv.url("/hook"))
	rcv.setSecret("/hook", secret)
	p.notify(t, "ntf-e2e-1", "uniswap", map[string]any{"proposalId": "42", "note": "héllo"})
	waitFor(t, "the signed delivery", 10*time.Second, func() bool { return rcv.count("/hook", "ntf-e2e-1") == 1 })

	rcv.mu.Lock()
	body, h := rcv.bodies["/hook ntf-e2e-1"], rcv.headers["/hook ntf-e2e-1"]
	rcv.mu.Unlock()
	var n struct {
		ID, Type, DAO, OccurredAt string
		Data                      map[string]any
	}
	if err := json.Unmarshal(body, &n); err != nil || n.ID != "ntf-e2e-1" || n.Type != "test" || n.DAO != "uniswap" || n.Data["note"] != "héllo" {
		t.Fatalf("body %s (%v)", body, err)
	}
	if _, err := time.Parse(time.RFC3339, n.OccurredAt); err != nil {
		t.Fatalf("occurredAt %q: %v", n.OccurredAt, err)
	}
	for name, want := range map[string]string{"Content-Type": "application/json", "X-Webhook-Id": "ntf-e2e-1", "Webhook-Id": "ntf-e2e-1"} {
		if h.Get(name) != want {
			t.Errorf("%s = %q, want %q", name, h.Get(name), want)
		}
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "govgate/") || !strings.HasPrefix(h.Get("Webhook-Signature"), "v1,") || h.Get("Webhook-Timestamp") != h.Get("X-Webhook-Timestamp") {
		t.Errorf("headers %v", h)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h.Get("X-Webhook-Signature-V2")) {
		t.Errorf("signature %q is not lowercase hex", h.Get("X-Webhook-Signature-V2"))
	}

	// Deactivation stops deliveries. A webhook still active gets the same
	// notification: once it has, the dispatcher has handled it, and a
	// delivery to the deactivated one would have been stored and sent.
	p.deactivate(t, rcv.url("/hook"))
	rcv.setSecret("/probe", p.register(t, rcv.url("/probe")))
	p.notify(t, "ntf-e2e-2", "uniswap", map[string]any{})
	waitFor(t, "the active webhook's delivery", 10*time.Second, func() bool { return rcv.count("/probe", "ntf-e2e-2") == 1 })
	if c := rcv.count("/hook", "ntf-e2e-2"); c != 0 {
		t.Fatalf("a deactivated webhook received %d deliveries", c)
	}
	if ds := deliveries(t, p, 1); slices.ContainsFunc(ds, func(d delivery) bool { return d.NotificationID == "ntf-e2e-2" }) {
		t.Fatalf("a deactivated webhook has a delivery of a later notification: %+v", ds)
	}
	// Re-registration reactivates with a new secret; the old one never signs again.
	secret2 := p.register(t, rcv.url("/hook"))
	if secret2 == secret {
		t.Fatal("reactivation returned the old secret")
	}
	rcv.setSecret("/hook", secret)
	p.notify(t, "ntf-e2e-3", "uniswap", map[string]any{})
	waitFor(t, "a delivery signed with the new secret to be rejected by the old one", 10*time.Second, func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return rcv.rejected > 0
	})
	rcv.setSecret("/hook", secret2)
	waitFor(t, "the retry to verify with the new secret", 15*time.Second, func() bool { return rcv.count("/hook", "ntf-e2e-3") == 1 })
}

func TestReceiverDownThenUp(t *testing.T) {
	rcv := newReceiver(t)
	db, _ := sqliteURL(t)
	p := startGovgate(t, db, rcv.caFile, deliveryConfig)
	rcv.setSecret("/down", p.register(t, rcv.url("/down")))
	rcv.down()
	p.notify(t, "ntf-down", "ens", map[string]any{"x": 1})
	waitFor(t, "two failed attempts", 20*time.Second, func() bool {
		ds := deliveries(t, p, 1)
		return len(ds) == 1 && ds[0].Attempts >= 2
	})
	rcv.up(t)
	waitFor(t, "delivery after the receiver recovered", 20*time.Second, func() bool { return rcv.count("/down", "ntf-down") == 1 })

	var ds []delivery
	waitFor(t, "the success to be recorded", 5*time.Second, func() bool {
		ds = deliveries(t, p, 1)
		return len(ds) == 1 && ds[0].State == "succeeded"
	})
	log := ds[0].AttemptLog
	if len(log) < 2 || log[0].Outcome != "retry" || log[0].Error == "" || log[len(log)-1].Outcome != "succeeded" {
		t.Fatalf("attempt log %+v", log)
	}
}

// delivery is a delivery as the admin API lists it.
type delivery struct {
	NotificationID string
	State          string
	Attempts       int
	AttemptLog     []struct {
		Outcome string
		Error   string
	}
}

// deliveries returns what the admin API lists of a webhook's deliveries.
func deliveries(t *testing.T, p *proc, webhook int) []delivery {
	t.Helper()
	resp, body := do(t, "GET", fmt.Sprintf("http://%s/admin/api/webhooks/%d/deliveries", p.admin, webhook), adminToken, nil)
	var list struct{ Items []delivery }
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("deliveries of webhook %d: %d %s (%v)", webhook, resp.StatusCode, body, err)
	}
	return list.Items
}

func TestRetryAfterGoneAndReplay(t *testing.T) {
	rcv := newReceiver(t)
	var mu sync.Mutex
	calls := map[string]int{}
	rcv.status = func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		calls[path]++
		switch {
		case path == "/gone":
			return http.StatusGone
		case path == "/flaky" && calls[path] <= 2:
			return http.StatusServiceUnavailable
		case path == "/always-500":
			return 500
		}
		return 200
	}
	db, _ := sqliteURL(t)
	cfg := strings.Replace(deliveryConfig, "schedule: [200ms, 400ms, 800ms, 1s, 1s, 1s, 1s]", "schedule: [100ms, 100ms]", 1)
	p := startGovgate(t, db, rcv.caFile, cfg)
	for _, path := range []string{"/gone", "/flaky", "/always-500"} {
		rcv.setSecret(path, p.register(t, rcv.url(path)))
	}
	p.notify(t, "ntf-r", "uniswap", map[string]any{})
	waitFor(t, "the flaky receiver to get it on the third attempt", 10*time.Second, func() bool { return rcv.count("/flaky", "ntf-r") == 1 })
	waitFor(t, "410 to deactivate the webhook", 10*time.Second, func() bool {
		_, body := do(t, "GET", "http://"+p.admin+"/admin/api/webhooks?state=deactivated", adminToken, nil)
		return strings.Contains(string(body), "410 Gone")
	})
	// /always-500 exhausts 3 attempts and fails; replay sends it again.
	var failedID int64
	waitFor(t, "the delivery to fail after its last attempt", 10*time.Second, func() bool {
		_, body := do(t, "GET", "http://"+p.admin+"/admin/api/webhooks/3/deliveries", adminToken, nil)
		var list struct {
			Items []struct {
				ID         int64
				State      string
				AttemptLog []any
			}
		}
		json.Unmarshal(body, &list)
		if len(list.Items) == 1 && list.Items[0].State == "failed" && len(list.Items[0].AttemptLog) == 3 {
			failedID = list.Items[0].ID
			return true
		}
		return false
	})
	mu.Lock()
	before := calls["/always-500"]
	rcv.status = func(string) int { return 200 }
	mu.Unlock()
	resp, body := do(t, "POST", fmt.Sprintf("http://%s/admin/api/deliveries/%d/replay", p.admin, failedID), adminToken, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("replay: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "the replayed delivery", 10*time.Second, func() bool { return rcv.count("/always-500", "ntf-r") == 1 })
	if before != 3 {
		t.Fatalf("/always-500 was called %d times before replay, want 3", before)
	}
}

// TestKill9LosesNothing kills govgate with SIGKILL while 10,000 deliveries
// are under way and restarts it: every accepted notification reaches every
// webhook at least once, and the only duplicates are deliveries that were
// in flight at the kill.
func TestKill9LosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("long test")
	}
	const hooks, notes = 100, 100
	rcv := newReceiver(t)
	db, path := sqliteURL(t)
	p := startGovgate(t, db, rcv.caFile, deliveryConfig)
	for i := 0; i < hooks; i++ {
		rcv.setSecret(fmt.Sprintf("/k/%d", i), p.register(t, rcv.url(fmt.Sprintf("/k/%d", i))))
	}
	for i := 0; i < notes; i++ {
		p.notify(t, fmt.Sprintf("ntf-k-%03d", i), "uniswap", map[string]any{"i": i})
	}
	waitFor(t, "some deliveries", 60*time.Second, func() bool { return rcv.distinct() >= 1500 })
	p.kill()
	atKill := rcv.distinct()

	// What the dead process had in flight, from its database.
	sdb, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := sdb.Query(`SELECT w.url, d.notification_id FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.state = 'in_flight'`)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := map[string]bool{}
	for rows.Next() {
		var url, id string
		rows.Scan(&url, &id)
		inFlight[strings.TrimPrefix(url, "https://"+rcv.addr)+" "+id] = true
	}
	rows.Close()
	var pending int
	sdb.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE state IN ('pending', 'in_flight')`).Scan(&pending)
	sdb.Close()
	t.Logf("killed with %d delivered, %d in flight, %d unfinished", atKill, len(inFlight), pending)
	if atKill >= hooks*notes {
		t.Fatal("everything was delivered before the kill; the test proves nothing")
	}

	p.start()
	waitFor(t, "every delivery after the restart", 120*time.Second, func() bool { return rcv.distinct() == hooks*notes })
	dups := 0
	for key, n := range rcv.snapshot() {
		if n > 1 {
			dups++
			if !inFlight[key] {
				t.Errorf("%s delivered %d times but was not in flight at the kill", key, n)
			}
		}
	}
	t.Logf("duplicates after restart: %d (all among the %d in flight at the kill)", dups, len(inFlight))
}

func TestPostgresRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("long test")
	}
	const hooks, notes = 20, 50
	rcv := newReceiver(t)
	url, srv := pgURL(t)
	p := startGovgate(t, url, rcv.caFile, deliveryConfig)
	for i := 0; i < hooks; i++ {
		rcv.setSecret(fmt.Sprintf("/pg/%d", i), p.register(t, rcv.url(fmt.Sprintf("/pg/%d", i))))
	}
	// Slow the receiver (on the wall clock: it is the receiver, not the
	// code under test) so the restart lands mid-run.
	rcv.status = func(string) int { time.Sleep(20 * time.Millisecond); return 200 }
	for i := 0; i < notes; i++ {
		p.notify(t, fmt.Sprintf("ntf-pg-%03d", i), "uniswap", map[string]any{"i": i})
	}
	waitFor(t, "some deliveries", 60*time.Second, func() bool { return rcv.distinct() >= 100 })
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	stoppedAt, down := rcv.distinct(), time.Now()
	// PostgreSQL stays down until the dispatcher has met the outage on
	// both of its paths: a claim and a record of attempt results failed.
	waitFor(t, "the dispatcher to fail on the stopped database", 30*time.Second, func() bool {
		logs := p.logs()
		return strings.Contains(logs, "claim deliveries failed") && strings.Contains(logs, "record delivery attempts failed")
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL was down for %s with %d of %d delivered", time.Since(down).Round(time.Millisecond), stoppedAt, hooks*notes)
	waitFor(t, "every delivery after PostgreSQL came back", 90*time.Second, func() bool { return rcv.distinct() == hooks*notes })
	select {
	case <-p.exited:
		t.Fatalf("govgate exited:\n%s", p.logs())
	default:
	}
	if stoppedAt >= hooks*notes {
		t.Fatal("everything was delivered before the restart; the test proves nothing")
	}
}

var succeededMetric = regexp.MustCompile(`(?m)^govgate_delivery_attempts_total\{outcome="succeeded"\} (\d+)`)

func TestThreeProcessesSharePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("long test")
	}
	const hooks, notes = 10, 100
	rcv := newReceiver(t)
	rcv.status = func(string) int { time.Sleep(5 * time.Millisecond); return 200 } // a receiver that takes its time, as real ones do
	url := storetest.Postgres.NewDatabase(t)
	procs := []*proc{startGovgate(t, url, rcv.caFile, deliveryConfig)}
	procs = append(procs, startGovgate(t, url, rcv.caFile, deliveryConfig), startGovgate(t, url, rcv.caFile, deliveryConfig))
	for i := 0; i < hooks; i++ {
		rcv.setSecret(fmt.Sprintf("/s/%d", i), procs[i%3].register(t, rcv.url(fmt.Sprintf("/s/%d", i))))
	}
	for i := 0; i < notes; i++ {
		procs[i%3].notify(t, fmt.Sprintf("ntf-s-%03d", i), "uniswap", map[string]any{"i": i})
	}
	waitFor(t, "every delivery", 60*time.Second, func() bool { return rcv.distinct() == hooks*notes })
	var counts []int
	total := 0
	waitFor(t, "every success to be recorded", 30*time.Second, func() bool {
		counts, total = nil, 0
		for _, p := range procs {
			_, body := do(t, "GET", "http://"+p.admin+"/metrics", adminToken, nil)
			n := 0
			if m := succeededMetric.FindSubmatch(body); m != nil {
				n, _ = strconv.Atoi(string(m[1]))
			}
			counts = append(counts, n)
			total += n
		}
		return total >= hooks*notes
	})
	for i, n := range counts {
		t.Logf("process %d delivered %d", i, n)
		if n == 0 {
			t.Errorf("process %d did no work", i)
		}
	}
	for key, n := range rcv.snapshot() {
		if n != 1 {
			t.Errorf("%s delivered %d times in normal operation", key, n)
		}
	}
	if total != hooks*notes {
		t.Errorf("processes recorded %d successes, want %d", total, hooks*notes)
	}
}
