package plugintest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/sdk/abi"
)

// The wasm half of a check runs in the gateway's own plugin host, which is
// not part of this module (the SDK uses the standard library only, so that a
// plugin's go.mod requires nothing else). It runs in a govgate process,
// "govgate plugin serve PLUGIN.wasm", spoken to in JSON lines: the first
// line out is the loaded plugin or why it was refused, then every line in is
// a call answered by one line out, inputs and outputs in the ABI's encoding.

// EnvCommand names the environment variable that gives the govgate command
// the wasm half runs in. Without it, plugintest runs govgate from the
// module under test when its build list has github.com/govgate/govgate (as
// the gateway's own plugins do), or else the govgate found in PATH.
const EnvCommand = "GOVGATE"

// gatewayModule is the module of the govgate command.
const gatewayModule = "github.com/govgate/govgate"

// hostInfo is what the host says of a loaded plugin.
type hostInfo struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Hooks   []string `json:"hooks"`
}

type hello struct {
	Plugin *hostInfo `json:"plugin"`
	Error  string    `json:"error"`
}

type request struct {
	Hook  abi.Hook `json:"hook"`
	Input []byte   `json:"input"`
}

type response struct {
	Output []byte   `json:"output"`
	Logs   []string `json:"logs"`
	Error  string   `json:"error"`
}

// host is a govgate process serving one plugin.
type host struct {
	info   hostInfo
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *json.Decoder
	stderr *bytes.Buffer
}

// startHost loads wasm in a govgate process. When there is no govgate to
// run, it skips the test, or fails it when CI=true; it then returns nil
// after the test has been marked.
func startHost(t *testing.T, wasm []byte) *host {
	t.Helper()
	argv, err := command()
	if err != nil {
		msg := fmt.Sprintf("plugintest: the wasm half needs the govgate command: %v; "+
			"install it (go install %s/core/cmd/govgate@latest) or set %s to its path", err, gatewayModule, EnvCommand)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
		return nil
	}
	file := filepath.Join(t.TempDir(), "plugin.wasm")
	if err := os.WriteFile(file, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(argv[1:len(argv):len(argv)], "plugin", "serve", file,
		// Generous: go test may run on a busy machine, and this suite
		// checks answers, not speed.
		"--timeout", "10s", "--cache-dir", cacheDir())
	cmd := exec.Command(argv[0], args...)
	h := &host{cmd: cmd, stderr: new(bytes.Buffer)}
	cmd.Stderr = h.stderr
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("wasm: start %s: %v", strings.Join(argv, " "), err)
	}
	t.Cleanup(h.close)
	h.out = json.NewDecoder(bufio.NewReader(stdout))
	var hi hello
	if err := h.out.Decode(&hi); err != nil {
		h.close()
		t.Fatalf("wasm: %s plugin serve: %v\n%s", strings.Join(argv, " "), err, h.stderr)
	}
	if hi.Error != "" || hi.Plugin == nil {
		t.Fatalf("wasm: %s", hi.Error)
	}
	h.info = *hi.Plugin
	return h
}

// call runs one hook on one input in the host.
func (h *host) call(hook abi.Hook, in abi.Input) ([]abi.Result, []string, error) {
	line, err := json.Marshal(request{Hook: hook, Input: abi.AppendInput(nil, &in)})
	if err != nil {
		return nil, nil, err
	}
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		return nil, nil, fmt.Errorf("send call to govgate: %w\n%s", err, h.stderr)
	}
	var resp response
	if err := h.out.Decode(&resp); err != nil {
		return nil, nil, fmt.Errorf("read answer from govgate: %w\n%s", err, h.stderr)
	}
	if resp.Error != "" {
		return nil, resp.Logs, errors.New(resp.Error)
	}
	res, err := abi.DecodeResults(resp.Output, len(in.Configs))
	return res, resp.Logs, err
}

func (h *host) close() {
	if h.stdin == nil {
		return
	}
	// Closing its stdin tells the host process to exit; how it exits is
	// not the test's concern once its answers are in.
	_ = h.stdin.Close()
	h.stdin = nil
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
	}
}

var (
	commandOnce sync.Once
	commandArgv []string
	commandErr  error
)

// command finds the govgate command, once per test binary: $GOVGATE; go run
// of the gateway's command when the module under test has it in its build
// list; govgate in PATH.
func command() ([]string, error) {
	commandOnce.Do(func() {
		if p := os.Getenv(EnvCommand); p != "" {
			commandArgv = []string{p}
			return
		}
		// go run keeps the built command in the build cache, so that only
		// the first test binary pays for linking it.
		if err := exec.Command("go", "list", "-m", gatewayModule).Run(); err == nil {
			commandArgv = []string{"go", "run", gatewayModule + "/core/cmd/govgate"}
			return
		}
		if p, err := exec.LookPath("govgate"); err == nil {
			commandArgv = []string{p}
			return
		}
		commandErr = fmt.Errorf("%s is not set, the module under test does not require %s, and govgate is not in PATH", EnvCommand, gatewayModule)
	})
	return commandArgv, commandErr
}

// cacheDir is shared by the test binaries of one machine: compiling a Go
// plugin takes a second, loading it from the cache a tenth.
func cacheDir() string { return filepath.Join(os.TempDir(), "govgate-plugintest-cache") }
