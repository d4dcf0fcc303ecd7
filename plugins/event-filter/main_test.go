package main

import (
	"encoding/json"
	"testing"

	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/plugintest"
)

func voteOf(weight string) sdk.Notification {
	return sdk.Notification{ID: "v", Type: sdk.TypeVoteCast, DAO: "ens", Data: json.RawMessage(`{"weight":` + weight + `}`)}
}

func TestPlugin(t *testing.T) {
	// 2^256-1 and 2^255: beyond any machine integer.
	const max = "115792089237316195423570985008687907853269984665640564039457584007913129639935"
	const half = "57896044618658097711785492504343953926634992332820282019728792003956564819968"
	plugintest.Run(t,
		plugintest.Case{Name: "uint256 weights compare as numbers", Input: voteOf(`"` + max + `"`), Config: Config{MinVoteWeight: half}, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "just below", Input: voteOf(`"` + half[:len(half)-1] + `7"`), Config: Config{MinVoteWeight: half},
			Want: &plugintest.Want{Reason: "vote weight " + half[:len(half)-1] + "7 is below the minimum " + half}},
		plugintest.Case{Name: "equal keeps", Input: voteOf(`"` + half + `"`), Config: Config{MinVoteWeight: half}, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "weight as a JSON number", Input: voteOf(`1000`), Config: Config{MinVoteWeight: "999"}, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "shorter string, larger number", Input: voteOf(`"900"`), Config: Config{MinVoteWeight: "1000"}, Want: &plugintest.Want{Reason: "vote weight 900 is below the minimum 1000"}},
		plugintest.Case{Name: "minimum as parsed in the reason", Input: voteOf(`900`), Config: Config{MinVoteWeight: "01000"}, Want: &plugintest.Want{Reason: "vote weight 900 is below the minimum 1000"}},
		plugintest.Case{Name: "type not listed", Input: sdk.Notification{ID: "q", Type: sdk.TypeProposalQueued, DAO: "ens"}, Config: Config{Types: []string{sdk.TypeVoteCast}, MinVoteWeight: "1"},
			Want: &plugintest.Want{Reason: `type "proposal.queued" is not in the list`}},
		plugintest.Case{Name: "type checked before the weight", Input: voteOf(`null`), Config: Config{Types: []string{sdk.TypeProposalCreated}, MinVoteWeight: "1"},
			Want: &plugintest.Want{Reason: `type "vote.cast" is not in the list`}},
		plugintest.Case{Name: "no types keeps every type", Input: sdk.Notification{ID: "p", Type: sdk.TypeProposalExecuted, DAO: "ens"}, Config: Config{MinVoteWeight: "5"}, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "weight over uint256 in the config", Input: voteOf(`"1"`), Config: Config{MinVoteWeight: max + "0"}, Want: &plugintest.Want{Error: "not a decimal uint256"}},
		plugintest.Case{Name: "negative minimum", Input: voteOf(`"1"`), Config: Config{MinVoteWeight: "-1"}, Want: &plugintest.Want{Error: "not a decimal uint256"}},
		plugintest.Case{Name: "vote without a weight", Input: voteOf(`null`), Config: Config{MinVoteWeight: "1"}, Want: &plugintest.Want{Error: "no weight"}},
		plugintest.Case{Name: "weight in hex", Input: voteOf(`"0x10"`), Config: Config{MinVoteWeight: "1"}, Want: &plugintest.Want{Error: "decode vote"}},
		plugintest.Case{Name: "an override is a vote", Input: sdk.Notification{ID: "o", Type: sdk.TypeVoteOverridden, DAO: "ens", Data: json.RawMessage(`{"weight":"900","delegate":null}`)},
			Config: Config{MinVoteWeight: "1000"}, Want: &plugintest.Want{Reason: "vote weight 900 is below the minimum 1000"}},
	)
}

func TestDelegationFilters(t *testing.T) {
	changed := func(amount string) sdk.Notification {
		return sdk.Notification{ID: "d", Type: sdk.TypeDelegateChanged, DAO: "ens", Data: json.RawMessage(`{"delegator":"0x8E4ED221fa034245F14205f781E0b13C5bd6a42E",
			"fromDelegate":"0x0000000000000000000000000000000000000000","toDelegate":"0x2b1ad6184a6b0fac06bd225ed37c2abc04415ff4","amount":"` + amount + `"}`)}
	}
	watched := Config{Watch: []string{"0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4"}}
	plugintest.Run(t,
		plugintest.Case{Name: "watched delegate, any case", Input: changed("5"), Config: watched, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "no watched address", Input: changed("5"), Config: Config{Watch: []string{"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"}},
			Want: &plugintest.Want{Keep: false, Reason: "no watched address is involved"}},
		plugintest.Case{Name: "amount below the minimum", Input: changed("5"), Config: Config{MinVotesDelta: "6"},
			Want: &plugintest.Want{Keep: false, Reason: "votes moved 5 are below the minimum 6"}},
		plugintest.Case{Name: "amount at the minimum", Input: changed("6"), Config: Config{MinVotesDelta: "6"}, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{Name: "votes are not delegation", Input: sdk.Notification{ID: "v", Type: sdk.TypeVoteCast, DAO: "ens", Data: json.RawMessage(`{"weight":"1"}`)},
			Config: Config{MinVotesDelta: "6", Watch: []string{"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"}}, Want: &plugintest.Want{Keep: true}},
	)
}
