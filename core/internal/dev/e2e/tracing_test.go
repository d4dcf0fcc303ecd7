package e2e_test

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/govgate/govgate/sdk/plugintest"
)

// span is one span as an OTLP collector received it.
type span struct {
	name, traceID, spanID, parentID, service string
	attrs                                    map[string]string
	status                                   int32
	start                                    time.Time
}

// otlpReceiver is a real OTLP/HTTP trace receiver: it decodes the
// ExportTraceServiceRequest protobufs that govgate's exporter posts.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusUnsupportedMediaType)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &msg); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.add(&msg)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *otlpReceiver) add(msg *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.GetResourceSpans() {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, span{
					name: s.GetName(), traceID: hex.EncodeToString(s.GetTraceId()), spanID: hex.EncodeToString(s.GetSpanId()),
					parentID: hex.EncodeToString(s.GetParentSpanId()), service: service, attrs: attrMap(s.GetAttributes()),
					status: int32(s.GetStatus().GetCode()), start: time.Unix(0, int64(s.GetStartTimeUnixNano())),
				})
			}
		}
	}
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch v.GetValue().(type) {
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(v.GetDoubleValue())
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(v.GetBoolValue())
		default:
			m[kv.GetKey()] = v.GetStringValue()
		}
	}
	return m
}

// named returns the spans called name (a prefix when it ends with "*").
func (r *otlpReceiver) named(name string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.name == name || (strings.HasSuffix(name, "*") && strings.HasPrefix(s.name, strings.TrimSuffix(name, "*"))) {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceFollowsANotificationAcrossRetriesAndKill9: a notification from a
// chain log is traced from its storage, through the global plugin chain, to
// every delivery attempt — two answered 500 by the receiver, then, after
// govgate is killed with SIGKILL and started again, one answered 200. Every
// attempt, in either process, is a child of the notification's root span,
// and the receiver sees each attempt's span in the traceparent header. On
// SQLite and on PostgreSQL, whose claims read the stored traceparent by
// different queries.
func TestTraceFollowsANotificationAcrossRetriesAndKill9(t *testing.T) {
	dir := t.TempDir()
	wasm := plugintest.Build(t, filepath.Join("..", "..", "..", "..", "plugins", "dao-filter"))
	if err := os.WriteFile(filepath.Join(dir, "dao-filter.wasm"), wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("sqlite", func(t *testing.T) {
		db, _ := sqliteURL(t)
		traceAcrossRetriesAndKill9(t, db, dir)
	})
	t.Run("postgres", func(t *testing.T) {
		db := storetest.Postgres.NewDatabase(t)
		traceAcrossRetriesAndKill9(t, db, dir)
	})
}

func traceAcrossRetriesAndKill9(t *testing.T, db, pluginDir string) {
	otlp := newOTLPReceiver(t)
	rcv := newReceiver(t)
	var mu sync.Mutex
	calls := 0
	rcv.status = func(string) int {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	// The second retry waits long enough for the kill to come first.
	cfg := strings.Replace(deliveryConfig, "schedule: [200ms, 400ms, 800ms, 1s, 1s, 1s, 1s]", "schedule: [200ms, 4s, 1s]", 1)
	cfg = strings.Replace(cfg, "jitter: 0.1", "jitter: 0", 1)
	p := startGovgate(t, db, rcv.caFile, cfg,
		"GOVGATE_PLUGINS_DIR="+pluginDir,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.url,
		"OTEL_BSP_SCHEDULE_DELAY=50", // export within 50 ms, before the kill
		"GOVGATE_TRACING_TRACEPARENT_HEADER=true",
	)
	waitFor(t, "the plugin to load", 30*time.Second, func() bool {
		_, body := do(t, "GET", "http://"+p.admin+"/admin/api/plugins", adminToken, nil)
		return strings.Contains(string(body), `"loaded":true`)
	})
	resp, body := do(t, "PUT", "http://"+p.admin+"/admin/api/chain", adminToken,
		map[string]any{"items": []any{map[string]any{"plugin": "dao-filter", "config": map[string]any{"daos": []string{"uniswap"}}}}})
	if resp.StatusCode != 200 {
		t.Fatalf("set the global chain: %d %s", resp.StatusCode, body)
	}
	rcv.setSecret("/traced", p.register(t, rcv.url("/traced")))
	const txHash = "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"
	p.notify(t, "ntf-traced", "uniswap", map[string]any{"chainId": 1, "blockNumber": 19000000, "logIndex": 7, "txHash": txHash, "proposalId": "42"})

	waitFor(t, "two failed attempts' spans", 20*time.Second, func() bool { return len(otlp.named("delivery.attempt")) == 2 })
	p.kill()
	p.start()
	waitFor(t, "the delivery after the restart", 20*time.Second, func() bool { return rcv.count("/traced", "ntf-traced") == 1 })
	waitFor(t, "the third attempt's span", 10*time.Second, func() bool { return len(otlp.named("delivery.attempt")) == 3 })

	roots := otlp.named("notification")
	if len(roots) != 1 {
		t.Fatalf("%d notification spans, want 1", len(roots))
	}
	root := roots[0]
	if root.parentID != "" || root.service != "govgate" {
		t.Errorf("root span: parent %q, service %q; want no parent, govgate", root.parentID, root.service)
	}
	for k, want := range map[string]string{
		"govgate.notification.id": "ntf-traced", "govgate.dao": "uniswap", "govgate.chain.id": "1",
		"govgate.block.number": "19000000", "govgate.log.index": "7", "govgate.tx.hash": txHash,
	} {
		if root.attrs[k] != want {
			t.Errorf("root span %s = %q, want %q", k, root.attrs[k], want)
		}
	}
	attempts := otlp.named("delivery.attempt")
	byNumber := map[string]span{}
	for _, a := range attempts {
		if a.traceID != root.traceID || a.parentID != root.spanID {
			t.Errorf("attempt %s: trace %s parent %s; want trace %s parent %s (the notification's root)",
				a.attrs["govgate.delivery.attempt"], a.traceID, a.parentID, root.traceID, root.spanID)
		}
		byNumber[a.attrs["govgate.delivery.attempt"]] = a
	}
	for n, want := range map[string]struct {
		status, outcome string
		code            int32
	}{"1": {"500", "retry", 2}, "2": {"500", "retry", 2}, "3": {"200", "succeeded", 1}} {
		a, ok := byNumber[n]
		switch {
		case !ok:
			t.Errorf("no span for attempt %s", n)
		case a.attrs["http.response.status_code"] != want.status || a.attrs["govgate.delivery.outcome"] != want.outcome || a.status != want.code:
			t.Errorf("attempt %s: %v status %d; want %s %s", n, a.attrs, a.status, want.status, want.outcome)
		case a.attrs["govgate.webhook.id"] != "1" || a.attrs["govgate.delivery.latency_ms"] == "":
			t.Errorf("attempt %s: %v; want the webhook id and the latency", n, a.attrs)
		}
	}
	// Each attempt ran the plugin chain under its own span.
	plugins := otlp.named("plugin *")
	under := map[string]int{}
	for _, s := range plugins {
		if s.traceID != root.traceID || s.attrs["govgate.plugin.name"] != "dao-filter" || s.attrs["govgate.plugin.decision"] != "kept" {
			t.Errorf("plugin span %+v", s)
		}
		under[s.parentID]++
	}
	for n, a := range byNumber {
		if under[a.spanID] == 0 {
			t.Errorf("attempt %s has no plugin span under it", n)
		}
	}
	// The receiver got the last attempt's span as its parent.
	rcv.mu.Lock()
	tp := rcv.headers["/traced ntf-traced"].Get("Traceparent")
	rcv.mu.Unlock()
	if want := "00-" + root.traceID + "-" + byNumber["3"].spanID + "-01"; tp != want {
		t.Errorf("traceparent header %q, want %q", tp, want)
	}
}
