package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govgate/govgate/core/config"
	"github.com/govgate/govgate/core/httpapi"
	"github.com/govgate/govgate/core/store"
)

// chainService wires the chain gateway, the indexer and the health monitor.
type chainService struct{}

func startChains(ctx context.Context, cfg config.Config, log *slog.Logger, st *store.Store, producer *wakingStore, reg *prometheus.Registry, runBG func(string, func(context.Context) error)) (*chainService, error) {
	return &chainService{}, nil
}

func (c *chainService) Health() httpapi.HealthSource          { return nil }
func (c *chainService) APIRoutes() []func(*gin.Engine)        { return nil }
func (c *chainService) AdminRoutes() []func(*gin.RouterGroup) { return nil }

func startDevChain(ctx context.Context, cfg *config.Config, log *slog.Logger) (func(), error) {
	return nil, errors.New("dev chain: not available in this build yet")
}
