package wasmhost

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/govgate/govgate/sdk/abi"
)

var (
	asHooksOnce sync.Once
	asHooks     []byte
	asHooksErr  string
)

// asHooksWasm builds sdk/assemblyscript/testdata/hooks.ts, a plugin that
// exercises every part of the AssemblyScript library, with the library's
// pinned asc (npm ci first when node_modules is missing).
func asHooksWasm(t testing.TB) []byte {
	t.Helper()
	needNode(t)
	asHooksOnce.Do(func() {
		dir := filepath.Join("..", "..", "..", "sdk", "assemblyscript")
		if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
			cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				asHooksErr = "npm ci: " + err.Error() + "\n" + string(out)
				return
			}
		}
		tmp, err := os.MkdirTemp("", "as-hooks-")
		if err != nil {
			asHooksErr = err.Error()
			return
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(tmp, "hooks.wasm")
		cmd := exec.Command(filepath.Join("node_modules", ".bin", "asc"), "testdata/hooks.ts",
			"--runtime", "minimal", "--exportStart", "_initialize", "--use", "abort=assembly/index/abort", "-O3", "--outFile", out)
		cmd.Dir = dir
		if msg, err := cmd.CombinedOutput(); err != nil {
			asHooksErr = "asc: " + err.Error() + "\n" + string(msg)
			return
		}
		asHooks, err = os.ReadFile(out)
		if err != nil {
			asHooksErr = err.Error()
		}
	})
	if asHooksErr != "" {
		t.Fatal(asHooksErr)
	}
	return asHooks
}

func modes(ms ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		switch m {
		case "":
		case "invalid":
			out[i] = json.RawMessage(`{"mode":`)
		default:
			out[i] = mode(m)
		}
	}
	return out
}

// TestAssemblyScriptLibrary runs a plugin built with the AssemblyScript
// library in the host: metadata and samples, both hooks, every config of a
// call, drop reasons, errors, logs, aborts, and memory across many calls.
func TestAssemblyScriptLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an AssemblyScript plugin")
	}
	wasm := asHooksWasm(t)
	h := newHost(t, Config{PoolSize: 1, MemoryLimitMB: 16, CallTimeout: 5 * time.Second})
	info := load(t, h, wasm)
	if info.Name != "as-hooks" || info.Version != "0.0.1" || strings.Join(info.Hooks, ",") != "filter,transform" || info.Samples != 2 || string(info.ConfigSchema) != `{"type":"object"}` {
		t.Errorf("loaded %+v", info)
	}
	ctx := context.Background()
	occurred := time.Date(2025, 3, 1, 12, 0, 0, 500_000_000, time.UTC)
	n := abi.Notification{ID: "n9", Type: "vote.cast", DAO: "uniswap", OccurredAt: occurred, Data: json.RawMessage(`{"weight":1200,"reason":"é"}`)}
	body := []byte(`{"id":"n9","note":"ünïcode"}`)
	in := func(configs []json.RawMessage) abi.Input {
		return abi.Input{Notification: n, Body: body, ContentType: "application/json", Configs: configs}
	}

	t.Run("filter", func(t *testing.T) {
		res, logs, err := h.Call(ctx, "as-hooks", abi.HookFilter, in(modes("keep", "drop", "error", "long", "log", "weight", "", "invalid")))
		if err != nil {
			t.Fatal(err)
		}
		want := []abi.Result{
			{Status: abi.StatusKeep},
			{Status: abi.StatusDrop, Message: "dropped n9 of uniswap at 2025-03-01T12:00:00.5Z"},
			{Status: abi.StatusError, Message: "filter failed for vote.cast"},
			{Status: abi.StatusDrop}, // checked below
			{Status: abi.StatusKeep},
			{Status: abi.StatusDrop, Message: "weight 1200"},
			{Status: abi.StatusKeep},
			{Status: abi.StatusError}, // checked below
		}
		for i, w := range want {
			r := res[i]
			switch {
			case i == 3:
				if r.Status != abi.StatusDrop || len(r.Message) > 512 || !utf8.ValidString(r.Message) || !strings.HasSuffix(r.Message, "é…") {
					t.Errorf("long reason: %s %d bytes %q", r.Status, len(r.Message), r.Message[max(0, len(r.Message)-8):])
				}
			case i == 7:
				if r.Status != abi.StatusError || !strings.HasPrefix(r.Message, "decode config: ") {
					t.Errorf("invalid config: %s %q", r.Status, r.Message)
				}
			case r.Status != w.Status || r.Message != w.Message:
				t.Errorf("config %d: %s %q, want %s %q", i, r.Status, r.Message, w.Status, w.Message)
			}
		}
		if len(logs) != 1 || !strings.Contains(logs[0], "hello from n9") || !strings.Contains(logs[0], "warn") {
			t.Errorf("logs %q, want the warning of the log config", logs)
		}
	})

	t.Run("transform", func(t *testing.T) {
		res, _, err := h.Call(ctx, "as-hooks", abi.HookTransform, in(modes("upper", "wrap", "bytes", "error", "same")))
		if err != nil {
			t.Fatal(err)
		}
		if r := res[0]; r.Status != abi.StatusBody || string(r.Body) != `{"ID":"N9","NOTE":"ÜNÏCODE"}` || r.ContentType != "text/plain" {
			t.Errorf("upper: %s %q %q", r.Status, r.Body, r.ContentType)
		}
		if r := res[1]; r.Status != abi.StatusBody || !abi.SameBody(r.Body, []byte(`{"wrapped":{"id":"n9","note":"ünïcode"},"ct":"application/json"}`)) || r.ContentType != "" {
			t.Errorf("wrap: %s %q %q", r.Status, r.Body, r.ContentType)
		}
		if r := res[2]; r.Status != abi.StatusBody || !bytes.Equal(r.Body, body) || r.ContentType != "application/octet-stream" {
			t.Errorf("bytes: %s %q %q", r.Status, r.Body, r.ContentType)
		}
		if r := res[3]; r.Status != abi.StatusError || r.Message != "transform failed" {
			t.Errorf("error: %s %q", r.Status, r.Message)
		}
		if r := res[4]; r.Status != abi.StatusUnchanged {
			t.Errorf("same: %s", r.Status)
		}
	})

	t.Run("abort traps and logs why", func(t *testing.T) {
		before := h.Stats().Discards
		_, logs, err := h.Call(ctx, "as-hooks", abi.HookFilter, in(modes("abort")))
		if err == nil {
			t.Fatal("an aborting filter answered")
		}
		if !strings.Contains(strings.Join(logs, "\n"), "abort: boom at testdata/hooks.ts") {
			t.Errorf("logs %q, want the abort's message and place", logs)
		}
		if h.Stats().Discards != before+1 {
			t.Error("the instance that trapped was not discarded")
		}
		if res, _, err := h.Call(ctx, "as-hooks", abi.HookFilter, in(modes("keep"))); err != nil || res[0].Status != abi.StatusKeep {
			t.Errorf("after the abort: %v %v", res, err)
		}
	})

	t.Run("memory is collected between calls", func(t *testing.T) {
		// Each call makes about 1.5 MB of garbage (input, UTF-16 text, its
		// upper case, output): 100 calls are 150 MB in a 16 MB instance.
		big := bytes.Repeat([]byte("a"), 256<<10)
		before := h.Stats().Discards
		for i := range 100 {
			res, _, err := h.Call(ctx, "as-hooks", abi.HookTransform, abi.Input{Notification: n, Body: big, ContentType: "text/plain", Configs: modes("upper")})
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if len(res[0].Body) != len(big) {
				t.Fatalf("call %d: %d bytes", i, len(res[0].Body))
			}
		}
		if d := h.Stats().Discards - before; d != 0 {
			t.Errorf("%d instances discarded", d)
		}
	})
}

// BenchmarkPluginCallASVote is BenchmarkPluginCall with the filter written
// in AssemblyScript: decode the ~1 KB vote.cast's data (the library's JSON
// reader) and keep a vote in favour. The bench task prints it as
// plugin_call_as_vote_p50_us, beside the Go figure plugin_call_p50_us.
func BenchmarkPluginCallASVote(b *testing.B) {
	benchWasm(b, asHooksWasm(b), "as-hooks", `{"mode":"vote"}`)
}
