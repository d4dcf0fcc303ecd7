package wasmhost

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	examplesOnce sync.Once
	examples     map[string][]byte
	examplesErr  string
)

// examplePlugins builds the example plugins in plugins/ with build.sh, once
// per test binary, as "go tool task plugins" does. It skips without node
// and npm, which the AssemblyScript example needs, except under CI=true.
func examplePlugins(tb testing.TB) map[string][]byte {
	tb.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				tb.Fatalf("%s is not installed; CI must install it (.ci/run)", tool)
			}
			tb.Skipf("%s is not installed: the AssemblyScript example needs Node.js 20 and npm", tool)
		}
	}
	examplesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wasmhost-examples-")
		if err != nil {
			examplesErr = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		if out, err := exec.Command("bash", filepath.Join("..", "..", "..", "plugins", "build.sh"), dir).CombinedOutput(); err != nil {
			examplesErr = "plugins/build.sh: " + err.Error() + "\n" + string(out)
			return
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
		examples = map[string][]byte{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				examplesErr = err.Error()
				return
			}
			examples[strings.TrimSuffix(filepath.Base(f), ".wasm")] = b
		}
	})
	if examplesErr != "" {
		tb.Fatal(examplesErr)
	}
	return examples
}

// BenchmarkPluginCallAS is BenchmarkPluginCall for the AssemblyScript
// as-type-filter on the same ~1 KB vote.cast, configured with a types list;
// the bench task prints it as plugin_call_as_p50_us.
func BenchmarkPluginCallAS(b *testing.B) {
	benchExample(b, "as-type-filter", `{"types":["proposal.created","vote.cast"]}`)
}

// BenchmarkPluginCallEventFilter is the Go event-filter on the same
// notification with the same config as BenchmarkPluginCallAS: the same
// decision made in Go, for a like-for-like comparison.
func BenchmarkPluginCallEventFilter(b *testing.B) {
	benchExample(b, "event-filter", `{"types":["proposal.created","vote.cast"]}`)
}

// BenchmarkPluginCallSlack is the slack example, the transform of the
// bench's plugin chain, turning the same vote.cast into a Block Kit
// message; the bench task prints it as plugin_call_slack_p50_us.
func BenchmarkPluginCallSlack(b *testing.B) {
	benchExample(b, "slack", `{}`)
}

func benchExample(b *testing.B, name, config string) {
	wasm := examplePlugins(b)[name]
	if wasm == nil {
		b.Fatalf("plugins/build.sh built no %s", name)
	}
	benchWasm(b, wasm, name, config)
}

// benchWasm measures a chain of one plugin with config on the ~1 KB
// vote.cast, as BenchmarkPluginCall does, and reports p50_us and p99_us.
func benchWasm(b *testing.B, wasm []byte, name, config string) {
	h := newHost(b, Config{PoolSize: 1})
	load(b, h, wasm)
	n := voteNotification()
	body, _ := json.Marshal(n)
	chain := []Entry{{Plugin: name, Config: json.RawMessage(config)}}
	ctx := context.Background()
	for range 100 {
		if res := h.RunChain(ctx, chain, n, body); !res.Keep {
			b.Fatalf("dropped: %s %v", res.DropReason, res.Steps)
		}
	}
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res := h.RunChain(ctx, chain, n, body)
		durations = append(durations, time.Since(start))
		if !res.Keep {
			b.Fatalf("dropped: %s", res.DropReason)
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50_us")
	b.ReportMetric(pct(0.99), "p99_us")
}

// BenchmarkPluginSize reports the size of each example plugin's module, as
// plugins/build.sh builds it, in KB (metric size_kb_NAME); the bench task
// prints them as plugin_size_kb_NAME.
func BenchmarkPluginSize(b *testing.B) {
	ex := examplePlugins(b)
	for b.Loop() {
	}
	for name, wasm := range ex {
		b.ReportMetric(float64(len(wasm))/1024, "size_kb_"+name)
	}
}
