package migrations

import (
	"time"

	"gorm.io/gorm"
)

func migrate0015(tx *gorm.DB) error {
	type VoteOverride struct {
		ChainID         uint64 `gorm:"primaryKey;autoIncrement:false"`
		TxHash          string `gorm:"primaryKey;size:66"`
		LogIndex        uint   `gorm:"primaryKey;autoIncrement:false"`
		DAO             string `gorm:"column:dao;size:64;not null;index:ix_vote_overrides_proposal,priority:1"`
		ProposalID      string `gorm:"size:80;not null;index:ix_vote_overrides_proposal,priority:2"`
		BlockNumber     uint64 `gorm:"not null"`
		Delegate        string `gorm:"size:42;not null"`
		DelegateSupport int16  `gorm:"not null"`
		ReducedWeight   string `gorm:"size:80;not null"`
	}
	type ClockPoint struct {
		DAO       string `gorm:"column:dao;primaryKey;size:64"`
		Block     uint64 `gorm:"primaryKey;autoIncrement:false"`
		ChainID   uint64 `gorm:"not null;index"`
		Timepoint uint64 `gorm:"not null"`
	}
	type ProposalTimeline struct {
		DAO        string    `gorm:"column:dao;primaryKey;size:64"`
		ProposalID string    `gorm:"primaryKey;size:80"`
		Event      string    `gorm:"primaryKey;size:16"`
		Block      uint64    `gorm:"primaryKey;autoIncrement:false"`
		ChainID    uint64    `gorm:"not null;index"`
		At         time.Time `gorm:"not null"`
		TxHash     string    `gorm:"size:66;not null"`
	}
	if err := tx.Migrator().CreateTable(&VoteOverride{}, &ClockPoint{}); err != nil {
		return err
	}
	return tx.Table("proposal_timeline").Migrator().CreateTable(&ProposalTimeline{})
}

func rollback0015(tx *gorm.DB) error {
	// Plain DROPs: SQLite's migrator would want a second connection for
	// its PRAGMAs while the migration's transaction holds the only one.
	for _, t := range []string{"proposal_timeline", "clock_points", "vote_overrides"} {
		if err := tx.Exec("DROP TABLE " + t).Error; err != nil {
			return err
		}
	}
	return nil
}
