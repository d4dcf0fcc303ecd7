package ssrf_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/ssrf"
)

func TestParseHostIP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		host string
		want string // "" when host is not an IP
	}{
		{"dotted quad", "127.0.0.1", "127.0.0.1"},
		{"two parts", "127.1", "127.0.0.1"},
		{"three parts", "127.0.1", "127.0.0.1"},
		{"three parts, big last", "10.1.65535", "10.1.255.255"},
		{"32-bit decimal", "2130706433", "127.0.0.1"},
		{"hex", "0x7f000001", "127.0.0.1"},
		{"hex upper-case prefix and digits", "0X7F000001", "127.0.0.1"},
		{"hex parts", "0x7f.1", "127.0.0.1"},
		{"hex every part", "0x7f.0x0.0x0.0x1", "127.0.0.1"},
		{"octal part", "0177.0.0.1", "127.0.0.1"},
		{"octal 32-bit", "017700000001", "127.0.0.1"},
		{"octal with extra zeros", "00000177.0.0.01", "127.0.0.1"},
		{"mixed", "0x7f.0.00.1", "127.0.0.1"},
		{"mixed shortened", "0177.0x1", "127.0.0.1"},
		{"bare 0x is zero", "0x.0x.0x.0x1", "0.0.0.1"},
		{"zero", "0", "0.0.0.0"},
		{"trailing dot", "127.0.0.1.", "127.0.0.1"},
		{"with port", "127.0.0.1:8443", "127.0.0.1"},
		{"decimal with port", "2130706433:80", "127.0.0.1"},
		{"metadata as one number", "2852039166", "169.254.169.254"},
		{"metadata in hex", "0xa9fea9fe", "169.254.169.254"},
		{"max", "4294967295", "255.255.255.255"},
		{"public", "8.8.8.8", "8.8.8.8"},
		{"public in hex", "0x08080808", "8.8.8.8"},
		{"full-width digits", "１２７．０．０．１", "127.0.0.1"},
		{"ideographic full stops", "127。0。0。1", "127.0.0.1"},
		{"percent-encoded full-width", "%ef%bc%91%ef%bc%92%ef%bc%97.0.0.1", "127.0.0.1"},

		{"IPv6 loopback", "[::1]", "::1"},
		{"IPv6 unbracketed", "::1", "::1"},
		{"IPv6 with port", "[::1]:443", "::1"},
		{"IPv4-mapped dotted", "[::ffff:127.0.0.1]", "::ffff:127.0.0.1"},
		{"IPv4-mapped hex", "[::ffff:7f00:1]", "::ffff:127.0.0.1"},
		{"IPv4-mapped upper-case", "[::FFFF:7F00:1]", "::ffff:127.0.0.1"},
		{"zone encoded", "[fe80::1%25eth0]", "fe80::1%eth0"},
		{"zone raw", "fe80::1%eth0", "fe80::1%eth0"},
		{"IPv4 in brackets", "[127.0.0.1]", "127.0.0.1"},
		{"public IPv6", "[2606:4700:4700::1111]", "2606:4700:4700::1111"},

		{"name", "example.com", ""},
		{"localhost", "localhost", ""},
		{"number-ended name", "foo.123", ""},
		{"number-led name", "123.example", ""},
		{"empty", "", ""},
		{"part over 255", "256.0.0.1", ""},
		{"inner part over 255", "1.256.0.1", ""},
		{"32-bit overflow", "4294967296", ""},
		{"last part too big for two parts", "1.16777216", ""},
		{"five parts", "1.2.3.4.5", ""},
		{"bad octal", "08.0.0.1", ""},
		{"bad hex", "0x1g", ""},
		{"empty part", "1..1", ""},
		{"leading dot", ".1.2.3", ""},
		{"two trailing dots", "1.2.3.4..", ""},
		{"sign", "-1", ""},
		{"plus", "+1.2.3.4", ""},
		{"exponent", "1e3", ""},
		{"space", " 127.0.0.1", ""},
		{"unclosed bracket", "[::1", ""},
		{"name in brackets", "[localhost]", ""},
		{"junk after bracket", "[::1]x", ""},
		{"bad port", "127.0.0.1:http", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ssrf.ParseHostIP(tt.host)
			if tt.want == "" {
				if ok {
					t.Fatalf("ParseHostIP(%q) = %v, true; want not an IP", tt.host, got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(tt.want) {
				t.Fatalf("ParseHostIP(%q) = %v, %v; want %s", tt.host, got, ok, tt.want)
			}
		})
	}
}

func TestForbidden(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254",
		"127.0.0.1", "127.255.255.254", "169.254.169.254", "169.254.0.1",
		"172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.0.192", "192.0.2.1", "192.88.99.1", "192.168.1.1",
		"198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9",
		"224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",
		"::127.0.0.1", "::8.8.8.8", "::ffff:0:127.0.0.1",
		"64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::10.1.2.3", "64:ff9b:1::8.8.8.8",
		"2002:7f00:1::", "2002:a9fe:a9fe::1", "2002:c0a8:101::",
		"2001:db8::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "3fff::1",
		"fc00::1", "fd00:ec2::254", "fe80::1", "fe80::1%eth0", "febf::1", "fec0::1", "ff02::1", "ff0e::1",
		"100::1", "1::1", "4000::1", "e000::1",
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
		"192.0.1.255", "192.169.0.1", "198.17.255.255", "198.20.0.0", "223.255.255.255", "169.253.255.255",
		"::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::1", "2400:cb00::1",
	}
	for _, s := range forbidden {
		if a := netip.MustParseAddr(s); !ssrf.Forbidden(a) {
			t.Errorf("Forbidden(%s) = false, want true", s)
		}
	}
	for _, s := range allowed {
		if a := netip.MustParseAddr(s); ssrf.Forbidden(a) {
			t.Errorf("Forbidden(%s) = true, want false", s)
		}
	}
	if !ssrf.Forbidden(netip.Addr{}) {
		t.Error("Forbidden(invalid Addr) = false, want true")
	}
}

func TestForbiddenHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host       string
		forbidden  bool
		reasonPart string
	}{
		{"localhost", true, "localhost"},
		{"LOCALHOST", true, "localhost"},
		{"localhost.", true, "localhost"},
		{"LocalHost.", true, "localhost"},
		{"localhost:8443", true, "localhost"},
		{"api.localhost", true, "localhost"},
		{"a.b.LOCALHOST.", true, "localhost"},
		{"ｌｏｃａｌｈｏｓｔ", true, "localhost"},
		{"127.0.0.1", true, "loopback"},
		{"127.1", true, "loopback"},
		{"127.0.1", true, "loopback"},
		{"2130706433", true, "127.0.0.1: loopback"},
		{"0x7f000001", true, "loopback"},
		{"0x7f.1", true, "loopback"},
		{"0177.0.0.1", true, "loopback"},
		{"017700000001", true, "loopback"},
		{"0x7f.0.00.1", true, "loopback"},
		{"127.0.0.1.", true, "loopback"},
		{"１２７．０．０．１", true, "loopback"},
		{"[::1]", true, "loopback"},
		{"::1", true, "loopback"},
		{"[::ffff:127.0.0.1]", true, "127.0.0.1: loopback"},
		{"[::ffff:7f00:1]", true, "loopback"},
		{"[::ffff:a9fe:a9fe]", true, "link-local"},
		{"[fe80::1%25eth0]", true, "link-local"},
		{"[64:ff9b::7f00:1]", true, "NAT64"},
		{"[2002:a9fe:a9fe::]", true, "6to4"},
		{"169.254.169.254", true, "link-local"},
		{"2852039166", true, "link-local"},
		{"10.0.0.1", true, "private"},
		{"0xa.1", true, "private"},
		{"192.168.0.1", true, "private"},
		{"172.16.0.1", true, "private"},
		{"100.64.0.1", true, "CGNAT"},
		{"0.0.0.0", true, "this-network"},
		{"0", true, "this-network"},
		{"255.255.255.255", true, "broadcast"},
		{"4294967295", true, "broadcast"},
		{"224.0.0.1", true, "multicast"},
		{"[ff02::1]", true, "multicast"},
		{"[fd00::1]", true, "unique local"},
		{"192.0.2.1", true, "documentation"},
		{"[2001:db8::1]", true, "documentation"},
		{"198.18.0.1", true, "benchmarking"},
		{"240.0.0.1", true, "reserved"},
		{"", true, "invalid host"},
		{"[::1", true, "invalid host"},
		{"[not-an-ip]", true, "invalid IPv6"},

		{"8.8.8.8", false, ""},
		{"1.1.1.1", false, ""},
		{"0x08080808", false, ""},
		{"134744072", false, ""},
		{"8.8.8.8:443", false, ""},
		{"[2606:4700:4700::1111]", false, ""},
		{"[::ffff:8.8.8.8]", false, ""},
		{"example.com", false, ""},
		{"example.com.", false, ""},
		{"example.com:8443", false, ""},
		{"localhost.example.com", false, ""},
		{"mylocalhost", false, ""},
		{"localhostx", false, ""},
		{"bücher.de", false, ""},
		{"metadata.google.internal", false, ""}, // a name: refused at dial time, after resolution
	}
	for _, tt := range tests {
		reason, forbidden := ssrf.ForbiddenHost(tt.host)
		if forbidden != tt.forbidden {
			t.Errorf("ForbiddenHost(%q) = %q, %v; want forbidden %v", tt.host, reason, forbidden, tt.forbidden)
			continue
		}
		if !strings.Contains(reason, tt.reasonPart) || !forbidden && reason != "" {
			t.Errorf("ForbiddenHost(%q) reason = %q, want it to mention %q", tt.host, reason, tt.reasonPart)
		}
	}
}
