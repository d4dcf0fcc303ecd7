package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/tracing"
)

var traceParentPattern = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`)

func TestNotificationRootSpan(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want map[string]string
	}{
		{"chain event", `{"chainId":1,"blockNumber":19000000,"logIndex":7,"txHash":"0xabc","proposalId":"1"}`,
			map[string]string{"govgate.chain.id": "1", "govgate.block.number": "19000000", "govgate.log.index": "7", "govgate.tx.hash": "0xabc"}},
		{"numbers as strings", `{"chainId":"10","blockNumber":"5"}`, map[string]string{"govgate.chain.id": "10", "govgate.block.number": "5"}},
		{"admin notification", `{"note":"hi"}`, map[string]string{}},
		{"not an object", `[1,2]`, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
			// The caller's own span does not adopt the notification.
			ctx, caller := tr.Tracer().Start(context.Background(), "admin request")
			n := core.Notification{ID: "evt_1", Type: core.TypeVoteCast, DAO: "uniswap", Data: json.RawMessage(tc.data)}
			tp, end := tr.StartNotification(ctx, n)
			m := traceParentPattern.FindStringSubmatch(tp)
			if m == nil {
				t.Fatalf("traceparent %q", tp)
			}
			end(true)
			caller.End()
			var root *tracetest.SpanStub
			for i, s := range exp.GetSpans() {
				if s.Name == "notification" {
					root = &exp.GetSpans()[i]
				}
			}
			if root == nil || root.SpanContext.TraceID().String() != m[1] || root.SpanContext.SpanID().String() != m[2] ||
				root.Parent.IsValid() || root.SpanKind != trace.SpanKindProducer {
				t.Fatalf("root span %+v for traceparent %s", root, tp)
			}
			got := map[string]string{}
			for _, kv := range root.Attributes {
				got[string(kv.Key)] = kv.Value.String()
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if got["govgate.notification.id"] != "evt_1" || got["govgate.dao"] != "uniswap" || got["govgate.notification.type"] != core.TypeVoteCast {
				t.Errorf("attributes %v", got)
			}
			if len(tc.want) == 0 && got["govgate.chain.id"] != "" {
				t.Errorf("chain id %q from data %s", got["govgate.chain.id"], tc.data)
			}
		})
	}
}

// A duplicate's root span is never ended, so never exported.
func TestDuplicateNotificationExportsNothing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	_, end := tr.StartNotification(context.Background(), core.Notification{ID: "evt_dup"})
	end(false)
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans exported for a duplicate", n)
	}
}

// An unreachable collector is logged once a minute, never with the
// endpoint's path or query.
func TestExportErrorsAreLoggedRarelyAndRedacted(t *testing.T) {
	var buf bytes.Buffer
	h := tracing.NewErrorLog(slog.New(slog.NewTextHandler(&buf, nil)))
	err := fmt.Errorf("traces export: %w", &url.Error{Op: "Post", URL: "https://otlp.example.com/v1/traces?api_key=SECRET", Err: fmt.Errorf("connection refused")})
	for i := 0; i < 5; i++ {
		h.Handle(err)
	}
	out := buf.String()
	if strings.Count(out, "tracing: export failed") != 1 || strings.Contains(out, "SECRET") || !strings.Contains(out, "https://otlp.example.com") {
		t.Fatalf("log:\n%s", out)
	}
}

func TestEndpointForLogHidesPathsAndQueries(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if got := tracing.EndpointForLog("https://otlp.example.com/v1/traces?api_key=SECRET"); got != "https://otlp.example.com" {
		t.Fatalf("got %q", got)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/tenant/SECRET")
	if got := tracing.EndpointForLog("https://ignored.example.com"); got != "http://collector:4318" {
		t.Fatalf("got %q", got)
	}
}
