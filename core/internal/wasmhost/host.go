// Package wasmhost runs govgate's plugins: WebAssembly modules that filter
// or transform deliveries after fan-out and before the dispatcher signs
// them, so the signature covers exactly the bytes sent. It is the wazero
// adapter of the core.
//
// A Host compiles each plugin once (with an on-disk compilation cache),
// keeps a pool of initialized instances per plugin and throws an instance
// away after any trap, timeout or malformed answer. Plugins run sandboxed:
// no filesystem, no network, no environment, a wall clock frozen at the start
// of each call, a memory cap per instance, a deadline per call, a cap on
// output and rate-limited logs. The ABI is described in sdk/ABI.md and
// encoded by sdk/abi.
//
// The dispatcher runs chains with RunChain, or with a Batch when it fans one
// notification out to many webhooks: a Batch costs one plugin call per
// distinct (plugin, input body) and step, carrying all the distinct configs
// of that step, not one call per webhook.
package wasmhost

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/govgate/govgate/sdk/abi"
)

// Config configures a Host. The zero value of each field means its default.
type Config struct {
	// CacheDir keeps compiled plugins across restarts; "" keeps them in
	// memory only.
	CacheDir string
	// MemoryLimitMB caps the linear memory of each instance (default 64). A
	// Go plugin needs about 8 MB.
	MemoryLimitMB uint32
	// MemoryReserveMB is the memory a reactor instance (a module that
	// exports _initialize, as Go plugins do) starts its runtime with
	// (default 8, at most MemoryLimitMB). A Go runtime takes the memory it
	// finds at its start as its own and grows it only beyond that; growing a
	// memory makes wazero copy it into a larger one, and a Go plugin's heap
	// grows in half-megabyte steps from 3 MB to about 8 over its first
	// thousand calls.
	MemoryReserveMB uint32
	// CallTimeout bounds one plugin call (default 250ms). A plugin still
	// running then is stopped and its instance discarded.
	CallTimeout time.Duration
	// InitTimeout bounds the start of one instance (default 5s); a Go
	// plugin takes 6–13 ms.
	InitTimeout time.Duration
	// MaxOutputBytes caps the body a transform may return for one config
	// (default 1 MiB).
	MaxOutputBytes int
	// PoolSize is the most instances of one plugin alive at once, and so
	// the most concurrent calls into it (default GOMAXPROCS). Idle instances
	// are kept warm.
	PoolSize int
	// Logger receives the host's events and the plugins' log lines (rate
	// limited); default slog.Default().
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultMemoryLimitMB   = 64
	DefaultMemoryReserveMB = 8
	DefaultCallTimeout     = 250 * time.Millisecond
	DefaultInitTimeout     = 5 * time.Second
	DefaultMaxOutputBytes  = 1 << 20
	// MaxModuleBytes bounds the size of a plugin's wasm binary.
	MaxModuleBytes = 64 << 20
)

func (c *Config) setDefaults() {
	if c.MemoryLimitMB == 0 {
		c.MemoryLimitMB = DefaultMemoryLimitMB
	}
	if c.MemoryReserveMB == 0 {
		c.MemoryReserveMB = min(DefaultMemoryReserveMB, c.MemoryLimitMB)
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.InitTimeout == 0 {
		c.InitTimeout = DefaultInitTimeout
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.PoolSize == 0 {
		c.PoolSize = runtime.GOMAXPROCS(0)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports the first field of c that New cannot use.
func (c *Config) Validate() error {
	switch {
	case c.MemoryLimitMB > 4096:
		return fmt.Errorf("wasmhost: MemoryLimitMB is %d, at most 4096 (the wasm32 address space)", c.MemoryLimitMB)
	case c.MemoryReserveMB > cmp.Or(c.MemoryLimitMB, DefaultMemoryLimitMB):
		return fmt.Errorf("wasmhost: MemoryReserveMB is %d, more than the memory limit of %d MB", c.MemoryReserveMB, cmp.Or(c.MemoryLimitMB, DefaultMemoryLimitMB))
	case c.CallTimeout < 0:
		return fmt.Errorf("wasmhost: CallTimeout is %s, want a positive duration", c.CallTimeout)
	case c.InitTimeout < 0:
		return fmt.Errorf("wasmhost: InitTimeout is %s, want a positive duration", c.InitTimeout)
	case c.MaxOutputBytes < 0 || c.MaxOutputBytes > abi.MaxOutputBytes:
		return fmt.Errorf("wasmhost: MaxOutputBytes is %d, want 1 to %d", c.MaxOutputBytes, abi.MaxOutputBytes)
	case c.PoolSize < 0:
		return fmt.Errorf("wasmhost: PoolSize is %d, want a positive number", c.PoolSize)
	}
	return nil
}

// Errors callers may match with errors.Is.
var (
	// ErrNotFound: no plugin of that name is loaded.
	ErrNotFound = errors.New("plugin not loaded")
	// ErrClosed: the host is closed.
	ErrClosed = errors.New("plugin host closed")
	// ErrInvalidPlugin: the module is not a usable govgate plugin (bad
	// wasm, wrong ABI, missing exports, bad metadata, failing samples).
	ErrInvalidPlugin = errors.New("invalid plugin")
	// ErrTimeout: a call ran past its deadline.
	ErrTimeout = errors.New("plugin call timed out")
)

// Host loads plugins and runs chains of them. It is safe for concurrent use.
type Host struct {
	cfg   Config
	log   *slog.Logger
	rt    wazero.Runtime
	cache wazero.CompilationCache
	base  wazero.ModuleConfig
	// rtCheck is wazero's interpreter, in which a plugin is checked (its
	// exports, metadata and samples) before it is loaded. Translating a Go
	// plugin for it takes a tenth of what compiling it to machine code
	// does, and a loaded plugin is compiled only when a delivery, or a
	// chain that names it, first needs it (dormant.go).
	rtCheck wazero.Runtime
	// rtMu keeps both runtimes open while a module compiles or starts in
	// one: wazero must not close a runtime under either (useRuntime).
	rtMu     sync.RWMutex
	rtClosed bool

	mu      sync.RWMutex
	plugins map[string]*plugin
	closed  bool

	// checked keeps the plugins Check prepared, by module SHA-256, for a
	// Load of the same module soon after: a plugin manager checks a module
	// before it stores it and loads it from the store next, and without a
	// cache directory closing the first compilation would throw it away.
	checkedMu sync.Mutex
	checked   map[string]checkedPlugin

	logMu sync.Mutex
	logs  map[string]*logRing

	stats struct {
		calls, instantiations, discards, timeouts, compilations atomic.Uint64
		live                                                    atomic.Int64
	}
}

// New starts a Host: a wazero runtime with WASI (no filesystem, network or
// environment) and the govgate host functions of ABI v1.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(cfg.CacheDir); err != nil {
			return nil, fmt.Errorf("open compilation cache: %w", err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	// Not WithCloseOnContextDone, which makes every turn of a loop exit to
	// Go and a Go plugin's call six times slower: plugins are instrumented
	// instead to stop at their deadline and to let the garbage collector
	// in (instrument.go).
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithMemoryLimitPages(cfg.MemoryLimitMB * 16) // 64 KiB pages
	h := &Host{
		cfg:     cfg,
		log:     cfg.Logger,
		rt:      wazero.NewRuntimeWithConfig(ctx, rc),
		rtCheck: wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(cfg.MemoryLimitMB*16)),
		cache:   cache,
		plugins: map[string]*plugin{},
		logs:    map[string]*logRing{},
	}
	h.base = wazero.NewModuleConfig().
		WithName("").
		WithArgs("plugin").
		WithStartFunctions(). // instantiate runs _initialize itself
		WithSysNanotime().
		WithRandSource(rand.Reader)
	for _, rt := range []wazero.Runtime{h.rt, h.rtCheck} {
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			_ = h.closeRuntime(ctx)
			return nil, fmt.Errorf("instantiate wasi: %w", err)
		}
		_, err := rt.NewHostModuleBuilder(abi.HostModule).
			NewFunctionBuilder().WithGoFunction(api.GoFunc(checkDeadline), nil, nil).Export(abi.ImportMarker).
			NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostLog),
			[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).Export(abi.ImportLog).
			Instantiate(ctx)
		if err != nil {
			_ = h.closeRuntime(ctx)
			return nil, fmt.Errorf("instantiate host module: %w", err)
		}
	}
	return h, nil
}

// useRuntime runs f, which compiles or starts a module, unless the
// runtimes are closed; closeRuntime waits for it.
func (h *Host) useRuntime(f func() error) error {
	h.rtMu.RLock()
	defer h.rtMu.RUnlock()
	if h.rtClosed {
		return ErrClosed
	}
	return f()
}

func (h *Host) closeRuntime(ctx context.Context) error {
	h.rtMu.Lock()
	defer h.rtMu.Unlock()
	h.rtClosed = true
	err := h.rt.Close(ctx)
	if cerr := h.rtCheck.Close(ctx); err == nil {
		err = cerr
	}
	if cerr := h.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// Close unloads every plugin and releases the runtime. Calls still running
// fail.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	old := h.plugins
	h.plugins = map[string]*plugin{}
	h.mu.Unlock()
	for _, p := range old {
		p.retire()
	}
	h.dropChecked()
	if err := h.closeRuntime(ctx); err != nil {
		return fmt.Errorf("close plugin host: %w", err)
	}
	return nil
}

// Info describes a loaded plugin.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	ABI     int    `json:"abi"`
	// Size is the length of the wasm binary in bytes.
	Size         int             `json:"size"`
	Hooks        []string        `json:"hooks"`
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
	// SHA256 is the hex digest of the wasm binary.
	SHA256   string    `json:"sha256"`
	Samples  int       `json:"samples"`
	LoadedAt time.Time `json:"loadedAt"`
}

// SampleResult is the outcome of one of a plugin's own samples.
type SampleResult struct {
	Name        string        `json:"name"`
	Passed      bool          `json:"passed"`
	Error       string        `json:"error,omitempty"`
	Keep        bool          `json:"keep"`
	Body        []byte        `json:"body,omitempty"`
	ContentType string        `json:"contentType,omitempty"`
	Duration    time.Duration `json:"duration"`
	Logs        []string      `json:"logs,omitempty"`
}

// Load checks a plugin in the interpreter (its ABI and exports, its
// metadata, its samples) and, when all pass, activates it under its name,
// asleep: it is compiled to machine code when first called or woken. A plugin
// already loaded under that name is replaced atomically: chains that run
// after Load returns use the new one, calls already running finish on the
// old one, whose instances and compiled code are then released.
func (h *Host) Load(ctx context.Context, wasm []byte) (Info, error) {
	p, samples, ok := h.takeChecked(wasm)
	if !ok {
		var err error
		if p, samples, err = h.prepare(ctx, wasm); err != nil {
			return Info{}, err
		}
	}
	for _, s := range samples {
		if !s.Passed {
			p.retire()
			return p.info, fmt.Errorf("load plugin %s: %s: %w", p.info.Name, s.Error, ErrInvalidPlugin)
		}
	}
	if err := h.activate(p); err != nil {
		return Info{}, err
	}
	return p.info, nil
}

// activate puts a prepared plugin in service under its name and retires the
// one it replaces.
func (h *Host) activate(p *plugin) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		p.retire()
		return ErrClosed
	}
	old := h.plugins[p.info.Name]
	h.plugins[p.info.Name] = p
	h.mu.Unlock()
	if old != nil {
		old.retire()
	}
	h.log.Info("plugin loaded", "plugin", p.info.Name, "version", p.info.Version, "sha256", p.info.SHA256, "replaced", old != nil)
	return nil
}

// Check does what Load does short of activating the plugin, and reports
// every sample, passed or not. It is for dry runs: an upload form, the CLI.
func (h *Host) Check(ctx context.Context, wasm []byte) (Info, []SampleResult, error) {
	p, samples, err := h.prepare(ctx, wasm)
	if err != nil {
		return Info{}, nil, err
	}
	h.keepChecked(p, samples)
	return p.info, samples, nil
}

// checkedPlugin is a plugin Check prepared and nothing activated yet.
type checkedPlugin struct {
	p       *plugin
	samples []SampleResult
	at      time.Time
}

// How many checked plugins are kept, and for how long.
const (
	maxChecked = 8
	checkedTTL = time.Minute
)

// keepChecked keeps a plugin Check prepared for takeChecked, and retires
// those kept too long or too many.
func (h *Host) keepChecked(p *plugin, samples []SampleResult) {
	now := time.Now()
	var drop []*plugin
	h.mu.RLock()
	closed := h.closed // a plugin kept past Close goes with the runtime
	h.mu.RUnlock()
	h.checkedMu.Lock()
	if closed {
		drop = append(drop, p)
	} else {
		if h.checked == nil {
			h.checked = map[string]checkedPlugin{}
		}
		if old, ok := h.checked[p.info.SHA256]; ok {
			drop = append(drop, old.p)
		}
		h.checked[p.info.SHA256] = checkedPlugin{p: p, samples: samples, at: now}
		for len(h.checked) > maxChecked || h.expireOneChecked(now, &drop) {
			oldest := ""
			for k, c := range h.checked {
				if oldest == "" || c.at.Before(h.checked[oldest].at) {
					oldest = k
				}
			}
			drop = append(drop, h.checked[oldest].p)
			delete(h.checked, oldest)
		}
	}
	h.checkedMu.Unlock()
	for _, p := range drop {
		p.retire()
	}
}

// expireOneChecked removes one kept plugin older than checkedTTL, if any,
// adding it to drop.
func (h *Host) expireOneChecked(now time.Time, drop *[]*plugin) bool {
	for k, c := range h.checked {
		if now.Sub(c.at) > checkedTTL {
			*drop = append(*drop, c.p)
			delete(h.checked, k)
			return true
		}
	}
	return false
}

// takeChecked hands over the plugin Check prepared from wasm, if it is
// still kept.
func (h *Host) takeChecked(wasm []byte) (*plugin, []SampleResult, bool) {
	sum := sha256.Sum256(wasm)
	key := hex.EncodeToString(sum[:])
	h.checkedMu.Lock()
	c, ok := h.checked[key]
	delete(h.checked, key)
	h.checkedMu.Unlock()
	if !ok {
		return nil, nil, false
	}
	if time.Since(c.at) > checkedTTL {
		c.p.retire()
		return nil, nil, false
	}
	return c.p, c.samples, true
}

// dropChecked retires every kept plugin.
func (h *Host) dropChecked() {
	h.checkedMu.Lock()
	kept := h.checked
	h.checked = nil
	h.checkedMu.Unlock()
	for _, c := range kept {
		c.p.retire()
	}
}

// Unload removes a plugin. Chains that name it then fail at that entry
// according to its failure policy.
func (h *Host) Unload(name string) error {
	h.mu.Lock()
	p := h.plugins[name]
	delete(h.plugins, name)
	h.mu.Unlock()
	h.logMu.Lock()
	delete(h.logs, name)
	h.logMu.Unlock()
	if p == nil {
		return fmt.Errorf("unload plugin %s: %w", name, ErrNotFound)
	}
	p.retire()
	h.log.Info("plugin unloaded", "plugin", name)
	return nil
}

// Plugins lists the loaded plugins by name.
func (h *Host) Plugins() []Info {
	h.mu.RLock()
	out := make([]Info, 0, len(h.plugins))
	for _, p := range h.plugins {
		out = append(out, p.info)
	}
	h.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Plugin returns the loaded plugin called name.
func (h *Host) Plugin(name string) (Info, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	p, ok := h.plugins[name]
	if !ok {
		return Info{}, false
	}
	return p.info, true
}

// Stats are counters of the host since New, for metrics and tests.
type Stats struct {
	// Calls counts calls into plugins; one call carries every distinct
	// config of a step of a Batch.
	Calls uint64 `json:"calls"`
	// Instantiations counts instances started; Discards those thrown away
	// after a trap, timeout or malformed answer; Timeouts the calls stopped
	// at their deadline.
	Instantiations uint64 `json:"instantiations"`
	// Compilations counts modules prepared (compiled, or read from the
	// compilation cache) for Check or Load.
	Compilations uint64 `json:"compilations"`
	Discards     uint64 `json:"discards"`
	Timeouts     uint64 `json:"timeouts"`
	// Instances is the number of instances alive now, idle or busy.
	Instances int64 `json:"instances"`
	Plugins   int   `json:"plugins"`
}

// Stats returns the host's counters.
func (h *Host) Stats() Stats {
	h.mu.RLock()
	n := len(h.plugins)
	h.mu.RUnlock()
	return Stats{
		Calls:          h.stats.calls.Load(),
		Instantiations: h.stats.instantiations.Load(),
		Compilations:   h.stats.compilations.Load(),
		Discards:       h.stats.discards.Load(),
		Timeouts:       h.stats.timeouts.Load(),
		Instances:      h.stats.live.Load(),
		Plugins:        n,
	}
}

// acquire returns the plugin called name with a reference that keeps it
// usable until release, even if it is replaced meanwhile.
func (h *Host) acquire(name string) (*plugin, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrClosed
	}
	p := h.plugins[name]
	if p == nil {
		return nil, fmt.Errorf("plugin %s: %w", name, ErrNotFound)
	}
	p.hold()
	return p, nil
}

// prepare compiles and checks a plugin and runs its samples without
// activating it. On success the caller owns the returned plugin's reference
// and must activate or retire it.
func (h *Host) prepare(ctx context.Context, wasm []byte) (*plugin, []SampleResult, error) {
	if len(wasm) > MaxModuleBytes {
		return nil, nil, fmt.Errorf("load plugin: %d bytes, at most %d: %w", len(wasm), MaxModuleBytes, ErrInvalidPlugin)
	}
	sum := sha256.Sum256(wasm)
	code, err := instrument(wasm)
	instrumented := err == nil
	switch {
	case errors.Is(err, errNoMarker):
		// Not a plugin of this ABI: compiled as it is, it is refused by
		// checkModule, which says what it is, before any instance starts.
		code = wasm
	case err != nil:
		return nil, nil, fmt.Errorf("compile plugin: %w", err)
	}
	h.stats.compilations.Add(1)
	var compiled wazero.CompiledModule
	err = h.useRuntime(func() (err error) {
		compiled, err = h.rtCheck.CompileModule(ctx, code)
		return err
	})
	switch {
	case errors.Is(err, ErrClosed):
		return nil, nil, err
	case err != nil:
		return nil, nil, fmt.Errorf("compile plugin: %w: %w", ErrInvalidPlugin, err)
	}
	if err := checkModule(compiled); err != nil || !instrumented {
		_ = compiled.Close(ctx)
		return nil, nil, fmt.Errorf("check plugin: %w: %w", ErrInvalidPlugin, cmp.Or(err, errNoMarker))
	}
	p := newPlugin(h, compiled)
	p.checking = true
	defer p.retire()
	p.info = Info{ABI: abi.Version, Size: len(wasm), SHA256: hex.EncodeToString(sum[:]), LoadedAt: time.Now().UTC()}
	meta, err := p.readMeta(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read plugin metadata: %w: %w", ErrInvalidPlugin, err)
	}
	for _, hook := range meta.Hooks {
		if compiled.ExportedFunctions()[hook.Export()] == nil {
			return nil, nil, fmt.Errorf("check plugin %s: declares hook %s but does not export %s: %w", meta.Name, hook, hook.Export(), ErrInvalidPlugin)
		}
	}
	p.setMeta(meta)
	samples := p.runSamples(ctx)
	// What is loaded is the binary, asleep: the interpreter's module and
	// instance go with the deferred retire.
	return newSleeper(h, p.info, p.meta, wasm), samples, nil
}

// checkDeadline implements govgate.abi_v1. The instrumentation of a plugin
// calls it each time the plugin's fuel runs out (instrument.go): it stops
// the call when its context is done or its deadline has passed. The
// deadline is read, not only the context's Done: the timer that closes Done
// runs late when every processor is busy in wasm. (time.Until reads only
// the monotonic clock: half the cost of time.Now.) describe maps the exit
// codes to ErrTimeout and "call canceled", as wazero's own do.
func checkDeadline(ctx context.Context, _ []uint64) {
	err := ctx.Err()
	if d, ok := ctx.Deadline(); err == nil && ok && time.Until(d) <= 0 {
		err = context.DeadlineExceeded
	}
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		// wazero returns an ExitError panicked by a host function as it is.
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	default:
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
}

// checkModule checks the imports and exports of a compiled plugin before
// any instance of it runs, so that a plugin built for another ABI fails here
// with a message that says so, rather than at link time or at its first call.
func checkModule(m wazero.CompiledModule) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	marker := false
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch {
		case mod == wasi_snapshot_preview1.ModuleName:
		case mod != abi.HostModule:
			return fmt.Errorf("imports %s.%s: the sandbox provides only %s and %s", mod, name, abi.HostModule, wasi_snapshot_preview1.ModuleName)
		case name == abi.ImportMarker:
			marker = true
		case strings.HasPrefix(name, abi.MarkerPrefix):
			return fmt.Errorf("built for plugin ABI %s (imports %s.%s); this host speaks ABI v%d", strings.TrimPrefix(name, "abi_"), mod, name, abi.Version)
		case name == abi.ImportLog:
			if !slices.Equal(f.ParamTypes(), []api.ValueType{i32, i32, i32}) || len(f.ResultTypes()) != 0 {
				return fmt.Errorf("imports %s.%s with the wrong signature", mod, name)
			}
		default:
			return fmt.Errorf("imports %s.%s, which ABI v%d does not define", mod, name, abi.Version)
		}
	}
	if !marker {
		return fmt.Errorf("does not import %s.%s: not a govgate plugin, or one built for another ABI", abi.HostModule, abi.ImportMarker)
	}
	if _, ok := m.ExportedMemories()[abi.ExportMemory]; !ok {
		return fmt.Errorf("does not export its memory as %q", abi.ExportMemory)
	}
	want := []struct {
		name            string
		params, results []api.ValueType
		optional        bool
	}{
		{abi.ExportAlloc, []api.ValueType{i32}, []api.ValueType{i32}, false},
		{abi.ExportMeta, nil, []api.ValueType{i64}, false},
		{abi.ExportFilter, []api.ValueType{i32, i32}, []api.ValueType{i64}, true},
		{abi.ExportTransform, []api.ValueType{i32, i32}, []api.ValueType{i64}, true},
		{abi.ExportInitialize, nil, nil, true},
	}
	exports := m.ExportedFunctions()
	hooks := 0
	for _, w := range want {
		f, ok := exports[w.name]
		if !ok {
			if !w.optional {
				return fmt.Errorf("does not export %s", w.name)
			}
			continue
		}
		if !slices.Equal(f.ParamTypes(), w.params) || !slices.Equal(f.ResultTypes(), w.results) {
			return fmt.Errorf("exports %s with the wrong signature", w.name)
		}
		if w.name == abi.ExportFilter || w.name == abi.ExportTransform {
			hooks++
		}
	}
	if hooks == 0 {
		return fmt.Errorf("exports neither %s nor %s", abi.ExportFilter, abi.ExportTransform)
	}
	return nil
}

// Call runs one hook of a loaded plugin on one input, outside any chain and
// failure policy, and returns one result per config with the call's log
// lines. It is for tests and tools such as sdk/plugintest; deliveries go
// through RunChain or a Batch.
func (h *Host) Call(ctx context.Context, name string, hook abi.Hook, in abi.Input) ([]abi.Result, []string, error) {
	p, err := h.acquireAwake(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	defer p.release()
	switch {
	case !p.has(hook):
		return nil, nil, fmt.Errorf("call %s: the plugin has no %s hook", name, hook)
	case len(in.Configs) == 0 || len(in.Configs) > abi.MaxConfigs:
		return nil, nil, fmt.Errorf("call %s: %d configs, want 1 to %d", name, len(in.Configs), abi.MaxConfigs)
	}
	res, logs, err := p.call(ctx, hook, &in)
	if err != nil {
		return nil, logs, fmt.Errorf("call %s %s: %w", name, hook, err)
	}
	return res, logs, nil
}
