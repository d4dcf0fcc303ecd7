package migrations

import (
	"gorm.io/gorm"
)

// migrate0005 keeps the queue's row writes off the deliveries table's
// secondary indexes. PostgreSQL rewrites every index entry of a row whose
// indexed (or index-predicate) column changes, and each queue transition
// changes the state. Measured in psql on 10,000 deliveries, the two indexes
// below made each claim and each completion cost 10–15 µs more.
//   - (notification_id, webhook_id) was a unique index that no query reads:
//     a notification fans out once, in the transaction that stores it,
//     guarded by its primary key.
//   - (webhook_id, id), for a webhook's delivery list, now covers finished
//     deliveries only, which are written once more and never again. A
//     webhook's unfinished deliveries are found through ix_deliveries_due,
//     which holds only the queue.
func migrate0005(tx *gorm.DB) error {
	for _, q := range []string{
		`CREATE INDEX ix_deliveries_webhook_done ON deliveries (webhook_id, id) WHERE state NOT IN ('pending', 'in_flight')`,
		`DROP INDEX ix_deliveries_webhook_id`,
		`DROP INDEX ux_deliveries_notification_webhook`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0005(tx *gorm.DB) error {
	// As 0001 made it.
	if err := createIndexAsMigrator(tx, "UNIQUE INDEX", "ux_deliveries_notification_webhook", "deliveries", "notification_id", "webhook_id"); err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE INDEX ix_deliveries_webhook_id ON deliveries (webhook_id, id)`,
		`DROP INDEX ix_deliveries_webhook_done`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
