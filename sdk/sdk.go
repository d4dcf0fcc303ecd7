// Package sdk is what a govgate plugin is written with. A plugin filters
// notifications (keeps or drops a delivery) or transforms them (rewrites the
// delivery body and its content type) after govgate has fanned a
// notification out to its webhooks and before it signs each delivery.
//
// A plugin is a main package that registers its functions in init and has an
// empty main:
//
//	import (
//		"slices"
//
//		"github.com/govgate/govgate/sdk"
//	)
//
//	type Config struct {
//		DAOs []string `json:"daos"`
//	}
//
//	func init() {
//		sdk.Plugin(sdk.Meta{Name: "dao-filter", Version: "1.0.0"})
//		sdk.Filter(func(n sdk.Notification, cfg Config) bool {
//			return slices.Contains(cfg.DAOs, n.DAO)
//		})
//	}
//
//	func main() {}
//
// A filter registered with FilterReason also says why it drops a
// notification; the gateway records the reason with each delivery it drops:
//
//	sdk.FilterReason(func(n sdk.Notification, cfg Config) (keep bool, reason string) {
//		if !slices.Contains(cfg.DAOs, n.DAO) {
//			return false, fmt.Sprintf("dao %q is not in the list", n.DAO)
//		}
//		return true, ""
//	})
//
// It is built as a WASI reactor with the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// The wasm exports live in this package (files built for wasip1 only), so an
// author never handles pointers. sdk/ABI.md describes the ABI for plugins
// written in other languages; sdk/plugintest checks a plugin in go test.
//
// The package uses the standard library only.
package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/govgate/govgate/sdk/abi"
	"github.com/govgate/govgate/sdk/internal/guest"
)

// ABIVersion is the version of the plugin ABI this SDK builds plugins for.
const ABIVersion = abi.Version

// Notification is the governance event a plugin sees; its JSON form is the
// delivery body govgate sends when no plugin transforms it. Data is the
// event's own payload: decode it with json.Unmarshal when the plugin needs
// it. Data aliases the call's input: copy it to keep it after the call.
type Notification = abi.Notification

// Notification types the chain indexer emits; the admin API may publish
// others, such as TypeTest.
const (
	TypeProposalCreated = "proposal.created"
	TypeVoteCast        = "vote.cast"
	// TypeVoteOverridden is a delegator's vote in place of its delegate
	// (OpenZeppelin's GovernorCountingOverridable); its data is vote.cast's
	// plus the delegate it took weight from.
	TypeVoteOverridden   = "vote.overridden"
	TypeProposalQueued   = "proposal.queued"
	TypeProposalExecuted = "proposal.executed"
	TypeProposalCanceled = "proposal.canceled"
	TypeProposalExtended = "proposal.extended"
	TypeTest             = "test"

	// Time-driven types: the chain's clock crossed a proposal's voteStart,
	// a lead before its voteEnd, its voteEnd, or its ETA plus the
	// timelock's grace period.
	TypeProposalActive     = "proposal.active"
	TypeProposalEndingSoon = "proposal.ending_soon"
	TypeProposalSucceeded  = "proposal.succeeded"
	TypeProposalDefeated   = "proposal.defeated"
	TypeProposalExpired    = "proposal.expired"

	// The voting token's delegation events.
	TypeDelegateChanged      = "delegate.changed"
	TypeDelegateVotesChanged = "delegate.votes_changed"

	// TypeNotificationOrphaned tells receivers that a notification they got
	// came from blocks a reorganisation dropped.
	TypeNotificationOrphaned = "notification.orphaned"
)

// Output is what a transform makes of a delivery.
type Output struct {
	// Body replaces the delivery body; nil leaves it as it was.
	Body []byte
	// ContentType replaces the delivery's content type; "" keeps it.
	ContentType string
}

// Meta describes a plugin to the people who install and configure it.
type Meta struct {
	// Name identifies the plugin in chains: lowercase letters, digits and
	// inner '.', '_' or '-', at most 64 bytes. Loading a plugin with the name
	// of a loaded one replaces it.
	Name    string
	Version string
	// ConfigSchema is a JSON Schema of the config, for the admin page.
	ConfigSchema json.RawMessage
	// Samples are run by the gateway before it activates the plugin and by
	// sdk/plugintest natively and compiled to wasm.
	Samples []Sample
}

// Sample is an input with the outcome the plugin promises for it.
type Sample struct {
	Name  string
	Input Notification
	// Config is marshaled with encoding/json: a Config value, or
	// json.RawMessage for literal JSON.
	Config any
	// Body is the delivery body before the plugin; nil means the
	// notification's JSON.
	Body []byte
	// ExpectKeep is whether the delivery goes ahead after the plugin.
	ExpectKeep bool
	// ExpectBody, when not nil, is the body expected after a transform;
	// JSON is compared by meaning.
	ExpectBody        []byte
	ExpectContentType string
}

// Plugin records the plugin's metadata. Call it once, from init.
func Plugin(m Meta) {
	am := abi.Meta{Name: m.Name, Version: m.Version, ConfigSchema: m.ConfigSchema}
	for _, s := range m.Samples {
		cfg, err := guest.MarshalConfig(s.Config)
		if err != nil {
			panic(fmt.Sprintf("sdk: sample %q: %v", s.Name, err))
		}
		am.Samples = append(am.Samples, abi.Sample{
			Name: s.Name, Input: s.Input, Config: cfg, Body: string(s.Body),
			ExpectKeep: s.ExpectKeep, ExpectBody: string(s.ExpectBody), ExpectContentType: s.ExpectContentType,
		})
	}
	guest.SetMeta(am)
}

// Filter registers the plugin's filter: it returns whether the notification
// is delivered to a webhook whose chain configures the plugin with cfg. A
// filter that can say why it drops a notification registers with
// FilterReason instead.
//
// The config is decoded from JSON into C once per distinct config and kept;
// unknown fields are an error, so that a typo in a chain's config fails
// loudly instead of filtering silently. If *C has a method Prepare() error,
// it is called once after decoding to validate the config and precompute
// what the filter needs. Treat cfg as read-only: it is shared between calls.
//
// A filter must depend only on its arguments: the gateway calls it once for
// all the webhooks that share a config.
func Filter[C any](fn func(n Notification, cfg C) bool) {
	FilterReason(func(n Notification, cfg C) (bool, string) { return fn(n, cfg), "" })
}

// FilterReason registers the plugin's filter, as Filter does, for a filter
// that says why it drops a notification. The gateway records the reason
// with each delivery the filter drops, after the plugin's name:
//
//	dropped by dao-filter filter: dao "ens" is not in the list
//
// Write it for the person reading the delivery log, and name the value that
// decided, so that the reason alone answers why nothing was delivered.
//
// The reason of a kept notification is ignored. A reason is sent as UTF-8
// (invalid UTF-8 becomes U+FFFD) and cut to 512 bytes, ending in "…", so that
// the delivery log keeps it whole.
func FilterReason[C any](fn func(n Notification, cfg C) (keep bool, reason string)) {
	guest.Register(abi.HookFilter, filterFunc(fn))
}

// filterFunc answers one config of a filter call; it is apart from
// FilterReason so that a test can call it without registering a plugin.
func filterFunc[C any](fn func(Notification, C) (bool, string)) guest.Func {
	configs := newConfigCache[C]()
	return func(n *abi.Notification, _ *abi.Input, raw []byte) abi.Result {
		cfg, err := configs.get(raw)
		if err != nil {
			return abi.Result{Status: abi.StatusError, Message: err.Error()}
		}
		if keep, reason := fn(*n, cfg); !keep {
			return abi.Result{Status: abi.StatusDrop, Message: dropReason(reason)}
		}
		return abi.Result{Status: abi.StatusKeep}
	}
}

// maxReasonBytes bounds a drop reason. The gateway records 1,024 bytes of a
// delivery's error, its "dropped by <plugin> filter: " prefix (at most 83
// bytes) included, and accepts 1 KiB of output per config beyond its body
// limit, however low that is: a reason of 512 bytes arrives and is recorded
// whole.
const maxReasonBytes = 512

// dropReason makes a filter's reason what the ABI carries: UTF-8, which a Go
// string need not be, and short. A cut reason ends in "…" so that its
// reader knows there was more.
func dropReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxReasonBytes {
		return s
	}
	const ellipsis = "…"
	n := maxReasonBytes - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// Transform registers the plugin's transform: it receives the delivery body
// as the chain has made it so far and returns the body to send instead. An
// error stops the delivery or lets it through unchanged, as the chain
// entry's failure policy says. Configs are decoded as for Filter.
func Transform[C any](fn func(n Notification, body []byte, cfg C) (Output, error)) {
	configs := newConfigCache[C]()
	guest.Register(abi.HookTransform, func(n *abi.Notification, in *abi.Input, raw []byte) abi.Result {
		cfg, err := configs.get(raw)
		if err != nil {
			return abi.Result{Status: abi.StatusError, Message: err.Error()}
		}
		out, err := fn(*n, in.Body, cfg)
		switch {
		case err != nil:
			return abi.Result{Status: abi.StatusError, Message: err.Error()}
		case out.Body == nil && out.ContentType == "":
			return abi.Result{Status: abi.StatusUnchanged}
		case out.Body == nil:
			out.Body = in.Body
		}
		return abi.Result{Status: abi.StatusBody, Body: out.Body, ContentType: out.ContentType}
	})
}

// Level is the severity of a log line.
type Level = abi.Level

const (
	LevelDebug = abi.LevelDebug
	LevelInfo  = abi.LevelInfo
	LevelWarn  = abi.LevelWarn
	LevelError = abi.LevelError
)

// Log sends a line to the gateway's plugin log, which keeps the latest lines
// of each plugin and limits their rate. Lines written to standard output and
// standard error land there too, at info and warn.
func Log(level Level, msg string) { guest.Log(level, msg) }

// Logf logs a formatted line at info level.
func Logf(format string, args ...any) { guest.Log(LevelInfo, fmt.Sprintf(format, args...)) }

// Preparer is implemented by configs that validate themselves or precompute
// something once per distinct config.
type Preparer interface {
	Prepare() error
}

// maxConfigs bounds the decoded configs a plugin instance keeps; a chain
// rarely has more than a handful of distinct configs per plugin.
const maxConfigs = 256

type configEntry[C any] struct {
	cfg C
	err error
}

// configCache keeps decoded configs by their JSON text, so that decoding
// (reflection) happens once per distinct config and instance, not per call.
type configCache[C any] struct {
	mu sync.Mutex
	m  map[string]configEntry[C]
}

func newConfigCache[C any]() *configCache[C] {
	return &configCache[C]{m: make(map[string]configEntry[C])}
}

func (c *configCache[C]) get(raw []byte) (C, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[string(raw)]; ok {
		return e.cfg, e.err
	}
	cfg, err := decodeConfig[C](raw)
	if len(c.m) >= maxConfigs {
		clear(c.m)
	}
	c.m[string(raw)] = configEntry[C]{cfg, err}
	return cfg, err
}

func decodeConfig[C any](raw []byte) (C, error) {
	var cfg C
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		d := json.NewDecoder(bytes.NewReader(t))
		d.DisallowUnknownFields()
		if err := d.Decode(&cfg); err != nil {
			return cfg, fmt.Errorf("decode config: %w", err)
		}
		if d.More() {
			return cfg, errors.New("decode config: data after the JSON value")
		}
	}
	if p, ok := any(&cfg).(Preparer); ok {
		if err := p.Prepare(); err != nil {
			return cfg, fmt.Errorf("prepare config: %w", err)
		}
	}
	return cfg, nil
}
