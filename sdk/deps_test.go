package sdk_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly fails when the SDK, which every plugin compiles
// in, imports anything outside the standard library and the SDK itself, on
// the host or for wasip1.
func TestStandardLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".", "./abi")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if !strings.HasPrefix(p, "github.com/govgate/govgate/sdk") || strings.HasPrefix(p, "github.com/govgate/govgate/sdk/plugintest") {
				t.Errorf("%v: the SDK imports %s", env, p)
			}
		}
	}
}
