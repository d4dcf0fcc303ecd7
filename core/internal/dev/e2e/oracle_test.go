package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/calldata"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
)

// oracleABI is what the test asks the governors, independently of the
// indexer: state(), the tallies (proposalVotes on OpenZeppelin, the
// proposals getter on Bravo and Alpha) and the quorum.
const oracleABI = `[
{"type":"function","name":"state","stateMutability":"view","inputs":[{"name":"id","type":"uint256"}],"outputs":[{"name":"","type":"uint8"}]},
{"type":"function","name":"proposalVotes","stateMutability":"view","inputs":[{"name":"id","type":"uint256"}],"outputs":[
 {"name":"againstVotes","type":"uint256"},{"name":"forVotes","type":"uint256"},{"name":"abstainVotes","type":"uint256"}]},
{"type":"function","name":"quorum","stateMutability":"view","inputs":[{"name":"timepoint","type":"uint256"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"quorumVotes","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"proposalSnapshot","stateMutability":"view","inputs":[{"name":"id","type":"uint256"}],"outputs":[{"name":"","type":"uint256"}]}
]`

// bravoProposalsABI and alphaProposalsABI are the public proposals(uint)
// getters: Bravo's struct has abstainVotes, Alpha's has not.
const bravoProposalsABI = `[{"type":"function","name":"proposals","stateMutability":"view","inputs":[{"name":"","type":"uint256"}],"outputs":[
 {"name":"id","type":"uint256"},{"name":"proposer","type":"address"},{"name":"eta","type":"uint256"},
 {"name":"startBlock","type":"uint256"},{"name":"endBlock","type":"uint256"},{"name":"forVotes","type":"uint256"},
 {"name":"againstVotes","type":"uint256"},{"name":"abstainVotes","type":"uint256"},{"name":"canceled","type":"bool"},{"name":"executed","type":"bool"}]}]`

const alphaProposalsABI = `[{"type":"function","name":"proposals","stateMutability":"view","inputs":[{"name":"","type":"uint256"}],"outputs":[
 {"name":"id","type":"uint256"},{"name":"proposer","type":"address"},{"name":"eta","type":"uint256"},
 {"name":"startBlock","type":"uint256"},{"name":"endBlock","type":"uint256"},{"name":"forVotes","type":"uint256"},
 {"name":"againstVotes","type":"uint256"},{"name":"canceled","type":"bool"},{"name":"executed","type":"bool"}]}]`

// oracle asks a governor at one block, over the chain's JSON-RPC.
type oracle struct {
	t     *testing.T
	gw    *chain.Gateway
	block *big.Int
}

func (o oracle) call(d *devchain.Deployment, abiJSON, method string, args ...any) []any {
	o.t.Helper()
	a, err := abi.JSON(strings.NewReader(abiJSON))
	if err != nil {
		o.t.Fatal(err)
	}
	data, err := a.Pack(method, args...)
	if err != nil {
		o.t.Fatal(err)
	}
	out, err := o.gw.CallContract(context.Background(), ethereum.CallMsg{To: &d.Governor, Data: data}, o.block)
	if err != nil {
		o.t.Fatalf("%s %s: %v", d.Slug, method, err)
	}
	vals, err := a.Methods[method].Outputs.Unpack(out)
	if err != nil {
		o.t.Fatalf("%s %s: %v", d.Slug, method, err)
	}
	return vals
}

// truth is what the contract says of one proposal.
type truth struct {
	state                  string
	forV, against, abstain string
	quorum                 *string // nil where it cannot be read yet (pending)
}

func (o oracle) truth(d *devchain.Deployment, id *big.Int, voteStart uint64) truth {
	var tr truth
	tr.state = core.StateName(o.call(d, oracleABI, "state", id)[0].(uint8))
	str := func(v any) string { return v.(*big.Int).String() }
	switch d.Kind {
	case core.KindOZGovernor:
		v := o.call(d, oracleABI, "proposalVotes", id)
		tr.against, tr.forV, tr.abstain = str(v[0]), str(v[1]), str(v[2])
		if tr.state != core.ProposalPending && tr.state != core.ProposalCanceled {
			snap := o.call(d, oracleABI, "proposalSnapshot", id)[0].(*big.Int)
			if snap.Uint64() != voteStart {
				o.t.Errorf("%s %s: snapshot %s, served voteStart %d", d.Slug, id, snap, voteStart)
			}
			q := str(o.call(d, oracleABI, "quorum", snap)[0])
			tr.quorum = &q
		}
	case core.KindGovernorBravo:
		v := o.call(d, bravoProposalsABI, "proposals", id)
		tr.forV, tr.against, tr.abstain = str(v[5]), str(v[6]), str(v[7])
	case core.KindGovernorAlpha:
		v := o.call(d, alphaProposalsABI, "proposals", id)
		tr.forV, tr.against, tr.abstain = str(v[5]), str(v[6]), "0"
	}
	if d.Kind != core.KindOZGovernor && tr.state != core.ProposalPending && tr.state != core.ProposalCanceled {
		q := str(o.call(d, oracleABI, "quorumVotes")[0])
		tr.quorum = &q
	}
	return tr
}

// TestServedProposalsAreTheContracts stages proposals in every state each
// governor family can reach (all eight across them, block and timestamp
// clocks), indexes the chain into a real store, and compares every proposal
// the REST API serves with what its governor answers to eth_call at the
// indexed block: state(), the tallies and the quorum at the snapshot. Then
// it moves the chain on and compares again, and checks every notification
// the indexer stored against the published JSON Schema.
func TestServedProposalsAreTheContracts(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Logger: slog.New(slog.DiscardHandler)})
	staged, err := c.StageAllStates(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Both stores index the same staged chain and are compared with it
	// before time moves on, then again after.
	type backend struct {
		name string
		st   *store.Store
		r    *indexer.Runner
		api  *httptest.Server
	}
	var backends []*backend
	for _, b := range storetest.Backends() {
		st := storetest.Open(t, b.NewDatabase(t), storetest.NewBox(t), store.Options{})
		gw := newGW(t, c)
		daos := c.DAOs()
		for i := range daos {
			daos[i].NotifyHistory = true // check every notification against the schema
		}
		// As govgate wires it: proposal.created carries decoded actions,
		// which the schema checks below.
		dec, err := calldata.New(calldata.Config{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := indexer.NewRunner(gw, st, indexer.NewLocalLocker(), devchain.ChainID, 0, daos, indexer.Config{}, indexer.Options{Logger: quiet, Actions: dec})
		if err != nil {
			t.Fatal(err)
		}
		api := serveAPI(t, daos, httpapi.ProposalRoutes(st, core.FixedDAOs(daos), quiet))
		backends = append(backends, &backend{name: b.Name, st: st, r: r, api: api})
	}
	gw := newGW(t, c)

	compare := func(t *testing.T, be *backend) map[string]int {
		t.Helper()
		if err := be.r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, d := range c.Deployments() {
			cur, _, err := be.st.Cursor(ctx, d.Slug)
			if err != nil {
				t.Fatal(err)
			}
			o := oracle{t: t, gw: gw, block: new(big.Int).SetUint64(cur.Block)}
			var list struct{ Items []core.Proposal }
			getJSON(t, be.api.URL+"/"+d.Slug+"/proposals?limit=500", &list)
			for _, p := range list.Items {
				id, _ := new(big.Int).SetString(p.ProposalID, 10)
				tr := o.truth(d, id, p.VoteStart)
				served := truth{state: p.State, forV: p.ForVotes, against: p.AgainstVotes, abstain: p.AbstainVotes, quorum: p.Quorum}
				if tr.quorum == nil {
					served.quorum = nil // not readable on chain yet: nothing to compare
				}
				if fmt.Sprint(served.state, served.forV, served.against, served.abstain, deref(served.quorum)) !=
					fmt.Sprint(tr.state, tr.forV, tr.against, tr.abstain, deref(tr.quorum)) {
					t.Errorf("%s proposal %s at block %d:\n served   %+v quorum %s\n contract %+v quorum %s",
						d.Slug, p.ProposalID, cur.Block, served, deref(served.quorum), tr, deref(tr.quorum))
				}
				if tr.quorum != nil && p.Quorum == nil {
					t.Errorf("%s proposal %s (%s): no quorum served, the contract says %s", d.Slug, p.ProposalID, p.State, *tr.quorum)
				}
				if p.Clock != d.Clock {
					t.Errorf("%s proposal %s: clock %q, want %q", d.Slug, p.ProposalID, p.Clock, d.Clock)
				}
				seen[p.State]++
			}
		}
		return seen
	}

	for _, be := range backends {
		t.Run(be.name+"/staged", func(t *testing.T) {
			seen := compare(t, be)
			for _, s := range core.ProposalStates {
				if seen[s] == 0 {
					t.Errorf("no proposal served in state %s: %v", s, seen)
				}
			}
			for _, p := range staged {
				var got struct{ Proposal core.Proposal }
				getJSON(t, be.api.URL+"/"+p.DAO.Slug+"/proposals/"+p.ID.String(), &got)
				if got.Proposal.State != p.Expect {
					t.Errorf("%s proposal %s: served %s, staged as %s", p.DAO.Slug, p.ID, got.Proposal.State, p.Expect)
				}
			}
			var active struct{ Items []core.Proposal }
			getJSON(t, be.api.URL+"/proposals?state=active&limit=500", &active)
			if len(active.Items) != seen[core.ProposalActive] {
				t.Errorf("GET /proposals?state=active: %d, the DAOs serve %d", len(active.Items), seen[core.ProposalActive])
			}
			t.Logf("served = contract for %v", seen)
		})
	}

	// Time moves on: pending proposals open, active ones close.
	stagedHead, err := c.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Mine(40)
	if err := c.AdjustTime(3600e9); err != nil {
		t.Fatal(err)
	}
	for _, be := range backends {
		t.Run(be.name+"/later", func(t *testing.T) {
			t.Logf("after 40 blocks and an hour: %v", compare(t, be))

			// Every notification the indexer stored is valid under the schema.
			sch := notificationSchema(t)
			ns, err := be.st.ListNotifications(ctx, core.NotificationFilter{Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			types := map[string]int{}
			for _, n := range ns {
				body, err := store.NotificationBody(n)
				if err != nil {
					t.Fatal(err)
				}
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(v); err != nil {
					t.Errorf("%s %s: %v\n%s", n.Type, n.ID, err, body)
				}
				types[n.Type]++
			}
			for _, typ := range []string{core.TypeProposalActive, core.TypeProposalSucceeded, core.TypeProposalDefeated, core.TypeProposalExpired, core.TypeVoteOverridden} {
				if types[typ] == 0 {
					t.Errorf("no %s notification among %v", typ, types)
				}
			}
			checkTimedPayloads(t, c, gw, ns, stagedHead.Number.Uint64())
			checkTimelinesAndStats(t, c, be.api.URL)
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func notificationSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile("../../../../docs/schemas/notification.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// checkTimedPayloads checks every time-driven notification against the
// governor at the block it names: its state, tallies and quorum are what
// state(), proposalVotes() and quorum() answer there, however the indexer
// batched its work (here: the whole staged history in a few batches, a
// proposal's opening, votes and close in one). Each proposal gets each
// one at most once, and the offset-clock governor gets them all.
//
// Only the changes after the staged head are compared with the contract:
// the staged history lies beyond the 128 blocks whose state the simulated
// node keeps, where the indexer can read neither the clock nor the quorum
// at past blocks and names the block where it saw the change instead.
func checkTimedPayloads(t *testing.T, c *devchain.Chain, gw *chain.Gateway, ns []core.Notification, after uint64) {
	t.Helper()
	byGov := map[string]*devchain.Deployment{}
	for _, d := range c.Deployments() {
		byGov[d.Governor.Hex()] = d
	}
	seen := map[string]int{}
	offset := map[string]int{}
	for _, n := range ns {
		switch n.Type {
		case core.TypeProposalActive, core.TypeProposalSucceeded, core.TypeProposalDefeated, core.TypeProposalExpired:
		default:
			continue
		}
		var data struct {
			Governor, ProposalID, State, ForVotes, AgainstVotes, AbstainVotes string
			BlockNumber                                                       uint64
			Quorum                                                            *string
			VoteStart                                                         string
		}
		if err := json.Unmarshal(n.Data, &data); err != nil {
			t.Fatal(err)
		}
		d := byGov[data.Governor]
		key := d.Slug + " " + data.ProposalID + " " + n.Type
		if seen[key]++; seen[key] > 1 {
			t.Errorf("%s: more than once", key)
		}
		if d == c.OZOffset {
			offset[n.Type]++
		}
		id, _ := new(big.Int).SetString(data.ProposalID, 10)
		vs, _ := strconv.ParseUint(data.VoteStart, 10, 64)
		if data.BlockNumber <= after || !served(gw, d, data.BlockNumber) {
			// The simulated node keeps the state of its last 128 blocks
			// only (the staged history seals GovernorAlpha's 40,320).
			continue
		}
		o := oracle{t: t, gw: gw, block: new(big.Int).SetUint64(data.BlockNumber)}
		tr := o.truth(d, id, vs)
		got := truth{state: data.State, forV: data.ForVotes, against: data.AgainstVotes, abstain: data.AbstainVotes, quorum: data.Quorum}
		if tr.quorum == nil {
			got.quorum = nil
		}
		if n.Type == core.TypeProposalActive && (tr.state == core.ProposalDefeated || tr.state == core.ProposalSucceeded) {
			// The whole window passed in one block (a time jump on a
			// timestamp clock): voting opened and closed there.
			tr.state = core.ProposalActive
		}
		if fmt.Sprint(got.state, got.forV, got.against, got.abstain, deref(got.quorum)) != fmt.Sprint(tr.state, tr.forV, tr.against, tr.abstain, deref(tr.quorum)) {
			t.Errorf("%s at block %d:\n payload  %+v quorum %s\n contract %+v quorum %s", key, data.BlockNumber, got, deref(got.quorum), tr, deref(tr.quorum))
		}
		if data.BlockNumber > 0 && n.Type != core.TypeProposalExpired && served(gw, d, data.BlockNumber-1) {
			// The block before the one named still had the old state: the
			// notification names the block where state() changed.
			prev := oracle{t: t, gw: gw, block: new(big.Int).SetUint64(data.BlockNumber - 1)}.truth(d, id, vs)
			if prev.state == tr.state && prev.state != core.ProposalActive {
				t.Errorf("%s: state() was already %s at block %d, before the block named", key, tr.state, data.BlockNumber-1)
			}
		}
	}
	for _, typ := range []string{core.TypeProposalActive, core.TypeProposalSucceeded, core.TypeProposalDefeated} {
		if offset[typ] == 0 {
			t.Errorf("dev-offset-clock: no %s among %v", typ, offset)
		}
	}
}

// checkTimelinesAndStats checks each served proposal's timeline against the
// events it names, and its statistics against its tallies.
func checkTimelinesAndStats(t *testing.T, c *devchain.Chain, api string) {
	t.Helper()
	ctx := context.Background()
	for _, d := range c.Deployments() {
		var list struct{ Items []core.Proposal }
		getJSON(t, api+"/"+d.Slug+"/proposals?limit=500", &list)
		for _, p := range list.Items {
			var got struct {
				Proposal   core.Proposal
				Timeline   []core.TimelineEntry
				Statistics core.VoteStats
			}
			getJSON(t, api+"/"+d.Slug+"/proposals/"+p.ProposalID, &got)
			if len(got.Timeline) == 0 || got.Timeline[0].Event != core.TimelineCreated || got.Timeline[0].Block != p.CreatedBlock || got.Timeline[0].TxHash != p.CreatedTx {
				t.Errorf("%s %s: timeline %+v does not start with its creation at %d", d.Slug, p.ProposalID, got.Timeline, p.CreatedBlock)
			}
			for _, e := range got.Timeline {
				if e.TxHash == "" {
					continue
				}
				r, err := c.Client().TransactionReceipt(ctx, common.HexToHash(e.TxHash))
				if err != nil || r.BlockNumber.Uint64() != e.Block {
					t.Errorf("%s %s: timeline %s at block %d, tx %s: receipt %v, %v", d.Slug, p.ProposalID, e.Event, e.Block, e.TxHash, r, err)
				}
			}
			if last := got.Timeline[len(got.Timeline)-1].Event; last != p.State && !(p.State == core.ProposalActive && last == core.TimelineExtended) && p.State != core.ProposalPending {
				t.Errorf("%s %s: state %s, timeline ends with %s", d.Slug, p.ProposalID, p.State, last)
			}
			st := got.Statistics
			if st.ForWeight != p.ForVotes || st.AgainstWeight != p.AgainstVotes || st.AbstainWeight != p.AbstainVotes {
				t.Errorf("%s %s: statistics %s/%s/%s, tallies %s/%s/%s", d.Slug, p.ProposalID, st.ForWeight, st.AgainstWeight, st.AbstainWeight, p.ForVotes, p.AgainstVotes, p.AbstainVotes)
			}
		}
	}
}

// served reports whether the node still answers calls at block.
func served(gw *chain.Gateway, d *devchain.Deployment, block uint64) bool {
	_, err := gw.CallContract(context.Background(), ethereum.CallMsg{To: &d.Governor}, new(big.Int).SetUint64(block))
	return err == nil || !strings.Contains(err.Error(), "not available")
}
