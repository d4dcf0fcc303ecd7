package migrations_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-gormigrate/gormigrate/v2"

	"github.com/govgate/govgate/core/internal/dev/storetest"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/store/migrations"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// TestOneFilePerMigrationInIDOrder checks the folder's layout: the
// migrations run in ID order, and each one is the file named by its ID.
func TestOneFilePerMigrationInIDOrder(t *testing.T) {
	files, err := filepath.Glob("[0-9]*.go")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range migrations.All() {
		if len(ids) > 0 && m.ID <= ids[len(ids)-1] {
			t.Errorf("migration %s runs after %s", m.ID, ids[len(ids)-1])
		}
		ids = append(ids, m.ID)
		if m.Migrate == nil || m.Rollback == nil {
			t.Errorf("migration %s has no up or no down", m.ID)
		}
	}
	var named []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			named = append(named, strings.TrimSuffix(f, ".go"))
		}
	}
	if !slices.Equal(named, ids) {
		t.Errorf("migration files %v, want one per migration %v", named, ids)
	}
}

// TestEveryMigrationGoesUpAndDown takes a database down from the latest
// schema to none, one migration at a time, and up again. Each step up and
// then down must leave the schema it started from, and up again the one it
// made; the way up ends at the schema on record (the store's
// testdata/schema-<backend>.txt, which TestMigrationsBuildTheSchemaOfRecord
// compares a new database with).
func TestEveryMigrationGoesUpAndDown(t *testing.T) {
	storetest.Run(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t, store.Options{})
		opts := migrations.Options()
		opts.UseTransaction = true
		all := migrations.All()
		m := gormigrate.New(s.DB(), opts, all)
		for i := len(all) - 1; i >= 0; i-- {
			if err := m.RollbackLast(); err != nil {
				t.Fatalf("down %s: %v", all[i].ID, err)
			}
		}
		none := storetest.Schema(t, s)
		if strings.Count(none, "\n") > 1 && b.Name == "sqlite" || strings.Contains(none, "migration |") {
			t.Fatalf("all the way down, the schema still holds:\n%s", none)
		}
		before := none
		for _, mig := range all {
			if err := m.MigrateTo(mig.ID); err != nil {
				t.Fatalf("up %s: %v", mig.ID, err)
			}
			after := storetest.Schema(t, s)
			if err := m.RollbackLast(); err != nil {
				t.Fatalf("down %s: %v", mig.ID, err)
			}
			if got := storetest.Schema(t, s); got != before {
				t.Fatalf("down %s left another schema than the one it went up from:\n%s", mig.ID, diff(got, before))
			}
			if err := m.MigrateTo(mig.ID); err != nil {
				t.Fatalf("up %s again: %v", mig.ID, err)
			}
			if got := storetest.Schema(t, s); got != after {
				t.Fatalf("up %s after its down made another schema:\n%s", mig.ID, diff(got, after))
			}
			before = after
		}
		want, err := os.ReadFile(filepath.Join("..", "testdata", "schema-"+b.Name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if before != string(want) {
			t.Errorf("up from nothing, the schema is not the one on record:\n%s", diff(before, string(want)))
		}
	})
}

// diff lists the lines of got that want lacks (+) and those of want that
// got lacks (-): a schema description is a set of lines.
func diff(got, want string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	g, w := in(got), in(want)
	var b strings.Builder
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}
