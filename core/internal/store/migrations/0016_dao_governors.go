package migrations

import (
	"time"

	"gorm.io/gorm"
)

func migrate0016(tx *gorm.DB) error {
	type DAOGovernor struct {
		DAO          string    `gorm:"column:dao;primaryKey;size:64"`
		CountingMode string    `gorm:"size:256;not null"`
		ClockMode    string    `gorm:"size:16;not null"`
		UpdatedAt    time.Time `gorm:"not null"`
	}
	return tx.Table("dao_governors").Migrator().CreateTable(&DAOGovernor{})
}

func rollback0016(tx *gorm.DB) error {
	return tx.Exec("DROP TABLE dao_governors").Error
}
