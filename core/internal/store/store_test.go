package store_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

func TestMain(m *testing.M) { storetest.Main(m) }

type backend struct {
	name string
	open func(t testing.TB) (*store.Store, string)
}

func newBox(t testing.TB) *secrets.Box { return storetest.NewBox(t) }

// backends is the contract suite's list: every test runs on each of
// storetest's databases (SQLite and a real PostgreSQL). open returns the
// store and where it is: a SQLite file's path, a PostgreSQL URL.
func backends() []backend {
	var out []backend
	for _, b := range storetest.Backends() {
		out = append(out, backend{b.Name, func(t testing.TB) (*store.Store, string) {
			url := b.NewDatabase(t)
			where := url
			if p := storetest.Path(url); p != "" {
				where = p
			}
			return storetest.Open(t, url, newBox(t), store.Options{}), where
		}})
	}
	return out
}

func each(t *testing.T, fn func(t *testing.T, s *store.Store, where string)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s, where := b.open(t)
			fn(t, s, where)
		})
	}
}

func TestWebhookLifecycle(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		url := "https://hooks.example.com/x"
		wh, created, err := s.RegisterWebhook(ctx, url, "whsec_first")
		if err != nil || !created || wh.State != core.WebhookActive {
			t.Fatalf("first registration: %+v created=%v err=%v", wh, created, err)
		}
		again, created, err := s.RegisterWebhook(ctx, url, "whsec_second")
		if err != nil || created || again.ID != wh.ID {
			t.Fatalf("second registration: created=%v err=%v", created, err)
		}
		if sec, _ := s.WebhookSecret(ctx, wh.ID); sec != "whsec_first" {
			t.Fatalf("an active re-registration changed the secret to %q", sec)
		}
		if _, err := s.DeactivateWebhook(ctx, url, "client asked"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeactivateWebhook(ctx, url, "again"); core.ErrorCode(err) != core.ECodeNotFound {
			t.Fatalf("deactivating twice: %v", err)
		}
		if _, err := s.DeactivateWebhook(ctx, "https://unknown.example.com/", ""); core.ErrorCode(err) != core.ECodeNotFound {
			t.Fatalf("deactivating unknown: %v", err)
		}
		re, created, err := s.RegisterWebhook(ctx, url, "whsec_third")
		if err != nil || !created || re.ID != wh.ID || re.State != core.WebhookActive || re.DeactivatedAt != nil {
			t.Fatalf("reactivation: %+v created=%v err=%v", re, created, err)
		}
		if sec, _ := s.WebhookSecret(ctx, wh.ID); sec != "whsec_third" {
			t.Fatalf("reactivation kept the old secret: %q", sec)
		}
		list, next, err := s.ListWebhooks(ctx, core.WebhookFilter{}, core.Page{})
		if err != nil || len(list) != 1 || next != 0 {
			t.Fatalf("list: %v %d %v", list, next, err)
		}
	})
}

func TestConcurrentFirstRegistration(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			created int
			secrets = map[string]bool{}
		)
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				sec := fmt.Sprintf("whsec_%d", i)
				_, c, err := s.RegisterWebhook(ctx, "https://race.example.com/hook", sec)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if c {
					created++
					secrets[sec] = true
				}
			}(i)
		}
		wg.Wait()
		if created != 1 {
			t.Fatalf("%d registrations were told they created the webhook, want 1", created)
		}
		var n int64
		s.DB().Table("webhooks").Count(&n)
		if n != 1 {
			t.Fatalf("%d rows stored, want 1", n)
		}
		list, _, _ := s.ListWebhooks(ctx, core.WebhookFilter{}, core.Page{})
		sec, _ := s.WebhookSecret(ctx, list[0].ID)
		if !secrets[sec] {
			t.Fatalf("stored secret %q is not the one handed to the winner", sec)
		}
	})
}

func TestSecretsEncryptedAtRest(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, where string) {
		ctx := context.Background()
		secret := "whsec_PLAINTEXTMARKERdGhpcyBpcyBhIHNlY3JldA=="
		if _, _, err := s.RegisterWebhook(ctx, "https://enc.example.com/", secret); err != nil {
			t.Fatal(err)
		}
		rows, err := s.DB().Raw("SELECT * FROM webhooks").Rows()
		if err != nil {
			t.Fatal(err)
		}
		var dump []byte
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			for i := range vals {
				vals[i] = new(any)
			}
			rows.Scan(vals...)
			dump = append(dump, fmt.Sprint(vals...)...)
			for _, v := range vals {
				if b, ok := (*v.(*any)).([]byte); ok {
					dump = append(dump, b...)
				}
			}
		}
		rows.Close()
		if len(dump) == 0 {
			t.Fatal("read nothing from the webhooks table")
		}
		if bytes.Contains(dump, []byte("PLAINTEXTMARKER")) {
			t.Fatal("plaintext secret found in the webhooks table")
		}
		if s.Dialect() == store.SQLite {
			s.DB().Exec("PRAGMA wal_checkpoint(FULL)")
			for _, f := range []string{where, where + "-wal"} {
				raw, err := os.ReadFile(f)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				if bytes.Contains(raw, []byte("PLAINTEXTMARKER")) {
					t.Fatalf("plaintext secret found in %s", f)
				}
			}
		}
	})
}

func notification(id string) core.Notification {
	return core.Notification{ID: id, Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: json.RawMessage(`{"k": 1}`)}
}

func TestNotificationFanOutAndQueue(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		a, _, _ := s.RegisterWebhook(ctx, "https://a.example.com/", "whsec_a")
		b, _, _ := s.RegisterWebhook(ctx, "https://b.example.com/", "whsec_b")
		c, _, _ := s.RegisterWebhook(ctx, "https://c.example.com/", "whsec_c")
		s.DeactivateWebhook(ctx, c.URL, "")

		created, err := s.CreateNotification(ctx, notification("n1"), "admin")
		if err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		if created, _ := s.CreateNotification(ctx, notification("n1"), "admin"); created {
			t.Fatal("the same id stored twice")
		}
		jobs, err := s.Claim(ctx, 10, time.Minute, nil)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		for _, j := range jobs {
			if j.Attempt != 1 || j.Notification.ID != "n1" || (j.Secret != "whsec_a" && j.Secret != "whsec_b") || !json.Valid(j.Body) ||
				time.Until(j.LeaseExpires) <= 0 || time.Until(j.LeaseExpires) > time.Minute {
				t.Fatalf("bad job %+v", j)
			}
		}
		if more, _ := s.Claim(ctx, 10, time.Minute, nil); len(more) != 0 {
			t.Fatalf("leased deliveries claimed twice: %d", len(more))
		}
		var ja, jb core.Job
		for _, j := range jobs {
			if j.WebhookID == a.ID {
				ja = j
			} else {
				jb = j
			}
		}
		now := time.Now()
		_, err = s.Complete(ctx, []core.AttemptResult{
			{Job: ja, Outcome: core.OutcomeSucceeded, StartedAt: now, StatusCode: 200},
			{Job: jb, Outcome: core.OutcomeRetry, StartedAt: now, StatusCode: 500, Error: "status 500", NextAttemptAt: now.Add(-time.Second)},
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		// A completion with a stale lease changes nothing.
		if _, err := s.Complete(ctx, []core.AttemptResult{{Job: jb, Outcome: core.OutcomeSucceeded, StartedAt: now}}, 0); err != nil {
			t.Fatal(err)
		}
		retry, _ := s.Claim(ctx, 10, time.Minute, nil)
		if len(retry) != 1 || retry[0].WebhookID != b.ID || retry[0].Attempt != 2 {
			t.Fatalf("retry claim: %+v", retry)
		}
		list, _, err := s.ListDeliveries(ctx, b.ID, "", core.Page{})
		if err != nil || len(list) != 1 || len(list[0].AttemptLog) != 1 || list[0].AttemptLog[0].StatusCode != 500 || list[0].DAO != "uniswap" {
			t.Fatalf("deliveries of b: %+v %v", list, err)
		}
		s.Complete(ctx, []core.AttemptResult{{Job: retry[0], Outcome: core.OutcomeFailed, StartedAt: now, StatusCode: 500}}, 0)
		d, _ := s.Delivery(ctx, retry[0].DeliveryID)
		if d.State != core.DeliveryFailed {
			t.Fatalf("state %s, want failed", d.State)
		}
		if _, err := s.Replay(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		replayed, _ := s.Claim(ctx, 10, time.Minute, nil)
		if len(replayed) != 1 || replayed[0].Attempt != 1 {
			t.Fatalf("replay claim: %+v", replayed)
		}
		if _, err := s.Replay(ctx, d.ID); core.ErrorCode(err) != core.ECodeConflict {
			t.Fatalf("replaying an in-flight delivery: %v", err)
		}
		stats, err := s.QueueStats(ctx)
		if err != nil || stats.Depth != 1 || stats.ByState["succeeded"] != 1 {
			t.Fatalf("stats %+v %v", stats, err)
		}
	})
}

func TestLeaseExpiryAndExclusion(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		a, _, _ := s.RegisterWebhook(ctx, "https://a.example.com/", "whsec_a")
		s.RegisterWebhook(ctx, "https://b.example.com/", "whsec_b")
		s.CreateNotification(ctx, notification("n1"), "admin")
		// The leases are a minute long and only the store's clock ends them,
		// so a slow machine cannot end one between two claims.
		excl, _ := s.Claim(ctx, 10, time.Minute, []int64{a.ID})
		if len(excl) != 1 || excl[0].WebhookID == a.ID {
			t.Fatalf("exclusion ignored: %+v", excl)
		}
		// A worker that dies keeps its lease until it runs out; then the
		// delivery is taken up again, its lost attempt counted.
		crashed, _ := s.Claim(ctx, 10, time.Minute, nil)
		if len(crashed) != 1 || crashed[0].WebhookID != a.ID {
			t.Fatalf("claim a: %+v", crashed)
		}
		// The store's clock moves past both leases.
		store.SetNow(s, func() time.Time { return time.Now().UTC().Add(2 * time.Minute) })
		again, _ := s.Claim(ctx, 10, time.Minute, nil)
		if len(again) != 2 {
			t.Fatalf("after lease expiry claimed %d, want 2 (both leases ran out)", len(again))
		}
		if err := s.Release(ctx, again, 0); err != nil {
			t.Fatal(err)
		}
		back, _ := s.Claim(ctx, 10, time.Minute, nil)
		for _, j := range back {
			if j.Attempt != 2 {
				t.Fatalf("release counted an attempt: %+v", j)
			}
		}
	})
}

func TestGoneAndDisableAfter(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		a, _, _ := s.RegisterWebhook(ctx, "https://a.example.com/", "whsec_a")
		b, _, _ := s.RegisterWebhook(ctx, "https://b.example.com/", "whsec_b")
		s.CreateNotification(ctx, notification("n1"), "admin")
		s.CreateNotification(ctx, notification("n2"), "admin")
		var deact []int64
		// Each round runs on a store clock a minute later than the last, past
		// the 20 ms disable_after window that starts at the first failure.
		for round := 0; round < 2; round++ {
			later := time.Now().UTC().Add(time.Duration(round) * time.Minute)
			store.SetNow(s, func() time.Time { return later })
			jobs, _ := s.Claim(ctx, 2, time.Minute, nil)
			var res []core.AttemptResult
			for _, j := range jobs {
				o := core.OutcomeGone
				if j.WebhookID == b.ID {
					o = core.OutcomeRetry
				}
				res = append(res, core.AttemptResult{Job: j, Outcome: o, StartedAt: time.Now(), StatusCode: 410, NextAttemptAt: time.Now()})
			}
			d, err := s.Complete(ctx, res, 20*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			deact = append(deact, d...)
		}
		if len(deact) != 2 {
			t.Fatalf("deactivated %v, want both", deact)
		}
		wa, _ := s.Webhook(ctx, a.ID)
		wb, _ := s.Webhook(ctx, b.ID)
		if wa.State != core.WebhookDeactivated || wa.DeactivatedReason != "receiver answered 410 Gone" {
			t.Fatalf("a: %+v", wa)
		}
		if wb.State != core.WebhookDeactivated || wb.DeactivatedReason == "" {
			t.Fatalf("b: %+v", wb)
		}
		if left, _ := s.Claim(ctx, 10, time.Minute, nil); len(left) != 0 {
			t.Fatalf("deliveries of deactivated webhooks still due: %d", len(left))
		}
	})
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.db")
	box := newBox(t)
	s := storetest.Open(t, "sqlite:"+path, box, store.Options{})
	s.RegisterWebhook(context.Background(), "https://keep.example.com/", "whsec_k")
	s.Close()
	s2 := storetest.Open(t, "sqlite:"+path, box, store.Options{})
	list, _, _ := s2.ListWebhooks(context.Background(), core.WebhookFilter{}, core.Page{})
	if len(list) != 1 {
		t.Fatalf("after reopening: %d webhooks", len(list))
	}
}

func TestPluginsAndChains(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		v0, _ := s.PluginsVersion(ctx)
		p, err := s.SavePlugin(ctx, core.StoredPlugin{Name: "dao-filter", Version: "1.0.0", SHA256: "aa", Source: "upload", Wasm: []byte("\x00asm v1")})
		if err != nil || !p.Enabled || p.Size != 7 {
			t.Fatalf("save: %+v %v", p, err)
		}
		if _, err := s.SavePlugin(ctx, core.StoredPlugin{Name: "dao-filter", Version: "1.1.0", SHA256: "bb", Source: "upload", Wasm: []byte("\x00asm v2!")}); err != nil {
			t.Fatal(err)
		}
		list, _ := s.Plugins(ctx, true)
		if len(list) != 1 || list[0].Version != "1.1.0" || string(list[0].Wasm) != "\x00asm v2!" {
			t.Fatalf("list: %+v", list)
		}
		if p, err := s.SetPluginEnabled(ctx, "dao-filter", false); err != nil || p.Enabled {
			t.Fatalf("disable: %+v %v", p, err)
		}
		if _, err := s.SetPluginEnabled(ctx, "nope", true); core.ErrorCode(err) != core.ECodeNotFound {
			t.Fatalf("enable unknown: %v", err)
		}
		chain := []core.ChainEntry{{Plugin: "dao-filter", Config: json.RawMessage(`{"daos":["uniswap"]}`), FailurePolicy: "closed"}}
		if err := s.SetChain(ctx, core.GlobalChain, chain); err != nil {
			t.Fatal(err)
		}
		s.SetChain(ctx, 7, chain)
		got, _ := s.Chain(ctx, core.GlobalChain)
		if len(got) != 1 || string(got[0].Config) != `{"daos":["uniswap"]}` {
			t.Fatalf("chain: %+v", got)
		}
		all, _ := s.Chains(ctx)
		if len(all) != 2 {
			t.Fatalf("chains: %v", all)
		}
		if empty, _ := s.Chain(ctx, 99); len(empty) != 0 {
			t.Fatalf("missing chain: %v", empty)
		}
		v1, _ := s.PluginsVersion(ctx)
		if v1 == v0 {
			t.Fatal("version did not change")
		}
		if err := s.DeletePlugin(ctx, "dao-filter"); err != nil {
			t.Fatal(err)
		}
		if v2, _ := s.PluginsVersion(ctx); v2 == v1 {
			t.Fatal("version did not change after delete")
		}
	})
}

func TestWebhookSearchIsLiteralAndCaseInsensitive(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		s.RegisterWebhook(ctx, "https://a.example.com/my_hook", "whsec_1")
		s.RegisterWebhook(ctx, "https://b.example.com/myXhook", "whsec_2")
		s.RegisterWebhook(ctx, "https://c.example.com/100%25", "whsec_3")
		for _, tc := range []struct {
			search string
			want   int
		}{{"my_hook", 1}, {"MY_HOOK", 1}, {"%", 1}, {"example.com", 3}, {`\`, 0}} {
			got, _, err := s.ListWebhooks(ctx, core.WebhookFilter{Search: tc.search}, core.Page{})
			if err != nil || len(got) != tc.want {
				t.Errorf("search %q: %d results (%v), want %d", tc.search, len(got), err, tc.want)
			}
		}
	})
}

// handoff records what CreateNotificationHandoff reserves and hands over,
// as the dispatcher would receive it.
type handoff struct {
	room    int
	exclude []int64
	lease   time.Duration
	got     core.Reservation
	jobs    []core.Job
	handed  int
	woken   int
}

func (h *handoff) Wake() { h.woken++ }

func (h *handoff) Reserve(max int) core.Reservation {
	h.got = core.Reservation{N: min(max, h.room), Exclude: h.exclude, Lease: h.lease}
	return h.got
}

func (h *handoff) Hand(r core.Reservation, jobs []core.Job) {
	if r.N != h.got.N {
		panic("handed a reservation that was not made")
	}
	h.jobs, h.handed = jobs, h.handed+1
}

func TestFanOutHandsLeasedDeliveriesToTheLocalDispatcher(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		var hooks []core.Webhook
		for i := 0; i < 6; i++ {
			w, _, err := s.RegisterWebhook(ctx, fmt.Sprintf("https://h%d.example.com/", i), fmt.Sprintf("whsec_%d", i))
			if err != nil {
				t.Fatal(err)
			}
			hooks = append(hooks, w)
		}
		s.DeactivateWebhook(ctx, hooks[5].URL, "")
		// Room for 3, webhook 1 at its concurrency limit: webhooks 0, 2
		// and 3 are leased; 1 and 4 wait in the queue; 5 is inactive.
		h := &handoff{room: 3, exclude: []int64{hooks[1].ID}, lease: time.Hour}
		if created, err := s.CreateNotificationHandoff(ctx, notification("n1"), "admin", h); err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		if h.handed != 1 || len(h.jobs) != 3 || h.woken != 1 {
			t.Fatalf("handed %d times, %d jobs, woken %d times; want once, 3, once (two wait in the queue)", h.handed, len(h.jobs), h.woken)
		}
		for i, want := range []int{0, 2, 3} {
			j := h.jobs[i]
			if j.WebhookID != hooks[want].ID || j.WebhookURL != hooks[want].URL || j.Secret != fmt.Sprintf("whsec_%d", want) ||
				j.Attempt != 1 || j.LeaseToken == "" || j.Notification.ID != "n1" || !json.Valid(j.Body) ||
				time.Until(j.LeaseExpires) <= 0 || time.Until(j.LeaseExpires) > time.Hour {
				t.Fatalf("job %d: %+v", i, j)
			}
			if d, _ := s.Delivery(ctx, j.DeliveryID); d.State != core.DeliveryInFlight || d.Attempts != 1 || d.WebhookID != hooks[want].ID {
				t.Fatalf("leased delivery %+v", d)
			}
		}
		// The queue holds the rest, and not the leased ones.
		queued, err := s.Claim(ctx, 10, time.Hour, nil)
		if err != nil || len(queued) != 2 {
			t.Fatalf("claim the rest: %d, %v", len(queued), err)
		}
		got := map[int64]bool{queued[0].WebhookID: true, queued[1].WebhookID: true}
		if !got[hooks[1].ID] || !got[hooks[4].ID] {
			t.Fatalf("queued for %v, want webhooks 1 and 4", got)
		}
		// Handed-over jobs complete like claimed ones.
		if _, err := s.Complete(ctx, []core.AttemptResult{{Job: h.jobs[0], Outcome: core.OutcomeSucceeded, StartedAt: time.Now(), StatusCode: 200}}, 0); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.Delivery(ctx, h.jobs[0].DeliveryID); d.State != core.DeliverySucceeded {
			t.Fatalf("completed hand-off: %s", d.State)
		}
		// A lease that runs out puts a handed-over delivery back in the
		// queue, its attempt counted, as after a crash.
		h2 := &handoff{room: 10, lease: time.Minute}
		if _, err := s.CreateNotificationHandoff(ctx, notification("n2"), "admin", h2); err != nil || len(h2.jobs) != 5 || h2.woken != 0 {
			t.Fatalf("room for all: %d jobs, woken %d times (nothing to claim), %v", len(h2.jobs), h2.woken, err)
		}
		if more, _ := s.Claim(ctx, 10, time.Minute, nil); len(more) != 0 {
			t.Fatalf("every delivery of n2 was leased, yet %d were claimable", len(more))
		}
		// The store's clock moves past n2's minute-long leases, not the
		// hour-long ones above.
		store.SetNow(s, func() time.Time { return time.Now().UTC().Add(2 * time.Minute) })
		again, _ := s.Claim(ctx, 10, time.Minute, nil)
		if len(again) != 5 || again[0].Attempt != 2 {
			t.Fatalf("after the lease ran out: %d jobs %+v", len(again), again)
		}
		// A duplicate id hands over nothing and still gives the room back.
		h3 := &handoff{room: 10, lease: time.Minute}
		if created, err := s.CreateNotificationHandoff(ctx, notification("n1"), "admin", h3); err != nil || created || h3.handed != 1 || len(h3.jobs) != 0 || h3.woken != 0 {
			t.Fatalf("duplicate: created %v, handed %d with %d jobs, woken %d, %v", created, h3.handed, len(h3.jobs), h3.woken, err)
		}
		// No room: every delivery waits in the queue.
		h4 := &handoff{room: 0, lease: time.Minute}
		if _, err := s.CreateNotificationHandoff(ctx, notification("n3"), "admin", h4); err != nil || len(h4.jobs) != 0 || h4.woken != 1 {
			t.Fatalf("no room: %d jobs, woken %d, %v", len(h4.jobs), h4.woken, err)
		}
		if q, _ := s.Claim(ctx, 10, time.Minute, nil); len(q) != 5 {
			t.Fatalf("no room: %d queued, want 5", len(q))
		}
	})
}

// A batch of successes (PostgreSQL sends it as one statement) logs every
// attempt, ends the webhooks' failure streaks, records a plugin's drop, and
// leaves a delivery whose lease was lost alone.
func TestCompleteSuccesses(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		a, _, _ := s.RegisterWebhook(ctx, "https://a.example.com/", "whsec_a")
		b, _, _ := s.RegisterWebhook(ctx, "https://b.example.com/", "whsec_b")
		s.CreateNotification(ctx, notification("n1"), "admin")
		s.CreateNotification(ctx, notification("n2"), "admin")
		jobs, _ := s.Claim(ctx, 2, time.Minute, nil) // n1 to a and b
		var fail []core.AttemptResult
		for _, j := range jobs {
			fail = append(fail, core.AttemptResult{Job: j, Outcome: core.OutcomeRetry, StartedAt: time.Now(), StatusCode: 503, Error: "receiver answered 503", NextAttemptAt: time.Now().Add(time.Hour)})
		}
		if _, err := s.Complete(ctx, fail, time.Hour); err != nil {
			t.Fatal(err)
		}
		if wa, _ := s.Webhook(ctx, a.ID); wa.ConsecutiveFailures != 1 {
			t.Fatalf("failure not counted: %+v", wa)
		}
		jobs, _ = s.Claim(ctx, 10, time.Minute, nil) // n2 to a and b
		if len(jobs) != 2 {
			t.Fatalf("claimed %d", len(jobs))
		}
		var ok []core.AttemptResult
		for _, j := range jobs {
			r := core.AttemptResult{Job: j, Outcome: core.OutcomeSucceeded, StartedAt: time.Now(), Duration: 3 * time.Millisecond, StatusCode: 204, ResponseExcerpt: "fine"}
			if j.WebhookID == b.ID {
				r = core.AttemptResult{Job: j, Outcome: core.OutcomeDropped, StartedAt: time.Now(), Error: "dropped by dao-filter", PluginTrace: `[{"plugin":"dao-filter"}]`}
			}
			ok = append(ok, r)
		}
		stale := ok[0]
		stale.Job.LeaseToken = "not-the-lease"
		if _, err := s.Complete(ctx, []core.AttemptResult{stale}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.Delivery(ctx, stale.Job.DeliveryID); d.State != core.DeliveryInFlight {
			t.Fatalf("a completion without the lease changed the delivery: %s", d.State)
		}
		if _, err := s.Complete(ctx, ok, time.Hour); err != nil {
			t.Fatal(err)
		}
		wa, _ := s.Webhook(ctx, a.ID)
		if wa.ConsecutiveFailures != 0 || wa.FailingSince != nil || wa.LastDeliveryAt == nil {
			t.Fatalf("a success did not end the streak: %+v", wa)
		}
		if wb, _ := s.Webhook(ctx, b.ID); wb.ConsecutiveFailures != 1 {
			t.Fatalf("a drop counted as a success: %+v", wb)
		}
		for _, r := range ok {
			list, _, err := s.ListDeliveries(ctx, r.Job.WebhookID, "", core.Page{})
			if err != nil {
				t.Fatal(err)
			}
			var got *core.DeliveryDetail
			for i := range list {
				if list[i].ID == r.Job.DeliveryID {
					got = &list[i]
				}
			}
			if got == nil || len(got.AttemptLog) != 1 {
				t.Fatalf("delivery %d: %+v", r.Job.DeliveryID, got)
			}
			log := got.AttemptLog[0]
			switch r.Outcome {
			case core.OutcomeSucceeded:
				if got.State != core.DeliverySucceeded || got.LastStatus != 204 || got.CompletedAt == nil || log.StatusCode != 204 || log.ResponseExcerpt != "fine" || log.DurationMs != 3 || log.Outcome != "succeeded" {
					t.Fatalf("success recorded as %+v / %+v", got.Delivery, log)
				}
			default:
				if got.State != core.DeliveryDropped || got.LastError != "dropped by dao-filter" || log.Outcome != "dropped" || log.PluginTrace == "" {
					t.Fatalf("drop recorded as %+v / %+v", got.Delivery, log)
				}
			}
		}
	})
}

func TestListDeliveriesMergesQueueAndHistory(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		w, _, _ := s.RegisterWebhook(ctx, "https://w.example.com/", "whsec_w")
		s.RegisterWebhook(ctx, "https://x.example.com/", "whsec_x")
		for i := 1; i <= 9; i++ {
			if _, err := s.CreateNotification(ctx, notification(fmt.Sprintf("n%d", i)), "admin"); err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := s.Claim(ctx, 100, time.Minute, nil)
		if err != nil || len(jobs) != 18 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		// Of w's nine: three succeed, two fail for good, two go back to the
		// queue for a retry and two stay in flight.
		outcome := map[string]core.Outcome{"n1": core.OutcomeSucceeded, "n4": core.OutcomeSucceeded, "n7": core.OutcomeSucceeded,
			"n2": core.OutcomeFailed, "n5": core.OutcomeFailed, "n3": core.OutcomeRetry, "n6": core.OutcomeRetry}
		want := map[core.DeliveryState][]int64{}
		var all []int64
		var results []core.AttemptResult
		now := time.Now()
		for _, j := range jobs {
			if j.WebhookID != w.ID {
				continue
			}
			all = append(all, j.DeliveryID)
			o, ok := outcome[j.Notification.ID]
			state := map[core.Outcome]core.DeliveryState{core.OutcomeSucceeded: core.DeliverySucceeded, core.OutcomeFailed: core.DeliveryFailed, core.OutcomeRetry: core.DeliveryPending}[o]
			if !ok {
				state = core.DeliveryInFlight
			} else {
				results = append(results, core.AttemptResult{Job: j, Outcome: o, StartedAt: now, StatusCode: 500, NextAttemptAt: now.Add(time.Hour)})
			}
			want[state] = append(want[state], j.DeliveryID)
		}
		if _, err := s.Complete(ctx, results, 0); err != nil {
			t.Fatal(err)
		}
		desc := func(ids []int64) []int64 {
			out := slices.Clone(ids)
			slices.SortFunc(out, func(a, b int64) int { return cmp.Compare(b, a) })
			return out
		}
		// Every page is newest first, and the pages together are the
		// webhook's deliveries, each once, whatever their state.
		list := func(state core.DeliveryState, limit int) []int64 {
			var got []int64
			p := core.Page{Limit: limit}
			for {
				items, next, err := s.ListDeliveries(ctx, w.ID, state, p)
				if err != nil {
					t.Fatalf("list %q: %v", state, err)
				}
				for _, it := range items {
					if state != "" && it.State != state {
						t.Fatalf("list %q: got a %s delivery", state, it.State)
					}
					got = append(got, it.ID)
				}
				if next == 0 {
					return got
				}
				p.Before = next
			}
		}
		if got := list("", 2); !slices.Equal(got, desc(all)) {
			t.Fatalf("all deliveries: got %v, want %v", got, desc(all))
		}
		if got := list("", 50); !slices.Equal(got, desc(all)) {
			t.Fatalf("all deliveries in one page: got %v, want %v", got, desc(all))
		}
		for _, st := range []core.DeliveryState{core.DeliveryPending, core.DeliveryInFlight, core.DeliverySucceeded, core.DeliveryFailed, core.DeliveryCanceled} {
			if got := list(st, 2); !slices.Equal(got, desc(want[st])) {
				t.Fatalf("%s deliveries: got %v, want %v", st, got, desc(want[st]))
			}
		}
		// Deactivation cancels the queued ones, which then list as canceled.
		if _, err := s.DeactivateWebhook(ctx, w.URL, ""); err != nil {
			t.Fatal(err)
		}
		canceled := append(slices.Clone(want[core.DeliveryPending]), want[core.DeliveryInFlight]...)
		if got := list(core.DeliveryCanceled, 3); !slices.Equal(got, desc(canceled)) {
			t.Fatalf("canceled deliveries: got %v, want %v", got, desc(canceled))
		}
		if got := list(core.DeliveryPending, 3); len(got) != 0 {
			t.Fatalf("pending deliveries after deactivation: %v", got)
		}
		if got := list("", 4); !slices.Equal(got, desc(all)) {
			t.Fatalf("all deliveries after deactivation: got %v, want %v", got, desc(all))
		}
	})
}

// TestSuccessKeptInItsRow: a delivery's successful attempt is kept in its
// own row (migration 0011), not the attempt log, and read back as the log's
// last entry, whether the batch took PostgreSQL's all-success statement or
// the general path (a batch with a failure); a replay moves it into the log
// before the new round, whose success takes its place.
func TestSuccessKeptInItsRow(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		a, _, _ := s.RegisterWebhook(ctx, "https://a.example.com/", "whsec_a")
		b, _, _ := s.RegisterWebhook(ctx, "https://b.example.com/", "whsec_b")
		s.CreateNotification(ctx, notification("n1"), "admin")
		jobs, _ := s.Claim(ctx, 10, time.Minute, nil)
		if len(jobs) != 2 {
			t.Fatalf("claimed %d", len(jobs))
		}
		byHook := map[int64]core.Job{}
		for _, j := range jobs {
			byHook[j.WebhookID] = j
		}
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		success := func(j core.Job, excerpt string) core.AttemptResult {
			return core.AttemptResult{Job: j, Outcome: core.OutcomeSucceeded, StartedAt: at, Duration: 7 * time.Millisecond,
				StatusCode: 200, ResponseExcerpt: excerpt, PluginTrace: `[{"plugin":"p"}]`}
		}
		// a: a retry, then a success alone in its batch; b: a success in a
		// batch with a failure.
		if _, err := s.Complete(ctx, []core.AttemptResult{{Job: byHook[a.ID], Outcome: core.OutcomeRetry, StartedAt: at, StatusCode: 500,
			Error: "status 500", NextAttemptAt: time.Now().Add(-time.Second)}}, 0); err != nil {
			t.Fatal(err)
		}
		s.RegisterWebhook(ctx, "https://c.example.com/", "whsec_c")
		s.CreateNotification(ctx, notification("n2"), "admin")
		more, _ := s.Claim(ctx, 10, time.Minute, nil)
		var retried, bFail, cJob core.Job
		for _, j := range more {
			switch {
			case j.WebhookID == a.ID && j.Notification.ID == "n1":
				retried = j
			case j.WebhookID == b.ID:
				bFail = j
			case j.Notification.ID == "n2" && j.WebhookID != a.ID:
				cJob = j
			}
		}
		if retried.DeliveryID == 0 || bFail.DeliveryID == 0 || cJob.DeliveryID == 0 {
			t.Fatalf("claimed %+v", more)
		}
		if _, err := s.Complete(ctx, []core.AttemptResult{success(retried, "second time")}, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, []core.AttemptResult{success(byHook[b.ID], "b ok"),
			{Job: bFail, Outcome: core.OutcomeFailed, StartedAt: at, StatusCode: 500, Error: "status 500"}}, 0); err != nil {
			t.Fatal(err)
		}
		logOf := func(webhookID, deliveryID int64) []core.Attempt {
			t.Helper()
			list, _, err := s.ListDeliveries(ctx, webhookID, "", core.Page{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range list {
				if d.ID == deliveryID {
					return d.AttemptLog
				}
			}
			t.Fatalf("delivery %d not listed", deliveryID)
			return nil
		}
		want := func(log []core.Attempt, outcomes ...string) {
			t.Helper()
			var got []string
			for _, a := range log {
				got = append(got, fmt.Sprintf("%d:%s", a.Number, a.Outcome))
			}
			if fmt.Sprint(got) != fmt.Sprint(outcomes) {
				t.Fatalf("attempt log %v, want %v", got, outcomes)
			}
		}
		log := logOf(a.ID, retried.DeliveryID)
		want(log, "1:retry", "2:succeeded")
		if s := log[1]; s.StatusCode != 200 || s.ResponseExcerpt != "second time" || s.DurationMs != 7 || !s.StartedAt.Equal(at) || s.PluginTrace != `[{"plugin":"p"}]` {
			t.Fatalf("success read back as %+v", s)
		}
		want(logOf(b.ID, byHook[b.ID].DeliveryID), "1:succeeded")

		// A replay: the success joins the log, the new round's takes its place.
		if _, err := s.Replay(ctx, retried.DeliveryID); err != nil {
			t.Fatal(err)
		}
		want(logOf(a.ID, retried.DeliveryID), "1:retry", "2:succeeded")
		again, _ := s.Claim(ctx, 10, time.Minute, nil)
		var replayed core.Job
		for _, j := range again {
			if j.DeliveryID == retried.DeliveryID {
				replayed = j
			}
		}
		if replayed.Attempt != 1 {
			t.Fatalf("replayed job %+v", replayed)
		}
		if _, err := s.Complete(ctx, []core.AttemptResult{success(replayed, "replayed")}, 0); err != nil {
			t.Fatal(err)
		}
		log = logOf(a.ID, retried.DeliveryID)
		want(log, "1:retry", "2:succeeded", "1:succeeded")
		if log[1].ResponseExcerpt != "second time" || log[2].ResponseExcerpt != "replayed" {
			t.Fatalf("after the replay: %+v", log)
		}
	})
}
