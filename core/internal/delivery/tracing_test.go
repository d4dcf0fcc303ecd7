package delivery

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/govgate/govgate/core"
)

// answer is a transport that answers every request with status, without a
// network: what is left to measure is the dispatcher's own work.
type answer struct {
	status int
	header http.Header // the last request's
}

func (a *answer) RoundTrip(req *http.Request) (*http.Response, error) {
	a.header = req.Header
	return &http.Response{StatusCode: a.status, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

type nopQueue struct{}

func (nopQueue) Claim(context.Context, int, time.Duration, []int64) ([]core.Job, error) {
	return nil, nil
}
func (nopQueue) Release(context.Context, []core.Job, time.Duration) error { return nil }
func (nopQueue) Complete(context.Context, []core.AttemptResult, time.Duration) ([]int64, error) {
	return nil, nil
}

const storedTraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func tracedDispatcher(t testing.TB, status int, tracer trace.Tracer, header bool) (*Dispatcher, *answer) {
	rt := &answer{status: status}
	d, err := New(Config{
		Queue: nopQueue{}, Client: &http.Client{Transport: rt}, Logger: nil, UserAgent: "test",
		Timeout: time.Second, Lease: time.Minute, Workers: 1, PerWebhookConcurrency: 1, BatchSize: 1,
		Schedule: []time.Duration{time.Second}, Tracer: tracer, TraceHeader: header,
	})
	if err != nil {
		t.Fatal(err)
	}
	return d, rt
}

func tracedJob(traceParent string) core.Job {
	return core.Job{
		DeliveryID: 7, Attempt: 1, Notification: core.Notification{ID: "evt_1"}, Body: []byte(`{"id":"evt_1"}`),
		WebhookID: 3, WebhookURL: "https://receiver.example.com/hook", Secret: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		TraceParent: traceParent,
	}
}

// An attempt joins the trace stored with its notification: its span's
// parent is the notification's root, and the receiver gets the attempt's
// own span as the traceparent header when asked for.
func TestAttemptJoinsTheStoredTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	d, rt := tracedDispatcher(t, http.StatusServiceUnavailable, tp.Tracer("test"), true)
	res := d.attempt(context.Background(), tracedJob(storedTraceParent))
	if res.Outcome != core.OutcomeRetry {
		t.Fatalf("outcome %s", res.Outcome)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "delivery.attempt" || s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		s.Parent.SpanID().String() != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
		t.Fatalf("span %s in trace %s under %s; want delivery.attempt under the stored root", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, want := range map[string]string{"govgate.webhook.id": "3", "govgate.delivery.id": "7", "govgate.delivery.attempt": "1",
		"http.response.status_code": "503", "govgate.delivery.outcome": "retry"} {
		if attrs[k] != want {
			t.Errorf("%s = %q, want %q", k, attrs[k], want)
		}
	}
	if s.Status.Description != "receiver answered 503" {
		t.Errorf("status %+v", s.Status)
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.SpanContext.SpanID().String() + "-01"
	if got := rt.header.Get("Traceparent"); got != want {
		t.Errorf("traceparent header %q, want %q", got, want)
	}

	// Without the flag, no header; without a tracer, neither header nor span.
	d, rt = tracedDispatcher(t, http.StatusNoContent, tp.Tracer("test"), false)
	d.attempt(context.Background(), tracedJob(storedTraceParent))
	if rt.header.Get("Traceparent") != "" {
		t.Error("traceparent sent without traceparent_header")
	}
	d, rt = tracedDispatcher(t, http.StatusNoContent, nil, true)
	d.attempt(context.Background(), tracedJob(storedTraceParent))
	if rt.header.Get("Traceparent") != "" || len(exp.GetSpans()) != 2 {
		t.Errorf("tracing off: header %q, %d spans", rt.header.Get("Traceparent"), len(exp.GetSpans()))
	}
}

// Tracing off costs an attempt no allocation: a job with a stored
// traceparent costs what one without does, and what send alone does.
func TestTracingOffAllocatesNothing(t *testing.T) {
	if raceDetector {
		// Its instrumentation allocates too, unevenly across an HTTP round
		// trip: the figure is the plain build's (go tool task test).
		t.Skip("allocation counts are the plain build's, not the race detector's")
	}
	d, _ := tracedDispatcher(t, http.StatusNoContent, nil, true)
	ctx := context.Background()
	traced, plain := tracedJob(storedTraceParent), tracedJob("")
	withTrace := testing.AllocsPerRun(200, func() { d.attempt(ctx, traced) })
	without := testing.AllocsPerRun(200, func() { d.send(ctx, plain) })
	if withTrace != without {
		t.Fatalf("tracing off: %.0f allocations per attempt, %.0f without the tracing code", withTrace, without)
	}
	t.Logf("%.0f allocations per attempt either way (signing, request, response)", without)
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkAttempt measures one attempt's own cost (no network) with tracing
// off and on (every attempt sampled, batched to an exporter that discards).
func BenchmarkAttempt(b *testing.B) {
	for _, tc := range []struct {
		name   string
		tracer func() (trace.Tracer, func())
	}{
		{"tracing=off", func() (trace.Tracer, func()) { return nil, func() {} }},
		{"tracing=on", func() (trace.Tracer, func()) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
			return tp.Tracer("bench"), func() { tp.Shutdown(context.Background()) }
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tracer, stop := tc.tracer()
			defer stop()
			d, _ := tracedDispatcher(b, http.StatusNoContent, tracer, false)
			j := tracedJob(storedTraceParent)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res := d.attempt(ctx, j); res.Outcome != core.OutcomeSucceeded {
					b.Fatal(res.Error)
				}
			}
		})
	}
}
