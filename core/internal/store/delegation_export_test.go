package store

import (
	"github.com/go-gormigrate/gormigrate/v2"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store/migrations"
)

// MigrateTo moves the store's schema to migration id, up or down: tests
// check that an upgrade keeps what an earlier schema held.
func MigrateTo(s *Store, id string) error {
	opts := migrations.Options()
	opts.UseTransaction = true
	m := gormigrate.New(s.db, opts, migrations.All())
	if err := m.RollbackTo(id); err != nil {
		return err
	}
	return m.MigrateTo(id)
}

// LatestMigration is the id of the last migration.
func LatestMigration() string {
	all := migrations.All()
	return all[len(all)-1].ID
}

// DelegatesCursor is the before that continues a listing of delegates by
// sortBy after d: benchmarks start a page deep in a listing without
// paging to it.
func DelegatesCursor(sortBy string, d core.Delegate) string {
	return delegatesCursor(sortBy, delegateRow{PowerKey: powerKey(d.VotingPower), Delegators: d.Delegators, VotesCast: d.VotesCast, Address: d.Address})
}
