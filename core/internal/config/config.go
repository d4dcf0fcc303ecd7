// Package config loads govgate's static configuration: a YAML file with
// defaults, overridden by GOVGATE_* environment variables, validated once at
// start with errors that name the bad field. What changes at run time
// (webhooks, plugin chains) lives in the store, not here.
package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/calldata"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/health"
	"github.com/govgate/govgate/core/internal/indexer"
)

// Config is govgate's static configuration.
type Config struct {
	// DatabaseURL is sqlite:PATH (the embedded database) or
	// postgres://user:pass@host/db.
	DatabaseURL string `yaml:"database_url" env:"GOVGATE_DATABASE_URL"`
	// API is the REST API's listener (host:port).
	API Listener `yaml:"api" env:"GOVGATE_API_ADDR"`
	// Webhooks is the webhook service's listener (host:port).
	Webhooks Listener `yaml:"webhooks" env:"GOVGATE_WEBHOOKS_ADDR"`
	// Admin is the admin listener: the admin API, the admin page and /metrics.
	Admin Admin `yaml:"admin"`
	// SecretKey encrypts webhook secrets at rest (AES-256-GCM): base64 of 32
	// bytes, such as the output of openssl rand -base64 32.
	SecretKey string `yaml:"secret_key" env:"GOVGATE_SECRET_KEY"` // base64 of 32 bytes; prefer the variable
	// LogLevel is debug, info, warn or error.
	LogLevel  string `yaml:"log_level" env:"GOVGATE_LOG_LEVEL"`
	LogFormat string `yaml:"log_format" env:"GOVGATE_LOG_FORMAT"` // text or json
	// ShutdownTimeout bounds how long govgate takes to stop after SIGTERM or
	// SIGINT, whatever the database's state: listeners drain, attempts under
	// way finish and their results are recorded until then; what cannot be
	// recorded by then is left to its lease (and the log says how many).
	// Keep it under the orchestrator's grace period (Kubernetes: 30 s).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout" env:"GOVGATE_SHUTDOWN_TIMEOUT"`

	// Registration limits POST /webhooks per client IP.
	Registration Registration `yaml:"registration"`
	// Delivery configures the dispatcher: timeouts, workers, retries.
	Delivery Delivery `yaml:"delivery"`
	// Plugins configures the WebAssembly plugin host.
	Plugins Plugins `yaml:"plugins"`
	// Chains are the EVM chains govgate reads, each with its RPC upstreams.
	Chains []chain.ChainConfig `yaml:"chains"`
	// DAOs are the governors govgate follows.
	DAOs []core.DAO `yaml:"daos"`
	// Indexer tunes how chains are read.
	Indexer indexer.Config `yaml:"indexer"`
	// Health tunes the health documents and their thresholds.
	Health health.Config `yaml:"health"`
	// Tracing exports OpenTelemetry traces (see docs/tracing.md).
	Tracing Tracing `yaml:"tracing"`
	// Decode names the operator's ABIs and signatures, with which
	// proposals' calls decode beyond the embedded curated set (see
	// docs/api.md, Actions). Read at start.
	Decode calldata.Config `yaml:"decode"`
}

// Tracing configures OpenTelemetry traces, exported over OTLP/HTTP: one
// trace per notification, from its log through each plugin to every
// delivery attempt. The standard OTEL_* variables apply: setting
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns
// tracing on, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turns it
// off, and OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES and the exporter's headers, TLS and timeout
// settings are read by the OpenTelemetry SDK itself.
type Tracing struct {
	// Enabled turns tracing on; the OTEL_* variables can turn it on or off.
	Enabled bool `yaml:"enabled"`
	// Endpoint is the collector's OTLP/HTTP base URL, such as
	// http://127.0.0.1:4318 (spans go to its /v1/traces);
	// OTEL_EXPORTER_OTLP_ENDPOINT takes precedence.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the fraction of notifications traced, in (0, 1].
	SampleRatio float64 `yaml:"sample_ratio"`
	// TraceparentHeader sends each attempt's W3C traceparent header with
	// the delivery, so that a receiver's own spans join the trace.
	TraceparentHeader bool `yaml:"traceparent_header" env:"GOVGATE_TRACING_TRACEPARENT_HEADER"`

	envEndpoint bool // an OTEL_ endpoint variable is set
}

// Listener is one HTTP listener. Each listener's address has a variable of
// its own (GOVGATE_API_ADDR, GOVGATE_WEBHOOKS_ADDR), named on the field that
// holds the Listener.
type Listener struct {
	Addr string `yaml:"addr"`
}

// Admin configures the admin listener and its bearer token.
type Admin struct {
	// Addr is the admin listener (host:port).
	Addr string `yaml:"addr" env:"GOVGATE_ADMIN_ADDR"`
	// Token is the bearer token of the admin API and the admin page's
	// sign-in; unset refuses every admin request. Prefer the variable.
	Token string `yaml:"token" env:"GOVGATE_ADMIN_TOKEN"`
	// SecureCookies marks the admin page's session cookie Secure even over
	// plain HTTP, for deployments where a proxy terminates TLS. Requests that
	// arrive over TLS always get a Secure cookie.
	SecureCookies bool `yaml:"secure_cookies" env:"GOVGATE_ADMIN_SECURE_COOKIES"`
}

// Registration configures the webhook registration endpoint.
type Registration struct {
	// RatePerMinute is how many registration requests one client IP may make
	// per minute; Burst how many at once.
	RatePerMinute float64 `yaml:"rate_per_minute" env:"GOVGATE_REGISTRATION_RATE_PER_MINUTE"`
	// Burst is how many registrations one client IP may make at once.
	Burst int `yaml:"burst"`
}

// Delivery configures the dispatcher.
type Delivery struct {
	// AllowPrivate lets webhooks target loopback and private addresses: for
	// development and tests only.
	AllowPrivate bool `yaml:"allow_private" env:"GOVGATE_DELIVERY_ALLOW_PRIVATE"`
	// CAFile is a PEM file of extra CAs trusted for receivers.
	CAFile string `yaml:"ca_file" env:"GOVGATE_DELIVERY_CA_FILE"`
	// Timeout bounds one delivery attempt.
	Timeout time.Duration `yaml:"timeout" env:"GOVGATE_DELIVERY_TIMEOUT"`
	// Workers is how many attempts one process makes at once. Each worker
	// also spends time of its own per attempt (signing, the plugin chain,
	// handing the result over) while its request is not on the wire, so
	// there are twice as many as a busy receiver's connection needs.
	Workers int `yaml:"workers" env:"GOVGATE_DELIVERY_WORKERS"`
	// PerWebhookConcurrency caps in-flight attempts to one webhook so one slow
	// receiver cannot starve the others.
	PerWebhookConcurrency int `yaml:"per_webhook_concurrency"`
	// Schedule is the wait before each retry: len(Schedule)+1 attempts in all.
	Schedule []time.Duration `yaml:"schedule" env:"GOVGATE_DELIVERY_SCHEDULE"`
	// Jitter is the fraction (0..1) by which each wait is randomly shortened or lengthened.
	Jitter float64 `yaml:"jitter"`
	// MaxRetryAfter bounds how far a receiver's Retry-After may push an attempt.
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
	// Lease is how long a claimed delivery stays with its worker before
	// another may take it over.
	Lease time.Duration `yaml:"lease"`
	// DisableAfter deactivates a webhook whose deliveries have all failed for
	// this long (0 disables the rule).
	DisableAfter time.Duration `yaml:"disable_after"`
	// BatchSize is how many deliveries one claim takes from the queue.
	BatchSize int `yaml:"batch_size"`
	// PollInterval is how often an idle dispatcher looks for due deliveries.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Backlog is how many fresh deliveries of notifications this process
	// accepts may go straight to its own workers, stored in flight under a
	// lease, beyond what it claims from the queue (0: none; all go through
	// the queue).
	Backlog int `yaml:"backlog"`
}

// Plugins configures the WebAssembly plugin host.
type Plugins struct {
	// Dir is a directory of .wasm plugins loaded at start.
	Dir string `yaml:"dir" env:"GOVGATE_PLUGINS_DIR"`
	// CacheDir holds wazero's compilation cache; empty: wasm-cache beside a
	// SQLite database, none (compile at every start) with PostgreSQL.
	CacheDir string `yaml:"cache_dir"`
	// CallTimeout bounds one plugin call; a call past it fails.
	CallTimeout time.Duration `yaml:"call_timeout"`
	// MemoryLimitMB caps one plugin instance's memory.
	MemoryLimitMB uint32 `yaml:"memory_limit_mb"`
	// MemoryReserveMB is the memory a Go plugin's instance starts with
	// (wasmhost.Config.MemoryReserveMB); 0: 8, or MemoryLimitMB if lower.
	MemoryReserveMB uint32 `yaml:"memory_reserve_mb"`
}

// Default returns the configuration used when a setting is absent.
func Default() Config {
	return Config{
		DatabaseURL: "sqlite:data/govgate.db",
		API:         Listener{Addr: "127.0.0.1:8080"},
		Webhooks:    Listener{Addr: "127.0.0.1:8081"},
		Admin:       Admin{Addr: "127.0.0.1:8082"},
		LogLevel:    "info",
		LogFormat:   "text",
		// Enough for the attempts under way to end (delivery.timeout, 10 s)
		// and be recorded, within Kubernetes's default 30 s grace period.
		ShutdownTimeout: 25 * time.Second,
		Registration:    Registration{RatePerMinute: 60, Burst: 20},
		Delivery: Delivery{
			Timeout:               10 * time.Second,
			Workers:               64,
			PerWebhookConcurrency: 8,
			// Svix's schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
			Schedule:      []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour},
			Jitter:        0.2,
			MaxRetryAfter: time.Hour,
			Lease:         time.Minute,
			DisableAfter:  5 * 24 * time.Hour,
			BatchSize:     64,
			PollInterval:  time.Second,
			Backlog:       16384,
		},
		Plugins: Plugins{CallTimeout: 250 * time.Millisecond, MemoryLimitMB: 64},
		Indexer: indexer.Config{}.WithDefaults(),
		Health:  health.Config{}.WithDefaults(),
		Tracing: Tracing{SampleRatio: 1},
	}
}

// Load reads the YAML file at path over the defaults (a missing file is an
// error only when mustExist), applies environment overrides from getenv and
// validates the result.
func Load(path string, mustExist bool, getenv func(string) string) (Config, error) {
	cfg := Default()
	if path != "" {
		raw, err := os.ReadFile(path)
		switch {
		case err == nil:
			dec := yaml.NewDecoder(strings.NewReader(string(raw)))
			dec.KnownFields(true)
			if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
				return Config{}, fmt.Errorf("config %s: %w", path, err)
			}
		case errors.Is(err, os.ErrNotExist) && !mustExist:
		default:
			return Config{}, fmt.Errorf("config: %w", err)
		}
	}
	if err := cfg.applyEnv(getenv); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Environment variables: each overrides one setting.
const (
	EnvDatabaseURL        = "GOVGATE_DATABASE_URL"
	EnvAPIAddr            = "GOVGATE_API_ADDR"
	EnvWebhooksAddr       = "GOVGATE_WEBHOOKS_ADDR"
	EnvAdminAddr          = "GOVGATE_ADMIN_ADDR"
	EnvAdminToken         = "GOVGATE_ADMIN_TOKEN"
	EnvSecretKey          = "GOVGATE_SECRET_KEY"
	EnvDeliveryAllowPriv  = "GOVGATE_DELIVERY_ALLOW_PRIVATE"
	EnvDeliveryCAFile     = "GOVGATE_DELIVERY_CA_FILE"
	EnvDeliveryTimeout    = "GOVGATE_DELIVERY_TIMEOUT"
	EnvDeliveryWorkers    = "GOVGATE_DELIVERY_WORKERS"
	EnvDeliverySchedule   = "GOVGATE_DELIVERY_SCHEDULE"
	EnvAdminSecureCookies = "GOVGATE_ADMIN_SECURE_COOKIES"
	EnvLogLevel           = "GOVGATE_LOG_LEVEL"
	EnvLogFormat          = "GOVGATE_LOG_FORMAT"
	EnvShutdownTimeout    = "GOVGATE_SHUTDOWN_TIMEOUT"
	EnvPluginsDir         = "GOVGATE_PLUGINS_DIR"
	EnvRegistrationPerMin = "GOVGATE_REGISTRATION_RATE_PER_MINUTE"
	EnvTracingHeader      = "GOVGATE_TRACING_TRACEPARENT_HEADER"
)

// applyEnv sets every field that carries an env tag from its variable, when
// the variable is set; the OTEL_* variables turn tracing on or off.
func (c *Config) applyEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := applyEnvTags(reflect.ValueOf(c).Elem(), getenv); err != nil {
		return err
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		c.Tracing.Enabled, c.Tracing.envEndpoint = true, true
	}
	if v := getenv("OTEL_SDK_DISABLED"); strings.EqualFold(v, "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		c.Tracing.Enabled = false
	}
	return nil
}

// applyEnvTags walks v's fields: a field with an env tag whose variable is
// set takes its value (a Listener field takes it as its address); a struct
// field without one is walked in turn.
func applyEnvTags(v reflect.Value, getenv func(string) string) error {
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		name := sf.Tag.Get("env")
		if name == "" {
			if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Time{}) {
				if err := applyEnvTags(f, getenv); err != nil {
					return err
				}
			}
			continue
		}
		raw := getenv(name)
		if raw == "" {
			continue
		}
		if f.Type() == reflect.TypeOf(Listener{}) {
			f = f.FieldByName("Addr")
		}
		if err := setFromEnv(f, raw); err != nil {
			return fmt.Errorf("config: %s: %w", name, err)
		}
	}
	return nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// setFromEnv parses raw into f by f's type.
func setFromEnv(f reflect.Value, raw string) error {
	switch {
	case f.Type() == durationType:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Slice && f.Type().Elem() == durationType:
		var list []time.Duration
		for _, part := range strings.Split(raw, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(part))
			if err != nil {
				return err
			}
			list = append(list, d)
		}
		f.Set(reflect.ValueOf(list))
	case f.Kind() == reflect.String:
		f.SetString(raw)
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", raw)
		}
		f.SetBool(b)
	case f.CanInt():
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return err
		}
		f.SetInt(n)
	case f.CanUint():
		n, err := strconv.ParseUint(raw, 10, 64)
		if err != nil {
			return err
		}
		f.SetUint(n)
	case f.CanFloat():
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return err
		}
		f.SetFloat(x)
	default:
		return fmt.Errorf("no environment parsing for %s", f.Type())
	}
	return nil
}

// Validate checks the configuration and names the first bad field.
func (c *Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(c.DatabaseURL, "sqlite:") && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return bad("database_url", "want sqlite:PATH or postgres://…, got %q", redactURL(c.DatabaseURL))
	}
	for _, l := range []struct{ field, addr string }{{"api.addr", c.API.Addr}, {"webhooks.addr", c.Webhooks.Addr}, {"admin.addr", c.Admin.Addr}} {
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			return bad(l.field, "want host:port, got %q", l.addr)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log_level", "want debug, info, warn or error, got %q", c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return bad("log_format", "want text or json, got %q", c.LogFormat)
	}
	if c.ShutdownTimeout <= 0 {
		return bad("shutdown_timeout", "must be positive")
	}
	if c.Registration.RatePerMinute <= 0 || c.Registration.Burst <= 0 {
		return bad("registration", "rate_per_minute and burst must be positive")
	}
	d := c.Delivery
	switch {
	case d.Timeout <= 0:
		return bad("delivery.timeout", "must be positive")
	case d.Workers <= 0:
		return bad("delivery.workers", "must be positive")
	case d.PerWebhookConcurrency <= 0:
		return bad("delivery.per_webhook_concurrency", "must be positive")
	case d.Jitter < 0 || d.Jitter >= 1:
		return bad("delivery.jitter", "must be in [0, 1)")
	case d.Lease < 2*d.Timeout:
		return bad("delivery.lease", "must be at least twice delivery.timeout (%s)", d.Timeout)
	case d.BatchSize <= 0:
		return bad("delivery.batch_size", "must be positive")
	case d.PollInterval <= 0:
		return bad("delivery.poll_interval", "must be positive")
	case d.Backlog < 0:
		return bad("delivery.backlog", "must not be negative")
	}
	if p := c.Plugins; p.MemoryReserveMB > p.MemoryLimitMB && p.MemoryLimitMB > 0 {
		return bad("plugins.memory_reserve_mb", "must not be over plugins.memory_limit_mb (%d)", p.MemoryLimitMB)
	}
	for i, w := range d.Schedule {
		if w <= 0 {
			return bad(fmt.Sprintf("delivery.schedule[%d]", i), "must be positive")
		}
	}
	chains := map[uint64]bool{}
	for i := range c.Chains {
		c.Chains[i] = c.Chains[i].WithDefaults()
		ch := c.Chains[i]
		field := fmt.Sprintf("chains[%d]", i)
		if ch.ID == 0 {
			return bad(field+".id", "required")
		}
		if chains[ch.ID] {
			return bad(field+".id", "chain %d listed twice", ch.ID)
		}
		chains[ch.ID] = true
		if err := ch.Validate(); err != nil {
			return fmt.Errorf("config: %s: %w", field, err)
		}
	}
	if t := c.Tracing; t.Enabled {
		switch {
		case t.Endpoint == "" && !t.envEndpoint:
			return bad("tracing.endpoint", "required when tracing is enabled (or set OTEL_EXPORTER_OTLP_ENDPOINT)")
		case t.Endpoint != "" && !strings.HasPrefix(t.Endpoint, "http://") && !strings.HasPrefix(t.Endpoint, "https://"):
			return bad("tracing.endpoint", "want an http:// or https:// URL, got %q", redactURL(t.Endpoint))
		case t.SampleRatio <= 0 || t.SampleRatio > 1:
			return bad("tracing.sample_ratio", "must be in (0, 1]")
		}
	}
	c.Indexer = c.Indexer.WithDefaults()
	if err := c.Indexer.Validate(); err != nil {
		return fmt.Errorf("config: indexer: %w", err)
	}
	c.Health = c.Health.WithDefaults()
	if err := c.Health.Validate(); err != nil {
		return fmt.Errorf("config: health: %w", err)
	}
	if err := c.Decode.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	slugs := map[string]bool{}
	for i, dao := range c.DAOs {
		field := fmt.Sprintf("daos[%d]", i)
		if fe := dao.Check(); fe != nil {
			return bad(field+"."+fe.Field, "%s", fe.Message)
		}
		if slugs[dao.Slug] {
			return bad(field+".slug", "%q listed twice", dao.Slug)
		}
		slugs[dao.Slug] = true
	}
	return nil
}

// redactURL hides credentials in a database URL before it reaches an error.
func redactURL(s string) string {
	if i := strings.Index(s, "@"); i >= 0 {
		if j := strings.Index(s, "://"); j >= 0 && j < i {
			return s[:j+3] + "…@" + s[i+1:]
		}
	}
	return s
}
