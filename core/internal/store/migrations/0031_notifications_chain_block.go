package migrations

import (
	"gorm.io/gorm"
)

// migrate0031 gives indexer notifications their chain and block, so that a
// reorganisation finds the ones it orphaned, and marks those it did.
// Nullable columns without defaults are a catalogue change on PostgreSQL.
func migrate0031(tx *gorm.DB) error {
	for _, q := range []string{
		`ALTER TABLE notifications ADD COLUMN chain_id BIGINT`,
		`ALTER TABLE notifications ADD COLUMN block_number BIGINT`,
		`ALTER TABLE notifications ADD COLUMN orphaned_at TIMESTAMP`,
		`CREATE INDEX ix_notifications_chain_block ON notifications (chain_id, block_number) WHERE block_number IS NOT NULL`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0031(tx *gorm.DB) error {
	for _, q := range []string{
		`DROP INDEX ix_notifications_chain_block`,
		`ALTER TABLE notifications DROP COLUMN orphaned_at`,
		`ALTER TABLE notifications DROP COLUMN block_number`,
		`ALTER TABLE notifications DROP COLUMN chain_id`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
