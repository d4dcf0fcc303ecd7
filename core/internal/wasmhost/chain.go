package wasmhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/sdk/abi"
)

// Entry is one plugin in a chain, with its config and its failure policy.
type Entry struct {
	Plugin string          `json:"plugin"`
	Config json.RawMessage `json:"config,omitempty"`
	// FailurePolicy says what happens to a delivery when the plugin fails
	// (traps, times out, answers out of protocol, returns an error, or is
	// not loaded): FailOpen or FailClosed; "" means DefaultFailurePolicy.
	FailurePolicy string `json:"failurePolicy,omitempty"`
}

// Failure policies.
const (
	// FailOpen delivers as if the plugin were absent from the chain.
	FailOpen = "open"
	// FailClosed drops the delivery and records why.
	FailClosed = "closed"
	// DefaultFailurePolicy is FailClosed, for filters and transforms alike.
	// A webhook owner adds a filter to stop deliveries they do not want and
	// a transform because their receiver (Slack, Discord) accepts only its
	// own format; when the plugin fails, failing open sends exactly what
	// they asked not to get, signed as genuine. A dropped delivery is
	// recorded with its reason and can be redelivered once the plugin is
	// fixed; a wrong one cannot be taken back. Chains whose plugins only
	// reduce noise can opt into FailOpen per entry.
	DefaultFailurePolicy = FailClosed
)

// Validate reports what is wrong with e, naming the field.
func (e Entry) Validate() error {
	switch {
	case !abi.ValidName(e.Plugin):
		return fmt.Errorf("plugin: %q is not a plugin name", e.Plugin)
	case len(e.Config) > 0 && !json.Valid(e.Config):
		return fmt.Errorf("config of %s: not JSON", e.Plugin)
	case e.FailurePolicy != "" && e.FailurePolicy != FailOpen && e.FailurePolicy != FailClosed:
		return fmt.Errorf("failurePolicy of %s: %q, want %q or %q", e.Plugin, e.FailurePolicy, FailOpen, FailClosed)
	}
	return nil
}

// ValidateChain validates every entry of a chain.
func ValidateChain(chain []Entry) error {
	for i, e := range chain {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("chain entry %d: %w", i, err)
		}
	}
	return nil
}

func (e Entry) failOpen() bool { return e.FailurePolicy == FailOpen }

// Decisions of a step.
const (
	DecisionKept        = "kept"
	DecisionDropped     = "dropped"
	DecisionTransformed = "transformed"
	DecisionErrorOpen   = "error-open"
	DecisionErrorClosed = "error-closed"
)

// Result is what a chain made of one delivery.
type Result struct {
	// Keep is whether the delivery goes ahead.
	Keep bool `json:"keep"`
	// Body and ContentType are what to sign and send. Body may be shared
	// with other results of the same Batch: treat it as read-only.
	Body        []byte `json:"body,omitempty"`
	ContentType string `json:"contentType"`
	Steps       []Step `json:"steps,omitempty"`
	// DropReason says why Keep is false.
	DropReason string `json:"dropReason,omitempty"`
}

// Step is one hook of one chain entry.
type Step struct {
	Plugin   string        `json:"plugin"`
	Hook     string        `json:"hook,omitempty"` // "" when the plugin is not loaded
	Decision string        `json:"decision"`
	Duration time.Duration `json:"duration"`
	Error    string        `json:"error,omitempty"`
	Logs     []string      `json:"logs,omitempty"`
	// Cached is true when the step reused the answer of a call made for
	// another delivery of the same Batch (Duration is then that call's).
	Cached bool `json:"cached,omitempty"`
}

// RunChain runs a chain on one delivery: for each entry, the plugin's filter
// and then, if the delivery is still kept, its transform. body is the
// delivery body before the chain: the notification's JSON. A global chain and
// a webhook's own chain are run as one: append(global, own...).
func (h *Host) RunChain(ctx context.Context, chain []Entry, n core.Notification, body []byte) Result {
	return h.NewBatch(n, body).Run(ctx, chain)
}

// Batch runs the chains of the deliveries of one notification and
// remembers each plugin's answers, so that webhooks sharing a chain, or a
// prefix of one such as the global chain, share the calls: fanning a
// notification out to any number of webhooks costs one call per step and
// distinct (plugin, input body), carrying that step's distinct configs.
// This relies on plugins being functions of their input, as the ABI
// requires. Failures are remembered too (a plugin that loops would loop for
// every webhook), except calls given up by their caller's context.
//
// A Batch is safe for concurrent use: workers that each Run one delivery of
// the notification share the calls, a call under way being waited for. RunAll
// batches best: it also puts the distinct configs of a step in one call.
type Batch struct {
	h    *Host
	n    abi.Notification
	body []byte

	mu     sync.Mutex
	bodies map[string]int // interned bodies, by content
	texts  [][]byte
	memo   map[stepKey]map[string]*stepOutcome // by config
}

type stepKey struct {
	p           *plugin
	hook        abi.Hook
	body        int
	contentType string
}

type stepOutcome struct {
	done chan struct{} // closed once the fields below are set
	res  abi.Result
	err  error
	dur  time.Duration
	logs []string
	used atomic.Bool
}

// maxConfigsPerCall bounds the configs of one call: the output of a call,
// and so its buffer in the plugin, grows with them.
const maxConfigsPerCall = 64

// NewBatch starts a Batch for notification n whose deliveries start with
// body.
func (h *Host) NewBatch(n core.Notification, body []byte) *Batch {
	b := &Batch{
		h: h, n: abi.Notification(n), body: body,
		bodies: map[string]int{}, memo: map[stepKey]map[string]*stepOutcome{},
	}
	b.intern(body)
	return b
}

// Run runs one chain; see RunChain.
func (b *Batch) Run(ctx context.Context, chain []Entry) Result {
	return b.RunAll(ctx, [][]Entry{chain})[0]
}

// RunAll runs several chains, one per delivery, step by step: at each step
// the deliveries whose next entry is the same plugin on the same body share
// one call carrying all their distinct configs.
func (b *Batch) RunAll(ctx context.Context, chains [][]Entry) []Result {
	jobs := make([]job, len(chains))
	for i, c := range chains {
		jobs[i] = job{chain: c, res: Result{Keep: true, Body: b.body, ContentType: abi.DefaultContentType}}
	}
	plugins := map[string]*plugin{}
	failed := map[string]error{}
	defer func() {
		for _, p := range plugins {
			p.release()
		}
	}()
	resolve := func(name string) (*plugin, error) {
		if p := plugins[name]; p != nil {
			return p, nil
		}
		if err := failed[name]; err != nil {
			return nil, err
		}
		p, err := b.h.acquireAwake(ctx, name)
		if err != nil {
			failed[name] = err
			return nil, err
		}
		plugins[name] = p
		return p, nil
	}

	for {
		groups := map[stepKey]*group{}
		var order []*group
		for i := range jobs {
			j := &jobs[i]
			e, hook, p, err := j.next(resolve)
			switch {
			case j.done:
				continue
			case err != nil:
				j.apply(e, "", &stepOutcome{err: err, done: closed}, false)
				continue
			}
			if j.body < 0 {
				j.body = b.intern(j.res.Body)
			}
			key := stepKey{p: p, hook: hook, body: j.body, contentType: j.res.ContentType}
			g := groups[key]
			if g == nil {
				g = &group{key: key, index: map[string]int{}}
				groups[key] = g
				order = append(order, g)
			}
			k, ok := g.index[string(e.Config)]
			if !ok {
				k = len(g.configs)
				g.index[string(e.Config)] = k
				g.configs = append(g.configs, e.Config)
			}
			g.members = append(g.members, member{job: j, entry: e, config: k})
		}
		if len(order) == 0 {
			if slices.ContainsFunc(jobs, func(j job) bool { return !j.done }) {
				continue // only failed lookups this round: the chains go on
			}
			break
		}
		for _, g := range order {
			outs := b.run(ctx, g)
			for _, m := range g.members {
				o := outs[m.config]
				m.job.apply(m.entry, g.key.hook, o, o.used.Swap(true))
			}
		}
	}
	out := make([]Result, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].res
	}
	return out
}

type group struct {
	key     stepKey
	index   map[string]int
	configs []json.RawMessage
	members []member
}

type member struct {
	job    *job
	entry  Entry
	config int
}

// run answers a group's configs from the memo or, for those not in it, by
// calling the plugin. A config already being answered by a concurrent Run
// of the same Batch is waited for, not asked again, so that workers that
// deliver one notification to many webhooks share the calls.
func (b *Batch) run(ctx context.Context, g *group) []*stepOutcome {
	outs := make([]*stepOutcome, len(g.configs))
	var missing []int
	b.mu.Lock()
	memo := b.memo[g.key]
	if memo == nil {
		memo = map[string]*stepOutcome{}
		b.memo[g.key] = memo
	}
	for i, c := range g.configs {
		o := memo[string(c)]
		if o == nil {
			o = &stepOutcome{done: make(chan struct{})}
			memo[string(c)] = o
			missing = append(missing, i)
		}
		outs[i] = o
	}
	body := b.texts[g.key.body]
	b.mu.Unlock()

	for len(missing) > 0 {
		chunk := missing[:min(len(missing), maxConfigsPerCall)]
		missing = missing[len(chunk):]
		in := abi.Input{Notification: b.n, Body: body, ContentType: g.key.contentType, Configs: make([]json.RawMessage, len(chunk))}
		for k, i := range chunk {
			in.Configs[k] = g.configs[i]
		}
		start := time.Now()
		res, logs, err := g.key.p.call(ctx, g.key.hook, &in)
		dur := time.Since(start)
		if err != nil {
			b.h.log.Warn("plugin call failed", "plugin", g.key.p.info.Name, "hook", g.key.hook, "configs", len(chunk), "err", err)
		}
		// A call given up by its caller says nothing about the plugin: it
		// is not remembered, and the next Run asks again.
		forget := err != nil && ctx.Err() != nil
		b.mu.Lock()
		for k, i := range chunk {
			o := outs[i]
			o.err, o.dur, o.logs = err, dur, logs
			if err == nil {
				o.res = res[k]
			}
			if forget {
				delete(memo, string(g.configs[i]))
			}
			close(o.done)
		}
		b.mu.Unlock()
	}
	for i, o := range outs {
		select {
		case <-o.done:
		case <-ctx.Done():
			outs[i] = &stepOutcome{err: fmt.Errorf("wait for a concurrent call: %w", ctx.Err()), done: closed}
		}
	}
	return outs
}

// closed is a channel that is closed.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// intern returns the number of a body, the same for equal bodies.
func (b *Batch) intern(body []byte) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i, ok := b.bodies[string(body)]; ok {
		return i
	}
	i := len(b.texts)
	b.bodies[string(body)] = i
	b.texts = append(b.texts, body)
	return i
}

// job is one delivery going through its chain.
type job struct {
	chain []Entry
	pos   int // entry
	hook  int // index in hookOrder within the entry
	done  bool
	res   Result
	body  int // res.Body's number in the Batch, -1 when not known yet
}

var hookOrder = [...]abi.Hook{abi.HookFilter, abi.HookTransform}

// next moves j to its next step and returns it, or marks j done.
func (j *job) next(resolve func(string) (*plugin, error)) (Entry, abi.Hook, *plugin, error) {
	for !j.done && j.pos < len(j.chain) {
		e := j.chain[j.pos]
		p, err := resolve(e.Plugin)
		if err != nil {
			return e, "", nil, err
		}
		for ; j.hook < len(hookOrder); j.hook++ {
			if p.has(hookOrder[j.hook]) {
				return e, hookOrder[j.hook], p, nil
			}
		}
		j.pos, j.hook = j.pos+1, 0
	}
	j.done = true
	return Entry{}, "", nil, nil
}

// apply records a step's outcome and moves j past it.
func (j *job) apply(e Entry, hook abi.Hook, o *stepOutcome, cached bool) {
	step := Step{Plugin: e.Plugin, Hook: string(hook), Duration: o.dur, Logs: o.logs, Cached: cached}
	fail := o.err
	if fail == nil && o.res.Status == abi.StatusError {
		fail = errors.New(o.res.Message)
	}
	j.hook++
	switch {
	case fail != nil && e.failOpen():
		step.Decision, step.Error = DecisionErrorOpen, fail.Error()
		j.pos, j.hook = j.pos+1, 0 // as if the plugin were absent
	case fail != nil:
		step.Decision, step.Error = DecisionErrorClosed, fail.Error()
		j.drop(fmt.Sprintf("%s failed (fail-closed): %s", stepName(e, hook), fail))
	case o.res.Status == abi.StatusDrop:
		step.Decision = DecisionDropped
		reason := "dropped by " + stepName(e, hook)
		if o.res.Message != "" {
			reason += ": " + o.res.Message
		}
		j.drop(reason)
	case o.res.Status == abi.StatusBody:
		step.Decision = DecisionTransformed
		j.res.Body, j.body = o.res.Body, -1
		if o.res.ContentType != "" {
			j.res.ContentType = o.res.ContentType
		}
	default:
		step.Decision = DecisionKept
	}
	j.res.Steps = append(j.res.Steps, step)
}

func (j *job) drop(reason string) {
	j.res.Keep, j.res.DropReason, j.done = false, reason, true
}

func stepName(e Entry, hook abi.Hook) string {
	if hook == "" {
		return e.Plugin
	}
	return e.Plugin + " " + string(hook)
}
