package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/govgate/govgate/plugins/internal/event"
	"github.com/govgate/govgate/sdk"
	"github.com/govgate/govgate/sdk/plugintest"
)

var vote = sdk.Notification{
	ID: "n2", Type: sdk.TypeVoteCast, DAO: "uniswap",
	OccurredAt: time.Date(2025, 3, 2, 9, 30, 0, 0, time.UTC),
	Data: json.RawMessage(`{"voter":"0x1b3cb81e51011b549d78bf720b0d924ac763a7c2","support":1,
		"weight":"1234567890123456789012345","reason":"Good for <everyone> & more","proposalId":"42"}`),
}

func TestPlugin(t *testing.T) {
	plugintest.Run(t,
		plugintest.Case{
			Name: "vote with a link", Input: vote,
			Config: Config{Wording: event.Wording{ProposalURL: "https://www.tally.xyz/gov/{dao}/proposal/{proposalId}"}},
			Want:   &plugintest.Want{Keep: true, ContentType: "application/json"},
		},
		plugintest.Case{
			Name:  "proposal",
			Input: sdk.Notification{ID: "n3", Type: sdk.TypeProposalCreated, DAO: "compound", Data: json.RawMessage(`{"proposalId":"7","proposer":"0xabc","description":"# Fund the grants\nDetails follow."}`)},
			Want:  &plugintest.Want{Keep: true},
		},
		plugintest.Case{
			Name:  "data that is not JSON",
			Input: sdk.Notification{ID: "n4", Type: sdk.TypeVoteCast, DAO: "x", Data: json.RawMessage(`{"weight":`)},
			Body:  []byte(`{}`),
			Want:  &plugintest.Want{Error: "decode data"},
		},
		plugintest.Case{Name: "unknown config field", Input: vote, Config: json.RawMessage(`{"channel":"#gov"}`), Want: &plugintest.Want{Error: "unknown field"}},
	)
}

func TestVoteMessage(t *testing.T) {
	out, err := plugintest.Transform(vote, nil, Config{Wording: event.Wording{ProposalURL: "https://x.test/{dao}/{proposalId}"}})
	if err != nil {
		t.Fatal(err)
	}
	var m message
	if err := json.Unmarshal(out.Body, &m); err != nil {
		t.Fatal(err)
	}
	if want := "0x1b3c…a7c2 voted for on Proposal 42 with 1,234,567.89 votes"; m.Text != want {
		t.Errorf("text = %q, want %q", m.Text, want)
	}
	if m.Blocks[1].Accessory == nil || m.Blocks[1].Accessory.URL != "https://x.test/uniswap/42" {
		t.Errorf("no link to the proposal: %+v", m.Blocks[1])
	}
	if s := string(out.Body); !strings.Contains(s, `Good for &lt;everyone&gt; &amp; more`) {
		t.Errorf("reason not escaped: %s", s)
	}
}

// TestTimeDrivenMessages words the documented examples of the time-driven
// notification types.
func TestTimeDrivenMessages(t *testing.T) {
	for _, tc := range []struct{ typ, want string }{
		{sdk.TypeProposalActive, "uniswap: voting is open on Deploy Uniswap v4 on Unichain"},
		{sdk.TypeProposalEndingSoon, "uniswap: voting on Deploy Uniswap v4 on Unichain ends in about 23 hours"},
		{sdk.TypeProposalSucceeded, "uniswap: Deploy Uniswap v4 on Unichain passed"},
		{sdk.TypeProposalDefeated, "uniswap: Deploy Uniswap v4 on Unichain was defeated (quorum not reached)"},
		{sdk.TypeProposalExpired, "uniswap: Deploy Uniswap v4 on Unichain expired in the timelock before it was executed"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			raw, err := os.ReadFile("../../docs/schemas/examples/" + tc.typ + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var n sdk.Notification
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatal(err)
			}
			out, err := plugintest.Transform(n, nil, Config{})
			if err != nil {
				t.Fatal(err)
			}
			var m message
			if err := json.Unmarshal(out.Body, &m); err != nil {
				t.Fatal(err)
			}
			if m.Text != tc.want {
				t.Errorf("text = %q, want %q", m.Text, tc.want)
			}
		})
	}
}

// The message is written without reflection, byte for byte as
// encoding/json (event.Marshal) writes it, for every kind of notification
// and with the parts each can leave out.
func TestAppendJSONIsMarshal(t *testing.T) {
	data := `{"proposalId":"7","proposer":"0xabc","title":"Fund \"grants\" <now>","description":"# Fund\nDetails\u2028follow \u0001","voter":"0x1b3cb81e51011b549d78bf720b0d924ac763a7c2",
		"support":2,"weight":"1234567890123456789012345","reason":"Good for <everyone> & more\n\ttabs","eta":"1700000000","extendedDeadline":"99",
		"forVotes":"1","againstVotes":"2","abstainVotes":"3","quorum":"4","quorumReached":false,"secondsLeft":"3600","endsAt":"2025-03-02T09:30:00Z","estimated":true}`
	types := []string{sdk.TypeProposalCreated, sdk.TypeVoteCast, sdk.TypeVoteOverridden, sdk.TypeProposalQueued, sdk.TypeProposalExecuted, sdk.TypeProposalCanceled,
		sdk.TypeProposalExtended, sdk.TypeProposalActive, sdk.TypeProposalEndingSoon, sdk.TypeProposalSucceeded, sdk.TypeProposalDefeated,
		sdk.TypeProposalExpired, sdk.TypeTest, "something.else"}
	for _, typ := range types {
		for _, d := range []string{data, `{}`} {
			for _, cfg := range []Config{{}, {Wording: event.Wording{ProposalURL: "https://x.test/{dao}/{proposalId}?a=1&b=<2>"}}} {
				n := sdk.Notification{ID: "n", Type: typ, DAO: "uni\"swap", Data: json.RawMessage(d)}
				m, err := message{}, error(nil)
				if out, rerr := render(n, cfg); rerr != nil {
					t.Fatal(rerr)
				} else if err = json.Unmarshal(out, &m); err != nil {
					t.Fatalf("%s: %v: %s", typ, err, out)
				}
				want, err := event.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if got := m.appendJSON(nil); string(got) != string(want) {
					t.Errorf("%s:\n got %s\nwant %s", typ, got, want)
				}
			}
		}
	}
	if got, want := (message{}).appendJSON(nil), `{"text":"","blocks":null}`; string(got) != want {
		t.Errorf("empty message: %s, want %s", got, want)
	}
}
