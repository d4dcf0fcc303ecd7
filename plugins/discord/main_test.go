package main

import (
	"encoding/json"
	"github.com/govgate/govgate/plugins/internal/event"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/plugintest"
)

var created = sdk.Notification{
	ID: "n2", Type: sdk.TypeProposalCreated, DAO: "uniswap",
	OccurredAt: time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC),
	Data: json.RawMessage(`{"proposalId":"103481231092831092381092381092831098230918230918230918230981230981",
		"proposer":"0x1b3cb81e51011b549d78bf720b0d924ac763a7c2","description":"# Deploy v4 on Base\n@everyone please vote"}`),
}

func TestPlugin(t *testing.T) {
	plugintest.Run(t,
		plugintest.Case{Name: "proposal with a link", Input: created, Config: Config{Wording: event.Wording{ProposalURL: "https://x.test/{dao}/{proposalId}"}}, Want: &plugintest.Want{Keep: true}},
		plugintest.Case{
			Name:  "vote against",
			Input: sdk.Notification{ID: "n3", Type: sdk.TypeVoteCast, DAO: "ens", Data: json.RawMessage(`{"voter":"0xabc","support":"0","weight":"5000000000000000000","proposalId":"1"}`)},
			Want:  &plugintest.Want{Keep: true},
		},
		plugintest.Case{Name: "unknown event type", Input: sdk.Notification{ID: "n4", Type: "treasury.moved", DAO: "ens"}, Want: &plugintest.Want{Keep: true}},
	)
}

func TestEmbed(t *testing.T) {
	out, err := plugintest.Transform(created, nil, Config{Wording: event.Wording{ProposalURL: "https://x.test/{dao}/{proposalId}"}})
	if err != nil {
		t.Fatal(err)
	}
	var m message
	if err := json.Unmarshal(out.Body, &m); err != nil {
		t.Fatal(err)
	}
	e := m.Embeds[0]
	if e.Title != "New proposal: Deploy v4 on Base" || !strings.HasPrefix(e.URL, "https://x.test/uniswap/1034") || e.Color != 0x2EB67D {
		t.Errorf("embed = %+v", e)
	}
	if m.AllowedMentions.Parse == nil || len(m.AllowedMentions.Parse) != 0 {
		t.Errorf("mentions are not disabled: %s", out.Body)
	}
}
