//go:build nodevchain

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/govgate/govgate/core/internal/config"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/supervisor"
)

// Production builds (`go tool task build`, the container image) use the
// nodevchain tag: the dev chain is go-ethereum's simulated backend, a whole
// node with its databases, that a server never needs. Without the tag, as
// in `go run ./core/cmd/govgate dev`, dev.go provides it.

var errNoDevChain = errors.New("govgate dev is not in this build (built with -tags nodevchain, as the production binary and the container image are): " +
	"from a checkout run `go tool task run`, or `go run ./core/cmd/govgate dev`")

type devEnv struct{}

func startDevChain(context.Context, *config.Config, *slog.Logger, *supervisor.Supervisor) (*devEnv, error) {
	return nil, errNoDevChain
}

func (*devEnv) register(context.Context, *store.Store) error { return errNoDevChain }
