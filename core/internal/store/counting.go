package store

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/govgate/govgate/core"
)

// What the counting modules, the governor's clock and the timeline add.
// Each is kept in a table of its own, written only where there is
// something to say, so that a DAO counting as before writes what it did:
//
//	vote_overrides     one row per OverrideVoteCast (its votes row has the
//	                   rest): the delegate whose vote it reduced, if any
//	clock_points       the governor's clock at each block with delegation
//	                   events where it is not the block number (an L2
//	                   token's clock, a timestamp clock): the timepoint of
//	                   the checkpoints those events wrote
//	proposal_timeline  each proposal's events and clock-driven changes
//	dao_governors      what each DAO's governor says of itself: its
//	                   COUNTING_MODE() and clock unit, for every process
//	                   serving the DAO, not only the indexing one
//
// A vote's split (forWeight, againstWeight, abstainWeight) needs no
// column: it follows from support, weight and params.

type voteOverrideRow struct {
	ChainID         uint64 `gorm:"primaryKey;autoIncrement:false"`
	TxHash          string `gorm:"primaryKey"`
	LogIndex        uint   `gorm:"primaryKey;autoIncrement:false"`
	DAO             string `gorm:"column:dao"`
	ProposalID      string
	BlockNumber     uint64
	Delegate        string
	DelegateSupport int16 // -1: the delegate had not voted
	ReducedWeight   string
}

func (voteOverrideRow) TableName() string { return "vote_overrides" }

type clockPointRow struct {
	DAO       string `gorm:"column:dao;primaryKey"`
	Block     uint64 `gorm:"primaryKey;autoIncrement:false"`
	ChainID   uint64
	Timepoint uint64
}

func (clockPointRow) TableName() string { return "clock_points" }

type timelineRow struct {
	DAO        string `gorm:"column:dao;primaryKey"`
	ProposalID string `gorm:"primaryKey"`
	Event      string `gorm:"primaryKey"`
	Block      uint64 `gorm:"primaryKey;autoIncrement:false"`
	ChainID    uint64
	At         time.Time
	TxHash     string
}

func (timelineRow) TableName() string { return "proposal_timeline" }

type governorRow struct {
	DAO          string `gorm:"column:dao;primaryKey"`
	CountingMode string
	ClockMode    string
	UpdatedAt    time.Time
}

func (governorRow) TableName() string { return "dao_governors" }

// Governor returns what the DAO's governor said of itself when the
// indexer last read it; false before it ever did.
func (s *Store) Governor(ctx context.Context, dao string) (core.GovernorInfo, bool, error) {
	var rows []governorRow
	if err := s.db.WithContext(ctx).Where("dao = ?", dao).Limit(1).Find(&rows).Error; err != nil {
		return core.GovernorInfo{}, false, fmt.Errorf("governor: %w", err)
	}
	if len(rows) == 0 {
		return core.GovernorInfo{}, false, nil
	}
	return core.GovernorInfo{CountingMode: rows[0].CountingMode, ClockMode: rows[0].ClockMode}, true, nil
}

// applyCounting writes a batch's overrides, clock points, timeline and
// governor.
func (s *Store) applyCounting(tx *gorm.DB, b core.IndexBatch) error {
	if g := b.Governor; g != nil {
		row := governorRow{DAO: b.DAO, CountingMode: g.CountingMode, ClockMode: g.ClockMode, UpdatedAt: s.now()}
		if err := tx.Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "dao"}}, DoUpdates: clause.AssignmentColumns([]string{"counting_mode", "clock_mode", "updated_at"}),
		}).Create(&row).Error; err != nil {
			return fmt.Errorf("record governor: %w", err)
		}
	}
	var overrides []voteOverrideRow
	for _, v := range b.Votes {
		if v.Kind != core.VoteKindOverride {
			continue
		}
		r := voteOverrideRow{ChainID: v.ChainID, TxHash: v.TxHash, LogIndex: v.LogIndex, DAO: v.DAO, ProposalID: v.ProposalID,
			BlockNumber: v.BlockNumber, Delegate: v.Delegate, DelegateSupport: -1, ReducedWeight: v.ReducedWeight}
		if v.DelegateSupport != nil {
			r.DelegateSupport = int16(*v.DelegateSupport)
		}
		overrides = append(overrides, r)
	}
	if len(overrides) > 0 {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(overrides, s.rowsPerInsert()).Error; err != nil {
			return fmt.Errorf("insert vote overrides: %w", err)
		}
	}
	points := map[uint64]clockPointRow{}
	for _, e := range b.TokenEvents {
		if e.Timepoint != 0 && e.Timepoint != e.BlockNumber {
			points[e.BlockNumber] = clockPointRow{DAO: b.DAO, Block: e.BlockNumber, ChainID: b.ChainID, Timepoint: e.Timepoint}
		}
	}
	if len(points) > 0 {
		list := make([]clockPointRow, 0, len(points))
		for _, p := range points {
			list = append(list, p)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Block < list[j].Block })
		if err := tx.Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "dao"}, {Name: "block"}}, DoUpdates: clause.AssignmentColumns([]string{"timepoint"}),
		}).CreateInBatches(list, s.rowsPerInsert()).Error; err != nil {
			return fmt.Errorf("record clock points: %w", err)
		}
	}
	if len(b.Timeline) > 0 {
		rows := make([]timelineRow, len(b.Timeline))
		for i, e := range b.Timeline {
			rows[i] = timelineRow{DAO: e.DAO, ProposalID: e.ProposalID, Event: e.Event, Block: e.Block, ChainID: e.ChainID, At: e.Time.UTC(), TxHash: e.TxHash}
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(rows, s.rowsPerInsert()).Error; err != nil {
			return fmt.Errorf("record timeline: %w", err)
		}
	}
	return nil
}

// rollbackCounting deletes what applyCounting wrote above block n.
func rollbackCounting(tx *gorm.DB, chainID, n uint64) error {
	for _, stmt := range []string{
		`DELETE FROM vote_overrides WHERE chain_id = ? AND block_number > ?`,
		`DELETE FROM clock_points WHERE chain_id = ? AND block > ?`,
		`DELETE FROM proposal_timeline WHERE chain_id = ? AND block > ?`,
	} {
		if err := tx.Exec(stmt, chainID, n).Error; err != nil {
			return err
		}
	}
	return nil
}

// voteSplit is how a stored vote counted (core.SplitVote), in decimals.
func voteSplit(support uint8, weight, params string) (forW, against, abstain string) {
	var raw []byte
	if params != "" {
		raw, _ = hexutil.Decode(params) // what the indexer stored; unreadable params count as none
	}
	s := core.SplitVote(support, dec(weight), raw)
	return s.For.String(), s.Against.String(), s.Abstain.String()
}

// domainVotes turns vote rows into votes, with their split and overrides.
func (s *Store) domainVotes(ctx context.Context, rows []voteRow) ([]core.Vote, error) {
	out := make([]core.Vote, len(rows))
	var keys [][]any
	for i, r := range rows {
		v := core.Vote{DAO: r.DAO, ChainID: r.ChainID, ProposalID: r.ProposalID, Voter: r.Voter, Kind: core.VoteKindVote, Support: r.Support,
			Weight: r.Weight, Reason: r.Reason, Params: r.Params, BlockNumber: r.BlockNumber, BlockHash: r.BlockHash,
			TxHash: r.TxHash, LogIndex: r.LogIndex, CastAt: r.CastAt.UTC()}
		v.ForWeight, v.AgainstWeight, v.AbstainWeight = voteSplit(r.Support, r.Weight, r.Params)
		out[i] = v
		keys = append(keys, []any{r.TxHash, r.LogIndex})
	}
	if len(rows) == 0 {
		return out, nil
	}
	var ovs []voteOverrideRow
	if err := s.db.WithContext(ctx).Where("chain_id = ? AND (tx_hash, log_index) IN ?", rows[0].ChainID, keys).Find(&ovs).Error; err != nil {
		return nil, fmt.Errorf("vote overrides: %w", err)
	}
	byKey := map[string]voteOverrideRow{}
	for _, o := range ovs {
		byKey[fmt.Sprint(o.TxHash, o.LogIndex)] = o
	}
	for i := range out {
		o, ok := byKey[fmt.Sprint(out[i].TxHash, out[i].LogIndex)]
		if !ok {
			continue
		}
		out[i].Kind = core.VoteKindOverride
		if o.DelegateSupport >= 0 {
			sup := uint8(o.DelegateSupport)
			out[i].Delegate, out[i].DelegateSupport, out[i].ReducedWeight = o.Delegate, &sup, o.ReducedWeight
		}
	}
	return out, nil
}

// Timeline returns a proposal's timeline, in chain order.
func (s *Store) Timeline(ctx context.Context, dao, proposalID string) ([]core.TimelineEntry, error) {
	var rows []timelineRow
	if err := s.db.WithContext(ctx).Where("dao = ? AND proposal_id = ?", dao, proposalID).Order("block, at").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	out := make([]core.TimelineEntry, len(rows))
	for i, r := range rows {
		out[i] = core.TimelineEntry{DAO: r.DAO, ProposalID: r.ProposalID, ChainID: r.ChainID, Event: r.Event, Block: r.Block, Time: r.At.UTC(), TxHash: r.TxHash}
	}
	// Within a block, the created entry first and the clock's changes
	// before the events that followed them.
	order := map[string]int{core.TimelineCreated: 0, core.TimelineActive: 1, core.TimelineExtended: 2, core.TimelineSucceeded: 3,
		core.TimelineDefeated: 3, core.TimelineQueued: 4, core.TimelineExecuted: 5, core.TimelineExpired: 5, core.TimelineCanceled: 6}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Block != out[j].Block {
			return out[i].Block < out[j].Block
		}
		return order[out[i].Event] < order[out[j].Event]
	})
	return out, nil
}

// VoteStats counts a proposal's stored votes by side (core.VoteStats):
// each vote's split, less what overrides took back from it. quorumAbstain
// says whether abstentions count towards quorum. The delegated power at
// the snapshot is the DAO's delegated_powers at the last block whose
// timepoint is at or before voteStart.
func (s *Store) VoteStats(ctx context.Context, p core.Proposal, quorumAbstain bool) (core.VoteStats, error) {
	var rows []voteRow
	if err := s.db.WithContext(ctx).Where("dao = ? AND proposal_id = ?", p.DAO, p.ProposalID).Order("id").Find(&rows).Error; err != nil {
		return core.VoteStats{}, fmt.Errorf("vote statistics: %w", err)
	}
	votes, err := s.domainVotes(ctx, rows)
	if err != nil {
		return core.VoteStats{}, err
	}
	type sides [3]*big.Int // against, for, abstain
	per := map[string]*sides{}
	get := func(a string) *sides {
		if per[a] == nil {
			per[a] = &sides{new(big.Int), new(big.Int), new(big.Int)}
		}
		return per[a]
	}
	for _, v := range votes {
		sd := get(v.Voter)
		sd[0].Add(sd[0], dec(v.AgainstWeight))
		sd[1].Add(sd[1], dec(v.ForWeight))
		sd[2].Add(sd[2], dec(v.AbstainWeight))
		if v.DelegateSupport != nil && *v.DelegateSupport <= 2 {
			d := get(v.Delegate)
			d[*v.DelegateSupport].Sub(d[*v.DelegateSupport], dec(v.ReducedWeight))
		}
	}
	tot := sides{new(big.Int), new(big.Int), new(big.Int)}
	var st core.VoteStats
	for _, sd := range per {
		any := false
		for i, n := range []*int64{&st.VotersAgainst, &st.VotersFor, &st.VotersAbstain} {
			tot[i].Add(tot[i], sd[i])
			if sd[i].Sign() > 0 {
				*n++
				any = true
			}
		}
		if any {
			st.Voters++
		}
	}
	all := new(big.Int).Add(tot[0], tot[1])
	all.Add(all, tot[2])
	st.AgainstWeight, st.ForWeight, st.AbstainWeight, st.TotalWeight = tot[0].String(), tot[1].String(), tot[2].String(), all.String()
	share := func(n *big.Int) float64 {
		if all.Sign() == 0 {
			return 0
		}
		f, _ := new(big.Rat).SetFrac(n, all).Float64()
		return f
	}
	st.AgainstShare, st.ForShare, st.AbstainShare = share(tot[0]), share(tot[1]), share(tot[2])
	if p.Quorum != nil {
		if q := dec(*p.Quorum); q.Sign() > 0 {
			counted := new(big.Int).Set(tot[1])
			if quorumAbstain {
				counted.Add(counted, tot[2])
			}
			f, _ := new(big.Rat).SetFrac(counted, q).Float64()
			st.QuorumShare = &f
		}
	}
	// Only a proposal that reached its snapshot has power delegated at
	// it: not one pending, nor one canceled before voting opened (whose
	// quorum was never read, for the same reason).
	if p.State != core.ProposalPending && (p.State != core.ProposalCanceled || p.Quorum != nil) {
		delegated, err := s.PowerAt(ctx, p.DAO, p.Clock, p.VoteStart)
		if err != nil {
			return core.VoteStats{}, err
		}
		st.DelegatedAtSnapshot = &delegated
		if d := dec(delegated); d.Sign() > 0 {
			f, _ := new(big.Rat).SetFrac(all, d).Float64()
			st.Turnout = &f
		}
	}
	return st, nil
}

// timepointExpr is the governor's clock at a row's block: its clock point
// where one was recorded, else the block number (or, on a timestamp clock,
// the row's block time, which timestamp clocks record as points).
const timepointExpr = `COALESCE((SELECT cp.timepoint FROM clock_points cp WHERE cp.dao = %[1]s.dao AND cp.block = %[1]s.%[2]s), %[1]s.%[2]s)`

// tokenTimepoint is the governor's clock at a token event's block, as SQL:
// its block time on a timestamp clock (which every node agrees on, and
// which rows stored before clock points existed have too), else its clock
// point or block number (timepointExpr).
func tokenTimepoint(clock string) string {
	if clock == core.ClockTimestamp {
		return ""
	}
	return fmt.Sprintf(timepointExpr, "token_events", "block_number")
}

// PowerHistory returns a page of an account's voting power changes, newest
// first; before is the block of the next page (0: from the newest). clock
// is the governor's clock unit, in which each change's timepoint is given.
func (s *Store) PowerHistory(ctx context.Context, dao, clock, account string, before uint64, limit int) ([]core.PowerChange, uint64, error) {
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	tp := tokenTimepoint(clock)
	if tp == "" {
		tp = "0" // set from the block time below
	}
	type row struct {
		BlockNumber   uint64
		TxHash        string
		LogIndex      uint
		PreviousVotes string
		NewVotes      string
		At            time.Time
		Timepoint     uint64
	}
	// read returns the account's changes in blocks below before (any with
	// 0), or in block only, newest first.
	read := func(before, block uint64, limit int) ([]row, error) {
		q := s.db.WithContext(ctx).Table("token_events").
			Select("block_number, tx_hash, log_index, previous_votes, new_votes, at, "+tp+" AS timepoint").
			Where("dao = ? AND kind = ? AND account = ?", dao, kindVotes, account).Order("block_number DESC, log_index DESC")
		if limit > 0 {
			q = q.Limit(limit)
		}
		if before > 0 {
			q = q.Where("block_number < ?", before)
		}
		if block > 0 {
			q = q.Where("block_number = ?", block)
		}
		var rows []row
		if err := q.Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("power history: %w", err)
		}
		return rows, nil
	}
	rows, err := read(before, 0, limit+1)
	if err != nil {
		return nil, 0, err
	}
	var next uint64
	if len(rows) > limit {
		// A page ends between blocks: the next page (blocks below next)
		// starts with the block the extra row is in.
		cut := rows[limit].BlockNumber
		rows = rows[:limit]
		for len(rows) > 0 && rows[len(rows)-1].BlockNumber == cut {
			rows = rows[:len(rows)-1]
		}
		if len(rows) == 0 {
			// One block holds more changes than a page: the page is that
			// block, whole, so that no change falls between two pages.
			if rows, err = read(0, cut, 0); err != nil {
				return nil, 0, err
			}
			below, err := read(cut, 0, 1)
			if err != nil {
				return nil, 0, err
			}
			if len(below) > 0 {
				next = cut
			}
		} else {
			next = rows[len(rows)-1].BlockNumber
		}
	}
	out := make([]core.PowerChange, len(rows))
	for i, r := range rows {
		out[i] = core.PowerChange{Block: r.BlockNumber, Timepoint: r.Timepoint, Time: r.At.UTC(), TxHash: r.TxHash, LogIndex: r.LogIndex,
			PreviousPower: r.PreviousVotes, Power: r.NewVotes}
		if clock == core.ClockTimestamp {
			out[i].Timepoint = uint64(r.At.Unix())
		}
	}
	return out, next, nil
}

// PowerOfAt returns an account's voting power at a timepoint of the
// governor's clock (clock is its unit): the new votes of its last
// DelegateVotesChanged whose timepoint is at or before it ("0" with none),
// as the token's getPastVotes answers; and its delegate then (the zero
// address: none).
func (s *Store) PowerOfAt(ctx context.Context, dao, clock, account string, at uint64) (power, delegate string, err error) {
	cond, arg := tokenTimepoint(clock)+" <= ?", any(at)
	if clock == core.ClockTimestamp {
		cond, arg = "at <= ?", time.Unix(int64(at), 0).UTC()
	}
	var pw []struct{ NewVotes string }
	if err := s.db.WithContext(ctx).Table("token_events").Select("new_votes").
		Where("dao = ? AND kind = ? AND account = ? AND "+cond, dao, kindVotes, account, arg).
		Order("block_number DESC, log_index DESC").Limit(1).Scan(&pw).Error; err != nil {
		return "", "", fmt.Errorf("power at: %w", err)
	}
	power = "0"
	if len(pw) > 0 {
		power = pw[0].NewVotes
	}
	var dl []struct{ ToDelegate string }
	if err := s.db.WithContext(ctx).Table("token_events").Select("to_delegate").
		Where("dao = ? AND kind = ? AND account = ? AND "+cond, dao, kindChanged, account, arg).
		Order("block_number DESC, log_index DESC").Limit(1).Scan(&dl).Error; err != nil {
		return "", "", fmt.Errorf("delegate at: %w", err)
	}
	delegate = zeroAddress
	if len(dl) > 0 {
		delegate = dl[0].ToDelegate
	}
	return power, delegate, nil
}
