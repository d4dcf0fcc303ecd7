// Command event-filter is a govgate plugin that keeps notifications by type
// and, for votes, by voting weight, and for the token's delegation
// notifications, by the power moved and the addresses involved:
//
//	{"types": ["proposal.created", "vote.cast"], "minVoteWeight": "1000000000000000000000"}
//	{"types": ["delegate.votes_changed"], "minVotesDelta": "100000000000000000000000",
//	 "watch": ["0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4"]}
//
// minVotesDelta drops a delegate.votes_changed whose |delta|, or a
// delegate.changed whose amount, is below it. watch keeps only the
// delegation notifications that involve one of the addresses (delegator,
// either delegate, or the delegate whose votes changed); other types are
// not affected by either.
//
// An empty or missing types list keeps every type. minVoteWeight is a
// decimal integer in the token's smallest unit, compared as a big integer
// (weights are uint256); votes below it are dropped, other types are not
// affected (vote.cast and vote.overridden are votes). A drop says why: `type "proposal.queued" is not in the list`
// or `vote weight 10 is below the minimum 1000`.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o event-filter.wasm .
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/govgate/govgate/sdk"
)

// Config selects the notifications to keep.
type Config struct {
	Types         []string `json:"types"`
	MinVoteWeight string   `json:"minVoteWeight"`
	MinVotesDelta string   `json:"minVotesDelta"`
	Watch         []string `json:"watch"`

	min, minDelta *big.Int
}

var maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// Prepare parses minVoteWeight and minVotesDelta once per distinct config.
func (c *Config) Prepare() error {
	for _, f := range []struct {
		name, v string
		dst     **big.Int
	}{{"minVoteWeight", c.MinVoteWeight, &c.min}, {"minVotesDelta", c.MinVotesDelta, &c.minDelta}} {
		if f.v == "" {
			continue
		}
		m, ok := new(big.Int).SetString(f.v, 10)
		if !ok || m.Sign() < 0 || m.Cmp(maxUint256) > 0 {
			return fmt.Errorf("%s: %q is not a decimal uint256", f.name, f.v)
		}
		*f.dst = m
	}
	return nil
}

// delegation is the part of a delegate.changed's or delegate.votes_changed's
// data this filter reads.
type delegation struct {
	Delegator, FromDelegate, ToDelegate, Delegate string
	Amount, Delta                                 json.Number
}

// keepDelegation applies minVotesDelta and watch to a delegation notification.
func keepDelegation(n sdk.Notification, cfg Config) (bool, string) {
	if cfg.minDelta == nil && len(cfg.Watch) == 0 {
		return true, ""
	}
	var d delegation
	if err := json.Unmarshal(n.Data, &d); err != nil {
		panic(fmt.Errorf("decode %s: %w", n.Type, err))
	}
	if len(cfg.Watch) > 0 {
		watched := false
		for _, w := range cfg.Watch {
			for _, a := range []string{d.Delegator, d.FromDelegate, d.ToDelegate, d.Delegate} {
				watched = watched || (a != "" && strings.EqualFold(a, w))
			}
		}
		if !watched {
			return false, "no watched address is involved"
		}
	}
	if cfg.minDelta != nil {
		moved := string(d.Amount)
		if n.Type == sdk.TypeDelegateVotesChanged {
			moved = strings.TrimPrefix(string(d.Delta), "-")
		}
		v, ok := new(big.Int).SetString(moved, 10)
		if !ok {
			panic(fmt.Errorf("%s: votes moved %q is not a decimal integer", n.Type, moved))
		}
		if v.Cmp(cfg.minDelta) < 0 {
			return false, fmt.Sprintf("votes moved %s are below the minimum %s", v, cfg.minDelta)
		}
	}
	return true, ""
}

// vote is the part of a vote.cast's data this filter reads. Weight is a
// json.Number so that it is kept as written, whether a JSON string or
// number.
type vote struct {
	Weight json.Number `json:"weight"`
}

// filter is the filter. A drop names the value that decided, so that the
// delivery's record says why without anyone looking the notification up.
func filter(n sdk.Notification, cfg Config) (keep bool, reason string) {
	if len(cfg.Types) > 0 && !slices.Contains(cfg.Types, n.Type) {
		return false, fmt.Sprintf("type %q is not in the list", n.Type)
	}
	if n.Type == sdk.TypeDelegateChanged || n.Type == sdk.TypeDelegateVotesChanged {
		return keepDelegation(n, cfg)
	}
	if cfg.min == nil || (n.Type != sdk.TypeVoteCast && n.Type != sdk.TypeVoteOverridden) {
		return true, ""
	}
	if w := weight(n); w.Cmp(cfg.min) < 0 {
		return false, fmt.Sprintf("vote weight %s is below the minimum %s", w, cfg.min)
	}
	return true, ""
}

// weight reads a vote's weight. It panics when the weight is unreadable: the
// SDK reports a panic as an error, and the chain entry's failure policy
// decides.
func weight(n sdk.Notification) *big.Int {
	var v vote
	if err := json.Unmarshal(n.Data, &v); err != nil {
		panic(fmt.Errorf("decode vote: %w", err))
	}
	if v.Weight == "" {
		panic(errors.New("vote has no weight"))
	}
	w, ok := new(big.Int).SetString(string(v.Weight), 10)
	if !ok {
		panic(fmt.Errorf("vote weight %q is not a decimal integer", v.Weight))
	}
	return w
}

func init() {
	whale := sdk.Notification{ID: "n1", Type: sdk.TypeVoteCast, DAO: "uniswap",
		Data: json.RawMessage(`{"voter":"0xabc","support":1,"weight":"2500000000000000000000000","proposalId":"42"}`)}
	minnow := sdk.Notification{ID: "n2", Type: sdk.TypeVoteCast, DAO: "uniswap",
		Data: json.RawMessage(`{"voter":"0xdef","support":0,"weight":"1000000000000000000","proposalId":"42"}`)}
	cfg := Config{Types: []string{sdk.TypeProposalCreated, sdk.TypeVoteCast}, MinVoteWeight: "1000000000000000000000000"}
	powerMove := sdk.Notification{ID: "n4", Type: sdk.TypeDelegateVotesChanged, DAO: "uniswap",
		Data: json.RawMessage(`{"delegate":"0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4","previousVotes":"2500000000000000000000000","newVotes":"0","delta":"-2500000000000000000000000"}`)}
	dust := sdk.Notification{ID: "n5", Type: sdk.TypeDelegateVotesChanged, DAO: "uniswap",
		Data: json.RawMessage(`{"delegate":"0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4","previousVotes":"5","newVotes":"6","delta":"1"}`)}
	deltaCfg := Config{MinVotesDelta: "1000000000000000000000"}
	sdk.Plugin(sdk.Meta{
		Name:    "event-filter",
		Version: "1.0.0",
		ConfigSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"types": {"type": "array", "items": {"type": "string"}},
				"minVoteWeight": {"type": "string", "pattern": "^[0-9]+$", "description": "decimal uint256, in the token's smallest unit"},
				"minVotesDelta": {"type": "string", "pattern": "^[0-9]+$", "description": "delegation notifications moving fewer votes are dropped"},
				"watch": {"type": "array", "items": {"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}, "description": "keep only delegation notifications involving these addresses"}
			},
			"additionalProperties": false
		}`),
		Samples: []sdk.Sample{
			{Name: "heavy vote", Input: whale, Config: cfg, ExpectKeep: true},
			{Name: "light vote", Input: minnow, Config: cfg, ExpectKeep: false},
			{Name: "type not listed", Input: sdk.Notification{ID: "n3", Type: sdk.TypeProposalQueued, DAO: "uniswap"}, Config: cfg, ExpectKeep: false},
			{Name: "big power move", Input: powerMove, Config: deltaCfg, ExpectKeep: true},
			{Name: "small power move", Input: dust, Config: deltaCfg, ExpectKeep: false},
		},
	})
	sdk.FilterReason(filter)
}

func main() {}
