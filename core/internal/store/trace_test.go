package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/store"
)

// fakeTracer hands out one traceparent per notification and records which
// traces the store ended (stored) or left open (duplicates).
type fakeTracer struct{ ended map[string]bool }

func (f *fakeTracer) StartNotification(_ context.Context, n core.Notification) (string, func(bool)) {
	tp := traceParentOf(n.ID)
	return tp, func(stored bool) { f.ended[n.ID] = stored }
}

func traceParentOf(id string) string {
	return fmt.Sprintf("00-%032x-%016x-01", len(id)*7919, len(id)*104729)
}

func TestTraceParentIsStoredWithTheNotification(t *testing.T) {
	storetest.Run(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		tr := &fakeTracer{ended: map[string]bool{}}
		url, box := b.NewDatabase(t), newBox(t)
		s := storetest.Open(t, url, box, store.Options{Tracer: tr})
		for i := 0; i < 2; i++ {
			if _, _, err := s.RegisterWebhook(ctx, fmt.Sprintf("https://t%d.example.com/", i), "whsec_t"); err != nil {
				t.Fatal(err)
			}
		}
		// One delivery handed over at fan-out, one left in the queue.
		h := &handoff{room: 1, lease: time.Minute}
		if created, err := s.CreateNotificationHandoff(ctx, notification("n-traced"), "admin", h); err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		if len(h.jobs) != 1 || h.jobs[0].TraceParent != traceParentOf("n-traced") {
			t.Fatalf("handed jobs %+v, want one with the notification's traceparent", h.jobs)
		}
		if created, _ := s.CreateNotification(ctx, notification("n-traced"), "admin"); created {
			t.Fatal("stored twice")
		}
		if stored, ok := tr.ended["n-traced"]; !ok || stored {
			t.Fatalf("a duplicate's trace: ended %v (called %v); want end(false)", stored, ok)
		}
		// A producer's own transaction (the indexer's path).
		if err := s.DB().Transaction(func(tx *gorm.DB) error {
			_, err := s.InsertNotificationTx(tx, notification("n-indexed"), "chain")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !tr.ended["n-indexed"] {
			t.Fatal("the indexed notification's root span was not ended")
		}
		// A restart: the stored traceparent comes back with every claim,
		// and a process without tracing still passes it on.
		s.Close()
		s = storetest.Open(t, url, box, store.Options{})
		jobs, err := s.Claim(ctx, 10, time.Minute, nil)
		if err != nil || len(jobs) != 3 {
			t.Fatalf("claim: %d jobs, %v; want 3", len(jobs), err)
		}
		for _, j := range jobs {
			if want := traceParentOf(j.Notification.ID); j.TraceParent != want {
				t.Fatalf("claimed job of %s: traceparent %q, want %q", j.Notification.ID, j.TraceParent, want)
			}
		}
		if _, err := s.CreateNotification(ctx, notification("n-untraced"), "admin"); err != nil {
			t.Fatal(err)
		}
		jobs, err = s.Claim(ctx, 10, time.Minute, nil)
		if err != nil || len(jobs) != 2 || jobs[0].TraceParent != "" {
			t.Fatalf("untraced claim: %+v, %v", jobs, err)
		}
	})
}
