package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/config"
)

// Every example configuration in configs/ must load and validate.
func TestExampleConfigsLoad(t *testing.T) {
	files, _ := filepath.Glob("../../../configs/*.yaml")
	if len(files) < 2 {
		t.Fatalf("found %d example configurations", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := config.Load(f, true, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.DAOs) == 0 {
				t.Fatal("no DAOs")
			}
		})
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	env := map[string]string{
		"GOVGATE_DATABASE_URL": "postgres://u:p@db/govgate", "GOVGATE_API_ADDR": "0.0.0.0:9000",
		"GOVGATE_WEBHOOKS_ADDR": "0.0.0.0:9001", "GOVGATE_ADMIN_ADDR": "0.0.0.0:9002", "GOVGATE_ADMIN_TOKEN": "t",
		"GOVGATE_DELIVERY_ALLOW_PRIVATE": "true", "GOVGATE_DELIVERY_SCHEDULE": "1s, 2s", "GOVGATE_ADMIN_SECURE_COOKIES": "1",
		"GOVGATE_SHUTDOWN_TIMEOUT": "7s",
	}
	cfg, err := config.Load("", false, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != env["GOVGATE_DATABASE_URL"] || cfg.API.Addr != "0.0.0.0:9000" || cfg.Webhooks.Addr != "0.0.0.0:9001" ||
		cfg.Admin.Addr != "0.0.0.0:9002" || cfg.Admin.Token != "t" || !cfg.Delivery.AllowPrivate || len(cfg.Delivery.Schedule) != 2 || !cfg.Admin.SecureCookies || cfg.ShutdownTimeout != 7*time.Second {
		t.Fatalf("overrides not applied: %+v", cfg)
	}
}

// A bad setting stops govgate with the field named.
func TestValidationNamesTheField(t *testing.T) {
	for _, tc := range []struct{ name, yaml, env, want string }{
		{"database url", "", "GOVGATE_DATABASE_URL=mysql://x", "database_url"},
		{"listener", "api: {addr: nope}", "", "api.addr"},
		{"bad bool", "", "GOVGATE_DELIVERY_ALLOW_PRIVATE=maybe", "GOVGATE_DELIVERY_ALLOW_PRIVATE"},
		{"dao slug", "daos: [{slug: Bad_Slug, name: x, chain_id: 1, governor: '0x408ED6354d4973f66138C91495F2f2FCbd8724C3', kind: oz-governor}]", "", "daos[0].slug"},
		{"dao kind", "daos: [{slug: ok, name: x, chain_id: 1, governor: '0x408ED6354d4973f66138C91495F2f2FCbd8724C3', kind: alpha}]", "", "daos[0].kind"},
		{"dao notify both", "daos: [{slug: ok, name: x, chain_id: 1, governor: '0x408ED6354d4973f66138C91495F2f2FCbd8724C3', kind: governor-alpha, notify_history: true, notify_from_block: 5}]", "", "daos[0].notify_from_block"},
		{"dao notify below start", "daos: [{slug: ok, name: x, chain_id: 1, governor: '0x408ED6354d4973f66138C91495F2f2FCbd8724C3', kind: oz-governor, start_block: 10, notify_from_block: 5}]", "", "daos[0].notify_from_block"},
		{"ending soon lead", "indexer: {ending_soon: [1h, 10ms]}", "", "ending_soon"},
		{"dao governor", "daos: [{slug: ok, name: x, chain_id: 1, governor: '0x12', kind: oz-governor}]", "", "daos[0].governor"},
		{"unknown field", "delivery: {timeuot: 1s}", "", "timeuot"},
		{"chain without rpc", "chains: [{id: 1, name: x}]", "", "chains[0]"},
		{"jitter", "delivery: {jitter: 2}", "", "delivery.jitter"},
		{"shutdown timeout", "shutdown_timeout: 0s", "", "shutdown_timeout"},
		{"shutdown timeout variable", "", "GOVGATE_SHUTDOWN_TIMEOUT=soon", "GOVGATE_SHUTDOWN_TIMEOUT"},
		{"plugin memory reserve over the limit", "plugins: {memory_limit_mb: 8, memory_reserve_mb: 12}", "", "plugins.memory_reserve_mb"},
		{"tracing without endpoint", "tracing: {enabled: true}", "", "tracing.endpoint"},
		{"tracing ratio", "tracing: {enabled: true, endpoint: 'http://127.0.0.1:4318', sample_ratio: 2}", "", "tracing.sample_ratio"},
		{"tracing header", "", "GOVGATE_TRACING_TRACEPARENT_HEADER=sometimes", "GOVGATE_TRACING_TRACEPARENT_HEADER"},
		{"decode abi dir", "decode: {abi_dir: /nonexistent/abis}", "", "decode.abi_dir"},
		{"decode signatures file", "", "GOVGATE_DECODE_SIGNATURES_FILE=/nonexistent/sigs.txt", "decode.signatures_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(path, []byte(tc.yaml), 0o600)
			k, v, _ := strings.Cut(tc.env, "=")
			_, err := config.Load(path, true, func(name string) string {
				if name == k {
					return v
				}
				return ""
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to name %q", err, tc.want)
			}
		})
	}
}

// The standard OTEL_ variables turn tracing on and off, whatever the file says.
func TestTracingFollowsTheOTELVariables(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		want       bool
	}{
		{"off by default", "", nil, false},
		{"endpoint variable", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"traces endpoint variable", "", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"file", "tracing: {enabled: true, endpoint: 'http://127.0.0.1:4318'}", nil, true},
		{"sdk disabled", "tracing: {enabled: true, endpoint: 'http://127.0.0.1:4318'}", map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			os.WriteFile(path, []byte(tc.yaml), 0o600)
			cfg, err := config.Load(path, true, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Tracing.Enabled != tc.want {
				t.Fatalf("tracing enabled = %v, want %v", cfg.Tracing.Enabled, tc.want)
			}
		})
	}
}
