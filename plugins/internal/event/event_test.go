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
