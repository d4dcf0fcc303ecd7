// Command event-filter is a govgate plugin that keeps notifications by type
// and, for votes, by voting weight:
//
//	{"types": ["proposal.created", "vote.cast"], "minVoteWeight": "1000000000000000000000"}
//
// An empty or missing types list keeps every type. minVoteWeight is a
// decimal integer in the token's smallest unit, compared as a big integer
// (weights are uint256); votes below it are dropped, other types are not
// affected. A drop says why: `type "proposal.queued" is not in the list`
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

	"github.com/govgate/govgate/sdk"
)

// Config selects the notifications to keep.
type Config struct {
	Types         []string `json:"types"`
	MinVoteWeight string   `json:"minVoteWeight"`

	min *big.Int
}

var maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// Prepare parses minVoteWeight once per distinct config.
func (c *Config) Prepare() error {
	if c.MinVoteWeight == "" {
		return nil
	}
	m, ok := new(big.Int).SetString(c.MinVoteWeight, 10)
	if !ok || m.Sign() < 0 || m.Cmp(maxUint256) > 0 {
		return fmt.Errorf("minVoteWeight: %q is not a decimal uint256", c.MinVoteWeight)
	}
	c.min = m
	return nil
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
	if cfg.min == nil || n.Type != sdk.TypeVoteCast {
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
	sdk.Plugin(sdk.Meta{
		Name:    "event-filter",
		Version: "1.0.0",
		ConfigSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"types": {"type": "array", "items": {"type": "string"}},
				"minVoteWeight": {"type": "string", "pattern": "^[0-9]+$", "description": "decimal uint256, in the token's smallest unit"}
			},
			"additionalProperties": false
		}`),
		Samples: []sdk.Sample{
			{Name: "heavy vote", Input: whale, Config: cfg, ExpectKeep: true},
			{Name: "light vote", Input: minnow, Config: cfg, ExpectKeep: false},
			{Name: "type not listed", Input: sdk.Notification{ID: "n3", Type: sdk.TypeProposalQueued, DAO: "uniswap"}, Config: cfg, ExpectKeep: false},
		},
	})
	sdk.FilterReason(filter)
}

func main() {}
