package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// Cursors written before DAOs had generations (migration 0030 gave them
// generation 0) were written for whichever DAO the configuration file then
// named under their slug, and the store does not know which governor that
// was. Such a legacy cursor is the DAO's only once the indexer has checked
// it (SettleLegacyCursor); until then the store refuses to write the DAO
// over it (ApplyBatches). SeedDAOs deletes the legacy index of a slug that
// no DAO names any more, or whose DAO is now on another chain: a DAO
// defined later under that slug starts fresh.

// GovernorEvent returns the block and transaction of the latest governor
// event the store holds of dao (a proposal's creation or a vote), false
// when it holds none: the indexer asks the chain whether that event is the
// DAO's governor's before it takes a legacy cursor for the DAO's.
func (s *Store) GovernorEvent(ctx context.Context, dao string) (block uint64, tx string, ok bool, err error) {
	type event struct {
		Block uint64
		Tx    string
	}
	var votes, proposals []event
	db := s.db.WithContext(ctx)
	if err := db.Table("votes").Select("block_number AS block", "tx_hash AS tx").Where("dao = ?", dao).
		Order("block_number DESC").Limit(1).Find(&votes).Error; err != nil {
		return 0, "", false, fmt.Errorf("governor event of dao %s: %w", dao, err)
	}
	if err := db.Table("proposals").Select("created_block AS block", "created_tx AS tx").Where("dao = ?", dao).
		Order("created_block DESC").Limit(1).Find(&proposals).Error; err != nil {
		return 0, "", false, fmt.Errorf("governor event of dao %s: %w", dao, err)
	}
	for _, e := range append(votes, proposals...) {
		if !ok || e.Block > block {
			block, tx, ok = e.Block, e.Tx, true
		}
	}
	return block, tx, ok, nil
}

// SettleLegacyCursor decides whose a legacy cursor (generation 0) of dao
// is, for the DAO's generation gen. With keep, the index is the DAO's: the
// cursor takes its generation and stays where it is. Without, what was
// indexed under the slug is deleted (notifications stay) and, with
// restart, the DAO's cursor starts again at *restart, of generation gen.
// It changes nothing and returns false when the cursor is not legacy any
// more or the DAO's generation is not gen (redefined meanwhile).
func (s *Store) SettleLegacyCursor(ctx context.Context, dao string, gen int64, keep bool, restart *core.Cursor) (bool, error) {
	settled := false
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur []storedCursor
		q := tx.Table("chain_cursors").Select("dao", "block", "hash", "joined", "generation").Where("dao = ?", dao).Limit(1)
		q = s.dialect.lockForUpdate(q)
		if err := q.Find(&cur).Error; err != nil {
			return err
		}
		var def []daoRow
		if err := tx.Where("slug = ?", dao).Limit(1).Find(&def).Error; err != nil {
			return err
		}
		if len(cur) == 0 || cur[0].Generation != 0 || len(def) == 0 || def[0].Generation != gen {
			return nil
		}
		settled = true
		if keep {
			return tx.Exec(`UPDATE chain_cursors SET generation = ?, updated_at = ? WHERE dao = ?`, gen, s.now(), dao).Error
		}
		if err := purgeDAO(tx, dao); err != nil {
			return err
		}
		if restart == nil {
			return nil
		}
		return tx.Create(&cursorRow{DAO: dao, ChainID: def[0].ChainID, Block: restart.Block, Hash: restart.Hash, NotifyFrom: restart.NotifyFrom,
			Generation: gen, UpdatedAt: s.now()}).Error
	})
	if err != nil {
		return false, fmt.Errorf("settle legacy cursor of dao %s: %w", dao, err)
	}
	return settled, nil
}

// dropStrayLegacy deletes, in tx, the legacy indexes that no DAO can take:
// of a slug no DAO names, or whose DAO is on another chain than the index.
func dropStrayLegacy(tx *gorm.DB) error {
	var stray []string
	if err := tx.Table("chain_cursors c").Select("c.dao").Joins("LEFT JOIN daos d ON d.slug = c.dao").
		Where("c.generation = 0 AND (d.slug IS NULL OR d.chain_id <> c.chain_id)").Pluck("c.dao", &stray).Error; err != nil {
		return fmt.Errorf("find stray legacy cursors: %w", err)
	}
	for _, slug := range stray {
		if err := purgeDAO(tx, slug); err != nil {
			return err
		}
	}
	return nil
}
