// Package pluginmgr keeps govgate's plugins and chains in step across the
// store (the source of truth every process shares), a plugin directory and
// the WebAssembly host of this process. It hot-reloads: an upload, a change
// of chain or a new file in the directory takes effect without a restart,
// in every process, and a replaced plugin's module and instances are closed.
package pluginmgr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/wasmhost"
)

// Store is what the manager needs from the store.
type Store interface {
	SavePlugin(ctx context.Context, p core.StoredPlugin) (core.StoredPlugin, error)
	Plugins(ctx context.Context, wasm bool) ([]core.StoredPlugin, error)
	SetPluginEnabled(ctx context.Context, name string, enabled bool) (core.StoredPlugin, error)
	DeletePlugin(ctx context.Context, name string) error
	Chain(ctx context.Context, webhookID int64) ([]core.ChainEntry, error)
	SetChain(ctx context.Context, webhookID int64, entries []core.ChainEntry) error
	Chains(ctx context.Context) (map[int64][]core.ChainEntry, error)
	PluginsVersion(ctx context.Context) (string, error)
}

// MaxPluginSize is the largest module accepted.
const MaxPluginSize = 32 << 20

// Manager manages plugins and chains.
type Manager struct {
	host *wasmhost.Host
	st   Store
	log  *slog.Logger
	dir  string

	mu       sync.Mutex        // serialises Sync
	loaded   map[string]string // name → sha256 loaded in the host
	version  string
	dirFiles map[string]string // path → sha256 last imported

	chains atomic.Pointer[map[int64][]wasmhost.Entry]

	schemaMu sync.Mutex
	schemas  map[string]configSchema // module sha256 → its compiled config schema

	batchMu sync.Mutex
	batches map[string]*batchEntry

	// prepare queues notifications for Run's preparers (Prepare).
	prepare chan prepared
	// onPrepared, when set (by tests, before Run), runs after each
	// notification a preparer has prepared.
	onPrepared func()
}

// prepared is a notification whose global chain's outcome Prepare asked
// for.
type prepared struct {
	n    core.Notification
	body []byte
}

// prepareQueue is how many notifications may wait to be prepared: a burst
// past it is not prepared ahead, and the first delivery of each of those
// notifications computes its outcome, as without Prepare.
const prepareQueue = 1024

type batchEntry struct {
	b       *wasmhost.Batch
	expires time.Time

	mu     sync.Mutex
	global *Outcome // the outcome for webhooks without a chain of their own
}

// New returns a manager; call Sync once before serving, then Run.
func New(host *wasmhost.Host, st Store, dir string, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.Default()
	}
	m := &Manager{host: host, st: st, dir: dir, log: log, loaded: map[string]string{}, dirFiles: map[string]string{}, batches: map[string]*batchEntry{}, schemas: map[string]configSchema{},
		prepare: make(chan prepared, prepareQueue)}
	empty := map[int64][]wasmhost.Entry{}
	m.chains.Store(&empty)
	return m
}

// Run re-syncs every interval, and prepares what Prepare queues on
// GOMAXPROCS goroutines of its own, until ctx ends; it returns when they
// have.
func (m *Manager) Run(ctx context.Context, every time.Duration) {
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.prepareLoop(ctx)
		}()
	}
	defer wg.Wait()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := m.Sync(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("plugin sync failed", "err", err)
			}
			m.expireBatches()
		}
	}
}

// Sync imports new or changed modules from the plugin directory into the
// store, then makes the host and the chains match the store.
func (m *Manager) Sync(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.importDir(ctx); err != nil {
		m.log.Warn("plugin directory", "dir", m.dir, "err", err)
	}
	version, err := m.st.PluginsVersion(ctx)
	if err != nil {
		return err
	}
	if version == m.version {
		return nil
	}
	stored, err := m.st.Plugins(ctx, false)
	if err != nil {
		return err
	}
	m.pruneSchemas(stored)
	want := map[string]core.StoredPlugin{}
	for _, p := range stored {
		if p.Enabled {
			want[p.Name] = p
		}
	}
	for name := range m.loaded {
		if _, ok := want[name]; !ok {
			if err := m.host.Unload(name); err != nil {
				m.log.Warn("plugin unload", "plugin", name, "err", err)
			}
			delete(m.loaded, name)
			m.log.Info("plugin unloaded", "plugin", name)
		}
	}
	var needWasm bool
	for name, p := range want {
		if m.loaded[name] != p.SHA256 {
			needWasm = true
		}
	}
	if needWasm {
		withWasm, err := m.st.Plugins(ctx, true)
		if err != nil {
			return err
		}
		var toLoad []core.StoredPlugin
		for _, p := range withWasm {
			if p.Enabled && m.loaded[p.Name] != p.SHA256 {
				toLoad = append(toLoad, p)
			}
		}
		errs := parallel(len(toLoad), func(i int) error {
			_, err := m.host.Load(ctx, toLoad[i].Wasm)
			return err
		})
		for i, p := range toLoad {
			if errs[i] != nil {
				m.log.Error("plugin failed to load; deliveries through it follow their failure policy", "plugin", p.Name, "err", errs[i])
				continue
			}
			m.loaded[p.Name] = p.SHA256
		}
	}
	chains, err := m.st.Chains(ctx)
	if err != nil {
		return err
	}
	conv := make(map[int64][]wasmhost.Entry, len(chains))
	used := map[string]bool{}
	for id, c := range chains {
		conv[id] = toEntries(c)
		for _, e := range c {
			used[e.Plugin] = true
		}
	}
	m.chains.Store(&conv)
	if err := m.sleepUnused(ctx, used); err != nil {
		m.log.Warn("plugins not put to sleep", "err", err)
	}
	compactMemory()
	m.version = version
	m.batchMu.Lock()
	clear(m.batches) // answers cached under the old plugins must not be reused
	m.batchMu.Unlock()
	return nil
}

// sleepUnused puts the loaded plugins no chain names to sleep, which frees
// their compiled code and instances (a Go plugin's are some 30 MB), and
// wakes the sleeping ones a chain names now, so that their first delivery
// does not wait for a compilation. Trying a plugin wakes it too.
func (m *Manager) sleepUnused(ctx context.Context, used map[string]bool) error {
	var sleep, wake []string
	for name := range m.loaded {
		switch asleep := m.host.Asleep(name); {
		case !used[name] && !asleep:
			sleep = append(sleep, name)
		case used[name] && asleep:
			wake = append(wake, name)
		}
	}
	if len(sleep) > 0 {
		stored, err := m.st.Plugins(ctx, true)
		if err != nil {
			return err
		}
		wasm := map[string][]byte{}
		for _, p := range stored {
			if m.loaded[p.Name] == p.SHA256 {
				wasm[p.Name] = p.Wasm
			}
		}
		for _, name := range sleep {
			if b := wasm[name]; b != nil {
				if err := m.host.Sleep(name, b); err != nil {
					return err
				}
			}
		}
	}
	errs := parallel(len(wake), func(i int) error { return m.host.Wake(ctx, wake[i]) })
	for i, err := range errs {
		if err != nil {
			m.log.Error("plugin failed to wake; deliveries through it follow their failure policy", "plugin", wake[i], "err", err)
		}
	}
	return nil
}

// compactMemory returns to the operating system what a sync that compiled
// or put plugins to sleep leaves behind: compiling a Go plugin makes some
// hundred MB of garbage, and what a sleeper held is garbage too. Without
// it the heap keeps that room, sized for the compilations, until the
// scavenger gives it back minutes later (rss_100k_pending_mb's first
// seconds: 280 MB, settling at 155 MB).
func compactMemory() { debug.FreeOSMemory() }

// importDir stores the modules of the plugin directory that are new or
// changed since the last look. They are checked side by side (compiling a
// Go plugin takes a core for a second or more) and stored in file order.
func (m *Manager) importDir(ctx context.Context) error {
	if m.dir == "" {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(m.dir, "*.wasm"))
	if err != nil {
		return err
	}
	type file struct {
		path, digest string
		wasm         []byte
		info         wasmhost.Info
	}
	var todo []file
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(wasm)
		digest := hex.EncodeToString(sum[:])
		if m.dirFiles[f] != digest {
			todo = append(todo, file{path: f, digest: digest, wasm: wasm})
		}
	}
	errs := parallel(len(todo), func(i int) (err error) {
		todo[i].info, err = m.check(ctx, todo[i].wasm)
		return err
	})
	for i, f := range todo {
		err := errs[i]
		if err == nil {
			_, err = m.store(ctx, f.info, f.wasm, "dir")
		}
		if err != nil {
			m.log.Error("plugin file refused", "file", f.path, "err", err)
		} else {
			m.log.Info("plugin imported from directory", "file", f.path)
		}
		m.dirFiles[f.path] = f.digest
	}
	return nil
}

// parallel runs f(0) … f(n-1) on up to GOMAXPROCS goroutines and returns
// their errors by index.
func parallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errs
}

// List returns every stored plugin.
func (m *Manager) List(ctx context.Context) ([]core.PluginView, error) {
	stored, err := m.st.Plugins(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]core.PluginView, 0, len(stored))
	for _, p := range stored {
		v := core.PluginView{StoredPlugin: p, Hooks: []string{}}
		if info, ok := m.host.Plugin(p.Name); ok && info.SHA256 == p.SHA256 {
			v.ABI, v.Hooks, v.ConfigSchema, v.Loaded = info.ABI, info.Hooks, info.ConfigSchema, true
		}
		out = append(out, v)
	}
	return out, nil
}

// Upload checks a module (ABI, exports, metadata, its own samples) and, if
// it passes, stores and activates it, replacing a plugin of the same name.
func (m *Manager) Upload(ctx context.Context, wasm []byte) (core.PluginView, error) {
	v, err := m.save(ctx, wasm, "upload")
	if err != nil {
		return core.PluginView{}, err
	}
	if err := m.Sync(ctx); err != nil {
		return core.PluginView{}, err
	}
	return v, nil
}

func (m *Manager) save(ctx context.Context, wasm []byte, source string) (core.PluginView, error) {
	info, err := m.check(ctx, wasm)
	if err != nil {
		return core.PluginView{}, err
	}
	return m.store(ctx, info, wasm, source)
}

// check checks a module as save does, without storing it.
func (m *Manager) check(ctx context.Context, wasm []byte) (wasmhost.Info, error) {
	if len(wasm) == 0 {
		return wasmhost.Info{}, core.Errorf(core.ECodeInvalidRequest, "the body must be a WebAssembly module")
	}
	if len(wasm) > MaxPluginSize {
		return wasmhost.Info{}, core.Errorf(core.ECodeBodyTooLarge, "plugin is larger than %d bytes", MaxPluginSize)
	}
	info, samples, err := m.host.Check(ctx, wasm)
	if err != nil {
		return wasmhost.Info{}, &core.Error{Code: core.ECodeInvalidRequest, Message: "plugin refused: " + err.Error(), Err: err}
	}
	for _, s := range samples {
		if !s.Passed {
			return wasmhost.Info{}, core.Errorf(core.ECodeInvalidRequest, "plugin refused: its sample %q failed: %s", s.Name, s.Error)
		}
	}
	// A schema that does not compile would make every chain entry naming
	// the plugin unsavable: refuse it now, while its author is at hand.
	if _, err := compileSchema(info.ConfigSchema); err != nil {
		return wasmhost.Info{}, &core.Error{Code: core.ECodeInvalidRequest, Message: "plugin refused: " + core.ErrorMessage(err), Err: err}
	}
	return info, nil
}

// store saves a checked module.
func (m *Manager) store(ctx context.Context, info wasmhost.Info, wasm []byte, source string) (core.PluginView, error) {
	sp, err := m.st.SavePlugin(ctx, core.StoredPlugin{Name: info.Name, Version: info.Version, SHA256: info.SHA256, Source: source, Wasm: wasm})
	if err != nil {
		return core.PluginView{}, err
	}
	return core.PluginView{StoredPlugin: sp, ABI: info.ABI, Hooks: info.Hooks, ConfigSchema: info.ConfigSchema, Loaded: true}, nil
}

// SetEnabled enables or disables a plugin everywhere.
func (m *Manager) SetEnabled(ctx context.Context, name string, enabled bool) (core.StoredPlugin, error) {
	p, err := m.st.SetPluginEnabled(ctx, name, enabled)
	if err != nil {
		return p, err
	}
	return p, m.Sync(ctx)
}

// Delete removes a plugin everywhere.
func (m *Manager) Delete(ctx context.Context, name string) error {
	if err := m.st.DeletePlugin(ctx, name); err != nil {
		return err
	}
	return m.Sync(ctx)
}

// Chain returns a stored chain (core.GlobalChain for the global one).
func (m *Manager) Chain(ctx context.Context, webhookID int64) ([]core.ChainEntry, error) {
	return m.st.Chain(ctx, webhookID)
}

// SetChain validates and stores a chain: every entry must name a stored
// plugin, with a JSON config that its plugin's config schema (if it declares
// one) accepts and a known failure policy. Nothing is stored otherwise.
func (m *Manager) SetChain(ctx context.Context, webhookID int64, entries []core.ChainEntry) error {
	plugins, err := m.storedByName(ctx)
	if err != nil {
		return err
	}
	for i, e := range entries {
		if _, ok := plugins[e.Plugin]; !ok {
			return core.Errorf(core.ECodeInvalidRequest, "chain entry %d: no plugin named %q is installed", i, e.Plugin)
		}
	}
	if err := wasmhost.ValidateChain(toEntries(entries)); err != nil {
		return core.Errorf(core.ECodeInvalidRequest, "chain: %s", err.Error())
	}
	if err := m.checkConfigs(ctx, entries, plugins); err != nil {
		return err
	}
	if err := m.st.SetChain(ctx, webhookID, entries); err != nil {
		return err
	}
	return m.Sync(ctx)
}

// Try runs a chain (the global chain when entries is nil) on a sample
// notification, outside any delivery. Explicit entries are checked as
// SetChain checks them, except that an entry naming no installed plugin is
// left to fail in the run, where its step shows why.
func (m *Manager) Try(ctx context.Context, entries []core.ChainEntry, n core.Notification) (core.TryResult, error) {
	explicit := entries != nil
	if !explicit {
		var err error
		if entries, err = m.st.Chain(ctx, core.GlobalChain); err != nil {
			return core.TryResult{}, err
		}
	}
	if err := wasmhost.ValidateChain(toEntries(entries)); err != nil {
		return core.TryResult{}, core.Errorf(core.ECodeInvalidRequest, "chain: %s", err.Error())
	}
	if explicit {
		plugins, err := m.storedByName(ctx)
		if err != nil {
			return core.TryResult{}, err
		}
		if err := m.checkConfigs(ctx, entries, plugins); err != nil {
			return core.TryResult{}, err
		}
	}
	body, err := json.Marshal(n)
	if err != nil {
		return core.TryResult{}, err
	}
	start := time.Now()
	res := m.host.RunChain(ctx, toEntries(entries), n, body)
	out := core.TryResult{Keep: res.Keep, Body: string(res.Body), ContentType: res.ContentType, DurationMs: ms(time.Since(start)), DropReason: res.DropReason, Chain: entries, Steps: steps(res.Steps)}
	if out.Body == "" && res.Keep {
		out.Body = string(body)
	}
	return out, nil
}

// storedByName returns the stored plugins, without their modules, by name.
func (m *Manager) storedByName(ctx context.Context) (map[string]core.StoredPlugin, error) {
	stored, err := m.st.Plugins(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make(map[string]core.StoredPlugin, len(stored))
	for _, p := range stored {
		out[p.Name] = p
	}
	return out, nil
}

func steps(in []wasmhost.Step) []core.StepView {
	out := make([]core.StepView, len(in))
	for i, s := range in {
		logs := s.Logs
		if logs == nil {
			logs = []string{}
		}
		out[i] = core.StepView{Plugin: s.Plugin, Hook: s.Hook, Decision: s.Decision, DurationMs: ms(s.Duration), Error: s.Error, Logs: logs, Cached: s.Cached}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Outcome is what the chains of one delivery decided.
type Outcome struct {
	Keep        bool
	Body        []byte // nil: the notification JSON unchanged
	ContentType string
	Trace       string // JSON of the steps; "" when no plugin ran
	DropReason  string

	steps []wasmhost.Step
}

// Apply runs the global chain and then the webhook's own chain on one
// delivery. Deliveries of one notification share a Batch for a while, so
// fanning out to many webhooks that share a chain costs one plugin call per
// distinct (plugin, body, config), not one per webhook.
func (m *Manager) Apply(ctx context.Context, n core.Notification, body []byte, webhookID int64) (Outcome, error) {
	chains := *m.chains.Load()
	own := chains[webhookID]
	chain := append(slices.Clip(chains[core.GlobalChain]), own...)
	if len(chain) == 0 {
		return Outcome{Keep: true}, nil
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		start := time.Now()
		out, err := m.apply(ctx, chain, len(own) > 0, n, body)
		traceSteps(span, start, out.steps)
		return out, err
	}
	return m.apply(ctx, chain, len(own) > 0, n, body)
}

// Prepare queues notification n for Run's preparers, which compute the
// global chain's outcome for Apply to find when a worker takes one of n's
// deliveries. It returns at once; without a global chain, or with
// prepareQueue notifications waiting (Run not running, say), it does
// nothing.
func (m *Manager) Prepare(n core.Notification, body []byte) {
	if len((*m.chains.Load())[core.GlobalChain]) == 0 {
		return
	}
	select {
	case m.prepare <- prepared{n, body}:
	default:
	}
}

// prepareLoop prepares queued notifications until ctx ends.
func (m *Manager) prepareLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-m.prepare:
			if global := (*m.chains.Load())[core.GlobalChain]; len(global) > 0 {
				// A failure is Apply's to report: it computes the outcome again.
				_, _ = m.apply(ctx, global, false, p.n, p.body)
			}
			if m.onPrepared != nil {
				m.onPrepared()
			}
		}
	}
}

// apply runs chain, which is the global chain alone unless own.
func (m *Manager) apply(ctx context.Context, chain []wasmhost.Entry, own bool, n core.Notification, body []byte) (Outcome, error) {
	e := m.batch(n, body)
	if !own {
		// Every webhook without a chain of its own gets the same outcome:
		// compute it, trace included, once per notification.
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.global == nil {
			out, err := outcome(e.b.Run(ctx, chain), body)
			if err != nil {
				return Outcome{}, err
			}
			e.global = &out
		}
		return *e.global, nil
	}
	return outcome(e.b.Run(ctx, chain), body)
}

func outcome(res wasmhost.Result, body []byte) (Outcome, error) {
	trace, err := json.Marshal(steps(res.Steps))
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Keep: res.Keep, ContentType: res.ContentType, Trace: string(trace), DropReason: res.DropReason, steps: res.Steps}
	if res.Keep && res.Body != nil && string(res.Body) != string(body) {
		out.Body = res.Body
	}
	return out, nil
}

// batchTTL is how long the answers for one notification are kept for its
// other deliveries.
const batchTTL = 2 * time.Minute

func (m *Manager) batch(n core.Notification, body []byte) *batchEntry {
	m.batchMu.Lock()
	defer m.batchMu.Unlock()
	if e, ok := m.batches[n.ID]; ok {
		return e
	}
	e := &batchEntry{b: m.host.NewBatch(n, body), expires: time.Now().Add(batchTTL)}
	m.batches[n.ID] = e
	return e
}

func (m *Manager) expireBatches() {
	now := time.Now()
	m.batchMu.Lock()
	defer m.batchMu.Unlock()
	for id, e := range m.batches {
		if now.After(e.expires) {
			delete(m.batches, id)
		}
	}
}

func toEntries(in []core.ChainEntry) []wasmhost.Entry {
	out := make([]wasmhost.Entry, len(in))
	for i, e := range in {
		out[i] = wasmhost.Entry{Plugin: e.Plugin, Config: e.Config, FailurePolicy: e.FailurePolicy}
	}
	return out
}

// traceSteps records a span per plugin step under parent (the delivery
// attempt's span): plugin, hook, decision and duration. The steps ran one
// after another from start; a cached step shows the duration of the call
// whose answer it reused.
func traceSteps(parent trace.Span, start time.Time, steps []wasmhost.Step) {
	ctx := trace.ContextWithSpan(context.Background(), parent)
	tracer := parent.TracerProvider().Tracer("github.com/govgate/govgate/core/internal/pluginmgr")
	at := start
	for _, st := range steps {
		_, span := tracer.Start(ctx, "plugin "+st.Plugin, trace.WithTimestamp(at), trace.WithAttributes(
			attribute.String("govgate.plugin.name", st.Plugin),
			attribute.String("govgate.plugin.hook", st.Hook),
			attribute.String("govgate.plugin.decision", st.Decision),
			attribute.Float64("govgate.plugin.duration_ms", ms(st.Duration)),
			attribute.Bool("govgate.plugin.cached", st.Cached),
		))
		if st.Error != "" {
			span.SetStatus(codes.Error, st.Error)
		}
		if !st.Cached {
			at = at.Add(st.Duration)
		}
		span.End(trace.WithTimestamp(at))
	}
}
