package store

import (
	"context"
	"math/big"
	"strings"
	"time"
)

// The voting token's delegations. token_events keeps every
// DelegateChanged and DelegateVotesChanged as the chain emitted it (the
// truth a reorganisation rolls back to); delegates, delegations and
// delegated_powers are what the events make, updated with each batch:
//
//	delegates        one row per account that held power, had delegators
//	                 or voted: its power, delegator count, votes cast
//	delegations      one row per delegator: whom it delegates to, since when
//	delegated_powers the DAO's total delegated power after each block that
//	                 changed it, for "turnout at the snapshot"
//
// Voting power is a uint256: it is kept as its decimal text and as
// power_key, the same number zero-padded to 78 digits, whose text order is
// its numeric order on every database, so that the leaderboard is an index
// scan.
//
// This file holds the rows and the number forms; a batch is applied in
// delegation_apply.go, rolled back in delegation_rollback.go and read in
// delegation_reads.go.

type tokenEventRow struct {
	DAO           string `gorm:"column:dao"`
	ChainID       uint64
	BlockNumber   uint64
	TxHash        string
	LogIndex      uint
	Kind          int8   // 1 DelegateChanged, 2 DelegateVotesChanged
	Account       string // the delegator (1) or the delegate (2)
	FromDelegate  string
	ToDelegate    string
	Moved         string
	PreviousVotes string
	NewVotes      string
	At            time.Time
}

func (tokenEventRow) TableName() string { return "token_events" }

type delegateRow struct {
	DAO             string `gorm:"column:dao;primaryKey"`
	Address         string `gorm:"primaryKey"`
	Power           string
	PowerKey        string
	PowerBlock      uint64 // block of the last DelegateVotesChanged; 0: none
	Delegators      int64
	VotesCast       int64
	FirstPowerBlock uint64
	LastVoteAt      *time.Time
	UpdatedBlock    uint64
}

func (delegateRow) TableName() string { return "delegates" }

type delegationRow struct {
	DAO        string `gorm:"column:dao;primaryKey"`
	Delegator  string `gorm:"primaryKey"`
	Delegate   string
	SinceBlock uint64
	SinceAt    time.Time
	TxHash     string
}

func (delegationRow) TableName() string { return "delegations" }

type powerRow struct {
	DAO   string `gorm:"column:dao;primaryKey"`
	Block uint64 `gorm:"primaryKey;autoIncrement:false"`
	At    time.Time
	Total string
}

func (powerRow) TableName() string { return "delegated_powers" }

const (
	kindChanged int8 = 1
	kindVotes   int8 = 2
)

// powerKey is v zero-padded to 78 digits: text order is numeric order.
func powerKey(v string) string {
	if len(v) >= 78 {
		return v
	}
	return strings.Repeat("0", 78-len(v)) + v
}

func dec(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return new(big.Int)
	}
	return v
}

const zeroAddress = "0x0000000000000000000000000000000000000000"

// rowsPerInsert is how many rows one multi-row INSERT carries. The
// pure-Go SQLite driver binds each parameter by looking it up among all
// of the statement's, a cost that grows with the square of their number:
// 500 rows of 13 columns spent 64% of a delegation backfill's CPU there,
// so SQLite gets short statements.
func (s *Store) rowsPerInsert() int {
	return s.dialect.rowsPerInsert()
}

// sqliteRowsPerInsert is rowsPerInsert on SQLite.
var sqliteRowsPerInsert = 50

// TableBytes returns the bytes PostgreSQL's tables take with their indexes
// and TOAST (pg_total_relation_size); SQLite has no such figure: 0.
func (s *Store) TableBytes(ctx context.Context, tables ...string) (int64, error) {
	return s.dialect.tableBytes(ctx, s.db, tables...)
}
