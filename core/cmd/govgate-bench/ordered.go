package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/govgate/govgate/core"
)

// orderedBench measures ordered delivery on PostgreSQL:
//
//   - ordered_delivery_per_s: one ordered endpoint, -ordered-notifications
//     notifications, from the first ingest to the last recorded success (one
//     delivery at a time: each waits for the previous one's success to be
//     recorded and the next promoted);
//   - unordered_ratio_with_ordered_neighbour: the throughput run's unordered
//     endpoints (-webhooks × -notifications deliveries) with one ordered
//     endpoint receiving the same notifications beside them, over the same
//     run without it, measured back to back in each round; the figure ends
//     when the unordered endpoints have received everything.
func orderedBench(ctx context.Context, newDB func(string) (string, error), client *http.Client, rcv *benchReceiver) error {
	var perS, alone, beside, ratios []float64
	for r := 0; r < *rounds; r++ {
		url, err := newDB(fmt.Sprintf("bench_ordered_%d", r))
		if err != nil {
			return err
		}
		rate, err := orderedOnly(ctx, url, client, rcv)
		if err != nil {
			return err
		}
		perS = append(perS, rate)
		var pair [2]float64
		for i, withOrdered := range []bool{false, true} {
			url, err := newDB(fmt.Sprintf("bench_neighbour_%d_%d", r, i))
			if err != nil {
				return err
			}
			if pair[i], err = unorderedThroughput(ctx, url, client, rcv, withOrdered); err != nil {
				return err
			}
		}
		alone, beside, ratios = append(alone, pair[0]), append(beside, pair[1]), append(ratios, pair[1]/pair[0])
	}
	reportMedian("ordered_delivery_per_s", "%.0f", perS)
	reportMedian("unordered_per_s_alone", "%.0f", alone)
	reportMedian("unordered_per_s_with_ordered_neighbour", "%.0f", beside)
	reportMedian("unordered_ratio_with_ordered_neighbour", "%.2f", ratios)
	return nil
}

func registerOrdered(ctx context.Context, p *pipeline, rcv *benchReceiver) error {
	_, _, err := p.st.RegisterWebhookWith(ctx, fmt.Sprintf("https://%s/ordered/0", rcv.addr), benchSecret, core.WebhookSettings{Ordered: true})
	return err
}

// orderedOnly is ordered_delivery_per_s's run.
func orderedOnly(ctx context.Context, dbURL string, client *http.Client, rcv *benchReceiver) (float64, error) {
	p, err := startPipeline(ctx, dbURL, client, rcv, 0, nil)
	if err != nil {
		return 0, err
	}
	defer p.stop()
	if err := registerOrdered(ctx, p, rcv); err != nil {
		return 0, err
	}
	runtime.GC()
	seen0 := rcv.ordered.Load()
	n := int64(*orderedNotes)
	start := time.Now()
	for i := 0; i < int(n); i++ {
		note, _ := notificationBody(i)
		if err := p.ingest(ctx, note); err != nil {
			return 0, err
		}
	}
	if err := waitDone(ctx, p, func() bool { return rcv.ordered.Load()-seen0 >= n }); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// unorderedThroughput is the throughput run's unordered deliveries per
// second, with or without one ordered endpoint beside them.
func unorderedThroughput(ctx context.Context, dbURL string, client *http.Client, rcv *benchReceiver, withOrdered bool) (float64, error) {
	p, err := startPipeline(ctx, dbURL, client, rcv, *webhooks, nil)
	if err != nil {
		return 0, err
	}
	defer p.stop()
	if withOrdered {
		if err := registerOrdered(ctx, p, rcv); err != nil {
			return 0, err
		}
	}
	if err := p.st.DB().WithContext(ctx).Exec("CHECKPOINT").Error; err != nil {
		return 0, err
	}
	runtime.GC()
	total := int64(*webhooks * *notifications)
	unordered := func() int64 { return rcv.count.Load() - rcv.ordered.Load() }
	seen0 := unordered()
	start := time.Now()
	for i := 0; i < *notifications; i++ {
		note, _ := notificationBody(i)
		if err := p.ingest(ctx, note); err != nil {
			return 0, err
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for unordered()-seen0 < total {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d unordered deliveries after 5 minutes", unordered()-seen0, total)
		}
		time.Sleep(2 * time.Millisecond)
	}
	rate := float64(total) / time.Since(start).Seconds()
	// The ordered line drains before the next run, outside the figure.
	return rate, waitDone(ctx, p, func() bool { return true })
}

// waitDone waits until cond holds and the queue is empty.
func waitDone(ctx context.Context, p *pipeline, cond func() bool) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		left, err := p.st.Unfinished(ctx)
		if err != nil {
			return err
		}
		if left == 0 && cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d deliveries unfinished after 5 minutes", left)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
