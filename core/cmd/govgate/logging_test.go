package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestOnlySecretsAreRedacted logs a line with secrets and with what an
// operator reads logs for: only the secrets are hidden.
func TestOnlySecretsAreRedacted(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&buf, "info", "text")
	log.Info("governor", "dao", "ens", "voting_token", "0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", "token", "0xC18360217D8F7Ab5e7c516566761Ea12Ce7F9D72",
		"admin_token", "hunter2", "Authorization", "Bearer hunter3", "secret", "hunter4", "webhook_secret", "hunter5", "password", "hunter6",
		"database_url", "postgres://u:hunter7@db/g", "api_key", "hunter8")
	out := buf.String()
	for _, kept := range []string{"0x323A76393544d5ecca80cd6ef2A560C6a395b7E3", "0xC18360217D8F7Ab5e7c516566761Ea12Ce7F9D72", "dao=ens"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%s was redacted: %s", kept, out)
		}
	}
	for _, secret := range []string{"hunter2", "hunter3", "hunter4", "hunter5", "hunter6", "hunter7", "hunter8"} {
		if strings.Contains(out, secret) {
			t.Errorf("%s leaked: %s", secret, out)
		}
	}
}
