package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// govulncheck's JSON stream, trimmed: a called vulnerability, one only
// imported, and one only required.
const stream = `{"config":{"protocol_version":"v1.0.0"}}
{"osv":{"id":"GO-2026-0001"}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Serve","receiver":"*Server"},{"module":"github.com/govgate/govgate","package":"github.com/govgate/govgate/core/cmd/govgate","function":"serve"}]}}
{"finding":{"osv":"GO-2026-0002","fixed_version":"v1.5.3","trace":[{"module":"github.com/gorilla/websocket","version":"v1.4.2","package":"github.com/gorilla/websocket"}]}}
{"finding":{"osv":"GO-2026-0003","fixed_version":"v0.2.0","trace":[{"module":"example.com/m","version":"v0.1.0"}]}}
`

func TestCalledKeepsOnlyWhatTheCodeCalls(t *testing.T) {
	got, err := called(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "GO-2026-0001" || got[0].Module != "stdlib" || got[0].Fixed != "v1.26.9" ||
		got[0].Trace != "github.com/govgate/govgate/core/cmd/govgate.serve → net/http.*Server.Serve" {
		t.Fatalf("called = %+v", got)
	}
}

func TestReadAcceptedWantsAReason(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte("// comment\n\nGO-2026-0001 fixed in a toolchain we do not have yet\n"), 0o600)
	got, err := readAccepted(good)
	if err != nil || got["GO-2026-0001"] != "fixed in a toolchain we do not have yet" {
		t.Fatalf("readAccepted = %v, %v", got, err)
	}
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("GO-2026-0001\n"), 0o600)
	if _, err := readAccepted(bad); err == nil || !strings.Contains(err.Error(), "has no reason") {
		t.Fatalf("an ID without a reason: %v", err)
	}
}
