package migrations

import (
	"fmt"

	"gorm.io/gorm"
)

// migrate0009 keys the token event log by where each log is on its chain:
// (chain_id, block_number, dao, log_index), a DAO's copy of a log. Its
// surrogate id, the unique index over (dao, chain_id, tx_hash, log_index)
// and the (chain_id, block_number) index go: the new key is unique for
// the same logs (a block's log indexes are), and serves the rollback's
// deletes by block. A backfill wrote four index entries an event, one of
// them over a 66-character hash; it writes two. On SQLite the table is
// WITHOUT ROWID: the key is the table's own order, one b-tree fewer.
func migrate0009(tx *gorm.DB) error {
	const create = `CREATE TABLE token_events_new (
		chain_id BIGINT NOT NULL,
		block_number BIGINT NOT NULL,
		dao VARCHAR(64) NOT NULL,
		log_index BIGINT NOT NULL,
		kind SMALLINT NOT NULL,
		tx_hash VARCHAR(66) NOT NULL,
		account VARCHAR(42) NOT NULL,
		from_delegate VARCHAR(42) NOT NULL,
		to_delegate VARCHAR(42) NOT NULL,
		moved VARCHAR(80) NOT NULL,
		previous_votes VARCHAR(80) NOT NULL,
		new_votes VARCHAR(80) NOT NULL,
		at %s NOT NULL,
		PRIMARY KEY (chain_id, block_number, dao, log_index))`
	return rebuildTokenEvents(tx,
		fmt.Sprintf(create, "TIMESTAMPTZ"),
		fmt.Sprintf(create, "DATETIME")+" WITHOUT ROWID",
		`CREATE INDEX ix_token_events_account ON token_events (dao, account, block_number)`)
}

func rollback0009(tx *gorm.DB) error {
	const create = `CREATE TABLE token_events_new (
		id %s,
		dao VARCHAR(64) NOT NULL,
		chain_id BIGINT NOT NULL,
		block_number BIGINT NOT NULL,
		tx_hash VARCHAR(66) NOT NULL,
		log_index BIGINT NOT NULL,
		kind SMALLINT NOT NULL,
		account VARCHAR(42) NOT NULL,
		from_delegate VARCHAR(42) NOT NULL,
		to_delegate VARCHAR(42) NOT NULL,
		moved VARCHAR(80) NOT NULL,
		previous_votes VARCHAR(80) NOT NULL,
		new_votes VARCHAR(80) NOT NULL,
		at %s NOT NULL)`
	return rebuildTokenEvents(tx,
		fmt.Sprintf(create, "BIGSERIAL PRIMARY KEY", "TIMESTAMPTZ"),
		fmt.Sprintf(create, "INTEGER PRIMARY KEY AUTOINCREMENT", "DATETIME"),
		`CREATE INDEX ix_token_events_account ON token_events (dao, account, block_number)`,
		`CREATE INDEX ix_token_events_block ON token_events (chain_id, block_number)`,
		`CREATE UNIQUE INDEX ux_token_events_log ON token_events (dao, chain_id, tx_hash, log_index)`)
}

// rebuildTokenEvents moves every event of token_events into a table made
// by createPostgres or createSQLite, named token_events_new, which then
// takes the name, with indexes.
func rebuildTokenEvents(tx *gorm.DB, createPostgres, createSQLite string, indexes ...string) error {
	const cols = "dao, chain_id, block_number, tx_hash, log_index, kind, account, from_delegate, to_delegate, moved, previous_votes, new_votes, at"
	stmts := []string{createSQLite,
		// WHERE true: SQLite would read ON as a join's.
		`INSERT INTO token_events_new (` + cols + `) SELECT ` + cols + ` FROM token_events WHERE true ORDER BY chain_id, block_number, dao, log_index ON CONFLICT DO NOTHING`,
		`DROP TABLE token_events`,
		`ALTER TABLE token_events_new RENAME TO token_events`}
	if tx.Dialector.Name() == "postgres" {
		stmts[0] = createPostgres
		stmts = append(stmts, `ALTER INDEX token_events_new_pkey RENAME TO token_events_pkey`)
	}
	for _, q := range append(stmts, indexes...) {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
