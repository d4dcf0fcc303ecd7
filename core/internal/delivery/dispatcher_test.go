package delivery

import (
	"net/http"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"absent", "", 0, false},
		{"seconds", "120", 2 * time.Minute, true},
		{"zero", "0", 0, true},
		{"http date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"date in the past", now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"negative", "-5", 0, false},
		{"garbage", "soon", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.value != "" {
				h.Set("Retry-After", tc.value)
			}
			got, ok := RetryAfter(h, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("RetryAfter(%q) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestJitterStaysWithinBounds(t *testing.T) {
	for i := 0; i < 1000; i++ {
		got := Jitter(time.Minute, 0.2)
		if got < 48*time.Second || got > 72*time.Second {
			t.Fatalf("Jitter(1m, 0.2) = %v, outside ±20%%", got)
		}
	}
	if Jitter(time.Minute, 0) != time.Minute {
		t.Fatal("zero jitter changed the wait")
	}
}

func TestFailedFollowsScheduleAndRetryAfter(t *testing.T) {
	d := &Dispatcher{cfg: Config{Schedule: []time.Duration{time.Second, time.Hour}, MaxRetryAfter: 10 * time.Minute}}
	for _, tc := range []struct {
		name    string
		attempt int
		header  http.Header
		outcome core.Outcome
		min     time.Duration
		max     time.Duration
	}{
		{"first failure waits the first step", 1, nil, core.OutcomeRetry, time.Second, time.Second + 100*time.Millisecond},
		{"second failure waits the second step", 2, nil, core.OutcomeRetry, time.Hour, time.Hour + time.Second},
		{"last attempt gives up", 3, nil, core.OutcomeFailed, 0, 0},
		{"Retry-After is honoured", 1, http.Header{"Retry-After": {"300"}}, core.OutcomeRetry, 5 * time.Minute, 5*time.Minute + time.Second},
		{"Retry-After is capped", 1, http.Header{"Retry-After": {"86400"}}, core.OutcomeRetry, 10 * time.Minute, 10*time.Minute + time.Second},
		{"Retry-After of zero waits a second", 2, http.Header{"Retry-After": {"0"}}, core.OutcomeRetry, time.Second, time.Second + 100*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res := d.failed(core.AttemptResult{Job: core.Job{Attempt: tc.attempt}}, 503, tc.header)
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s", res.Outcome, tc.outcome)
			}
			if tc.outcome == core.OutcomeRetry {
				wait := res.NextAttemptAt.Sub(start)
				if wait < tc.min || wait > tc.max {
					t.Fatalf("next attempt in %v, want %v..%v", wait, tc.min, tc.max)
				}
			}
		})
	}
}
