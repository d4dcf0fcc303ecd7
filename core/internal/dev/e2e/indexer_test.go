package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/govgate/govgate/core/internal/dev/devchain"
)

// chainConfig is a configuration that indexes the dev chain at rpc.
func chainConfig(rpc string, daos string) string {
	return strings.Replace(deliveryConfig, "daos:", `chains:
  - {id: 1337, name: devchain, rpc: ["`+rpc+`"], confirmations: 0, request_timeout: 5s}
indexer: {poll_interval: 300ms, lock_retry: 500ms}
daos:`+"\n"+daos+"\n#", 1)
}

type chainsView struct {
	Items []struct {
		Indexer []struct {
			DAO              string
			Leader           bool
			LastIndexedBlock uint64
		}
	}
}

func leader(t *testing.T, p *proc) bool {
	_, body := do(t, "GET", "http://"+p.admin+"/admin/api/chains", adminToken, nil)
	var v chainsView
	json.Unmarshal(body, &v)
	for _, c := range v.Items {
		for _, d := range c.Indexer {
			if d.Leader {
				return true
			}
		}
	}
	return false
}

// TestIndexerFailover runs two govgate processes on one PostgreSQL against
// a real chain: one indexes it; when it is killed, the other takes over
// within seconds, and every event is notified exactly once.
func TestIndexerFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("long test")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startChain(t, devchain.Options{BlockTime: 500 * time.Millisecond})
	var daos []string
	for _, d := range c.DAOs() {
		daos = append(daos, fmt.Sprintf("  - {slug: %s, name: %s, chain_id: %d, governor: %q, kind: %s, start_block: %d}", d.Slug, d.Slug, d.ChainID, d.Governor, d.Kind, d.StartBlock))
	}
	cfg := chainConfig(c.RPCURL(), strings.Join(daos, "\n"))
	rcv := newReceiver(t)
	url := storetest.Postgres.NewDatabase(t)
	a := startGovgate(t, url, rcv.caFile, cfg)
	b := startGovgate(t, url, rcv.caFile, cfg)
	rcv.setSecret("/idx", a.register(t, rcv.url("/idx")))

	// Governance activity on both DAOs, and deliveries of what is indexed.
	activity := make(chan error, 1)
	go func() { activity <- c.RunActivity(ctx, 2*time.Second) }()
	waitFor(t, "one process to lead the chain", 30*time.Second, func() bool { return leader(t, a) || leader(t, b) })
	first, second := a, b
	if leader(t, b) {
		first, second = b, a
	}
	if leader(t, second) {
		t.Fatal("both processes lead the chain")
	}
	waitFor(t, "notifications from the chain", 60*time.Second, func() bool { return rcv.distinct() >= 5 })
	before := rcv.distinct()

	first.kill()
	killedAt := time.Now()
	waitFor(t, "the other process to take the chain over", 20*time.Second, func() bool { return leader(t, second) })
	t.Logf("took over %.1fs after the kill", time.Since(killedAt).Seconds())
	waitFor(t, "notifications to keep coming after the takeover", 60*time.Second, func() bool { return rcv.distinct() >= before+5 })
	cancel()

	// Every notification the two processes stored reaches the receiver;
	// duplicates can only be deliveries the killed process had in flight
	// (at most its workers plus its prefetch).
	var stored []string
	waitFor(t, "every stored notification to be delivered", 60*time.Second, func() bool {
		_, body := do(t, "GET", "http://"+second.admin+"/admin/api/notifications?limit=500", adminToken, nil)
		var list struct{ Items []struct{ ID string } }
		json.Unmarshal(body, &list)
		stored = stored[:0]
		for _, n := range list.Items {
			stored = append(stored, n.ID)
		}
		for _, id := range stored {
			if rcv.count("/idx", id) == 0 {
				return false
			}
		}
		return true
	})
	dups := 0
	for _, n := range rcv.snapshot() {
		if n > 1 {
			dups++
		}
	}
	if len(stored) < before+5 || rcv.distinct() != len(stored) {
		t.Errorf("%d notifications stored, %d distinct delivered", len(stored), rcv.distinct())
	}
	if dups > 32+2*64 {
		t.Errorf("%d notifications delivered more than once", dups)
	}
	t.Logf("%d notifications, %d delivered twice (in flight at the kill)", len(stored), dups)
	checkTimeDriven(t, second, c)
}

// checkTimeDriven checks, on what a process serves, that every proposal
// created after a DAO's notify-from block got its time-driven notifications
// exactly once: proposal.active once it left pending (unless canceled),
// one closing outcome once voting ended, matching its state,
// proposal.expired once it expired, and proposal.ending_soon at most once
// per lead.
func checkTimeDriven(t *testing.T, p *proc, c *devchain.Chain) {
	t.Helper()
	_, body := do(t, "GET", "http://"+p.admin+"/admin/api/notifications?limit=500", adminToken, nil)
	var list struct {
		Items []struct {
			ID, Type, DAO string
			Data          struct {
				ProposalID  string
				LeadSeconds int64
			}
		}
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{} // dao/proposal/type
	for _, n := range list.Items {
		count[n.DAO+"/"+n.Data.ProposalID+"/"+n.Type]++
		if n.Type == "proposal.ending_soon" {
			// One per lead: the same lead twice is a duplicate.
			lead := fmt.Sprintf("%s/%s/%s/%d", n.DAO, n.Data.ProposalID, n.Type, n.Data.LeadSeconds)
			if count[lead]++; count[lead] > 1 {
				t.Errorf("%s proposal %s: proposal.ending_soon for the %d s lead twice", n.DAO, n.Data.ProposalID, n.Data.LeadSeconds)
			}
		}
	}
	checked := 0
	for _, d := range c.DAOs() {
		_, body := do(t, "GET", "http://"+p.api+"/"+d.Slug+"/health", "", nil)
		var h struct {
			Checks struct {
				Indexer struct{ NotifyFromBlock, LastIndexedBlock uint64 }
			}
		}
		json.Unmarshal(body, &h)
		_, body = do(t, "GET", "http://"+p.api+"/"+d.Slug+"/proposals?limit=500", "", nil)
		var props struct {
			Items []struct {
				ProposalID, State string
				CreatedBlock      uint64
			}
		}
		if err := json.Unmarshal(body, &props); err != nil {
			t.Fatal(err)
		}
		for _, pr := range props.Items {
			if pr.CreatedBlock < h.Checks.Indexer.NotifyFromBlock || pr.State == "canceled" {
				continue
			}
			key := d.Slug + "/" + pr.ProposalID + "/"
			wantActive, wantClosed := 1, 1
			switch pr.State {
			case "pending":
				wantActive, wantClosed = 0, 0
			case "active":
				wantClosed = 0
			}
			closed := count[key+"proposal.succeeded"] + count[key+"proposal.defeated"]
			if count[key+"proposal.active"] != wantActive || closed != wantClosed {
				t.Errorf("%s proposal %s (%s): %d proposal.active, %d closing notifications; want %d and %d",
					d.Slug, pr.ProposalID, pr.State, count[key+"proposal.active"], closed, wantActive, wantClosed)
			}
			if pr.State == "defeated" && count[key+"proposal.defeated"] != 1 {
				t.Errorf("%s proposal %s defeated without proposal.defeated", d.Slug, pr.ProposalID)
			}
			wantExpired := 0
			if pr.State == "expired" {
				wantExpired = 1
			}
			if n := count[key+"proposal.expired"]; n != wantExpired {
				t.Errorf("%s proposal %s (%s): %d proposal.expired, want %d", d.Slug, pr.ProposalID, pr.State, n, wantExpired)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no proposal to check the time-driven notifications of")
	}
	t.Logf("time-driven notifications checked on %d proposals", checked)
}
