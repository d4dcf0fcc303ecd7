package wasmhost

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// BenchmarkPluginCall measures one chain of one Go-wasip1 filter that
// decodes a ~1 KB vote.cast with encoding/json, through RunChain as the
// dispatcher calls it (pool checkout, encoding, deadline, decoding). It
// reports the median and 99th percentile of a call in microseconds, which
// the bench task prints as plugin_call_p50_us and plugin_call_p99_us.
func BenchmarkPluginCall(b *testing.B) {
	h := newHost(b, Config{PoolSize: 1})
	load(b, h, buildPlugin(b, "votefilter"))
	n := voteNotification()
	body, _ := json.Marshal(n)
	if len(body) < 900 || len(body) > 1300 {
		b.Fatalf("notification is %d bytes, want about 1 KB", len(body))
	}
	chain := []Entry{{Plugin: "votefilter"}}
	ctx := context.Background()
	// Warm the instance: the first call pays for the page faults of its heap.
	for range 100 {
		if res := h.RunChain(ctx, chain, n, body); !res.Keep {
			b.Fatalf("dropped: %s", res.DropReason)
		}
	}
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res := h.RunChain(ctx, chain, n, body)
		durations = append(durations, time.Since(start))
		if !res.Keep {
			b.Fatalf("dropped: %s", res.DropReason)
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50_us")
	b.ReportMetric(pct(0.99), "p99_us")
}

// BenchmarkFanOut measures a Batch fanning one notification out to 10,000
// webhooks that share a filter and a transform with 10 distinct configs.
func BenchmarkFanOut(b *testing.B) {
	h := newHost(b, Config{PoolSize: 1})
	load(b, h, hostileWasm(b))
	n := voteNotification()
	body, _ := json.Marshal(n)
	chains := fanOutChains(10_000, 10)
	before := h.Stats().Calls
	for b.Loop() {
		h.NewBatch(n, body).RunAll(context.Background(), chains)
	}
	b.ReportMetric(float64(h.Stats().Calls-before)/float64(b.N), "plugin_calls/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e4, "ns/webhook")
}
