// Package migrations is the store's schema history: every migration since
// the first, one file each named by its ID, in ID order, each with its down
// migration. gormigrate records the IDs applied in schema_migrations, the
// table every released govgate used, so a database an earlier govgate made
// is migrated from where it stands.
//
// A released migration is never edited, so that a user who upgrades keeps
// their data: each one freezes the table shapes it creates in types of its
// own instead of reusing the store's live row types, which change.
package migrations

import (
	"fmt"
	"slices"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// all are the migrations in ID order; a new one goes at the end, in a file
// named by its ID.
var all = []*gormigrate.Migration{
	{ID: "0001_webhooks_notifications_deliveries", Migrate: migrate0001, Rollback: rollback0001},
	{ID: "0002_plugins_and_chains", Migrate: migrate0002, Rollback: rollback0002},
	{ID: "0003_chain_index", Migrate: migrate0003, Rollback: rollback0003},
	{ID: "0004_deliveries_indexes", Migrate: migrate0004, Rollback: rollback0004},
	{ID: "0005_deliveries_queue_indexes", Migrate: migrate0005, Rollback: rollback0005},
	{ID: "0006_proposal_state_quorum_notify_from", Migrate: migrate0006, Rollback: rollback0006},
	{ID: "0007_notifications_trace_parent", Migrate: migrate0007, Rollback: rollback0007},
	{ID: "0008_delegation", Migrate: migrate0008, Rollback: rollback0008},
	{ID: "0009_token_events_keyed_by_log", Migrate: migrate0009, Rollback: rollback0009},
	{ID: "0010_delegates_listing_indexes", Migrate: migrate0010, Rollback: rollback0010},
	{ID: "0011_deliveries_success_inline", Migrate: migrate0011, Rollback: rollback0011},
	{ID: "0015_vote_overrides_clock_points_timeline", Migrate: migrate0015, Rollback: rollback0015},
	{ID: "0016_dao_governors", Migrate: migrate0016, Rollback: rollback0016},
	{ID: "0020_webhook_consumer_settings", Migrate: migrate0020, Rollback: rollback0020},
	{ID: "0030_chain_shared_cursors", Migrate: migrate0030, Rollback: rollback0030},
	{ID: "0031_notifications_chain_block", Migrate: migrate0031, Rollback: rollback0031},
	{ID: "0032_daos", Migrate: migrate0032, Rollback: rollback0032},
	{ID: "0033_dao_probes", Migrate: migrate0033, Rollback: rollback0033},
	{ID: "0050_webhooks_with_settings_index", Migrate: migrate0050, Rollback: rollback0050},
}

// All returns every migration in ID order.
func All() []*gormigrate.Migration { return slices.Clone(all) }

// Options are gormigrate's options for the store's schema: the table and
// column that every released govgate recorded the applied IDs in, and a
// refusal to run on a database that a newer govgate migrated (an ID this
// one does not know). A run is not in a transaction of its own.
func Options() *gormigrate.Options {
	return &gormigrate.Options{TableName: "schema_migrations", IDColumnName: "id", IDColumnSize: 255, ValidateUnknownMigrations: true}
}

// New returns the migrations on db, run in the caller's transaction.
func New(db *gorm.DB) *gormigrate.Gormigrate { return gormigrate.New(db, Options(), All()) }

// dropTables drops tables in order with plain DROP TABLE statements. The
// SQLite migrator's DropTable would ask the pool for a second connection
// (for its foreign-key PRAGMAs) while the migration's transaction holds the
// only one, and wait for ever.
func dropTables(tx *gorm.DB, tables ...string) error {
	for _, t := range tables {
		if err := tx.Exec("DROP TABLE " + t).Error; err != nil {
			return fmt.Errorf("drop table %s: %w", t, err)
		}
	}
	return nil
}

// createIndexAsMigrator creates an index with the statement GORM's migrator
// ran for an index tag, identifiers quoted by the dialect. SQLite keeps an
// index's statement as written, so a down migration that brings back an
// index 0001's migrator made must write it the same way to leave the same
// schema.
func createIndexAsMigrator(tx *gorm.DB, kind, name, table string, columns ...string) error {
	cols := make([]any, len(columns))
	for i, c := range columns {
		cols[i] = clause.Column{Name: c}
	}
	if err := tx.Exec("CREATE "+kind+" ? ON ??", clause.Column{Name: name}, clause.Table{Name: table}, cols).Error; err != nil {
		return fmt.Errorf("create index %s: %w", name, err)
	}
	return nil
}
