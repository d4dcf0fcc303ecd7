package wasmhost

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
)

//go:generate sh -c "for f in testdata/*.wat; do wat2wasm $DOLLAR{f} -o $DOLLAR{f%.wat}.wasm; done"

var (
	buildMu   sync.Mutex
	buildDir  string
	buildWasm = map[string][]byte{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildPlugin builds the Go plugin in testdata/name once per test binary.
func buildPlugin(tb testing.TB, name string) []byte {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if b := buildWasm[name]; b != nil {
		return b
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "wasmhost-test-")
		if err != nil {
			tb.Fatal(err)
		}
		buildDir = dir
	}
	out := filepath.Join(buildDir, name+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./testdata/"+name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build testdata/%s: %v\n%s", name, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	buildWasm[name] = b
	return b
}

// hostileWasm is testdata/hostile: a plugin whose config picks how it
// misbehaves.
func hostileWasm(tb testing.TB) []byte { return buildPlugin(tb, "hostile") }

func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// cacheDir is shared by the tests of one binary so that each module is
// compiled once.
var (
	cacheOnce sync.Once
	cachePath string
)

func testCacheDir(tb testing.TB) string {
	cacheOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wasmhost-cache-")
		if err == nil {
			cachePath = dir
		}
	})
	if cachePath == "" {
		tb.Fatal("no cache dir")
	}
	return cachePath
}

func newHost(tb testing.TB, cfg Config) *Host {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = testCacheDir(tb)
	}
	h, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func load(tb testing.TB, h *Host, wasm []byte) Info {
	tb.Helper()
	info, err := h.Load(context.Background(), wasm)
	if err != nil {
		tb.Fatal(err)
	}
	return info
}

func notification(typ, dao string) core.Notification {
	return core.Notification{
		ID: "n-" + typ, Type: typ, DAO: dao,
		OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		Data:       json.RawMessage(`{"proposalId":"42"}`),
	}
}

func body(tb testing.TB, n core.Notification) []byte {
	b, err := json.Marshal(n)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func mode(m string) json.RawMessage { return json.RawMessage(`{"mode":"` + m + `"}`) }

// voteNotification is a vote.cast of about 1 KB, as the indexer emits.
func voteNotification() core.Notification {
	data, _ := json.Marshal(map[string]any{
		"voter":      "0x1b3cb81e51011b549d78bf720b0d924ac763a7c2",
		"support":    1,
		"weight":     "1234567890123456789012345",
		"proposalId": "103481231092831092381092381092831098230918230918230918230981230981",
		"reason":     strings.Repeat("I support this proposal because it funds public goods. ", 14),
	})
	return core.Notification{ID: "01JNX2V7YQ6GZ3", Type: core.TypeVoteCast, DAO: "uniswap", OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Data: data}
}

// settleGoroutines waits for goroutines to wind down to at most want.
func settleGoroutines(want int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
