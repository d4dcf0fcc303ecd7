// Package plugintest is the suite a plugin author runs on their plugin in
// go test. Run checks the plugin that the package under test registers: it
// runs the plugin's samples and the author's cases natively (calling the
// registered functions directly) and compiled to wasm in the gateway's own
// plugin host, and fails when a sample's expectation is not met or when the
// two runs disagree. The wasm build is made with the go toolchain, once per
// test binary.
//
// The package, like the SDK, uses the standard library only: the wasm half
// runs in a govgate process ("govgate plugin serve", see EnvCommand), so a
// plugin's go.mod requires the SDK module and nothing else. Without a
// govgate command the wasm half is skipped with a message (under CI=true it
// fails).
//
//	func TestPlugin(t *testing.T) {
//		plugintest.Run(t, plugintest.Case{
//			Name:   "other DAO",
//			Input:  sdk.Notification{Type: "vote.cast", DAO: "compound"},
//			Config: Config{DAOs: []string{"uniswap"}},
//			Want:   &plugintest.Want{Keep: false, Reason: `dao "compound" is not in the list`},
//		})
//	}
//
// The two runs must agree on everything the plugin answers, a filter's drop
// reason included.
//
// A plugin must not read the wall clock to decide: in the host it stands
// still at the start of each call, natively it does not.
package plugintest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/abi"
	"github.com/govgate/govgate/sdk/internal/guest"
)

// Case is one input to check beside the plugin's samples.
type Case struct {
	Name  string
	Input sdk.Notification
	// Config is marshaled with encoding/json: a Config value, or
	// json.RawMessage for literal JSON.
	Config any
	// Body is the delivery body before the plugin; nil means the
	// notification's JSON.
	Body []byte
	// ContentType of Body; "" means application/json.
	ContentType string
	// Want, when set, is the expected outcome; either way the native and
	// wasm runs must agree.
	Want *Want
}

// Want is the expected outcome of a case: what a one-entry chain with the
// plugin makes of the delivery.
type Want struct {
	Keep bool
	// Reason, when not "", is the reason the filter must give for dropping
	// the delivery (sdk.FilterReason), compared exactly; Keep must be false.
	Reason string
	// Body, when not nil, is the expected body; JSON is compared by meaning.
	Body []byte
	// ContentType, when not "", is the expected content type.
	ContentType string
	// Error, when not "", is a substring of the error the plugin must
	// return (the delivery is then dropped: Keep must be false).
	Error string
}

// Run checks the plugin registered by the package under test (the current
// directory, as go test runs it).
func Run(t *testing.T, cases ...Case) {
	t.Helper()
	RunDir(t, ".", cases...)
}

// RunDir is Run for the plugin package in dir, which must be the package
// under test: its init has registered the functions the native run calls.
func RunDir(t *testing.T, dir string, cases ...Case) {
	t.Helper()
	meta := guest.Meta()
	if err := meta.Validate(); err != nil {
		t.Fatalf("plugin metadata: %v (does the package call sdk.Plugin and sdk.Filter or sdk.Transform in init?)", err)
	}
	restore := guest.SetLogSink(func(level abi.Level, msg string) { t.Logf("plugin log: [%s] %s", level, msg) })
	defer func() { guest.SetLogSink(restore) }() // what it returns is this run's sink, done with

	all, err := inputs(meta, cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range all {
		if in.check == nil {
			continue
		}
		o := apply(meta.Hooks, in, nativeCall)
		if err := in.check(o); err != nil {
			t.Errorf("native: %v", err)
		}
	}

	h := startHost(t, Build(t, dir))
	if h == nil {
		return
	}
	info := h.info
	if info.Name != meta.Name || info.Version != meta.Version || strings.Join(info.Hooks, ",") != hookList(meta.Hooks) {
		t.Errorf("wasm: loaded %s %s %v, natively %s %s %v", info.Name, info.Version, info.Hooks, meta.Name, meta.Version, meta.Hooks)
	}
	wasmCall := func(hook abi.Hook, in abi.Input) ([]abi.Result, error) {
		res, logs, err := h.call(hook, in)
		for _, l := range logs {
			t.Logf("wasm plugin log: %s", l)
		}
		return res, err
	}
	for _, in := range all {
		for _, hook := range meta.Hooks {
			one := in.abi(nil)
			native, nerr := nativeCall(hook, one)
			wasm, werr := wasmCall(hook, one)
			if d := diff(native, nerr, wasm, werr); d != "" {
				t.Errorf("%s, %s: native and wasm disagree: %s", in.name, hook, d)
			}
		}
		if in.check != nil {
			if err := in.check(apply(meta.Hooks, in, wasmCall)); err != nil {
				t.Errorf("wasm: %v", err)
			}
		}
	}
	checkBatch(t, meta.Hooks, all, wasmCall)
}

// checkBatch calls each hook once with the configs of every input on the
// first input's notification, as the gateway batches webhooks, and checks
// that the answers are those of one call per config.
func checkBatch(t *testing.T, hooks []abi.Hook, all []input, call func(abi.Hook, abi.Input) ([]abi.Result, error)) {
	t.Helper()
	if len(all) < 2 {
		return
	}
	var configs []json.RawMessage
	for _, in := range all {
		configs = append(configs, in.config)
	}
	for _, hook := range hooks {
		batched, err := call(hook, all[0].abi(configs))
		if err != nil {
			t.Errorf("batched %s call: %v", hook, err)
			continue
		}
		for i, c := range configs {
			single, err := call(hook, all[0].abi([]json.RawMessage{c}))
			if d := diff(single, err, batched[i:i+1], nil); d != "" {
				t.Errorf("%s with the config of %s: a batched call answers differently from a single one: %s", hook, all[i].name, d)
			}
		}
	}
}

// input is a sample or a case, ready to run.
type input struct {
	name        string
	n           abi.Notification
	body        []byte
	contentType string
	config      json.RawMessage
	check       func(outcome) error
}

func (in input) abi(configs []json.RawMessage) abi.Input {
	if configs == nil {
		configs = []json.RawMessage{in.config}
	}
	return abi.Input{Notification: in.n, Body: in.body, ContentType: in.contentType, Configs: configs}
}

func inputs(meta abi.Meta, cases []Case) ([]input, error) {
	var out []input
	for _, s := range meta.Samples {
		body, err := s.InputBody()
		if err != nil {
			return nil, err
		}
		s := s
		out = append(out, input{
			name: "sample " + s.Name, n: s.Input, body: body, contentType: abi.DefaultContentType, config: s.Config,
			check: func(o outcome) error {
				if o.err != nil {
					return fmt.Errorf("sample %q: %w", s.Name, o.err)
				}
				if err := s.Check(o.keep, o.body, o.contentType); err != nil {
					return fmt.Errorf("%w%s", err, o.why())
				}
				return nil
			},
		})
	}
	for i, c := range cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("case %d", i)
		}
		cfg, err := guest.MarshalConfig(c.Config)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		body := c.Body
		if body == nil {
			if body, err = json.Marshal(c.Input); err != nil {
				return nil, fmt.Errorf("%s: marshal input: %w", name, err)
			}
		}
		ct := c.ContentType
		if ct == "" {
			ct = abi.DefaultContentType
		}
		in := input{name: name, n: c.Input, body: body, contentType: ct, config: cfg}
		if w := c.Want; w != nil {
			in.check = func(o outcome) error { return w.check(name, o) }
		}
		out = append(out, in)
	}
	return out, nil
}

func (w *Want) check(name string, o outcome) error {
	if w.Error != "" {
		if o.err == nil || !strings.Contains(o.err.Error(), w.Error) {
			return fmt.Errorf("%s: error %v, want one with %q", name, o.err, w.Error)
		}
		return nil
	}
	switch {
	case w.Keep && w.Reason != "":
		return fmt.Errorf("%s: Want has Keep and a Reason, but only a drop has a reason", name)
	case o.err != nil:
		return fmt.Errorf("%s: %w", name, o.err)
	case o.keep != w.Keep:
		return fmt.Errorf("%s: keep is %t%s, want %t", name, o.keep, o.why(), w.Keep)
	case !o.keep && w.Reason != "" && o.reason != w.Reason:
		return fmt.Errorf("%s: drop reason is %q, want %q", name, o.reason, w.Reason)
	case !o.keep:
		return nil
	case w.Body != nil && !abi.SameBody(w.Body, o.body):
		return fmt.Errorf("%s: body is %s, want %s", name, o.body, w.Body)
	case w.ContentType != "" && w.ContentType != o.contentType:
		return fmt.Errorf("%s: content type is %q, want %q", name, o.contentType, w.ContentType)
	}
	return nil
}

type outcome struct {
	keep        bool
	reason      string // why a filter dropped the delivery, if it said
	body        []byte
	contentType string
	err         error
}

// apply runs the plugin's hooks on one delivery as a one-entry chain does.
func apply(hooks []abi.Hook, in input, call func(abi.Hook, abi.Input) ([]abi.Result, error)) outcome {
	o := outcome{keep: true, body: in.body, contentType: in.contentType}
	for _, hook := range []abi.Hook{abi.HookFilter, abi.HookTransform} {
		if !hasHook(hooks, hook) {
			continue
		}
		cur := in
		cur.body, cur.contentType = o.body, o.contentType
		res, err := call(hook, cur.abi(nil))
		if err != nil {
			o.err = fmt.Errorf("%s: %w", hook, err)
			return o
		}
		switch r := res[0]; r.Status {
		case abi.StatusError:
			o.keep, o.err = false, fmt.Errorf("%s: %s", hook, r.Message)
			return o
		case abi.StatusDrop:
			o.keep, o.reason = false, r.Message
			return o
		case abi.StatusBody:
			o.body = r.Body
			if r.ContentType != "" {
				o.contentType = r.ContentType
			}
		}
	}
	return o
}

// why is the drop reason, if any, as an aside to a message about o.keep.
func (o outcome) why() string {
	if o.keep || o.reason == "" {
		return ""
	}
	return fmt.Sprintf(" (reason %q)", o.reason)
}

func nativeCall(hook abi.Hook, in abi.Input) ([]abi.Result, error) {
	out := guest.Handle(hook, abi.AppendInput(nil, &in))
	return abi.DecodeResults(out, len(in.Configs))
}

// diff describes how two answers differ, or returns "".
func diff(a []abi.Result, aerr error, b []abi.Result, berr error) string {
	if aerr != nil || berr != nil {
		if (aerr == nil) != (berr == nil) {
			return fmt.Sprintf("native error %v, wasm error %v", aerr, berr)
		}
		return ""
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d results and %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Status != y.Status || x.Message != y.Message || x.ContentType != y.ContentType || !bytes.Equal(x.Body, y.Body) {
			return describe(x) + " and " + describe(y)
		}
	}
	return ""
}

// describe shows a result with the name of what its message is.
func describe(r abi.Result) string {
	switch r.Status {
	case abi.StatusDrop:
		return fmt.Sprintf("drop, reason %q", r.Message)
	case abi.StatusError:
		return fmt.Sprintf("error %q", r.Message)
	case abi.StatusBody:
		return fmt.Sprintf("body %.200q, content type %q", r.Body, r.ContentType)
	}
	return r.Status.String()
}

func hasHook(hooks []abi.Hook, h abi.Hook) bool {
	for _, x := range hooks {
		if x == h {
			return true
		}
	}
	return false
}

func hookList(hooks []abi.Hook) string {
	s := make([]string, len(hooks))
	for i, h := range hooks {
		s[i] = string(h)
	}
	return strings.Join(s, ",")
}

// Filter calls the registered filter natively, for unit tests and examples.
func Filter(n sdk.Notification, cfg any) (keep bool, err error) {
	keep, _, err = FilterReason(n, cfg)
	return keep, err
}

// FilterReason is Filter that also returns the reason the filter gave for a
// drop, as the gateway receives it: "" for a kept notification.
func FilterReason(n sdk.Notification, cfg any) (keep bool, reason string, err error) {
	r, err := callNative(abi.HookFilter, n, nil, cfg)
	if err != nil {
		return false, "", err
	}
	return r.Status == abi.StatusKeep, r.Message, nil
}

// Transform calls the registered transform natively on body, for unit tests
// and examples. An Output with a nil Body means the body is unchanged.
func Transform(n sdk.Notification, body []byte, cfg any) (sdk.Output, error) {
	r, err := callNative(abi.HookTransform, n, body, cfg)
	if err != nil {
		return sdk.Output{}, err
	}
	return sdk.Output{Body: r.Body, ContentType: r.ContentType}, nil
}

func callNative(hook abi.Hook, n sdk.Notification, body []byte, cfg any) (abi.Result, error) {
	c, err := guest.MarshalConfig(cfg)
	if err != nil {
		return abi.Result{}, err
	}
	res, err := nativeCall(hook, abi.Input{Notification: n, Body: body, ContentType: abi.DefaultContentType, Configs: []json.RawMessage{c}})
	if err != nil {
		return abi.Result{}, err
	}
	if res[0].Status == abi.StatusError {
		return res[0], fmt.Errorf("%s: %s", hook, res[0].Message)
	}
	return res[0], nil
}

// CheckWasm checks a plugin given as a wasm binary, in any language: it
// loads it in a plugin host, which runs its samples, then runs the cases and
// checks those with a Want.
func CheckWasm(t *testing.T, wasm []byte, cases ...Case) {
	t.Helper()
	h := startHost(t, wasm)
	if h == nil {
		return
	}
	info := h.info
	meta := abi.Meta{Name: info.Name}
	for _, hk := range info.Hooks {
		meta.Hooks = append(meta.Hooks, abi.Hook(hk))
	}
	all, err := inputs(meta, cases)
	if err != nil {
		t.Fatal(err)
	}
	call := func(hook abi.Hook, in abi.Input) ([]abi.Result, error) {
		res, _, err := h.call(hook, in)
		return res, err
	}
	for _, in := range all {
		o := apply(meta.Hooks, in, call)
		if in.check != nil {
			if err := in.check(o); err != nil {
				t.Error(err)
			}
		} else if o.err != nil {
			t.Errorf("%s: %v", in.name, o.err)
		}
	}
	checkBatch(t, meta.Hooks, all, call)
}

var (
	buildMu sync.Mutex
	builds  = map[string][]byte{}
)

// Build compiles the Go plugin package in dir to a WASI reactor, as
// plugins/build.sh does, once per test binary, and returns the wasm binary.
func Build(tb testing.TB, dir string) []byte {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if b := builds[abs]; b != nil {
		return b
	}
	out := filepath.Join(tb.TempDir(), "plugin.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s for wasm: %v\n%s", dir, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	builds[abs] = b
	return b
}

// Compare checks that two plugins given as wasm binaries, written in any
// languages, answer every case alike, drop reasons included: the same
// behaviour ported from one language to another. Error messages are left
// out, as each language words its own; that both fail is compared. The
// plugins must have the same hooks; names and samples may differ.
func Compare(t *testing.T, a, b []byte, cases ...Case) {
	t.Helper()
	ha, hb := startHost(t, a), startHost(t, b)
	if ha == nil || hb == nil {
		return
	}
	if hookList := strings.Join(ha.info.Hooks, ","); hookList != strings.Join(hb.info.Hooks, ",") {
		t.Fatalf("%s has hooks %s, %s has %v", ha.info.Name, hookList, hb.info.Name, hb.info.Hooks)
	}
	all, err := inputs(abi.Meta{}, cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range all {
		for _, hook := range ha.info.Hooks {
			ra, _, erra := ha.call(abi.Hook(hook), in.abi(nil))
			rb, _, errb := hb.call(abi.Hook(hook), in.abi(nil))
			if d := diff(withoutErrors(ra), erra, withoutErrors(rb), errb); d != "" {
				t.Errorf("%s, %s: %s and %s disagree: %s", in.name, hook, ha.info.Name, hb.info.Name, d)
			}
		}
	}
}

// withoutErrors blanks the messages of error results.
func withoutErrors(rs []abi.Result) []abi.Result {
	out := make([]abi.Result, len(rs))
	for i, r := range rs {
		if r.Status == abi.StatusError {
			r.Message = ""
		}
		out[i] = r
	}
	return out
}
