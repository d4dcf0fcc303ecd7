package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/devchain"
)

// TestDecodedActionsOverREST runs govgate serve against the dev chain, with
// the dev contracts' ABIs as the operator's decode.abi_dir, after dev-oz
// executed its actions proposal (a treasury transfer, a MultiSend batch, a
// TimelockController scheduleBatch, a UUPS upgrade with an initializer) and
// dev-bravo got a Bravo-style proposal. Every action served, by
// GET /{dao}/proposals/{id}, GET /{dao}/proposals and GET /proposals, and in
// proposal.created, decodes to the function and arguments the dev chain
// built it from, nested calls included. The actions are decoded as served,
// not stored, so one store (SQLite) is enough here.
func TestDecodedActionsOverREST(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4, Logger: slog.New(slog.DiscardHandler)})
	p, built, err := c.ActionsLifecycle(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	bravo, err := c.Propose(ctx, c.Bravo, 2, "Store 7", 7)
	if err != nil {
		t.Fatal(err)
	}
	abis := filepath.Join(t.TempDir(), "abis")
	if err := c.WriteABIs(abis); err != nil {
		t.Fatal(err)
	}
	var daos []string
	for _, d := range []*devchain.Deployment{c.OZ, c.Bravo} {
		daos = append(daos, fmt.Sprintf("  - {slug: %s, name: %s, chain_id: %d, governor: %q, kind: %s, start_block: %d, notify_history: true}",
			d.Slug, d.Slug, devchain.ChainID, d.Governor, d.Kind, d.StartBlock))
	}
	rcv := newReceiver(t)
	url, _ := sqliteURL(t)
	g := startGovgate(t, url, rcv.caFile, chainConfig(c.RPCURL(), strings.Join(daos, "\n")), "GOVGATE_DECODE_ABI_DIR="+abis)

	one := func(dao, id string) (core.Proposal, bool) {
		resp, err := http.Get("http://" + g.api + "/" + dao + "/proposals/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct{ Proposal core.Proposal }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
			return core.Proposal{}, false
		}
		return v.Proposal, true
	}
	var got core.Proposal
	waitFor(t, "the actions proposal to be indexed, executed", 60*time.Second, func() bool {
		var ok bool
		got, ok = one(c.OZ.Slug, p.ID.String())
		return ok && got.State == core.ProposalExecuted
	})
	if err := devchain.CheckActions(got.Actions, built); err != nil {
		t.Errorf("GET /%s/proposals/%s: %v", c.OZ.Slug, p.ID, err)
	}
	for _, path := range []string{"/" + c.OZ.Slug + "/proposals", "/proposals"} {
		var list struct{ Items []core.Proposal }
		getJSON(t, "http://"+g.api+path+"?limit=500", &list)
		found := false
		for _, it := range list.Items {
			if it.DAO == c.OZ.Slug && it.ProposalID == p.ID.String() {
				found = true
				if err := devchain.CheckActions(it.Actions, built); err != nil {
					t.Errorf("GET %s: %v", path, err)
				}
			}
			if it.Actions == nil {
				t.Errorf("GET %s: %s proposal %s without actions", path, it.DAO, it.ProposalID)
			}
		}
		if !found {
			t.Errorf("GET %s: no actions proposal", path)
		}
	}

	var b core.Proposal
	waitFor(t, "the Bravo proposal to be indexed", 30*time.Second, func() bool {
		var ok bool
		b, ok = one(c.Bravo.Slug, bravo.ID.String())
		return ok
	})
	if a := b.Actions; len(a) != 1 || !a[0].Decoded || a[0].Signature != "store(uint256)" || a[0].Source != "proposal" ||
		len(a[0].Args) != 1 || a[0].Args[0].Name != "newValue" || string(a[0].Args[0].Value) != `"7"` {
		t.Errorf("Bravo proposal's actions: %+v", a)
	}

	// proposal.created carries the same actions, beside the raw calls.
	_, body := do(t, "GET", "http://"+g.admin+"/admin/api/notifications?type=proposal.created&limit=500", adminToken, nil)
	var notes struct {
		Items []struct {
			ID, Type, DAO, OccurredAt string
			Data                      json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &notes); err != nil {
		t.Fatal(err)
	}
	sch := notificationSchema(t)
	seen := false
	for _, note := range notes.Items {
		// The notification, nested actions and all, is valid under the
		// published schema.
		raw, _ := json.Marshal(map[string]any{"id": note.ID, "type": note.Type, "dao": note.DAO, "occurredAt": note.OccurredAt, "data": note.Data})
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: %v\n%s", note.ID, err, raw)
		}
		var n struct {
			DAO  string
			Data struct {
				ProposalID string
				Calldatas  []string
				Actions    []core.Action
			}
		}
		n.DAO = note.DAO
		if err := json.Unmarshal(note.Data, &n.Data); err != nil {
			t.Fatal(err)
		}
		if n.DAO == c.OZ.Slug && n.Data.ProposalID == p.ID.String() {
			seen = true
			if len(n.Data.Calldatas) != len(built) {
				t.Errorf("proposal.created lost its raw calldatas: %d", len(n.Data.Calldatas))
			}
			if err := devchain.CheckActions(n.Data.Actions, built); err != nil {
				t.Errorf("proposal.created: %v", err)
			}
		}
	}
	if !seen {
		t.Errorf("no proposal.created for the actions proposal in %s", body)
	}
}

// TestSIGHUPReloadsOperatorABIs: govgate serve starts with an empty
// decode.abi_dir, so dev-oz's store(uint256), which the curated set does not
// hold, is served raw; the operator writes the dev contracts' ABIs there and
// sends SIGHUP, and the same proposal is served decoded from them, without a
// restart. A folder that no longer loads is refused with a log line naming
// the field, and what decoded before still does.
func TestSIGHUPReloadsOperatorABIs(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4, Logger: slog.New(slog.DiscardHandler)})
	p, err := c.Propose(ctx, c.OZ, 2, "Store 9", 9)
	if err != nil {
		t.Fatal(err)
	}
	abis := filepath.Join(t.TempDir(), "abis")
	if err := os.Mkdir(abis, 0o755); err != nil {
		t.Fatal(err)
	}
	dao := fmt.Sprintf("  - {slug: %s, name: %s, chain_id: %d, governor: %q, kind: %s, start_block: %d}",
		c.OZ.Slug, c.OZ.Slug, devchain.ChainID, c.OZ.Governor, c.OZ.Kind, c.OZ.StartBlock)
	rcv := newReceiver(t)
	url, _ := sqliteURL(t)
	g := startGovgate(t, url, rcv.caFile, chainConfig(c.RPCURL(), dao), "GOVGATE_DECODE_ABI_DIR="+abis)

	action := func() (a core.Action, ok bool) {
		var v struct{ Proposal core.Proposal }
		resp, err := http.Get("http://" + g.api + "/" + c.OZ.Slug + "/proposals/" + p.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil || len(v.Proposal.Actions) != 1 {
			return core.Action{}, false
		}
		return v.Proposal.Actions[0], true
	}
	var a core.Action
	waitFor(t, "the proposal to be indexed", 60*time.Second, func() bool {
		var ok bool
		a, ok = action()
		return ok
	})
	if a.Decoded {
		t.Fatalf("store(uint256) decoded before any ABI named it: %+v", a)
	}

	if err := c.WriteABIs(abis); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// Reload then serve: the process logs the reload once it took effect.
	waitFor(t, "the reload's log line", 30*time.Second, func() bool {
		return strings.Contains(g.logs(), "decode: reloaded the operator's ABIs and signatures")
	})
	if a, _ = action(); !a.Decoded || a.Signature != "store(uint256)" || a.Source != "abi" || len(a.Args) != 1 || a.Args[0].Name != "newValue" || string(a.Args[0].Value) != `"9"` {
		t.Fatalf("after SIGHUP: %+v", a)
	}

	// An ABI that no longer parses: refused, and the decoding stays.
	entries, err := os.ReadDir(abis)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the dev chain wrote no ABI: %v", err)
	}
	if err := os.WriteFile(filepath.Join(abis, entries[0].Name()), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refused reload's log line", 30*time.Second, func() bool {
		return strings.Contains(g.logs(), "decode: reload refused") && strings.Contains(g.logs(), "decode.abi_dir")
	})
	if a, _ = action(); !a.Decoded || a.Source != "abi" {
		t.Fatalf("a refused reload changed the decoding: %+v", a)
	}
	select {
	case <-g.exited:
		t.Fatal("govgate exited on SIGHUP")
	default:
	}
}
