package migrations

import (
	"time"

	"gorm.io/gorm"
)

// migrate0030 adds the shared cursors, the joined mark and the DAO
// generation that fences writes for a removed or redefined DAO (0: any).
func migrate0030(tx *gorm.DB) error {
	type ChainSharedCursor struct {
		ChainID   uint64    `gorm:"primaryKey;autoIncrement:false"`
		Block     uint64    `gorm:"not null"`
		Hash      string    `gorm:"size:66;not null"`
		UpdatedAt time.Time `gorm:"not null"`
	}
	if err := tx.Migrator().CreateTable(&ChainSharedCursor{}); err != nil {
		return err
	}
	for _, q := range []string{
		`ALTER TABLE chain_cursors ADD COLUMN joined BOOLEAN NOT NULL DEFAULT false`,
		`ALTER TABLE chain_cursors ADD COLUMN generation BIGINT NOT NULL DEFAULT 0`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0030(tx *gorm.DB) error {
	for _, q := range []string{
		// A joined DAO's cursor is the shared one: write it back first.
		`UPDATE chain_cursors SET block = (SELECT s.block FROM chain_shared_cursors s WHERE s.chain_id = chain_cursors.chain_id),
			hash = (SELECT s.hash FROM chain_shared_cursors s WHERE s.chain_id = chain_cursors.chain_id)
			WHERE joined AND EXISTS (SELECT 1 FROM chain_shared_cursors s WHERE s.chain_id = chain_cursors.chain_id)`,
		`ALTER TABLE chain_cursors DROP COLUMN generation`,
		`ALTER TABLE chain_cursors DROP COLUMN joined`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return tx.Exec(`DROP TABLE chain_shared_cursors`).Error
}
