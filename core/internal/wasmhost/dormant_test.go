package wasmhost

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestSleepAndWake: a sleeping plugin frees its instances and compiled
// code, stays listed, and its next calls, however many at once, wake it
// with one compilation and answer as before.
func TestSleepAndWake(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, Config{PoolSize: 4})
	wasm := hostileWasm(t)
	info := load(t, h, wasm)
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	chain := []Entry{{Plugin: info.Name, Config: mode("ok")}}
	want := h.RunChain(ctx, chain, n, b)
	if !want.Keep {
		t.Fatalf("awake: %+v", want)
	}
	if h.Stats().Instances == 0 {
		t.Fatal("no instance after a call")
	}

	if err := h.Sleep(info.Name, []byte("not the plugin")); err == nil {
		t.Error("Sleep took a binary that is not the one loaded")
	}
	if err := h.Sleep(info.Name, wasm); err != nil {
		t.Fatal(err)
	}
	if !h.Asleep(info.Name) {
		t.Fatal("not asleep")
	}
	if n := h.Stats().Instances; n != 0 {
		t.Errorf("%d instances alive while asleep", n)
	}
	if got, ok := h.Plugin(info.Name); !ok || got.SHA256 != info.SHA256 || len(got.Hooks) != len(info.Hooks) {
		t.Errorf("asleep, the plugin is listed as %+v, %t", got, ok)
	}

	before := h.Stats().Compilations
	var wg sync.WaitGroup
	results := make([]Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.RunChain(ctx, chain, n, b)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Keep != want.Keep || string(r.Body) != string(want.Body) || r.ContentType != want.ContentType {
			t.Errorf("call %d after waking: %+v, want %+v", i, r, want)
		}
	}
	if got := h.Stats().Compilations - before; got != 1 {
		t.Errorf("woken by %d compilations, want 1", got)
	}
	if h.Asleep(info.Name) {
		t.Error("still asleep after calls")
	}
	// The deadline still holds after waking.
	start := time.Now()
	if r := h.RunChain(ctx, []Entry{{Plugin: info.Name, Config: mode("loop")}}, n, b); r.Keep {
		t.Errorf("a looping plugin kept the delivery: %+v", r)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a looping call took %s", took)
	}
}

// TestLoadedAsleep: a plugin is checked in the interpreter and loaded
// asleep; it is compiled once, when woken, and loading it again over itself
// puts a new sleeper in its place.
func TestLoadedAsleep(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, Config{})
	wasm := hostileWasm(t)
	info := load(t, h, wasm)
	if !h.Asleep(info.Name) || h.Stats().Instances != 0 {
		t.Fatalf("after Load: asleep %t, %d instances", h.Asleep(info.Name), h.Stats().Instances)
	}
	c := h.Stats().Compilations
	if err := h.Wake(ctx, info.Name); err != nil || h.Asleep(info.Name) {
		t.Fatalf("Wake: %v, asleep %t", err, h.Asleep(info.Name))
	}
	if err := h.Wake(ctx, info.Name); err != nil || h.Stats().Compilations != c+1 {
		t.Errorf("two Wakes: %v, %d compilations, want 1", err, h.Stats().Compilations-c)
	}
	load(t, h, wasm)
	if !h.Asleep(info.Name) {
		t.Error("awake after a new Load")
	}
	if err := h.Wake(ctx, info.Name); err != nil {
		t.Fatal(err)
	}
	if err := h.Wake(ctx, "nope"); err == nil {
		t.Error("woke a plugin that is not loaded")
	}
}

// TestCallOnAPluginReplacedWhileWaking: a call that finds a plugin asleep
// runs on that version even when reloads replace it while it compiles, as
// TestReload's calls did on a loaded machine, and what was compiled for
// the call alone is freed when it ends.
func TestCallOnAPluginReplacedWhileWaking(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, Config{PoolSize: 2})
	a := hostileWasm(t)
	b := append(append([]byte(nil), a...), customSection("govgate-test", "v2")...)
	info := load(t, h, a)
	if err := h.Sleep(info.Name, a); err != nil {
		t.Fatal(err)
	}
	n := notification("proposal.created", "uniswap")
	nb := body(t, n)
	chain := []Entry{{Plugin: info.Name, Config: mode("ok")}}

	// Every wake's compilation is outrun by a reload, more times than a
	// caller would try the replacement.
	reloads := 0
	afterWakeCompile = func() {
		reloads++
		wasm := a
		if reloads%2 == 1 {
			wasm = b
		}
		if _, err := h.Load(ctx, wasm); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterWakeCompile = nil })
	if res := h.RunChain(ctx, chain, n, nb); !res.Keep {
		t.Fatalf("a call on a plugin replaced while it woke: %+v", res)
	}
	afterWakeCompile = nil
	if reloads == 0 {
		t.Fatal("the call did not wake the plugin")
	}
	if !h.Asleep(info.Name) {
		t.Error("the replacement was woken by a call that ran on the version it found")
	}
	if got := h.Stats().Instances; got != 0 {
		t.Errorf("%d instances alive after the call: what was compiled for it alone was kept", got)
	}
	if res := h.RunChain(ctx, chain, n, nb); !res.Keep {
		t.Fatalf("a call on the replacement: %+v", res)
	}
}

// TestWakeFillsThePool: waking a plugin starts every instance its pool may
// hold and runs the plugin's samples on each, so that the first calls
// start no instance; a second Wake starts none either.
func TestWakeFillsThePool(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, Config{PoolSize: 3})
	info := load(t, h, hostileWasm(t))
	if info.Samples == 0 {
		t.Fatal("the hostile plugin has samples to warm its instances with")
	}
	before := h.Stats()
	if err := h.Wake(ctx, info.Name); err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	if st.Instances != 3 || st.Instantiations-before.Instantiations != 3 {
		t.Fatalf("after Wake: %d instances, %d started; want the pool's 3", st.Instances, st.Instantiations-before.Instantiations)
	}
	if calls := st.Calls - before.Calls; calls < 3 {
		t.Errorf("after Wake: %d calls; want the samples run on each of the 3 instances", calls)
	}
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	done := make(chan Result, 3)
	for range 3 {
		go func() { done <- h.RunChain(ctx, []Entry{{Plugin: info.Name, Config: mode("ok")}}, n, b) }()
	}
	for range 3 {
		if res := <-done; !res.Keep {
			t.Fatalf("call: %s", res.DropReason)
		}
	}
	if err := h.Wake(ctx, info.Name); err != nil {
		t.Fatal(err)
	}
	if got := h.Stats().Instantiations; got != st.Instantiations {
		t.Errorf("calls and a second Wake started %d instances, want none", got-st.Instantiations)
	}
}

// TestReactorStartsInItsReserve: a Go plugin's runtime starts in a memory
// grown to the host's reserve and takes it as its heap, so that its calls do
// not grow the memory, which wazero does by copying it. With a reserve
// below the module's own size the same calls do grow it, which shows that
// the calls need the room.
func TestReactorStartsInItsReserve(t *testing.T) {
	ctx := context.Background()
	wasm := hostileWasm(t)
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	sizes := func(reserveMB uint32) (first, last uint32) {
		h := newHost(t, Config{PoolSize: 1, MemoryReserveMB: reserveMB})
		info := load(t, h, wasm)
		// Each call returns a 256 KiB body: the heap reaches its
		// collector's goal in a few dozen calls.
		chain := []Entry{{Plugin: info.Name, Config: mode("huge")}}
		for i := range 60 {
			if res := h.RunChain(ctx, chain, n, b); !res.Keep {
				t.Fatalf("reserve %d MB, call %d: %s", reserveMB, i, res.DropReason)
			}
			size := idleMemory(t, h, info.Name)
			if i == 0 {
				first = size
			}
			last = size
		}
		return first, last
	}
	if first, last := sizes(16); first != 16<<20 || last != first {
		t.Errorf("reserve 16 MB: memory %d MB after the first call and %d MB after the last, want 16 MB throughout", first>>20, last>>20)
	}
	if first, last := sizes(1); last <= first {
		t.Errorf("reserve 1 MB: memory %d MB after the first call and %d MB after the last; the calls do not need more, so the test shows nothing", first>>20, last>>20)
	}
}

// idleMemory is the memory size of the one idle instance of plugin name.
func idleMemory(t *testing.T, h *Host, name string) uint32 {
	t.Helper()
	h.mu.RLock()
	p := h.plugins[name]
	h.mu.RUnlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) != 1 {
		t.Fatalf("%d idle instances, want 1", len(p.idle))
	}
	return p.idle[0].mem.Size()
}
