package delivery

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/govgate/govgate/core"
)

// Metrics are the dispatcher's Prometheus metrics.
type Metrics struct {
	outcomes *prometheus.CounterVec
	latency  prometheus.Histogram
	depth    prometheus.Gauge
	oldest   prometheus.Gauge
	byState  *prometheus.GaugeVec
}

// NewMetrics registers the dispatcher's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "govgate_delivery_attempts_total", Help: "Delivery attempts by outcome (succeeded, retry, failed, gone, dropped).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "govgate_delivery_attempt_duration_seconds", Help: "Time from the start of an attempt to the receiver's answer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}),
		depth:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "govgate_delivery_queue_depth", Help: "Deliveries pending or in flight."}),
		oldest:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "govgate_delivery_oldest_pending_age_seconds", Help: "Age of the oldest unfinished delivery."}),
		byState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "govgate_deliveries", Help: "Stored deliveries by state."}, []string{"state"}),
	}
	reg.MustRegister(m.outcomes, m.latency, m.depth, m.oldest, m.byState)
	return m
}

func (m *Metrics) recorded(batch []core.AttemptResult) {
	if m == nil {
		return
	}
	for _, r := range batch {
		m.outcomes.WithLabelValues(string(r.Outcome)).Inc()
		if r.Outcome != core.OutcomeDropped {
			m.latency.Observe(r.Duration.Seconds())
		}
	}
}

// QueueStatter reads the queue's statistics.
type QueueStatter interface {
	QueueStats(ctx context.Context) (core.QueueStats, error)
}

// RefreshQueueGauges keeps the queue gauges current until ctx ends; a scrape
// then never waits on the database.
func (m *Metrics) RefreshQueueGauges(ctx context.Context, q QueueStatter, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, every)
		st, err := q.QueueStats(qctx)
		cancel()
		if err == nil {
			m.depth.Set(float64(st.Depth))
			m.oldest.Set(st.OldestPendingAge.Seconds())
			for _, s := range []core.DeliveryState{core.DeliveryPending, core.DeliveryInFlight, core.DeliverySucceeded, core.DeliveryFailed, core.DeliveryCanceled, core.DeliveryDropped} {
				m.byState.WithLabelValues(string(s)).Set(float64(st.ByState[string(s)]))
			}
		} else if ctx.Err() == nil {
			log.Warn("queue statistics unavailable", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
