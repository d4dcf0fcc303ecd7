// Command discord is a govgate plugin that turns a governance notification
// into a Discord webhook message: a short content line and one embed with
// the title, the proposal's text or the vote's reason, fields, a colour by
// kind of event and the time it happened.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o discord.wasm .
package main

import (
	"encoding/json"
	"time"

	"github.com/govgate/govgate/plugins/internal/event"
	"github.com/govgate/govgate/sdk"
)

// Config words the message.
type Config struct {
	event.Wording
	// Username overrides the webhook's name in the channel.
	Username string `json:"username"`
}

// Discord limits (https://discord.com/developers/docs/resources/message#embed-object-embed-limits).
const (
	maxContent     = 2000
	maxTitle       = 256
	maxDescription = 4096
	maxFieldName   = 256
	maxFieldValue  = 1024
	maxFields      = 25
)

type field struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

type footer struct {
	Text string `json:"text"`
}

type embed struct {
	Title       string  `json:"title"`
	Description string  `json:"description,omitempty"`
	URL         string  `json:"url,omitempty"`
	Color       int     `json:"color"`
	Timestamp   string  `json:"timestamp,omitempty"`
	Fields      []field `json:"fields,omitempty"`
	Footer      footer  `json:"footer"`
}

type message struct {
	Username string  `json:"username,omitempty"`
	Content  string  `json:"content"`
	Embeds   []embed `json:"embeds"`
	// AllowedMentions stops "@everyone" in a proposal's text from pinging
	// the channel.
	AllowedMentions struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
}

func render(n sdk.Notification, cfg Config) ([]byte, error) {
	m, err := event.Describe(n, cfg.Options())
	if err != nil {
		return nil, err
	}
	e := embed{
		Title:       event.Truncate(m.Title, maxTitle),
		Description: event.Truncate(m.Body, maxDescription),
		URL:         m.URL,
		Color:       m.Color,
		Footer:      footer{Text: "govgate · " + n.DAO + " · " + n.Type},
	}
	if !n.OccurredAt.IsZero() {
		e.Timestamp = n.OccurredAt.UTC().Format(time.RFC3339)
	}
	for _, f := range m.Fields[:min(len(m.Fields), maxFields)] {
		e.Fields = append(e.Fields, field{Name: event.Truncate(f.Name, maxFieldName), Value: event.Truncate(f.Value, maxFieldValue), Inline: true})
	}
	msg := message{Username: cfg.Username, Content: event.Truncate(m.Summary, maxContent), Embeds: []embed{e}}
	msg.AllowedMentions.Parse = []string{}
	return event.Marshal(msg)
}

func init() {
	sdk.Plugin(sdk.Meta{
		Name:    "discord",
		Version: "1.0.0",
		ConfigSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"username": {"type": "string", "maxLength": 80},
				"proposalUrl": {"type": "string", "description": "link template with {dao} and {proposalId}"},
				"weightDecimals": {"type": "integer", "minimum": 0, "maximum": 77, "default": 18}
			},
			"additionalProperties": false
		}`),
		Samples: []sdk.Sample{{
			Name: "queued proposal",
			Input: sdk.Notification{
				ID: "n1", Type: sdk.TypeProposalQueued, DAO: "compound",
				OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
				Data:       json.RawMessage(`{"proposalId":"7","eta":"1741003200"}`),
			},
			Config:     Config{Username: "Governance"},
			ExpectKeep: true,
			ExpectBody: []byte(`{"username":"Governance","content":"compound: Proposal 7 was queued",
				"embeds":[{"title":"Proposal queued: Proposal 7","color":5793266,"timestamp":"2025-03-01T12:00:00Z",
				"fields":[{"name":"ETA","value":"1741003200","inline":true},{"name":"DAO","value":"compound","inline":true},
				{"name":"Proposal ID","value":"7","inline":true}],"footer":{"text":"govgate · compound · proposal.queued"}}],
				"allowed_mentions":{"parse":[]}}`),
			ExpectContentType: "application/json",
		}},
	})
	sdk.Transform(event.JSONTransform(render))
}

func main() {}
