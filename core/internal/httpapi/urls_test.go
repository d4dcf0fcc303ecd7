package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/httpapi"
)

// TestNormalisedSpellingsAreOneRegistration registers a URL, then another
// spelling of it: the second is the same registration (200, success only),
// and deleting through either spelling deactivates it. Different URLs stay
// different registrations.
func TestNormalisedSpellingsAreOneRegistration(t *testing.T) {
	t.Parallel()
	same := []struct {
		name, first, again, stored string
	}{
		{"host case and default port", "https://Hooks.Example.com:443/x", "https://hooks.example.com/x", "https://hooks.example.com/x"},
		{"trailing dot", "https://dot.example.com./x", "https://dot.example.com/x", "https://dot.example.com/x"},
		{"ideographic trailing dot", "https://wide.example.com\u3002/x", "https://wide.example.com/x", "https://wide.example.com/x"},
		{"scheme in capitals", "HTTPS://caps.example.com/x", "https://caps.example.com/x", "https://caps.example.com/x"},
		{"empty path", "https://empty.example.com", "https://empty.example.com/", "https://empty.example.com/"},
		{"empty path and default port", "https://port.example.com:443", "https://port.example.com/", "https://port.example.com/"},
		{"empty port", "https://colon.example.com:/x", "https://colon.example.com/x", "https://colon.example.com/x"},
		{"all at once", "HTTPS://ALL.Example.COM.:443", "https://all.example.com/", "https://all.example.com/"},
		{"unicode host", "https://bücher.example/x", "https://xn--bcher-kva.example/x", "https://xn--bcher-kva.example/x"},
		{"IPv6 spelling", "https://[2606:4700:0:0:0:0:0:1111]:443/x", "https://[2606:4700::1111]/x", "https://[2606:4700::1111]/x"},
		{"IPv4-mapped IPv6", "https://[::ffff:8.8.8.8]/x", "https://8.8.8.8/x", "https://8.8.8.8/x"},
	}
	different := []struct{ name, a, b string }{
		{"path case", "https://path.example.com/X", "https://path.example.com/x"},
		{"other port", "https://ports.example.com:8443/", "https://ports.example.com/"},
		{"query", "https://query.example.com/?a=1", "https://query.example.com/?a=2"},
		{"subdomain", "https://a.sub.example.com/", "https://sub.example.com/"},
	}
	each(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, options{})
		for _, tt := range same {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				e.register(t, tt.first)
				wantSuccessOnly(t, e.hook(t, http.MethodPost, tt.again))
				wh, ok := e.webhookByURL(t, tt.stored)
				if !ok {
					t.Fatalf("no webhook stored as %q", tt.stored)
				}
				wantSuccessOnly(t, e.hook(t, http.MethodDelete, tt.again))
				wantError(t, e.hook(t, http.MethodDelete, tt.first), http.StatusNotFound, core.ECodeNotFound)
				if wh, _ = e.webhookByURL(t, tt.stored); wh.State != core.WebhookDeactivated {
					t.Fatalf("after DELETE: %+v", wh)
				}
			})
		}
		for _, tt := range different {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				e.register(t, tt.a)
				e.register(t, tt.b)
			})
		}
	})
}

// forbiddenHosts spell addresses and names a webhook may not target unless
// AllowPrivate is set; normal is the host's normal form.
var forbiddenHosts = []struct{ name, host, normal string }{
	{"loopback", "127.0.0.1", "127.0.0.1"},
	{"loopback short", "127.1", "127.0.0.1"},
	{"loopback decimal", "2130706433", "127.0.0.1"},
	{"loopback hex", "0x7f000001", "127.0.0.1"},
	{"loopback octal", "0177.0.0.1", "127.0.0.1"},
	{"loopback mixed parts", "0x7f.1", "127.0.0.1"},
	{"loopback trailing dot", "127.0.0.1.", "127.0.0.1"},
	{"loopback full width", "１２７．０．０．１", "127.0.0.1"},
	{"loopback IPv6", "[::1]", "[::1]"},
	{"loopback IPv4-mapped", "[::ffff:127.0.0.1]", "127.0.0.1"},
	{"loopback NAT64", "[64:ff9b::7f00:1]", "[64:ff9b::7f00:1]"},
	{"private 10", "10.0.0.1", "10.0.0.1"},
	{"private 192.168", "192.168.1.1", "192.168.1.1"},
	{"private 172.16", "172.16.0.1", "172.16.0.1"},
	{"CGNAT", "100.64.0.1", "100.64.0.1"},
	{"metadata", "169.254.169.254", "169.254.169.254"},
	{"link-local IPv6", "[fe80::1]", "[fe80::1]"},
	{"link-local IPv6 with zone", "[fe80::1%25eth0]", "[fe80::1]"},
	{"unique-local", "[fc00::1]", "[fc00::1]"},
	{"multicast", "224.0.0.1", "224.0.0.1"},
	{"unspecified", "0.0.0.0", "0.0.0.0"},
	{"unspecified IPv6", "[::]", "[::]"},
	{"localhost", "localhost", "localhost"},
	{"localhost capitals and dot", "LOCALHOST.", "localhost"},
	{"localhost ideographic dot", "localhost\u3002", "localhost"},
	{"localhost with port", "localhost:443", "localhost"},
	{"under localhost", "foo.localhost", "foo.localhost"},
}

// invalidURLs are refused whatever AllowPrivate says.
var invalidURLs = []struct{ name, url string }{
	{"http", "http://hooks.example.com/x"},
	{"ftp", "ftp://hooks.example.com/x"},
	{"websocket", "wss://hooks.example.com/x"},
	{"mailto", "mailto:hooks@example.com"},
	{"relative path", "/webhooks/x"},
	{"relative host", "hooks.example.com/x"},
	{"scheme-relative", "//hooks.example.com/x"},
	{"no host", "https:///x"},
	{"no host no path", "https://"},
	{"one slash", "https:/x"},
	{"userinfo", "https://u:p@h.example.com/"},
	{"user only", "https://u@h.example.com/"},
	{"fragment", "https://h.example.com/x#frag"},
	{"empty fragment", "https://h.example.com/#"},
	{"too long", "https://h.example.com/" + strings.Repeat("a", httpapi.MaxURLLength-len("https://h.example.com/")+1)},
	{"space", "https://h.example.com/a b"},
	{"tab", "https://h.example.com/\t"},
	{"port zero", "https://h.example.com:0/"},
	{"port too big", "https://h.example.com:65536/"},
	{"empty label", "https://h..example.com/"},
	{"two trailing dots", "https://h.example.com../"},
	{"bad IPv4", "https://256.1.1.1/"},
	{"five parts", "https://1.2.3.4.5/"},
	{"IPv4 overflow", "https://4294967296/"},
	{"underscore", "https://h_x.example.com/"},
}

// TestRefusedURLs checks that invalid and forbidden URLs are refused by
// both endpoints with a clear error and nothing stored, and that forbidden
// hosts are accepted, in their normal form, under AllowPrivate.
func TestRefusedURLs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, b backend) {
		t.Run("default", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b, options{})
			e.register(t, "https://kept.example.com/")
			before := e.snapshot(t)
			for _, tt := range forbiddenHosts {
				t.Run(tt.name, func(t *testing.T) {
					for _, method := range []string{http.MethodPost, http.MethodDelete} {
						wantError(t, e.hook(t, method, "https://"+tt.host+"/hook"), http.StatusUnprocessableEntity, core.ECodeForbiddenURL)
					}
				})
			}
			for _, tt := range invalidURLs {
				t.Run(tt.name, func(t *testing.T) {
					for _, method := range []string{http.MethodPost, http.MethodDelete} {
						wantError(t, e.hook(t, method, tt.url), http.StatusUnprocessableEntity, core.ECodeInvalidURL)
					}
				})
			}
			e.wantUnchanged(t, before)
		})
		t.Run("AllowPrivate", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b, options{allowPrivate: true})
			for _, tt := range forbiddenHosts {
				t.Run(tt.name, func(t *testing.T) {
					path := "/" + strings.ReplaceAll(tt.name, " ", "-")
					e.register(t, "https://"+tt.host+path)
					if _, ok := e.webhookByURL(t, "https://"+tt.normal+path); !ok {
						t.Fatalf("not stored as https://%s%s", tt.normal, path)
					}
				})
			}
			// Every spelling of the loopback address is one registration.
			e.register(t, "https://127.0.0.1/one")
			for _, tt := range forbiddenHosts {
				if tt.normal == "127.0.0.1" {
					wantSuccessOnly(t, e.hook(t, http.MethodPost, "https://"+tt.host+"/one"))
				}
			}
			for _, tt := range invalidURLs {
				t.Run(tt.name, func(t *testing.T) {
					wantError(t, e.hook(t, http.MethodPost, tt.url), http.StatusUnprocessableEntity, core.ECodeInvalidURL)
				})
			}
		})
	})
}

// TestNormalizeWebhookURL checks the normal form and the refusals directly.
func TestNormalizeWebhookURL(t *testing.T) {
	t.Parallel()
	longest := "https://h.example.com/" + strings.Repeat("a", httpapi.MaxURLLength-len("https://h.example.com/"))
	tests := []struct {
		name         string
		in           string
		allowPrivate bool
		want         string // the normal form, or "" with code
		code         string
	}{
		{"already normal", "https://hooks.example.com/x", false, "https://hooks.example.com/x", ""},
		{"default port and case", "https://Hooks.Example.com:443/x", false, "https://hooks.example.com/x", ""},
		{"port with leading zero", "https://hooks.example.com:0443/x", false, "https://hooks.example.com/x", ""},
		{"other port kept", "https://hooks.example.com:8443/x", false, "https://hooks.example.com:8443/x", ""},
		{"path case kept", "https://hooks.example.com/X/Y", false, "https://hooks.example.com/X/Y", ""},
		{"query kept", "https://hooks.example.com/x?b=2&a=1", false, "https://hooks.example.com/x?b=2&a=1", ""},
		{"escaped path kept", "https://hooks.example.com/a%2Fb", false, "https://hooks.example.com/a%2Fb", ""},
		{"non-ASCII path escaped", "https://hooks.example.com/ä", false, "https://hooks.example.com/%C3%A4", ""},
		{"punycode", "https://MÜNCHEN.example/", false, "https://xn--mnchen-3ya.example/", ""},
		{"full-width trailing dot", "https://hooks.example.com\uff0e/x", false, "https://hooks.example.com/x", ""},
		{"name ending in a letter after digits", "https://1.2.3.4.example/", false, "https://1.2.3.4.example/", ""},
		{"public IPv4", "https://8.8.8.8:443/", false, "https://8.8.8.8/", ""},
		{"public IPv6 with port", "https://[2606:4700::1111]:8443/", false, "https://[2606:4700::1111]:8443/", ""},
		{"2048 bytes", longest, false, longest, ""},
		{"2049 bytes", longest + "a", false, "", core.ECodeInvalidURL},
		{"empty", "", false, "", core.ECodeInvalidURL},
		{"leading dot", "https://.example.com/", false, "", core.ECodeInvalidURL},
		{"hex host overflow", "https://0x100000000/", true, "", core.ECodeInvalidURL},
		{"numeric last label", "https://example.123/", true, "", core.ECodeInvalidURL},
		{"loopback", "https://127.0.0.1/", false, "", core.ECodeForbiddenURL},
		{"loopback allowed", "https://0x7f.1:443", true, "https://127.0.0.1/", ""},
		{"localhost allowed", "https://LocalHost.:8443", true, "https://localhost:8443/", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := httpapi.NormalizeWebhookURL(tt.in, tt.allowPrivate)
			if got != tt.want || core.ErrorCode(err) != tt.code {
				t.Fatalf("NormalizeWebhookURL(%q, %v) = %q, %v; want %q, code %q", tt.in, tt.allowPrivate, got, err, tt.want, tt.code)
			}
			if err != nil {
				return
			}
			// The normal form is a fixed point.
			if again, err := httpapi.NormalizeWebhookURL(got, tt.allowPrivate); again != got || err != nil {
				t.Fatalf("normalising %q again gave %q, %v", got, again, err)
			}
		})
	}
}
