package migrations

import (
	"gorm.io/gorm"
)

// migrate0004 lets listing a webhook's newest deliveries walk
// (webhook_id, id) instead of sorting all of that webhook's rows.
func migrate0004(tx *gorm.DB) error {
	if err := tx.Exec(`CREATE INDEX ix_deliveries_webhook_id ON deliveries (webhook_id, id)`).Error; err != nil {
		return err
	}
	return tx.Exec(`DROP INDEX ix_deliveries_webhook`).Error
}

func rollback0004(tx *gorm.DB) error {
	// As 0001 made it.
	if err := createIndexAsMigrator(tx, "INDEX", "ix_deliveries_webhook", "deliveries", "webhook_id"); err != nil {
		return err
	}
	return tx.Exec(`DROP INDEX ix_deliveries_webhook_id`).Error
}
