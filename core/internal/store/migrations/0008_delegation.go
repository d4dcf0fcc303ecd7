package migrations

import (
	"time"

	"gorm.io/gorm"
)

func migrate0008(tx *gorm.DB) error {
	type TokenEvent struct {
		ID            int64     `gorm:"primaryKey;autoIncrement"`
		DAO           string    `gorm:"column:dao;size:64;not null;uniqueIndex:ux_token_events_log,priority:1;index:ix_token_events_account,priority:1"`
		ChainID       uint64    `gorm:"not null;uniqueIndex:ux_token_events_log,priority:2;index:ix_token_events_block,priority:1"`
		BlockNumber   uint64    `gorm:"not null;index:ix_token_events_block,priority:2;index:ix_token_events_account,priority:3"`
		TxHash        string    `gorm:"size:66;not null;uniqueIndex:ux_token_events_log,priority:3"`
		LogIndex      uint      `gorm:"not null;uniqueIndex:ux_token_events_log,priority:4"`
		Kind          int8      `gorm:"not null"`
		Account       string    `gorm:"size:42;not null;index:ix_token_events_account,priority:2"`
		FromDelegate  string    `gorm:"size:42;not null"`
		ToDelegate    string    `gorm:"size:42;not null"`
		Moved         string    `gorm:"size:80;not null"`
		PreviousVotes string    `gorm:"size:80;not null"`
		NewVotes      string    `gorm:"size:80;not null"`
		At            time.Time `gorm:"not null"`
	}
	type Delegate struct {
		DAO             string `gorm:"column:dao;primaryKey;size:64;index:ix_delegates_power,priority:1;index:ix_delegates_delegators,priority:1;index:ix_delegates_votes,priority:1"`
		Address         string `gorm:"primaryKey;size:42;index:ix_delegates_power,priority:3;index:ix_delegates_delegators,priority:3;index:ix_delegates_votes,priority:3"`
		Power           string `gorm:"size:80;not null"`
		PowerKey        string `gorm:"size:78;not null;index:ix_delegates_power,priority:2"`
		PowerBlock      uint64 `gorm:"not null"`
		Delegators      int64  `gorm:"not null;index:ix_delegates_delegators,priority:2"`
		VotesCast       int64  `gorm:"not null;index:ix_delegates_votes,priority:2"`
		FirstPowerBlock uint64 `gorm:"not null"`
		LastVoteAt      *time.Time
		UpdatedBlock    uint64 `gorm:"not null"`
	}
	type Delegation struct {
		DAO        string    `gorm:"column:dao;primaryKey;size:64;index:ix_delegations_delegate,priority:1"`
		Delegator  string    `gorm:"primaryKey;size:42;index:ix_delegations_delegate,priority:3"`
		Delegate   string    `gorm:"size:42;not null;index:ix_delegations_delegate,priority:2"`
		SinceBlock uint64    `gorm:"not null"`
		SinceAt    time.Time `gorm:"not null"`
		TxHash     string    `gorm:"size:66;not null"`
	}
	type DelegatedPower struct {
		DAO   string    `gorm:"column:dao;primaryKey;size:64"`
		Block uint64    `gorm:"primaryKey;autoIncrement:false"`
		At    time.Time `gorm:"not null"`
		Total string    `gorm:"size:80;not null"`
	}
	if err := tx.Migrator().CreateTable(&TokenEvent{}, &Delegate{}, &Delegation{}, &DelegatedPower{}); err != nil {
		return err
	}
	// A delegate's vote history, and its votes cast after a rollback.
	return tx.Exec(`CREATE INDEX ix_votes_voter ON votes (dao, voter, id)`).Error
}

func rollback0008(tx *gorm.DB) error {
	if err := tx.Exec(`DROP INDEX ix_votes_voter`).Error; err != nil {
		return err
	}
	return dropTables(tx, "delegated_powers", "delegations", "delegates", "token_events")
}
