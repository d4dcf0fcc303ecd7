package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/store"
)

// The throttle's bucket, on a clock the test moves: over any interval of
// length L it grants at most Burst + L×MaxPerSecond attempts, it grants
// Burst at once from full, and it answers how long until the next grant.
func TestThrottleBucketGrantsWithinTheLimit(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		store.SetClock(s, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
		th := core.Throttle{MaxPerSecond: 4, Burst: 3}
		wh, _, err := s.RegisterWebhookWith(ctx, "https://throttle.example.com/", "whsec_x", core.WebhookSettings{Throttle: th})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if wait, err := s.TakeThrottle(ctx, wh.ID, th); err != nil || wait != 0 {
				t.Fatalf("grant %d from a full bucket: wait %v, %v", i+1, wait, err)
			}
		}
		wait, err := s.TakeThrottle(ctx, wh.ID, th)
		if err != nil || wait <= 0 || wait > 250*time.Millisecond+time.Millisecond {
			t.Fatalf("the fourth at once: wait %v (want up to 250 ms), %v", wait, err)
		}
		// Requests at random moments over 20 simulated seconds.
		var granted []time.Time
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 400; i++ {
			mu.Lock()
			now = now.Add(time.Duration(rng.IntN(100)) * time.Millisecond)
			at := now
			mu.Unlock()
			w, err := s.TakeThrottle(ctx, wh.ID, th)
			if err != nil {
				t.Fatal(err)
			}
			if w == 0 {
				granted = append(granted, at)
			}
		}
		if len(granted) < 40 {
			t.Fatalf("only %d grants in 20 s at 4/s", len(granted))
		}
		for i := range granted {
			for j := i; j < len(granted); j++ {
				l := granted[j].Sub(granted[i]).Seconds()
				if n := j - i + 1; float64(n) > float64(th.Burst)+l*th.MaxPerSecond+1e-9 {
					t.Fatalf("%d grants within %.3f s: more than burst %d + %.1f/s", n, l, th.Burst, th.MaxPerSecond)
				}
			}
		}
	})
}

// Ordered lines across two stores on one database (two processes): each
// fan-out and completion promotes at most one head per webhook, so a line
// never has two deliveries queued at once, and the heads come in order.
func TestOrderedLineHasOneHeadAcrossProcesses(t *testing.T) {
	for _, name := range []string{"postgres"} {
		t.Run(name, func(t *testing.T) {
			url := storetest.Postgres.NewDatabase(t)
			box := newBox(t)
			s1 := storetest.Open(t, url, box, store.Options{})
			s2 := storetest.Open(t, url, box, store.Options{})
			ctx := context.Background()
			wh, _, err := s1.RegisterWebhookWith(ctx, "https://ordered.example.com/", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", core.WebhookSettings{Ordered: true})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for p, st := range []*store.Store{s1, s2} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 50; i++ {
						if _, err := st.CreateNotification(ctx, core.Notification{ID: fmt.Sprintf("p%d-%02d", p, i), Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}, "test"); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
			// Drain the line with both stores claiming and completing.
			var delivered []int64
			for len(delivered) < 100 {
				progressed := false
				for _, st := range []*store.Store{s1, s2} {
					if _, err := st.PromoteOrdered(ctx); err != nil {
						t.Fatal(err)
					}
					jobs, err := st.Claim(ctx, 10, time.Minute, nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(jobs) > 1 {
						t.Fatalf("an ordered line had %d deliveries claimable at once", len(jobs))
					}
					for _, j := range jobs {
						if !j.Ordered {
							t.Fatal("a claimed head is not marked ordered")
						}
						delivered = append(delivered, j.DeliveryID)
						if _, err := st.Complete(ctx, []core.AttemptResult{{Job: j, Outcome: core.OutcomeSucceeded, StartedAt: time.Now(), StatusCode: 200}}, 0); err != nil {
							t.Fatal(err)
						}
						progressed = true
					}
				}
				if !progressed {
					n, _ := s1.Unfinished(ctx)
					t.Fatalf("the line stalled after %d deliveries with %d unfinished", len(delivered), n)
				}
			}
			for i := 1; i < len(delivered); i++ {
				if delivered[i] <= delivered[i-1] {
					t.Fatalf("delivery %d came after %d", delivered[i], delivered[i-1])
				}
			}
			_ = wh
		})
	}
}
