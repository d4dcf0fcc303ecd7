package httpapi

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/ssrf"
)

// MaxURLLength is the longest webhook URL accepted, in bytes.
const MaxURLLength = 2048

// NormalizeWebhookURL validates a webhook URL and returns its normal form,
// the one registrations are compared by: scheme and host lower-case, the
// host in ASCII (punycode) without a trailing dot, an IP host in its
// canonical spelling, the default port dropped and an empty path made "/".
// A host with an empty label, or one that ends in a number yet is no IPv4
// address ("256.1.1.1", "4294967296"), is invalid, as in the URL standard.
// Unless allowPrivate, a host that is or spells a loopback, private,
// link-local, unique-local, multicast or unspecified address, or localhost,
// is refused. No DNS lookup happens here: the dispatcher checks every
// resolved address when it dials.
func NormalizeWebhookURL(raw string, allowPrivate bool) (string, error) {
	if len(raw) > MaxURLLength {
		return "", core.Errorf(core.ECodeInvalidURL, "url is longer than %d bytes", MaxURLLength)
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f {
			return "", core.Errorf(core.ECodeInvalidURL, "url must not contain spaces or control characters")
		}
	}
	if strings.Contains(raw, "#") {
		return "", core.Errorf(core.ECodeInvalidURL, "url must not have a fragment")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", core.Errorf(core.ECodeInvalidURL, "url is not a valid URL")
	}
	if !u.IsAbs() || u.Opaque != "" {
		return "", core.Errorf(core.ECodeInvalidURL, "url must be an absolute https URL")
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return "", core.Errorf(core.ECodeInvalidURL, "url must use https")
	}
	if u.User != nil {
		return "", core.Errorf(core.ECodeInvalidURL, "url must not contain credentials (userinfo)")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", core.Errorf(core.ECodeInvalidURL, "url must have a host")
	}
	if strings.HasSuffix(u.Host, ":") {
		port = ""
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", core.Errorf(core.ECodeInvalidURL, "url has an invalid port")
		}
		if n == 443 {
			port = ""
		} else {
			port = strconv.Itoa(n)
		}
	}
	if addr, ok := ssrf.ParseHostIP(host); ok {
		host = addr.WithZone("").String()
		if addr.Is4In6() {
			host = addr.Unmap().String()
		}
	} else {
		// IDNA maps the other full stops ("。", "．") to ".", so the root's
		// trailing dot is dropped only after it: "example.com。" and
		// "example.com." must both become "example.com".
		ascii, err := idna.Lookup.ToASCII(strings.ToLower(host))
		ascii = strings.TrimSuffix(ascii, ".")
		if err != nil || ascii == "" || strings.HasPrefix(ascii, ".") || strings.HasSuffix(ascii, ".") || strings.Contains(ascii, "..") {
			return "", core.Errorf(core.ECodeInvalidURL, "url host %q is not a valid host name", host)
		}
		if endsInNumber(ascii) {
			// The URL standard reads such a host as IPv4 and, since it is
			// not a valid address, fails: browsers refuse it, and a resolver
			// that truncates it could reach any address.
			return "", core.Errorf(core.ECodeInvalidURL, "url host %q is not a valid IPv4 address", host)
		}
		host = ascii
	}
	if !allowPrivate {
		if reason, bad := ssrf.ForbiddenHost(u.Hostname()); bad {
			return "", core.Errorf(core.ECodeForbiddenURL, "url host is not allowed: %s", reason)
		}
		if reason, bad := ssrf.ForbiddenHost(host); bad {
			return "", core.Errorf(core.ECodeForbiddenURL, "url host is not allowed: %s", reason)
		}
	}
	hostport := host
	if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport = net.JoinHostPort(host, port)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	out := "https://" + hostport + path
	if u.RawQuery != "" || u.ForceQuery {
		out += "?" + u.RawQuery
	}
	return out, nil
}

// endsInNumber reports whether the last label of host is a number, decimal
// or "0x" hex, which makes the host an IPv4 address in the URL standard's
// eyes (its "ends in a number" rule).
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}
