package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core/internal/config"
	"github.com/govgate/govgate/core/internal/delivery"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/plugindelivery"
	"github.com/govgate/govgate/core/internal/pluginmgr"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/supervisor"
	"github.com/govgate/govgate/core/internal/wasmhost"
)

// pluginService wires the WebAssembly host and the plugin manager into the
// dispatcher and the admin API.
type pluginService struct {
	host *wasmhost.Host
	mgr  *pluginmgr.Manager
	st   *store.Store
	log  *slog.Logger
}

// startPlugins loads the plugins into a WebAssembly host; the supervisor
// closes the host and runs the manager's hot reload and preparations.
func startPlugins(ctx context.Context, cfg config.Config, log *slog.Logger, st *store.Store, sup *supervisor.Supervisor) (*pluginService, error) {
	cacheDir := cfg.Plugins.CacheDir
	if cacheDir == "" {
		if path, ok := strings.CutPrefix(cfg.DatabaseURL, "sqlite:"); ok && path != ":memory:" {
			cacheDir = filepath.Join(filepath.Dir(path), "wasm-cache")
		}
	}
	host, err := wasmhost.New(ctx, wasmhost.Config{CacheDir: cacheDir, MemoryLimitMB: cfg.Plugins.MemoryLimitMB, MemoryReserveMB: cfg.Plugins.MemoryReserveMB, CallTimeout: cfg.Plugins.CallTimeout, Logger: log})
	if err != nil {
		return nil, err
	}
	sup.OnStop("plugin host", host.Close)
	mgr := pluginmgr.New(host, st, cfg.Plugins.Dir, log)
	if err := mgr.Sync(ctx); err != nil {
		return nil, err
	}
	sup.Go("plugin manager", func(ctx context.Context) error {
		mgr.Run(ctx, 2*time.Second)
		return nil
	}, nil)
	return &pluginService{host: host, mgr: mgr, st: st, log: log}, nil
}

// Transformer adapts the manager to the dispatcher.
func (p *pluginService) Transformer() delivery.Transformer { return plugindelivery.Transformer(p.mgr) }

func (p *pluginService) AdminRoutes() []func(*gin.RouterGroup) {
	exists := func(ctx context.Context, id int64) error { _, err := p.st.Webhook(ctx, id); return err }
	return []func(*gin.RouterGroup){httpapi.PluginRoutes(p.mgr, exists, p.log)}
}

func pluginCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return wasmhost.RunCLI(ctx, args, stdout, stderr)
}
