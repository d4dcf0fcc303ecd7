// Package supervisor owns the long-running parts of a process, as Caddy's
// app lifecycle and errgroup do in smaller servers: every goroutine a part
// runs on is started here, the parts stop in the reverse of the order they
// started (listeners before the dispatcher they feed, the dispatcher before
// the store it records into), and the whole stop ends by a deadline
// whatever a part does: a part still running then is named in the log and
// left behind, for the process to exit without it.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Supervisor runs parts and stops them.
type Supervisor struct {
	base context.Context
	log  *slog.Logger

	mu       sync.Mutex
	parts    []*part
	stopping bool
	stopped  chan struct{} // closed when Stop has returned
	failed   chan error    // the first part that failed
}

// part is one started part: a goroutine running run, a stop function, or
// both.
type part struct {
	name     string
	stopping atomic.Bool // its stop has begun: what run returns is no failure
	cancel   context.CancelFunc
	stop     func(context.Context) error
	done     chan struct{} // closed when run has returned (at once with no run)
}

// New returns a supervisor whose parts' contexts carry ctx's values but not
// its cancellation: a part's context ends when its own turn to stop comes.
func New(ctx context.Context, log *slog.Logger) *Supervisor {
	if log == nil {
		log = slog.Default()
	}
	return &Supervisor{base: context.WithoutCancel(ctx), log: log, failed: make(chan error, 1), stopped: make(chan struct{})}
}

// Go starts a part that runs run on a goroutine of its own until run's
// context ends. When the part's turn to stop comes, stop, if not nil, is
// called first with the stop's deadline (to drain, as http.Server.Shutdown
// does), then run's context ends. run returning an error before its stop
// (other than its context's) stops every part: Wait returns the error.
func (s *Supervisor) Go(name string, run func(ctx context.Context) error, stop func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(s.base)
	p := &part{name: name, cancel: cancel, stop: stop, done: make(chan struct{})}
	if !s.add(p) {
		cancel()
		close(p.done)
		return
	}
	go func() {
		defer close(p.done)
		err := run(ctx)
		if err != nil && ctx.Err() == nil && !p.stopping.Load() {
			select {
			case s.failed <- fmt.Errorf("%s: %w", name, err):
			default:
			}
		}
	}()
}

// OnStop adds a part with nothing to run, only something to close at its
// turn (a store, a tracer's queue to flush).
func (s *Supervisor) OnStop(name string, stop func(ctx context.Context) error) {
	p := &part{name: name, cancel: func() {}, stop: stop, done: make(chan struct{})}
	close(p.done)
	if !s.add(p) {
		// Stopping already: close it now, as its turn has passed.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := stop(ctx); err != nil {
			s.log.Warn("stop", "part", name, "err", err)
		}
	}
}

func (s *Supervisor) add(p *part) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.parts = append(s.parts, p)
	return true
}

// Wait blocks until ctx ends or a part fails, then stops every part
// (Stop) within timeout. It returns the failure, if a part failed.
func (s *Supervisor) Wait(ctx context.Context, timeout time.Duration) error {
	var err error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "within", timeout)
	case err = <-s.failed:
		s.log.Error("stopping after a failure", "err", err)
	}
	s.Stop(timeout)
	return err
}

// Stop stops the parts in the reverse of the order they started, each
// after the one started after it has stopped, and returns within timeout:
// the parts' stop functions get a deadline a little before it (a fifth of
// timeout, at most 2 s), so that what the ones stopped last need (closing
// the store, flushing traces) still has time. A part not stopped by the
// timeout is logged and left running, as are the ones after it, whose
// contexts end but which are not waited for. Stop may be called more than
// once; later calls wait for the first.
func (s *Supervisor) Stop(timeout time.Duration) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		<-s.stopped
		return
	}
	s.stopping = true
	parts := s.parts
	s.mu.Unlock()
	defer close(s.stopped)

	start := time.Now()
	hard, cancelHard := context.WithTimeout(context.Background(), timeout)
	defer cancelHard()
	soft, cancelSoft := context.WithTimeout(hard, timeout-min(timeout/5, 2*time.Second))
	defer cancelSoft()
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		stopped := make(chan struct{})
		p.stopping.Store(true)
		go func() {
			defer close(stopped)
			if p.stop != nil {
				if err := p.stop(soft); err != nil && !errors.Is(err, context.Canceled) {
					s.log.Warn("stop", "part", p.name, "err", err)
				}
			}
			p.cancel()
			<-p.done
		}()
		select {
		case <-stopped:
			s.log.Debug("stopped", "part", p.name)
		case <-hard.Done():
			var left []string
			for j := i; j >= 0; j-- {
				parts[j].cancel()
				left = append(left, parts[j].name)
			}
			s.log.Error("shutdown deadline passed: leaving parts running", "parts", left, "after", time.Since(start).Round(time.Millisecond))
			return
		}
	}
	s.log.Info("stopped", "after", time.Since(start).Round(time.Millisecond))
}
