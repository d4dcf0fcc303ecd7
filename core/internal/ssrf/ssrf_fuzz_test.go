package ssrf_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/ssrf"
)

// FuzzParseHostIP checks the registration-time address checks against the
// standard library and against each other, on any host: ParseHostIP reads
// every address netip reads, as the same address; what it reads prints
// back to itself; and ForbiddenHost forbids an address host exactly when
// Forbidden does.
func FuzzParseHostIP(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.1", "[::1]", "[::ffff:127.0.0.1]:8080",
		"::ffff:7f00:1", "fe80::1%eth0", "１２７．０．０．１", "example.com", "localhost.", "a.localhost",
		"169.254.169.254", "[64:ff9b::7f00:1]", "2002:7f00:1::", "8.8.8.8", "[2001:4860:4860::8888]", "[", "]:1", "0x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		a, ok := ssrf.ParseHostIP(host)
		if std, err := netip.ParseAddr(host); err == nil && !strings.Contains(host, "%") {
			if !ok || a != std {
				t.Fatalf("ParseHostIP(%q) = %v, %v; netip reads %v", host, a, ok, std)
			}
		}
		reason, forbidden := ssrf.ForbiddenHost(host)
		if !ok {
			return
		}
		if !a.IsValid() {
			t.Fatalf("ParseHostIP(%q) = the invalid address, ok", host)
		}
		if again, ok := ssrf.ParseHostIP(a.String()); !ok || again != a {
			t.Fatalf("ParseHostIP(%q) = %v, which reads back as %v, %v", host, a, again, ok)
		}
		if forbidden != ssrf.Forbidden(a) {
			t.Fatalf("ForbiddenHost(%q) = %q, %v but Forbidden(%v) = %v", host, reason, forbidden, a, ssrf.Forbidden(a))
		}
	})
}
