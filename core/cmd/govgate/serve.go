package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/config"
	"github.com/govgate/govgate/core/internal/delivery"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/core/internal/ssrf"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/supervisor"
	"github.com/govgate/govgate/core/internal/tracing"
	"github.com/govgate/govgate/core/internal/webui"
)

// DefaultConfigPath is read when --config is not given; it may be absent.
const DefaultConfigPath = "configs/govgate.yaml"

type onlyFlag map[string]bool

func (o onlyFlag) String() string { return strings.Join(keys(o), ",") }
func (o onlyFlag) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		switch part {
		case "api", "webhooks", "admin":
			o[part] = true
		default:
			return fmt.Errorf("want api, webhooks or admin, got %q", part)
		}
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// serve runs govgate until ctx ends. With dev it first starts an in-process
// chain and points the configuration at it. Every part runs under one
// supervisor, which stops them in the reverse of the order they started
// (listeners, indexers, the dispatcher, plugins, the store) within
// shutdown_timeout, whatever the database's state.
func serve(ctx context.Context, args []string, stderr io.Writer, dev bool) error {
	name := "serve"
	if dev {
		name = "dev"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (default "+DefaultConfigPath+" when present)")
	only := onlyFlag{}
	fs.Var(only, "only", "run only these listeners: api, webhooks, admin (repeatable); the dispatcher runs with webhooks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	path, mustExist := *cfgPath, true
	if path == "" {
		path, mustExist = DefaultConfigPath, false
	}
	cfg, err := config.Load(path, mustExist, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	slog.SetDefault(log)
	if len(only) == 0 {
		only = onlyFlag{"api": true, "webhooks": true, "admin": true}
	}
	sup := supervisor.New(ctx, log)
	// A start that fails part way stops what it had started.
	defer sup.Stop(cfg.ShutdownTimeout)

	var devEnvironment *devEnv
	if dev {
		if devEnvironment, err = startDevChain(ctx, &cfg, log, sup); err != nil {
			return err
		}
	}

	box, err := secretBox(cfg, log)
	if err != nil {
		return err
	}
	storeOpts, tracer := store.Options{Logger: log}, trace.Tracer(nil)
	if cfg.Tracing.Enabled {
		tr, err := tracing.Start(ctx, tracing.Config{Endpoint: cfg.Tracing.Endpoint, SampleRatio: cfg.Tracing.SampleRatio, ServiceVersion: version, Logger: log})
		if err != nil {
			return err
		}
		// Flush what is queued, last; a kill loses it, not the trace: the
		// traceparent is stored, and later attempts join it.
		sup.OnStop("tracing", tr.Shutdown)
		storeOpts.Tracer, tracer = tr, tr.Tracer()
		log.Info("tracing on: OTLP/HTTP", "endpoint", tracing.EndpointForLog(cfg.Tracing.Endpoint), "traceparent_header", cfg.Tracing.TraceparentHeader)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, box, storeOpts)
	if err != nil {
		return err
	}
	sup.OnStop("store", func(context.Context) error { return st.Close() })
	log.Info("store ready", "dialect", string(st.Dialect()))
	if devEnvironment != nil {
		if err := devEnvironment.register(ctx, st); err != nil {
			return err
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// The dispatcher runs wherever the webhook service runs: a deployment
	// that splits listeners still delivers from the same queue, and several
	// processes share the queue safely.
	var (
		wake    func()
		handoff store.Handoff
	)
	plugins, err := startPlugins(ctx, cfg, log, st, sup)
	if err != nil {
		return err
	}
	if only["webhooks"] {
		client, err := ssrf.NewClient(ssrf.ClientOptions{AllowPrivate: cfg.Delivery.AllowPrivate, CAFile: cfg.Delivery.CAFile, Timeout: cfg.Delivery.Timeout, MaxIdleConnsPerHost: cfg.Delivery.PerWebhookConcurrency})
		if err != nil {
			return fmt.Errorf("delivery client: %w", err)
		}
		metrics := delivery.NewMetrics(reg)
		d, err := delivery.New(delivery.Config{
			Queue: st, Client: client, Transformer: plugins.Transformer(), Logger: log, Metrics: metrics,
			UserAgent: "govgate/" + version + " (+https://github.com/govgate/govgate)",
			Timeout:   cfg.Delivery.Timeout, Workers: cfg.Delivery.Workers, PerWebhookConcurrency: cfg.Delivery.PerWebhookConcurrency,
			Schedule: cfg.Delivery.Schedule, Jitter: cfg.Delivery.Jitter, MaxRetryAfter: cfg.Delivery.MaxRetryAfter,
			Lease: cfg.Delivery.Lease, DisableAfter: cfg.Delivery.DisableAfter, BatchSize: cfg.Delivery.BatchSize, PollInterval: cfg.Delivery.PollInterval,
			Backlog: cfg.Delivery.Backlog,
			Tracer:  tracer, TraceHeader: cfg.Tracing.TraceparentHeader,
		})
		if err != nil {
			return err
		}
		wake, handoff = d.Wake, d
		// Stopping, it drains: attempts under way end and are recorded, until
		// the shutdown's deadline.
		sup.Go("dispatcher", d.Run, d.Shutdown)
		sup.Go("queue gauges", func(ctx context.Context) error {
			metrics.RefreshQueueGauges(ctx, st, 5*time.Second, log)
			return nil
		}, nil)
		if cfg.Delivery.AllowPrivate {
			log.Warn("GOVGATE_DELIVERY_ALLOW_PRIVATE=true: webhooks may target loopback and private addresses; use only for local development and tests")
		}
	}
	producer := &wakingStore{Store: st, wake: wake, handoff: handoff}

	chainSvc, err := startChains(ctx, cfg, log, st, producer, reg, sup)
	if err != nil {
		return err
	}

	listen := func(name, addr string, h http.Handler) error {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s listener: %w", name, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		log.Info("listening", "listener", name, "addr", "http://"+l.Addr().String())
		sup.Go(name+" listener", func(context.Context) error {
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}, shutdownServer(srv))
		return nil
	}
	if only["api"] {
		if err := listen("api", cfg.API.Addr, httpapi.NewAPI(httpapi.APIConfig{DAOs: chainSvc.DAOs(), Health: chainSvc.Health(), Logger: log, Routes: chainSvc.APIRoutes(), Governor: chainSvc.Governor})); err != nil {
			return err
		}
	}
	if only["webhooks"] {
		h := httpapi.NewWebhookService(httpapi.WebhookServiceConfig{
			Registry: st, NewSecret: signing.NewSecret, AllowPrivate: cfg.Delivery.AllowPrivate,
			RatePerMinute: cfg.Registration.RatePerMinute, Burst: cfg.Registration.Burst, Logger: log,
			DAOs: cfg.DAOs, AdminToken: cfg.Admin.Token,
		})
		if err := listen("webhooks", cfg.Webhooks.Addr, h); err != nil {
			return err
		}
	}
	if only["admin"] {
		if cfg.Admin.Token == "" {
			log.Warn("GOVGATE_ADMIN_TOKEN is not set: the admin API and page refuse every request")
		}
		admin := adminHandler(cfg, log, producer, reg, plugins, chainSvc)
		if err := listen("admin", cfg.Admin.Addr, admin); err != nil {
			return err
		}
	}
	log.Info("govgate started", "version", version, "daos", len(chainSvc.DAOs().DAOs()), "listeners", only.String())
	return sup.Wait(ctx, cfg.ShutdownTimeout)
}

// shutdownServer is a listener's stop: it stops accepting and waits for the
// requests under way until ctx ends, then closes their connections.
func shutdownServer(srv *http.Server) func(context.Context) error {
	return func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, srv.Close())
		}
		return err
	}
}

// wakingStore hands a new notification's deliveries to the local dispatcher
// as far as it has room (the store wakes it for the rest), so that delivery
// starts at once rather than at the next poll.
type wakingStore struct {
	*store.Store
	wake    func()
	handoff store.Handoff // nil: this process does not deliver
}

func (w *wakingStore) CreateNotification(ctx context.Context, n core.Notification, source string) (bool, error) {
	return w.Store.CreateNotificationHandoff(ctx, n, source, w.handoff)
}

// Wake wakes the dispatcher after a producer stored notifications itself.
func (w *wakingStore) Wake() {
	if w.wake != nil {
		w.wake()
	}
}

// secretBox returns the cipher of webhook secrets: from GOVGATE_SECRET_KEY,
// or, with SQLite only, from a key file beside the database, created on
// first start.
func secretBox(cfg config.Config, log *slog.Logger) (*secrets.Box, error) {
	if cfg.SecretKey != "" {
		key, err := secrets.ParseKey(cfg.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.EnvSecretKey, err)
		}
		return secrets.New(key)
	}
	path, ok := strings.CutPrefix(cfg.DatabaseURL, "sqlite:")
	if !ok {
		return nil, fmt.Errorf("%s is required with PostgreSQL: set it to the base64 of 32 random bytes (for example: openssl rand -base64 32) and keep it safe; it encrypts webhook secrets", config.EnvSecretKey)
	}
	if path == ":memory:" {
		return nil, fmt.Errorf("%s is required with an in-memory database", config.EnvSecretKey)
	}
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(filepath.Dir(path), "govgate.key"), log)
	if err != nil {
		return nil, err
	}
	return secrets.New(key)
}

func adminHandler(cfg config.Config, log *slog.Logger, st httpapi.AdminStore, reg *prometheus.Registry, plugins *pluginService, chains *chainService) http.Handler {
	ac := httpapi.AdminConfig{
		Store: st, DAOs: chains.DAOs(), DAOAdmin: chains, Token: cfg.Admin.Token, Logger: log,
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Routes:  append(plugins.AdminRoutes(), chains.AdminRoutes()...),
	}
	// The page calls the admin API in-process, and the API serves the page:
	// api forwards to the handler built below.
	var admin http.Handler
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { admin.ServeHTTP(w, r) })
	// The page reads proposals from the REST API's routes, in-process too.
	rest := httpapi.NewAPI(httpapi.APIConfig{DAOs: chains.DAOs(), Health: chains.Health(), Logger: log, Routes: chains.APIRoutes(), Governor: chains.Governor})
	if ui, err := webui.New(webui.Config{API: api, REST: rest, Token: cfg.Admin.Token, Logger: log, SecureCookies: cfg.Admin.SecureCookies}); err != nil {
		log.Error("admin page disabled; the admin API still runs", "err", err)
	} else {
		ac.UI, ac.Authorized = ui, ui.Authorized
	}
	admin = httpapi.NewAdmin(ac)
	return admin
}
