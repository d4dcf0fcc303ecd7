package migrations

import (
	"time"

	"gorm.io/gorm"
)

func migrate0033(tx *gorm.DB) error {
	type DAOProbe struct {
		DAO           string    `gorm:"column:dao;primaryKey;size:64"`
		Generation    int64     `gorm:"not null"`
		Clock         string    `gorm:"size:16;not null"`
		HasClock      bool      `gorm:"not null"`
		CountingMode  string    `gorm:"size:256;not null"`
		QuorumAbstain bool      `gorm:"not null"`
		GraceSeconds  uint64    `gorm:"not null"`
		Token         string    `gorm:"size:42;not null"`
		ProbedAt      time.Time `gorm:"not null"`
	}
	return tx.Migrator().CreateTable(&DAOProbe{})
}

// rollback0033 drops the table with a plain statement, as rollback0032
// does.
func rollback0033(tx *gorm.DB) error {
	return tx.Exec(`DROP TABLE dao_probes`).Error
}
