package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/govgate/govgate/core/internal/dev/devchain"
)

// received is what a receiver path got: each notification's DAO, type and
// block.
type received struct {
	DAO  string
	Type string
	Data struct{ BlockNumber uint64 }
}

func (r *hookReceiver) received(path string) map[string]received {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]received{}
	for key, body := range r.bodies {
		p, id, _ := strings.Cut(key, " ")
		if p != path || r.got[key] == 0 {
			continue
		}
		var n received
		json.Unmarshal(body, &n)
		out[id] = n
	}
	return out
}

// waitCreated waits until path got dao's proposal.created of proposal p.
func (r *hookReceiver) waitCreated(t *testing.T, what, path, dao string, p *devchain.Proposal) {
	t.Helper()
	waitFor(t, what, 60*time.Second, func() bool {
		for _, n := range r.received(path) {
			if n.DAO == dao && n.Type == "proposal.created" && n.Data.BlockNumber == p.Receipt.BlockNumber.Uint64() {
				return true
			}
		}
		return false
	})
}

func daoLine(d *devchain.Deployment) string {
	return fmt.Sprintf("  - {slug: %s, name: %s, chain_id: %d, governor: %q, kind: %s, start_block: %d}", d.Slug, d.Slug, devchain.ChainID, d.Governor, d.Kind, d.StartBlock)
}

type indexerView struct {
	DAO              string
	Leader, CaughtUp bool
	LastIndexedBlock uint64
	NotifyFromBlock  uint64
	Fault            string
}

func daoStatus(t *testing.T, p *proc, slug string) (indexerView, bool) {
	_, body := do(t, "GET", "http://"+p.admin+"/admin/api/chains", adminToken, nil)
	var v struct {
		Items []struct{ Indexer []indexerView }
	}
	json.Unmarshal(body, &v)
	for _, c := range v.Items {
		for _, d := range c.Indexer {
			if d.DAO == slug {
				return d, true
			}
		}
	}
	return indexerView{}, false
}

// TestAdminAddsADAOAtRunTime runs two govgate processes on one PostgreSQL
// indexing the dev chain, and adds a DAO with history through the admin
// API of one of them: it backfills without pushing its history, then its
// new events reach the receiver, and both processes serve it; once
// removed, its events stop and neither serves it.
func TestAdminAddsADAOAtRunTime(t *testing.T) {
	if testing.Short() {
		t.Skip("long test")
	}
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4, BlockTime: 500 * time.Millisecond})
	// History of the DAO to add: a proposal with votes, before govgate knows it.
	old, err := c.Propose(ctx, c.OZ, 1, "# Before govgate", 11)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.OpenVoting(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Vote(ctx, old, 0, devchain.For, "history"); err != nil {
		t.Fatal(err)
	}
	cfg := chainConfig(c.RPCURL(), daoLine(c.Bravo))
	rcv := newReceiver(t)
	url := storetest.Postgres.NewDatabase(t)
	a := startGovgate(t, url, rcv.caFile, cfg)
	b := startGovgate(t, url, rcv.caFile, cfg)
	rcv.setSecret("/dao", a.register(t, rcv.url("/dao")))

	body := map[string]any{"slug": c.OZ.Slug, "name": "Added at run time", "chainId": devchain.ChainID, "governor": c.OZ.Governor.Hex(),
		"kind": string(c.OZ.Kind), "startBlock": c.OZ.StartBlock}
	resp, out := do(t, "POST", "http://"+a.admin+"/admin/api/daos", adminToken, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /admin/api/daos: %d %s", resp.StatusCode, out)
	}
	addedAt, _ := c.Head(ctx)
	// From the moment it is stored, its health says it is syncing (the
	// poll that covers it may already have started its backfill).
	resp, out = do(t, "GET", "http://"+a.api+"/"+c.OZ.Slug+"/health", "", nil)
	var health struct {
		Status string
		Checks struct {
			Indexer struct{ State, Output string }
		}
	}
	if err := json.Unmarshal(out, &health); err != nil || resp.StatusCode != http.StatusOK || health.Checks.Indexer.State != "syncing" ||
		health.Checks.Indexer.Output == "no indexer status" {
		t.Fatalf("health right after the addition: %d %s", resp.StatusCode, out)
	}
	t.Logf("health right after the addition: %s", health.Checks.Indexer.Output)
	// The leader backfills it: the old proposal is served by both processes.
	for _, p := range []*proc{a, b} {
		waitFor(t, "the added DAO's history to be served", 60*time.Second, func() bool {
			resp, out := do(t, "GET", "http://"+p.api+"/"+c.OZ.Slug+"/proposals/"+old.ID.String(), "", nil)
			return resp.StatusCode == 200 && strings.Contains(string(out), `"forVotes"`)
		})
	}
	var st indexerView
	waitFor(t, "the added DAO at the head", 60*time.Second, func() bool {
		for _, p := range []*proc{a, b} {
			if s, ok := daoStatus(t, p, c.OZ.Slug); ok && s.Leader && s.CaughtUp {
				st = s
				return true
			}
		}
		return false
	})
	if st.NotifyFromBlock <= old.VoteStart || st.NotifyFromBlock > addedAt.Number.Uint64()+20 {
		t.Fatalf("notify-from block %d: want after the history (%d), about where it was added (%d)", st.NotifyFromBlock, old.VoteStart, addedAt.Number.Uint64())
	}
	// New events reach the receiver.
	fresh, err := c.Propose(ctx, c.OZ, 1, "# After govgate", 12)
	if err != nil {
		t.Fatal(err)
	}
	rcv.waitCreated(t, "the new proposal's notification", "/dao", c.OZ.Slug, fresh)
	for id, n := range rcv.received("/dao") {
		if n.DAO == c.OZ.Slug && n.Data.BlockNumber < st.NotifyFromBlock {
			t.Errorf("history pushed: %s %s of block %d, below %d", id, n.Type, n.Data.BlockNumber, st.NotifyFromBlock)
		}
	}

	// Removed: both processes stop serving it, and its events stop.
	if resp, out := do(t, "DELETE", "http://"+b.admin+"/admin/api/daos/"+c.OZ.Slug, adminToken, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, out)
	}
	for _, p := range []*proc{a, b} {
		waitFor(t, "the removed DAO to be unknown", 30*time.Second, func() bool {
			resp, _ := do(t, "GET", "http://"+p.api+"/"+c.OZ.Slug+"/proposals", "", nil)
			return resp.StatusCode == http.StatusNotFound
		})
	}
	removedAt, _ := c.Head(ctx)
	if _, err := c.Propose(ctx, c.OZ, 1, "# After removal", 13); err != nil {
		t.Fatal(err)
	}
	// The other DAO still notifies: once its new proposal is in, the
	// removed DAO's would have been too.
	bravo, err := c.Propose(ctx, c.Bravo, 1, "# Still followed", 14)
	if err != nil {
		t.Fatal(err)
	}
	rcv.waitCreated(t, "the remaining DAO's proposal", "/dao", c.Bravo.Slug, bravo)
	for id, n := range rcv.received("/dao") {
		if n.DAO == c.OZ.Slug && n.Data.BlockNumber > removedAt.Number.Uint64() {
			t.Errorf("the removed DAO still notified %s %s of block %d", id, n.Type, n.Data.BlockNumber)
		}
	}
}

// TestRefusals: a governor without code, a governor of another kind and a
// chain whose RPC serves another chain each fail, with an error that names
// the cause: at start, when added, and in health.
func TestRefusals(t *testing.T) {
	c := startChain(t, devchain.Options{Accounts: 4})
	const nowhere = "0x00000000000000000000000000000000000D1e5e"

	t.Run("start with a governor without code", func(t *testing.T) {
		cfg := chainConfig(c.RPCURL(), fmt.Sprintf("  - {slug: ghost, name: Ghost, chain_id: 1337, governor: %q, kind: oz-governor}", nowhere))
		path := filepath.Join(t.TempDir(), "govgate.yaml")
		writeFile(t, path, cfg)
		out := runExpectFailure(t, []string{"GOVGATE_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "x.db")}, "serve", "--config", path)
		if !strings.Contains(out, "daos[0].governor") || !strings.Contains(out, "no contract") {
			t.Fatalf("output does not name daos[0].governor and its cause:\n%s", out)
		}
	})

	t.Run("added through the admin API", func(t *testing.T) {
		rcv := newReceiver(t)
		p := startGovgate(t, storetest.SQLite.NewDatabase(t), rcv.caFile, chainConfig(c.RPCURL(), daoLine(c.Bravo)))
		for _, tc := range []struct {
			name, governor, kind, field, says string
		}{
			{"no code", nowhere, "oz-governor", "governor", "no contract"},
			{"another kind", c.Bravo.Governor.Hex(), "governor-alpha", "kind", "GovernorBravo"},
			{"not an OpenZeppelin governor", c.Alpha.Governor.Hex(), "oz-governor", "kind", "COUNTING_MODE"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, out := do(t, "POST", "http://"+p.admin+"/admin/api/daos", adminToken,
					map[string]any{"slug": "refused", "name": "Refused", "chainId": devchain.ChainID, "governor": tc.governor, "kind": tc.kind})
				var e struct {
					Error struct{ Code, Message, Field string }
				}
				json.Unmarshal(out, &e)
				if resp.StatusCode != 422 || e.Error.Field != tc.field || !strings.Contains(e.Error.Message, tc.says) {
					t.Fatalf("%d %s: want 422 naming %s (%q)", resp.StatusCode, out, tc.field, tc.says)
				}
			})
		}
	})

	t.Run("an RPC serving another chain", func(t *testing.T) {
		cfg := strings.Replace(chainConfig(c.RPCURL(), strings.Replace(daoLine(c.Bravo), "chain_id: 1337", "chain_id: 5", 1)), "id: 1337", "id: 5", 1)
		rcv := newReceiver(t)
		p := startGovgate(t, storetest.SQLite.NewDatabase(t), rcv.caFile, cfg)
		waitFor(t, "health to fail with the cause", 30*time.Second, func() bool {
			resp, out := do(t, "GET", "http://"+p.api+"/"+c.Bravo.Slug+"/health", "", nil)
			return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(out), "chain id mismatch: the RPC serves chain 1337, configured as 5")
		})
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
