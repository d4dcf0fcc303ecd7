package chain_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/rpcproxy"
)

// TestRetryAfterIsHonoured puts a provider that answers 429 with
// Retry-After: 1 twice in front of the dev chain: the call waits as asked
// and succeeds on the third try, and the breaker saw the refusals.
func TestRetryAfterIsHonoured(t *testing.T) {
	c := startChain(t)
	proxy, err := rpcproxy.Start(c.RPCURL(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var refused atomic.Int64
	up, _ := url.Parse(proxy.URL())
	forward := httputil.NewSingleHostReverseProxy(up)
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refused.Add(1) <= 2 {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	defer limited.Close()
	cfg := c.ChainConfig()
	cfg.RPC = []string{limited.URL}
	cfg.RateLimitRetries = 3
	cfg.Breaker.FailuresToOpen = 10
	m := chain.NewMetrics()
	g, err := chain.New(cfg, chain.Options{Logger: quiet, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	start := time.Now()
	id, err := g.ChainID(context.Background())
	if err != nil || id != 1337 {
		t.Fatalf("chain id %d, %v", id, err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("answered in %v: the two Retry-After: 1 were not honoured", took)
	}
	if st := g.Status()[0]; st.TotalFailures != 2 || st.State != chain.StateClosed {
		t.Fatalf("upstream %+v: the breaker should have seen both refusals", st)
	}

	// With no retry left, the caller hears of the rate limit.
	refused.Store(-10)
	cfg.RateLimitRetries = -1
	if _, err := chain.New(cfg, chain.Options{Logger: quiet}); err == nil {
		t.Fatal("a negative rate_limit_retries validated")
	}
}

// TestMaxConcurrency sends 24 calls at once through a gateway capped at 3.
// The provider holds each request until the test lets one through: a
// request can only arrive once an earlier one was let through, so at any
// moment arrivals are at most 3 plus those let through.
func TestMaxConcurrency(t *testing.T) {
	c := startChain(t)
	up, _ := url.Parse(c.RPCURL())
	forward := httputil.NewSingleHostReverseProxy(up)
	var (
		mu                            sync.Mutex
		arrived, released, violations int
		gate                          = make(chan struct{})
	)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		if arrived > 3+released {
			violations++
		}
		mu.Unlock()
		<-gate
		mu.Lock()
		released++ // before the answer: the gateway frees its slot after it
		mu.Unlock()
		forward.ServeHTTP(w, r)
	}))
	defer provider.Close()
	cfg := c.ChainConfig()
	cfg.RPC = []string{provider.URL}
	cfg.MaxConcurrency = 3
	g, err := chain.New(cfg, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var wg sync.WaitGroup
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := g.BlockNumber(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	for range 24 {
		gate <- struct{}{}
	}
	wg.Wait()
	if violations > 0 || arrived != 24 {
		t.Fatalf("%d requests arrived beyond the cap of 3 (of %d)", violations, arrived)
	}
}

// TestRequestsPerSecond paces 10 calls at 20 a second with a burst of 1:
// they take at least 450 ms.
func TestRequestsPerSecond(t *testing.T) {
	c := startChain(t)
	cfg := c.ChainConfig()
	cfg.RequestsPerSecond, cfg.Burst = 20, 1
	g, err := chain.New(cfg, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	start := time.Now()
	for range 10 {
		if _, err := g.BlockNumber(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Fatalf("10 calls at 20/s took %v", took)
	}
}
