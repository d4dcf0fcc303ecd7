package chain

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
)

// Breaker states as Status reports them.
const (
	StateClosed   = "closed"
	StateOpen     = "open"
	StateHalfOpen = "half-open"
)

// UpstreamStatus is the health of one upstream as its breaker sees it.
type UpstreamStatus struct {
	// URL is the upstream's scheme and host only: never its path or query,
	// where API keys live.
	URL   string `json:"url"`
	State string `json:"state"` // closed, open or half-open
	// ConsecutiveFailures counts failed calls since the last success; calls
	// that the open breaker turned away are not failures.
	ConsecutiveFailures uint32    `json:"consecutiveFailures"`
	TotalFailures       uint64    `json:"totalFailures"`
	LastError           string    `json:"lastError,omitempty"`
	LastErrorAt         time.Time `json:"lastErrorAt,omitzero"`
	LastSuccessAt       time.Time `json:"lastSuccessAt,omitzero"`
}

// Status returns the state of every upstream, in configured order. It takes
// no lock that a call holds while waiting on the network, so it never blocks.
func (g *Gateway) Status() []UpstreamStatus {
	out := make([]UpstreamStatus, len(g.ups))
	for i, u := range g.ups {
		u.mu.Lock()
		out[i] = UpstreamStatus{
			URL:                 u.url,
			State:               stateName(u.cb.State()),
			ConsecutiveFailures: u.consecutive,
			TotalFailures:       u.total,
			LastError:           u.lastErr,
			LastErrorAt:         u.lastErrAt,
			LastSuccessAt:       u.lastSuccessAt,
		}
		u.mu.Unlock()
	}
	return out
}

func stateName(s gobreaker.State) string {
	switch s {
	case gobreaker.StateOpen:
		return StateOpen
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	default:
		return StateClosed
	}
}

// Metrics counts gateway calls. One Metrics may serve every gateway: series
// are labelled by chain and upstream. Register its Collectors with the
// registry that serves /metrics.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
	waiting  *prometheus.CounterVec
	limited  *prometheus.CounterVec
}

// NewMetrics returns unregistered collectors named govgate_rpc_*.
func NewMetrics() *Metrics {
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_rpc_requests_total",
			Help: "JSON-RPC calls by chain, upstream (index and redacted URL), method and outcome (ok, rejected, error, rate_limited, skipped, canceled).",
		}, []string{"chain", "upstream", "url", "method", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "govgate_rpc_request_duration_seconds",
			Help:    "Latency of JSON-RPC calls that reached an upstream.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"chain", "method"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "govgate_rpc_inflight",
			Help: "JSON-RPC calls holding one of the chain's max_concurrency slots.",
		}, []string{"chain"}),
		waiting: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_rpc_throttled_seconds_total",
			Help: "Time calls waited for a concurrency slot or the requests_per_second limiter.",
		}, []string{"chain"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_rpc_rate_limited_total",
			Help: "Calls that every upstream refused with a rate limit (HTTP 429 or its JSON-RPC form), and that waited to be tried again.",
		}, []string{"chain"}),
	}
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.duration, m.inflight, m.waiting, m.limited}
}

func (m *Metrics) waited(chainID uint64, d time.Duration, inflight int) {
	if m == nil {
		return
	}
	chain := strconv.FormatUint(chainID, 10)
	m.inflight.WithLabelValues(chain).Set(float64(inflight))
	if d > 0 {
		m.waiting.WithLabelValues(chain).Add(d.Seconds())
	}
}

func (m *Metrics) rateLimited(chainID uint64, _ time.Duration) {
	if m != nil {
		m.limited.WithLabelValues(strconv.FormatUint(chainID, 10)).Inc()
	}
}

func (m *Metrics) observe(chainID uint64, u *upstream, method, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	chain := strconv.FormatUint(chainID, 10)
	m.requests.WithLabelValues(chain, strconv.Itoa(u.index), u.url, method, outcome).Inc()
	if outcome != "skipped" {
		m.duration.WithLabelValues(chain, method).Observe(d.Seconds())
	}
}

var (
	breakerStateDesc = prometheus.NewDesc("govgate_rpc_breaker_state",
		"Circuit breaker state per upstream: 0 closed, 1 half-open, 2 open.",
		[]string{"chain", "upstream", "url"}, nil)
	breakerFailuresDesc = prometheus.NewDesc("govgate_rpc_upstream_consecutive_failures",
		"Failures of an upstream since its last success.",
		[]string{"chain", "upstream", "url"}, nil)
)

// Collector returns a collector that reports the gateway's breakers at
// scrape time. It describes no metrics up front (an unchecked collector),
// so the collectors of several gateways register side by side; their series
// differ by chain.
func (g *Gateway) Collector() prometheus.Collector { return gatewayCollector{g} }

type gatewayCollector struct{ g *Gateway }

func (c gatewayCollector) Describe(chan<- *prometheus.Desc) {}

func (c gatewayCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.g
	chain := strconv.FormatUint(g.cfg.ID, 10)
	for i, s := range g.Status() {
		v := 0.0
		switch s.State {
		case StateHalfOpen:
			v = 1
		case StateOpen:
			v = 2
		}
		idx := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue, v, chain, idx, s.URL)
		ch <- prometheus.MustNewConstMetric(breakerFailuresDesc, prometheus.GaugeValue, float64(s.ConsecutiveFailures), chain, idx, s.URL)
	}
}
