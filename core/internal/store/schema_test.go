package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/store"
)

// TestMigrationsBuildTheSchemaOfRecord opens a new database on each backend
// and compares the schema the migrations built with the one on record in
// testdata/schema-<backend>.txt, made by the migrations as released (rewrite
// it with -update only for a new migration). A database that an earlier
// govgate migrated has that schema: an edit to a released migration, or a
// move that changed what one builds, shows here as a diff.
func TestMigrationsBuildTheSchemaOfRecord(t *testing.T) {
	storetest.Run(t, func(t *testing.T, b storetest.Backend) {
		got := storetest.Schema(t, b.Open(t, store.Options{}))
		golden := filepath.Join("testdata", "schema-"+b.Name+".txt")
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("the migrations built a schema other than %s (diff it against this):\n%s", golden, got)
		}
	})
}
