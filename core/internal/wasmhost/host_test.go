package wasmhost

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/sdk/abi"
)

func TestLoad(t *testing.T) {
	h := newHost(t, Config{PoolSize: 2})
	wasm := hostileWasm(t)
	info := load(t, h, wasm)
	want := Info{Name: "hostile", Version: "1.0.0", ABI: 1, Size: len(wasm), Hooks: []string{"filter", "transform"}, Samples: 1}
	if info.Name != want.Name || info.Version != want.Version || info.ABI != want.ABI || info.Size != want.Size ||
		!slices.Equal(info.Hooks, want.Hooks) || info.Samples != want.Samples || len(info.SHA256) != 64 {
		t.Errorf("Load = %+v, want %+v", info, want)
	}
	if !json.Valid(info.ConfigSchema) {
		t.Errorf("ConfigSchema = %s", info.ConfigSchema)
	}
	if got := h.Plugins(); len(got) != 1 || got[0].Name != "hostile" {
		t.Errorf("Plugins = %+v", got)
	}
	if err := h.Unload("hostile"); err != nil {
		t.Fatal(err)
	}
	if err := h.Unload("hostile"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Unload = %v, want ErrNotFound", err)
	}
	res := h.RunChain(context.Background(), []Entry{{Plugin: "hostile"}}, notification("test", "x"), []byte("{}"))
	if res.Keep || !strings.Contains(res.DropReason, "not loaded") {
		t.Errorf("chain with an unloaded plugin = %+v, want dropped (fail-closed)", res)
	}
	if n := h.Stats().Instances; n != 0 {
		t.Errorf("%d instances alive after Unload", n)
	}
}

func TestLoadRefuses(t *testing.T) {
	h := newHost(t, Config{})
	for _, tc := range []struct {
		name, file, want string
	}{
		{"wrong ABI version", "abi_v2.wasm", "built for plugin ABI v2"},
		{"missing exports", "noexports.wasm", "does not export govgate_alloc"},
		{"not wasm", "abi_v2.wat", "compile plugin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Load(context.Background(), fixture(t, tc.file))
			if !errors.Is(err, ErrInvalidPlugin) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, want ErrInvalidPlugin mentioning %q", err, tc.want)
			}
		})
	}
	if n := len(h.Plugins()); n != 0 {
		t.Errorf("%d plugins loaded", n)
	}
}

func TestLoadGivesUpOnAStartThatNeverEnds(t *testing.T) {
	h := newHost(t, Config{InitTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := h.Load(context.Background(), fixture(t, "initloop.wasm"))
	if !errors.Is(err, ErrInvalidPlugin) || !strings.Contains(err.Error(), "still running after 100ms") {
		t.Errorf("Load = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Load took %s", took)
	}
	if n := h.Stats().Instances; n != 0 {
		t.Errorf("%d instances alive", n)
	}
}

func TestCheckReportsSamples(t *testing.T) {
	h := newHost(t, Config{})
	info, samples, err := h.Check(context.Background(), hostileWasm(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 || !samples[0].Passed || samples[0].Name != "ok keeps" {
		t.Errorf("samples = %+v", samples)
	}
	if _, ok := h.Plugin(info.Name); ok {
		t.Error("Check activated the plugin")
	}
}

// TestLoadAfterCheckCompilesOnce: a plugin manager checks a module, stores
// it, then loads it; the load takes over what the check prepared instead of
// compiling the module and running its samples again (without a cache
// directory, closing the check's compilation would have thrown it away).
func TestLoadAfterCheckCompilesOnce(t *testing.T) {
	h, err := New(context.Background(), Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	wasm := hostileWasm(t)
	if _, _, err := h.Check(context.Background(), wasm); err != nil {
		t.Fatal(err)
	}
	before := h.Stats()
	info := load(t, h, wasm)
	after := h.Stats()
	if after.Compilations != before.Compilations || after.Instantiations != before.Instantiations {
		t.Errorf("Load after Check compiled %d and instantiated %d more", after.Compilations-before.Compilations, after.Instantiations-before.Instantiations)
	}
	if _, ok := h.Plugin(info.Name); !ok {
		t.Fatal("not loaded")
	}
	// What Check kept is handed over once: a second Load prepares anew.
	load(t, h, wasm)
	if got := h.Stats().Compilations; got != after.Compilations+1 {
		t.Errorf("second Load: %d compilations, want %d", got, after.Compilations+1)
	}
	// Closing the host releases what Check keeps.
	if _, _, err := h.Check(context.Background(), wasm); err != nil {
		t.Fatal(err)
	}
	h.Close(context.Background())
	if n := h.Stats().Instances; n != 0 {
		t.Errorf("%d instances alive after Close", n)
	}
}

func TestRunChain(t *testing.T) {
	h := newHost(t, Config{PoolSize: 2})
	load(t, h, hostileWasm(t))
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	for _, tc := range []struct {
		name        string
		chain       []Entry
		n           func() (string, string)
		keep        bool
		decisions   []string
		contentType string
		reason      string
	}{
		{name: "empty chain keeps", keep: true, contentType: "application/json"},
		{
			name:  "filter keeps, transform rewrites",
			chain: []Entry{{Plugin: "hostile", Config: mode("ok")}},
			keep:  true, decisions: []string{"kept", "transformed"}, contentType: "application/vnd.test+json",
		},
		{
			name:  "transform error fails closed by default",
			chain: []Entry{{Plugin: "hostile", Config: mode("error")}},
			keep:  false, decisions: []string{"kept", "error-closed"}, reason: "hostile transform failed (fail-closed): refusing",
		},
		{
			name:  "transform error fails open on request",
			chain: []Entry{{Plugin: "hostile", Config: mode("error"), FailurePolicy: FailOpen}},
			keep:  true, decisions: []string{"kept", "error-open"}, contentType: "application/json",
		},
		{
			name:  "a bad config is an error",
			chain: []Entry{{Plugin: "hostile", Config: json.RawMessage(`{"mod":"ok"}`)}},
			keep:  false, decisions: []string{"error-closed"}, reason: "unknown field",
		},
		{
			name:  "unknown plugin fails open on request",
			chain: []Entry{{Plugin: "nope", FailurePolicy: FailOpen}, {Plugin: "hostile", Config: mode("ok")}},
			keep:  true, decisions: []string{"error-open", "kept", "transformed"}, contentType: "application/vnd.test+json",
		},
		{
			name:  "panic in a filter is an error, not a crash",
			chain: []Entry{{Plugin: "hostile", Config: mode("panic")}},
			keep:  false, decisions: []string{"error-closed"}, reason: "panic: boom",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := h.RunChain(context.Background(), tc.chain, n, b)
			var got []string
			for _, s := range res.Steps {
				got = append(got, s.Decision)
			}
			if res.Keep != tc.keep || !slices.Equal(got, tc.decisions) || (tc.keep && res.ContentType != tc.contentType) ||
				!strings.Contains(res.DropReason, tc.reason) {
				t.Errorf("RunChain = keep %t, decisions %v, content type %q, reason %q; want %t, %v, %q, %q",
					res.Keep, got, res.ContentType, res.DropReason, tc.keep, tc.decisions, tc.contentType, tc.reason)
			}
		})
	}

	t.Run("transform sees the body of the previous one", func(t *testing.T) {
		chain := []Entry{{Plugin: "hostile", Config: mode("ok")}, {Plugin: "hostile", Config: mode("ok")}}
		res := h.RunChain(context.Background(), chain, n, b)
		var v struct {
			Wrapped struct {
				Wrapped json.RawMessage `json:"wrapped"`
			} `json:"wrapped"`
		}
		if err := json.Unmarshal(res.Body, &v); err != nil || !abi.SameBody(v.Wrapped.Wrapped, b) {
			t.Errorf("body = %s (%v)", res.Body, err)
		}
	})
	t.Run("the wall clock stands still within a call", func(t *testing.T) {
		res := h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: mode("clock")}}, n, b)
		if len(res.Steps) == 0 || res.Steps[0].Decision != DecisionKept {
			t.Errorf("steps = %+v", res.Steps)
		}
	})
}

func TestMalformedAnswers(t *testing.T) {
	h := newHost(t, Config{})
	load(t, h, fixture(t, "malformed.wasm"))
	n := notification("test", "x")
	for _, tc := range []struct {
		name string
		hook abi.Hook
		want string
	}{
		{"unknown status", abi.HookFilter, "unknown status 9"},
		{"pointer outside memory", abi.HookTransform, "outside the plugin's memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.Stats().Discards
			in := abi.Input{Notification: abi.Notification(n), Configs: []json.RawMessage{nil}}
			_, _, err := h.Call(context.Background(), "malformed", tc.hook, in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Call = %v, want %q", err, tc.want)
			}
			if h.Stats().Discards == before {
				t.Error("the instance that answered out of protocol was kept")
			}
		})
	}
	for _, policy := range []string{FailOpen, FailClosed} {
		res := h.RunChain(context.Background(), []Entry{{Plugin: "malformed", FailurePolicy: policy}}, n, body(t, n))
		if res.Keep != (policy == FailOpen) || len(res.Steps) != 1 || res.Steps[0].Decision != "error-"+policy {
			t.Errorf("policy %s: %+v", policy, res)
		}
	}
}

func TestLogs(t *testing.T) {
	h := newHost(t, Config{})
	load(t, h, hostileWasm(t))
	n := notification("test", "x")
	res := h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: json.RawMessage(`{"mode":"log","lines":3}`)}}, n, body(t, n))
	want := []string{"[info] line 0 of n-test", "[info] line 1 of n-test", "[info] line 2 of n-test", "[warn] to stderr"}
	if got := res.Steps[0].Logs; !slices.Equal(got, want) {
		t.Errorf("logs = %q, want %q", got, want)
	}

	res = h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: json.RawMessage(`{"mode":"log","lines":1000}`)}}, n, body(t, n))
	logs := res.Steps[0].Logs
	if len(logs) != maxCallLogLines+1 || !strings.Contains(logs[len(logs)-1], "969 more lines") {
		t.Errorf("a call kept %d lines, the last %q", len(logs), logs[len(logs)-1])
	}
	ring := h.Logs("hostile")
	if len(ring) > logBurst+10 || len(ring) < 4 {
		t.Errorf("the ring holds %d lines; the rate limit lets through about %d", len(ring), logBurst)
	}
	if ring[0].Plugin != "hostile" || ring[0].Message != "line 0 of n-test" {
		t.Errorf("oldest line = %+v", ring[0])
	}
}

func TestConcurrentChains(t *testing.T) {
	h := newHost(t, Config{PoolSize: 2})
	load(t, h, hostileWasm(t))
	n := notification("proposal.created", "uniswap")
	b := body(t, n)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				cfg := mode("ok")
				if (g+i)%5 == 0 {
					cfg = mode("panic")
				}
				res := h.RunChain(context.Background(), []Entry{{Plugin: "hostile", Config: cfg}}, n, b)
				if string(cfg) == string(mode("ok")) && !res.Keep {
					t.Errorf("ok chain dropped: %s", res.DropReason)
				}
			}
		})
	}
	wg.Wait()
	if n := h.Stats().Instances; n > 2 {
		t.Errorf("%d instances alive, PoolSize is 2", n)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"memory", Config{MemoryLimitMB: 5000}, "MemoryLimitMB"},
		{"reserve over the default limit", Config{MemoryReserveMB: 65}, "MemoryReserveMB"},
		{"reserve over the limit", Config{MemoryLimitMB: 8, MemoryReserveMB: 9}, "MemoryReserveMB"},
		{"timeout", Config{CallTimeout: -1}, "CallTimeout"},
		{"output", Config{MaxOutputBytes: -1}, "MaxOutputBytes"},
		{"pool", Config{PoolSize: -1}, "PoolSize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

func TestValidateChain(t *testing.T) {
	good := []Entry{{Plugin: "dao-filter", Config: json.RawMessage(`{"daos":["x"]}`)}, {Plugin: "slack", FailurePolicy: FailOpen}}
	if err := ValidateChain(good); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]Entry{
		{{Plugin: "Bad Name"}},
		{{Plugin: "x", Config: json.RawMessage(`{`)}},
		{{Plugin: "x", FailurePolicy: "maybe"}},
	} {
		if err := ValidateChain(bad); err == nil {
			t.Errorf("ValidateChain(%+v) = nil", bad)
		}
	}
}

// TestWATFixtures checks that the committed .wasm fixtures are built from
// their .wat sources, when wat2wasm (Debian package wabt) is installed.
func TestWATFixtures(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm not installed (apt-get install wabt)")
	}
	srcs, _ := filepath.Glob("testdata/*.wat")
	for _, src := range srcs {
		out := filepath.Join(t.TempDir(), "out.wasm")
		if msg, err := exec.Command(wat2wasm, src, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", src, err, msg)
		}
		got, _ := os.ReadFile(out)
		if want := fixture(t, strings.TrimPrefix(strings.TrimSuffix(src, ".wat")+".wasm", "testdata/")); string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./core/wasmhost/", src)
		}
	}
}

func TestCallDirect(t *testing.T) {
	h := newHost(t, Config{})
	load(t, h, hostileWasm(t))
	n := notification("test", "blocked")
	in := abi.Input{Notification: abi.Notification(n), Configs: []json.RawMessage{mode("ok"), mode("panic"), nil}}
	res, _, err := h.Call(context.Background(), "hostile", abi.HookFilter, in)
	if err != nil {
		t.Fatal(err)
	}
	got := []abi.Status{res[0].Status, res[1].Status, res[2].Status}
	if want := []abi.Status{abi.StatusDrop, abi.StatusError, abi.StatusDrop}; !slices.Equal(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	if _, _, err := h.Call(context.Background(), "nope", abi.HookFilter, in); !errors.Is(err, ErrNotFound) {
		t.Errorf("Call(nope) = %v", err)
	}

}

// TestLoadRefusesTheFuelCounter loads, through a real host, a plugin whose
// code reads a global past its own: invalid as written, it would read the
// fuel counter once instrumented.
func TestLoadRefusesTheFuelCounter(t *testing.T) {
	t.Parallel()
	h := newHost(t, Config{})
	wasm := rawModule(nil, []byte{opGlobalGet, 1, opEnd})
	if err := (validModule(t, wasm)); err == nil {
		t.Fatal("the fixture is valid as written; it must not be")
	}
	_, err := h.Load(context.Background(), wasm)
	if !errors.Is(err, ErrInvalidPlugin) || !strings.Contains(err.Error(), "global 1 does not exist") {
		t.Errorf("Load = %v, want ErrInvalidPlugin: global 1 does not exist", err)
	}
}
