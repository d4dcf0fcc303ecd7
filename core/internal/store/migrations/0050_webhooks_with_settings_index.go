package migrations

import (
	"gorm.io/gorm"
)

// migrate0050 indexes the webhooks whose owner chose a subscription,
// ordering or a throttle, an index that stays empty until one does: the
// fan-out asks it, in the statements that store a notification, whether
// any active webhook needs that machinery, and takes the plain statements
// when none does (settingsInUse). Its predicate is
// settingsChosen word for word, so that both databases match the question
// to it (TestSettingsInUseReadsItsIndex).
func migrate0050(tx *gorm.DB) error {
	return tx.Exec(`CREATE INDEX ix_webhooks_with_settings ON webhooks (state) WHERE types <> '' OR daos <> '' OR ordered = 1 OR max_per_second > 0`).Error
}

func rollback0050(tx *gorm.DB) error {
	return tx.Exec(`DROP INDEX ix_webhooks_with_settings`).Error
}
