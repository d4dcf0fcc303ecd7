package migrations

import (
	"time"

	"gorm.io/gorm"
)

func migrate0032(tx *gorm.DB) error {
	type DAO struct {
		Slug            string    `gorm:"primaryKey;size:64"`
		Name            string    `gorm:"size:200;not null"`
		ChainID         uint64    `gorm:"not null"`
		Governor        string    `gorm:"size:42;not null"`
		Kind            string    `gorm:"size:32;not null"`
		StartBlock      uint64    `gorm:"not null"`
		Token           string    `gorm:"size:42;not null;default:''"`
		NotifyFromBlock *uint64   `gorm:""`
		NotifyHistory   bool      `gorm:"not null;default:false"`
		Source          string    `gorm:"size:16;not null"`
		Generation      int64     `gorm:"not null"`
		Position        int64     `gorm:"not null"`
		CreatedAt       time.Time `gorm:"not null"`
		UpdatedAt       time.Time `gorm:"not null"`
	}
	type DAORegistry struct {
		ID      int   `gorm:"primaryKey;autoIncrement:false"`
		Version int64 `gorm:"not null"`
	}
	if err := tx.Migrator().CreateTable(&DAO{}, &DAORegistry{}); err != nil {
		return err
	}
	return tx.Exec(`INSERT INTO dao_registries (id, version) VALUES (1, 0)`).Error
}

// rollback0032 drops the tables with plain statements: SQLite's migrator
// would wait for a second connection inside the migration's transaction.
func rollback0032(tx *gorm.DB) error {
	for _, t := range []string{"dao_registries", "daos"} {
		if err := tx.Exec(`DROP TABLE ` + t).Error; err != nil {
			return err
		}
	}
	return nil
}
