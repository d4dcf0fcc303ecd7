package pluginmgr_test

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/govgate/govgate/core/pluginmgr"
	"github.com/govgate/govgate/core/secrets"
	"github.com/govgate/govgate/core/store"
	"github.com/govgate/govgate/core/wasmhost"
)

// BenchmarkImportExamples is a fresh start of a gateway whose plugin
// directory holds every example plugin (plugins/build.sh: four in Go, one
// in AssemblyScript, one in WAT): from an empty store and a cold
// compilation cache until every plugin is checked, stored and loaded, as
// govgate serve's first Sync does. Run it with -benchtime Nx for N rounds;
// it reports the median (import_s) and the fastest and slowest round.
func BenchmarkImportExamples(b *testing.B) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				b.Fatalf("%s is not installed; CI must install it (.ci/run)", tool)
			}
			b.Skipf("%s is not installed: the AssemblyScript example needs Node.js 20 and npm", tool)
		}
	}
	dir := b.TempDir()
	if out, err := exec.Command("bash", filepath.Join("..", "..", "plugins", "build.sh"), dir).CombinedOutput(); err != nil {
		b.Fatalf("plugins/build.sh: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
	ctx := context.Background()
	var rounds []float64
	for b.Loop() {
		b.StopTimer()
		key := make([]byte, 32)
		rand.Read(key)
		box, _ := secrets.New(key)
		st, err := store.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "govgate.db"), box, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		// A host of its own: wazero's in-memory compilation cache starts
		// empty, and no cache directory is given.
		host, err := wasmhost.New(ctx, wasmhost.Config{})
		if err != nil {
			b.Fatal(err)
		}
		m := pluginmgr.New(host, st, dir, nil)
		b.StartTimer()
		start := time.Now()
		if err := m.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		rounds = append(rounds, time.Since(start).Seconds())
		b.StopTimer()
		if got := len(host.Plugins()); got != len(files) {
			b.Fatalf("%d of %d example plugins loaded", got, len(files))
		}
		host.Close(ctx)
		st.Close()
		b.StartTimer()
	}
	slices.Sort(rounds)
	b.ReportMetric(rounds[len(rounds)/2], "import_s")
	b.ReportMetric(rounds[0], "import_min_s")
	b.ReportMetric(rounds[len(rounds)-1], "import_max_s")
	b.ReportMetric(float64(len(files)), "plugins")
}
