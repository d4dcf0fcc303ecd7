package rpcproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestProxyDelaysAndCounts forwards a call and a batch: each waits the
// latency, and the counts are by call.
func TestProxyDelaysAndCounts(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`))
	}))
	defer up.Close()
	p, err := Start(up.URL, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[]},{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber","params":[]}]`,
	} {
		start := time.Now()
		resp, err := http.Post(p.URL(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if took := time.Since(start); took < 30*time.Millisecond {
			t.Errorf("answered in %v, before the latency", took)
		}
	}
	if c := p.Calls(); c["eth_blockNumber"] != 2 || c["eth_getLogs"] != 1 || p.Total() != 3 {
		t.Fatalf("calls %v", c)
	}
}

func FuzzMethods(f *testing.F) {
	f.Add([]byte(`{"method":"eth_call"}`))
	f.Add([]byte(`[{"method":"a"},{"method":"b"}]`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(Methods(body)) == 0 && !strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
			t.Fatalf("no method for a non-batch body %q", body)
		}
	})
}

func TestHeadReads(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int64
	}{
		{"latest", `{"method":"eth_getBlockByNumber","params":["latest",false]}`, 1},
		{"numbered", `{"method":"eth_getBlockByNumber","params":["0x10",false]}`, 0},
		{"blockNumber", `{"method":"eth_blockNumber","params":[]}`, 1},
		{"batch", `[{"method":"eth_getBlockByNumber","params":["latest",false]},{"method":"eth_getLogs","params":[{}]}]`, 1},
		{"junk", `{`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := headReads([]byte(tc.body)); got != tc.want {
				t.Fatalf("%d head reads, want %d", got, tc.want)
			}
		})
	}
}
