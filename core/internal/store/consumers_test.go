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

// A line's promotions and its new arrivals never miss each other, with no
// sweep to repair them: two stores on one database fan out to an ordered
// webhook while two drainers claim and complete its heads as they come,
// so fan-outs race completions (a fan-out into a busy line leaves the
// promotion to the head's completion; one into an idle line promotes).
// The line never has two heads; once everything is stored and the
// drainers stop, it has exactly one claimable head while anything waits,
// and each producer's notifications arrive in the order it stored them.
func TestOrderedLineHandsOnWithoutTheSweep(t *testing.T) {
	url := storetest.Postgres.NewDatabase(t)
	box := newBox(t)
	stores := []*store.Store{storetest.Open(t, url, box, store.Options{}), storetest.Open(t, url, box, store.Options{})}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, _, err := stores[0].RegisterWebhookWith(ctx, "https://ordered.example.com/", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", core.WebhookSettings{Ordered: true}); err != nil {
		t.Fatal(err)
	}
	const each = 150
	var (
		mu        sync.Mutex
		delivered []string
	)
	// deliver claims the line's head, if it has one, and records its
	// success.
	deliver := func(st *store.Store) (int, error) {
		jobs, err := st.Claim(ctx, 10, time.Minute, nil)
		if err != nil {
			return 0, err
		}
		if len(jobs) > 1 {
			return 0, fmt.Errorf("the line had %d heads at once", len(jobs))
		}
		for _, j := range jobs {
			mu.Lock()
			delivered = append(delivered, j.Notification.ID)
			mu.Unlock()
			if _, err := st.Complete(ctx, []core.AttemptResult{{Job: j, Outcome: core.OutcomeSucceeded, StartedAt: time.Now(), StatusCode: 200}}, 0); err != nil {
				return 0, err
			}
		}
		return len(jobs), nil
	}
	var producers, drainers sync.WaitGroup
	stop := make(chan struct{})
	for p, st := range stores {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for i := 0; i < each; i++ {
				n := core.Notification{ID: fmt.Sprintf("p%d-%03d", p, i), Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}
				if _, err := st.CreateNotification(ctx, n, "test"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		drainers.Add(1)
		go func() {
			defer drainers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := deliver(st); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	producers.Wait()
	close(stop)
	drainers.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Nothing is under way now: what is left must come one head at a time,
	// each promoted by the completion of the one before.
	for i := 0; ; i++ {
		left, err := stores[0].Unfinished(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		n, err := deliver(stores[i%2])
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("the line stalled after %d deliveries with %d unfinished", len(delivered), left)
		}
	}
	if len(delivered) != 2*each {
		t.Fatalf("%d deliveries, want %d", len(delivered), 2*each)
	}
	next := map[byte]int{}
	for _, id := range delivered {
		var i int
		if _, err := fmt.Sscanf(id[3:], "%d", &i); err != nil {
			t.Fatal(err)
		}
		if i != next[id[1]] {
			t.Fatalf("producer %c's notification %d came when %d was due (%v)", id[1], i, next[id[1]], delivered)
		}
		next[id[1]]++
	}
}

// The lost wake-up that the fan-out's lock prevents, staged: a completion
// has finished the line's only delivery and, holding the line's lock,
// found nothing waiting, but has not committed, when a fan-out adds to the
// line. Read without the lock, the line would still seem to have its head
// and nobody would promote the new delivery; the fan-out must wait for the
// completion and then promote it itself.
func TestOrderedFanOutWaitsForALineBeingHandedOn(t *testing.T) {
	url := storetest.Postgres.NewDatabase(t)
	s := storetest.Open(t, url, newBox(t), store.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wh, _, err := s.RegisterWebhookWith(ctx, "https://ordered.example.com/", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", core.WebhookSettings{Ordered: true})
	if err != nil {
		t.Fatal(err)
	}
	note := func(id string) core.Notification {
		return core.Notification{ID: id, Type: "test", DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}
	}
	if _, err := s.CreateNotification(ctx, note("first"), "test"); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Claim(ctx, 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim the head: %d jobs, %v", len(jobs), err)
	}
	// The completion, as completeSucceeded and promoteLinesPG do it, held
	// open before its commit.
	tx := s.DB().WithContext(ctx).Begin()
	defer tx.Rollback()
	for _, q := range []string{
		fmt.Sprintf(`SELECT id FROM webhooks WHERE id = %d FOR NO KEY UPDATE`, wh.ID),
		fmt.Sprintf(`UPDATE deliveries SET state = 'succeeded', lease_token = '', completed_at = now() WHERE id = %d`, jobs[0].DeliveryID),
		fmt.Sprintf(`UPDATE webhooks SET ordered_head = 0 WHERE id = %d`, wh.ID),
	} {
		if err := tx.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	fanned := make(chan error, 1)
	go func() {
		_, err := s.CreateNotification(ctx, note("second"), "test")
		fanned <- err
	}()
	// Commit once the fan-out waits for the line's lock (or has returned,
	// which it must not have: then the claim below finds no head).
	for waiting := false; !waiting; {
		select {
		case err := <-fanned:
			fanned <- err
			waiting = true
			continue
		default:
		}
		var n int64
		if err := s.DB().WithContext(ctx).Raw(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO notifications%'`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		waiting = n > 0
		if ctx.Err() != nil {
			t.Fatal("the fan-out neither waited for the line's lock nor returned")
		}
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-fanned; err != nil {
		t.Fatal(err)
	}
	jobs, err = s.Claim(ctx, 10, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Notification.ID != "second" {
		t.Fatalf("after the hand-on, the line's head is %v (want the second notification's delivery)", jobs)
	}
}

// A hand-on cut short: the connection recording a head's success dies
// after the head is finished and while the next is being promoted and
// leased to the recorder (the
// test holds the next delivery's row, then ends the completion's backend,
// as a kill -9 of its process would). Nothing of the batch stays: the head
// is still in flight under its lease and nothing is promoted; once the
// lease runs out the head is delivered again, and the line goes on in
// order with nothing lost.
func TestOrderedHandOnCutShortLosesNothing(t *testing.T) {
	url := storetest.Postgres.NewDatabase(t)
	s := storetest.Open(t, url, newBox(t), store.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	now := time.Now()
	store.SetClock(s, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	if _, _, err := s.RegisterWebhookWith(ctx, "https://ordered.example.com/", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", core.WebhookSettings{Ordered: true}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.CreateNotification(ctx, core.Notification{ID: id, Type: "test", DAO: "uniswap", OccurredAt: now, Data: []byte(`{}`)}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	var delivered []string
	claim := func() []core.Job {
		t.Helper()
		jobs, err := s.Claim(ctx, 10, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) > 1 {
			t.Fatalf("the line had %d heads at once", len(jobs))
		}
		for _, j := range jobs {
			delivered = append(delivered, j.Notification.ID)
		}
		return jobs
	}
	success := func(j core.Job) []core.AttemptResult {
		return []core.AttemptResult{{Job: j, Outcome: core.OutcomeSucceeded, StartedAt: now, StatusCode: 200}}
	}
	head := claim()
	if len(head) != 1 {
		t.Fatalf("claimed %d heads, want 1", len(head))
	}
	tx := s.DB().WithContext(ctx).Begin()
	defer tx.Rollback()
	if err := tx.Exec(`SELECT id FROM deliveries WHERE notification_id = 'b' FOR UPDATE`).Error; err != nil {
		t.Fatal(err)
	}
	completed := make(chan error, 1)
	go func() {
		// As a dispatcher records it: offering room for the next head.
		_, next, err := s.CompleteHandingOn(ctx, success(head[0]), 0, core.Reservation{N: 1, Lease: time.Minute})
		if len(next) > 0 {
			err = fmt.Errorf("handed on %d with the connection dead (%v)", len(next), err)
		}
		completed <- err
	}()
	// The completion's promotion waits for b's row: end its backend there.
	var ended []int64
	for len(ended) == 0 {
		select {
		case err := <-completed:
			t.Fatalf("the completion ended before its promotion waited (err %v)", err)
		default:
		}
		var pids []int64
		if err := s.DB().WithContext(ctx).Raw(`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%ordered_head = nx.next%'`).Scan(&pids).Error; err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			if err := s.DB().WithContext(ctx).Exec(`SELECT pg_terminate_backend(?)`, pid).Error; err != nil {
				t.Fatal(err)
			}
			ended = append(ended, pid)
		}
		if ctx.Err() != nil {
			t.Fatal("the completion's promotion never waited for the next delivery's row")
		}
	}
	if err := <-completed; err == nil {
		t.Fatal("a completion whose connection died reported success")
	}
	// Its client hears of the end before the backend has let go of its
	// locks: wait until it is gone, as its rows' leases are what matters.
	for gone := false; !gone; {
		var n int64
		if err := s.DB().WithContext(ctx).Raw(`SELECT count(*) FROM pg_stat_activity WHERE pid IN ?`, ended).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		gone = n == 0
	}
	if err := tx.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	if jobs := claim(); len(jobs) != 0 {
		t.Fatalf("claimed %v while the head's lease runs", jobs)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	for len(delivered) < 4 {
		jobs := claim()
		if len(jobs) != 1 {
			t.Fatalf("the line stalled after %v", delivered)
		}
		if _, err := s.Complete(ctx, success(jobs[0]), 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(delivered); got != "[a a b c]" {
		t.Fatalf("delivered %s, want [a a b c] (the cut-short head again, then the rest in order)", got)
	}
	if left, err := s.Unfinished(ctx); err != nil || left != 0 {
		t.Fatalf("%d unfinished, %v", left, err)
	}
}

// Recording a head's success hands its line on: on PostgreSQL the next
// delivery is leased to the recorder, within the room it offers (here one
// for two lines: the other line's next is left pending for a claim); a
// recorder that dies before attempting it loses nothing, as the lease runs
// out and a claim takes it up, still ahead of the rest of its line. On
// SQLite nothing is handed on and the next heads are pending.
func TestOrderedHandOnLeasesTheNextHead(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		ctx := context.Background()
		var mu sync.Mutex
		now := time.Now()
		store.SetClock(s, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
		for _, u := range []string{"https://one.example.com/", "https://two.example.com/"} {
			if _, _, err := s.RegisterWebhookWith(ctx, u, "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", core.WebhookSettings{Ordered: true}); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"a", "b", "c"} {
			if _, err := s.CreateNotification(ctx, core.Notification{ID: id, Type: "test", DAO: "uniswap", OccurredAt: now, Data: []byte(`{}`)}, "test"); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[int64][]string{} // by webhook
		take := func(jobs []core.Job) {
			for _, j := range jobs {
				if !j.Ordered || j.Secret == "" || j.WebhookURL == "" || j.LeaseToken == "" {
					t.Fatalf("job %+v is not ready to attempt", j)
				}
				seen[j.WebhookID] = append(seen[j.WebhookID], j.Notification.ID)
			}
		}
		claim := func(want int) []core.Job {
			t.Helper()
			jobs, err := s.Claim(ctx, 10, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != want {
				t.Fatalf("claimed %d, want %d (%v)", len(jobs), want, seen)
			}
			take(jobs)
			return jobs
		}
		success := func(jobs []core.Job) []core.AttemptResult {
			var res []core.AttemptResult
			for _, j := range jobs {
				res = append(res, core.AttemptResult{Job: j, Outcome: core.OutcomeSucceeded, StartedAt: now, StatusCode: 200})
			}
			return res
		}
		heads := claim(2)
		_, next, err := s.CompleteHandingOn(ctx, success(heads), 0, core.Reservation{N: 1, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		take(next)
		if s.Dialect() != store.Postgres {
			if len(next) != 0 {
				t.Fatalf("SQLite handed on %d", len(next))
			}
			claim(2)
			return
		}
		if len(next) != 1 || next[0].Notification.ID != "b" || next[0].Attempt != 1 {
			t.Fatalf("handed on %+v, want the first line's b, attempt 1", next)
		}
		// The other line's b is pending; the handed one is leased.
		other := claim(1)
		if other[0].WebhookID == next[0].WebhookID {
			t.Fatal("a claim took the delivery handed on")
		}
		// The recorder of the first line dies; the other line goes on.
		if _, err := s.Complete(ctx, success(other), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, success(claim(1)), 0); err != nil { // the other line's c
			t.Fatal(err)
		}
		claim(0)
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		again := claim(1)
		if again[0].DeliveryID != next[0].DeliveryID || again[0].Attempt != 2 {
			t.Fatalf("after the lease, claimed %+v, want the handed-on delivery again (attempt 2)", again[0])
		}
		if _, err := s.Complete(ctx, success(again), 0); err != nil {
			t.Fatal(err)
		}
		claim(1)
		want := map[int64]string{next[0].WebhookID: "[a b b c]", other[0].WebhookID: "[a b c]"}
		for w, got := range seen {
			if fmt.Sprint(got) != want[w] {
				t.Fatalf("webhook %d got %v, want %s", w, got, want[w])
			}
		}
	})
}

// Two producers (the indexers of two chains) store, each in its own
// transaction, notifications for two ordered endpoints subscribed to
// different types, in opposite orders, while both lines are empty. Each
// fan-out promotes a head, which locks the line's webhook: were the lines
// locked as each notification reaches them, each producer would hold one
// line and wait for the other's, and PostgreSQL would abort one of them as
// a deadlock. A producer locks every ordered line in id order before its
// first fan-out instead, so the second waits for the first.
func TestProducersIntoOrderedLinesDoNotDeadlock(t *testing.T) {
	url := storetest.Postgres.NewDatabase(t)
	s := storetest.Open(t, url, newBox(t), store.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, typ := range []string{"type.x", "type.y"} {
		settings := core.WebhookSettings{Ordered: true, Subscription: core.Subscription{Types: []string{typ}}}
		if _, _, err := s.RegisterWebhookWith(ctx, "https://"+typ+".example.com/", "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", settings); err != nil {
			t.Fatal(err)
		}
	}
	note := func(id, typ string) core.Notification {
		return core.Notification{ID: id, Type: typ, DAO: "uniswap", OccurredAt: time.Now(), Data: []byte(`{}`)}
	}
	first := s.DB().WithContext(ctx).Begin()
	defer first.Rollback()
	if _, err := s.InsertNotificationTx(first, note("first-x", "type.x"), "test"); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		tx := s.DB().WithContext(ctx).Begin()
		defer tx.Rollback()
		for _, n := range []core.Notification{note("second-y", "type.y"), note("second-x", "type.x")} {
			if _, err := s.InsertNotificationTx(tx, n, "test"); err != nil {
				second <- err
				return
			}
		}
		second <- tx.Commit().Error
	}()
	// Once the second producer waits for a lock the first holds, the first
	// reaches for the other line.
	for waiting := false; !waiting; {
		var n int64
		if err := s.DB().WithContext(ctx).Raw(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		waiting = n > 0
		if ctx.Err() != nil {
			t.Fatal("the second producer never waited for the first")
		}
	}
	if _, err := s.InsertNotificationTx(first, note("first-y", "type.y"), "test"); err != nil {
		t.Fatalf("the first producer: %v", err)
	}
	if err := first.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second producer: %v", err)
	}
	var deliveries int64
	if err := s.DB().WithContext(ctx).Raw(`SELECT count(*) FROM deliveries`).Scan(&deliveries).Error; err != nil {
		t.Fatal(err)
	}
	if deliveries != 4 {
		t.Fatalf("%d deliveries, want 4 (one a notification)", deliveries)
	}
}
