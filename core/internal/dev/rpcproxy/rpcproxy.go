// Package rpcproxy is a JSON-RPC proxy for tests and benchmarks: it adds a
// fixed latency to every HTTP request before forwarding it, as a hosted
// provider's round trip would, and counts the calls by method (a JSON-RPC
// batch counts each of its calls), so that what indexing costs over a
// paid provider shows on the loopback dev chain.
package rpcproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// Proxy forwards JSON-RPC over HTTP to an upstream after Latency.
type Proxy struct {
	// Latency is added to every HTTP request (a batch pays it once).
	Latency time.Duration
	// Hook, when set, sees each call's method before it is forwarded.
	Hook func(method string)

	upstream *httputil.ReverseProxy
	srv      *http.Server
	url      string

	mu       sync.Mutex
	calls    map[string]int64
	requests int64
	heads    int64
}

// Start serves a proxy to upstream (an http:// JSON-RPC URL) on a
// loopback port.
func Start(upstream string, latency time.Duration) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Latency: latency, upstream: httputil.NewSingleHostReverseProxy(u), calls: map[string]int64{}, url: "http://" + l.Addr().String()}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(l)
	return p, nil
}

// URL is where the proxy listens.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	methods := Methods(body)
	heads := headReads(body)
	p.mu.Lock()
	p.requests++
	p.heads += heads
	for _, m := range methods {
		p.calls[m]++
	}
	p.mu.Unlock()
	if p.Hook != nil {
		for _, m := range methods {
			p.Hook(m)
		}
	}
	if p.Latency > 0 {
		select {
		case <-time.After(p.Latency):
		case <-r.Context().Done():
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	p.upstream.ServeHTTP(w, r)
}

// Methods returns the methods of a JSON-RPC request body: one for a call,
// each call's for a batch.
func Methods(body []byte) []string {
	body = bytes.TrimSpace(body)
	var one struct {
		Method string `json:"method"`
	}
	if len(body) > 0 && body[0] == '[' {
		var batch []struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &batch) != nil {
			return []string{"invalid"}
		}
		out := make([]string, len(batch))
		for i, c := range batch {
			out[i] = c.Method
		}
		return out
	}
	if json.Unmarshal(body, &one) != nil {
		return []string{"invalid"}
	}
	return []string{one.Method}
}

// Calls returns the calls forwarded so far, by method.
func (p *Proxy) Calls() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.calls)
}

// Total returns the calls forwarded so far.
func (p *Proxy) Total() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, v := range p.calls {
		n += v
	}
	return n
}

// headReads counts the calls of a request body that read the latest block
// (eth_getBlockByNumber "latest", eth_blockNumber): an indexer makes one
// per poll, so calls over head reads is its calls per poll, whatever code
// runs behind the proxy.
func headReads(body []byte) int64 {
	type call struct {
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	var calls []call
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &calls) != nil {
			return 0
		}
	} else {
		var one call
		if json.Unmarshal(body, &one) != nil {
			return 0
		}
		calls = []call{one}
	}
	var n int64
	for _, c := range calls {
		switch {
		case c.Method == "eth_blockNumber":
			n++
		case c.Method == "eth_getBlockByNumber" && len(c.Params) > 0 && string(bytes.TrimSpace(c.Params[0])) == `"latest"`:
			n++
		}
	}
	return n
}

// HeadReads returns how many calls read the latest block.
func (p *Proxy) HeadReads() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heads
}
