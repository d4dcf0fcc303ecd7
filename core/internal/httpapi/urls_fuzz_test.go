package httpapi_test

import (
	"net/url"
	"testing"

	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/ssrf"
)

// FuzzNormalizeWebhookURL checks the registration's URL rules on any
// input: the normal form is a fixed point (registrations compare by it), is
// an https URL without credentials or fragment, and, unless private targets
// are allowed, names no host ForbiddenHost refuses; and what is accepted
// without private targets is accepted, the same, with them.
func FuzzNormalizeWebhookURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com", "https://Example.COM:443/a?b=c", "https://[::1]/", "https://127.1/", "https://2130706433/x",
		"https://xn--bcher-kva.example/", "https://bücher.example./p", "https://example.com。/", "https://u:p@example.com/",
		"http://example.com/", "https://example.com/#frag", "https://256.1.1.1/", "https://a..b/", "https://[fe80::1%25eth0]/",
		"https://example.com:0/", "https://example.com:65536/", "https://0x7f.1/", "https://localhost./",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		public, errPublic := httpapi.NormalizeWebhookURL(raw, false)
		private, errPrivate := httpapi.NormalizeWebhookURL(raw, true)
		if errPublic == nil && (errPrivate != nil || private != public) {
			t.Fatalf("%q: accepted as %q for public targets, but %q, %v with private ones allowed", raw, public, private, errPrivate)
		}
		if errPrivate != nil {
			return
		}
		again, err := httpapi.NormalizeWebhookURL(private, true)
		if err != nil || again != private {
			t.Fatalf("%q normalizes to %q, which normalizes to %q, %v", raw, private, again, err)
		}
		u, err := url.Parse(private)
		if err != nil || u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.Hostname() == "" {
			t.Fatalf("%q normalizes to %q: not an https URL with a host and nothing else (%v)", raw, private, err)
		}
		if errPublic == nil {
			if reason, bad := ssrf.ForbiddenHost(u.Hostname()); bad {
				t.Fatalf("%q accepted for public targets as %q, whose host is forbidden: %s", raw, public, reason)
			}
		}
	})
}
