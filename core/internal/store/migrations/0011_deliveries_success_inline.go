package migrations

import (
	"time"

	"gorm.io/gorm"
)

// migrate0011 gives a delivery the columns of its successful attempt, which
// it keeps in its own row instead of the attempt log (see
// completeSucceeded): the row is rewritten on success anyway, and an
// attempt-log row with its two index entries was a third of what
// PostgreSQL wrote per delivery. Constant defaults keep the columns a
// catalogue change on PostgreSQL.
func migrate0011(tx *gorm.DB) error {
	type Delivery struct {
		SuccessStartedAt *time.Time
	}
	if err := tx.Migrator().AddColumn(&Delivery{}, "SuccessStartedAt"); err != nil {
		return err
	}
	for _, q := range []string{
		`ALTER TABLE deliveries ADD COLUMN success_duration_ms DOUBLE PRECISION NOT NULL DEFAULT 0`,
		`ALTER TABLE deliveries ADD COLUMN success_response TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE deliveries ADD COLUMN success_plugin_trace TEXT NOT NULL DEFAULT ''`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0011(tx *gorm.DB) error {
	for _, c := range []string{"success_started_at", "success_duration_ms", "success_response", "success_plugin_trace"} {
		if err := tx.Exec(`ALTER TABLE deliveries DROP COLUMN ` + c).Error; err != nil {
			return err
		}
	}
	return nil
}
