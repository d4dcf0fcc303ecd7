package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/govgate/govgate/core/httpapi"
)

func TestZZProbe(t *testing.T) {
	for _, u := range []string{
		"https://127.0.0.1./", "https://0x7f.1/", "https://[::ffff:7f00:1]/", "https://[0:0:0:0:0:ffff:127.0.0.1]/",
		"https://%31%32%37.0.0.1/", "https://１２７．０．０．１/", "https://localhost%2e/", "https://localhost:443/",
		"https://LOCALHOST./", "https://foo.localhost./", "https://[::]/", "https://0/", "https://[fe80::1%25eth0]/",
		"https://0177.1/", "https://017700000001/", "https://127.0.0.1:0/", "https://h.example.com:99999/",
		"https://[::1]:443/", "https://h.example.com:0443/", "https://localhost\u3002/", "https://127.0.0.1%00/",
		"https:/x", "https:x", "//hooks.example.com/x", "https://h.example.com:/x", "https://Hooks.Example.com:443",
		"https://hooks.example.com?", "https://hooks.example.com/?a=1", "https://münchen.example/", "https://xn--mnchen-3ya.example/",
		"https://h_x.example.com/", "https://[::ffff:8.8.8.8]/", "https://8.8.8.8/", "https://[2001:4860:4860::8888]:443/",
		"https://hooks.example.com/a%2Fb", "https://hooks.example.com/a b", "https://hooks.example.com/ä",
		"https://0x7f000001/", "https://[64:ff9b::7f00:1]/", "https://[::127.0.0.1]/", "https://localhost.localdomain/",
		"https://LocalHost/", "https://lOcAlHoSt../", "https://127.0.0.1../", "https://h.example.com../",
		"https://[fe80::1%eth0]/", "https://h.example.com:65535/", "https://h.example.com:443:443/",
		"https://1.1.1.1.1/", "https://256.1.1.1/", "https://0x100000000/", "https://4294967296/",
	} {
		n, err := httpapi.NormalizeWebhookURL(u, false)
		np, errp := httpapi.NormalizeWebhookURL(u, true)
		fmt.Printf("%-45q -> %q %v | allow: %q %v\n", u, n, err, np, errp)
	}
}
