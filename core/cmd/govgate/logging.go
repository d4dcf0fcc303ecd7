package main

import (
	"io"
	"log/slog"
	"strings"
)

// secretKeys are attribute keys that name a secret: their values are
// redacted whatever they hold, as a second line of defence (no code path
// is meant to log one). Only secrets: a voting token's address or a
// notification's id are what an operator reads logs for.
var secretKeys = map[string]bool{
	"authorization": true, "cookie": true, "set-cookie": true, "password": true, "passwd": true,
	"secret": true, "secret_key": true, "private_key": true, "api_key": true, "apikey": true,
	"admin_token": true, "access_token": true, "auth_token": true, "refresh_token": true, "bearer": true,
	"session": true, "database_url": true, "dsn": true,
}

// isSecretKey reports whether an attribute key names a secret.
func isSecretKey(key string) bool {
	k := strings.ToLower(key)
	return secretKeys[k] || strings.HasSuffix(k, "_secret") || strings.HasSuffix(k, "_password") || strings.HasSuffix(k, "_private_key")
}

// newLogger returns the process logger, with the values of secretKeys
// redacted.
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if isSecretKey(a.Key) {
			return slog.String(a.Key, "[redacted]")
		}
		return a
	}}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
