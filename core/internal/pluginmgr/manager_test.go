package pluginmgr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/pluginmgr"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/wasmhost"
	"github.com/govgate/govgate/sdk/plugintest"
)

func watPlugin(t *testing.T) []byte {
	b, err := os.ReadFile("../../../plugins/wat-type-filter/plugin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newStore(t *testing.T, path string) *store.Store {
	return storetest.Open(t, "sqlite:"+path, storetest.NewBox(t), store.Options{})
}

func newManager(t *testing.T, st *store.Store, dir string) (*pluginmgr.Manager, *wasmhost.Host) {
	host, err := wasmhost.New(context.Background(), wasmhost.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(context.Background()) })
	m := pluginmgr.New(host, st, dir, nil)
	if err := m.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, host
}

func note(typ string) core.Notification {
	return core.Notification{ID: "n-" + typ, Type: typ, DAO: "uniswap", OccurredAt: time.Now(), Data: json.RawMessage(`{}`)}
}

func TestUploadChainsAndFanOut(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	m, host := newManager(t, st, "")

	if _, err := m.Upload(ctx, []byte("not wasm")); core.ErrorCode(err) != core.ECodeInvalidRequest {
		t.Fatalf("a bad module: %v", err)
	}
	v, err := m.Upload(ctx, watPlugin(t))
	if err != nil || v.Name != "wat-type-filter" || !v.Loaded {
		t.Fatalf("upload: %+v %v", v, err)
	}
	// No chain names it yet: it is loaded, listed with its hooks, asleep.
	if !host.Asleep("wat-type-filter") {
		t.Error("a plugin no chain names is awake")
	}
	if list, _ := m.List(ctx); len(list) != 1 || !list[0].Loaded || len(list[0].Hooks) == 0 {
		t.Errorf("asleep, the plugin is listed as %+v", list)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "missing"}}); core.ErrorCode(err) != core.ECodeInvalidRequest {
		t.Fatalf("a chain naming an unknown plugin: %v", err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", FailurePolicy: "sometimes"}}); core.ErrorCode(err) != core.ECodeInvalidRequest {
		t.Fatalf("a bad failure policy: %v", err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["vote.cast"]}`)}}); err != nil {
		t.Fatal(err)
	}
	if host.Asleep("wat-type-filter") {
		t.Error("a plugin the global chain names is asleep")
	}
	// Webhook 7 narrows further with its own chain.
	if err := m.SetChain(ctx, 7, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["proposal.created"]}`)}}); err != nil {
		t.Fatal(err)
	}

	vote, created := note(core.TypeVoteCast), note(core.TypeProposalCreated)
	body, _ := json.Marshal(vote)
	before := host.Stats().Calls
	for id := int64(1); id <= 10_000; id++ {
		out, err := m.Apply(ctx, vote, body, id)
		if err != nil {
			t.Fatal(err)
		}
		wantKeep := id != 7 // webhook 7's own filter drops votes
		if out.Keep != wantKeep || out.Trace == "" {
			t.Fatalf("webhook %d: %+v", id, out)
		}
	}
	// One call for the global entry, one for webhook 7's: not 10,000.
	if calls := host.Stats().Calls - before; calls != 2 {
		t.Fatalf("fanning out to 10,000 webhooks made %d plugin calls, want 2", calls)
	}
	cbody, _ := json.Marshal(created)
	if out, _ := m.Apply(ctx, created, cbody, 1); out.Keep || out.DropReason == "" {
		t.Fatalf("the global filter kept a proposal.created: %+v", out)
	}

	try, err := m.Try(ctx, nil, vote)
	if err != nil || !try.Keep || len(try.Steps) != 1 || try.Steps[0].Decision != "kept" {
		t.Fatalf("try: %+v %v", try, err)
	}
	if _, err := m.SetEnabled(ctx, "wat-type-filter", false); err != nil {
		t.Fatal(err)
	}
	// A disabled plugin follows its entry's failure policy: closed by default.
	if out, _ := m.Apply(ctx, note("vote.cast.again"), body, 1); out.Keep {
		t.Fatalf("a chain through a disabled plugin kept the delivery: %+v", out)
	}
	list, _ := m.List(ctx)
	if len(list) != 1 || list[0].Enabled || list[0].Loaded {
		t.Fatalf("list after disable: %+v", list)
	}
}

// Two processes sharing a database: an upload in one reaches the other at
// its next sync, without a restart; a plugin file dropped in the directory
// is imported.
func TestHotReloadAcrossManagers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	st := newStore(t, path)
	dir := t.TempDir()
	a, _ := newManager(t, st, "")
	b, hostB := newManager(t, st, dir)
	if _, err := a.Upload(ctx, watPlugin(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := hostB.Plugin("wat-type-filter"); ok {
		t.Fatal("loaded before any sync")
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := hostB.Plugin("wat-type-filter"); !ok {
		t.Fatal("an upload in one manager did not reach the other")
	}
	if err := a.Delete(ctx, "wat-type-filter"); err != nil {
		t.Fatal(err)
	}
	b.Sync(ctx)
	if _, ok := hostB.Plugin("wat-type-filter"); ok {
		t.Fatal("a deleted plugin stayed loaded")
	}
	os.WriteFile(filepath.Join(dir, "filter.wasm"), watPlugin(t), 0o600)
	b.Sync(ctx)
	if _, ok := hostB.Plugin("wat-type-filter"); !ok {
		t.Fatal("a plugin in the directory was not imported")
	}
}

// watWithSchema returns wat-type-filter's module with old replaced by new in
// the metadata it embeds: a real module declaring another config schema.
// Equal lengths keep its data segment, and so the module, valid.
func watWithSchema(t *testing.T, old, new string) []byte {
	t.Helper()
	b := watPlugin(t)
	if len(old) != len(new) || bytes.Count(b, []byte(old)) != 1 {
		t.Fatalf("cannot patch %q into %q in wat-type-filter's metadata", old, new)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

func chainJSON(t *testing.T, c []core.ChainEntry) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A chain entry's config is checked against the JSON Schema its plugin
// declares; a refused chain leaves the stored one as it was.
func TestChainConfigCheckedAgainstSchema(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	m, _ := newManager(t, st, "")
	if _, err := m.Upload(ctx, plugintest.Build(t, "../../../plugins/dao-filter")); err != nil {
		t.Fatal(err)
	}
	good := []core.ChainEntry{{Plugin: "dao-filter", Config: json.RawMessage(`{"daos":["uniswap"]}`)}}
	if err := m.SetChain(ctx, core.GlobalChain, good); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	entry := func(config string) core.ChainEntry {
		return core.ChainEntry{Plugin: "dao-filter", Config: json.RawMessage(config)}
	}
	for _, tc := range []struct {
		name  string
		chain []core.ChainEntry
		want  string
	}{
		{"a string for an array", []core.ChainEntry{entry(`{"daos":"uniswap"}`)}, "chain entry 0 (dao-filter): config at /daos: got string, want array"},
		{"an item of the wrong type", []core.ChainEntry{entry(`{"daos":[1]}`)}, "chain entry 0 (dao-filter): config at /daos/0: got number, want string"},
		{"a required field missing", []core.ChainEntry{entry(`{}`)}, "chain entry 0 (dao-filter): config: missing property 'daos'"},
		{"no config at all", []core.ChainEntry{{Plugin: "dao-filter"}}, "chain entry 0 (dao-filter): config: missing property 'daos'"},
		{"an unknown field", []core.ChainEntry{entry(`{"daos":["uniswap"],"dao":"ens"}`)}, "chain entry 0 (dao-filter): config: additional properties 'dao' not allowed"},
		{"not an object", []core.ChainEntry{entry(`["uniswap"]`)}, "chain entry 0 (dao-filter): config: got array, want object"},
		{"the second entry", []core.ChainEntry{good[0], entry(`{"daos":[]}`)}, "chain entry 1 (dao-filter): config at /daos: minItems: got 0, want 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, id := range []int64{core.GlobalChain, 7} {
				err := m.SetChain(ctx, id, tc.chain)
				if core.ErrorCode(err) != core.ECodeInvalidRequest || core.ErrorMessage(err) != tc.want {
					t.Fatalf("chain %d: got %v, want invalid_request %q", id, err, tc.want)
				}
			}
			if got, err := m.Chain(ctx, core.GlobalChain); err != nil || chainJSON(t, got) != chainJSON(t, good) {
				t.Fatalf("the stored global chain changed: %s %v", chainJSON(t, got), err)
			}
			if got, err := m.Chain(ctx, 7); err != nil || len(got) != 0 {
				t.Fatalf("a refused chain was stored for webhook 7: %+v %v", got, err)
			}
			if _, err := m.Try(ctx, tc.chain, note(core.TypeVoteCast)); core.ErrorCode(err) != core.ECodeInvalidRequest || core.ErrorMessage(err) != tc.want {
				t.Fatalf("try: got %v, want invalid_request %q", err, tc.want)
			}
		})
	}
	try, err := m.Try(ctx, good, note(core.TypeVoteCast))
	if err != nil || !try.Keep {
		t.Fatalf("try with a valid config: %+v %v", try, err)
	}
}

// Schemas are cached per module: a replaced plugin is checked against its
// new schema, and a disabled one against its stored module's, even by a
// process that never loaded it.
func TestChainConfigFollowsThePluginsModule(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	m, _ := newManager(t, st, "")
	if _, err := m.Upload(ctx, watPlugin(t)); err != nil {
		t.Fatal(err)
	}
	words := []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["vote.cast"]}`)}}
	numbers := []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":[1]}`)}}
	if err := m.SetChain(ctx, core.GlobalChain, words); err != nil {
		t.Fatal(err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, numbers); !strings.Contains(core.ErrorMessage(err), "config at /types/0: got number, want string") {
		t.Fatalf("numbers for types under the first schema: %v", err)
	}
	// Same name and version, another module: its types are numbers.
	if _, err := m.Upload(ctx, watWithSchema(t, `"items":{"type":"string"}`, `"items":{"type":"number"}`)); err != nil {
		t.Fatal(err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, words); !strings.Contains(core.ErrorMessage(err), "config at /types/0: got string, want number") {
		t.Fatalf("words for types under the replaced schema: %v", err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, numbers); err != nil {
		t.Fatalf("numbers for types under the replaced schema: %v", err)
	}

	if _, err := m.SetEnabled(ctx, "wat-type-filter", false); err != nil {
		t.Fatal(err)
	}
	other, host := newManager(t, st, "")
	if _, loaded := host.Plugin("wat-type-filter"); loaded {
		t.Fatal("a disabled plugin was loaded")
	}
	if err := other.SetChain(ctx, 3, words); core.ErrorCode(err) != core.ECodeInvalidRequest || !strings.Contains(core.ErrorMessage(err), "got string, want number") {
		t.Fatalf("a disabled plugin's config, in a process that never loaded it: %v", err)
	}
	if err := other.SetChain(ctx, 3, numbers); err != nil {
		t.Fatal(err)
	}
}

// A plugin whose configSchema is JSON but not a JSON Schema that compiles is
// refused at upload; one stored before that check still loads, so its
// chains keep running, but no chain entry naming it can be saved.
func TestUncompilableSchema(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	m, host := newManager(t, st, "")
	for _, tc := range []struct{ name, old, new, want string }{
		{"an unknown type", `"type":"array"`, `"type":"arrax"`, "plugin refused: its configSchema is not a valid JSON Schema: at /properties/types/type: value must be one of"},
		{"a reference outside itself", `{"type":"string"}`, `{"$ref":"/etc/x"}`, "plugin refused: its configSchema is not a valid JSON Schema: it refers to https://govgate.invalid/etc/x, but a config schema must be self-contained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Upload(ctx, watWithSchema(t, tc.old, tc.new))
			if core.ErrorCode(err) != core.ECodeInvalidRequest || !strings.HasPrefix(core.ErrorMessage(err), tc.want) {
				t.Fatalf("got %v, want invalid_request %q", err, tc.want)
			}
		})
	}
	if list, err := m.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("a refused plugin was stored: %+v %v", list, err)
	}

	bad := watWithSchema(t, `"type":"array"`, `"type":"arrax"`)
	info, _, err := host.Check(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SavePlugin(ctx, core.StoredPlugin{Name: info.Name, Version: info.Version, SHA256: info.SHA256, Source: "upload", Wasm: bad}); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, loaded := host.Plugin("wat-type-filter"); !loaded {
		t.Fatal("a stored plugin with a bad schema was not loaded")
	}
	err = m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["vote.cast"]}`)}})
	want := "chain entry 0 (wat-type-filter): its configSchema is not a valid JSON Schema: at /properties/types/type"
	if core.ErrorCode(err) != core.ECodeInvalidRequest || !strings.HasPrefix(core.ErrorMessage(err), want) {
		t.Fatalf("a chain through a plugin whose schema does not compile: %v", err)
	}
	if chain, _ := m.Chain(ctx, core.GlobalChain); len(chain) != 0 {
		t.Fatalf("a refused chain was stored: %+v", chain)
	}
}

// TestPrepareComputesTheGlobalOutcomeAhead: Prepare runs the global chain
// for a notification off the caller's path; the deliveries that follow,
// to webhooks without a chain of their own, get that outcome without
// another plugin call, and one with its own chain still runs that chain.
func TestPrepareComputesTheGlobalOutcomeAhead(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	m, host := newManager(t, st, "")
	if _, err := m.Upload(ctx, watPlugin(t)); err != nil {
		t.Fatal(err)
	}
	vote := note(core.TypeVoteCast)
	body, _ := json.Marshal(vote)
	calls := func() uint64 { return host.Stats().Calls }

	// Run's preparers do the work, and say when they have.
	prepared := make(chan struct{}, 8)
	pluginmgr.OnPrepared(m, func() {
		select {
		case prepared <- struct{}{}:
		default:
		}
	})
	rctx, stop := context.WithCancel(ctx)
	running := make(chan struct{})
	go func() { defer close(running); m.Run(rctx, time.Hour) }()
	defer func() { stop(); <-running }()

	before := calls()
	m.Prepare(vote, body) // no global chain: nothing runs
	if got := calls(); got != before {
		t.Fatalf("Prepare without a global chain made %d calls", got-before)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["vote.cast"]}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := m.SetChain(ctx, 7, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["proposal.created"]}`)}}); err != nil {
		t.Fatal(err)
	}
	before = calls() // waking the plugin for the chains ran its samples
	m.Prepare(vote, body)
	select {
	case <-prepared:
	case <-time.After(10 * time.Second):
		t.Fatal("the notification was never prepared")
	}
	afterPrepare := calls()
	if afterPrepare != before+1 {
		t.Fatalf("Prepare made %d plugin calls, want 1", afterPrepare-before)
	}
	for _, webhook := range []int64{1, 2, 3} {
		out, err := m.Apply(ctx, vote, body, webhook)
		if err != nil || !out.Keep {
			t.Fatalf("webhook %d: %+v %v", webhook, out, err)
		}
	}
	if got := calls(); got != afterPrepare {
		t.Fatalf("deliveries after Prepare made %d more plugin calls", got-afterPrepare)
	}
	// Webhook 7's chain runs after the global one, whose step it finds done.
	if out, err := m.Apply(ctx, vote, body, 7); err != nil || out.Keep || calls() != afterPrepare+1 {
		t.Fatalf("a webhook's own chain: %+v %v, %d calls", out, err, calls()-afterPrepare)
	}
}

// TestPrepareIsBounded: Prepare starts no goroutine of its own. A burst of
// notifications waits in a bounded queue for Run's preparers; with Run not
// running, nothing is prepared and nothing grows.
func TestPrepareIsBounded(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	m, host := newManager(t, st, "")
	if _, err := m.Upload(ctx, watPlugin(t)); err != nil {
		t.Fatal(err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["vote.cast"]}`)}}); err != nil {
		t.Fatal(err)
	}
	calls, goroutines := host.Stats().Calls, runtime.NumGoroutine()
	for i := range 5000 {
		vote := note(core.TypeVoteCast)
		vote.ID = fmt.Sprintf("burst-%d", i)
		body, _ := json.Marshal(vote)
		m.Prepare(vote, body)
	}
	if got := host.Stats().Calls; got != calls {
		t.Fatalf("Prepare made %d plugin calls without Run", got-calls)
	}
	if got := runtime.NumGoroutine(); got > goroutines+5 {
		t.Fatalf("5,000 Prepares left %d goroutines, %d before", got, goroutines)
	}
}
