package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core/config"
	"github.com/govgate/govgate/core/delivery"
	"github.com/govgate/govgate/core/store"
)

// pluginService wires the WebAssembly plugin host into the dispatcher and
// the admin API.
type pluginService struct{}

func startPlugins(ctx context.Context, cfg config.Config, log *slog.Logger, st *store.Store) (*pluginService, error) {
	return &pluginService{}, nil
}

func (p *pluginService) Transformer() delivery.Transformer     { return nil }
func (p *pluginService) AdminRoutes() []func(*gin.RouterGroup) { return nil }
func (p *pluginService) Close(ctx context.Context) error       { return nil }

func pluginCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "govgate plugin: not available in this build yet")
	return 2
}
