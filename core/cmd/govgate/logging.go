package main

import (
	"io"
	"log/slog"
	"strings"
)

// newLogger returns the process logger. Attributes whose key names a secret
// are redacted whatever their value, as a second line of defence: no code
// path is meant to log one.
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		k := strings.ToLower(a.Key)
		if strings.Contains(k, "secret") || strings.Contains(k, "token") || strings.Contains(k, "password") || k == "authorization" {
			return slog.String(a.Key, "[redacted]")
		}
		return a
	}}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
