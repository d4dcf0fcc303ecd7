package wasmhost

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/govgate/govgate/sdk/abi"
)

// The serve protocol lets a test harness outside the gateway's module, such
// as sdk/plugintest (standard library only), call a plugin in this host: the
// harness starts "govgate plugin serve PLUGIN.wasm" and talks JSON, one
// value a line. The first line out is the loaded plugin, or why it was
// refused; then each line in is a call and is answered by one line out.
// Inputs and outputs travel in the ABI's own encoding (base64 in JSON), so
// that the host sees exactly what the gateway would hand the plugin.

// serveHello is the first line out.
type serveHello struct {
	Plugin *Info  `json:"plugin,omitempty"`
	Error  string `json:"error,omitempty"`
}

// serveRequest is one call: a hook and an encoded abi.Input.
type serveRequest struct {
	Hook  abi.Hook `json:"hook"`
	Input []byte   `json:"input"`
}

// serveResponse is the answer to one call: the encoded results, one per
// config of the input, and the call's log lines; or an error of the host
// (a trap, a deadline, a malformed answer).
type serveResponse struct {
	Output []byte   `json:"output,omitempty"`
	Logs   []string `json:"logs,omitempty"`
	Error  string   `json:"error,omitempty"`
}

func cliServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "compilation cache directory (\"\" for none)")
	timeout := fs.Duration("timeout", DefaultCallTimeout, "deadline of one plugin call")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, cliUsage)
		return 2
	}
	out := json.NewEncoder(stdout)
	hello := func(h serveHello) int {
		if err := out.Encode(h); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if h.Error != "" {
			return 1
		}
		return 0
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return hello(serveHello{Error: err.Error()})
	}
	h, err := cliHost(ctx, *cacheDir, *timeout, stderr)
	if err != nil {
		return hello(serveHello{Error: err.Error()})
	}
	defer func() { _ = h.Close(ctx) }() // the command has answered; closing frees memory the exit frees too
	info, err := h.Load(ctx, wasm)
	if err != nil {
		return hello(serveHello{Error: err.Error()})
	}
	if status := hello(serveHello{Plugin: &info}); status != 0 {
		return status
	}
	lines := bufio.NewScanner(stdin)
	lines.Buffer(make([]byte, 64<<10), 256<<20)
	for lines.Scan() {
		var req serveRequest
		var resp serveResponse
		if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
			resp.Error = fmt.Sprintf("decode request: %v", err)
		} else if in, err := abi.DecodeInput(req.Input); err != nil {
			resp.Error = err.Error()
		} else {
			res, logs, err := h.Call(ctx, info.Name, req.Hook, in)
			resp.Logs = logs
			if err != nil {
				resp.Error = err.Error()
			}
			for _, r := range res {
				resp.Output = abi.AppendResult(resp.Output, r)
			}
		}
		if err := out.Encode(resp); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if err := lines.Err(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
