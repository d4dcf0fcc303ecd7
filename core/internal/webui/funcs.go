package webui

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"strings"
	"time"
)

// assetVersion is a hash of the embedded static files: asset URLs carry it
// so that browsers refetch them after an upgrade despite caching.
var assetVersion = func() string {
	h := sha256.New()
	err := fs.WalkDir(staticFS, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		panic("embedded static files: " + err.Error()) // a broken build, not a state to serve in
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

func funcs(now func() time.Time) template.FuncMap {
	return template.FuncMap{
		"asset": func(name string) string { return "/admin/static/" + name + "?v=" + assetVersion },
		"ago":   func(t any) string { return ago(t, now()) },
		"when": func(t any) string {
			if tt, ok := timeOf(t); ok {
				return tt.UTC().Format("2006-01-02 15:04:05 UTC")
			}
			return ""
		},
		"iso": func(t any) string {
			if tt, ok := timeOf(t); ok {
				return tt.UTC().Format(time.RFC3339)
			}
			return ""
		},
		"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
		"unix":    func(s uint64) string { return time.Unix(int64(s), 0).UTC().Format("2006-01-02 15:04:05 UTC") },
		"bytes":   humanBytes,
		"seconds": seconds,
		"ms": func(v float64) string {
			if v < 10 {
				return fmt.Sprintf("%.1f ms", v)
			}
			return fmt.Sprintf("%.0f ms", v)
		},
		"label":     label,
		"stateIcon": stateIcon,
		"addr":      shortAddr,
		"tone":      tone,
		"icon":      icon,
		"pretty":    func(raw json.RawMessage) string { return prettyJSON(raw) },
		"short": func(s string, n int) string {
			if len(s) <= n {
				return s
			}
			return s[:n] + "…"
		},
		"abi": func(v any) string {
			if v == nil {
				return "—"
			}
			return fmt.Sprint(v)
		},
		"join": strings.Join,
		"list": func(v ...string) []string { return v },
		"dict": func(kv ...any) map[string]any {
			m := make(map[string]any, len(kv)/2)
			for i := 0; i+1 < len(kv); i += 2 {
				m[fmt.Sprint(kv[i])] = kv[i+1]
			}
			return m
		},
		"finished": func(state any) bool {
			s := fmt.Sprint(state)
			return s != "pending" && s != "in_flight" && s != "waiting" // waiting: in an ordered webhook's line
		},
		"dash": func(s string) string {
			if s == "" {
				return "—"
			}
			return s
		},
	}
}

func timeOf(t any) (time.Time, bool) {
	switch v := t.(type) {
	case time.Time:
		return v, !v.IsZero()
	case *time.Time:
		if v != nil && !v.IsZero() {
			return *v, true
		}
	}
	return time.Time{}, false
}

func ago(t any, now time.Time) string {
	tt, ok := timeOf(t)
	if !ok {
		return "never"
	}
	d := now.Sub(tt)
	if d < 0 {
		return "in " + seconds(-d.Seconds())
	}
	if d < 5*time.Second {
		return "just now"
	}
	return seconds(d.Seconds()) + " ago"
}

// seconds renders a duration in seconds the way people read it.
func seconds(s float64) string {
	switch {
	case s < 0:
		return "—"
	case s < 1:
		return fmt.Sprintf("%.1f s", s)
	case s < 60:
		return fmt.Sprintf("%d s", int(s))
	case s < 3600:
		return fmt.Sprintf("%d min", int(s/60))
	case s < 48*3600:
		if m := int(math.Mod(s, 3600) / 60); m > 0 {
			return fmt.Sprintf("%d h %d min", int(s/3600), m)
		}
		return fmt.Sprintf("%d h", int(s/3600))
	}
	return fmt.Sprintf("%d days", int(s/86400))
}

func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// label names a state for people; tone and icon say it again in colour and
// shape, so that colour is never the only signal.
func label(state any) string {
	s := fmt.Sprint(state)
	switch s {
	case "pass":
		return "Healthy"
	case "warn":
		return "Degraded"
	case "fail":
		return "Failing"
	case "unknown", "":
		return "No data"
	case "in_flight":
		return "In flight"
	case "half-open":
		return "Half-open"
	}
	return strings.ToUpper(s[:1]) + strings.ReplaceAll(s[1:], "_", " ")
}

func tone(state any) string {
	switch fmt.Sprint(state) {
	case "pass", "succeeded", "active", "closed", "fresh", "ok", "up", "kept", "keep", "enabled":
		return "ok"
	case "warn", "pending", "in_flight", "waiting", "half-open", "syncing", "lagging", "retry", "degraded":
		return "warn"
	case "fail", "failed", "deactivated", "open", "stalled", "gone", "down", "error":
		return "bad"
	}
	return "muted"
}

func icon(state any) string {
	switch tone(state) {
	case "ok":
		return "✓"
	case "warn":
		return "!"
	case "bad":
		return "✕"
	}
	return "–"
}
