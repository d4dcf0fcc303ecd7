package container_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// prodTags are the build tags of the production binary, in the image.
const prodTags = "nodevchain nomsgpack"

// devOnly are packages that only the dev chain needs: go-ethereum's
// simulated backend is a whole node with its databases.
var devOnly = []string{
	"github.com/ethereum/go-ethereum/ethclient/simulated",
	"github.com/ethereum/go-ethereum/node",
	"github.com/ethereum/go-ethereum/eth",
	"github.com/cockroachdb/pebble",
	"github.com/syndtr/goleveldb/leveldb",
	"github.com/govgate/govgate/core/internal/dev/devchain",
}

// TestProductionBuildLeavesOutTheDevChain checks that `go tool task build`
// (and so the image) builds with prodTags, and that those tags drop the
// dev chain's packages, which the default build, for `go run … dev`, keeps.
func TestProductionBuildLeavesOutTheDevChain(t *testing.T) {
	taskfile, err := os.ReadFile(filepath.Join(repoRoot, "Taskfile.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(taskfile), "-tags '"+prodTags+"'") {
		t.Errorf("Taskfile.yml: the build task does not build with -tags '%s'", prodTags)
	}
	deps := func(tags string) map[string]bool {
		out, err := exec.Command("go", "list", "-deps", "-tags", tags, filepath.Join(repoRoot, "core/cmd/govgate")).Output()
		if err != nil {
			t.Fatalf("go list -tags %q: %v", tags, err)
		}
		set := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			set[p] = true
		}
		return set
	}
	dev, prod := deps(""), deps(prodTags)
	count := func(set map[string]bool) (n int) {
		for p := range set {
			if strings.HasPrefix(p, "github.com/ethereum/go-ethereum") {
				n++
			}
		}
		return n
	}
	t.Logf("packages: %d with the dev chain (%d of go-ethereum), %d in production (%d of go-ethereum)", len(dev), count(dev), len(prod), count(prod))
	for _, p := range devOnly {
		if !dev[p] {
			t.Errorf("the default build does not link %s: update devOnly", p)
		}
		if prod[p] {
			t.Errorf("the production build (-tags '%s') links %s", prodTags, p)
		}
	}
}
