package store

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Rolling delegation back on a reorganisation: the rows that events above
// the new head made are recomputed from the event log below it.

// tokenAccounts are the accounts whose delegation rows a rollback above a
// block must recompute.
type tokenAccounts struct {
	delegators map[[2]string]bool // dao, account
	delegates  map[[2]string]bool
}

// affectedAbove collects, before a rollback deletes anything, the accounts
// whose rows events above block n made.
func affectedAbove(tx *gorm.DB, chainID, n uint64) (tokenAccounts, error) {
	a := tokenAccounts{delegators: map[[2]string]bool{}, delegates: map[[2]string]bool{}}
	var evs []tokenEventRow
	if err := tx.Select("dao", "kind", "account", "from_delegate", "to_delegate").
		Where("chain_id = ? AND block_number > ?", chainID, n).Find(&evs).Error; err != nil {
		return a, err
	}
	for _, e := range evs {
		if e.Kind == kindChanged {
			a.delegators[[2]string{e.DAO, e.Account}] = true
			a.delegates[[2]string{e.DAO, e.FromDelegate}] = true
			a.delegates[[2]string{e.DAO, e.ToDelegate}] = true
		} else {
			a.delegates[[2]string{e.DAO, e.Account}] = true
		}
	}
	var voters []voteRow
	if err := tx.Select("dao", "voter").Where("chain_id = ? AND block_number > ?", chainID, n).Find(&voters).Error; err != nil {
		return a, err
	}
	for _, v := range voters {
		a.delegates[[2]string{v.DAO, v.Voter}] = true
	}
	delete(a.delegates, [2]string{})
	for k := range a.delegates {
		if k[1] == zeroAddress {
			delete(a.delegates, k)
		}
	}
	return a, nil
}

// rollbackTokens undoes the delegation events above block n of a chain
// (votes above it are already deleted) and recomputes the rows they made
// from the events at or below it.
func rollbackTokens(tx *gorm.DB, chainID, n uint64, a tokenAccounts) error {
	for _, q := range []string{
		`DELETE FROM token_events WHERE chain_id = ? AND block_number > ?`,
		`DELETE FROM delegated_powers WHERE dao IN (SELECT dao FROM chain_cursors WHERE chain_id = ?) AND block > ?`,
	} {
		if err := tx.Exec(q, chainID, n).Error; err != nil {
			return err
		}
	}
	for k := range a.delegators {
		var last []tokenEventRow
		if err := tx.Where("dao = ? AND account = ? AND kind = ?", k[0], k[1], kindChanged).
			Order("block_number DESC, log_index DESC").Limit(1).Find(&last).Error; err != nil {
			return err
		}
		if len(last) == 0 {
			if err := tx.Where("dao = ? AND delegator = ?", k[0], k[1]).Delete(&delegationRow{}).Error; err != nil {
				return err
			}
			continue
		}
		e := last[0]
		row := delegationRow{DAO: k[0], Delegator: k[1], Delegate: e.ToDelegate, SinceBlock: e.BlockNumber, SinceAt: e.At, TxHash: e.TxHash}
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "dao"}, {Name: "delegator"}},
			DoUpdates: clause.AssignmentColumns([]string{"delegate", "since_block", "since_at", "tx_hash"}),
		}).Create(&row).Error; err != nil {
			return err
		}
	}
	for k := range a.delegates {
		r := delegateRow{DAO: k[0], Address: k[1], Power: "0"}
		var last []tokenEventRow
		if err := tx.Where("dao = ? AND account = ? AND kind = ?", k[0], k[1], kindVotes).
			Order("block_number DESC, log_index DESC").Limit(1).Find(&last).Error; err != nil {
			return err
		}
		if len(last) > 0 {
			r.Power, r.PowerBlock, r.UpdatedBlock = last[0].NewVotes, last[0].BlockNumber, last[0].BlockNumber
		}
		var first []tokenEventRow
		if err := tx.Where("dao = ? AND account = ? AND kind = ? AND new_votes <> '0'", k[0], k[1], kindVotes).
			Order("block_number, log_index").Limit(1).Find(&first).Error; err != nil {
			return err
		}
		if len(first) > 0 {
			r.FirstPowerBlock = first[0].BlockNumber
		}
		if err := tx.Model(&delegationRow{}).Where("dao = ? AND delegate = ?", k[0], k[1]).Count(&r.Delegators).Error; err != nil {
			return err
		}
		// The count alone: SQLite answers MAX(cast_at) as text, which does
		// not scan into a time; the newest vote is read below.
		if err := tx.Model(&voteRow{}).Where("dao = ? AND voter = ?", k[0], k[1]).Count(&r.VotesCast).Error; err != nil {
			return err
		}
		if r.VotesCast > 0 {
			var v []voteRow
			if err := tx.Where("dao = ? AND voter = ?", k[0], k[1]).Order("cast_at DESC").Limit(1).Find(&v).Error; err != nil {
				return err
			}
			at := v[0].CastAt.UTC()
			r.LastVoteAt = &at
		}
		r.PowerKey = powerKey(r.Power)
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "dao"}, {Name: "address"}},
			DoUpdates: clause.AssignmentColumns([]string{"power", "power_key", "power_block", "delegators", "votes_cast", "first_power_block", "last_vote_at", "updated_block"}),
		}).Create(&r).Error; err != nil {
			return err
		}
	}
	return nil
}
