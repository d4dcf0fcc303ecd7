package sdk_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// inSDK matches the SDK module's packages and their test variants, as go
// list -deps -test names them.
var inSDK = regexp.MustCompile(`^github\.com/govgate/govgate/sdk(/|\.test$|_test |$| )`)

// TestStandardLibraryOnly fails when a package of the SDK module, which
// every plugin's go.mod requires, imports anything outside the standard
// library and the SDK itself, on the host or for wasip1.
func TestStandardLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, p := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if p != "" && !inSDK.MatchString(p) {
				t.Errorf("%v: the SDK imports %s", env, p)
			}
		}
	}
}
