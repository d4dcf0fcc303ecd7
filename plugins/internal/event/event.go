// Package event turns a governance notification into the words and links
// that chat plugins (slack, discord) show: a title, a one-line summary and
// labelled fields. It decodes only the data fields it shows.
package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/govgate/govgate/sdk"
)

// Data holds the fields of a notification's data that the chat plugins
// show (the JSON key of each is in Data.field). Numbers may come as JSON
// strings or numbers.
type Data struct {
	ProposalID  Text
	Proposer    Text
	Title       Text
	Description Text
	Voter       Text
	Delegate    Text // vote.overridden: the delegate whose vote it reduced
	Support     Text
	Weight      Text
	Reason      Text
	ETA         Text
	Deadline    Text
	// Time-driven notifications.
	ForVotes      Text
	AgainstVotes  Text
	AbstainVotes  Text
	Quorum        Text
	QuorumReached Text
	SecondsLeft   Text
	EndsAt        Text
	Estimated     Text
}

// Text is a JSON string, number or boolean, kept as text: a string
// unescaped, a number as it is written, a boolean as true or false. Other
// values (null, objects, arrays) are not shown and leave it empty.
type Text string

// parsers decode data with fastjson rather than encoding/json: a plugin
// runs compiled to WebAssembly, where encoding/json's reflection made
// decoding a vote's data 14 µs of the 18 that Describe took in the
// sandbox; with fastjson, whose parsers are reused, Describe takes 8.
var parsers fastjson.ParserPool

// decode reads d from a JSON object (or null), as encoding/json would into
// a struct with these keys, except that keys match exactly, not ignoring
// case. A key given twice keeps its last value.
func (d *Data) decode(b []byte) error {
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(b)
	if err != nil {
		return err
	}
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return err
	}
	o.Visit(func(k []byte, v *fastjson.Value) {
		f := d.field(k)
		if f == nil {
			return
		}
		switch v.Type() {
		case fastjson.TypeString:
			*f = Text(v.GetStringBytes())
		case fastjson.TypeNumber:
			*f = Text(v.String())
		case fastjson.TypeTrue:
			*f = "true"
		case fastjson.TypeFalse:
			*f = "false"
		}
	})
	return nil
}

// field is the field of d that JSON key k holds; nil for a key not shown.
func (d *Data) field(k []byte) *Text {
	switch string(k) {
	case "proposalId":
		return &d.ProposalID
	case "proposer":
		return &d.Proposer
	case "delegate":
		return &d.Delegate
	case "title":
		return &d.Title
	case "description":
		return &d.Description
	case "voter":
		return &d.Voter
	case "support":
		return &d.Support
	case "weight":
		return &d.Weight
	case "reason":
		return &d.Reason
	case "eta":
		return &d.ETA
	case "extendedDeadline":
		return &d.Deadline
	case "forVotes":
		return &d.ForVotes
	case "againstVotes":
		return &d.AgainstVotes
	case "abstainVotes":
		return &d.AbstainVotes
	case "quorum":
		return &d.Quorum
	case "quorumReached":
		return &d.QuorumReached
	case "secondsLeft":
		return &d.SecondsLeft
	case "endsAt":
		return &d.EndsAt
	case "estimated":
		return &d.Estimated
	}
	return nil
}

// Field is a labelled value.
type Field struct {
	Name, Value string
}

// Message is what a chat message says about a notification.
type Message struct {
	Title   string
	Summary string
	Body    string // the proposal's description or the vote's reason
	Fields  []Field
	URL     string // link to the proposal, if a template was configured
	Color   int    // 0xRRGGBB, by kind of event
}

// Options configure the wording.
type Options struct {
	// ProposalURL is a link template with {dao} and {proposalId}.
	ProposalURL string
	// WeightDecimals is the number of decimals of the voting token.
	WeightDecimals int
}

// Describe decodes n's data and words it.
func Describe(n sdk.Notification, o Options) (Message, error) {
	var d Data
	if len(n.Data) > 0 {
		if err := d.decode(n.Data); err != nil {
			return Message{}, fmt.Errorf("decode data of %s: %w", n.Type, err)
		}
	}
	id := string(d.ProposalID)
	proposal := "Proposal " + Short(id)
	if d.Title != "" {
		proposal = string(d.Title)
	} else if first, _, _ := strings.Cut(strings.TrimLeft(string(d.Description), "# "), "\n"); first != "" {
		proposal = first
	}
	m := Message{Color: 0x5865F2}
	if id != "" && o.ProposalURL != "" {
		r := strings.NewReplacer("{dao}", n.DAO, "{proposalId}", id)
		m.URL = r.Replace(o.ProposalURL)
	}
	switch n.Type {
	case sdk.TypeProposalCreated:
		m.Title = "New proposal: " + proposal
		m.Summary = fmt.Sprintf("%s has a new proposal: %s", n.DAO, proposal)
		m.Body = string(d.Description)
		m.Color = 0x2EB67D
		add(&m, "Proposer", string(d.Proposer))
	case sdk.TypeVoteCast, sdk.TypeVoteOverridden:
		support := SupportLabel(string(d.Support))
		weight := FormatUnits(string(d.Weight), o.WeightDecimals)
		m.Title = "Vote " + support + ": " + proposal
		m.Summary = Short(string(d.Voter)) + " voted " + support + " on " + proposal + " with " + weight + " votes"
		if n.Type == sdk.TypeVoteOverridden {
			// A delegator overriding its delegate (GovernorCountingOverridable).
			m.Title = "Override vote " + support + ": " + proposal
			if d.Delegate != "" {
				m.Summary += ", in place of its delegate " + Short(string(d.Delegate))
			} else {
				m.Summary += ", in place of its delegate"
			}
		}
		m.Body = string(d.Reason)
		switch support {
		case "for":
			m.Color = 0x2EB67D
		case "against":
			m.Color = 0xE01E5A
		case "abstain":
			m.Color = 0x9E9E9E
		default:
			m.Color = 0
		}
		add(&m, "Voter", string(d.Voter))
		add(&m, "Weight", weight)
	case sdk.TypeProposalQueued, sdk.TypeProposalExecuted, sdk.TypeProposalCanceled, sdk.TypeProposalExtended:
		verb := strings.TrimPrefix(n.Type, "proposal.")
		m.Title = fmt.Sprintf("Proposal %s: %s", verb, proposal)
		m.Summary = fmt.Sprintf("%s: %s was %s", n.DAO, proposal, verb)
		if n.Type == sdk.TypeProposalCanceled {
			m.Color = 0xE01E5A
		}
		add(&m, "ETA", string(d.ETA))
		add(&m, "New deadline", string(d.Deadline))
	case sdk.TypeProposalActive:
		m.Title = "Voting open: " + proposal
		m.Summary = fmt.Sprintf("%s: voting is open on %s", n.DAO, proposal)
		m.Color = 0x36C5F0
		add(&m, "Quorum", FormatUnits(string(d.Quorum), o.WeightDecimals))
	case sdk.TypeProposalEndingSoon:
		left := "soon"
		if secs, ok := new(big.Int).SetString(string(d.SecondsLeft), 10); ok {
			left = "in " + Duration(secs.Int64())
			if d.Estimated == "true" {
				left = "in about " + Duration(secs.Int64())
			}
		}
		m.Title = "Voting ends " + left + ": " + proposal
		m.Summary = fmt.Sprintf("%s: voting on %s ends %s", n.DAO, proposal, left)
		m.Color = 0xECB22E
		tallies(&m, d, o)
		add(&m, "Ends at", string(d.EndsAt))
	case sdk.TypeProposalSucceeded, sdk.TypeProposalDefeated:
		verb, why := "passed", ""
		m.Color = 0x2EB67D
		if n.Type == sdk.TypeProposalDefeated {
			verb, m.Color = "was defeated", 0xE01E5A
			if d.QuorumReached == "false" {
				why = " (quorum not reached)"
			}
		}
		m.Title = fmt.Sprintf("Proposal %s: %s", strings.TrimPrefix(verb, "was "), proposal)
		m.Summary = fmt.Sprintf("%s: %s %s%s", n.DAO, proposal, verb, why)
		tallies(&m, d, o)
	case sdk.TypeProposalExpired:
		m.Title = "Proposal expired: " + proposal
		m.Summary = fmt.Sprintf("%s: %s expired in the timelock before it was executed", n.DAO, proposal)
		m.Color = 0x9E9E9E
		add(&m, "ETA", string(d.ETA))
	case sdk.TypeTest:
		m.Title = "Test notification"
		m.Summary = fmt.Sprintf("Test notification from govgate for %s", n.DAO)
	default:
		m.Title = n.Type
		m.Summary = fmt.Sprintf("%s on %s", n.Type, n.DAO)
	}
	add(&m, "DAO", n.DAO)
	if id != "" {
		add(&m, "Proposal ID", Short(id))
	}
	return m, nil
}

// tallies adds the votes and the quorum of a proposal's data.
func tallies(m *Message, d Data, o Options) {
	add(m, "For", FormatUnits(string(d.ForVotes), o.WeightDecimals))
	add(m, "Against", FormatUnits(string(d.AgainstVotes), o.WeightDecimals))
	add(m, "Abstain", FormatUnits(string(d.AbstainVotes), o.WeightDecimals))
	add(m, "Quorum", FormatUnits(string(d.Quorum), o.WeightDecimals))
}

// Duration words a number of seconds as people say it: "3 days", "5 hours",
// "12 minutes", "40 seconds".
func Duration(secs int64) string {
	unit := func(n int64, name string) string {
		if n == 1 {
			return "1 " + name
		}
		return fmt.Sprintf("%d %ss", n, name)
	}
	switch {
	case secs >= 2*86400:
		return unit((secs+43200)/86400, "day")
	case secs >= 2*3600:
		return unit((secs+1800)/3600, "hour")
	case secs >= 2*60:
		return unit((secs+30)/60, "minute")
	case secs < 0:
		secs = 0
	}
	return unit(secs, "second")
}

func add(m *Message, name, value string) {
	if value != "" {
		m.Fields = append(m.Fields, Field{name, value})
	}
}

// SupportLabel names a Governor vote's support value.
func SupportLabel(s string) string {
	switch s {
	case "0":
		return "against"
	case "1":
		return "for"
	case "2":
		return "abstain"
	case "255":
		return "split" // GovernorCountingFractional
	}
	if s == "" {
		return "?"
	}
	return s
}

// Short shortens long identifiers (addresses, hashed proposal ids) to their
// ends: 0x1b3c…a7c2.
func Short(s string) string {
	if len(s) <= 16 {
		return s
	}
	return s[:6] + "…" + s[len(s)-4:]
}

// FormatUnits writes an integer amount of the token's smallest unit in
// whole tokens with thousands separators and two decimals, as wallets do:
// "1234567890123456789012345" with 18 decimals is "1,234,567.89". A value
// that is not a decimal integer is returned as it is.
func FormatUnits(v string, decimals int) string {
	digits := strings.TrimPrefix(v, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" || decimals < 0 || decimals > 77 {
		return v
	}
	// Decimal arithmetic on the digits themselves: the whole part is all
	// but the last decimals digits, the cents the two after it.
	if pad := decimals + 1 - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	whole := strings.TrimLeft(digits[:len(digits)-decimals], "0")
	if whole == "" {
		whole = "0"
	}
	cents := (digits[len(digits)-decimals:] + "00")[:2]
	out := group(whole)
	if strings.HasPrefix(v, "-") && (whole != "0" || (decimals > 0 && strings.Trim(cents, "0") != "")) {
		out = "-" + out
	}
	if decimals == 0 {
		return out
	}
	// Two decimals, truncated.
	return out + "." + cents
}

func group(digits string) string {
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	var b strings.Builder
	for i, r := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Truncate cuts s to at most n runes, marking the cut with an ellipsis.
func Truncate(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// AppendString appends s to b as a JSON string, byte for byte as Marshal
// writes it: quotes, backslashes and control characters escaped (\b, \f,
// \n, \r and \t by name), invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped, and <, > and & as they are. A message plugin that writes its
// message with it runs no reflection in the sandbox, where encoding/json's
// costs a Go plugin about a third of a call (TestAppendStringIsMarshal).
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Marshal encodes v without escaping <, > and & as \u003c…: Slack and
// Discord read either, people reading deliveries read this one better.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Wording is the part of a message plugin's config that words the
// message; Slack's and Discord's configs embed it.
type Wording struct {
	// ProposalURL links the proposal: a template with {dao} and
	// {proposalId}, such as https://www.tally.xyz/gov/{dao}/proposal/{proposalId}.
	ProposalURL string `json:"proposalUrl"`
	// WeightDecimals is the number of decimals of the voting token
	// (default 18).
	WeightDecimals *int `json:"weightDecimals"`
}

// Options returns the Describe options of w, with its defaults applied.
func (w Wording) Options() Options {
	o := Options{ProposalURL: w.ProposalURL, WeightDecimals: 18}
	if w.WeightDecimals != nil {
		o.WeightDecimals = *w.WeightDecimals
	}
	return o
}

// JSONTransform is the transform of a chat plugin: the notification
// rendered by render, sent as application/json.
func JSONTransform[C any](render func(sdk.Notification, C) ([]byte, error)) func(sdk.Notification, []byte, C) (sdk.Output, error) {
	return func(n sdk.Notification, _ []byte, cfg C) (sdk.Output, error) {
		body, err := render(n, cfg)
		if err != nil {
			return sdk.Output{}, err
		}
		return sdk.Output{Body: body, ContentType: "application/json"}, nil
	}
}
