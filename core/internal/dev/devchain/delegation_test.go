package devchain

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// TestMoveDelegations plays rounds of the delegation scene and checks,
// after each, that every DAO's token emitted DelegateChanged and
// DelegateVotesChanged, and that the token's getVotes (getCurrentVotes on
// Uni), delegates() and balanceOf agree, for every account that the round
// touched, with what the scene meant; that over the rounds every kind of
// move happened on every token; that the governance scenes' accounts kept
// their delegates and votes; and that the whole script still plays after.
func TestMoveDelegations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts Options
	}{
		{"four accounts", Options{Accounts: 4}},
		{"govgate dev's ten accounts", Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, err := Start(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			accts := c.Accounts()
			type holding struct {
				votes    string
				delegate common.Address
			}
			governance := func() map[string]holding {
				m := map[string]holding{}
				for _, d := range c.votingTokens() {
					for i := 1; i < min(sceneAccounts(), len(accts)); i++ {
						v, err := c.TokenVotes(ctx, d, accts[i])
						if err != nil {
							t.Fatal(err)
						}
						del, err := c.Delegates(ctx, d, accts[i])
						if err != nil {
							t.Fatal(err)
						}
						m[d.Slug+" "+accts[i].Hex()] = holding{v.String(), del}
					}
				}
				return m
			}
			before := governance()

			tok := mustArtifact("GovToken").ABI
			changed, votesChanged := tok.Events["DelegateChanged"].ID, tok.Events["DelegateVotesChanged"].ID
			kinds := map[common.Address]map[string]int{}
			rounds := defaultDelegators/joinsPerRound + 2
			var gas uint64
			start := time.Now()
			for round := range rounds {
				r, err := c.MoveDelegations(ctx, round)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				events := map[common.Address]map[common.Hash]int{}
				for _, rc := range r.Receipts {
					gas = max(gas, rc.GasUsed)
					for _, l := range rc.Logs {
						if events[l.Address] == nil {
							events[l.Address] = map[common.Hash]int{}
						}
						events[l.Address][l.Topics[0]]++
					}
				}
				for _, d := range c.Deployments() {
					if events[d.Token][changed] == 0 || events[d.Token][votesChanged] == 0 {
						t.Errorf("round %d: %s's token emitted %d DelegateChanged, %d DelegateVotesChanged",
							round, d.Slug, events[d.Token][changed], events[d.Token][votesChanged])
					}
				}
				for _, m := range r.Moves {
					if kinds[m.Token] == nil {
						kinds[m.Token] = map[string]int{}
					}
					kinds[m.Token][m.Kind]++
				}
				for _, d := range c.votingTokens() {
					want := r.Want[d.Token]
					if len(want) < len(r.Accounts) {
						t.Fatalf("round %d: %s: %d accounts meant, %d in the round", round, d.Slug, len(want), len(r.Accounts))
					}
					for a, w := range want {
						votes, err := c.TokenVotes(ctx, d, a)
						if err != nil {
							t.Fatal(err)
						}
						del, err := c.Delegates(ctx, d, a)
						if err != nil {
							t.Fatal(err)
						}
						bal, err := c.Balance(ctx, d, a)
						if err != nil {
							t.Fatal(err)
						}
						if votes.Cmp(w.Votes) != 0 || del != w.Delegate || bal.Cmp(w.Balance) != 0 {
							t.Errorf("round %d: %s account %s: votes %s, delegate %s, balance %s; the scene meant %s, %s, %s",
								round, d.Slug, a, votes, del, bal, w.Votes, w.Delegate, w.Balance)
						}
					}
				}
			}
			t.Logf("%d rounds in %v, at most %d gas a call", rounds, time.Since(start), gas)
			if gas > delegationGas*2/3 {
				t.Errorf("a call used %d gas, too close to the limit of %d", gas, delegationGas)
			}

			for _, d := range c.votingTokens() {
				for _, k := range []string{MoveJoin, MoveDelegate, MoveRedelegate, MoveSelfDelegate, MoveUndelegate,
					MoveTransfer, MoveToHolder, MoveFromHolder} {
					if kinds[d.Token][k] == 0 {
						t.Errorf("%s: no %q move in %d rounds: %v", d.Slug, k, rounds, kinds[d.Token])
					}
				}
				// The leaderboard has a tail: many accounts with votes.
				withVotes := 0
				for _, a := range append(accts, c.addrs[len(c.addrs)-defaultDelegators:]...) {
					v, err := c.TokenVotes(ctx, d, a)
					if err != nil {
						t.Fatal(err)
					}
					if v.Sign() > 0 {
						withVotes++
					}
				}
				t.Logf("%s: %d accounts with votes; moves %v", d.Slug, withVotes, kinds[d.Token])
				if withVotes < defaultDelegators/2 {
					t.Errorf("%s: only %d accounts with votes", d.Slug, withVotes)
				}
			}

			// The governance scenes' accounts are as they were (account 0
			// gave stakes away, and still votes with all it holds).
			for k, h := range governance() {
				if before[k] != h {
					t.Errorf("%s: votes and delegate %v, before the rounds %v", k, h, before[k])
				}
			}
			for _, d := range c.votingTokens() {
				v, _ := c.TokenVotes(ctx, d, accts[0])
				b, _ := c.Balance(ctx, d, accts[0])
				if d == c.OZOverride && c.overrides() {
					// Accounts 4 and 5 delegate to account 0 there.
					for _, i := range overrideDelegators {
						bi, _ := c.Balance(ctx, d, accts[i])
						b = new(big.Int).Add(b, bi)
					}
				}
				if del, _ := c.Delegates(ctx, d, accts[0]); del != accts[0] || v.Cmp(b) != 0 || v.Cmp(new(big.Int)) == 0 {
					t.Errorf("%s account 0: delegate %s, votes %s, balance %s", d.Slug, del, v, b)
				}
			}

			// The script goes on, every scene, delegation included.
			for i, s := range scenes {
				if err := s.run(ctx, c, rounds+i); err != nil {
					t.Fatalf("scene %q after the delegation rounds: %v", s.name, err)
				}
			}
			if _, err := c.StageStates(ctx, c.OZ, c.Bravo, c.OZ4, c.OZTime); err != nil {
				t.Fatal(err)
			}
		})
	}
}
