package wasmhost

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/govgate/govgate/sdk/abi"
)

// Limits of plugin logging. A plugin's lines go to the call that produced
// them (Step.Logs, the CLI), to a ring of the latest lines per plugin
// (Host.Logs) and to the host's logger; the last two are rate limited so a
// chatty plugin cannot flood the gateway's log.
const (
	maxLogLine      = 1024 // bytes kept of one line
	maxCallLogLines = 32   // lines kept per call
	logRingSize     = 256  // lines kept per plugin
	logRate         = 20   // lines per second per plugin, sustained
	logBurst        = 100  // lines per plugin at once
)

// LogLine is one line a plugin logged or wrote to stdout (info) or stderr
// (warn).
type LogLine struct {
	Time    time.Time `json:"time"`
	Plugin  string    `json:"plugin"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
}

func (cs *callState) add(level abi.Level, msg string) {
	if len(msg) > maxLogLine {
		msg = msg[:maxLogLine] + "…"
	}
	if len(cs.logs) >= maxCallLogLines {
		cs.dropped++
		return
	}
	cs.logs = append(cs.logs, fmt.Sprintf("[%s] %s", level, msg))
	cs.lines = append(cs.lines, LogLine{Time: time.Now().UTC(), Level: level.String(), Message: msg})
}

// lineWriter turns a plugin's stdout or stderr into log lines.
type lineWriter struct {
	inst  *instance
	level abi.Level
	buf   []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			if len(w.buf) > maxLogLine {
				w.flush()
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 && w.inst.cur != nil {
		w.inst.cur.add(w.level, string(w.buf))
	}
	w.buf = w.buf[:0]
}

// logRing keeps a plugin's latest lines and the state of its rate limit.
type logRing struct {
	lines      [logRingSize]LogLine
	next, n    int
	tokens     float64
	last       time.Time
	suppressed int
}

// record files a call's lines under a plugin's name, as far as its rate
// limit allows.
func (h *Host) record(name string, lines []LogLine) {
	now := time.Now()
	var forward []LogLine
	h.logMu.Lock()
	r := h.logs[name]
	if r == nil {
		r = &logRing{tokens: logBurst, last: now}
		h.logs[name] = r
	}
	r.tokens = min(logBurst, r.tokens+now.Sub(r.last).Seconds()*logRate)
	r.last = now
	for _, l := range lines {
		if r.tokens < 1 {
			r.suppressed++
			continue
		}
		r.tokens--
		if r.suppressed > 0 {
			r.put(LogLine{Time: l.Time, Plugin: name, Level: "warn", Message: fmt.Sprintf("(%d lines suppressed by the rate limit)", r.suppressed)})
			r.suppressed = 0
		}
		l.Plugin = name
		r.put(l)
		forward = append(forward, l)
	}
	h.logMu.Unlock()
	for _, l := range forward {
		h.log.Log(context.Background(), slogLevel(l.Level), "plugin log", "plugin", name, "level", l.Level, "message", l.Message)
	}
}

func (r *logRing) put(l LogLine) {
	r.lines[r.next] = l
	r.next = (r.next + 1) % logRingSize
	r.n = min(r.n+1, logRingSize)
}

// Logs returns the latest lines of a plugin, oldest first.
func (h *Host) Logs(name string) []LogLine {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	r := h.logs[name]
	if r == nil {
		return nil
	}
	out := make([]LogLine, 0, r.n)
	for i := range r.n {
		out = append(out, r.lines[(r.next-r.n+i+logRingSize)%logRingSize])
	}
	return out
}

func slogLevel(l string) slog.Level {
	switch l {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
