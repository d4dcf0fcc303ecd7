package pluginmgr_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/pluginmgr"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/wasmhost"
)

// BenchmarkImportExamples is a fresh start of a gateway whose plugin
// directory holds every example plugin (plugins/build.sh: four in Go, one
// in AssemblyScript, one in WAT): from an empty store and a cold
// compilation cache until every plugin is checked, stored and loaded
// (asleep), as govgate serve's first Sync does with no chain. Run it with
// -benchtime Nx for N rounds; it reports the median (import_s), the
// fastest and slowest round, and the median time to wake them all
// (wake_all_s: compiling every one to machine code, side by side).
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
	if out, err := exec.Command("bash", filepath.Join("..", "..", "..", "plugins", "build.sh"), dir).CombinedOutput(); err != nil {
		b.Fatalf("plugins/build.sh: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
	ctx := context.Background()
	var rounds, wakes []float64
	for b.Loop() {
		b.StopTimer()
		st := storetest.SQLite.Open(b, store.Options{})
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
		// The import checks the plugins in the interpreter and loads them
		// asleep; compiling them to machine code is paid when a chain
		// names them. This is that cost for all of them at once, as a
		// start with every example in a chain pays it after the import.
		start = time.Now()
		var wg sync.WaitGroup
		for _, info := range host.Plugins() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := host.Wake(ctx, info.Name); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		wakes = append(wakes, time.Since(start).Seconds())
		host.Close(ctx)
		st.Close()
		b.StartTimer()
	}
	slices.Sort(rounds)
	b.ReportMetric(rounds[len(rounds)/2], "import_s")
	b.ReportMetric(rounds[0], "import_min_s")
	b.ReportMetric(rounds[len(rounds)-1], "import_max_s")
	b.ReportMetric(float64(len(files)), "plugins")
	slices.Sort(wakes)
	b.ReportMetric(wakes[len(wakes)/2], "wake_all_s")
}
