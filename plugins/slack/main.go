// Command slack is a govgate plugin that turns a governance notification
// into a Slack incoming-webhook message: a fallback text and Block Kit
// blocks (a header, the summary, the fields and the proposal's text or the
// vote's reason).
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o slack.wasm .
package main

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/govgate/govgate/plugins/internal/event"
	"github.com/govgate/govgate/sdk"
)

// Config words the message.
type Config struct {
	event.Wording
}

// Slack limits (https://api.slack.com/reference/block-kit/blocks).
const (
	maxHeader  = 150
	maxSection = 3000
	maxText    = 4000
)

type text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type block struct {
	Type      string  `json:"type"`
	Text      *text   `json:"text,omitempty"`
	Fields    []text  `json:"fields,omitempty"`
	Elements  []text  `json:"elements,omitempty"`
	Accessory *button `json:"accessory,omitempty"`
}

type button struct {
	Type string `json:"type"`
	Text text   `json:"text"`
	URL  string `json:"url"`
}

type message struct {
	Text   string  `json:"text"`
	Blocks []block `json:"blocks"`
}

// escape escapes the three characters Slack's mrkdwn reserves.
var escape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

func render(n sdk.Notification, cfg Config) ([]byte, error) {
	m, err := event.Describe(n, cfg.Options())
	if err != nil {
		return nil, err
	}
	summary := &text{Type: "mrkdwn", Text: event.Truncate(escape(m.Summary), maxSection)}
	section := block{Type: "section", Text: summary}
	if m.URL != "" {
		section.Accessory = &button{Type: "button", Text: text{Type: "plain_text", Text: "View proposal"}, URL: m.URL}
	}
	blocks := []block{
		{Type: "header", Text: &text{Type: "plain_text", Text: event.Truncate(m.Title, maxHeader)}},
		section,
	}
	if len(m.Fields) > 0 {
		f := block{Type: "section"}
		for _, x := range m.Fields[:min(len(m.Fields), 10)] {
			f.Fields = append(f.Fields, text{Type: "mrkdwn", Text: event.Truncate("*"+x.Name+"*\n"+escape(x.Value), 2000)})
		}
		blocks = append(blocks, f)
	}
	if body := strings.TrimSpace(m.Body); body != "" {
		quoted := "> " + strings.ReplaceAll(escape(body), "\n", "\n> ")
		blocks = append(blocks, block{Type: "section", Text: &text{Type: "mrkdwn", Text: event.Truncate(quoted, maxSection)}})
	}
	ctx := "govgate · " + n.DAO + " · " + n.Type
	if !n.OccurredAt.IsZero() {
		ctx += " · " + n.OccurredAt.UTC().Format(time.RFC3339)
	}
	blocks = append(blocks, block{Type: "context", Elements: []text{{Type: "mrkdwn", Text: escape(ctx)}}})
	msg := message{Text: event.Truncate(m.Summary, maxText), Blocks: blocks}
	// A message is its texts and about 600 bytes of Block Kit around them:
	// one buffer, not a dozen grown ones.
	return msg.appendJSON(make([]byte, 0, 1024+2*len(m.Summary)+len(m.Body))), nil
}

// appendJSON writes the message as encoding/json does (event.Marshal), with
// the struct tags above, but without reflection: in the sandbox that costs
// about a third of a call (TestAppendJSONIsMarshal).
func (m message) appendJSON(b []byte) []byte {
	b = append(b, `{"text":`...)
	b = event.AppendString(b, m.Text)
	b = append(b, `,"blocks":`...)
	if m.Blocks == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, x := range m.Blocks {
			if i > 0 {
				b = append(b, ',')
			}
			b = x.appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (x block) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = event.AppendString(b, x.Type)
	if x.Text != nil {
		b = append(b, `,"text":`...)
		b = x.Text.appendJSON(b)
	}
	b = appendTexts(b, `,"fields":`, x.Fields)
	b = appendTexts(b, `,"elements":`, x.Elements)
	if x.Accessory != nil {
		b = append(b, `,"accessory":{"type":`...)
		b = event.AppendString(b, x.Accessory.Type)
		b = append(b, `,"text":`...)
		b = x.Accessory.Text.appendJSON(b)
		b = append(b, `,"url":`...)
		b = event.AppendString(b, x.Accessory.URL)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendTexts writes a list of texts under key, left out when empty
// (omitempty).
func appendTexts(b []byte, key string, ts []text) []byte {
	if len(ts) == 0 {
		return b
	}
	b = append(b, key...)
	b = append(b, '[')
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = t.appendJSON(b)
	}
	return append(b, ']')
}

func (t text) appendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = event.AppendString(b, t.Type)
	b = append(b, `,"text":`...)
	b = event.AppendString(b, t.Text)
	return append(b, '}')
}

func init() {
	sdk.Plugin(sdk.Meta{
		Name:    "slack",
		Version: "1.0.0",
		ConfigSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"proposalUrl": {"type": "string", "description": "link template with {dao} and {proposalId}"},
				"weightDecimals": {"type": "integer", "minimum": 0, "maximum": 77, "default": 18}
			},
			"additionalProperties": false
		}`),
		Samples: []sdk.Sample{{
			Name: "test notification",
			Input: sdk.Notification{
				ID: "n1", Type: sdk.TypeTest, DAO: "uniswap",
				OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Data: json.RawMessage(`{}`),
			},
			ExpectKeep: true,
			ExpectBody: []byte(`{"text":"Test notification from govgate for uniswap","blocks":[
				{"type":"header","text":{"type":"plain_text","text":"Test notification"}},
				{"type":"section","text":{"type":"mrkdwn","text":"Test notification from govgate for uniswap"}},
				{"type":"section","fields":[{"type":"mrkdwn","text":"*DAO*\nuniswap"}]},
				{"type":"context","elements":[{"type":"mrkdwn","text":"govgate · uniswap · test · 2025-03-01T12:00:00Z"}]}]}`),
			ExpectContentType: "application/json",
		}},
	})
	sdk.Transform(event.JSONTransform(render))
}

func main() {}
