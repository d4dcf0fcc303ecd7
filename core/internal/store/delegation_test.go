package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// token is a voting token's delegation bookkeeping, as ERC20Votes keeps it:
// it turns delegations and transfers into the events the token emits, in
// the order it emits them.
type token struct {
	dao       string
	balance   map[string]*big.Int
	delegate  map[string]string // "" or zero: none
	votes     map[string]*big.Int
	events    []core.TokenEvent
	block     uint64
	tx, index int
}

const zero = "0x0000000000000000000000000000000000000000"

func newToken(dao string) *token {
	return &token{dao: dao, balance: map[string]*big.Int{}, delegate: map[string]string{}, votes: map[string]*big.Int{}}
}

func (k *token) at(block uint64) *token { k.block = block; return k }

func (k *token) txHash() string { return fmt.Sprintf("0x%064x", k.tx) }

func (k *token) emit(e core.TokenEvent) {
	e.DAO, e.ChainID, e.Token, e.BlockNumber = k.dao, 1337, "0x00000000000000000000000000000000000000Aa", k.block
	e.BlockHash, e.TxHash, e.LogIndex, e.At = fmt.Sprintf("0x%x", k.block), k.txHash(), uint(k.index), time.Unix(1_700_000_000+int64(k.block)*12, 0)
	k.index++
	k.events = append(k.events, e)
}

func (k *token) bal(a string) *big.Int {
	if k.balance[a] == nil {
		k.balance[a] = new(big.Int)
	}
	return k.balance[a]
}

// move moves amount of votes from one delegate to another, with their
// DelegateVotesChanged.
func (k *token) move(from, to string, amount *big.Int) {
	if from == to || amount.Sign() == 0 {
		return
	}
	for _, side := range []struct {
		d    string
		sign int
	}{{from, -1}, {to, 1}} {
		if side.d == "" || side.d == zero {
			continue
		}
		old := new(big.Int).Set(k.votesOf(side.d))
		n := new(big.Int).Add(old, new(big.Int).Mul(amount, big.NewInt(int64(side.sign))))
		k.votes[side.d] = n
		k.emit(core.TokenEvent{Kind: core.TypeDelegateVotesChanged, Delegate: side.d, PreviousVotes: old.String(), NewVotes: n.String()})
	}
}

func (k *token) votesOf(a string) *big.Int {
	if k.votes[a] == nil {
		k.votes[a] = new(big.Int)
	}
	return k.votes[a]
}

func (k *token) delegateTo(a, to string) *token {
	k.tx++
	old := k.delegate[a]
	if old == "" {
		old = zero
	}
	k.delegate[a] = to
	moved := ""
	if old != to && k.bal(a).Sign() > 0 {
		moved = k.bal(a).String()
	}
	k.emit(core.TokenEvent{Kind: core.TypeDelegateChanged, Delegator: a, FromDelegate: old, ToDelegate: to, Moved: moved})
	k.move(old, to, k.bal(a))
	return k
}

func (k *token) transfer(from, to string, amount int64) *token {
	k.tx++
	v := big.NewInt(amount)
	if from != "" {
		k.bal(from).Sub(k.bal(from), v)
	}
	k.bal(to).Add(k.bal(to), v)
	k.move(k.delegate[from], k.delegate[to], v)
	return k
}

// take returns the events emitted since the last take.
func (k *token) take() []core.TokenEvent {
	out := k.events
	k.events = nil
	return out
}

func addr(i int) string { return fmt.Sprintf("0x%040X", 0xA0+i) }

// delegationAnswers is everything the API serves of a DAO's delegation.
type delegationAnswers struct {
	Leaderboards map[string][]core.DelegatePage
	Delegates    map[string]*core.Delegate
	Delegations  map[string]*core.Delegation
	Delegators   map[string][]core.Delegation
	Power        map[string]string
	Cursor       uint64
}

func answers(t *testing.T, s *store.Store, dao string, accounts []string, pageSize int, powerAt []uint64) delegationAnswers {
	t.Helper()
	ctx := context.Background()
	a := delegationAnswers{Leaderboards: map[string][]core.DelegatePage{}, Delegates: map[string]*core.Delegate{},
		Delegations: map[string]*core.Delegation{}, Delegators: map[string][]core.Delegation{}, Power: map[string]string{}}
	for _, sortBy := range []string{core.SortVotingPower, core.SortDelegators, core.SortVotes} {
		before := ""
		for {
			p, err := s.ListDelegates(ctx, dao, sortBy, before, pageSize)
			if err != nil {
				t.Fatal(err)
			}
			a.Leaderboards[sortBy] = append(a.Leaderboards[sortBy], p)
			if p.Next == "" {
				break
			}
			before = p.Next
		}
	}
	for _, acct := range accounts {
		if d, ok, err := s.Delegate(ctx, dao, acct); err != nil {
			t.Fatal(err)
		} else if ok {
			a.Delegates[acct] = &d
		}
		if d, ok, err := s.Delegation(ctx, dao, acct); err != nil {
			t.Fatal(err)
		} else if ok {
			a.Delegations[acct] = &d
		}
		before := ""
		for {
			list, next, err := s.ListDelegators(ctx, dao, acct, before, pageSize)
			if err != nil {
				t.Fatal(err)
			}
			a.Delegators[acct] = append(a.Delegators[acct], list...)
			if next == "" {
				break
			}
			before = next
		}
	}
	for _, b := range powerAt {
		p, err := s.PowerAt(ctx, dao, core.ClockBlockNumber, b)
		if err != nil {
			t.Fatal(err)
		}
		a.Power[fmt.Sprint(b)] = p
	}
	// The cursor's own row, as every schema since 0003 has it (Cursor reads
	// the columns of the latest, and TestDelegationSurvivesUpgrade asks on
	// 0008's); these DAOs never join a shared cursor.
	if err := s.DB().Raw(`SELECT block FROM chain_cursors WHERE dao = ?`, dao).Scan(&a.Cursor).Error; err != nil {
		t.Fatal(err)
	}
	return a
}

// golden compares got, as indented JSON, with testdata/name; -update
// rewrites the file.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	raw, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	goldenBytes(t, name, raw)
}

// goldenSum is golden for answers too long to keep: the file holds their
// SHA-256, and a mismatch leaves the answers in name.got.
func goldenSum(t *testing.T, name string, got any) {
	t.Helper()
	raw, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if !*update {
		defer func() {
			if t.Failed() {
				os.WriteFile(filepath.Join("testdata", name+".got"), raw, 0o644)
			}
		}()
	}
	goldenBytes(t, name, []byte(hex.EncodeToString(sum[:])))
}

func goldenBytes(t *testing.T, name string, raw []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), raw) {
		os.WriteFile(path+".got", raw, 0o644)
		t.Errorf("answers differ from %s (got in %s.got)", path, path)
	}
}

// applier applies batches of one DAO in order.
type applier struct {
	t    *testing.T
	s    *store.Store
	dao  string
	prev *core.Cursor
}

func (p *applier) apply(to uint64, events []core.TokenEvent, votes ...core.Vote) {
	p.t.Helper()
	b := core.IndexBatch{DAO: p.dao, ChainID: 1337, Prev: p.prev, Cursor: core.Cursor{Block: to, Hash: fmt.Sprintf("0x%x", to)},
		TokenEvents: events, Votes: votes}
	seen := map[uint64]bool{}
	for _, e := range events {
		if !seen[e.BlockNumber] {
			seen[e.BlockNumber] = true
			b.Blocks = append(b.Blocks, core.BlockRef{Number: e.BlockNumber, Hash: e.BlockHash})
		}
	}
	if !seen[to] {
		b.Blocks = append(b.Blocks, core.BlockRef{Number: to, Hash: b.Cursor.Hash})
	}
	if err := p.s.ApplyBatch(context.Background(), b); err != nil {
		p.t.Fatal(err)
	}
	p.prev = &b.Cursor
}

func (p *applier) rollback(to uint64) {
	p.t.Helper()
	if err := p.s.Rollback(context.Background(), 1337, core.BlockRef{Number: to, Hash: fmt.Sprintf("0x%x", to)}); err != nil {
		p.t.Fatal(err)
	}
	p.prev = &core.Cursor{Block: to, Hash: fmt.Sprintf("0x%x", to)}
}

func vote(dao, voter string, block uint64, proposal string) core.Vote {
	return core.Vote{DAO: dao, ChainID: 1337, ProposalID: proposal, Voter: voter, Support: 1, Weight: "1",
		BlockNumber: block, BlockHash: fmt.Sprintf("0x%x", block), TxHash: fmt.Sprintf("0x%064x", 1_000_000+block), CastAt: time.Unix(1_700_000_000+int64(block)*12, 0)}
}

// TestDelegationAnswers indexes a token's delegations (self-delegation,
// delegation to another, re-delegation, undelegation, transfers between
// holders of different delegates, votes) in batches, rolls back a
// re-delegation, indexes other blocks in its place, and compares every
// answer the API serves with testdata/delegation_answers.json after each
// step, on both stores: the same file for both.
func TestDelegationAnswers(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		const dao = "tok"
		k := newToken(dao)
		p := &applier{t: t, s: s, dao: dao}
		a, b, c, d, e := addr(1), addr(2), addr(3), addr(4), addr(5)
		accounts := []string{a, b, c, d, e, addr(6)}
		powerAt := []uint64{0, 2, 3, 4, 12, 13, 15, 30}
		// A proposal for the delegates' participation.
		if err := s.ApplyBatch(context.Background(), core.IndexBatch{DAO: dao, ChainID: 1337, Cursor: core.Cursor{Block: 1, Hash: "0x1"},
			Proposals: []core.Proposal{proposal(dao, "1", 1, core.ProposalActive, "0")}}); err != nil {
			t.Fatal(err)
		}
		p.prev = &core.Cursor{Block: 1, Hash: "0x1"}
		k.at(2).transfer("", a, 100).transfer("", b, 50).transfer("", c, 70)
		k.at(2).delegateTo(a, a)
		k.at(3).delegateTo(b, a)
		k.at(4).delegateTo(c, d)
		p.apply(10, k.take(), vote(dao, a, 5, "1"))
		var got []delegationAnswers
		got = append(got, answers(t, s, dao, accounts, 2, powerAt))

		k.at(12).delegateTo(b, d)
		k.at(13).transfer(a, c, 30)
		k.at(14).delegateTo(e, e)
		k.at(15).delegateTo(c, zero)
		p.apply(20, k.take(), vote(dao, d, 16, "1"))
		got = append(got, answers(t, s, dao, accounts, 2, powerAt))

		// A reorganisation undoes block 12 onwards: b's re-delegation.
		p.rollback(11)
		after := answers(t, s, dao, accounts, 2, powerAt)
		if dl := after.Delegations[b]; dl == nil || dl.Delegate != a || dl.SinceBlock != 3 {
			t.Fatalf("b's delegation after the rollback: %+v", dl)
		}
		if dg := after.Delegates[a]; dg == nil || dg.VotingPower != "150" || dg.Delegators != 2 {
			t.Fatalf("a after the rollback: %+v", dg)
		}
		got = append(got, after)

		// Other blocks take their place.
		k = newToken(dao)
		k.tx = 100
		k.at(2).transfer("", a, 100).transfer("", b, 50).transfer("", c, 70)
		k.delegate[a], k.delegate[b], k.delegate[c] = a, a, d
		k.votes[a], k.votes[d] = big.NewInt(150), big.NewInt(70)
		k.take()
		k.at(13).delegateTo(addr(6), b)
		k.at(13).transfer(c, addr(6), 20)
		k.at(14).delegateTo(b, c)
		p.apply(25, k.take())
		got = append(got, answers(t, s, dao, accounts, 2, powerAt))
		golden(t, "delegation_answers.json", got)
	})
}

// TestDelegationAnswersMany indexes a random token history of 200 holders
// (seeded: the same on every run) in batches of 700 events, longer than
// one statement's rows, rolls back the last 40 blocks, and compares the
// answers with those whose SHA-256 is testdata/delegation_answers_many.sha256.
func TestDelegationAnswersMany(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		const dao = "many"
		rng := rand.New(rand.NewPCG(14, 1))
		k := newToken(dao)
		p := &applier{t: t, s: s, dao: dao}
		var accounts []string
		for i := range 200 {
			accounts = append(accounts, addr(i))
		}
		var votes []core.Vote
		block := uint64(1)
		for len(k.events) < 700*5 {
			block += uint64(rng.IntN(2))
			k.at(block)
			from, to := accounts[rng.IntN(len(accounts))], accounts[rng.IntN(len(accounts))]
			switch r := rng.IntN(10); {
			case r < 3:
				k.transfer("", to, int64(1+rng.IntN(1000)))
			case r < 6:
				if k.bal(from).Sign() > 0 {
					k.transfer(from, to, 1+rng.Int64N(k.bal(from).Int64()))
				}
			case r < 9:
				if rng.IntN(8) == 0 {
					to = zero
				}
				k.delegateTo(from, to)
			default:
				v := vote(dao, from, block, "1")
				v.LogIndex = uint(len(votes))
				votes = append(votes, v)
			}
		}
		var got []delegationAnswers
		events := k.take()
		var done uint64
		for i := 0; i < len(events); {
			// About 700 events a batch, ending at a block boundary.
			end := min(i+700, len(events))
			last := events[end-1].BlockNumber
			for end < len(events) && events[end].BlockNumber == last {
				end++
			}
			if end == len(events) {
				last = block
			}
			var vs []core.Vote
			for _, v := range votes {
				if v.BlockNumber > done && v.BlockNumber <= last {
					vs = append(vs, v)
				}
			}
			p.apply(last, events[i:end], vs...)
			done, i = last, end
		}
		got = append(got, answers(t, s, dao, accounts, 50, []uint64{block / 2, block - 40, block}))
		t.Logf("%d events to block %d, %d votes", len(events), block, len(votes))
		// Pages of 7 end inside ties, at every sort: joined, they are the
		// listing in one page.
		for _, sortBy := range []string{core.SortVotingPower, core.SortDelegators, core.SortVotes} {
			all, err := s.ListDelegates(context.Background(), dao, sortBy, "", 500)
			if err != nil || all.Next != "" {
				t.Fatalf("one page by %s: next %q, %v", sortBy, all.Next, err)
			}
			var joined []core.Delegate
			for before := ""; ; {
				page, err := s.ListDelegates(context.Background(), dao, sortBy, before, 7)
				if err != nil {
					t.Fatal(err)
				}
				joined = append(joined, page.Items...)
				if before = page.Next; before == "" {
					break
				}
			}
			if !reflect.DeepEqual(joined, all.Items) {
				t.Fatalf("by %s, pages of 7 give %d delegates, one page %d, or another order", sortBy, len(joined), len(all.Items))
			}
		}
		p.rollback(block - 40)
		got = append(got, answers(t, s, dao, accounts, 50, []uint64{block / 2, block - 40, block}))
		goldenSum(t, "delegation_answers_many.sha256", got)
	})
}

// TestDelegationSurvivesUpgrade writes the delegation history of
// TestDelegationAnswers on the schema of migration 0008, migrates the
// store to the latest schema, and compares the answers with those of the
// same history written on the latest schema from the start (the code reads
// tables that later migrations add, such as clock_points, so it cannot
// answer on the old schema itself), then rolls a re-delegation back on the
// new schema.
func TestDelegationSurvivesUpgrade(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			s, _ := be.open(t)
			fresh, _ := be.open(t)
			if err := store.MigrateTo(s, "0008_delegation"); err != nil {
				t.Fatal(err)
			}
			const dao = "tok"
			a, b, c, d, e := addr(1), addr(2), addr(3), addr(4), addr(5)
			accounts := []string{a, b, c, d, e}
			powerAt := []uint64{0, 2, 3, 4, 12, 13, 15, 30}
			var p *applier
			for _, st := range []*store.Store{s, fresh} {
				k := newToken(dao)
				p = &applier{t: t, s: st, dao: dao}
				k.at(2).transfer("", a, 100).transfer("", b, 50).transfer("", c, 70)
				k.at(2).delegateTo(a, a)
				k.at(3).delegateTo(b, a)
				k.at(4).delegateTo(c, d)
				p.apply(10, k.take())
				k.at(12).delegateTo(b, d)
				k.at(15).delegateTo(e, e)
				p.apply(20, k.take())
			}
			if err := store.MigrateTo(s, store.LatestMigration()); err != nil {
				t.Fatal(err)
			}
			want := answers(t, fresh, dao, accounts, 2, powerAt)
			if got := answers(t, s, dao, accounts, 2, powerAt); !reflect.DeepEqual(want, got) {
				t.Fatalf("answers after the upgrade differ\nupgraded %+v\nfresh    %+v", got, want)
			}
			p = &applier{t: t, s: s, dao: dao}
			p.rollback(11)
			if dl := answers(t, s, dao, accounts, 2, powerAt).Delegations[b]; dl == nil || dl.Delegate != a {
				t.Fatalf("b's delegation after the rollback: %+v", dl)
			}
		})
	}
}

// TestTokenEventAlreadyStored applies a batch one of whose events the log
// already holds (written behind the indexer's back): it is kept once, and
// the batch applies, as an event indexed twice would be.
func TestTokenEventAlreadyStored(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		const dao = "tok"
		k := newToken(dao)
		k.at(5).transfer("", addr(1), 10).delegateTo(addr(1), addr(2))
		events := k.take()
		e := events[0]
		if err := s.DB().Exec(`INSERT INTO token_events (dao, chain_id, block_number, tx_hash, log_index, kind, account, from_delegate, to_delegate, moved, previous_votes, new_votes, at)
			VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, '', '', ?)`, dao, e.ChainID, e.BlockNumber, e.TxHash, e.LogIndex, e.Delegator, e.FromDelegate, e.ToDelegate, e.Moved, e.At.UTC()).Error; err != nil {
			t.Fatal(err)
		}
		p := &applier{t: t, s: s, dao: dao}
		p.apply(10, events)
		var n int64
		if err := s.DB().Raw(`SELECT COUNT(*) FROM token_events WHERE dao = ?`, dao).Scan(&n).Error; err != nil || n != int64(len(events)) {
			t.Fatalf("%d events stored (%v), want %d", n, err, len(events))
		}
		if d, ok, err := s.Delegate(context.Background(), dao, addr(2)); err != nil || !ok || d.VotingPower != "10" || d.Delegators != 1 {
			t.Fatalf("delegate %+v %v %v", d, ok, err)
		}
	})
}

// TestDelegatesListingPlans asks each store for its plan of the statement
// that a page of a delegate listing runs, a first page and a later one,
// by each sort: it walks the sort's index of listed delegates (migration
// 0010) and reads no whole table; a first page sorts nothing, and a later
// page starts its walk at the cursor's key. A listing that stopped
// matching the indexes' predicate would still answer right, after sorting
// a DAO's delegates; one that filtered by its cursor would walk from the
// top. PostgreSQL is told to avoid sorts and full scans where it has
// another way, so that the few rows here do not decide its plan.
func TestDelegatesListingPlans(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store, _ string) {
		const dao = "tok"
		k := newToken(dao)
		p := &applier{t: t, s: s, dao: dao}
		for i := range 6 {
			k.at(2).transfer("", addr(i), int64(10+i)).delegateTo(addr(i), addr(i%3))
		}
		p.apply(10, k.take(), vote(dao, addr(1), 10, "1"))
		type statement struct {
			sql  string
			vars []any
		}
		var ran []statement
		if err := s.DB().Callback().Row().After("gorm:row").Register("test:plans", func(db *gorm.DB) {
			if sql := db.Statement.SQL.String(); strings.Contains(sql, "FROM delegates") {
				ran = append(ran, statement{sql, slices.Clone(db.Statement.Vars)})
			}
		}); err != nil {
			t.Fatal(err)
		}
		sqlDB, err := s.DB().DB()
		if err != nil {
			t.Fatal(err)
		}
		plan := func(st statement) string {
			t.Helper()
			ctx := context.Background()
			tx, err := sqlDB.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			explain := "EXPLAIN QUERY PLAN "
			if s.Dialect() == store.Postgres {
				explain = "EXPLAIN "
				for _, q := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off", "SET LOCAL enable_sort = off"} {
					if _, err := tx.ExecContext(ctx, q); err != nil {
						t.Fatal(err)
					}
				}
			}
			rows, err := tx.QueryContext(ctx, explain+st.sql, st.vars...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			var lines []string
			for rows.Next() {
				vals := make([]any, len(cols))
				for i := range vals {
					vals[i] = new(any)
				}
				if err := rows.Scan(vals...); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, fmt.Sprint(*vals[len(vals)-1].(*any)))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return strings.Join(lines, "\n")
		}
		for sortBy, by := range map[string]struct{ index, key string }{
			core.SortVotingPower: {"ix_delegates_listed_power", "power_key"},
			core.SortDelegators:  {"ix_delegates_listed_delegators", "delegators"},
			core.SortVotes:       {"ix_delegates_listed_votes", "votes_cast"},
		} {
			// A later page starts below the cursor's key: the key bounds
			// the walk (SQLite "power_key<?", PostgreSQL
			// "(power_key)::text < $6"), it does not filter it from the top.
			below := regexp.MustCompile(`\b` + by.key + `(\)::text)? ?<`)
			ran = nil
			first, err := s.ListDelegates(context.Background(), dao, sortBy, "", 2)
			if err != nil || first.Next == "" {
				t.Fatalf("first page by %s: next %q, %v", sortBy, first.Next, err)
			}
			if _, err := s.ListDelegates(context.Background(), dao, sortBy, first.Next, 2); err != nil {
				t.Fatal(err)
			}
			if len(ran) != 2 {
				t.Fatalf("by %s: %d statements on delegates, want one a page", sortBy, len(ran))
			}
			for i, st := range ran {
				got := plan(st)
				whole := strings.Contains(got, "Seq Scan") || strings.Contains(got, "SCAN delegates")
				sorts := strings.Contains(got, "Sort") || strings.Contains(got, "TEMP B-TREE")
				if !strings.Contains(got, by.index) || whole || (i == 0 && sorts) || (i == 1 && !below.MatchString(got)) {
					t.Errorf("by %s, page %d does not walk %s:\n%s\n%s", sortBy, i+1, by.index, st.sql, got)
				}
			}
		}
	})
}
