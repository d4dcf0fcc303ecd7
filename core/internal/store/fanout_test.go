package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/store"
)

// Each process's fan-out takes the plain statements while no active webhook
// has settings, and they see settings chosen a moment ago in another
// process: a subscription that does not want the notification gets no
// row, an ordered webhook's delivery joins its line, a throttled one's job
// carries its throttle. Once the settings are gone, the plain statements
// serve again. Stores on one database stand for processes.
func TestFanOutSeesSettingsChosenInAnotherProcess(t *testing.T) {
	storetest.Run(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		url := b.NewDatabase(t)
		box := newBox(t)
		open := func() *store.Store { return storetest.Open(t, url, box, store.Options{}) }
		s1, s2 := open(), open()
		register := func(s *store.Store, name string, set core.WebhookSettings) core.Webhook {
			t.Helper()
			wh, _, err := s.RegisterWebhookWith(ctx, "https://"+name+".example.com/", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", set)
			if err != nil {
				t.Fatal(err)
			}
			return wh
		}
		plain1, plain2 := register(s1, "plain1", core.WebhookSettings{}), register(s1, "plain2", core.WebhookSettings{})
		h := &handoff{room: 1000, lease: time.Minute}
		if _, err := s1.CreateNotificationHandoff(ctx, core.Notification{ID: "before", Type: core.TypeVoteCast, DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}, "test", h); err != nil {
			t.Fatal(err)
		}
		if len(h.jobs) != 2 || !store.TriesPlainFanOut(s1) {
			t.Fatalf("without settings: %d jobs, plain next %v; want 2 and the plain statements", len(h.jobs), store.TriesPlainFanOut(s1))
		}

		// Another process's owners choose settings.
		proposals := register(s2, "proposals", core.WebhookSettings{Subscription: core.Subscription{Types: []string{"proposal.*"}}})
		compound := register(s2, "compound", core.WebhookSettings{Subscription: core.Subscription{DAOs: []string{"compound"}}})
		votes := register(s2, "votes", core.WebhookSettings{Subscription: core.Subscription{Types: []string{"vote.*"}, DAOs: []string{"uniswap"}}})
		ordered := register(s2, "ordered", core.WebhookSettings{Ordered: true})
		throttled := register(s2, "throttled", core.WebhookSettings{Throttle: core.Throttle{MaxPerSecond: 5, Burst: 2}})

		vote := func(id string) core.Notification {
			return core.Notification{ID: id, Type: core.TypeVoteCast, DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}
		}
		h = &handoff{room: 1000, lease: time.Minute}
		if _, err := s1.CreateNotificationHandoff(ctx, vote("handed"), "test", h); err != nil {
			t.Fatal(err)
		}
		// Without a dispatcher: every delivery queued (the indexer's path).
		s3 := open()
		if _, err := s3.CreateNotification(ctx, vote("queued"), "test"); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*store.Store{s1, s3} {
			if store.TriesPlainFanOut(s) {
				t.Fatal("a store that found settings in use tries the plain statements again at once")
			}
		}
		leased := map[int64]core.Job{}
		for _, j := range h.jobs {
			leased[j.WebhookID] = j
		}
		if got := slices.Sorted(mapKeys(leased)); !slices.Equal(got, []int64{plain1.ID, plain2.ID, votes.ID, throttled.ID}) {
			t.Fatalf("leased to webhooks %v, want %v", got, []int64{plain1.ID, plain2.ID, votes.ID, throttled.ID})
		}
		if th := leased[throttled.ID].Throttle; th != (core.Throttle{MaxPerSecond: 5, Burst: 2}) {
			t.Fatalf("the throttled webhook's job carries %+v", th)
		}
		if th := leased[plain1.ID].Throttle; th.On() {
			t.Fatalf("a plain webhook's job carries a throttle %+v", th)
		}
		for _, c := range []struct {
			wh     core.Webhook
			states []core.DeliveryState // of "handed" and "queued"
		}{
			{plain1, []core.DeliveryState{core.DeliveryInFlight, core.DeliveryPending}},
			{votes, []core.DeliveryState{core.DeliveryInFlight, core.DeliveryPending}},
			{throttled, []core.DeliveryState{core.DeliveryInFlight, core.DeliveryPending}},
			{proposals, nil},
			{compound, nil},
			// The line's head, then the one behind it.
			{ordered, []core.DeliveryState{core.DeliveryPending, core.DeliveryWaiting}},
		} {
			items, _, err := s2.ListDeliveries(ctx, c.wh.ID, "", core.Page{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range items {
				if d.NotificationID != "before" {
					got = append(got, d.NotificationID+":"+string(d.State))
				}
			}
			slices.Sort(got)
			var want []string
			for i, id := range []string{"handed", "queued"} {
				if c.states != nil {
					want = append(want, id+":"+string(c.states[i]))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: deliveries %v, want %v", c.wh.URL, got, want)
			}
		}

		// The settings go (deactivated, or changed back to none): the
		// plain statements serve again, for every active webhook.
		for _, wh := range []core.Webhook{proposals, compound, ordered} {
			if _, err := s2.DeactivateWebhookByID(ctx, wh.ID, "test"); err != nil {
				t.Fatal(err)
			}
		}
		none, zero := []string{}, 0.0
		for _, wh := range []core.Webhook{votes, throttled} {
			if _, err := s2.UpdateWebhookSettings(ctx, wh.ID, core.SettingsPatch{Types: &none, DAOs: &none, MaxPerSecond: &zero}); err != nil {
				t.Fatal(err)
			}
		}
		store.ForgetSettingsFound(s1)
		h = &handoff{room: 1000, lease: time.Minute}
		if _, err := s1.CreateNotificationHandoff(ctx, core.Notification{ID: "after", Type: core.TypeProposalCreated, DAO: "compound", OccurredAt: time.Now(), Data: []byte(`{}`)}, "test", h); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, j := range h.jobs {
			if j.Throttle.On() {
				t.Fatalf("job %+v carries a throttle", j)
			}
			got = append(got, j.WebhookID)
		}
		if want := []int64{plain1.ID, plain2.ID, votes.ID, throttled.ID}; !slices.Equal(got, want) || !store.TriesPlainFanOut(s1) {
			t.Fatalf("after the settings went: leased to %v (want %v), plain next %v", got, want, store.TriesPlainFanOut(s1))
		}
	})
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The fan-out asks whether any active webhook has settings once per
// notification: the question reads migration 0050's partial index, never
// the webhooks themselves, on both databases, however many there are.
func TestSettingsInUseReadsItsIndex(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		db := s.DB().WithContext(ctx)
		if err := db.Exec(`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 2000)
			INSERT INTO webhooks (url, state, secret_ciphertext, created_at, updated_at, deactivated_reason, consecutive_failures)
			SELECT 'https://h' || n || '.example.com/', 'active', ?, ?, ?, '', 0 FROM c`, []byte("x"), time.Now(), time.Now()).Error; err != nil {
			t.Fatal(err)
		}
		var plan []string
		if s.Dialect() == store.Postgres {
			db.Exec("ANALYZE webhooks")
			if err := db.Raw("EXPLAIN SELECT " + store.SettingsInUse).Scan(&plan).Error; err != nil {
				t.Fatal(err)
			}
		} else {
			var rows []struct {
				ID, Parent, Notused int
				Detail              string
			}
			if err := db.Raw("EXPLAIN QUERY PLAN SELECT " + store.SettingsInUse).Scan(&rows).Error; err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				plan = append(plan, r.Detail)
			}
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "ix_webhooks_with_settings") || strings.Contains(text, "Seq Scan") || strings.Contains(text, "SCAN webhooks") {
			t.Fatalf("the settings question does not read its index:\n%s", text)
		}
	})
}
