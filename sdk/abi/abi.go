// Package abi is the wire format between govgate and its plugins, version 1
// of the plugin ABI: the names a plugin imports and exports, how a
// notification, a delivery body and a batch of configs are laid out in the
// plugin's memory, and how the plugin's decisions come back. The host
// (core/internal/wasmhost) and the Go SDK (sdk) both speak it through this package;
// sdk/ABI.md describes it for authors of plugins in other languages.
//
// It uses the standard library only, so it builds for GOOS=wasip1.
package abi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Version is the ABI version this package speaks. A plugin declares the
// version it was built for by importing the function ImportMarker from
// HostModule; a host that does not provide that import refuses the plugin
// when it links it, before any call.
const Version = 1

// Names of what a plugin imports from the host and exports to it.
const (
	HostModule      = "govgate"           // the import module of the host functions
	ImportMarker    = "abi_v1"            // func(): imported to declare ABI version 1
	MarkerPrefix    = "abi_v"             // the marker of version N is MarkerPrefix+N
	ImportLog       = "log"               // func(level, ptr, len i32)
	ExportMemory    = "memory"            // the plugin's linear memory
	ExportAlloc     = "govgate_alloc"     // func(size i32) (ptr i32)
	ExportMeta      = "govgate_meta"      // func() (packed i64)
	ExportFilter    = "govgate_filter"    // func(ptr, len i32) (packed i64)
	ExportTransform = "govgate_transform" // func(ptr, len i32) (packed i64)
	// ExportInitialize is the reactor initializer (WASI); the host calls it
	// once per instance, before anything else, when the plugin exports it.
	ExportInitialize = "_initialize"
)

// Hook names one entry point of a plugin.
type Hook string

const (
	// HookFilter decides whether a delivery goes ahead.
	HookFilter Hook = "filter"
	// HookTransform rewrites the delivery body and may set its content type.
	HookTransform Hook = "transform"
)

// Export returns the name of the function that implements h.
func (h Hook) Export() string {
	switch h {
	case HookFilter:
		return ExportFilter
	case HookTransform:
		return ExportTransform
	}
	return ""
}

// Level is the severity of a log line a plugin sends through ImportLog.
type Level uint32

const (
	LevelDebug Level = 0
	LevelInfo  Level = 1
	LevelWarn  Level = 2
	LevelError Level = 3
)

func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return fmt.Sprintf("level%d", uint32(l))
}

// Notification is the governance event a plugin sees. Its JSON form is the
// one govgate delivers when no plugin transforms it:
// {"id","type","dao","occurredAt","data"}.
type Notification struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	DAO        string          `json:"dao"`
	OccurredAt time.Time       `json:"occurredAt"`
	Data       json.RawMessage `json:"data"`
}

// Input is what the host hands to a filter or transform call: one
// notification, the delivery body as the chain has made it so far, and one or
// more distinct configs. The plugin answers with one Result per config, so
// that webhooks that share a plugin cost one call, not one call each.
type Input struct {
	Notification Notification
	Body         []byte
	ContentType  string
	Configs      []json.RawMessage
}

// Limits of the encoding, checked by both sides.
const (
	// MaxConfigs is the most configs one call carries.
	MaxConfigs = 4096
	// MaxOutputBytes bounds what a plugin may return from one call unless the
	// host sets a lower limit.
	MaxOutputBytes = 64 << 20
)

// AppendInput appends the wire form of in to dst:
//
//	input  = field(id) field(type) field(dao) field(occurredAt)
//	         field(data) field(body) field(contentType)
//	         u32(n) field(config)*n
//	field  = u32(len) bytes
//
// Integers are little-endian; occurredAt is RFC 3339 with nanoseconds, UTC.
func AppendInput(dst []byte, in *Input) []byte {
	n := &in.Notification
	var ts [64]byte
	occurred := ts[:0]
	if !n.OccurredAt.IsZero() {
		occurred = n.OccurredAt.UTC().AppendFormat(occurred, time.RFC3339Nano)
	}
	dst = appendField(dst, []byte(n.ID))
	dst = appendField(dst, []byte(n.Type))
	dst = appendField(dst, []byte(n.DAO))
	dst = appendField(dst, occurred)
	dst = appendField(dst, n.Data)
	dst = appendField(dst, in.Body)
	dst = appendField(dst, []byte(in.ContentType))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(in.Configs)))
	for _, c := range in.Configs {
		dst = appendField(dst, c)
	}
	return dst
}

// ErrTruncated reports input or output that ends in the middle of a field.
var ErrTruncated = errors.New("truncated")

// DecodeInput parses the wire form of an Input. Data, Body and Configs alias
// b, which the caller must therefore not reuse while they are in use.
func DecodeInput(b []byte) (Input, error) {
	var in Input
	r := reader{b: b}
	id, typ, dao, occurred := r.field(), r.field(), r.field(), r.field()
	data, body, ct := r.field(), r.field(), r.field()
	count := r.u32()
	if r.err != nil {
		return in, fmt.Errorf("decode input: %w", r.err)
	}
	if count > MaxConfigs {
		return in, fmt.Errorf("decode input: %d configs, at most %d", count, MaxConfigs)
	}
	in.Configs = make([]json.RawMessage, count)
	for i := range in.Configs {
		in.Configs[i] = r.field()
	}
	if r.err != nil {
		return in, fmt.Errorf("decode input: %w", r.err)
	}
	if len(r.b) != 0 {
		return in, fmt.Errorf("decode input: %d bytes after the last config", len(r.b))
	}
	in.Notification = Notification{ID: string(id), Type: string(typ), DAO: string(dao), Data: data}
	if len(occurred) > 0 {
		t, err := time.Parse(time.RFC3339Nano, string(occurred))
		if err != nil {
			return in, fmt.Errorf("decode input: occurredAt: %w", err)
		}
		in.Notification.OccurredAt = t
	}
	in.Body, in.ContentType = body, string(ct)
	return in, nil
}

// Status is the outcome of one config in a call.
type Status uint8

const (
	// StatusDrop (filter): do not deliver. Payload: an optional reason.
	StatusDrop Status = 0
	// StatusKeep (filter): deliver. No payload.
	StatusKeep Status = 1
	// StatusError: the plugin failed for this config; the host applies the
	// chain entry's failure policy. Payload: the error message.
	StatusError Status = 2
	// StatusBody (transform): payload = field(contentType) body. An empty
	// content type keeps the current one.
	StatusBody Status = 3
	// StatusUnchanged (transform): deliver the body as it was. No payload.
	StatusUnchanged Status = 4
)

func (s Status) String() string {
	switch s {
	case StatusDrop:
		return "drop"
	case StatusKeep:
		return "keep"
	case StatusError:
		return "error"
	case StatusBody:
		return "body"
	case StatusUnchanged:
		return "unchanged"
	}
	return fmt.Sprintf("status%d", uint8(s))
}

// Result is a plugin's answer for one config.
type Result struct {
	Status Status
	// Message is the drop reason or the error message.
	Message     string
	ContentType string
	Body        []byte
}

// AppendResult appends the wire form of r to dst:
//
//	result = u8(status) u32(len) payload
func AppendResult(dst []byte, r Result) []byte {
	switch r.Status {
	case StatusBody:
		dst = append(dst, byte(r.Status))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(4+len(r.ContentType)+len(r.Body)))
		dst = appendField(dst, []byte(r.ContentType))
		return append(dst, r.Body...)
	case StatusKeep, StatusUnchanged:
		dst = append(dst, byte(r.Status))
		return binary.LittleEndian.AppendUint32(dst, 0)
	default:
		dst = append(dst, byte(r.Status))
		return appendField(dst, []byte(r.Message))
	}
}

// DecodeResults parses a plugin's output for a call that carried n configs.
// The output holds n results in the order of the configs, or a single
// StatusError result that then stands for all n. Bodies alias b.
func DecodeResults(b []byte, n int) ([]Result, error) {
	var out []Result
	r := reader{b: b}
	for len(r.b) > 0 && r.err == nil {
		if len(out) == n {
			return nil, fmt.Errorf("decode output: more than %d results", n)
		}
		status := Status(r.u8())
		payload := r.field()
		if r.err != nil {
			break
		}
		res := Result{Status: status}
		switch status {
		case StatusDrop, StatusError:
			res.Message = string(payload)
		case StatusKeep, StatusUnchanged:
			if len(payload) != 0 {
				return nil, fmt.Errorf("decode output: result %d: %s with a payload", len(out), status)
			}
		case StatusBody:
			p := reader{b: payload}
			ct := p.field()
			if p.err != nil {
				return nil, fmt.Errorf("decode output: result %d: content type: %w", len(out), p.err)
			}
			res.ContentType, res.Body = string(ct), p.b
		default:
			return nil, fmt.Errorf("decode output: result %d: unknown status %d", len(out), uint8(status))
		}
		out = append(out, res)
	}
	if r.err != nil {
		return nil, fmt.Errorf("decode output: %w", r.err)
	}
	if len(out) == 1 && n > 1 && out[0].Status == StatusError {
		for len(out) < n {
			out = append(out, out[0])
		}
	}
	if len(out) != n {
		return nil, fmt.Errorf("decode output: %d results for %d configs", len(out), n)
	}
	return out, nil
}

// Pack packs a pointer and a length into the i64 that govgate_meta,
// govgate_filter and govgate_transform return: ptr<<32 | len.
func Pack(ptr, size uint32) uint64 { return uint64(ptr)<<32 | uint64(size) }

// Unpack is the inverse of Pack.
func Unpack(v uint64) (ptr, size uint32) { return uint32(v >> 32), uint32(v) }

func appendField(dst, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) u8() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.err = ErrTruncated
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.err = ErrTruncated
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) field() []byte {
	n := r.u32()
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.err = ErrTruncated
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Meta describes a plugin; govgate_meta returns it as JSON.
type Meta struct {
	ABI     int    `json:"abi"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Hooks   []Hook `json:"hooks"`
	// ConfigSchema is a JSON Schema of the plugin's config, shown to the
	// people who configure chains. The host checks only that it is JSON.
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
	// Samples are run by the host before it activates the plugin.
	Samples []Sample `json:"samples,omitempty"`
}

// ValidName reports whether s can name a plugin: lowercase letters, digits
// and inner '.', '_' or '-', at most 64 bytes. It is written out rather
// than a regular expression because this package is linked into every Go
// plugin, and the regexp package is a tenth of a plugin's code, which the
// gateway compiles when it loads the plugin.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// Has reports whether m lists hook h.
func (m *Meta) Has(h Hook) bool {
	for _, x := range m.Hooks {
		if x == h {
			return true
		}
	}
	return false
}

// Validate checks what the host relies on and names the first bad field.
func (m *Meta) Validate() error {
	switch {
	case m.ABI != Version:
		return fmt.Errorf("meta: abi is %d, want %d", m.ABI, Version)
	case !ValidName(m.Name):
		return fmt.Errorf("meta: name %q: want lowercase letters, digits and inner '.', '_' or '-', at most 64 bytes", m.Name)
	case m.Version == "" || len(m.Version) > 64:
		return fmt.Errorf("meta: version %q: want 1 to 64 bytes", m.Version)
	case len(m.Hooks) == 0:
		return errors.New("meta: hooks: the plugin registers no filter and no transform")
	case len(m.ConfigSchema) > 0 && !json.Valid(m.ConfigSchema):
		return errors.New("meta: configSchema is not JSON")
	}
	for _, h := range m.Hooks {
		if h != HookFilter && h != HookTransform {
			return fmt.Errorf("meta: hooks: unknown hook %q", h)
		}
	}
	seen := make(map[string]bool, len(m.Samples))
	for i, s := range m.Samples {
		if s.Name == "" || seen[s.Name] {
			return fmt.Errorf("meta: samples[%d]: name %q is empty or repeated", i, s.Name)
		}
		seen[s.Name] = true
		if len(s.Config) > 0 && !json.Valid(s.Config) {
			return fmt.Errorf("meta: samples[%d] (%s): config is not JSON", i, s.Name)
		}
	}
	return nil
}

// Sample is an input that a plugin ships with the outcome it expects. The
// host runs a plugin's samples before activating it.
type Sample struct {
	Name   string          `json:"name"`
	Input  Notification    `json:"input"`
	Config json.RawMessage `json:"config,omitempty"`
	// Body is the delivery body the plugin receives; empty means the
	// notification's own JSON, as govgate sends it when no plugin ran before.
	Body string `json:"body,omitempty"`
	// ExpectKeep is whether the delivery goes ahead after the plugin.
	ExpectKeep bool `json:"expectKeep"`
	// ExpectBody, when not empty, is the body expected after the plugin;
	// JSON is compared by meaning, anything else byte for byte.
	ExpectBody        string `json:"expectBody,omitempty"`
	ExpectContentType string `json:"expectContentType,omitempty"`
}

// DefaultContentType is the content type of a delivery that no plugin has
// transformed.
const DefaultContentType = "application/json"

// InputBody returns the body that s feeds to the plugin.
func (s *Sample) InputBody() ([]byte, error) {
	if s.Body != "" {
		return []byte(s.Body), nil
	}
	b, err := json.Marshal(s.Input)
	if err != nil {
		return nil, fmt.Errorf("marshal sample input: %w", err)
	}
	return b, nil
}

// Check compares what became of a sample's delivery with its expectations.
func (s *Sample) Check(keep bool, body []byte, contentType string) error {
	if keep != s.ExpectKeep {
		return fmt.Errorf("sample %q: keep is %t, want %t", s.Name, keep, s.ExpectKeep)
	}
	if !keep {
		return nil
	}
	if s.ExpectBody != "" && !SameBody([]byte(s.ExpectBody), body) {
		return fmt.Errorf("sample %q: body is %s, want %s", s.Name, body, s.ExpectBody)
	}
	if s.ExpectContentType != "" && s.ExpectContentType != contentType {
		return fmt.Errorf("sample %q: content type is %q, want %q", s.Name, contentType, s.ExpectContentType)
	}
	return nil
}

// SameBody reports whether two bodies are equal: by meaning when both are
// JSON, byte for byte otherwise.
func SameBody(a, b []byte) bool {
	if string(a) == string(b) {
		return true
	}
	ca, okA := canonical(a)
	cb, okB := canonical(b)
	return okA && okB && string(ca) == string(cb)
}

// canonical re-encodes JSON with sorted keys and numbers kept as written.
func canonical(b []byte) ([]byte, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return nil, false
	}
	out, err := json.Marshal(v)
	return out, err == nil
}
