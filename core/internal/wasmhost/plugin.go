package wasmhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/govgate/govgate/sdk/abi"
)

// plugin is one loaded (or loading) version of a plugin: its compiled
// module and a pool of instances of it. A replaced plugin is retired: it
// takes no new users and releases everything once its last user is done.
type plugin struct {
	h        *Host
	compiled wazero.CompiledModule
	info     Info
	meta     abi.Meta

	slots chan struct{} // one token per live instance, PoolSize in all

	// wasm is set on a sleeping plugin (dormant.go) instead of compiled:
	// the binary it is compiled from again when next called, by the
	// caller that holds wakeMu, which then sets woken.
	wasm   []byte
	wakeMu sync.Mutex
	woken  bool

	// checking marks a plugin being checked in the interpreter (Host.rtCheck):
	// its calls get the start's deadline, as the interpreter runs Go code
	// some twenty times slower than machine code and samples are checked
	// for what they answer, not how fast.
	checking bool

	mu      sync.Mutex
	idle    []*instance
	refs    int
	retired bool
	freed   bool
}

func newPlugin(h *Host, compiled wazero.CompiledModule) *plugin {
	return &plugin{h: h, compiled: compiled, slots: make(chan struct{}, h.cfg.PoolSize), refs: 1}
}

func (p *plugin) setMeta(m abi.Meta) {
	p.meta = m
	p.info.Name, p.info.Version = m.Name, m.Version
	p.info.ConfigSchema = m.ConfigSchema
	p.info.Samples = len(m.Samples)
	p.info.Hooks = nil
	for _, h := range m.Hooks {
		p.info.Hooks = append(p.info.Hooks, string(h))
	}
}

func (p *plugin) has(h abi.Hook) bool { return p.meta.Has(h) }

func (p *plugin) hold() {
	p.mu.Lock()
	p.refs++
	p.mu.Unlock()
}

// release drops a reference taken by Host.acquire.
func (p *plugin) release() {
	p.mu.Lock()
	p.refs--
	last := p.retired && p.refs == 0
	p.mu.Unlock()
	if last {
		p.free()
	}
}

// retire drops the reference the host held since the plugin was created.
func (p *plugin) retire() {
	p.mu.Lock()
	if p.retired {
		p.mu.Unlock()
		return
	}
	p.retired = true
	p.refs--
	last := p.refs == 0
	p.mu.Unlock()
	if last {
		p.free()
	}
}

func (p *plugin) free() {
	p.mu.Lock()
	if p.freed {
		p.mu.Unlock()
		return
	}
	p.freed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, inst := range idle {
		inst.close()
	}
	if p.compiled != nil {
		_ = p.compiled.Close(context.Background())
	}
}

// get takes an instance from the pool, starting one when none is idle and
// the pool is not full; otherwise it waits for one, as long as ctx allows.
func (p *plugin) get(ctx context.Context) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a plugin instance: %w", ctx.Err())
	}
	return p.take(ctx)
}

// tryGet is get without the wait: nil when every instance the pool may
// hold is busy.
func (p *plugin) tryGet(ctx context.Context) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	default:
		return nil, nil
	}
	return p.take(ctx)
}

// take returns an idle instance or starts one, for a caller that holds a
// slot of the pool.
func (p *plugin) take(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		inst := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return inst, nil
	}
	p.mu.Unlock()
	inst, err := p.instantiate(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return inst, nil
}

// warm fills the pool: it starts every instance the pool may hold that is
// not busy, and runs the plugin's samples on each, so that an instance's
// first calls (a Go runtime's first allocations, a config's decoding) are
// behind it before the first delivery. The pool's instances are otherwise
// started on demand, so without this the first deliveries after a chain
// names the plugin pay for it. Its memory starts at the reserve already
// (initialize).
func (p *plugin) warm(ctx context.Context) error {
	var held []*instance
	for {
		inst, err := p.tryGet(ctx)
		if err != nil {
			for _, inst := range held {
				p.put(inst, true)
			}
			return err
		}
		if inst == nil {
			break
		}
		held = append(held, inst)
	}
	for _, inst := range held {
		// The instance just put back is the last idle one, which the
		// samples' calls take (and put back) in turn: the pool is LIFO.
		p.put(inst, true)
		p.runSamples(ctx)
	}
	return nil
}

// put returns an instance to the pool, or closes it when it is not healthy
// (it trapped, timed out or answered out of protocol: a Go runtime that
// panicked or was stopped mid-way must not run again) or when the plugin is
// retired.
func (p *plugin) put(inst *instance, healthy bool) {
	p.mu.Lock()
	keep := healthy && !p.retired
	if keep {
		p.idle = append(p.idle, inst)
	}
	p.mu.Unlock()
	if !keep {
		if !healthy {
			p.h.stats.discards.Add(1)
		}
		inst.close()
	}
	<-p.slots
}

// instance is one instantiated module with the state of the call it runs.
type instance struct {
	p       *plugin
	mod     api.Module
	mem     api.Memory
	alloc   api.Function
	hooks   map[abi.Hook]api.Function
	meta    api.Function
	cur     *callState // set while the instance runs code
	stdout  lineWriter
	stderr  lineWriter
	stack   [2]uint64
	scratch []byte
}

// callState collects what one call (or one instantiation) produces besides
// its answer.
type callState struct {
	ctx     context.Context
	now     time.Time
	logs    []string
	dropped int
	lines   []LogLine
}

type instanceKey struct{}

func (p *plugin) instantiate(ctx context.Context) (*instance, error) {
	h := p.h
	if p.compiled == nil {
		return nil, errors.New("start plugin instance: the plugin is asleep")
	}
	inst := &instance{p: p, hooks: map[abi.Hook]api.Function{}}
	inst.stdout = lineWriter{inst: inst, level: abi.LevelInfo}
	inst.stderr = lineWriter{inst: inst, level: abi.LevelWarn}
	cfg := h.base.
		WithStdout(&inst.stdout).
		WithStderr(&inst.stderr).
		WithWalltime(inst.walltime, sys.ClockResolution(time.Microsecond)).
		WithNanosleep(inst.nanosleep)
	ictx, cancel := context.WithTimeout(ctx, h.cfg.InitTimeout)
	defer cancel()
	cs := &callState{ctx: ictx, now: time.Now()}
	inst.cur = cs
	rt := h.rt
	if p.checking {
		rt = h.rtCheck
	}
	var mod api.Module
	err := h.useRuntime(func() (err error) {
		vctx := context.WithValue(ictx, instanceKey{}, inst)
		if mod, err = rt.InstantiateModule(vctx, p.compiled, cfg); err != nil {
			return err
		}
		return p.initialize(vctx, mod)
	})
	inst.end(cs)
	if err != nil {
		if mod != nil {
			_ = mod.Close(context.Background())
		}
		return nil, fmt.Errorf("start plugin instance: %w", describe(ctx, err, h.cfg.InitTimeout, cs.logs))
	}
	h.stats.instantiations.Add(1)
	h.stats.live.Add(1)
	inst.mod = mod
	inst.mem = mod.ExportedMemory(abi.ExportMemory)
	inst.alloc = mod.ExportedFunction(abi.ExportAlloc)
	inst.meta = mod.ExportedFunction(abi.ExportMeta)
	for _, hook := range []abi.Hook{abi.HookFilter, abi.HookTransform} {
		if f := mod.ExportedFunction(hook.Export()); f != nil {
			inst.hooks[hook] = f
		}
	}
	if inst.mem == nil || inst.alloc == nil || inst.meta == nil {
		inst.close()
		return nil, errors.New("start plugin instance: missing exports")
	}
	return inst, nil
}

// initialize starts a reactor's runtime (its _initialize export, which a
// module without one does not need) in a memory grown to the host's reserve
// first: a Go runtime takes the memory it finds at its start as its own and
// grows it only beyond that. Each growth makes wazero copy the memory into a
// larger one, and a Go plugin's heap otherwise grows in half-megabyte steps
// over its first thousand calls, which the deliveries of a freshly woken
// chain pay for (README, Performance). The instance that checks an upload
// is short-lived and keeps the module's own size.
func (p *plugin) initialize(ctx context.Context, mod api.Module) error {
	start := mod.ExportedFunction(abi.ExportInitialize)
	if start == nil {
		return nil
	}
	if mem := mod.ExportedMemory(abi.ExportMemory); mem != nil && !p.checking {
		if have, want := mem.Size()/wasmPageSize, p.h.cfg.MemoryReserveMB*(1<<20/wasmPageSize); have < want {
			// Past the memory's own maximum Grow fails, and the runtime
			// starts in what the module declared.
			mem.Grow(want - have)
		}
	}
	_, err := start.Call(ctx)
	return err
}

const wasmPageSize = 1 << 16

func (inst *instance) close() {
	if inst.mod != nil {
		_ = inst.mod.Close(context.Background())
		inst.mod = nil
		inst.p.h.stats.live.Add(-1)
	}
}

// walltime is the plugin's wall clock: the time its current call started.
// A plugin cannot observe time passing within a call, which keeps its
// answers a function of its input.
func (inst *instance) walltime() (int64, int32) {
	t := time.Now()
	if inst.cur != nil {
		t = inst.cur.now
	}
	return t.Unix(), int32(t.Nanosecond())
}

// nanosleep serves a plugin's sleep (WASI poll_oneoff) but never past the
// end of the current call, so that a sleeping plugin is stopped at its
// deadline like a looping one.
func (inst *instance) nanosleep(ns int64) {
	var done <-chan struct{}
	if inst.cur != nil {
		done = inst.cur.ctx.Done()
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// end finishes a call's log capture.
func (inst *instance) end(cs *callState) {
	inst.stdout.flush()
	inst.stderr.flush()
	if cs.dropped > 0 {
		cs.logs = append(cs.logs, fmt.Sprintf("[warn] (%d more lines not kept)", cs.dropped))
	}
	inst.cur = nil
	if name := inst.p.info.Name; name != "" && len(cs.lines) > 0 {
		inst.p.h.record(name, cs.lines)
	}
}

// hostLog implements govgate.log(level, ptr, len).
func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	if inst == nil || inst.cur == nil {
		return
	}
	level, ptr, size := abi.Level(api.DecodeU32(stack[0])), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	size = min(size, maxLogLine)
	b, ok := mod.Memory().Read(ptr, size)
	if !ok {
		inst.cur.add(abi.LevelError, "govgate.log: message out of memory bounds")
		return
	}
	inst.cur.add(level, string(b))
}

// call runs one hook on one input. The input may carry several configs; the
// result has one entry per config.
func (p *plugin) call(ctx context.Context, hook abi.Hook, in *abi.Input) (res []abi.Result, logs []string, err error) {
	h := p.h
	if len(in.Configs) == 0 {
		return nil, nil, nil
	}
	inst, err := p.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	fn := inst.hooks[hook]
	if fn == nil {
		p.put(inst, true)
		return nil, nil, fmt.Errorf("plugin has no %s hook", hook)
	}
	h.stats.calls.Add(1)
	timeout := h.cfg.CallTimeout
	if p.checking {
		timeout = h.cfg.InitTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cs := &callState{ctx: cctx, now: time.Now()}
	inst.cur = cs
	healthy := false
	defer func() {
		inst.end(cs)
		logs = cs.logs
		p.put(inst, healthy)
	}()
	vctx := context.WithValue(cctx, instanceKey{}, inst)

	input := abi.AppendInput(inst.scratch[:0], in)
	if cap(input) <= 64<<10 {
		inst.scratch = input[:0]
	}
	inst.stack[0] = uint64(len(input))
	if err := inst.alloc.CallWithStack(vctx, inst.stack[:]); err != nil {
		err = describe(ctx, err, timeout, cs.logs)
		if errors.Is(err, ErrTimeout) {
			h.stats.timeouts.Add(1)
		}
		return nil, nil, err
	}
	ptr := api.DecodeU32(inst.stack[0])
	if !inst.mem.Write(ptr, input) {
		return nil, nil, fmt.Errorf("malformed answer: %s returned %d, outside its memory", abi.ExportAlloc, ptr)
	}
	inst.stack[0], inst.stack[1] = uint64(ptr), uint64(len(input))
	if err := fn.CallWithStack(vctx, inst.stack[:]); err != nil {
		err = describe(ctx, err, timeout, cs.logs)
		if errors.Is(err, ErrTimeout) {
			h.stats.timeouts.Add(1)
		}
		return nil, nil, err
	}
	optr, olen := abi.Unpack(inst.stack[0])
	limit := uint64(len(in.Configs)) * uint64(h.cfg.MaxOutputBytes+1024)
	if uint64(olen) > limit {
		return nil, nil, fmt.Errorf("output of %d bytes for %d configs is over the limit of %d bytes per config", olen, len(in.Configs), h.cfg.MaxOutputBytes)
	}
	raw, ok := inst.mem.Read(optr, olen)
	if !ok {
		return nil, nil, fmt.Errorf("malformed answer: output [%d, +%d) is outside the plugin's memory", optr, olen)
	}
	res, err = abi.DecodeResults(append([]byte(nil), raw...), len(in.Configs))
	if err != nil {
		return nil, nil, fmt.Errorf("malformed answer: %w", err)
	}
	for i, r := range res {
		if err := checkResult(hook, r, h.cfg.MaxOutputBytes); err != nil {
			return nil, nil, fmt.Errorf("malformed answer for config %d: %w", i, err)
		}
	}
	healthy = true
	return res, nil, nil
}

func checkResult(hook abi.Hook, r abi.Result, maxBody int) error {
	switch {
	case r.Status == abi.StatusError:
	case hook == abi.HookFilter && r.Status != abi.StatusKeep && r.Status != abi.StatusDrop:
		return fmt.Errorf("a filter answered %s", r.Status)
	case hook == abi.HookTransform && r.Status != abi.StatusBody && r.Status != abi.StatusUnchanged:
		return fmt.Errorf("a transform answered %s", r.Status)
	case len(r.Body) > maxBody:
		return fmt.Errorf("body of %d bytes is over the limit of %d", len(r.Body), maxBody)
	case len(r.ContentType) > 256:
		return fmt.Errorf("content type of %d bytes is over the limit of 256", len(r.ContentType))
	}
	return nil
}

// describe turns a wazero error into one that says what the plugin did.
// A Go plugin that dies (a panic in a goroutine, out of memory, deadlock)
// traps on unreachable after writing why to stderr: the reason is taken from
// there. wazero's wasm stack trace is left out: it is long and says little
// to a plugin's user.
func describe(parent context.Context, err error, timeout time.Duration, logs []string) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("call abandoned: %w", perr)
	}
	var reason string
	for _, l := range logs {
		if i := strings.Index(l, "] "); i >= 0 && (strings.HasPrefix(l[i+2:], "panic: ") || strings.HasPrefix(l[i+2:], "fatal error: ")) {
			reason = ": " + l[i+2:]
			break
		}
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return fmt.Errorf("still running after %s: %w", timeout, ErrTimeout)
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("call canceled: %w", err)
		}
		return fmt.Errorf("plugin exited with code %d%s", exit.ExitCode(), reason)
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return fmt.Errorf("plugin crashed%s (%s)", reason, msg)
}

// readMeta reads a plugin's metadata from a fresh instance.
func (p *plugin) readMeta(ctx context.Context) (abi.Meta, error) {
	var m abi.Meta
	inst, err := p.get(ctx)
	if err != nil {
		return m, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.h.cfg.InitTimeout)
	defer cancel()
	cs := &callState{ctx: cctx, now: time.Now()}
	inst.cur = cs
	healthy := false
	defer func() {
		inst.end(cs)
		p.put(inst, healthy)
	}()
	if err := inst.meta.CallWithStack(context.WithValue(cctx, instanceKey{}, inst), inst.stack[:]); err != nil {
		return m, describe(ctx, err, p.h.cfg.InitTimeout, cs.logs)
	}
	ptr, size := abi.Unpack(inst.stack[0])
	if size > 4<<20 {
		return m, fmt.Errorf("metadata of %d bytes is over the limit of 4 MiB", size)
	}
	raw, ok := inst.mem.Read(ptr, size)
	if !ok {
		return m, fmt.Errorf("metadata [%d, +%d) is outside the plugin's memory", ptr, size)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("decode metadata: %w", err)
	}
	if err := m.Validate(); err != nil {
		return m, err
	}
	healthy = true
	return m, nil
}

// runSamples runs the plugin's own samples: each through its hooks as a
// one-entry chain would.
func (p *plugin) runSamples(ctx context.Context) []SampleResult {
	out := make([]SampleResult, 0, len(p.meta.Samples))
	for _, s := range p.meta.Samples {
		r := SampleResult{Name: s.Name}
		start := time.Now()
		body, err := s.InputBody()
		if err == nil {
			var o outcome
			o, err = p.apply(ctx, s.Input, body, s.Config)
			r.Keep, r.Body, r.ContentType, r.Logs = o.keep, o.body, o.contentType, o.logs
		}
		r.Duration = time.Since(start)
		if err == nil {
			err = s.Check(r.Keep, r.Body, r.ContentType)
		}
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Passed = true
		}
		out = append(out, r)
	}
	return out
}

type outcome struct {
	keep        bool
	body        []byte
	contentType string
	logs        []string
}

// apply runs the plugin's hooks on one delivery as a chain entry does: the
// filter, then, if it kept the delivery, the transform. Any failure is an
// error.
func (p *plugin) apply(ctx context.Context, n abi.Notification, body []byte, cfg json.RawMessage) (outcome, error) {
	o := outcome{keep: true, body: body, contentType: abi.DefaultContentType}
	for _, hook := range []abi.Hook{abi.HookFilter, abi.HookTransform} {
		if !p.has(hook) {
			continue
		}
		in := abi.Input{Notification: n, Body: o.body, ContentType: o.contentType, Configs: []json.RawMessage{cfg}}
		res, logs, err := p.call(ctx, hook, &in)
		o.logs = append(o.logs, logs...)
		if err != nil {
			return o, fmt.Errorf("%s: %w", hook, err)
		}
		switch r := res[0]; r.Status {
		case abi.StatusError:
			return o, fmt.Errorf("%s: plugin error: %s", hook, r.Message)
		case abi.StatusDrop:
			o.keep = false
			return o, nil
		case abi.StatusBody:
			o.body = r.Body
			if r.ContentType != "" {
				o.contentType = r.ContentType
			}
		}
	}
	return o, nil
}
