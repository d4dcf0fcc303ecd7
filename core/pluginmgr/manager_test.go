package pluginmgr_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/pluginmgr"
	"github.com/govgate/govgate/core/secrets"
	"github.com/govgate/govgate/core/store"
	"github.com/govgate/govgate/core/wasmhost"
)

func watPlugin(t *testing.T) []byte {
	b, err := os.ReadFile("../../plugins/wat-type-filter/plugin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newStore(t *testing.T, path string) *store.Store {
	key := make([]byte, 32)
	rand.Read(key)
	box, _ := secrets.New(key)
	st, err := store.Open(context.Background(), "sqlite:"+path, box, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
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
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "missing"}}); core.ErrorCode(err) != core.ECodeInvalidRequest {
		t.Fatalf("a chain naming an unknown plugin: %v", err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", FailurePolicy: "sometimes"}}); core.ErrorCode(err) != core.ECodeInvalidRequest {
		t.Fatalf("a bad failure policy: %v", err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["vote.cast"]}`)}}); err != nil {
		t.Fatal(err)
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
