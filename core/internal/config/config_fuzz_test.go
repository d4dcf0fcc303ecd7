package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/config"
)

// FuzzLoad gives Load any file and one environment override: it must not
// panic, must name "config" in every error, and what it accepts must stay
// valid when validated again (Validate fills defaults and must be stable).
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"govgate.yaml", "mainnet.example.yaml"} {
		if raw, err := os.ReadFile(filepath.Join("..", "..", "..", "configs", name)); err == nil {
			f.Add(string(raw), "GOVGATE_DELIVERY_SCHEDULE", "1s,2s")
		}
	}
	f.Add("delivery: {timeout: -1s}", "GOVGATE_SHUTDOWN_TIMEOUT", "3s")
	f.Add("daos: [{slug: x, name: y, chain_id: 1, governor: '0x408ED6354d4973f66138C91495F2f2FCbd8724C3', kind: oz-governor}]", "", "")
	f.Add("chains: [{id: 1, rpc: [':']}]\nindexer: {ending_soon: [1h]}", "GOVGATE_DELIVERY_WORKERS", "x")
	f.Add("{", "", "")
	f.Fuzz(func(t *testing.T, yaml, key, value string) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, true, func(k string) string {
			if k == key {
				return value
			}
			return ""
		})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config") {
				t.Fatalf("error %q does not say it is about the configuration", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("a loaded configuration fails validation again: %v", err)
		}
	})
}
