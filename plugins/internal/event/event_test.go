package event

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
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

func TestTextUnmarshal(t *testing.T) {
	for raw, want := range map[string]Text{
		`"plain"`:              "plain",
		`"with \"quotes\""`:    `with "quotes"`,
		`"line\nbreak \u00e9"`: "line\nbreak é",
		`"back\\slash"`:        `back\slash`,
		`""`:                   "",
		`12345`:                "12345",
		`true`:                 "true",
		`null`:                 "",
		`{"nested":"object"}`:  "",
		`["an","array"]`:       "",
		`"unicode é straight"`: "unicode é straight",
		`"<html> & ampersand"`: "<html> & ampersand",
	} {
		var d struct {
			X Text `json:"x"`
		}
		if err := json.Unmarshal([]byte(`{"x":`+raw+`}`), &d); err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if d.X != want {
			t.Errorf("%s: %q, want %q", raw, d.X, want)
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
