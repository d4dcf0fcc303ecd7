package wasmhost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileCase is a way for a plugin to misbehave and what the host must
// make of it.
type hostileCase struct {
	name    string
	plugin  string
	config  string
	want    string // in the step's error
	discard bool   // the instance must be thrown away
}

var hostileCases = []hostileCase{
	{"infinite loop", "hostile", `{"mode":"loop"}`, "still running after", true},
	// Exponentially many calls and no loop: only the charge at function
	// entry stops it.
	{"deep recursion", "recursion", `{}`, "still running after", true},
	// Reaching the memory cap takes a Go plugin 200–500 ms, past the
	// deadline of these tests: TestMemoryCap waits for it.
	{"memory bomb", "hostile", `{"mode":"bomb"}`, "", true},
	{"panic in a goroutine", "hostile", `{"mode":"crash"}`, "plugin crashed: panic: crash in a goroutine", true},
	{"os.Exit", "hostile", `{"mode":"exit"}`, "exited with code 3", true},
	{"blocks on a channel", "hostile", `{"mode":"block"}`, "plugin crashed: fatal error: all goroutines are asleep", true},
	{"sleeps for an hour", "hostile", `{"mode":"sleep"}`, "still running after", true},
	{"huge output", "hostile", `{"mode":"huge"}`, "over the limit", true},
	{"panic", "hostile", `{"mode":"panic"}`, "panic: boom", false},
	{"malformed output", "malformed", `{}`, "malformed answer", true},
}

// hostileChain is a chain whose transform misbehaves (the filter of mode
// "huge" keeps, so that the transform runs).
func (c hostileCase) chain(policy string) []Entry {
	return []Entry{{Plugin: c.plugin, Config: json.RawMessage(c.config), FailurePolicy: policy}}
}

func hostileHost(t *testing.T, timeout time.Duration) *Host {
	h := newHost(t, Config{CallTimeout: timeout, MemoryLimitMB: 32, PoolSize: 2, MaxOutputBytes: 64 << 10})
	load(t, h, hostileWasm(t))
	load(t, h, fixture(t, "malformed.wasm"))
	load(t, h, fixture(t, "recursion.wasm"))
	return h
}

// TestHostilePlugins checks that every way a plugin can misbehave is
// contained within its deadline, costs the plugin its instance, follows the
// failure policy and leaves other calls working.
func TestHostilePlugins(t *testing.T) {
	h := hostileHost(t, DefaultCallTimeout)
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	okChain := []Entry{{Plugin: "hostile", Config: mode("ok")}}
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, policy := range []string{FailClosed, FailOpen} {
				before := h.Stats()
				start := time.Now()
				res := h.RunChain(context.Background(), tc.chain(policy), n, b)
				took := time.Since(start)
				if took > 2*time.Second {
					t.Errorf("%s: took %s", policy, took)
				}
				var failed *Step
				for i := range res.Steps {
					if res.Steps[i].Error != "" {
						failed = &res.Steps[i]
					}
				}
				if failed == nil || !strings.Contains(failed.Error, tc.want) {
					t.Fatalf("%s: steps %+v, want an error with %q", policy, res.Steps, tc.want)
				}
				if failed.Decision != "error-"+policy || res.Keep != (policy == FailOpen) {
					t.Errorf("%s: decision %s, keep %t", policy, failed.Decision, res.Keep)
				}
				if policy == FailOpen && string(res.Body) != string(b) {
					t.Errorf("fail-open changed the body to %.100s", res.Body)
				}
				if policy == FailClosed && !strings.Contains(res.DropReason, "fail-closed") {
					t.Errorf("drop reason %q", res.DropReason)
				}
				if discarded := h.Stats().Discards > before.Discards; discarded != tc.discard {
					t.Errorf("%s: instance discarded = %t, want %t", policy, discarded, tc.discard)
				}
				if res := h.RunChain(context.Background(), okChain, n, b); !res.Keep {
					t.Errorf("a good call after it failed: %s", res.DropReason)
				}
			}
		})
	}
	if n := h.Stats().Instances; n > 6 {
		t.Errorf("%d instances alive; 3 plugins × PoolSize 2", n)
	}
}

// TestHostileDoesNotFreezeGC runs garbage collections while plugins loop:
// in a Go plugin's code, in one wasm instruction, and in calls without a
// loop. A collection stops the world, and waits for every goroutine to
// reach a safe point, which compiled wasm has only where it calls out: the
// loops must end at their deadline, and the world must be stopped in a
// fraction of it, every time.
func TestHostileDoesNotFreezeGC(t *testing.T) {
	if raceEnabled {
		// A bound on wall-clock pauses: the race detector's slowdown, not the
		// plugins, would decide it. The plain build checks it.
		t.Skip("a wall-clock bound: checked without the race detector")
	}
	h := newHost(t, Config{CallTimeout: time.Second, PoolSize: 1})
	load(t, h, hostileWasm(t))
	load(t, h, fixture(t, "spin.wasm"))
	load(t, h, fixture(t, "recursion.wasm"))
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	stopping := []metrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(stopping)
	before := slices.Clone(stopping[0].Value.Float64Histogram().Counts)
	cycles := stopping[1].Value.Uint64()

	loops := []Entry{{Plugin: "hostile", Config: mode("loop")}, {Plugin: "spin"}, {Plugin: "recursion"}}
	results := make([]Result, len(loops))
	var wg sync.WaitGroup
	for i, e := range loops {
		wg.Go(func() { results[i] = h.RunChain(context.Background(), []Entry{e}, n, b) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-done:
				return
			default:
				runtime.GC()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("looping plugins still running 10 s into a 1 s deadline")
	}
	<-gcDone

	metrics.Read(stopping)
	h2 := stopping[0].Value.Float64Histogram()
	var worst float64
	for i, c := range h2.Counts {
		if c > before[i] {
			worst = h2.Buckets[i+1]
		}
	}
	cycles = stopping[1].Value.Uint64() - cycles
	// A collection waits at most a fuel period for each loop; a busy
	// machine may stretch that, not to a tenth of the deadline.
	if cycles == 0 || worst > 0.1 {
		t.Errorf("%d garbage collections beside looping plugins; the longest took up to %gs to stop the world", cycles, worst)
	}
	for i, res := range results {
		if res.Keep || len(res.Steps) == 0 || !strings.Contains(res.Steps[len(res.Steps)-1].Error, "still running after 1s") {
			t.Errorf("%s: %+v", loops[i].Plugin, res)
		}
	}
	t.Logf("%d garbage collections beside looping plugins; the longest took up to %gs to stop the world", cycles, worst)
}

// TestMemoryCap lets a memory bomb run until it reaches the cap of its
// instance.
func TestMemoryCap(t *testing.T) {
	h := newHost(t, Config{CallTimeout: 5 * time.Second, MemoryLimitMB: 32})
	load(t, h, hostileWasm(t))
	n := notification("test", "x")
	res := h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: mode("bomb")}}, n, body(t, n))
	if res.Keep || !strings.Contains(res.DropReason, "fatal error: out of memory") {
		t.Errorf("memory bomb: %+v", res)
	}
	if res := h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: mode("ok")}}, n, body(t, n)); !res.Keep {
		t.Errorf("good call after the bomb dropped: %s", res.DropReason)
	}
}

// TestHostileDoesNotStallOthers runs good calls while another caller keeps
// the plugin busy with infinite loops.
func TestHostileDoesNotStallOthers(t *testing.T) {
	if raceEnabled {
		t.Skip("a wall-clock bound: checked without the race detector")
	}
	h := hostileHost(t, 100*time.Millisecond)
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.RunChain(context.Background(), []Entry{{Plugin: "malformed"}}, n, b)
			h.RunChain(context.Background(), hostileCases[0].chain(FailClosed), n, b)
		}
	})
	defer func() { close(stop); wg.Wait() }()
	var worst time.Duration
	for range 50 {
		start := time.Now()
		res := h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: mode("ok")}}, n, b)
		worst = max(worst, time.Since(start))
		if !res.Keep {
			t.Fatalf("good call dropped: %s", res.DropReason)
		}
	}
	// A good call may wait for an instance (PoolSize 2) or start one, never
	// for much more than one deadline.
	if worst > time.Second {
		t.Errorf("worst good call took %s", worst)
	}
	t.Logf("worst good call beside a looping one: %s", worst)
}

// TestHostileSoak makes 1,000 hostile calls and checks that the process
// leaks neither goroutines nor memory.
func TestHostileSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak: not run with -short")
	}
	h := hostileHost(t, 100*time.Millisecond)
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	ctx := context.Background()
	calls := 1000
	if raceEnabled || testing.Short() {
		calls = 200
	}
	// Warm up: a pool of instances, the compiled code, the lazily started
	// goroutines of the runtime.
	for _, tc := range hostileCases {
		h.RunChain(ctx, tc.chain(FailClosed), n, b)
	}
	h.RunChain(ctx, []Entry{{Plugin: "hostile", Config: mode("ok")}}, n, b)
	goroutines := settleGoroutines(0)
	heap := heapInuse()
	rss := readRSS()
	start := time.Now()
	var mu sync.Mutex
	counts := map[string]int{}
	good, goodFailed := 0, []string(nil)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < calls; i += 2 {
				tc := hostileCases[i%len(hostileCases)]
				policy := FailClosed
				if i%3 == 0 {
					policy = FailOpen
				}
				res := h.RunChain(ctx, tc.chain(policy), n, b)
				if res.Keep != (policy == FailOpen) {
					t.Errorf("call %d (%s, %s): keep %t", i, tc.name, policy, res.Keep)
				}
				mu.Lock()
				counts[tc.name]++
				mu.Unlock()
				if i%10 != 0 {
					continue
				}
				res = h.RunChain(ctx, []Entry{{Plugin: "hostile", Config: mode("ok")}}, n, b)
				mu.Lock()
				good++
				if !res.Keep {
					goodFailed = append(goodFailed, res.DropReason)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	afterG := settleGoroutines(goroutines + 2)
	afterHeap := heapInuse()
	stats := h.Stats()
	t.Logf("%d hostile calls in %s; goroutines %d -> %d; heap in use %d -> %d MiB; RSS %d -> %d MiB; %+v",
		calls, took.Round(time.Millisecond), goroutines, afterG, heap>>20, afterHeap>>20, rss>>20, readRSS()>>20, stats)
	// A good call fails only when its deadline passes while a garbage
	// collection waits for a looping plugin on the other worker to be
	// stopped (compiled wasm has no preemption point): rare, bounded by the
	// deadline.
	if len(goodFailed) > good/10 {
		t.Errorf("%d of %d good calls failed beside hostile ones: %q", len(goodFailed), good, goodFailed)
	} else if len(goodFailed) > 0 {
		t.Logf("%d of %d good calls failed beside hostile ones: %q", len(goodFailed), good, goodFailed)
	}
	if afterG > goroutines+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines grew from %d to %d:\n%s", goroutines, afterG, buf[:runtime.Stack(buf, true)])
	}
	// Idle instances are kept (4 at most, ~8 MB each), so the heap may hold
	// a few more of them than at the start, nothing that grows with calls.
	if afterHeap > heap+64<<20 {
		t.Errorf("heap in use grew from %d to %d MiB", heap>>20, afterHeap>>20)
	}
	if stats.Instances > 4 {
		t.Errorf("%d instances alive", stats.Instances)
	}
	checkRSS(t, rss)
}

// TestReload replaces a plugin 200 times while chains run and checks that
// every replaced plugin releases its instances and compiled code.
func TestReload(t *testing.T) {
	// A generous deadline: the calls beside the reloads check that a swap
	// never fails a chain, not how fast a busy machine runs them.
	h := newHost(t, Config{PoolSize: 2, CallTimeout: 5 * time.Second})
	// Two binaries that differ in a custom section: each load compiles (from
	// the file cache) or reuses code, as a real upgrade would.
	a := hostileWasm(t)
	b := append(append([]byte(nil), a...), customSection("govgate-test", "v2")...)
	load(t, h, a)
	n := notification("proposal.created", "uniswap")
	nb := body(t, n)
	chain := []Entry{{Plugin: "hostile", Config: mode("ok")}}
	ctx := context.Background()
	for range 5 {
		h.RunChain(ctx, chain, n, nb)
	}
	goroutines := settleGoroutines(0)
	heap := heapInuse()
	rss := readRSS()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // chains keep running during the reloads
		for {
			select {
			case <-stop:
				return
			default:
			}
			if res := h.RunChain(ctx, chain, n, nb); !res.Keep {
				t.Errorf("chain during reload dropped: %s", res.DropReason)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	start := time.Now()
	reloads := 200
	if raceEnabled || testing.Short() {
		reloads = 20
	}
	for i := range reloads {
		wasm := a
		if i%2 == 0 {
			wasm = b
		}
		if _, err := h.Load(ctx, wasm); err != nil {
			t.Fatal(err)
		}
		if live := h.Stats().Instances; live > 6 {
			t.Fatalf("reload %d: %d instances alive", i, live)
		}
	}
	close(stop)
	wg.Wait()
	took := time.Since(start)
	afterG := settleGoroutines(goroutines + 2)
	afterHeap := heapInuse()
	stats := h.Stats()
	t.Logf("%d reloads in %s; goroutines %d -> %d; heap in use %d -> %d MiB; RSS %d -> %d MiB; %+v",
		reloads, took.Round(time.Millisecond), goroutines, afterG, heap>>20, afterHeap>>20, rss>>20, readRSS()>>20, stats)
	if afterG > goroutines+2 {
		t.Errorf("goroutines grew from %d to %d", goroutines, afterG)
	}
	if afterHeap > heap+64<<20 {
		t.Errorf("heap in use grew from %d to %d MiB over %d reloads", heap>>20, afterHeap>>20, reloads)
	}
	if stats.Instances > 2 {
		t.Errorf("%d instances alive after the reloads, PoolSize is 2", stats.Instances)
	}
	if stats.Plugins != 1 {
		t.Errorf("%d plugins loaded", stats.Plugins)
	}
	checkRSS(t, rss)
}

// customSection encodes a wasm custom section.
func customSection(name, content string) []byte {
	payload := append(uleb(uint32(len(name))), name...)
	payload = append(payload, content...)
	return append(append([]byte{0}, uleb(uint32(len(payload)))...), payload...)
}

func uleb(v uint32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

// checkRSS fails when the resident set grew by more than what a few
// instances and compiled modules explain. The race detector's shadow memory
// grows on its own: it is not checked then.
func checkRSS(t *testing.T, before uint64) {
	t.Helper()
	if after := readRSS(); !raceEnabled && before > 0 && after > before+96<<20 {
		t.Errorf("resident memory grew from %d to %d MiB", before>>20, after>>20)
	}
}

// readRSS returns the resident set size after handing the heap's free
// pages back to the system, so that it shows what the process holds.
func readRSS() uint64 {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb uint64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}

// fanOutChains is the chains of a notification's webhooks: a global entry
// and each webhook's own, with distinct configs among them.
func fanOutChains(webhooks, distinct int) [][]Entry {
	global := Entry{Plugin: "hostile", Config: mode("ok")}
	chains := make([][]Entry, webhooks)
	for i := range chains {
		own := Entry{Plugin: "hostile", Config: json.RawMessage(fmt.Sprintf(`{"mode":"ok","lines":%d}`, i%distinct))}
		chains[i] = []Entry{global, own}
	}
	return chains
}

// TestBatchCallCount fans one notification out to 10,000 webhooks that
// share a global entry and have one of 10 configs for their own: the plugin
// is called a constant number of times, not once per webhook.
func TestBatchCallCount(t *testing.T) {
	h := newHost(t, Config{PoolSize: 2})
	load(t, h, hostileWasm(t))
	n := voteNotification()
	b := body(t, n)
	chains := fanOutChains(10_000, 10)
	ctx := context.Background()

	before := h.Stats().Calls
	batch := h.NewBatch(n, b)
	results := batch.RunAll(ctx, chains)
	calls := h.Stats().Calls - before
	// Global filter, global transform, own filter (10 configs in one call),
	// own transform (10 configs in one call).
	if calls != 4 {
		t.Errorf("RunAll of 10,000 chains made %d plugin calls, want 4", calls)
	}
	for i, r := range results {
		if !r.Keep || len(r.Steps) != 4 || r.ContentType != "application/vnd.test+json" {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	// The same answers as an unbatched run.
	single := h.RunChain(ctx, chains[7], n, b)
	if string(single.Body) != string(results[7].Body) {
		t.Errorf("batched body %s, unbatched %s", results[7].Body, single.Body)
	}

	// Run, one webhook at a time on the same Batch, reuses the answers.
	before = h.Stats().Calls
	for _, c := range chains[:1000] {
		batch.Run(ctx, c)
	}
	if calls := h.Stats().Calls - before; calls != 0 {
		t.Errorf("Run on a warm Batch made %d calls, want 0", calls)
	}
	// A fresh Batch used one webhook at a time costs per distinct step too.
	before = h.Stats().Calls
	fresh := h.NewBatch(n, b)
	for _, c := range chains[:1000] {
		fresh.Run(ctx, c)
	}
	if calls := h.Stats().Calls - before; calls != 2+2*10 {
		t.Errorf("Run on a fresh Batch for 1,000 webhooks made %d calls, want %d", calls, 2+2*10)
	}
	// So does a fresh Batch used by concurrent workers, one webhook each:
	// a call under way is waited for, not made again.
	before = h.Stats().Calls
	shared := h.NewBatch(n, b)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 1000; i += 8 {
				if r := shared.Run(ctx, chains[i]); !r.Keep {
					t.Errorf("webhook %d: %s", i, r.DropReason)
				}
			}
		})
	}
	wg.Wait()
	if calls := h.Stats().Calls - before; calls != 2+2*10 {
		t.Errorf("8 workers on a fresh Batch for 1,000 webhooks made %d calls, want %d", calls, 2+2*10)
	}
}

// TestBatchIsolatesConfigs checks that one config's failure in a batched
// call does not leak into the answers for the others.
func TestBatchIsolatesConfigs(t *testing.T) {
	h := newHost(t, Config{})
	load(t, h, hostileWasm(t))
	n := notification("proposal.created", "uniswap")
	chains := [][]Entry{
		{{Plugin: "hostile", Config: mode("ok")}},
		{{Plugin: "hostile", Config: mode("panic")}},
		{{Plugin: "hostile", Config: mode("ok"), FailurePolicy: FailOpen}},
		{{Plugin: "hostile", Config: mode("nope")}},
	}
	before := h.Stats().Calls
	res := h.NewBatch(n, body(t, n)).RunAll(context.Background(), chains)
	if calls := h.Stats().Calls - before; calls != 2 {
		t.Errorf("%d calls, want 2 (one filter, one transform)", calls)
	}
	keep := []bool{res[0].Keep, res[1].Keep, res[2].Keep, res[3].Keep}
	if want := []bool{true, false, true, true}; fmt.Sprint(keep) != fmt.Sprint(want) {
		t.Errorf("keep = %v, want %v", keep, want)
	}
	if !strings.Contains(res[1].DropReason, "panic: boom") {
		t.Errorf("drop reason %q", res[1].DropReason)
	}

}
