// Package ssrf keeps webhook traffic away from the gateway's own network.
// A registered URL is chosen by a client, so without these checks a webhook
// could make govgate post to its loopback interface, its private network or
// a cloud metadata service.
//
// There are two layers. At registration, ForbiddenHost refuses a URL whose
// host is localhost or spells a forbidden address in any of the forms that
// browsers and inet_aton accept ("2130706433", "0x7f.1", "[::ffff:7f00:1]"),
// without resolving DNS. At delivery, the client from NewClient checks
// every address it actually dials, after DNS resolution, so a name that
// resolves (or later re-resolves) to a forbidden address is refused too.
package ssrf

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// ParseHostIP interprets host, a URL host such as url.URL.Host or
// url.URL.Hostname returns, as an IP address the way browsers (the WHATWG
// URL standard) and inet_aton do, so that every spelling of an address is
// recognised: dotted quads and their shortened forms ("127.1", "127.0.1"),
// one 32-bit number ("2130706433"), hex and octal parts ("0x7f000001",
// "0x7f.1", "0177.0.0.1", "017700000001") and any mix of them, a trailing
// dot, IPv6 with or without brackets (including IPv4-mapped forms and
// zones), and non-ASCII spellings that IDNA maps to one of these
// ("１２７．０．０．１"), as net/http does before it dials. A port after the
// host is ignored. It returns false for a host that is a name.
//
// The address is returned as written: "[::ffff:127.0.0.1]" stays
// IPv4-mapped. Forbidden unmaps it.
func ParseHostIP(host string) (netip.Addr, bool) {
	h, bracketed, ok := splitHost(host)
	if !ok || h == "" {
		return netip.Addr{}, false
	}
	if bracketed || strings.Contains(h, ":") {
		return parseIPv6(h)
	}
	return parseIPv4(asciiHost(h))
}

// splitHost drops the brackets and port from host. bracketed reports an
// IPv6 literal in brackets; ok is false when the brackets or the port are
// malformed.
func splitHost(host string) (h string, bracketed, ok bool) {
	if rest, found := strings.CutPrefix(host, "["); found {
		inner, port, closed := strings.Cut(rest, "]")
		if !closed {
			return "", true, false
		}
		if port != "" {
			p, hasColon := strings.CutPrefix(port, ":")
			if !hasColon || !isDigits(p) {
				return "", true, false
			}
		}
		return inner, true, true
	}
	// One colon separates a port; more than one is an unbracketed IPv6
	// address, as url.URL.Hostname returns it.
	if strings.Count(host, ":") == 1 {
		name, port, _ := strings.Cut(host, ":")
		if !isDigits(port) {
			return "", false, false
		}
		return name, false, true
	}
	return host, false, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseIPv6 parses an IPv6 literal, accepting the zone separator either
// raw ("%eth0") or percent-encoded as URLs write it ("%25eth0").
func parseIPv6(h string) (netip.Addr, bool) {
	if addr, zone, found := strings.Cut(h, "%25"); found && zone != "" {
		h = addr + "%" + zone
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return netip.Addr{}, false
	}
	return a, true
}

// asciiHost returns h as the HTTP client will dial it: percent-decoded, and
// when it is not ASCII, mapped by IDNA (which turns full-width digits and
// ideographic full stops into ASCII ones). ASCII letters are lowered.
func asciiHost(h string) string {
	if strings.Contains(h, "%") {
		if dec, err := url.PathUnescape(h); err == nil {
			h = dec
		}
	}
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			// On error ToASCII still returns its best mapping; using it
			// errs towards recognising an address.
			h, _ = idna.Lookup.ToASCII(h)
			break
		}
	}
	return strings.ToLower(h)
}

// parseIPv4 implements the WHATWG URL standard's IPv4 parser, which accepts
// what inet_aton accepts: one to four dot-separated parts, each decimal,
// hex after "0x" or octal after a leading "0"; the last part fills all the
// remaining bytes.
func parseIPv4(h string) (netip.Addr, bool) {
	parts := strings.Split(h, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // one trailing dot, as in "127.0.0.1."
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 0xff {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseIPv4Part(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // WHATWG reads a bare "0x" as zero
		}
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	// ParseUint with an explicit base takes neither signs nor underscores.
	n, err := strconv.ParseUint(p, base, 64)
	return n, err == nil
}

// Forbidden reports whether a webhook may not be delivered to a: loopback,
// private, link-local (which holds the cloud metadata address
// 169.254.169.254), CGNAT, unique-local, multicast, unspecified,
// broadcast, reserved, documentation and benchmarking addresses, and IPv6
// forms that embed such an IPv4 address (IPv4-mapped, IPv4-compatible,
// NAT64, 6to4). An IPv6 address outside 2000::/3, the global unicast
// space, is forbidden unless it is a NAT64 form of an allowed IPv4 address.
// The invalid Addr is forbidden.
func Forbidden(a netip.Addr) bool { return addrReason(a) != "" }

type block struct {
	prefix netip.Prefix
	reason string
}

var ipv4Blocks = []block{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address"},
}

var ipv6Blocks = []block{
	{netip.MustParsePrefix("::/128"), "unspecified address"},
	{netip.MustParsePrefix("::1/128"), "loopback address"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible address"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "discard-only address"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignment address"}, // includes Teredo 2001::/32
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address"},
	{netip.MustParsePrefix("3fff::/20"), "documentation address"},
	{netip.MustParsePrefix("fc00::/7"), "unique local address"},
	{netip.MustParsePrefix("fe80::/10"), "link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "multicast address"},
}

var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// addrReason says why a is forbidden, or returns "" when it is allowed.
func addrReason(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return ipv4Reason(a)
	}
	for _, b := range ipv6Blocks {
		if b.prefix.Contains(a) {
			return b.reason
		}
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		if r := ipv4Reason(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return r + " (NAT64 form)"
		}
		return ""
	case sixToFour.Contains(a):
		if r := ipv4Reason(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return r + " (6to4 form)"
		}
		return ""
	case !globalUnicast.Contains(a):
		return "reserved address"
	}
	return ""
}

func ipv4Reason(a netip.Addr) string {
	for _, b := range ipv4Blocks {
		if b.prefix.Contains(a) {
			return b.reason
		}
	}
	return ""
}

// ForbiddenHost reports whether a webhook URL with this host must be
// refused at registration, and why, in words fit for the client. host is
// url.URL.Host or url.URL.Hostname. It forbids localhost, any name under
// .localhost (in any case, with or without a trailing dot), a malformed
// bracketed literal, and every host that ParseHostIP reads as a Forbidden
// address. Any other name is allowed: registration does not resolve DNS;
// the client from NewClient checks the addresses a name resolves to when
// it dials.
func ForbiddenHost(host string) (reason string, forbidden bool) {
	h, bracketed, ok := splitHost(host)
	if !ok || h == "" {
		return "invalid host", true
	}
	if a, isIP := ParseHostIP(host); isIP {
		if r := addrReason(a); r != "" {
			return fmt.Sprintf("%s: %s", a.WithZone("").Unmap(), r), true
		}
		return "", false
	}
	if bracketed {
		return "invalid IPv6 literal", true
	}
	name := strings.TrimRight(asciiHost(h), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return "localhost names the gateway itself", true
	}
	return "", false
}
