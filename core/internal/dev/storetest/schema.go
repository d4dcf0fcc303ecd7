package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/store"
)

// Schema describes the schema of s's database as text, one line a table,
// column, index or constraint, in a fixed order, and the migration ids it
// records: two databases built by the same migrations describe alike, and
// a diff of two descriptions shows what a change to a migration changed.
func Schema(t testing.TB, s *store.Store) string {
	t.Helper()
	queries := []string{
		// sqlite_master keeps each table's and index's statement, with the
		// columns that later migrations added; its own tables and the
		// indexes it makes for keys are left out.
		`SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`,
	}
	if s.Dialect() == store.Postgres {
		queries = []string{
			`SELECT 'column', table_name, column_name, data_type, COALESCE(character_maximum_length::text, ''), is_nullable, COALESCE(column_default, '')
				FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
			`SELECT 'index', tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY tablename, indexname`,
			`SELECT 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
				WHERE connamespace = 'public'::regnamespace ORDER BY 2, 3`,
		}
	}
	queries = append(queries, `SELECT 'migration', id FROM schema_migrations ORDER BY id`)
	var b strings.Builder
	for _, q := range queries {
		rows, err := s.DB().Raw(q).Rows()
		if err != nil {
			t.Fatalf("describe schema: %v", err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatalf("describe schema: %v", err)
		}
		for rows.Next() {
			vals := make([]string, len(cols))
			dest := make([]any, len(cols))
			for i := range vals {
				dest[i] = &vals[i]
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatalf("describe schema: %v", err)
			}
			// One line a row: statements spread over lines keep their
			// words, not their indentation.
			for i, v := range vals {
				vals[i] = strings.Join(strings.Fields(v), " ")
			}
			fmt.Fprintln(&b, strings.Join(vals, " | "))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("describe schema: %v", err)
		}
		rows.Close()
	}
	return b.String()
}
