package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/govgate/govgate/core"
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

// applyTokens writes a batch's delegation events and what they make, and
// counts its votes on the voters' delegate rows, in the batch's transaction.
func (s *Store) applyTokens(tx *gorm.DB, b core.IndexBatch) error {
	if len(b.TokenEvents) == 0 && len(b.Votes) == 0 {
		return nil
	}
	rows := make([]tokenEventRow, 0, len(b.TokenEvents))
	delegations := map[string]delegationRow{} // by delegator: the batch's last
	type change struct {
		power      *string
		powerBlock uint64
		firstPower uint64
		delegators int64
		votes      int64
		lastVote   *time.Time
		block      uint64
	}
	changes := map[string]*change{}
	get := func(addr string) *change {
		c := changes[addr]
		if c == nil {
			c = &change{}
			changes[addr] = c
		}
		return c
	}
	var totalDelta []struct {
		block uint64
		at    time.Time
		delta *big.Int
	}
	for _, e := range b.TokenEvents {
		r := tokenEventRow{DAO: b.DAO, ChainID: b.ChainID, BlockNumber: e.BlockNumber, TxHash: e.TxHash, LogIndex: e.LogIndex, At: e.At.UTC()}
		if e.Kind == core.TypeDelegateChanged {
			r.Kind, r.Account, r.FromDelegate, r.ToDelegate, r.Moved = kindChanged, e.Delegator, e.FromDelegate, e.ToDelegate, e.Moved
			delegations[e.Delegator] = delegationRow{DAO: b.DAO, Delegator: e.Delegator, Delegate: e.ToDelegate,
				SinceBlock: e.BlockNumber, SinceAt: e.At.UTC(), TxHash: e.TxHash}
			if e.FromDelegate != zeroAddress {
				c := get(e.FromDelegate)
				c.delegators--
				c.block = max(c.block, e.BlockNumber)
			}
			if e.ToDelegate != zeroAddress {
				c := get(e.ToDelegate)
				c.delegators++
				c.block = max(c.block, e.BlockNumber)
			}
		} else {
			r.Kind, r.Account, r.PreviousVotes, r.NewVotes = kindVotes, e.Delegate, e.PreviousVotes, e.NewVotes
			c := get(e.Delegate)
			p := e.NewVotes
			c.power, c.powerBlock, c.block = &p, e.BlockNumber, max(c.block, e.BlockNumber)
			if c.firstPower == 0 && dec(p).Sign() > 0 {
				c.firstPower = e.BlockNumber
			}
			d := new(big.Int).Sub(dec(e.NewVotes), dec(e.PreviousVotes))
			if n := len(totalDelta); n > 0 && totalDelta[n-1].block == e.BlockNumber {
				totalDelta[n-1].delta.Add(totalDelta[n-1].delta, d)
			} else {
				totalDelta = append(totalDelta, struct {
					block uint64
					at    time.Time
					delta *big.Int
				}{e.BlockNumber, e.At.UTC(), d})
			}
		}
		rows = append(rows, r)
	}
	for _, v := range b.Votes {
		c := get(v.Voter)
		c.votes++
		at := v.CastAt.UTC()
		if c.lastVote == nil || at.After(*c.lastVote) {
			c.lastVote = &at
		}
		c.block = max(c.block, v.BlockNumber)
	}
	if err := s.insertTokenEvents(tx, rows); err != nil {
		return fmt.Errorf("insert token events: %w", err)
	}
	if len(delegations) > 0 {
		list := make([]delegationRow, 0, len(delegations))
		for _, d := range delegations {
			list = append(list, d)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Delegator < list[j].Delegator })
		if err := s.upsertDelegations(tx, list); err != nil {
			return fmt.Errorf("upsert delegations: %w", err)
		}
	}
	if len(changes) > 0 {
		// One upsert, no read: a row carries the batch's changes (the new
		// power where it moved, counts as deltas), and ON CONFLICT folds
		// them into what is stored. Reading the rows first made PostgreSQL
		// scan a table whose statistics a backfill outgrows.
		addrs := make([]string, 0, len(changes))
		for a := range changes {
			addrs = append(addrs, a)
		}
		sort.Strings(addrs)
		out := make([]delegateRow, 0, len(addrs))
		for _, a := range addrs {
			c := changes[a]
			r := delegateRow{DAO: b.DAO, Address: a, Power: "0", Delegators: c.delegators, VotesCast: c.votes,
				FirstPowerBlock: c.firstPower, LastVoteAt: c.lastVote, UpdatedBlock: c.block}
			if c.power != nil {
				r.Power, r.PowerBlock = *c.power, c.powerBlock
			}
			r.PowerKey = powerKey(r.Power)
			out = append(out, r)
		}
		if err := s.upsertDelegates(tx, out); err != nil {
			return fmt.Errorf("upsert delegates: %w", err)
		}
	}
	if len(totalDelta) > 0 {
		var last []powerRow
		if err := tx.Where("dao = ?", b.DAO).Order("block DESC").Limit(1).Find(&last).Error; err != nil {
			return fmt.Errorf("load delegated power: %w", err)
		}
		total := new(big.Int)
		if len(last) > 0 {
			total = dec(last[0].Total)
		}
		list := make([]powerRow, 0, len(totalDelta))
		for _, d := range totalDelta {
			total.Add(total, d.delta)
			list = append(list, powerRow{DAO: b.DAO, Block: d.block, At: d.at, Total: total.String()})
		}
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "dao"}, {Name: "block"}},
			DoUpdates: clause.AssignmentColumns([]string{"at", "total"}),
		}).CreateInBatches(list, s.rowsPerInsert()).Error; err != nil {
			return fmt.Errorf("record delegated power: %w", err)
		}
	}
	return nil
}

// tokenEventColumns are token_events' columns but its id, in the order
// insertTokenEvents binds them.
const tokenEventColumns = "dao, chain_id, block_number, tx_hash, log_index, kind, account, from_delegate, to_delegate, moved, previous_votes, new_votes, at"

// insertTokenEvents appends a batch's events to the event log in SQL of
// its own: GORM would ask for every row's id back (RETURNING) and build
// each row by reflection, which cost more than the database's work.
// PostgreSQL gets COPY (see copyTokenEvents); SQLite one prepared
// statement a row (see upsertDelegations).
func (s *Store) insertTokenEvents(tx *gorm.DB, rows []tokenEventRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.dialect.insertTokenEvents(tx, rows)
}

// inLogOrder reports whether rows, all of one DAO, are in strictly
// increasing (block, log index) order: no log twice.
func inLogOrder(rows []tokenEventRow) bool {
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if a.BlockNumber > b.BlockNumber || a.BlockNumber == b.BlockNumber && a.LogIndex >= b.LogIndex {
			return false
		}
	}
	return true
}

// copyTokenEvents writes rows with COPY, in the transaction q runs. COPY
// parses a binary row stream instead of planning an INSERT over column
// arrays: 4.0 against 8.5 us an event into a million-row log, measured in
// the same database. database/sql has no COPY, and does not hand out the
// connection under a transaction; pgx does, to a QueryRewriter passed as
// an Exec's first argument, before it sends anything: copyFrom runs the
// COPY there and leaves an empty statement behind.
func copyTokenEvents(ctx context.Context, q querier, rows []tokenEventRow) error {
	values := make([]any, 13)
	src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		values[0], values[1], values[2], values[3], values[4], values[5], values[6] =
			r.DAO, int64(r.ChainID), int64(r.BlockNumber), r.TxHash, int64(r.LogIndex), int16(r.Kind), r.Account
		values[7], values[8], values[9], values[10], values[11], values[12] =
			r.FromDelegate, r.ToDelegate, r.Moved, r.PreviousVotes, r.NewVotes, r.At
		return values, nil // COPY encodes a row before it asks for the next
	})
	cols := strings.Split(strings.ReplaceAll(tokenEventColumns, " ", ""), ",")
	_, err := q.ExecContext(ctx, "", &copyFrom{table: "token_events", columns: cols, rows: src})
	return err
}

// copyFrom is a COPY run through pgx's QueryRewriter hook (copyTokenEvents).
type copyFrom struct {
	table   string
	columns []string
	rows    pgx.CopyFromSource
}

// RewriteQuery implements pgx.QueryRewriter.
func (c *copyFrom) RewriteQuery(ctx context.Context, conn *pgx.Conn, _ string, _ []any) (string, []any, error) {
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{c.table}, c.columns, c.rows); err != nil {
		return "", nil, err
	}
	return "", nil, nil
}

// upsertDelegations writes each delegator's latest delegation of a batch
// (one row per delegator): on PostgreSQL one statement over column arrays,
// on SQLite one prepared statement per row. A multi-row upsert on SQLite
// keeps a statement journal, written to a temporary file, in case a row
// fails half-way; a single-row one needs none.
func (s *Store) upsertDelegations(tx *gorm.DB, list []delegationRow) error {
	const conflict = ` ON CONFLICT (dao, delegator) DO UPDATE SET delegate = excluded.delegate, since_block = excluded.since_block,
		since_at = excluded.since_at, tx_hash = excluded.tx_hash`
	return s.dialect.upsertDelegations(tx, list, conflict)
}

// upsertDelegates folds a batch's changes, one row per delegate, into the
// stored delegate rows (see applyTokens), as upsertDelegations writes.
func (s *Store) upsertDelegates(tx *gorm.DB, out []delegateRow) error {
	greatest := s.dialect.greatest()
	conflict := ` ON CONFLICT (dao, address) DO UPDATE SET
		power = CASE WHEN excluded.power_block > 0 THEN excluded.power ELSE delegates.power END,
		power_key = CASE WHEN excluded.power_block > 0 THEN excluded.power_key ELSE delegates.power_key END,
		power_block = ` + greatest + `(delegates.power_block, excluded.power_block),
		delegators = delegates.delegators + excluded.delegators,
		votes_cast = delegates.votes_cast + excluded.votes_cast,
		first_power_block = CASE WHEN delegates.first_power_block = 0 THEN excluded.first_power_block ELSE delegates.first_power_block END,
		last_vote_at = CASE WHEN delegates.last_vote_at IS NULL OR excluded.last_vote_at > delegates.last_vote_at THEN excluded.last_vote_at ELSE delegates.last_vote_at END,
		updated_block = ` + greatest + `(delegates.updated_block, excluded.updated_block)`
	const cols = "dao, address, power, power_key, power_block, delegators, votes_cast, first_power_block, last_vote_at, updated_block"
	return s.dialect.upsertDelegates(tx, out, cols, conflict)
}

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

// listedDelegate is the condition of a delegate listing: power or
// delegators. It is, word for word, the predicate of the listing indexes
// of migration 0010: a database walks a partial index only where it can
// prove that the query's condition implies the predicate, and a zero key
// bound as a parameter is not proved (PostgreSQL's generic plans).
var listedDelegate = `(power_key > '` + strings.Repeat("0", 78) + `' OR delegators > 0)`

// ListDelegates lists a DAO's delegates (accounts holding power or having
// delegators) by voting power, delegators or votes cast, largest first;
// before is the Next of the previous page.
func (s *Store) ListDelegates(ctx context.Context, dao, sortBy, before string, limit int) (core.DelegatePage, error) {
	limit = core.Page{Limit: limit}.PageLimit()
	col := map[string]string{core.SortVotingPower: "power_key", core.SortDelegators: "delegators", core.SortVotes: "votes_cast"}[sortBy]
	if col == "" {
		return core.DelegatePage{}, core.Errorf(core.ECodeInvalidRequest, "sort must be votingPower, delegators or votes")
	}
	// A page walks the sort's index of listed delegates (migration 0010)
	// in order. A later page reads two ranges of it, the rest of the
	// cursor's tie (the addresses after the cursor's) and the keys below
	// the cursor's, at most a page each, and orders their union: "after
	// the cursor" as one condition is no range of an index whose key and
	// address run opposite ways, and the database would walk from the
	// top of the listing to the cursor.
	db := s.db.WithContext(ctx)
	listed := `SELECT * FROM delegates WHERE dao = ? AND ` + listedDelegate
	order := ` ORDER BY ` + col + ` DESC, address LIMIT ?`
	var q *gorm.DB
	if before == "" {
		q = db.Raw(listed+order, dao, limit+1)
	} else {
		key, addr, err := decodeCursor(before)
		if err != nil {
			return core.DelegatePage{}, err
		}
		var v any = key
		if col != "power_key" {
			n, ok := new(big.Int).SetString(key, 10)
			if !ok || !n.IsInt64() {
				return core.DelegatePage{}, core.Errorf(core.ECodeInvalidRequest, "before is not a cursor of this listing")
			}
			v = n.Int64()
		}
		q = db.Raw(`SELECT * FROM (`+listed+` AND `+col+` = ? AND address > ?`+order+`) AS tie
			UNION ALL SELECT * FROM (`+listed+` AND `+col+` < ?`+order+`) AS below`+order,
			dao, v, addr, limit+1, dao, v, limit+1, limit+1)
	}
	var rows []delegateRow
	if err := q.Scan(&rows).Error; err != nil {
		return core.DelegatePage{}, fmt.Errorf("list delegates: %w", err)
	}
	out := core.DelegatePage{}
	if len(rows) > limit {
		rows = rows[:limit]
		out.Next = delegatesCursor(sortBy, rows[len(rows)-1])
	}
	total, created, err := s.delegateContext(ctx, dao)
	if err != nil {
		return core.DelegatePage{}, err
	}
	out.TotalPower = total.String()
	for _, r := range rows {
		out.Items = append(out.Items, r.domain(total, created))
	}
	return out, nil
}

// Delegate returns one account's delegate row; false if it never held
// power, had delegators or voted.
func (s *Store) Delegate(ctx context.Context, dao, address string) (core.Delegate, bool, error) {
	var rows []delegateRow
	if err := s.db.WithContext(ctx).Where("dao = ? AND address = ?", dao, address).Limit(1).Find(&rows).Error; err != nil {
		return core.Delegate{}, false, fmt.Errorf("get delegate: %w", err)
	}
	if len(rows) == 0 {
		return core.Delegate{}, false, nil
	}
	total, created, err := s.delegateContext(ctx, dao)
	if err != nil {
		return core.Delegate{}, false, err
	}
	return rows[0].domain(total, created), true, nil
}

// ListDelegators lists whom delegates to a delegate, by address; before is
// the last address of the previous page.
func (s *Store) ListDelegators(ctx context.Context, dao, delegate, before string, limit int) ([]core.Delegation, string, error) {
	limit = core.Page{Limit: limit}.PageLimit()
	q := s.db.WithContext(ctx).Where("dao = ? AND delegate = ?", dao, delegate).Order("delegator").Limit(limit + 1)
	if before != "" {
		q = q.Where("delegator > ?", before)
	}
	var rows []delegationRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, "", fmt.Errorf("list delegators: %w", err)
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[len(rows)-1].Delegator
	}
	out := make([]core.Delegation, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, next, nil
}

// Delegation returns whom an account delegates to; false if it never
// delegated.
func (s *Store) Delegation(ctx context.Context, dao, account string) (core.Delegation, bool, error) {
	var rows []delegationRow
	if err := s.db.WithContext(ctx).Where("dao = ? AND delegator = ?", dao, account).Limit(1).Find(&rows).Error; err != nil {
		return core.Delegation{}, false, fmt.Errorf("get delegation: %w", err)
	}
	if len(rows) == 0 {
		return core.Delegation{}, false, nil
	}
	return rows[0].domain(), true, nil
}

// ListVotesBy lists an account's votes in a DAO, newest first.
func (s *Store) ListVotesBy(ctx context.Context, dao, voter string, p core.Page) ([]core.VoteWithProposal, int64, error) {
	q := s.db.WithContext(ctx).Where("dao = ? AND voter = ?", dao, voter).Order("id DESC").Limit(p.PageLimit() + 1)
	if p.Before > 0 {
		q = q.Where("id < ?", p.Before)
	}
	var rows []voteRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list votes by %s: %w", voter, err)
	}
	var next int64
	if len(rows) > p.PageLimit() {
		rows = rows[:p.PageLimit()]
		next = rows[len(rows)-1].ID
	}
	votes, err := s.domainVotes(ctx, rows)
	if err != nil {
		return nil, 0, err
	}
	out := make([]core.VoteWithProposal, len(rows))
	for i, r := range rows {
		out[i].Vote = votes[i]
		if pr, ok, err := s.Proposal(ctx, dao, r.ProposalID); err != nil {
			return nil, 0, err
		} else if ok {
			out[i].ProposalTitle, out[i].ProposalState = pr.Title, pr.State
		}
	}
	return out, next, nil
}

// PowerAt returns the DAO's total delegated power at a block (clock
// "blocknumber") or a Unix time (clock "timestamp"): after the last block
// at or before it that changed it.
func (s *Store) PowerAt(ctx context.Context, dao, clock string, at uint64) (string, error) {
	q := s.db.WithContext(ctx).Where("dao = ?", dao).Order("block DESC").Limit(1)
	if clock == core.ClockTimestamp {
		q = q.Where("at <= ?", time.Unix(int64(at), 0).UTC())
	} else {
		// The governor's clock at the row's block, which is not the
		// block number on an L2 token's clock (clock_points).
		q = q.Where(fmt.Sprintf(timepointExpr, "delegated_powers", "block")+" <= ?", at)
	}
	var rows []powerRow
	if err := q.Find(&rows).Error; err != nil {
		return "", fmt.Errorf("delegated power: %w", err)
	}
	if len(rows) == 0 {
		return "0", nil
	}
	return rows[0].Total, nil
}

// delegateContext is what a delegate row needs to be served: the DAO's
// total delegated power now, and the creation blocks of its proposals.
func (s *Store) delegateContext(ctx context.Context, dao string) (*big.Int, []uint64, error) {
	var rows []powerRow
	if err := s.db.WithContext(ctx).Where("dao = ?", dao).Order("block DESC").Limit(1).Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("delegated power: %w", err)
	}
	total := new(big.Int)
	if len(rows) > 0 {
		total = dec(rows[0].Total)
	}
	var created []uint64
	if err := s.db.WithContext(ctx).Model(&proposalRow{}).Where("dao = ?", dao).Order("created_block").Pluck("created_block", &created).Error; err != nil {
		return nil, nil, fmt.Errorf("proposal blocks: %w", err)
	}
	return total, created, nil
}

func (r delegateRow) domain(total *big.Int, created []uint64) core.Delegate {
	d := core.Delegate{DAO: r.DAO, Address: r.Address, VotingPower: r.Power, Delegators: r.Delegators, VotesCast: r.VotesCast,
		FirstPowerBlock: r.FirstPowerBlock, LastVoteAt: r.LastVoteAt, UpdatedBlock: r.UpdatedBlock}
	if total.Sign() > 0 {
		share, _ := new(big.Rat).SetFrac(dec(r.Power), total).Float64()
		d.Share = share
	}
	if r.FirstPowerBlock > 0 {
		i := sort.Search(len(created), func(i int) bool { return created[i] >= r.FirstPowerBlock })
		d.ProposalsSince = int64(len(created) - i)
	}
	if d.ProposalsSince > 0 {
		d.Participation = min(1, float64(d.VotesCast)/float64(d.ProposalsSince))
	}
	return d
}

func (r delegationRow) domain() core.Delegation {
	return core.Delegation{DAO: r.DAO, Delegator: r.Delegator, Delegate: r.Delegate, SinceBlock: r.SinceBlock, Since: r.SinceAt.UTC(), TxHash: r.TxHash}
}

// delegatesCursor is the before of the page after r in a listing by
// sortBy.
func delegatesCursor(sortBy string, r delegateRow) string {
	key := map[string]string{core.SortVotingPower: r.PowerKey, core.SortDelegators: fmt.Sprint(r.Delegators), core.SortVotes: fmt.Sprint(r.VotesCast)}[sortBy]
	return encodeCursor(key, r.Address)
}

// encodeCursor and decodeCursor make a delegate listing's keyset position
// an opaque string.
func encodeCursor(key, addr string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key + "|" + addr))
}

func decodeCursor(c string) (string, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	key, addr, ok := strings.Cut(string(raw), "|")
	if err != nil || !ok || key == "" || len(addr) != 42 {
		return "", "", core.Errorf(core.ECodeInvalidRequest, "before is not a cursor of this listing")
	}
	return key, addr, nil
}

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
