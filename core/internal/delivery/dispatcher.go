// Package delivery is the dispatcher: it claims due deliveries from the
// store's queue under a lease, runs the plugin chain, signs the exact bytes
// it sends, POSTs them with an SSRF-safe client, and records every attempt
// and the next one. Nothing lives only in memory: a crashed process's leases
// run out and its deliveries are taken up again, by it or by another process.
package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/signing"
)

// Queue is what the dispatcher needs from the store.
type Queue interface {
	Claim(ctx context.Context, limit int, lease time.Duration, exclude []int64) ([]core.Job, error)
	Release(ctx context.Context, jobs []core.Job, delay time.Duration) error
	Complete(ctx context.Context, results []core.AttemptResult, disableAfter time.Duration) (deactivated []int64, err error)
}

// Throttler is a Queue that keeps webhooks' rate limits (store.Store):
// TakeThrottle grants an attempt now (0) or says how long until the next
// one may start. The bucket lives in the shared database, so that every
// process delivering to a webhook draws from the same one.
type Throttler interface {
	TakeThrottle(ctx context.Context, webhookID int64, t core.Throttle) (time.Duration, error)
}

// LineSweeper is a Queue with ordered webhooks (store.Store): PromoteOrdered
// gives every line without a head its next delivery, repairing a promotion
// that a killed process did not make.
type LineSweeper interface {
	PromoteOrdered(ctx context.Context) (int, error)
}

// LineHandOn is a Queue that hands an ordered line's next delivery to the
// dispatcher that records the end of the line's head (store.Store): in the
// transaction that records it, the next delivery is leased within the room
// r and returned (next), so the line costs no claim and no wait for one.
type LineHandOn interface {
	CompleteHandingOn(ctx context.Context, results []core.AttemptResult, disableAfter time.Duration, r core.Reservation) (deactivated []int64, next []core.Job, err error)
}

// sweepEvery is how often Run sweeps ordered lines.
const sweepEvery = time.Second

// Transformer runs the plugin chain that applies to a job. Keep false drops
// the delivery; Body and ContentType replace the notification JSON when set.
// Trace is a JSON record of which plugins ran, what they decided and how long
// they took.
type Transformer interface {
	Transform(ctx context.Context, job core.Job) (TransformResult, error)
}

// Preparer is a Transformer that can start its work on a notification before
// a worker takes one of its deliveries. The dispatcher calls Prepare, which
// must not block, with the first job of each notification it is handed or
// claims: a global chain's outcome, which every delivery of the
// notification shares, is then computed off the workers' path instead of by
// the first worker while the others holding its deliveries wait for it.
type Preparer interface {
	Prepare(job core.Job)
}

// TransformResult is the outcome of a plugin chain for one delivery.
type TransformResult struct {
	Keep        bool
	Body        []byte
	ContentType string
	Trace       string
	DropReason  string
}

// Config configures a Dispatcher.
type Config struct {
	Queue       Queue
	Client      *http.Client
	Transformer Transformer // nil: no plugins
	Logger      *slog.Logger
	Metrics     *Metrics // nil: no metrics

	UserAgent             string
	Timeout               time.Duration
	Workers               int
	PerWebhookConcurrency int
	Schedule              []time.Duration
	Jitter                float64
	MaxRetryAfter         time.Duration
	Lease                 time.Duration
	DisableAfter          time.Duration
	BatchSize             int
	PollInterval          time.Duration
	// Backlog is how many fresh deliveries producers may hand to this
	// dispatcher (Reserve/Hand) beyond the room it claims into: a burst of
	// new notifications goes straight to the workers, without a claim's row
	// write, while claims keep their own room. 0 disables hand-offs.
	Backlog int
	// RecordLinger is how long results are gathered into one write of the
	// attempts' outcomes while attempts are still under way (default 5ms).
	// Once the dispatcher holds no job, what has arrived is written at once.
	RecordLinger time.Duration

	// Tracer, when set, records a span per attempt in the trace of the
	// attempt's notification (core.Job.TraceParent), with the plugin
	// chain's spans under it. nil: no spans, and no cost.
	Tracer trace.Tracer
	// TraceHeader sends the attempt span's W3C traceparent header with each
	// delivery (with a Tracer only). Headers are not signed: the signature
	// covers the body's exact bytes.
	TraceHeader bool

	// Now is the clock attempts are signed by: each signature's timestamp,
	// and whether a rotation's overlap with the previous secret has ended
	// (default time.Now; tests move it past the end). Leases, throttles and
	// retry times are the queue's, on its clock: the dispatcher judges them
	// on the wall clock.
	Now func() time.Time
}

// MaxResponseExcerpt is how much of a receiver's answer is recorded.
const MaxResponseExcerpt = 1024

// Dispatcher delivers queued notifications.
type Dispatcher struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{}

	mu      sync.Mutex
	running bool // between Run's start and its end; jobs is open
	// held counts jobs in memory (queued, parked or being attempted) and
	// reserved the room held for claims and hand-offs under way, each by
	// pool: claimed jobs, and fresh ones handed over by producers.
	held, reserved [2]int
	perWebhook     map[int64]int    // jobs in memory, by webhook
	active         map[int64]int    // attempts under way, by webhook
	parked         map[int64][]task // jobs waiting for their webhook's concurrency limit
	slotFree       chan struct{}

	// jobs feeds a fixed pool of workers (long-lived goroutines keep the
	// stacks the HTTP client grows into). It has room for every job the
	// dispatcher may hold, so a send never blocks.
	jobs    chan task
	results chan core.AttemptResult
	// quiet tells the record loop that the dispatcher holds no job any
	// more, so no result is coming that is worth waiting for.
	quiet    chan struct{}
	wg       sync.WaitGroup
	leftover []core.Job // jobs not started when Run ended, to give back

	// Run's lifetime, under mu. stopClaims ends the claim loop; hard is the
	// context of attempts' requests and of the store calls that record and
	// give back, which outlives the claim loop (shutdown must not cut an
	// attempt short) until the drain's time is up (abandon). ran is closed
	// when Run returns; shutdown is set by Shutdown, even before Run.
	stopClaims context.CancelFunc
	hard       context.Context
	abandon    context.CancelFunc
	ran        chan struct{}
	shutdown   bool

	signersMu sync.Mutex
	signers   map[string]*signing.Signer // by secret; see signer

	// throttledUntil holds webhooks whose bucket was empty, until it has
	// room again: their jobs go back to the queue without asking the
	// database, and claims leave them out meanwhile.
	throttledUntil map[int64]time.Time
}

// The two pools of room: claimed jobs, and fresh jobs handed over by
// producers (Config.Backlog).
const (
	claimed = 0
	handed  = 1
)

// task is a job and the pool whose room it holds.
type task struct {
	job  core.Job
	pool int
}

// maxSigners bounds the signer cache; past it the cache starts over.
const maxSigners = 4096

// signer returns the cached Signer of secret: keying its two HMACs once per
// webhook instead of once per attempt saves most of the signing's cost.
func (d *Dispatcher) signer(secret string) *signing.Signer {
	d.signersMu.Lock()
	defer d.signersMu.Unlock()
	s, ok := d.signers[secret]
	if !ok {
		if d.signers == nil || len(d.signers) >= maxSigners {
			d.signers = map[string]*signing.Signer{}
		}
		s = signing.NewSigner(secret)
		d.signers[secret] = s
	}
	return s
}

// New returns a dispatcher; Run starts it.
func New(cfg Config) (*Dispatcher, error) {
	switch {
	case cfg.Queue == nil:
		return nil, errors.New("dispatcher: queue required")
	case cfg.Client == nil:
		return nil, errors.New("dispatcher: http client required")
	case cfg.Workers <= 0 || cfg.PerWebhookConcurrency <= 0 || cfg.BatchSize <= 0:
		return nil, errors.New("dispatcher: workers, per-webhook concurrency and batch size must be positive")
	case cfg.Lease <= cfg.Timeout:
		// A job is not started with less than a timeout of its lease left.
		return nil, errors.New("dispatcher: lease must outlast the delivery timeout")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Backlog < 0 {
		cfg.Backlog = 0
	}
	if cfg.RecordLinger <= 0 {
		cfg.RecordLinger = recordLinger
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Dispatcher{
		cfg: cfg, log: cfg.Logger,
		wake:           make(chan struct{}, 1),
		slotFree:       make(chan struct{}, 1),
		perWebhook:     map[int64]int{},
		active:         map[int64]int{},
		parked:         map[int64][]task{},
		throttledUntil: map[int64]time.Time{},
		// Room for the results that arrive while a batch is written, so
		// that workers do not wait for the database.
		results: make(chan core.AttemptResult, 4*cfg.Workers+maxRecordBatch),
		quiet:   make(chan struct{}, 1),
		jobs:    make(chan task, cfg.Workers+2*cfg.BatchSize+cfg.Backlog),
	}, nil
}

// Wake tells the dispatcher that new deliveries may be due, so it claims
// now instead of at its next poll.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run claims and delivers until ctx ends or Shutdown is called, then
// drains: it waits for the attempts under way (each bounded by the delivery
// timeout), records them, and gives the jobs it had not started back to the
// queue. The drain ends by Shutdown's deadline, or without Shutdown a lease
// after ctx ended: what is not recorded by then is left to its lease, and the
// log says how many results that was. Run may be called once.
func (d *Dispatcher) Run(ctx context.Context) error {
	ctx, stopClaims := context.WithCancel(ctx)
	defer stopClaims()
	hard, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	d.mu.Lock()
	if d.ran != nil {
		d.mu.Unlock()
		return errors.New("dispatcher: Run called twice")
	}
	ran := make(chan struct{})
	d.ran, d.stopClaims, d.hard, d.abandon = ran, stopClaims, hard, abandon
	if d.shutdown {
		stopClaims()
	}
	d.running = true
	d.mu.Unlock()
	defer close(ran)

	done := make(chan struct{})
	go func() { defer close(done); d.recordLoop(hard) }()
	for i := 0; i < d.cfg.Workers; i++ {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.work(ctx, hard)
		}()
	}
	defer func() {
		// Without Shutdown, the drain may take a lease: after that, another
		// process takes the deliveries up anyway.
		bound, cancel := context.WithTimeout(context.Background(), d.cfg.Lease)
		defer cancel()
		defer context.AfterFunc(bound, abandon)()
		// Jobs handed over from now on go back to the queue (Hand); so do
		// the ones not started, rather than wait for their leases to run out.
		d.mu.Lock()
		d.running = false
		close(d.jobs)
		d.mu.Unlock()
		d.wg.Wait()
		close(d.results)
		<-done
		d.mu.Lock()
		left := d.leftover
		for w, q := range d.parked {
			for _, t := range q {
				left = append(left, t.job)
			}
			delete(d.parked, w)
		}
		d.leftover = nil
		d.mu.Unlock()
		d.giveBack(left)
		d.mu.Lock()
		d.hard = nil
		d.mu.Unlock()
	}()
	bo := newStoreBackoff()
	// Claim in batches: waiting for half a batch of room costs no latency
	// (two batches are prefetched) and keeps each claim round trip full.
	threshold := max(1, d.cfg.BatchSize/2)
	var lastSweep time.Time
	for ctx.Err() == nil {
		free := d.room()
		if free <= 0 || (free < threshold && d.busy()) {
			select {
			case <-ctx.Done():
			case <-d.slotFree:
			}
			continue
		}
		if sw, ok := d.cfg.Queue.(LineSweeper); ok && time.Since(lastSweep) >= sweepEvery {
			lastSweep = time.Now()
			if _, err := sw.PromoteOrdered(ctx); err != nil && ctx.Err() == nil {
				d.log.Warn("sweep ordered lines failed", "err", err)
			}
		}
		r := d.reserve(claimed, min(free, d.cfg.BatchSize))
		if r.N == 0 {
			continue
		}
		jobs, err := d.cfg.Queue.Claim(ctx, r.N, r.Lease, r.Exclude)
		if err != nil {
			d.Hand(r, nil)
			if ctx.Err() != nil {
				break
			}
			wait := bo.NextBackOff()
			d.log.Warn("claim deliveries failed; retrying", "err", err, "in", wait)
			sleep(ctx, wait)
			continue
		}
		bo.Reset()
		d.Hand(r, jobs)
		if len(jobs) < r.N {
			select {
			case <-ctx.Done():
			case <-d.wake:
			case <-time.After(d.cfg.PollInterval):
			}
		}
	}
	return nil
}

// Shutdown stops Run's claims and waits for Run's drain to end, until ctx
// ends: then the attempts still under way are cut short and the results not
// recorded are left to their leases (another process, or this one
// restarted, attempts those deliveries again). It returns nil once Run has
// returned, or ctx's error. Called before Run, it makes Run return at once.
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.shutdown = true
	stopClaims, abandon, ran := d.stopClaims, d.abandon, d.ran
	d.mu.Unlock()
	if ran == nil {
		return nil
	}
	stopClaims()
	defer context.AfterFunc(ctx, abandon)()
	select {
	case <-ran:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// work is a worker: it attempts jobs in the order they came, except that a
// job whose webhook is at its concurrency limit waits (parked, not holding
// the worker) until one of that webhook's attempts ends; the worker that
// ends it takes the parked job next. Once ctx ends it starts no job; the
// attempts themselves run under hard, which ends only when the drain's time
// is up.
func (d *Dispatcher) work(ctx, hard context.Context) {
	for t := range d.jobs {
		if !d.start(ctx, t) {
			continue
		}
		for ok := true; ok; {
			d.process(hard, t)
			t, ok = d.finish(ctx, t)
		}
	}
}

// start takes an attempt slot of t's webhook, or parks t. After Run's end
// t is kept to be given back instead.
func (d *Dispatcher) start(ctx context.Context, t task) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := t.job.WebhookID
	switch {
	case ctx.Err() != nil:
		d.leftover = append(d.leftover, t.job)
		d.dropLocked(t)
		return false
	case d.active[w] >= d.cfg.PerWebhookConcurrency:
		d.parked[w] = append(d.parked[w], t)
		return false
	}
	d.active[w]++
	return true
}

// finish ends t's attempt and returns the next parked job of the same
// webhook, which takes over the attempt slot, if there is one.
func (d *Dispatcher) finish(ctx context.Context, t task) (task, bool) {
	w := t.job.WebhookID
	d.mu.Lock()
	d.dropLocked(t)
	idle := !d.busyLocked()
	var next task
	q := d.parked[w]
	ok := len(q) > 0 && ctx.Err() == nil
	if ok {
		next = q[0]
		if len(q) == 1 {
			delete(d.parked, w)
		} else {
			d.parked[w] = q[1:]
		}
	} else if d.active[w]--; d.active[w] <= 0 {
		delete(d.active, w)
	}
	d.mu.Unlock()
	select {
	case d.slotFree <- struct{}{}:
	default:
	}
	if idle {
		// t's result is already in d.results: process sent it.
		select {
		case d.quiet <- struct{}{}:
		default:
		}
	}
	return next, ok
}

// dropLocked takes t out of the dispatcher's count.
func (d *Dispatcher) dropLocked(t task) {
	w := t.job.WebhookID
	if d.perWebhook[w]--; d.perWebhook[w] <= 0 {
		delete(d.perWebhook, w)
	}
	d.held[t.pool]--
}

// process attempts t's job and sends the result to be recorded, unless its
// lease would run out before the attempt could: a job that waited that long
// (behind a slow webhook) goes back to the queue instead, so that no other
// process can take it up while it is being sent.
func (d *Dispatcher) process(ctx context.Context, t task) {
	if !t.job.LeaseExpires.IsZero() && time.Until(t.job.LeaseExpires) < d.cfg.Timeout {
		d.giveBack([]core.Job{t.job})
		return
	}
	if t.job.Throttle.On() {
		if wait := d.throttle(ctx, t.job); wait > 0 {
			// Back to the queue, due when the bucket has room: the job holds
			// neither a worker nor room that other webhooks need.
			d.giveBackAfter([]core.Job{t.job}, wait)
			return
		}
	}
	d.results <- d.attempt(ctx, t.job)
}

// throttle asks the webhook's bucket for an attempt now: 0 when granted,
// else how long to wait.
func (d *Dispatcher) throttle(ctx context.Context, j core.Job) time.Duration {
	now := time.Now()
	d.mu.Lock()
	until, ok := d.throttledUntil[j.WebhookID]
	d.mu.Unlock()
	if ok && now.Before(until) {
		return until.Sub(now)
	}
	th, ok := d.cfg.Queue.(Throttler)
	if !ok {
		return 0
	}
	wait, err := th.TakeThrottle(ctx, j.WebhookID, j.Throttle)
	if err != nil {
		// Not sent without a grant: the limit is the owner's promise.
		d.log.Warn("throttle check failed; retrying later", "webhook", j.WebhookID, "err", err)
		wait = time.Second
	}
	if wait > 0 {
		d.mu.Lock()
		d.throttledUntil[j.WebhookID] = now.Add(wait)
		d.mu.Unlock()
	}
	return wait
}

// giveBack returns jobs that were not attempted to the queue, due at once.
func (d *Dispatcher) giveBack(jobs []core.Job) { d.giveBackAfter(jobs, 0) }

// giveBackAfter returns jobs that were not attempted to the queue, due
// after delay; during a drain, only until the drain's time is up.
func (d *Dispatcher) giveBackAfter(jobs []core.Job, delay time.Duration) {
	if len(jobs) == 0 {
		return
	}
	d.mu.Lock()
	parent := d.hard
	d.mu.Unlock()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, d.cfg.Timeout)
	defer cancel()
	if err := d.cfg.Queue.Release(ctx, jobs, delay); err != nil {
		// Their leases run out instead.
		d.log.Warn("give back deliveries not attempted", "err", err, "deliveries", len(jobs))
	}
}

// room is how many more jobs the dispatcher claims: enough for every worker
// and two batches waiting for them, less what it holds or has reserved.
func (d *Dispatcher) room() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.freeLocked(claimed)
}

func (d *Dispatcher) freeLocked(pool int) int {
	size := d.cfg.Workers + 2*d.cfg.BatchSize
	if pool == handed {
		size = d.cfg.Backlog
	}
	return size - d.held[pool] - d.reserved[pool]
}

// excludeLocked lists the webhooks with as many jobs in memory as their
// concurrency limit: a claim would only park more of theirs.
func (d *Dispatcher) excludeLocked() []int64 {
	var exclude []int64
	for id, n := range d.perWebhook {
		if n >= d.cfg.PerWebhookConcurrency {
			exclude = append(exclude, id)
		}
	}
	// Throttled webhooks whose bucket is empty too: their deliveries would
	// only go back.
	now := time.Now()
	for id, until := range d.throttledUntil {
		if !now.Before(until) {
			delete(d.throttledUntil, id)
		} else if d.perWebhook[id] < d.cfg.PerWebhookConcurrency {
			exclude = append(exclude, id)
		}
	}
	return exclude
}

func (d *Dispatcher) reserve(pool, max int) core.Reservation {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		return core.Reservation{}
	}
	n := min(max, d.freeLocked(pool))
	if n <= 0 {
		return core.Reservation{}
	}
	d.reserved[pool] += n
	r := core.Reservation{N: n, Lease: d.cfg.Lease, Fresh: pool == handed}
	if pool == claimed {
		r.Exclude = d.excludeLocked()
	}
	return r
}

// Reserve holds room in the backlog (Config.Backlog) for up to max
// deliveries that a producer is about to create already leased to this
// dispatcher (store.Handoff): a fresh notification's deliveries skip the
// claim, one row write and one round trip each. The producer must call Hand
// with what it created, or with none.
func (d *Dispatcher) Reserve(max int) core.Reservation { return d.reserve(handed, max) }

// Hand gives the dispatcher the jobs leased under r (at most r.N) and takes
// back the room they did not use. Jobs handed over after Run ended go back
// to the queue at once rather than hold their leases idle.
func (d *Dispatcher) Hand(r core.Reservation, jobs []core.Job) {
	pool := claimed
	if r.Fresh {
		pool = handed
	}
	var surplus []core.Job
	d.mu.Lock()
	d.reserved[pool] -= r.N
	for _, j := range jobs {
		if !d.running {
			surplus = append(surplus, j)
			continue
		}
		d.perWebhook[j.WebhookID]++
		d.held[pool]++
		// Never blocks: the reservation kept what is handed over within the
		// channel's room, and Run closes it under the same lock.
		d.jobs <- task{job: j, pool: pool}
	}
	d.mu.Unlock()
	if p, ok := d.cfg.Transformer.(Preparer); ok && len(surplus) < len(jobs) {
		for i, j := range jobs {
			if i == 0 || j.Notification.ID != jobs[i-1].Notification.ID {
				p.Prepare(j)
			}
		}
	}
	if len(jobs) < r.N || len(surplus) > 0 {
		select {
		case d.slotFree <- struct{}{}:
		default:
		}
	}
	d.giveBack(surplus)
}

func (d *Dispatcher) busy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.busyLocked()
}

// busyLocked says whether the dispatcher holds a job (queued, parked or
// being attempted).
func (d *Dispatcher) busyLocked() bool { return d.held[claimed]+d.held[handed] > 0 }

// The record loop writes at most maxRecordBatch results at once, after
// waiting up to Config.RecordLinger (default recordLinger) for more.
const (
	recordLinger   = 5 * time.Millisecond
	maxRecordBatch = 256
)

// recordLoop writes attempt results in batches: one transaction for many
// attempts keeps the database from being the bottleneck. When the database
// is down it keeps the batch and retries, leases keeping the deliveries safe
// meanwhile, until ctx ends (the drain's time is up): from then on it drops
// what it has and what comes, and says how many results it dropped.
func (d *Dispatcher) recordLoop(ctx context.Context) {
	var batch []core.AttemptResult
	dropped := 0
	defer func() {
		if dropped > 0 {
			d.log.Warn("attempt results not recorded by the shutdown deadline: their deliveries are left to their leases and will be attempted again", "results", dropped)
		}
	}()
	flush := func() {
		bo := newStoreBackoff()
		for {
			if ctx.Err() != nil {
				dropped += len(batch)
				batch = batch[:0]
				return
			}
			deact, handed, err := d.complete(ctx, batch)
			if err == nil {
				for _, id := range deact {
					d.log.Warn("webhook deactivated by delivery failures", "webhook", id)
				}
				d.cfg.Metrics.recorded(batch)
				if handed < endedLines(batch) {
					// The record promoted the next of a line without handing
					// it over: claim it now rather than at the next poll.
					d.Wake()
				}
				batch = batch[:0]
				return
			}
			if ctx.Err() != nil {
				continue
			}
			wait := bo.NextBackOff()
			d.log.Warn("record delivery attempts failed; retrying", "err", err, "attempts", len(batch), "in", wait)
			sleep(ctx, wait)
		}
	}
	for {
		res, ok := <-d.results
		if !ok {
			return
		}
		batch = append(batch, res)
		// Gather what comes in the next few milliseconds: PostgreSQL's cost
		// of a completion is largely per statement, and the wait delays only
		// the record, not the delivery. Once the dispatcher holds no job,
		// what has arrived is all there is to wait for.
		linger := time.NewTimer(d.cfg.RecordLinger)
	gather:
		for len(batch) < maxRecordBatch {
			select {
			case r, ok := <-d.results:
				if !ok {
					linger.Stop()
					flush()
					return
				}
				batch = append(batch, r)
			case <-linger.C:
				break gather
			case <-d.quiet:
				// This loop is the channel's only reader: what len counts
				// is there to take.
				for len(batch) < maxRecordBatch && len(d.results) > 0 {
					batch = append(batch, <-d.results)
				}
				break gather
			}
		}
		linger.Stop()
		flush()
	}
}

// complete records batch. Where it ends the heads of ordered lines and the
// queue can hand lines on, room for their next deliveries is reserved and
// what the queue leases in it is handed to the workers: handed is how many.
func (d *Dispatcher) complete(ctx context.Context, batch []core.AttemptResult) (deact []int64, handed int, err error) {
	h, ok := d.cfg.Queue.(LineHandOn)
	lines := endedLines(batch)
	if !ok || lines == 0 {
		deact, err = d.cfg.Queue.Complete(ctx, batch, d.cfg.DisableAfter)
		return deact, 0, err
	}
	r := d.reserve(claimed, lines)
	deact, next, err := h.CompleteHandingOn(ctx, batch, d.cfg.DisableAfter, r)
	if err != nil {
		next = nil // the transaction, and any lease in it, did not commit
	}
	d.Hand(r, next)
	return deact, len(next), err
}

// endedLines counts the results that end the head of an ordered line
// (every outcome but a retry): the lines whose next delivery is promoted.
func endedLines(batch []core.AttemptResult) int {
	n := 0
	for _, r := range batch {
		if r.Job.Ordered && r.Outcome != core.OutcomeRetry {
			n++
		}
	}
	return n
}

// attempt makes one delivery attempt and decides what comes next.
func (d *Dispatcher) attempt(ctx context.Context, j core.Job) core.AttemptResult {
	if d.cfg.Tracer == nil {
		return d.send(ctx, j)
	}
	return d.tracedSend(ctx, j)
}

// tracedSend is send inside a span of the notification's trace: a retry,
// or an attempt after a restart, joins the trace whose traceparent was
// stored with the notification.
func (d *Dispatcher) tracedSend(ctx context.Context, j core.Job) core.AttemptResult {
	if j.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, traceParent(j.TraceParent))
	}
	ctx, span := d.cfg.Tracer.Start(ctx, "delivery.attempt", trace.WithSpanKind(trace.SpanKindClient))
	res := d.send(ctx, j)
	// One call with every attribute: the span's attribute list is
	// allocated once, at its final size.
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs,
		attribute.String("govgate.notification.id", j.Notification.ID),
		attribute.Int64("govgate.delivery.id", j.DeliveryID),
		attribute.Int64("govgate.webhook.id", j.WebhookID),
		attribute.Int("govgate.delivery.attempt", j.Attempt),
		attribute.String("govgate.delivery.outcome", string(res.Outcome)),
		attribute.Float64("govgate.delivery.latency_ms", float64(res.Duration.Microseconds())/1000),
	)
	if res.StatusCode != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", res.StatusCode))
	}
	if !res.NextAttemptAt.IsZero() {
		attrs = append(attrs, attribute.String("govgate.delivery.next_attempt_at", res.NextAttemptAt.UTC().Format(time.RFC3339Nano)))
	}
	switch res.Outcome {
	case core.OutcomeSucceeded:
		span.SetStatus(codes.Ok, "")
	case core.OutcomeDropped:
		attrs = append(attrs, attribute.String("govgate.delivery.drop_reason", res.Error))
	default:
		span.SetStatus(codes.Error, res.Error)
	}
	span.SetAttributes(attrs...)
	span.End()
	return res
}

// traceParent is a stored traceparent as a propagation carrier.
type traceParent string

func (c traceParent) Get(key string) string {
	if key == "traceparent" {
		return string(c)
	}
	return ""
}
func (traceParent) Set(string, string) {}
func (traceParent) Keys() []string     { return []string{"traceparent"} }

// send makes one delivery attempt and decides what comes next.
func (d *Dispatcher) send(ctx context.Context, j core.Job) core.AttemptResult {
	start := time.Now()
	res := core.AttemptResult{Job: j, StartedAt: start}
	body, contentType := j.Body, "application/json"
	if d.cfg.Transformer != nil {
		tr, err := d.cfg.Transformer.Transform(ctx, j)
		res.PluginTrace = tr.Trace
		if err != nil {
			// The chain itself could not run (not a plugin failure, which the
			// chain's policy handles): retry later, like a network error.
			res.Error = "plugins: " + err.Error()
			return d.failed(res, 0, nil)
		}
		if !tr.Keep {
			res.Outcome, res.Error, res.Duration = core.OutcomeDropped, tr.DropReason, time.Since(start)
			return res
		}
		if tr.Body != nil {
			body = tr.Body
		}
		if tr.ContentType != "" {
			contentType = tr.ContentType
		}
	}
	// ctx is the dispatcher's hard context (see work): a shutdown does not
	// cut an attempt short unless its drain's time is up. The attempt has its
	// own timeout, which a client whose own Timeout is no longer
	// (ssrf.NewClient's) already enforces without a second timer.
	reqCtx := ctx
	if t := d.cfg.Client.Timeout; t <= 0 || t > d.cfg.Timeout {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(reqCtx, d.cfg.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, j.WebhookURL, bytes.NewReader(body))
	if err != nil {
		res.Error = "build request: " + err.Error()
		return d.failed(res, 0, nil)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	if d.cfg.TraceHeader && d.cfg.Tracer != nil {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	// Each attempt is signed at send time, so its timestamp is fresh; during
	// a rotation's overlap with the previous secret too.
	now := d.cfg.Now()
	if j.PreviousSecret != "" && now.Before(j.PreviousUntil) {
		signing.SignRotated(req.Header, d.signer(j.Secret), d.signer(j.PreviousSecret), j.Notification.ID, now, body)
	} else {
		d.signer(j.Secret).SignHeader(req.Header, j.Notification.ID, now, body)
	}
	resp, err := d.cfg.Client.Do(req)
	res.Duration = time.Since(start)
	if err != nil {
		res.Error = describeError(err, d.cfg.Timeout)
		return d.failed(res, 0, nil)
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseExcerpt))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused; what is left of the body is not ours to judge
	resp.Body.Close()
	res.Duration = time.Since(start)
	res.StatusCode, res.ResponseExcerpt = resp.StatusCode, string(bytes.ToValidUTF8(excerpt, []byte("?")))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		res.Outcome = core.OutcomeSucceeded
		return res
	case resp.StatusCode == http.StatusGone:
		res.Outcome, res.Error = core.OutcomeGone, "receiver answered 410 Gone: webhook deactivated"
		return res
	}
	res.Error = "receiver answered " + strconv.Itoa(resp.StatusCode)
	return d.failed(res, resp.StatusCode, resp.Header)
}

// failed schedules the next attempt of a failed one, or gives up when the
// schedule is exhausted.
func (d *Dispatcher) failed(res core.AttemptResult, status int, h http.Header) core.AttemptResult {
	n := res.Job.Attempt // attempts made so far, this one included
	if n > len(d.cfg.Schedule) {
		res.Outcome = core.OutcomeFailed
		res.Error += fmt.Sprintf(" (attempt %d of %d: giving up)", n, len(d.cfg.Schedule)+1)
		return res
	}
	wait := Jitter(d.cfg.Schedule[n-1], d.cfg.Jitter)
	if ra, ok := RetryAfter(h, time.Now()); ok {
		wait = min(max(ra, time.Second), d.cfg.MaxRetryAfter)
	}
	res.Outcome = core.OutcomeRetry
	res.NextAttemptAt = time.Now().Add(wait)
	return res
}

// Jitter spreads a wait uniformly over ±frac of itself, so receivers that
// failed together are not retried together.
func Jitter(wait time.Duration, frac float64) time.Duration {
	if frac <= 0 {
		return wait
	}
	f := 1 + frac*(2*rand.Float64()-1)
	return time.Duration(float64(wait) * f)
}

// RetryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func describeError(err error, timeout time.Duration) string {
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() {
		return fmt.Sprintf("timed out after %s", timeout)
	}
	return err.Error()
}

// newStoreBackoff is the wait between retries of a failing database call:
// exponential from 100 ms to 5 s, for as long as it takes (cenkalti/backoff).
func newStoreBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	b.Reset()
	return b
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
