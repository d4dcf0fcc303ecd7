package e2e_test

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
)

// tokenOracleABI is what the test asks a voting token: OpenZeppelin's
// getVotes, Compound's and Uniswap's getCurrentVotes, and delegates.
const tokenOracleABI = `[
{"type":"function","name":"getVotes","stateMutability":"view","inputs":[{"name":"a","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"getCurrentVotes","stateMutability":"view","inputs":[{"name":"a","type":"address"}],"outputs":[{"name":"","type":"uint96"}]},
{"type":"function","name":"delegates","stateMutability":"view","inputs":[{"name":"a","type":"address"}],"outputs":[{"name":"","type":"address"}]},
{"type":"function","name":"getPastVotes","stateMutability":"view","inputs":[{"name":"a","type":"address"},{"name":"t","type":"uint256"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"getPriorVotes","stateMutability":"view","inputs":[{"name":"a","type":"address"},{"name":"b","type":"uint256"}],"outputs":[{"name":"","type":"uint96"}]},
{"type":"event","name":"DelegateChanged","anonymous":false,"inputs":[{"name":"delegator","type":"address","indexed":true},{"name":"fromDelegate","type":"address","indexed":true},{"name":"toDelegate","type":"address","indexed":true}]},
{"type":"event","name":"DelegateVotesChanged","anonymous":false,"inputs":[{"name":"delegate","type":"address","indexed":true},{"name":"previousVotes","type":"uint256","indexed":false},{"name":"newVotes","type":"uint256","indexed":false}]}
]`

// tokenTruth returns an account's voting power and delegate as the token
// answers at block.
func tokenTruth(t *testing.T, gw *chain.Gateway, token, account common.Address, block *big.Int) (string, common.Address) {
	t.Helper()
	a, _ := abi.JSON(strings.NewReader(tokenOracleABI))
	call := func(method string) ([]any, error) {
		data, _ := a.Pack(method, account)
		out, err := gw.CallContract(context.Background(), ethereum.CallMsg{To: &token, Data: data}, block)
		if err != nil {
			return nil, err
		}
		return a.Methods[method].Outputs.Unpack(out)
	}
	votes, err := call("getVotes")
	if err != nil {
		if votes, err = call("getCurrentVotes"); err != nil {
			t.Fatalf("token %s: neither getVotes nor getCurrentVotes: %v", token, err)
		}
	}
	del, err := call("delegates")
	if err != nil {
		t.Fatalf("token %s delegates: %v", token, err)
	}
	return votes[0].(*big.Int).String(), del[0].(common.Address)
}

// TestServedDelegationIsTheTokens moves voting power around on every dev
// DAO's token — re-delegations, delegating away, undelegating, transfers
// between holders with different delegates, then rounds of the dev
// activity's delegation scene among the spare dev accounts and its crowd
// (devchain.MoveDelegations) — indexes it into a real store, and
// compares, for every account that ever delegated or held power, the voting
// power and delegate the REST API serves with the token's own getVotes
// (getCurrentVotes on Uniswap's) and delegates() at the indexed block: also
// after a reorganisation that undoes a re-delegation.
func TestServedDelegationIsTheTokens(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{Accounts: 8, Logger: quiet})
	accts := c.Accounts()
	tokens := map[common.Address]*devchain.Deployment{}
	for _, d := range c.Deployments() {
		tokens[d.Token] = d
	}
	for _, d := range tokens {
		bal, err := c.Balance(ctx, d, accts[6])
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			name string
			do   func() error
		}{
			{"1 delegates to 2", func() error { _, err := c.Delegate(ctx, d, 1, accts[2]); return err }},
			{"3 delegates to 2", func() error { _, err := c.Delegate(ctx, d, 3, accts[2]); return err }},
			{"4 delegates to 5", func() error { _, err := c.Delegate(ctx, d, 4, accts[5]); return err }},
			{"1 re-delegates to 5", func() error { _, err := c.Delegate(ctx, d, 1, accts[5]); return err }},
			{"7 undelegates", func() error { _, err := c.Delegate(ctx, d, 7, common.Address{}); return err }},
			{"6 sends a third to 4", func() error {
				_, err := c.Transfer(ctx, d, 6, accts[4], new(big.Int).Div(bal, big.NewInt(3)))
				return err
			}},
		} {
			if err := step.do(); err != nil {
				t.Fatalf("%s: %s: %v", d.Slug, step.name, err)
			}
		}
	}
	// Then the rounds of the activity's delegation scene: newcomers, first
	// delegations, re-delegation chains, returns to self, undelegations,
	// transfers to and from holders without a delegate, on every token.
	scene := map[common.Address]bool{}
	moves := map[string]int{}
	for round := range 4 {
		r, err := c.MoveDelegations(ctx, round)
		if err != nil {
			t.Fatalf("delegation round %d: %v", round, err)
		}
		for _, a := range r.Accounts {
			scene[a] = true
		}
		for _, m := range r.Moves {
			moves[m.Kind]++
		}
	}
	t.Logf("delegation scene: %d accounts, moves %v", len(scene), moves)

	for _, b := range []struct {
		name string
		url  func(t *testing.T) string
		to   int // whom account 2 re-delegates to before the reorganisation
	}{
		{"sqlite", func(t *testing.T) string { return storetest.SQLite.NewDatabase(t) }, 3},
		{"postgres", func(t *testing.T) string { return storetest.Postgres.NewDatabase(t) }, 4},
	} {
		t.Run(b.name, func(t *testing.T) {
			st := storetest.Open(t, b.url(t), storetest.NewBox(t), store.Options{})
			gw := newGW(t, c)
			daos := c.DAOs()
			r, err := indexer.NewRunner(gw, st, indexer.NewLocalLocker(), devchain.ChainID, 0, daos, indexer.Config{}, indexer.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			api := serveAPI(t, daos, httpapi.ProposalRoutes(st, core.FixedDAOs(daos), quiet), httpapi.DelegateRoutes(st, core.FixedDAOs(daos), quiet))

			compare := func(t *testing.T) int {
				t.Helper()
				if err := r.Sync(ctx); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, d := range c.Deployments() {
					cur, _, _ := st.Cursor(ctx, d.Slug)
					block := new(big.Int).SetUint64(cur.Block)
					accounts := map[common.Address]bool{}
					for _, a := range accts {
						accounts[a] = true
					}
					for a := range scene {
						accounts[a] = true
					}
					var list struct {
						Items []core.Delegate
					}
					getJSON(t, api.URL+"/"+d.Slug+"/delegates?limit=500", &list)
					for _, del := range list.Items {
						accounts[common.HexToAddress(del.Address)] = true
					}
					for a := range accounts {
						var acct struct {
							Delegation *core.Delegation
							Delegate   *core.Delegate
						}
						getJSON(t, api.URL+"/"+d.Slug+"/accounts/"+strings.ToLower(a.Hex()), &acct)
						power, delegate := "0", common.Address{}
						if acct.Delegate != nil {
							power = acct.Delegate.VotingPower
						}
						if acct.Delegation != nil {
							delegate = common.HexToAddress(acct.Delegation.Delegate)
						}
						wantPower, wantDelegate := tokenTruth(t, gw, d.Token, a, block)
						if power != wantPower || delegate != wantDelegate {
							t.Errorf("%s account %s at block %d: served power %s delegate %s; token says %s and %s",
								d.Slug, a, cur.Block, power, delegate, wantPower, wantDelegate)
						}
						n++
					}
				}
				return n
			}
			t.Logf("%d accounts agree with their tokens", compare(t))
			for _, d := range c.Deployments() {
				checkPowerOverTime(t, c, gw, st, api.URL, d, accts, scene)
			}

			// Account 2 re-delegates on dev-oz's token; a reorganisation then
			// takes that block away.
			head, err := c.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			to := accts[b.to]
			if _, err := c.Delegate(ctx, c.OZ, 2, to); err != nil {
				t.Fatal(err)
			}
			compare(t)
			var acct struct{ Delegation *core.Delegation }
			getJSON(t, api.URL+"/"+c.OZ.Slug+"/accounts/"+accts[2].Hex(), &acct)
			if acct.Delegation == nil || acct.Delegation.Delegate != to.Hex() {
				t.Fatalf("re-delegation not served: %+v", acct.Delegation)
			}
			if err := c.Fork(head.Hash()); err != nil {
				t.Fatal(err)
			}
			compare(t) // the chain stands at the fork point: the re-delegation is gone
			getJSON(t, api.URL+"/"+c.OZ.Slug+"/accounts/"+accts[2].Hex(), &acct)
			if acct.Delegation != nil && acct.Delegation.Delegate == to.Hex() {
				t.Fatalf("the reorganisation did not undo the re-delegation: %+v", acct.Delegation)
			}
			c.Mine(3) // the pool may seal the re-delegation again, in another block
			compare(t)

			// The leaderboard is ordered by power and pages without gaps.
			var seen []core.Delegate
			before := ""
			for {
				var page struct {
					Items      []core.Delegate
					NextBefore *string
				}
				url := api.URL + "/" + c.OZ.Slug + "/delegates?limit=2"
				if before != "" {
					url += "&before=" + before
				}
				getJSON(t, url, &page)
				seen = append(seen, page.Items...)
				if page.NextBefore == nil {
					break
				}
				before = *page.NextBefore
			}
			var all struct{ Items []core.Delegate }
			getJSON(t, api.URL+"/"+c.OZ.Slug+"/delegates?limit=500", &all)
			if len(seen) != len(all.Items) || len(seen) == 0 {
				t.Fatalf("paged %d delegates, listed %d", len(seen), len(all.Items))
			}
			for i := 1; i < len(seen); i++ {
				a, _ := new(big.Int).SetString(seen[i-1].VotingPower, 10)
				b, _ := new(big.Int).SetString(seen[i].VotingPower, 10)
				if a.Cmp(b) < 0 || seen[i].Address == seen[i-1].Address {
					t.Fatalf("leaderboard out of order at %d: %s then %s", i, seen[i-1].VotingPower, seen[i].VotingPower)
				}
			}
		})
	}
}

// pastVotes is what the token answers for account's votes at a past
// timepoint, asked at block: getPastVotes (ERC20Votes), or getPriorVotes
// on Uniswap's and Compound's tokens.
func pastVotes(t *testing.T, gw *chain.Gateway, token, account common.Address, timepoint uint64, block *big.Int) string {
	t.Helper()
	a, _ := abi.JSON(strings.NewReader(tokenOracleABI))
	for _, method := range []string{"getPastVotes", "getPriorVotes"} {
		data, _ := a.Pack(method, account, new(big.Int).SetUint64(timepoint))
		out, err := gw.CallContract(context.Background(), ethereum.CallMsg{To: &token, Data: data}, block)
		if err != nil {
			continue
		}
		v, err := a.Methods[method].Outputs.Unpack(out)
		if err != nil {
			t.Fatalf("token %s %s: %v", token, method, err)
		}
		return v[0].(*big.Int).String()
	}
	t.Fatalf("token %s answers neither getPastVotes nor getPriorVotes for timepoint %d at block %s", token, timepoint, block)
	return ""
}

// checkPowerOverTime compares what the REST API serves of each account's
// voting power over time on d's token with the token itself: the history
// pages are its DelegateVotesChanged events (block, transaction, log,
// previous and new votes, and the governor's timepoint there); ?at= on
// accounts and delegates, at each timepoint where the power changed and
// the one before, is what getPastVotes answers, and the delegate it names
// is the one of the account's last DelegateChanged by then.
func checkPowerOverTime(t *testing.T, c *devchain.Chain, gw *chain.Gateway, st *store.Store, api string, d *devchain.Deployment, accts []common.Address, scene map[common.Address]bool) {
	t.Helper()
	ctx := context.Background()
	cur, _, err := st.Cursor(ctx, d.Slug)
	if err != nil {
		t.Fatal(err)
	}
	block := new(big.Int).SetUint64(cur.Block)
	a, _ := abi.JSON(strings.NewReader(tokenOracleABI))
	changed, votesChanged := a.Events["DelegateChanged"], a.Events["DelegateVotesChanged"]
	logs, err := gw.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(int64(d.StartBlock)), ToBlock: block,
		Addresses: []common.Address{d.Token}, Topics: [][]common.Hash{{changed.ID, votesChanged.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	// The governor's clock at a block: the block number plus the offset
	// of an L2-like token, or the block's time on a timestamp clock.
	headers := map[uint64]uint64{}
	timepoint := func(n uint64) uint64 {
		if d.Clock != core.ClockTimestamp {
			return n + d.ClockOffset
		}
		if tm, ok := headers[n]; ok {
			return tm
		}
		h, err := c.Client().HeaderByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		headers[n] = h.Time
		return h.Time
	}
	type change struct {
		PowerChange core.PowerChange
		to          common.Address // DelegateChanged's toDelegate
		isDelegate  bool
	}
	events := map[common.Address][]change{} // oldest first
	for _, l := range logs {
		ch := change{}
		who := common.BytesToAddress(l.Topics[1].Bytes())
		if l.Topics[0] == votesChanged.ID {
			v, err := votesChanged.Inputs.NonIndexed().Unpack(l.Data)
			if err != nil {
				t.Fatal(err)
			}
			ch.PowerChange = core.PowerChange{Block: l.BlockNumber, Timepoint: timepoint(l.BlockNumber), TxHash: l.TxHash.Hex(), LogIndex: l.Index,
				PreviousPower: v[0].(*big.Int).String(), Power: v[1].(*big.Int).String()}
			ch.isDelegate = true
		} else {
			ch.PowerChange = core.PowerChange{Block: l.BlockNumber, Timepoint: timepoint(l.BlockNumber), LogIndex: l.Index}
			ch.to = common.BytesToAddress(l.Topics[3].Bytes())
		}
		events[who] = append(events[who], ch)
	}
	var delegates struct{ Items []core.Delegate }
	getJSON(t, api+"/"+d.Slug+"/delegates?limit=500", &delegates)
	isDelegate := map[common.Address]bool{}
	for _, del := range delegates.Items {
		isDelegate[common.HexToAddress(del.Address)] = true
	}
	accounts := map[common.Address]bool{}
	for _, x := range accts {
		accounts[x] = true
	}
	for x := range scene {
		accounts[x] = true
	}
	now := timepoint(cur.Block)
	checked := 0
	for acct := range accounts {
		// The history, page by page (a page of 3 makes several).
		var history []core.PowerChange
		before := ""
		for {
			var page struct {
				Clock      string
				Items      []core.PowerChange
				NextBefore *uint64
			}
			getJSON(t, api+"/"+d.Slug+"/accounts/"+acct.Hex()+"/history?limit=3"+before, &page)
			if page.Clock != d.Clock {
				t.Fatalf("%s history: clock %q, want %q", d.Slug, page.Clock, d.Clock)
			}
			history = append(history, page.Items...)
			if page.NextBefore == nil {
				break
			}
			before = fmt.Sprintf("&before=%d", *page.NextBefore)
		}
		var want []core.PowerChange
		for _, e := range slices.Backward(events[acct]) {
			if e.isDelegate {
				want = append(want, e.PowerChange)
			}
		}
		if len(history) != len(want) {
			t.Fatalf("%s %s: %d changes served, the token emitted %d", d.Slug, acct, len(history), len(want))
		}
		for i, h := range history {
			w := want[i]
			h.Time = time.Time{}
			if h != w {
				t.Errorf("%s %s: change %d served %+v, the token's %+v", d.Slug, acct, i, h, w)
			}
		}
		// ?at= where the power changed, and just before.
		points := map[uint64]bool{}
		for _, h := range history {
			for _, p := range []uint64{h.Timepoint, h.Timepoint - 1} {
				if p < now {
					points[p] = true
				}
			}
		}
		for p := range points {
			var got struct {
				VotingPower string
				DelegatedTo *string
			}
			getJSON(t, fmt.Sprintf("%s/%s/accounts/%s?at=%d", api, d.Slug, acct.Hex(), p), &got)
			if want := pastVotes(t, gw, d.Token, acct, p, block); got.VotingPower != want {
				t.Errorf("%s %s ?at=%d: served %s, getPastVotes %s", d.Slug, acct, p, got.VotingPower, want)
			}
			var to *string
			for _, e := range events[acct] {
				if !e.isDelegate && e.PowerChange.Timepoint <= p {
					to = nil
					if e.to != (common.Address{}) {
						s := e.to.Hex()
						to = &s
					}
				}
			}
			if deref(got.DelegatedTo) != deref(to) {
				t.Errorf("%s %s ?at=%d: delegated to %s, the token's events say %s", d.Slug, acct, p, deref(got.DelegatedTo), deref(to))
			}
			if isDelegate[acct] {
				var del struct {
					At       uint64
					Delegate core.Delegate
				}
				getJSON(t, fmt.Sprintf("%s/%s/delegates/%s?at=%d", api, d.Slug, acct.Hex(), p), &del)
				if del.At != p || del.Delegate.VotingPower != got.VotingPower {
					t.Errorf("%s delegate %s ?at=%d: served at %d power %s, the account's %s", d.Slug, acct, p, del.At, del.Delegate.VotingPower, got.VotingPower)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatalf("%s: no past timepoint to check", d.Slug)
	}
	t.Logf("%s: %d accounts' histories and %d past timepoints agree with the token", d.Slug, len(accounts), checked)
}
