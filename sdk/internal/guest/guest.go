// Package guest is the plugin side of the ABI behind the sdk package: it
// holds the hooks a plugin registered and turns one encoded input into one
// encoded output. The wasm exports (sdk, GOOS=wasip1) and the native runs of
// sdk/plugintest both go through Handle, so that a plugin behaves the same
// compiled to wasm and called directly.
package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/govgate/govgate/sdk/abi"
)

// Func answers one config of a call. n is decoded once per call and shared
// by the configs of the call.
type Func func(n *abi.Notification, in *abi.Input, config []byte) abi.Result

var (
	mu        sync.Mutex
	meta      abi.Meta
	metaSet   bool
	hooks     = map[abi.Hook]Func{}
	logSink   = func(level abi.Level, msg string) { fmt.Fprintf(os.Stderr, "[%s] %s\n", level, msg) }
	logSinkMu sync.RWMutex
)

// SetMeta records the plugin's metadata. It panics when called twice, as a
// plugin with two names is a bug that should stop it at init.
func SetMeta(m abi.Meta) {
	mu.Lock()
	defer mu.Unlock()
	if metaSet {
		panic("sdk: Plugin called twice")
	}
	meta, metaSet = m, true
}

// Register records the function behind hook h; each hook can be registered
// once.
func Register(h abi.Hook, f Func) {
	mu.Lock()
	defer mu.Unlock()
	if hooks[h] != nil {
		panic(fmt.Sprintf("sdk: %s registered twice", h))
	}
	hooks[h] = f
}

// Meta returns the plugin's metadata with its ABI version and hooks filled in.
func Meta() abi.Meta {
	mu.Lock()
	defer mu.Unlock()
	m := meta
	m.ABI = abi.Version
	m.Hooks = nil
	for _, h := range []abi.Hook{abi.HookFilter, abi.HookTransform} {
		if hooks[h] != nil {
			m.Hooks = append(m.Hooks, h)
		}
	}
	return m
}

// MetaJSON is Meta as govgate_meta returns it.
func MetaJSON() []byte {
	b, err := json.Marshal(Meta())
	if err != nil {
		// Only a sample's config can fail to marshal; report it as a meta
		// the host will refuse, with the reason in the name.
		b, _ = json.Marshal(abi.Meta{ABI: abi.Version, Name: "invalid meta: " + err.Error()})
	}
	return b
}

// SetLogSink sets where Log sends lines: the host import in wasm, a test's
// recorder in sdk/plugintest. It returns the previous sink.
func SetLogSink(f func(abi.Level, string)) func(abi.Level, string) {
	logSinkMu.Lock()
	defer logSinkMu.Unlock()
	old := logSink
	logSink = f
	return old
}

// Log sends one line to the current sink.
func Log(level abi.Level, msg string) {
	logSinkMu.RLock()
	f := logSink
	logSinkMu.RUnlock()
	f(level, msg)
}

// Handle runs hook h on an encoded input and returns the encoded output: one
// result per config, or a single error result when the input cannot be
// decoded or the hook is not registered.
func Handle(h abi.Hook, input []byte) []byte {
	mu.Lock()
	f := hooks[h]
	mu.Unlock()
	if f == nil {
		return abi.AppendResult(nil, abi.Result{Status: abi.StatusError, Message: fmt.Sprintf("plugin has no %s hook", h)})
	}
	in, err := abi.DecodeInput(input)
	if err != nil {
		return abi.AppendResult(nil, abi.Result{Status: abi.StatusError, Message: err.Error()})
	}
	var out []byte
	for _, cfg := range in.Configs {
		out = abi.AppendResult(out, call(f, &in, cfg))
	}
	return out
}

// call runs f for one config and turns a panic into an error result: a
// panicking config must not take the answers for the other configs with it.
func call(f Func, in *abi.Input, cfg []byte) (r abi.Result) {
	defer func() {
		if v := recover(); v != nil {
			r = abi.Result{Status: abi.StatusError, Message: fmt.Sprintf("panic: %v", v)}
		}
	}()
	return f(&in.Notification, in, cfg)
}

// MarshalConfig encodes a sample's or a test case's config: nil stays nil,
// raw JSON is passed through, anything else is marshalled.
func MarshalConfig(c any) (json.RawMessage, error) {
	switch c := c.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return c, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("marshal config: %w", err)
	}
	return b, nil
}
