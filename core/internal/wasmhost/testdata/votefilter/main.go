// Command votefilter is the plugin of BenchmarkPluginCall: a filter that
// decodes a vote.cast's data with encoding/json, as a typical Go plugin
// does, and keeps votes in favour.
package main

import (
	"encoding/json"

	"github.com/govgate/govgate/sdk"
)

type vote struct {
	Voter      string `json:"voter"`
	Support    int    `json:"support"`
	Weight     string `json:"weight"`
	Reason     string `json:"reason"`
	ProposalID string `json:"proposalId"`
}

func init() {
	sdk.Plugin(sdk.Meta{Name: "votefilter", Version: "1.0.0"})
	sdk.Filter(func(n sdk.Notification, _ struct{}) bool {
		var v vote
		if err := json.Unmarshal(n.Data, &v); err != nil {
			return false
		}
		return v.Support == 1 && v.Weight != ""
	})
}

func main() {}
