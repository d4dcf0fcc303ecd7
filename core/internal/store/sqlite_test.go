package store_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

// TestOpensADatabaseOfTheEarlierSQLiteDriver opens a database written by
// govgate when it used glebarez/go-sqlite (testdata/sqlite-glebarez.db: one
// webhook, a delivered notification and a pending one, made at commit
// f027ba2 with store.Open, RegisterWebhook, CreateNotification, Claim and
// Complete) and works the queue on it. The queue compares stored times as
// text in SQL, so the driver must keep writing them in the form that one
// did: a different form would sort new times against old ones wrongly.
func TestOpensADatabaseOfTheEarlierSQLiteDriver(t *testing.T) {
	raw, err := os.ReadFile("testdata/sqlite-glebarez.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "govgate.db")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	ctx := context.Background()
	s := storetest.Open(t, "sqlite:"+path, box, store.Options{})

	hooks, _, err := s.ListWebhooks(ctx, core.WebhookFilter{}, core.Page{})
	if err != nil || len(hooks) != 1 || hooks[0].CreatedAt.Year() != 2026 {
		t.Fatalf("webhooks = %+v, %v", hooks, err)
	}
	// The pending delivery was due when it was written: a claim now, with
	// times written by this driver, must find it, and only it.
	jobs, err := s.Claim(ctx, 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].Notification.ID != "evt_pending" || jobs[0].Secret == "" {
		t.Fatalf("claim = %+v, %v", jobs, err)
	}
	// A delivery written now sorts after the old ones.
	n := core.Notification{ID: "evt_new", Type: core.TypeVoteCast, DAO: "dev-oz", OccurredAt: time.Now(), Data: []byte(`{}`)}
	if _, err := s.CreateNotification(ctx, n, "indexer"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, []core.AttemptResult{{Job: jobs[0], Outcome: core.OutcomeSucceeded, StatusCode: 204, StartedAt: time.Now(), Duration: time.Millisecond}}, 0); err != nil {
		t.Fatal(err)
	}
	items, _, err := s.ListDeliveries(ctx, hooks[0].ID, "", core.Page{})
	if err != nil || len(items) != 3 {
		t.Fatalf("deliveries = %+v, %v", items, err)
	}
	states := map[string]core.DeliveryState{}
	for _, d := range items {
		states[d.NotificationID] = d.State
		if d.CreatedAt.IsZero() {
			t.Errorf("delivery %d has no creation time", d.ID)
		}
	}
	if states["evt_done"] != core.DeliverySucceeded || states["evt_pending"] != core.DeliverySucceeded || states["evt_new"] != core.DeliveryPending {
		t.Errorf("states = %v", states)
	}
	// The text of a time written now has the old form, byte for byte.
	var oldForm, newForm string
	if err := s.DB().Raw(`SELECT (SELECT hex(created_at) FROM deliveries WHERE notification_id = 'evt_done'), (SELECT hex(created_at) FROM deliveries WHERE notification_id = 'evt_new')`).Row().Scan(&oldForm, &newForm); err != nil {
		t.Fatal(err)
	}
	shape := func(h string) string {
		b, _ := hex.DecodeString(h)
		return regexp.MustCompile(`[0-9]`).ReplaceAllString(string(b), "9")
	}
	if !strings.HasSuffix(shape(oldForm), "+99:99") {
		t.Fatalf("fixture time %q is not in the form it was written in", shape(oldForm))
	}
	if o, n := shape(oldForm), shape(newForm); o[:19] != n[:19] || o[len(o)-6:] != n[len(n)-6:] {
		t.Errorf("times are written as %q, earlier as %q", n, o)
	}
	if items[0].NotificationID != "evt_new" {
		t.Errorf("newest first: got %s first", items[0].NotificationID)
	}
}
