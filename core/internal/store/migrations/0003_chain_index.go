package migrations

import (
	"time"

	"gorm.io/gorm"
)

func migrate0003(tx *gorm.DB) error {
	type ChainCursor struct {
		DAO       string    `gorm:"column:dao;primaryKey;size:64"`
		ChainID   uint64    `gorm:"not null;index"`
		Block     uint64    `gorm:"not null"`
		Hash      string    `gorm:"size:66;not null"`
		UpdatedAt time.Time `gorm:"not null"`
	}
	type ChainBlock struct {
		ChainID uint64 `gorm:"primaryKey;autoIncrement:false"`
		Number  uint64 `gorm:"primaryKey;autoIncrement:false"`
		Hash    string `gorm:"size:66;not null"`
	}
	type Proposal struct {
		Seq          int64     `gorm:"primaryKey;autoIncrement"`
		DAO          string    `gorm:"column:dao;size:64;not null;uniqueIndex:ux_proposals_dao_id,priority:1;index:ix_proposals_dao_state,priority:1"`
		ProposalID   string    `gorm:"size:80;not null;uniqueIndex:ux_proposals_dao_id,priority:2"`
		ChainID      uint64    `gorm:"not null"`
		Proposer     string    `gorm:"size:42;not null"`
		Targets      string    `gorm:"type:text;not null"`
		Values       string    `gorm:"type:text;not null"`
		Signatures   string    `gorm:"type:text;not null"`
		Calldatas    string    `gorm:"type:text;not null"`
		Description  string    `gorm:"type:text;not null"`
		VoteStart    uint64    `gorm:"not null"`
		VoteEnd      uint64    `gorm:"not null"`
		State        string    `gorm:"size:16;not null;index:ix_proposals_dao_state,priority:2"`
		ForVotes     string    `gorm:"size:80;not null"`
		AgainstVotes string    `gorm:"size:80;not null"`
		AbstainVotes string    `gorm:"size:80;not null"`
		ETA          uint64    `gorm:"column:eta;not null"`
		CreatedBlock uint64    `gorm:"not null"`
		CreatedTx    string    `gorm:"size:66;not null"`
		CreatedAt    time.Time `gorm:"not null"`
		UpdatedBlock uint64    `gorm:"not null"`
		UpdatedAt    time.Time `gorm:"not null"`
	}
	type ProposalRevision struct {
		DAO        string `gorm:"column:dao;primaryKey;size:64"`
		ProposalID string `gorm:"primaryKey;size:80"`
		Block      uint64 `gorm:"primaryKey;autoIncrement:false"`
		ChainID    uint64 `gorm:"not null;index"`
		Data       string `gorm:"type:text;not null"`
	}
	type Vote struct {
		ID          int64     `gorm:"primaryKey;autoIncrement"`
		ChainID     uint64    `gorm:"not null;uniqueIndex:ux_votes_event,priority:1"`
		TxHash      string    `gorm:"size:66;not null;uniqueIndex:ux_votes_event,priority:2"`
		LogIndex    uint      `gorm:"not null;uniqueIndex:ux_votes_event,priority:3"`
		DAO         string    `gorm:"column:dao;size:64;not null;index:ix_votes_proposal,priority:1"`
		ProposalID  string    `gorm:"size:80;not null;index:ix_votes_proposal,priority:2"`
		Voter       string    `gorm:"size:42;not null"`
		Support     uint8     `gorm:"not null"`
		Weight      string    `gorm:"size:80;not null"`
		Reason      string    `gorm:"type:text;not null"`
		Params      string    `gorm:"type:text;not null"`
		BlockNumber uint64    `gorm:"not null"`
		BlockHash   string    `gorm:"size:66;not null"`
		CastAt      time.Time `gorm:"not null"`
	}
	return tx.Migrator().CreateTable(&ChainCursor{}, &ChainBlock{}, &Proposal{}, &ProposalRevision{}, &Vote{})
}

func rollback0003(tx *gorm.DB) error {
	return dropTables(tx, "votes", "proposal_revisions", "proposals", "chain_blocks", "chain_cursors")
}
