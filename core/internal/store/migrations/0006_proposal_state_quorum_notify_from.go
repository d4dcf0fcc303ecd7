package migrations

import (
	"gorm.io/gorm"
)

// migrate0006 gives proposals the governor's own state, their quorum and
// clock, and the time-driven notifications already emitted (milestones);
// cursors get the first block whose changes are pushed. Rows indexed
// before it said "created" for every open proposal: they become pending,
// and the indexer asks the governor for their state on its next poll.
// Their time-driven notifications are marked sent when voting had ended at
// the cursor (block-clock DAOs), so that an upgrade does not push a
// history of outcomes; a proposal still open gets them.
func migrate0006(tx *gorm.DB) error {
	for _, q := range []string{
		`ALTER TABLE proposals ADD COLUMN clock VARCHAR(16) NOT NULL DEFAULT 'blocknumber'`,
		`ALTER TABLE proposals ADD COLUMN quorum VARCHAR(80)`,
		`ALTER TABLE proposals ADD COLUMN quorum_reached BOOLEAN NOT NULL DEFAULT false`,
		`ALTER TABLE proposals ADD COLUMN milestones BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE chain_cursors ADD COLUMN notify_from BIGINT NOT NULL DEFAULT 0`,
		`UPDATE proposals SET milestones = CASE WHEN vote_end < COALESCE((SELECT c.block FROM chain_cursors c WHERE c.dao = proposals.dao), 0)
			THEN 65535 ELSE 0 END, state = 'pending' WHERE state = 'created'`,
		`CREATE INDEX ix_proposals_state_seq ON proposals (state, seq)`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0006(tx *gorm.DB) error {
	for _, q := range []string{
		`DROP INDEX ix_proposals_state_seq`,
		`UPDATE proposals SET state = 'created' WHERE state IN ('pending', 'active', 'defeated', 'succeeded', 'expired')`,
		`ALTER TABLE chain_cursors DROP COLUMN notify_from`,
		`ALTER TABLE proposals DROP COLUMN milestones`,
		`ALTER TABLE proposals DROP COLUMN quorum_reached`,
		`ALTER TABLE proposals DROP COLUMN quorum`,
		`ALTER TABLE proposals DROP COLUMN clock`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
