// Package tracing exports OpenTelemetry traces over OTLP/HTTP: one trace
// per notification, whose root span is started as the notification is
// stored and whose W3C traceparent is stored with it, so that every delivery
// attempt — after a retry, a hand-over or a restart — joins the same trace.
// It is off unless configured; when off, nothing in govgate calls into it.
package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/govgate/govgate/core"
)

// ScopeName is the instrumentation scope of govgate's spans.
const ScopeName = "github.com/govgate/govgate"

// Attribute keys of govgate's spans.
const (
	AttrNotificationID   = attribute.Key("govgate.notification.id")
	AttrNotificationType = attribute.Key("govgate.notification.type")
	AttrDAO              = attribute.Key("govgate.dao")
	AttrChainID          = attribute.Key("govgate.chain.id")
	AttrBlockNumber      = attribute.Key("govgate.block.number")
	AttrLogIndex         = attribute.Key("govgate.log.index")
	AttrTxHash           = attribute.Key("govgate.tx.hash")
)

// Config configures tracing.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL (http://host:4318); the standard
	// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// variables take precedence. The exporter's other OTEL_EXPORTER_OTLP_*
	// variables (headers, TLS, compression, timeout) apply as usual.
	Endpoint string
	// SampleRatio is the fraction of notifications traced (their attempts
	// follow their root's decision). OTEL_TRACES_SAMPLER takes precedence.
	SampleRatio float64
	// ServiceVersion is the resource's service.version.
	ServiceVersion string
	// Logger gets the exporter's errors (a collector down, say), at most
	// one line a minute, with URLs cut to scheme and host. nil: the
	// OpenTelemetry default, the standard library's log.
	Logger *slog.Logger
}

// Tracing is a running trace pipeline: a tracer provider with a batching
// OTLP/HTTP exporter.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// Start builds the pipeline. Spans are batched (sdktrace.BatchSpanProcessor,
// tuned by OTEL_BSP_*) and exported in the background: a slow or absent
// collector drops spans, it never slows deliveries down.
func Start(ctx context.Context, cfg Config) (*Tracing, error) {
	var opts []otlptracehttp.Option
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		if cfg.Endpoint == "" {
			return nil, errors.New("tracing: no endpoint: set tracing.endpoint or OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override govgate's own name.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "govgate"), attribute.String("service.version", cfg.ServiceVersion)),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		ratio := cfg.SampleRatio
		if ratio <= 0 || ratio > 1 {
			ratio = 1
		}
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	if cfg.Logger != nil {
		otel.SetErrorHandler(&errorLog{log: cfg.Logger, every: time.Minute})
	}
	return &Tracing{tp: tp, tracer: tp.Tracer(ScopeName)}, nil
}

// errorLog logs OpenTelemetry's errors, at most one line per period with
// the count of those it held back: a collector that is down fails every
// export, and the log should say so once, not every few seconds.
type errorLog struct {
	log   *slog.Logger
	every time.Duration

	mu      sync.Mutex
	last    time.Time
	dropped int
}

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	now := time.Now()
	if now.Sub(e.last) < e.every {
		e.dropped++
		e.mu.Unlock()
		return
	}
	dropped := e.dropped
	e.last, e.dropped = now, 0
	e.mu.Unlock()
	e.log.Warn("tracing: export failed; spans are dropped until the collector answers", "err", redactURLs(err), "errors_since_last_line", dropped)
}

// redactURLs is err's message with the URL of any *url.Error in its chain
// cut to scheme and host: a path or a query may carry a key.
func redactURLs(err error) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			msg = strings.ReplaceAll(msg, ue.URL, u.Scheme+"://"+u.Host)
		} else {
			msg = strings.ReplaceAll(msg, ue.URL, "(url)")
		}
	}
	return msg
}

// New wraps a tracer provider built elsewhere (tests use an in-memory one).
func New(tp *sdktrace.TracerProvider) *Tracing {
	return &Tracing{tp: tp, tracer: tp.Tracer(ScopeName)}
}

// Tracer is govgate's tracer.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Shutdown exports the spans still queued and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// EndpointForLog is where spans go, scheme and host only: a path or a query
// may carry a key, and OTEL_EXPORTER_OTLP_HEADERS is never read here.
func EndpointForLog(configured string) string {
	for _, v := range []string{os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), configured} {
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			return "(unparsable)"
		}
		return u.Scheme + "://" + u.Host
	}
	return ""
}

// StartNotification starts the root span of n's trace as n is stored and
// returns its W3C traceparent, to store with n, and end, to call once the
// store knows whether n was new. A duplicate's span is never ended, and so
// never exported.
func (t *Tracing) StartNotification(ctx context.Context, n core.Notification) (traceParent string, end func(stored bool)) {
	// A notification's trace is its own, whatever the caller's context
	// carries (an admin request, an indexer poll).
	ctx, span := t.tracer.Start(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), "notification",
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(notificationAttributes(n)...))
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"], func(stored bool) {
		if stored {
			span.End()
		}
	}
}

// notificationAttributes describes n, with the log it comes from when its
// data says (chain events carry chainId, blockNumber, logIndex and txHash).
func notificationAttributes(n core.Notification) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrNotificationID.String(n.ID), AttrNotificationType.String(n.Type), AttrDAO.String(n.DAO)}
	var src struct {
		ChainID     json.Number `json:"chainId"`
		BlockNumber json.Number `json:"blockNumber"`
		LogIndex    json.Number `json:"logIndex"`
		TxHash      string      `json:"txHash"`
	}
	if len(n.Data) == 0 || json.Unmarshal(n.Data, &src) != nil {
		return attrs
	}
	for _, f := range []struct {
		key attribute.Key
		v   json.Number
	}{{AttrChainID, src.ChainID}, {AttrBlockNumber, src.BlockNumber}, {AttrLogIndex, src.LogIndex}} {
		if i, err := strconv.ParseInt(string(f.v), 10, 64); err == nil {
			attrs = append(attrs, f.key.Int64(i))
		}
	}
	if src.TxHash != "" {
		attrs = append(attrs, AttrTxHash.String(src.TxHash))
	}
	return attrs
}
