package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// Reading delegation: the delegate leaderboard with its cursors, one
// delegate, its delegators, an account's delegation and votes, and the
// DAO's delegated power at a block.

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
