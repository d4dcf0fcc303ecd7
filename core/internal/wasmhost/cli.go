package wasmhost

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/govgate/govgate/core"
)

const cliUsage = `usage:
  govgate plugin run PLUGIN.wasm --input NOTIFICATION.json [--config JSON] [--body FILE] [--timeout 250ms]
  govgate plugin test PLUGIN.wasm
  govgate plugin new NAME [--lang go|assemblyscript] [--dir DIR] [--sdk SDK_DIR]
  govgate plugin serve PLUGIN.wasm
`

// RunCLI runs the plugin subcommands of the govgate command; args starts
// with the subcommand:
//
//	run PLUGIN.wasm --input NOTIFICATION.json [--config JSON] [--body FILE] [--timeout D] [--cache-dir DIR]
//	    runs the plugin on one notification ("-" reads it from stdin) and
//	    prints the decision, the time taken, the plugin's log lines and the
//	    output body.
//	test PLUGIN.wasm [--cache-dir DIR]
//	    runs the plugin's own samples and prints each result.
//	new NAME [--lang go|assemblyscript] [--dir DIR] [--sdk SDK_DIR]
//	    writes the skeleton of a plugin, with samples that pass, into
//	    DIR/NAME; --sdk points it at a local checkout's sdk directory.
//	serve PLUGIN.wasm [--cache-dir DIR] [--timeout D]
//	    loads the plugin and answers calls on standard input, one JSON
//	    value a line: the protocol sdk/plugintest speaks (serve.go).
//
// It returns the exit status: 0 on success, 1 when the plugin fails or a
// sample does not pass, 2 on a usage error.
func RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, cliUsage)
		return 2
	}
	switch args[0] {
	case "run":
		return cliRun(ctx, args[1:], stdout, stderr)
	case "test":
		return cliTest(ctx, args[1:], stdout, stderr)
	case "new":
		return cliNew(args[1:], stdout, stderr)
	case "serve":
		return cliServe(ctx, args[1:], os.Stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, cliUsage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown plugin command %q\n%s", args[0], cliUsage)
	return 2
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, as in "run x.wasm --input n.json".
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// defaultCacheDir keeps the CLI's compiled plugins in the user's cache:
// compiling a Go plugin takes seconds, loading it from the cache a tenth.
func defaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "govgate", "wasm")
}

func cliHost(ctx context.Context, cacheDir string, timeout time.Duration, stderr io.Writer) (*Host, error) {
	return New(ctx, Config{
		CacheDir:    cacheDir,
		CallTimeout: timeout,
		PoolSize:    1,
		Logger:      slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}

func cliRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("input", "", "notification JSON file (- for stdin)")
	config := fs.String("config", "", "plugin config as JSON")
	bodyFile := fs.String("body", "", "delivery body file (default: the notification's JSON)")
	timeout := fs.Duration("timeout", DefaultCallTimeout, "deadline of one plugin call")
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "compilation cache directory (\"\" for none)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || *input == "" {
		fmt.Fprint(stderr, cliUsage)
		return 2
	}
	if *config != "" && !json.Valid([]byte(*config)) {
		fmt.Fprintln(stderr, "--config is not JSON")
		return 2
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var raw []byte
	if *input == "-" {
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(*input)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var n core.Notification
	if err := json.Unmarshal(raw, &n); err != nil {
		fmt.Fprintf(stderr, "decode %s: %v\n", *input, err)
		return 1
	}
	body, _ := json.Marshal(n)
	if *bodyFile != "" {
		if body, err = os.ReadFile(*bodyFile); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}

	h, err := cliHost(ctx, *cacheDir, *timeout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer func() { _ = h.Close(ctx) }() // the command has answered; closing frees memory the exit frees too
	p, samples, err := h.prepare(ctx, wasm)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, s := range samples {
		if !s.Passed {
			fmt.Fprintf(stderr, "warning: %s\n", s.Error)
		}
	}
	if err := h.activate(p); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	chain := []Entry{{Plugin: p.info.Name, Config: json.RawMessage(*config), FailurePolicy: FailClosed}}
	start := time.Now()
	res := h.RunChain(ctx, chain, n, body)
	took := time.Since(start)

	status := 0
	decision := "kept"
	if !res.Keep {
		decision = "dropped"
	}
	for _, s := range res.Steps {
		if s.Error != "" {
			decision, status = "error", 1
		}
	}
	fmt.Fprintf(stdout, "plugin:       %s %s (%s)\n", p.info.Name, p.info.Version, strings.Join(p.info.Hooks, ", "))
	fmt.Fprintf(stdout, "decision:     %s\n", decision)
	if res.DropReason != "" {
		fmt.Fprintf(stdout, "reason:       %s\n", res.DropReason)
	}
	fmt.Fprintf(stdout, "time:         %s\n", took.Round(time.Microsecond))
	for _, s := range res.Steps {
		fmt.Fprintf(stdout, "  %-9s    %s in %s\n", s.Hook, s.Decision, s.Duration.Round(time.Microsecond))
	}
	fmt.Fprintln(stdout, "logs:")
	for _, s := range res.Steps {
		for _, l := range s.Logs {
			fmt.Fprintf(stdout, "  %s\n", l)
		}
	}
	if res.Keep {
		fmt.Fprintf(stdout, "content-type: %s\n", res.ContentType)
		fmt.Fprintln(stdout, "body:")
		fmt.Fprintf(stdout, "%s\n", res.Body)
	}
	return status
}

func cliTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "compilation cache directory (\"\" for none)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, cliUsage)
		return 2
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	h, err := cliHost(ctx, *cacheDir, DefaultCallTimeout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer func() { _ = h.Close(ctx) }() // the command has answered; closing frees memory the exit frees too
	info, samples, err := h.Check(ctx, wasm)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "plugin %s %s (%s), ABI v%d, %d bytes\n", info.Name, info.Version, strings.Join(info.Hooks, ", "), info.ABI, info.Size)
	failed := 0
	for _, s := range samples {
		if s.Passed {
			fmt.Fprintf(stdout, "ok    %s (%s)\n", s.Name, s.Duration.Round(time.Microsecond))
		} else {
			failed++
			fmt.Fprintf(stdout, "FAIL  %s: %s\n", s.Name, s.Error)
		}
		for _, l := range s.Logs {
			fmt.Fprintf(stdout, "        %s\n", l)
		}
	}
	if len(samples) == 0 {
		fmt.Fprintln(stdout, "the plugin has no samples")
	}
	fmt.Fprintf(stdout, "samples: %d ok, %d failing\n", len(samples)-failed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}
