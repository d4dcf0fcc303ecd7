package indexer

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/calldata"
	"github.com/govgate/govgate/core/internal/dev/devchain"
)

// TestProposalCreatedCarriesActions indexes dev-oz's actions proposal (a
// treasury transfer, a MultiSend batch, a timelock scheduleBatch and a
// proxy upgrade with an initializer) and a Bravo proposal, with the
// calldata decoder the gateway wires in, and checks proposal.created: the
// raw calls as before, and beside them the actions, decoded to the
// functions and arguments the dev chain built them from, nested calls
// included.
func TestProposalCreatedCarriesActions(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 4})
	gw := newGateway(t, c.ChainConfig())
	_, built, err := c.ActionsLifecycle(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Propose(ctx, c.Bravo, 2, "Store 7", 7); err != nil {
		t.Fatal(err)
	}
	abis := t.TempDir()
	if err := c.WriteABIs(abis); err != nil {
		t.Fatal(err)
	}
	dec, err := calldata.New(calldata.Config{ABIDir: abis})
	if err != nil {
		t.Fatal(err)
	}
	store := newMemStore()
	daos := []core.DAO{c.OZ.DAO(), c.Bravo.DAO()}
	for i := range daos {
		daos[i].NotifyHistory = true
	}
	r, err := NewRunner(gw, store, NewLocalLocker(), devchain.ChainID, 0, daos, Config{}, Options{Logger: quiet, Actions: dec})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, n := range store.allNotifications() {
		if n.Type != core.TypeProposalCreated {
			continue
		}
		seen++
		var d struct {
			Targets, Calldatas, Signatures []string
			Actions                        []core.Action
		}
		if err := json.Unmarshal(n.Data, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Targets) == 0 || len(d.Calldatas) != len(d.Targets) || len(d.Signatures) != len(d.Targets) {
			t.Errorf("%s: the raw calls are gone: %s", n.DAO, n.Data)
		}
		switch n.DAO {
		case c.OZ.Slug:
			if err := devchain.CheckActions(d.Actions, built); err != nil {
				t.Errorf("dev-oz: %v", err)
			}
			if os.Getenv("GOVGATE_SHOW_ACTIONS") != "" {
				b, _ := json.MarshalIndent(d.Actions, "", "  ")
				t.Logf("%s", b)
			}
		case c.Bravo.Slug:
			a := d.Actions
			if len(a) != 1 || !a[0].Decoded || a[0].Signature != "store(uint256)" || a[0].Source != calldata.SourceProposal ||
				len(a[0].Args) != 1 || a[0].Args[0].Name != "newValue" || string(a[0].Args[0].Value) != `"7"` {
				t.Errorf("dev-bravo: %+v", a)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d proposal.created notifications, want 2", seen)
	}
}
