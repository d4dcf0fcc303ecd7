package store

import "github.com/go-gormigrate/gormigrate/v2"

// MigrateTo moves the store's schema to migration id, up or down: tests
// check that an upgrade keeps what an earlier schema held.
func MigrateTo(s *Store, id string) error {
	m := gormigrate.New(s.db, &gormigrate.Options{TableName: "schema_migrations", IDColumnName: "id", IDColumnSize: 255,
		UseTransaction: true, ValidateUnknownMigrations: true}, migrations)
	if err := m.RollbackTo(id); err != nil {
		return err
	}
	return m.MigrateTo(id)
}

// LatestMigration is the id of the last migration.
func LatestMigration() string { return migrations[len(migrations)-1].ID }
