package wasmhost

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("long (runs the plugin CLI's commands one after another); not run with -short")
	}
	dir := t.TempDir()
	plugin := filepath.Join(dir, "hostile.wasm")
	if err := os.WriteFile(plugin, hostileWasm(t), 0o644); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "n.json")
	os.WriteFile(input, []byte(`{"id":"n1","type":"vote.cast","dao":"uniswap","occurredAt":"2025-03-01T12:00:00Z","data":{"weight":"1"}}`), 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		want   []string
	}{
		{"run keeps and transforms", []string{"run", plugin, "--input", input, "--config", `{"mode":"log","lines":2}`},
			0, []string{"decision:     kept", "[info] line 1 of n1", "content-type: application/vnd.test+json", `"wrapped":{"id":"n1"`}},
		{"flags before the plugin", []string{"run", "--input", input, "--config", `{"mode":"ok"}`, plugin}, 0, []string{"decision:     kept"}},
		{"run drops", []string{"run", plugin, "--input", "-", "--config", `{"mode":"ok"}`}, 0, []string{"decision:     dropped", "reason:       dropped by hostile filter"}},
		{"run fails", []string{"run", plugin, "--input", input, "--config", `{"mode":"loop"}`, "--timeout", "50ms"}, 1, []string{"decision:     error", "still running after 50ms"}},
		{"test", []string{"test", plugin}, 0, []string{"plugin hostile 1.0.0 (filter, transform), ABI v1", "ok    ok keeps", "samples: 1 ok, 0 failing"}},
		{"usage", []string{"run", plugin}, 2, nil},
		{"unknown command", []string{"frobnicate"}, 2, nil},
		{"not a plugin", []string{"test", input}, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.args[len(tc.args)-1] == `{"mode":"ok"}` && tc.args[3] == "-" {
				stdin := filepath.Join(dir, "stdin.json")
				os.WriteFile(stdin, []byte(`{"id":"n2","type":"test","dao":"blocked"}`), 0o644)
				f, _ := os.Open(stdin)
				defer f.Close()
				old := os.Stdin
				os.Stdin = f
				defer func() { os.Stdin = old }()
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{tc.args[0], "--cache-dir", testCacheDir(t)}, tc.args[1:]...)
			status := RunCLI(context.Background(), args, &stdout, &stderr)
			if status != tc.status {
				t.Errorf("status %d, want %d\nstdout:\n%s\nstderr:\n%s", status, tc.status, &stdout, &stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, &stdout)
				}
			}
		})
	}
}
