package wasmhost

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envCLIProcess makes the test binary act as the govgate command's plugin
// subcommands (TestCLIProcess), so that a test can hand sdk/plugintest a
// govgate to run without building the whole gateway.
const envCLIProcess = "GOVGATE_WASMHOST_CLI_PROCESS"

// TestCLIProcess is not a test: it is the govgate command when the test
// binary runs as one (govgateCommand).
func TestCLIProcess(t *testing.T) {
	if os.Getenv(envCLIProcess) != "1" {
		t.Skip("runs only as the govgate command of another test")
	}
	args := flag.Args()
	if len(args) == 0 || args[0] != "plugin" {
		fmt.Fprintln(os.Stderr, "usage: govgate plugin ...")
		os.Exit(2)
	}
	os.Exit(RunCLI(context.Background(), args[1:], os.Stdout, os.Stderr))
}

// govgateCommand writes a script that runs this test binary as the govgate
// command, for the GOVGATE variable of sdk/plugintest.
func govgateCommand(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "govgate")
	body := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q -test.run='^TestCLIProcess$' -- \"$@\"\n", envCLIProcess, self)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// sdkDir is the repository's sdk module.
func sdkDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs a command in dir and fails the test with its output if it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pluginTest runs "govgate plugin test" on a wasm file and fails unless every
// sample passes.
func pluginTest(t *testing.T, wasm string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if status := RunCLI(context.Background(), []string{"test", "--cache-dir", testCacheDir(t), wasm}, &stdout, &stderr); status != 0 {
		t.Fatalf("govgate plugin test %s: status %d\n%s%s", wasm, status, &stdout, &stderr)
	}
	return stdout.String()
}

// needNode skips a test when node and npm are missing, except under CI=true,
// where .ci/run installs what the tests need and a missing tool is a failure.
func needNode(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; CI must install it (.ci/run)", tool)
			}
			t.Skipf("%s is not installed: the AssemblyScript plugin tests need Node.js 20 and npm", tool)
		}
	}
}

// TestNewGoPluginOutsideTheRepository writes a Go skeleton into a directory
// outside the repository whose go.mod requires only the sdk module (replaced
// by the local one: no network), builds it for wasip1, checks it with
// "govgate plugin test", and runs its own go test, native and wasm halves.
func TestNewGoPluginOutsideTheRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin with the go toolchain")
	}
	dir := filepath.Join(t.TempDir(), "my-filter")
	var stdout, stderr bytes.Buffer
	if status := RunCLI(context.Background(), []string{"new", "my-filter", "--lang", "go", "--dir", filepath.Dir(dir), "--sdk", sdkDir(t)}, &stdout, &stderr); status != 0 {
		t.Fatalf("plugin new: status %d\n%s%s", status, &stdout, &stderr)
	}
	for _, f := range []string{"main.go", "main_test.go"} {
		src, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
			t.Errorf("%s is not gofmt-ed (%v)", f, err)
		}
	}
	env := []string{"GOPROXY=off", "GOWORK=off"}
	mods := run(t, dir, env, "go", "list", "-m", "all")
	if got := strings.Split(strings.TrimSpace(mods), "\n"); len(got) != 2 || got[0] != "my-filter" || !strings.HasPrefix(got[1], "github.com/govgate/govgate/sdk ") {
		t.Errorf("the plugin's build list is %q, want the plugin and the sdk module only", mods)
	}
	wasm := filepath.Join(dir, "my-filter.wasm")
	run(t, dir, append(env, "GOOS=wasip1", "GOARCH=wasm"), "go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s", "-o", wasm, ".")
	out := pluginTest(t, wasm)
	if !strings.Contains(out, "samples: 2 ok, 0 failing") {
		t.Errorf("plugin test:\n%s", out)
	}
	out = run(t, dir, append(env, "GOVGATE="+govgateCommand(t)), "go", "test", "-count=1", "-v", "./...")
	if !strings.Contains(out, "--- PASS: TestPlugin") {
		t.Errorf("go test of the skeleton did not pass TestPlugin:\n%s", out)
	}
}

// TestNewAssemblyScriptPlugin writes an AssemblyScript skeleton outside the
// repository, installs its packages (the local @govgate/sdk and
// assemblyscript from the npm registry or npm's cache), builds it and
// checks it with "govgate plugin test".
func TestNewAssemblyScriptPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin with npm")
	}
	needNode(t)
	dir := filepath.Join(t.TempDir(), "my-as-filter")
	if _, err := NewPlugin(dir, "my-as-filter", "assemblyscript", sdkDir(t)); err != nil {
		t.Fatal(err)
	}
	run(t, dir, nil, "npm", "install", "--prefer-offline", "--no-audit", "--no-fund")
	run(t, dir, nil, "npm", "run", "build")
	out := pluginTest(t, filepath.Join(dir, "build", "my-as-filter.wasm"))
	if !strings.Contains(out, "samples: 2 ok, 0 failing") {
		t.Errorf("plugin test:\n%s", out)
	}
}

func TestNewPluginRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, plugin, lang, want string }{
		{"bad name", "My Filter", "go", "name"},
		{"unknown language", "x", "rust", `language "rust"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlugin(filepath.Join(dir, tc.name), tc.plugin, tc.lang, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one about %s", err, tc.want)
			}
		})
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	if _, err := NewPlugin(dir, "x", "go", ""); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("error %v, want one about a non-empty directory", err)
	}
}
