package e2e_test

import (
	"context"
	"log/slog"
	"math/big"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"

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
{"type":"function","name":"delegates","stateMutability":"view","inputs":[{"name":"a","type":"address"}],"outputs":[{"name":"","type":"address"}]}
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
	quiet := slog.New(slog.DiscardHandler)
	c, err := devchain.Start(ctx, devchain.Options{Accounts: 8, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "govgate.db") }, 3},
		{"postgres", func(t *testing.T) string { url, _ := pgURL(t); return url }, 4},
	} {
		t.Run(b.name, func(t *testing.T) {
			st, err := store.Open(ctx, b.url(t), testBox(t), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			gw, err := chain.New(c.ChainConfig(), chain.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer gw.Close()
			daos := c.DAOs()
			r, err := indexer.NewRunner(gw, st, indexer.NewLocalLocker(), devchain.ChainID, 0, daos, indexer.Config{}, indexer.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			api := httptest.NewServer(httpapi.NewAPI(httpapi.APIConfig{DAOs: core.FixedDAOs(daos), Health: staticHealth{}, Logger: quiet,
				Routes: []func(*gin.Engine){httpapi.ProposalRoutes(st, core.FixedDAOs(daos), quiet), httpapi.DelegateRoutes(st, core.FixedDAOs(daos), quiet)}}))
			defer api.Close()

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
