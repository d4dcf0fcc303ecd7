package core_test

import (
	"slices"
	"testing"

	"github.com/govgate/govgate/core"
)

func TestTypeMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, typ string
		want         bool
	}{
		{"proposal.*", "proposal.created", true},
		{"proposal.*", "proposal.x.y", true},
		{"proposal.*", "proposal", false},
		{"proposal.*", "proposals.created", false},
		{"vote.cast", "vote.cast", true},
		{"vote.cast", "vote.cast.x", false},
		{"proposal.ending_soon", "proposal.ending_soon", true},
	} {
		if got := core.TypeMatches(c.pattern, c.typ); got != c.want {
			t.Errorf("TypeMatches(%q, %q) = %v, want %v", c.pattern, c.typ, got, c.want)
		}
	}
}

// FuzzTypePatterns checks that the patterns the store searches a
// subscription for (TypePatternsOf) are exactly those TypeMatches accepts.
func FuzzTypePatterns(f *testing.F) {
	f.Add("proposal.*", "proposal.created")
	f.Add("a.b.*", "a.b.c.d")
	f.Add("vote.cast", "vote.cast")
	f.Add("x.*", "x")
	f.Fuzz(func(t *testing.T, pattern, typ string) {
		if !core.ValidTypePattern(pattern) || !core.ValidNotificationType(typ) {
			return
		}
		if got, want := slices.Contains(core.TypePatternsOf(typ), pattern), core.TypeMatches(pattern, typ); got != want {
			t.Fatalf("pattern %q, type %q: among TypePatternsOf %v, TypeMatches %v", pattern, typ, got, want)
		}
	})
}
