package wasmhost

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCloseWhileWaking closes the host at every moment of a call's first
// moments on a sleeping plugin: while the call compiles it, starts an
// instance of it, or runs it. wazero must not close its runtime under a
// compilation or an instantiation (it panicked, in the compiler's cache, when
// it did), so Close waits for them; the call then fails, or ends if it was
// quicker.
func TestCloseWhileWaking(t *testing.T) {
	wasm := hostileWasm(t)
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	for delay := time.Duration(0); delay < 60*time.Millisecond; delay += 3 * time.Millisecond {
		h := newHost(t, Config{CallTimeout: time.Second})
		load(t, h, wasm)
		if !h.Asleep("hostile") {
			t.Fatal("a loaded plugin is asleep until a call needs it")
		}
		done := make(chan Result, 1)
		go func() {
			done <- h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: mode("ok")}}, n, b)
		}()
		time.Sleep(delay)
		if err := h.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-done:
			if !res.Keep && res.DropReason == "" {
				t.Errorf("after %s: dropped without a reason", delay)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("after %s: the call did not end after Close", delay)
		}
		if _, err := h.Load(context.Background(), wasm); !errors.Is(err, ErrClosed) {
			t.Errorf("load after Close: %v, want ErrClosed", err)
		}
	}
}
