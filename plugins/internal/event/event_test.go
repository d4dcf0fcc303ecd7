package event

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/sdk"
)

// formatUnitsBig is FormatUnits done with math/big, as it was before it
// worked on the digits: the reference for non-negative amounts.
func formatUnitsBig(v string, decimals int) string {
	n, _ := new(big.Int).SetString(v, 10)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)
	whole, frac := new(big.Int).QuoRem(n, scale, new(big.Int))
	out := group(whole.String())
	if decimals == 0 {
		return out
	}
	cents := new(big.Int).Div(new(big.Int).Mul(frac, big.NewInt(100)), scale)
	return fmt.Sprintf("%s.%02d", out, cents.Int64())
}

func TestFormatUnits(t *testing.T) {
	for _, tc := range []struct {
		v        string
		decimals int
		want     string
	}{
		{"1234567890123456789012345", 18, "1,234,567.89"},
		{"4200000000000000000000", 18, "4,200.00"},
		{"0", 18, "0.00"},
		{"5", 18, "0.00"},
		{"10000000000000000", 18, "0.01"},
		{"999", 0, "999"},
		{"1000", 0, "1,000"},
		{"0001000", 3, "1.00"},
		{"123", 1, "12.30"},
		{"-1500000000000000000", 18, "-1.50"},
		{"-5", 18, "0.00"},
		{"", 18, ""},
		{"12a", 18, "12a"},
		{"1.5", 18, "1.5"},
		{"-", 18, "-"},
		{"100", 78, "100"},
	} {
		if got := FormatUnits(tc.v, tc.decimals); got != tc.want {
			t.Errorf("FormatUnits(%q, %d) = %q, want %q", tc.v, tc.decimals, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		b.WriteByte(byte('1' + r.IntN(9)))
		for range r.IntN(40) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		v, decimals := b.String(), r.IntN(30)
		if got, want := FormatUnits(v, decimals), formatUnitsBig(v, decimals); got != want {
			t.Fatalf("FormatUnits(%q, %d) = %q, math/big says %q", v, decimals, got, want)
		}
	}
}

func TestDataDecode(t *testing.T) {
	for raw, want := range map[string]Text{
		`"plain"`:              "plain",
		`"with \"quotes\""`:    `with "quotes"`,
		`"line\nbreak \u00e9"`: "line\nbreak é",
		`"back\\slash"`:        `back\slash`,
		`""`:                   "",
		`12345`:                "12345",
		`-1.5e3`:               "-1.5e3",
		`true`:                 "true",
		`false`:                "false",
		`null`:                 "",
		`{"nested":"object"}`:  "",
		`["an","array"]`:       "",
		`"unicode é straight"`: "unicode é straight",
		`"<html> & ampersand"`: "<html> & ampersand",
	} {
		var d Data
		if err := d.decode([]byte(`{"other":1,"reason":` + raw + `}`)); err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if d.Reason != want || d != (Data{Reason: want}) {
			t.Errorf("%s: %+v, want only Reason %q", raw, d, want)
		}
	}
	for _, bad := range []string{`{"weight":`, `[1]`, `"text"`, `{"a":1} x`, ``} {
		var d Data
		if err := d.decode([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	var d Data
	if err := d.decode([]byte(`null`)); err != nil || d != (Data{}) {
		t.Errorf("null: %+v, %v; want nothing", d, err)
	}
}

// oldText and oldData are Data as it was decoded before fastjson, with
// encoding/json: the reference that decode must equal.
type oldText string

func (t *oldText) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = oldText(s)
		return nil
	}
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return nil
	}
	if string(b) != "null" {
		*t = oldText(b)
	}
	return nil
}

type oldData struct {
	ProposalID    oldText `json:"proposalId"`
	Proposer      oldText `json:"proposer"`
	Title         oldText `json:"title"`
	Description   oldText `json:"description"`
	Voter         oldText `json:"voter"`
	Delegate      oldText `json:"delegate"`
	Support       oldText `json:"support"`
	Weight        oldText `json:"weight"`
	Reason        oldText `json:"reason"`
	ETA           oldText `json:"eta"`
	Deadline      oldText `json:"extendedDeadline"`
	ForVotes      oldText `json:"forVotes"`
	AgainstVotes  oldText `json:"againstVotes"`
	AbstainVotes  oldText `json:"abstainVotes"`
	Quorum        oldText `json:"quorum"`
	QuorumReached oldText `json:"quorumReached"`
	SecondsLeft   oldText `json:"secondsLeft"`
	EndsAt        oldText `json:"endsAt"`
	Estimated     oldText `json:"estimated"`
}

// TestDataDecodeIsUnmarshal compares decode with encoding/json on 20,000
// random objects: every key of Data and others, values of every JSON type,
// strings with escapes and non-ASCII text, keys given twice.
func TestDataDecodeIsUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	keys := []string{"proposalId", "proposer", "title", "description", "voter", "delegate", "support", "weight", "reason", "eta", "extendedDeadline",
		"forVotes", "againstVotes", "abstainVotes", "quorum", "quorumReached", "secondsLeft", "endsAt", "estimated", "unknown"}
	pieces := []string{"a", "é", `"`, `\`, "\n", "\t", "<", ">", "&", "\u2028", "€", "𝄞", " ", "0x", "\x00"}
	value := func() any {
		switch r.IntN(7) {
		case 0:
			return r.IntN(1 << 20)
		case 1:
			return r.Float64() * 1e6
		case 2:
			return r.IntN(2) == 0
		case 3:
			return nil
		case 4:
			return map[string]any{"x": "y"}
		case 5:
			return []any{1, "a"}
		}
		var b strings.Builder
		for range r.IntN(20) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 20_000 {
		b := []byte{'{'}
		for i := range r.IntN(2 * len(keys)) {
			if i > 0 {
				b = append(b, ',')
			}
			k, _ := json.Marshal(keys[r.IntN(len(keys))])
			v, _ := json.Marshal(value())
			b = append(append(append(b, k...), ':'), v...)
		}
		b = append(b, '}')
		var old oldData
		werr := json.Unmarshal(b, &old)
		want := Data{Text(old.ProposalID), Text(old.Proposer), Text(old.Title), Text(old.Description), Text(old.Voter), Text(old.Delegate), Text(old.Support),
			Text(old.Weight), Text(old.Reason), Text(old.ETA), Text(old.Deadline), Text(old.ForVotes), Text(old.AgainstVotes),
			Text(old.AbstainVotes), Text(old.Quorum), Text(old.QuorumReached), Text(old.SecondsLeft), Text(old.EndsAt), Text(old.Estimated)}
		var got Data
		gerr := got.decode(b)
		if werr != nil || gerr != nil || got != want {
			t.Fatalf("%s: decode = %+v, %v; encoding/json = %+v, %v", b, got, gerr, want, werr)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven chars", 11, "eleven cha…"},
		{"ééééé", 5, "ééééé"},  // 10 bytes, 5 runes
		{"éééééé", 5, "éééé…"}, // 12 bytes, 6 runes
	} {
		if got := Truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// AppendString writes every string as Marshal does: fixed cases, then
// random strings of bytes that favour the ones with escapes, valid UTF-8
// or not.
func TestAppendStringIsMarshal(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, Marshal says %s", s, got[1:], want)
		}
	}
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
		"é ü 日本 🎉", "\u2028\u2029", "bad \xff utf8 \xc3", "trunc\xe2\x82", "·"} {
		check(s)
	}
	alphabet := []byte("a\"\\<>&\n\t\x00\x1f\x7f\xc3\xa9\xe2\x80\xa8\xa9\xf0\x9f\x8e\x89\xff")
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.IntN(24))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		check(string(b))
	}
}

// TestDescribesEveryNotificationType words the JSON Schema's example of
// every type in the gateway's list (core.NotificationTypes): none fails to
// decode, and each gets a message of its own, except the types the chat
// examples deliberately word generically (the type as the title), listed
// here so that a new type needs a decision.
func TestDescribesEveryNotificationType(t *testing.T) {
	generic := []string{core.TypeDelegateChanged, core.TypeDelegateVotesChanged, core.TypeNotificationOrphaned}
	for _, typ := range core.NotificationTypes() {
		t.Run(typ, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "schemas", "examples", typ+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var n sdk.Notification
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatal(err)
			}
			m, err := Describe(n, Options{WeightDecimals: 18})
			if err != nil {
				t.Fatalf("describe the %s example: %v", typ, err)
			}
			if worded := m.Title != typ; worded == slices.Contains(generic, typ) {
				t.Errorf("%s: title %q; the chat examples word it generically: %v", typ, m.Title, !worded)
			}
		})
	}
}

// TestDescribeVotes words the documented override example and a split
// vote of GovernorCountingFractional.
func TestDescribeVotes(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/schemas/examples/vote.overridden.json")
	if err != nil {
		t.Fatal(err)
	}
	var over sdk.Notification
	if err := json.Unmarshal(raw, &over); err != nil {
		t.Fatal(err)
	}
	split := sdk.Notification{Type: sdk.TypeVoteCast, DAO: "gitcoin", Data: json.RawMessage(`{"proposalId":"7","title":"Fund GG24","voter":"0x2B1Ad6184a6B0fac06bD225ed37C2AbC04415fF4","support":255,"weight":"800000000000000000000"}`)}
	for _, tc := range []struct {
		n            sdk.Notification
		title, summa string
	}{
		{over, "Override vote against: Proposal 61", "0x71C7…976F voted against on Proposal 61 with 120,000.00 votes, in place of its delegate 0x8E4E…a42E"},
		{split, "Vote split: Fund GG24", "0x2B1A…5fF4 voted split on Fund GG24 with 800.00 votes"},
	} {
		m, err := Describe(tc.n, Options{WeightDecimals: 18})
		if err != nil {
			t.Fatal(err)
		}
		if m.Title != tc.title || m.Summary != tc.summa {
			t.Errorf("%s: %q / %q, want %q / %q", tc.n.Type, m.Title, m.Summary, tc.title, tc.summa)
		}
	}
}
