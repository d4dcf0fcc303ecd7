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
	if tx.Dialector.Name() != "postgres" {
		return rollback0009SQLite(tx)
	}
	const create = `CREATE TABLE token_events_new (
		id BIGSERIAL PRIMARY KEY,
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
		at TIMESTAMPTZ NOT NULL)`
	err := rebuildTokenEvents(tx, create, "",
		`CREATE INDEX ix_token_events_account ON token_events (dao, account, block_number)`,
		`CREATE INDEX ix_token_events_block ON token_events (chain_id, block_number)`,
		`CREATE UNIQUE INDEX ux_token_events_log ON token_events (dao, chain_id, tx_hash, log_index)`)
	if err != nil {
		return err
	}
	// BIGSERIAL named the id's sequence after token_events_new; 0008 named
	// it after token_events.
	return tx.Exec(`ALTER SEQUENCE token_events_new_id_seq RENAME TO token_events_id_seq`).Error
}

// rollback0009SQLite brings back the table 0008's migrator made, in the
// statements it ran: SQLite keeps a table's and an index's statement as
// written (a renamed table's with its new name spliced in), and the way
// down must leave the schema 0008 made.
func rollback0009SQLite(tx *gorm.DB) error {
	const cols = "dao, chain_id, block_number, tx_hash, log_index, kind, account, from_delegate, to_delegate, moved, previous_votes, new_votes, at"
	for _, q := range []string{
		`ALTER TABLE token_events RENAME TO token_events_keyed`,
		`DROP INDEX ix_token_events_account`,
		"CREATE TABLE `token_events` (`id` integer PRIMARY KEY AUTOINCREMENT,`dao` text NOT NULL,`chain_id` integer NOT NULL," +
			"`block_number` integer NOT NULL,`tx_hash` text NOT NULL,`log_index` integer NOT NULL,`kind` integer NOT NULL," +
			"`account` text NOT NULL,`from_delegate` text NOT NULL,`to_delegate` text NOT NULL,`moved` text NOT NULL," +
			"`previous_votes` text NOT NULL,`new_votes` text NOT NULL,`at` datetime NOT NULL)",
		`INSERT INTO token_events (` + cols + `) SELECT ` + cols + ` FROM token_events_keyed ORDER BY chain_id, block_number, dao, log_index`,
		`DROP TABLE token_events_keyed`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	if err := createIndexAsMigrator(tx, "INDEX", "ix_token_events_account", "token_events", "dao", "account", "block_number"); err != nil {
		return err
	}
	if err := createIndexAsMigrator(tx, "INDEX", "ix_token_events_block", "token_events", "chain_id", "block_number"); err != nil {
		return err
	}
	return createIndexAsMigrator(tx, "UNIQUE INDEX", "ux_token_events_log", "token_events", "dao", "chain_id", "tx_hash", "log_index")
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
