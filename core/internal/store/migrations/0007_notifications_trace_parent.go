package migrations

import (
	"gorm.io/gorm"
)

// migrate0007 stores each notification's W3C traceparent with it, so that a
// delivery attempt after a retry or a restart joins the notification's
// trace. A constant default makes the column a catalogue change on
// PostgreSQL (11+), not a table rewrite.
func migrate0007(tx *gorm.DB) error {
	return tx.Exec(`ALTER TABLE notifications ADD COLUMN trace_parent TEXT NOT NULL DEFAULT ''`).Error
}

func rollback0007(tx *gorm.DB) error {
	return tx.Exec(`ALTER TABLE notifications DROP COLUMN trace_parent`).Error
}
