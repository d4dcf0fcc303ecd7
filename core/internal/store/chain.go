package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/govgate/govgate/core"
)

type cursorRow struct {
	DAO     string `gorm:"column:dao;primaryKey"`
	ChainID uint64
	Block   uint64
	Hash    string
	// NotifyFrom is the first block whose changes are pushed (0: all).
	NotifyFrom uint64
	// Joined: the DAO follows its chain's shared cursor (migration 0030),
	// and Block and Hash are unused.
	Joined     bool
	Generation int64
	UpdatedAt  time.Time
}

func (cursorRow) TableName() string { return "chain_cursors" }

type blockRow struct {
	ChainID uint64 `gorm:"primaryKey;autoIncrement:false"`
	Number  uint64 `gorm:"primaryKey;autoIncrement:false"`
	Hash    string
}

func (blockRow) TableName() string { return "chain_blocks" }

type proposalRow struct {
	Seq           int64  `gorm:"primaryKey;autoIncrement"`
	DAO           string `gorm:"column:dao"`
	ProposalID    string
	ChainID       uint64
	Proposer      string
	Targets       string
	Values        string
	Signatures    string
	Calldatas     string
	Description   string
	VoteStart     uint64
	VoteEnd       uint64
	Clock         string
	State         string
	Quorum        *string
	QuorumReached bool
	Milestones    uint32
	ForVotes      string
	AgainstVotes  string
	AbstainVotes  string
	ETA           uint64 `gorm:"column:eta"`
	CreatedBlock  uint64
	CreatedTx     string
	// Block times, not row times: GORM must not stamp them.
	CreatedAt    time.Time `gorm:"autoCreateTime:false"`
	UpdatedBlock uint64
	UpdatedAt    time.Time `gorm:"autoUpdateTime:false"`
}

func (proposalRow) TableName() string { return "proposals" }

type revisionRow struct {
	DAO        string `gorm:"column:dao;primaryKey"`
	ProposalID string `gorm:"primaryKey"`
	Block      uint64 `gorm:"primaryKey;autoIncrement:false"`
	ChainID    uint64
	Data       string
}

func (revisionRow) TableName() string { return "proposal_revisions" }

// revision is a proposal_revisions row's data: the proposal as served, and
// the milestones the domain type keeps out of its JSON.
type revision struct {
	core.Proposal
	Milestones uint32 `json:"milestones"`
}

type voteRow struct {
	ID          int64 `gorm:"primaryKey;autoIncrement"`
	ChainID     uint64
	TxHash      string
	LogIndex    uint
	DAO         string `gorm:"column:dao"`
	ProposalID  string
	Voter       string
	Support     uint8
	Weight      string
	Reason      string
	Params      string
	BlockNumber uint64
	BlockHash   string
	CastAt      time.Time
}

func (voteRow) TableName() string { return "votes" }

// Cursor returns how far a DAO has been indexed.
func (s *Store) Cursor(ctx context.Context, dao string) (core.Cursor, bool, error) {
	var rows []cursorRow
	// Columns named, not *: PostgreSQL refuses a cached plan whose columns
	// a migration changed.
	if err := s.db.WithContext(ctx).Select("dao", "chain_id", "block", "hash", "notify_from", "joined", "generation").
		Where("dao = ?", dao).Limit(1).Find(&rows).Error; err != nil {
		return core.Cursor{}, false, fmt.Errorf("get cursor: %w", err)
	}
	if len(rows) == 0 {
		return core.Cursor{}, false, nil
	}
	c := core.Cursor{Block: rows[0].Block, Hash: rows[0].Hash, NotifyFrom: rows[0].NotifyFrom}
	if rows[0].Joined {
		shared, ok, err := s.SharedCursor(ctx, rows[0].ChainID)
		if err != nil {
			return core.Cursor{}, false, err
		}
		if ok {
			c.Block, c.Hash = shared.Block, shared.Hash
		}
	}
	return c, true, nil
}

// RecentBlocks returns up to limit remembered blocks of a chain, highest first.
func (s *Store) RecentBlocks(ctx context.Context, chainID uint64, limit int) ([]core.BlockRef, error) {
	var rows []blockRow
	if err := s.db.WithContext(ctx).Where("chain_id = ?", chainID).Order("number DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("recent blocks: %w", err)
	}
	out := make([]core.BlockRef, len(rows))
	for i, r := range rows {
		out[i] = core.BlockRef{Number: r.Number, Hash: r.Hash}
	}
	return out, nil
}

// Proposal returns the latest revision of a proposal.
func (s *Store) Proposal(ctx context.Context, dao, id string) (core.Proposal, bool, error) {
	var rows []proposalRow
	if err := s.db.WithContext(ctx).Where("dao = ? AND proposal_id = ?", dao, id).Limit(1).Find(&rows).Error; err != nil {
		return core.Proposal{}, false, fmt.Errorf("get proposal: %w", err)
	}
	if len(rows) == 0 {
		return core.Proposal{}, false, nil
	}
	p, err := rows[0].domain()
	return p, err == nil, err
}

func (r proposalRow) domain() (core.Proposal, error) {
	p := core.Proposal{
		DAO: r.DAO, ChainID: r.ChainID, ProposalID: r.ProposalID, Proposer: r.Proposer,
		Title: core.ProposalTitle(r.Description), Description: r.Description,
		VoteStart: r.VoteStart, VoteEnd: r.VoteEnd, Clock: r.Clock, State: r.State, Quorum: r.Quorum,
		QuorumReached: r.QuorumReached, Milestones: r.Milestones, ForVotes: r.ForVotes, AgainstVotes: r.AgainstVotes,
		AbstainVotes: r.AbstainVotes, ETA: r.ETA, CreatedBlock: r.CreatedBlock, CreatedTx: r.CreatedTx,
		CreatedAt: r.CreatedAt.UTC(), UpdatedBlock: r.UpdatedBlock, UpdatedAt: r.UpdatedAt.UTC(),
	}
	for _, f := range []struct {
		raw string
		dst *[]string
	}{{r.Targets, &p.Targets}, {r.Values, &p.Values}, {r.Signatures, &p.Signatures}, {r.Calldatas, &p.Calldatas}} {
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return core.Proposal{}, fmt.Errorf("decode proposal %s: %w", r.ProposalID, err)
		}
	}
	return p, nil
}

func proposalToRow(p core.Proposal) proposalRow {
	js := func(v []string) string {
		if v == nil {
			v = []string{}
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return proposalRow{
		DAO: p.DAO, ProposalID: p.ProposalID, ChainID: p.ChainID, Proposer: p.Proposer,
		Targets: js(p.Targets), Values: js(p.Values), Signatures: js(p.Signatures), Calldatas: js(p.Calldatas),
		Description: p.Description, VoteStart: p.VoteStart, VoteEnd: p.VoteEnd, Clock: p.Clock, State: p.State,
		Quorum: p.Quorum, QuorumReached: p.QuorumReached, Milestones: p.Milestones,
		ForVotes: p.ForVotes, AgainstVotes: p.AgainstVotes, AbstainVotes: p.AbstainVotes, ETA: p.ETA,
		CreatedBlock: p.CreatedBlock, CreatedTx: p.CreatedTx, CreatedAt: p.CreatedAt.UTC(),
		UpdatedBlock: p.UpdatedBlock, UpdatedAt: p.UpdatedAt.UTC(),
	}
}

// proposalColumns are the columns a new revision overwrites.
var proposalColumns = []string{"chain_id", "proposer", "targets", "values", "signatures", "calldatas", "description",
	"vote_start", "vote_end", "clock", "state", "quorum", "quorum_reached", "milestones", "for_votes", "against_votes", "abstain_votes", "eta",
	"created_block", "created_tx", "created_at", "updated_block", "updated_at"}

// ApplyBatch writes one DAO's indexing step in one transaction: proposals
// and their revisions, votes, notifications with their delivery fan-out,
// block hashes and the DAO's own cursor. It refuses the batch with
// core.ErrCursorMoved when the stored cursor is not the one the batch was
// built on. The indexer writes through ApplyBatches; this is the one-DAO
// form that tools and tests use.
func (s *Store) ApplyBatch(ctx context.Context, b core.IndexBatch) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur []struct {
			Block uint64
			Hash  string
		}
		q := tx.Table("chain_cursors").Select("block", "hash").Where("dao = ?", b.DAO).Limit(1)
		q = s.dialect.lockForUpdate(q)
		if err := q.Find(&cur).Error; err != nil {
			return err
		}
		switch {
		case b.Prev == nil && len(cur) > 0,
			b.Prev != nil && (len(cur) == 0 || cur[0].Block != b.Prev.Block || cur[0].Hash != b.Prev.Hash):
			return core.ErrCursorMoved
		}
		if _, err := s.applyContent(tx, b); err != nil {
			return err
		}
		if err := s.recordBlocks(tx, b.ChainID, b.Blocks, b.PruneBelow); err != nil {
			return err
		}
		if err := tx.Exec(`INSERT INTO chain_cursors (dao, chain_id, block, hash, notify_from, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (dao) DO UPDATE SET chain_id = excluded.chain_id, block = excluded.block, hash = excluded.hash,
			notify_from = excluded.notify_from, updated_at = excluded.updated_at`,
			b.DAO, b.ChainID, b.Cursor.Block, b.Cursor.Hash, b.Cursor.NotifyFrom, s.now()).Error; err != nil {
			return fmt.Errorf("move cursor: %w", err)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, core.ErrCursorMoved) {
			return err
		}
		return fmt.Errorf("apply index batch: %w", err)
	}
	return nil
}

// applyContent writes what one DAO's part of a batch holds, except its
// cursor: proposals and their revisions, votes, delegation events and
// notifications.
func (s *Store) applyContent(tx *gorm.DB, b core.IndexBatch) (created int, err error) {
	for _, p := range b.Proposals {
		row := proposalToRow(p)
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "dao"}, {Name: "proposal_id"}},
			DoUpdates: clause.AssignmentColumns(proposalColumns),
		}).Create(&row).Error; err != nil {
			return 0, fmt.Errorf("upsert proposal: %w", err)
		}
		data, _ := json.Marshal(revision{Proposal: p, Milestones: p.Milestones})
		rev := revisionRow{DAO: p.DAO, ProposalID: p.ProposalID, Block: p.UpdatedBlock, ChainID: p.ChainID, Data: string(data)}
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "dao"}, {Name: "proposal_id"}, {Name: "block"}},
			DoUpdates: clause.AssignmentColumns([]string{"data"}),
		}).Create(&rev).Error; err != nil {
			return 0, fmt.Errorf("record proposal revision: %w", err)
		}
	}
	if len(b.Votes) > 0 {
		rows := make([]voteRow, len(b.Votes))
		for i, v := range b.Votes {
			rows[i] = voteRow{ChainID: v.ChainID, TxHash: v.TxHash, LogIndex: v.LogIndex, DAO: v.DAO, ProposalID: v.ProposalID,
				Voter: v.Voter, Support: v.Support, Weight: v.Weight, Reason: v.Reason, Params: v.Params,
				BlockNumber: v.BlockNumber, BlockHash: v.BlockHash, CastAt: v.CastAt.UTC()}
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(rows, s.rowsPerInsert()).Error; err != nil {
			return 0, fmt.Errorf("insert votes: %w", err)
		}
	}
	if err := s.applyTokens(tx, b); err != nil {
		return 0, err
	}
	if err := s.applyCounting(tx, b); err != nil {
		return 0, err
	}
	notes, err := s.reviveOrphans(tx, b.ChainID, b.Notifications)
	if err != nil {
		return 0, err
	}
	var tagged []core.Notification
	for _, n := range notes {
		ok, err := s.InsertNotificationTx(tx, n, "indexer")
		if err != nil {
			return 0, err
		}
		if ok {
			created++
			tagged = append(tagged, n)
		}
	}
	if err := tagNotifications(tx, b.ChainID, tagged); err != nil {
		return 0, err
	}
	if b.PruneBelow > 0 && len(b.Proposals) > 0 {
		if err := tx.Exec(`DELETE FROM proposal_revisions WHERE dao = ? AND block < ? AND EXISTS (
			SELECT 1 FROM proposal_revisions r2 WHERE r2.dao = proposal_revisions.dao AND r2.proposal_id = proposal_revisions.proposal_id
			AND r2.block > proposal_revisions.block AND r2.block <= ?)`, b.DAO, b.PruneBelow, b.PruneBelow).Error; err != nil {
			return 0, fmt.Errorf("prune revisions: %w", err)
		}
	}
	return created, nil
}

// Rollback undoes everything indexed above block to.Number on a chain, in
// one transaction, the shared cursor and the DAOs' own cursors with it.
// Notifications stay: they may be delivered already, and the indexer emits
// none for unconfirmed blocks. Each indexer notification of a block above
// to.Number is marked orphaned instead, and a notification.orphaned notice
// naming it is stored for the receivers, once.
func (s *Store) Rollback(ctx context.Context, chainID uint64, to core.BlockRef) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		n := to.Number
		affected, err := affectedAbove(tx, chainID, n)
		if err != nil {
			return err
		}
		for _, stmt := range []string{
			`DELETE FROM votes WHERE chain_id = ? AND block_number > ?`,
			`DELETE FROM chain_blocks WHERE chain_id = ? AND number > ?`,
			`DELETE FROM proposals WHERE chain_id = ? AND created_block > ?`,
			`DELETE FROM proposal_revisions WHERE chain_id = ? AND block > ?`,
		} {
			if err := tx.Exec(stmt, chainID, n).Error; err != nil {
				return err
			}
		}
		var changed []proposalRow
		if err := tx.Select("dao", "proposal_id").Where("chain_id = ? AND updated_block > ?", chainID, n).Find(&changed).Error; err != nil {
			return err
		}
		for _, c := range changed {
			var revs []revisionRow
			if err := tx.Where("dao = ? AND proposal_id = ? AND block <= ?", c.DAO, c.ProposalID, n).Order("block DESC").Limit(1).Find(&revs).Error; err != nil {
				return err
			}
			if len(revs) == 0 {
				if err := tx.Where("dao = ? AND proposal_id = ?", c.DAO, c.ProposalID).Delete(&proposalRow{}).Error; err != nil {
					return err
				}
				continue
			}
			var rev revision
			if err := json.Unmarshal([]byte(revs[0].Data), &rev); err != nil {
				return fmt.Errorf("decode revision: %w", err)
			}
			rev.Proposal.Milestones = rev.Milestones
			row := proposalToRow(rev.Proposal)
			if err := tx.Model(&proposalRow{}).Where("dao = ? AND proposal_id = ?", c.DAO, c.ProposalID).Select(proposalColumns).Updates(&row).Error; err != nil {
				return err
			}
		}
		if err := rollbackTokens(tx, chainID, n, affected); err != nil {
			return fmt.Errorf("roll back delegations: %w", err)
		}
		if err := rollbackCounting(tx, chainID, n); err != nil {
			return fmt.Errorf("roll back overrides, clock points and timelines: %w", err)
		}
		if _, err := s.orphanNotifications(tx, chainID, to); err != nil {
			return err
		}
		if err := tx.Exec(`UPDATE chain_shared_cursors SET block = ?, hash = ?, updated_at = ? WHERE chain_id = ? AND block > ?`,
			n, to.Hash, s.now(), chainID, n).Error; err != nil {
			return err
		}
		return tx.Exec(`UPDATE chain_cursors SET block = ?, hash = ?, updated_at = ? WHERE chain_id = ? AND block > ? AND NOT joined`,
			n, to.Hash, s.now(), chainID, n).Error
	})
	if err != nil {
		return fmt.Errorf("roll back chain %d to %d: %w", chainID, to.Number, err)
	}
	return nil
}

// OpenProposals returns a DAO's proposals whose state can still change
// without an event of their own: pending, active and queued ones. The
// indexer asks the governor about them when the chain's clock crosses one
// of their timepoints.
func (s *Store) OpenProposals(ctx context.Context, dao string) ([]core.Proposal, error) {
	var rows []proposalRow
	if err := s.db.WithContext(ctx).Where("dao = ? AND state IN ?", dao,
		[]string{core.ProposalPending, core.ProposalActive, core.ProposalQueued}).Order("seq").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("open proposals: %w", err)
	}
	out := make([]core.Proposal, 0, len(rows))
	for _, r := range rows {
		p, err := r.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ListProposals lists a DAO's proposals (every DAO's for dao ""), newest
// first (by creation), with an optional state filter. next is the Before
// of the next page.
func (s *Store) ListProposals(ctx context.Context, dao, state string, p core.Page) ([]core.Proposal, int64, error) {
	q := s.db.WithContext(ctx).Order("seq DESC").Limit(p.PageLimit() + 1)
	if dao != "" {
		q = q.Where("dao = ?", dao)
	}
	if state != "" {
		q = q.Where("state = ?", state)
	}
	if p.Before > 0 {
		q = q.Where("seq < ?", p.Before)
	}
	var rows []proposalRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list proposals: %w", err)
	}
	var next int64
	if len(rows) > p.PageLimit() {
		rows = rows[:p.PageLimit()]
		next = rows[len(rows)-1].Seq
	}
	out := make([]core.Proposal, 0, len(rows))
	for _, r := range rows {
		pr, err := r.domain()
		if err != nil {
			return nil, 0, err
		}
		out = append(out, pr)
	}
	return out, next, nil
}

// ListVotes lists the votes on a proposal, newest first.
func (s *Store) ListVotes(ctx context.Context, dao, proposalID string, p core.Page) ([]core.Vote, int64, error) {
	q := s.db.WithContext(ctx).Where("dao = ? AND proposal_id = ?", dao, proposalID).Order("id DESC").Limit(p.PageLimit() + 1)
	if p.Before > 0 {
		q = q.Where("id < ?", p.Before)
	}
	var rows []voteRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list votes: %w", err)
	}
	var next int64
	if len(rows) > p.PageLimit() {
		rows = rows[:p.PageLimit()]
		next = rows[len(rows)-1].ID
	}
	out, err := s.domainVotes(ctx, rows)
	return out, next, err
}

// recordBlocks remembers the hashes of blocks, for the next reorganisation
// check, and forgets those below pruneBelow (0: none), in a batch's
// transaction.
func (s *Store) recordBlocks(tx *gorm.DB, chainID uint64, blocks []core.BlockRef, pruneBelow uint64) error {
	if len(blocks) > 0 {
		rows := make([]blockRow, len(blocks))
		for i, br := range blocks {
			rows[i] = blockRow{ChainID: chainID, Number: br.Number, Hash: br.Hash}
		}
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "chain_id"}, {Name: "number"}},
			DoUpdates: clause.AssignmentColumns([]string{"hash"}),
		}).CreateInBatches(rows, s.rowsPerInsert()).Error; err != nil {
			return fmt.Errorf("record blocks: %w", err)
		}
	}
	if pruneBelow > 0 {
		if err := tx.Exec(`DELETE FROM chain_blocks WHERE chain_id = ? AND number < ?`, chainID, pruneBelow).Error; err != nil {
			return fmt.Errorf("prune blocks: %w", err)
		}
	}
	return nil
}
