package wasmhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/govgate/govgate/sdk/abi"
)

// A Go plugin costs the gateway about 17 MB of compiled code, 7 MB of
// decoded module and some 6 MB a live instance. A plugin that no chain
// names is put to sleep: it stays loaded (its metadata, config schema and
// samples were checked, and it is listed) but keeps only its wasm binary.
// The first call after that compiles it again (from the compilation cache
// when there is a cache directory) without running its samples, which
// passed for these very bytes.

// Sleep releases the compiled code and instances of the loaded plugin
// called name, keeping wasm, its binary, to compile it again when it is
// next called. Calls already running finish first.
func (h *Host) Sleep(name string, wasm []byte) error {
	sum := sha256.Sum256(wasm)
	h.mu.Lock()
	p := h.plugins[name]
	switch {
	case p == nil:
		h.mu.Unlock()
		return fmt.Errorf("sleep plugin %s: %w", name, ErrNotFound)
	case p.info.SHA256 != hex.EncodeToString(sum[:]):
		h.mu.Unlock()
		return fmt.Errorf("sleep plugin %s: the binary given is not the one loaded", name)
	case p.wasm != nil:
		h.mu.Unlock()
		return nil // asleep already
	}
	h.plugins[name] = newSleeper(h, p.info, p.meta, wasm)
	h.mu.Unlock()
	p.retire()
	h.log.Debug("plugin asleep", "plugin", name)
	return nil
}

// newSleeper is a loaded plugin asleep: its checked metadata and its
// binary.
func newSleeper(h *Host, info Info, meta abi.Meta, wasm []byte) *plugin {
	p := &plugin{h: h, info: info, wasm: wasm, refs: 1, slots: make(chan struct{}, h.cfg.PoolSize)}
	p.setMeta(meta)
	return p
}

// Asleep reports whether the loaded plugin called name is asleep.
func (h *Host) Asleep(name string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	p := h.plugins[name]
	return p != nil && p.wasm != nil
}

// Wake compiles the plugin called name if it is asleep, and fills its pool
// of warm instances (plugin.warm): a chain names it, and its first
// deliveries should not wait for a Go runtime to start (some 10 ms).
func (h *Host) Wake(ctx context.Context, name string) error {
	p, err := h.acquireAwake(ctx, name)
	if err != nil {
		return err
	}
	defer p.release()
	if err := p.warm(ctx); err != nil {
		return fmt.Errorf("wake plugin %s: %w", name, err)
	}
	return nil
}

// acquireAwake is acquire for a call: a sleeping plugin is woken first.
// A call that found a plugin asleep runs on the version it found, even when
// a reload replaces it while it compiles (calls already running finish on
// the version they started with, as on any replacement).
func (h *Host) acquireAwake(ctx context.Context, name string) (*plugin, error) {
	// A plugin that another caller woke and that was put to sleep again
	// before the acquire below is woken again; twice in a row is not worth
	// a third try.
	for range 3 {
		p, err := h.acquire(name)
		if err != nil || p.wasm == nil {
			return p, err
		}
		awake, err := h.wake(ctx, p)
		p.release()
		if err != nil {
			return nil, fmt.Errorf("wake plugin %s: %w", name, err)
		}
		if awake != nil {
			return awake, nil
		}
	}
	return nil, fmt.Errorf("plugin %s: put to sleep as fast as it is woken", name)
}

// wake puts a compiled plugin in place of the sleeping stub and returns it
// held for the caller, or nil when another caller woke the stub (acquire
// again). A stub replaced while it compiled is not brought back: what was
// compiled serves this caller alone and goes when the caller releases it.
// Before this, such a caller tried the replacement, which under a run of
// reloads was replaced in turn while it compiled, and the call failed
// (TestReload on a loaded machine).
func (h *Host) wake(ctx context.Context, stub *plugin) (*plugin, error) {
	// One waker per sleeping plugin; the others wait for it.
	stub.wakeMu.Lock()
	defer stub.wakeMu.Unlock()
	if stub.woken {
		return nil, nil
	}
	awake, err := h.compileAwake(ctx, stub)
	if err != nil {
		return nil, err
	}
	if afterWakeCompile != nil {
		afterWakeCompile()
	}
	awake.hold() // the caller's reference
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		awake.release()
		awake.retire()
		return nil, ErrClosed
	case h.plugins[stub.info.Name] != stub:
		h.mu.Unlock()
		stub.woken = true
		awake.retire() // the caller's reference is the last
		return awake, nil
	}
	h.plugins[stub.info.Name] = awake
	h.mu.Unlock()
	stub.woken = true
	stub.retire()
	h.log.Debug("plugin woken", "plugin", stub.info.Name)
	return awake, nil
}

// afterWakeCompile, when set (by tests), runs between a wake's compilation
// and its taking the place of the sleeping plugin.
var afterWakeCompile func()

// compileAwake compiles a sleeping plugin's binary into a plugin ready for
// calls, with the metadata it was loaded with.
func (h *Host) compileAwake(ctx context.Context, stub *plugin) (*plugin, error) {
	code, err := instrument(stub.wasm)
	if err != nil {
		return nil, err
	}
	// wazero compiles a module's functions on as many goroutines as it is
	// told: a Go plugin holds some 20,000 of them, and compiling one would
	// otherwise take a single core for over a second.
	h.stats.compilations.Add(1)
	var compiled wazero.CompiledModule
	err = h.useRuntime(func() (err error) {
		compiled, err = h.rt.CompileModule(experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0)), code)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("compile plugin: %w", err)
	}
	p := newPlugin(h, compiled)
	p.info = stub.info
	p.setMeta(stub.meta)
	return p, nil
}
