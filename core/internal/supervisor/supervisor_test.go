package supervisor_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/supervisor"
)

// events records what the parts did, in order.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, s)
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// logBuffer collects a logger's output.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// loop is a part that runs until its context ends, and says so.
func loop(ev *events, name string, started chan<- struct{}) func(context.Context) error {
	return func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		ev.add(name + " ended")
		return ctx.Err()
	}
}

func TestStopsInReverseOrderStopThenContext(t *testing.T) {
	var ev events
	s := supervisor.New(context.Background(), slog.New(slog.DiscardHandler))
	started := make(chan struct{}, 3)
	s.OnStop("store", func(context.Context) error { ev.add("store closed"); return nil })
	s.Go("dispatcher", loop(&ev, "dispatcher", started), func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a stop function got no deadline")
		}
		ev.add("dispatcher drained")
		return nil
	})
	s.Go("listener", loop(&ev, "listener", started), nil)
	<-started
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Wait(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	want := []string{"listener ended", "dispatcher drained", "dispatcher ended", "store closed"}
	if got := ev.list(); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestAFailedPartStopsTheOthers(t *testing.T) {
	var ev events
	s := supervisor.New(context.Background(), slog.New(slog.DiscardHandler))
	started := make(chan struct{}, 1)
	s.Go("indexer", loop(&ev, "indexer", started), nil)
	<-started
	boom := errors.New("listen: address in use")
	s.Go("listener", func(context.Context) error { return boom }, nil)
	err := s.Wait(context.Background(), 10*time.Second)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "listener: ") {
		t.Fatalf("Wait returned %v, want the listener's failure", err)
	}
	if got := ev.list(); !slices.Equal(got, []string{"indexer ended"}) {
		t.Fatalf("got %q", got)
	}
}

// A part that ignores its context and its stop's deadline does not hold
// the stop past its timeout: it is named in the log and left behind, and
// the parts started before it still have their contexts ended.
func TestStopEndsByItsTimeoutWhateverAPartDoes(t *testing.T) {
	var log logBuffer
	s := supervisor.New(context.Background(), slog.New(slog.NewTextHandler(&log, nil)))
	started, ended := make(chan struct{}), make(chan struct{})
	s.Go("monitor", func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(ended)
		return nil
	}, nil)
	<-started
	stuck := make(chan struct{})
	defer close(stuck)
	s.Go("recorder", func(context.Context) error { <-stuck; return nil }, func(context.Context) error { <-stuck; return nil })
	stopped := make(chan struct{})
	go func() { s.Stop(200 * time.Millisecond); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return 30 s after its 200 ms timeout")
	}
	if got := log.String(); !strings.Contains(got, "shutdown deadline passed") || !strings.Contains(got, "recorder") || !strings.Contains(got, "monitor") {
		t.Fatalf("the log does not name the parts left running:\n%s", got)
	}
	// The monitor's context ended though nobody waited for it.
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the monitor's context did not end")
	}
}

func TestStopIsIdempotentAndLatePartsCloseAtOnce(t *testing.T) {
	s := supervisor.New(context.Background(), slog.New(slog.DiscardHandler))
	s.Stop(time.Second)
	s.Stop(time.Second)
	closed := false
	s.OnStop("late", func(context.Context) error { closed = true; return nil })
	if !closed {
		t.Fatal("a part added while stopping was not closed")
	}
	ran := false
	s.Go("late loop", func(context.Context) error { ran = true; return nil }, nil)
	if ran {
		t.Fatal("a part started after Stop ran")
	}
}
