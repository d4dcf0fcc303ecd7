// Command dao-filter is a govgate plugin that keeps only the notifications
// of the DAOs its config lists: {"daos": ["uniswap", "compound"]}. It drops
// the others with the reason `dao "ens" is not in the list`.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o dao-filter.wasm .
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/govgate/govgate/sdk"
)

// Config lists the DAOs to keep, by slug.
type Config struct {
	DAOs []string `json:"daos"`

	keep map[string]bool
}

// Prepare checks the config and indexes it, once per distinct config.
func (c *Config) Prepare() error {
	if len(c.DAOs) == 0 {
		return errors.New("daos: list at least one DAO slug")
	}
	c.keep = make(map[string]bool, len(c.DAOs))
	for _, d := range c.DAOs {
		c.keep[d] = true
	}
	return nil
}

func init() {
	sdk.Plugin(sdk.Meta{
		Name:    "dao-filter",
		Version: "1.0.0",
		ConfigSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"daos": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
			"required": ["daos"],
			"additionalProperties": false
		}`),
		Samples: []sdk.Sample{
			{
				Name:       "listed DAO",
				Input:      sdk.Notification{ID: "n1", Type: sdk.TypeProposalCreated, DAO: "uniswap"},
				Config:     Config{DAOs: []string{"uniswap", "compound"}},
				ExpectKeep: true,
			},
			{
				Name:       "other DAO",
				Input:      sdk.Notification{ID: "n2", Type: sdk.TypeProposalCreated, DAO: "ens"},
				Config:     Config{DAOs: []string{"uniswap", "compound"}},
				ExpectKeep: false,
			},
		},
	})
	sdk.FilterReason(filter)
}

// filter keeps the listed DAOs. A drop names the DAO, so that the
// delivery's record says why without anyone looking the notification up.
func filter(n sdk.Notification, cfg Config) (keep bool, reason string) {
	if !cfg.keep[n.DAO] {
		return false, fmt.Sprintf("dao %q is not in the list", n.DAO)
	}
	return true, ""
}

func main() {}
