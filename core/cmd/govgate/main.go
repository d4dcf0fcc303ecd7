// Command govgate is the governance data gateway: `govgate serve` runs the
// REST API, the webhook service and the admin listener; `govgate dev` runs
// them on an in-process chain with scripted governance activity; `govgate
// plugin` runs and tests WebAssembly plugins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

const usage = `govgate — governance data gateway

Usage:
  govgate serve [--config FILE] [--only api|webhooks|admin]...   run the service
  govgate dev   [--config FILE]                                  run on an in-process dev chain
  govgate plugin run PLUGIN.wasm --input NOTIFICATION.json [--config JSON]
  govgate plugin test PLUGIN.wasm
  govgate healthcheck [--only api|webhooks|admin]... [--live]    probe the listeners here; exit 0 or 1
  govgate version

Every setting can be overridden by a GOVGATE_* environment variable (see README).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stderr, false)
	case "dev":
		err = serve(ctx, args[1:], stderr, true)
	case "plugin":
		return pluginCLI(ctx, args[1:], stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "govgate", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "govgate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "govgate:", err)
		return 1
	}
	return 0
}
