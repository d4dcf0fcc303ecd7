package chain_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
)

var quiet = slog.New(slog.DiscardHandler)

func TestValidate(t *testing.T) {
	good := chain.ChainConfig{ID: 1, Name: "mainnet", RPC: []string{"https://eth.example/v3/KEY"}}.WithDefaults()
	tests := []struct {
		name   string
		change func(*chain.ChainConfig)
		field  string // "" for valid
	}{
		{"valid", func(*chain.ChainConfig) {}, ""},
		{"no id", func(c *chain.ChainConfig) { c.ID = 0 }, "id"},
		{"no name", func(c *chain.ChainConfig) { c.Name = "" }, "name"},
		{"no rpc", func(c *chain.ChainConfig) { c.RPC = nil }, "rpc"},
		{"bad scheme", func(c *chain.ChainConfig) { c.RPC = append(c.RPC, "ftp://x.example/SECRET") }, "rpc[1]"},
		{"no host", func(c *chain.ChainConfig) { c.RPC = []string{"https:///SECRET"} }, "rpc[0]"},
		{"huge confirmations", func(c *chain.ChainConfig) { c.Confirmations = 1_000_000 }, "confirmations"},
		{"negative timeout", func(c *chain.ChainConfig) { c.RequestTimeout = -time.Second }, "request_timeout"},
		{"zero failures", func(c *chain.ChainConfig) { c.Breaker.FailuresToOpen = 0 }, "breaker.failures_to_open"},
		{"zero open timeout", func(c *chain.ChainConfig) { c.Breaker.OpenTimeout = 0 }, "breaker.open_timeout"},
		{"zero half-open", func(c *chain.ChainConfig) { c.Breaker.HalfOpenMaxRequests = 0 }, "breaker.half_open_max_requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			c.RPC = append([]string(nil), good.RPC...)
			tt.change(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), ": "+tt.field+": ") {
				t.Fatalf("error %v does not name %s", err, tt.field)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error %q shows a secret", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://mainnet.infura.io/v3/0123456789abcdef", "https://mainnet.infura.io"},
		{"wss://user:pass@node.example:8546/ws?key=abc", "wss://node.example:8546"},
		{"http://127.0.0.1:8545", "http://127.0.0.1:8545"},
		{"::not a url", "invalid-url"},
	}
	for _, tt := range tests {
		if got := chain.Redact(tt.in); got != tt.want {
			t.Errorf("chain.Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// closedPort returns a loopback URL on which nothing listens.
func closedPort(t *testing.T, path string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + path
}

func startChain(t *testing.T) *devchain.Chain {
	t.Helper()
	c, err := devchain.Start(context.Background(), devchain.Options{Accounts: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFailoverAndBreaker puts a dead upstream before a live one: calls
// succeed through the second, the first's breaker opens, and then the first
// is skipped without being tried.
func TestFailoverAndBreaker(t *testing.T) {
	c := startChain(t)
	dead := closedPort(t, "/v3/SECRETKEY")
	g, err := chain.New(chain.ChainConfig{
		ID: devchain.ChainID, Name: "dev", RPC: []string{dead, c.RPCURL()},
		Breaker: chain.BreakerConfig{FailuresToOpen: 2, OpenTimeout: time.Hour},
	}, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	for range 5 {
		if _, err := g.BlockNumber(ctx); err != nil {
			t.Fatal(err)
		}
	}
	num, hash, ts, err := g.BlockStamp(ctx, nil)
	if err != nil || num == 0 || hash == ([32]byte{}) || ts == 0 {
		t.Fatalf("block stamp %d %s %d: %v", num, hash, ts, err)
	}
	if id, err := g.ChainID(ctx); err != nil || id != devchain.ChainID {
		t.Fatalf("chain id %d: %v", id, err)
	}
	st := g.Status()
	if st[0].State != chain.StateOpen || st[0].TotalFailures != 2 || st[0].ConsecutiveFailures != 2 {
		t.Fatalf("dead upstream %+v", st[0])
	}
	if st[1].State != chain.StateClosed || st[1].LastSuccessAt.IsZero() || st[1].TotalFailures != 0 {
		t.Fatalf("live upstream %+v", st[1])
	}
	if strings.Contains(st[0].URL, "SECRET") || strings.Contains(st[0].LastError, "SECRET") || st[0].LastError == "" {
		t.Fatalf("status shows a secret or no error: %+v", st[0])
	}
	// Not found is an answer, not a failure, and is not retried elsewhere.
	if _, _, _, err := g.BlockStamp(ctx, bigInt(1_000_000)); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("missing block: %v", err)
	}
	if st := g.Status(); st[1].TotalFailures != 0 {
		t.Fatalf("not found counted as a failure: %+v", st[1])
	}
}

// TestAllDown reports chain.ErrNoUpstream without leaking the URL's secret.
func TestAllDown(t *testing.T) {
	g, err := chain.New(chain.ChainConfig{ID: 1, Name: "x", RPC: []string{closedPort(t, "/v3/SECRETKEY")},
		Breaker: chain.BreakerConfig{FailuresToOpen: 1, OpenTimeout: time.Hour}}, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = g.BlockNumber(ctx)
	if !errors.Is(err, chain.ErrNoUpstream) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("first call: %v", err)
	}
	_, err = g.BlockNumber(ctx)
	if !errors.Is(err, chain.ErrNoUpstream) || !strings.Contains(err.Error(), "breaker open") {
		t.Fatalf("second call, breaker open: %v", err)
	}
}

// TestErrorClassification serves crafted answers and checks which count
// against the breaker and which fail over.
func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		failure bool // counts against the upstream, fails over
		rpcCode int  // the caller sees this JSON-RPC error code
	}{
		{"json-rpc error", 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"query returned more than 10000 results"}}`, false, -32005},
		{"rate limited by json-rpc", 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"daily request count exceeded, request rate limited"}}`, true, 0},
		{"400 with json-rpc error", 400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"block range too large"}}`, false, 0},
		{"429", 429, `too many requests`, true, 0},
		{"502", 502, `bad gateway`, true, 0},
		{"garbage", 200, `<html>`, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				hits.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			var backupHits atomic.Int64
			backup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				backupHits.Add(1)
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":"0x10"}`)
			}))
			defer backup.Close()
			g, err := chain.New(chain.ChainConfig{ID: 1, Name: "x", RPC: []string{srv.URL, backup.URL}}, chain.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			n, err := g.BlockNumber(context.Background())
			st := g.Status()[0]
			if tt.failure {
				if err != nil || n != 16 || backupHits.Load() != 1 || st.TotalFailures != 1 {
					t.Fatalf("want failover: n %d, err %v, backup hits %d, status %+v", n, err, backupHits.Load(), st)
				}
				return
			}
			if err == nil || backupHits.Load() != 0 || st.TotalFailures != 0 {
				t.Fatalf("want the answer: err %v, backup hits %d, status %+v", err, backupHits.Load(), st)
			}
			var rpcErr rpc.Error
			if tt.rpcCode != 0 && (!errors.As(err, &rpcErr) || rpcErr.ErrorCode() != tt.rpcCode) {
				t.Fatalf("error %v does not unwrap to JSON-RPC code %d", err, tt.rpcCode)
			}
		})
	}
}

// TestCallerCancelIsNotAFailure: a caller giving up says nothing about the
// upstream.
func TestCallerCancelIsNotAFailure(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	g, err := chain.New(chain.ChainConfig{ID: 1, Name: "x", RPC: []string{srv.URL}, Breaker: chain.BreakerConfig{FailuresToOpen: 1}}, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.BlockNumber(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if st := g.Status()[0]; st.State != chain.StateClosed || st.TotalFailures != 0 {
		t.Fatalf("status %+v", st)
	}
}

// TestRequestTimeout: an upstream slower than RequestTimeout is a failure,
// and the next upstream gets its own timeout.
func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	c := startChain(t)
	g, err := chain.New(chain.ChainConfig{ID: 1, Name: "x", RPC: []string{slow.URL, c.RPCURL()}, RequestTimeout: 100 * time.Millisecond}, chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := g.BlockNumber(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	if st := g.Status()[0]; st.TotalFailures != 1 || !strings.Contains(st.LastError, "deadline") {
		t.Fatalf("slow upstream %+v", st)
	}
}

func bigInt(n int64) *big.Int { return big.NewInt(n) }

func TestMetrics(t *testing.T) {
	c := startChain(t)
	m := chain.NewMetrics()
	var gws []*chain.Gateway
	for _, id := range []uint64{1, 2} {
		g, err := chain.New(chain.ChainConfig{ID: id, Name: "x", RPC: []string{c.RPCURL(), closedPort(t, "/KEY")}}, chain.Options{Logger: quiet, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.BlockNumber(context.Background()); err != nil {
			t.Fatal(err)
		}
		gws = append(gws, g)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	for _, g := range gws {
		reg.MustRegister(g.Collector())
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, f := range families {
		names[f.GetName()] = len(f.GetMetric())
	}
	if names["govgate_rpc_breaker_state"] != 4 || names["govgate_rpc_requests_total"] == 0 {
		t.Fatalf("metrics %v", names)
	}
}
