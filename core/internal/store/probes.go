package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/govgate/govgate/core"
)

// What the indexer's probe learned of each DAO's governor (dao_probes):
// one row per DAO, valid for the generation it names. A new leader reads
// the rows of its chain's DAOs instead of asking the chain again (about
// seven calls an OpenZeppelin DAO); a DAO redefined since (another generation) or never
// probed is probed again.

type probeRow struct {
	DAO           string `gorm:"column:dao;primaryKey"`
	Generation    int64
	Clock         string
	HasClock      bool
	CountingMode  string
	QuorumAbstain bool
	GraceSeconds  uint64
	Token         string
	ProbedAt      time.Time
}

func (probeRow) TableName() string { return "dao_probes" }

// GovernorDetails returns what probes learned of the governors of the
// chain's DAOs, by slug: only rows of each DAO's current generation.
func (s *Store) GovernorDetails(ctx context.Context, chainID uint64) (map[string]core.GovernorDetails, error) {
	var rows []probeRow
	if err := s.db.WithContext(ctx).Table("dao_probes p").
		Select("p.dao", "p.generation", "p.clock", "p.has_clock", "p.counting_mode", "p.quorum_abstain", "p.grace_seconds", "p.token").
		Joins("JOIN daos d ON d.slug = p.dao AND d.generation = p.generation").
		Where("d.chain_id = ?", chainID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("governor details: %w", err)
	}
	out := make(map[string]core.GovernorDetails, len(rows))
	for _, r := range rows {
		out[r.DAO] = core.GovernorDetails{DAO: r.DAO, Generation: r.Generation, Clock: r.Clock, HasClock: r.HasClock, CountingMode: r.CountingMode,
			QuorumAbstain: r.QuorumAbstain, GraceSeconds: r.GraceSeconds, Token: r.Token}
	}
	return out, nil
}

// SaveGovernorDetails keeps what probes learned, each for its DAO's
// generation; details of a generation the store has not (yet, or any
// more) are kept too, and read by no one until the DAO has it.
func (s *Store) SaveGovernorDetails(ctx context.Context, details []core.GovernorDetails) error {
	if len(details) == 0 {
		return nil
	}
	now := s.now()
	rows := make([]probeRow, 0, len(details))
	for _, d := range details {
		if d.Generation <= 0 {
			continue // a DAO not in the store
		}
		rows = append(rows, probeRow{DAO: d.DAO, Generation: d.Generation, Clock: d.Clock, HasClock: d.HasClock, CountingMode: d.CountingMode,
			QuorumAbstain: d.QuorumAbstain, GraceSeconds: d.GraceSeconds, Token: d.Token, ProbedAt: now})
	}
	if len(rows) == 0 {
		return nil
	}
	if err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "dao"}},
		DoUpdates: clause.AssignmentColumns([]string{"generation", "clock", "has_clock", "counting_mode", "quorum_abstain", "grace_seconds", "token", "probed_at"}),
	}).CreateInBatches(rows, s.rowsPerInsert()).Error; err != nil {
		return fmt.Errorf("save governor details: %w", err)
	}
	return nil
}
