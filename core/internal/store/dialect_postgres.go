package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store/migrations"
)

// postgres is the dialect of PostgreSQL: row locks for what a transaction
// reads to update, claimers that skip each other's locked rows, batches
// sent as arrays (unnest) or COPY in one statement, and advisory locks
// between processes sharing the database.
type postgres struct{}

func (postgres) name() Dialect { return Postgres }

func (postgres) configurePool(db *sql.DB, maxOpen int) {
	if maxOpen <= 0 {
		maxOpen = 20
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxIdleTime(5 * time.Minute)
}

// tryChainLock takes a session advisory lock on a connection of its own,
// which the lease keeps until released; a heartbeat notices a lost session.
func (postgres) tryChainLock(ctx context.Context, s *Store, chainID uint64, l *ChainLease) (bool, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return false, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("chain lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, chainLockKey(chainID)).Scan(&ok); err != nil {
		conn.Close()
		return false, fmt.Errorf("chain lock: %w", err)
	}
	if !ok {
		conn.Close()
		return false, nil
	}
	l.conn = conn
	l.release = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// A failed unlock is undone by the close: the lock is the session's.
		_, _ = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, chainLockKey(chainID))
		conn.Close()
	}
	go l.heartbeat()
	return true, nil
}

func (postgres) migrate(ctx context.Context, db *gorm.DB) error {
	// Several govgate processes may start at once: one migrates, the
	// others wait for it.
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(727100001)").Error; err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if err := migrations.New(tx).Migrate(); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	})
}

// bindFrom rewrites ? placeholders as $first, $first+1 …. The queries it
// is given hold no ? inside literals.
func (postgres) bindFrom(query string, first int) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := first - 1
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

func (postgres) containsFormat() string { return "strpos(%s, ?) > 0" }

// lockLinesPG locks ordered webhooks' rows ($1, sorted) for promoting
// their lines, in id order. FOR NO KEY UPDATE is what an UPDATE of the row
// takes anyway (a completion's failure streak), so a transaction that
// updated the row first needs no stronger lock; it conflicts with itself
// and with the fan-out's FOR SHARE (subscribedFanOutPG), which is what
// keeps a line's promotions and its new arrivals from missing each other.
const lockLinesPG = `SELECT id FROM webhooks WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE`

// promoteLinesPG is promoteLines in one statement, run after lockLinesPG in
// the same transaction: read committed gives it a snapshot taken after the
// lock, so it sees every line change the lock waited for. For each
// ordered webhook of $1 that is active ($3) and whose head is not pending
// or in flight, the first waiting delivery becomes pending, due at $2, and
// the webhook's ordered_head names it (0 when nothing waits). The head's state
// is looked up by primary key and compared outside the lookup, so the
// planner never matches it to the partial index of unfinished deliveries.
// It returns how many it promoted.
const promoteLinesPG = promoteLinesHeadPG + `
	p AS (UPDATE deliveries SET state = 'pending', next_attempt_at = $2, updated_at = $2
		FROM nx WHERE deliveries.id = nx.next AND deliveries.state = 'waiting' RETURNING deliveries.id)
	SELECT (SELECT count(*) FROM p)`

// handOnLinesPG is promoteLinesPG leasing the first $4 of the new heads
// (by id) to the caller, in flight under token $5 until $6, as a claim
// would, and returning them as a claim does (claimedColumns): the
// dispatcher that recorded a line's head is handed the next one without a
// claim of its own. The heads beyond $4 are pending, as promoteLinesPG
// leaves them.
const handOnLinesPG = promoteLinesHeadPG + `
	p AS (UPDATE deliveries SET state = CASE WHEN k.leased THEN 'in_flight' ELSE 'pending' END,
			lease_token = CASE WHEN k.leased THEN $5::text ELSE '' END,
			next_attempt_at = CASE WHEN k.leased THEN $6::timestamptz ELSE $2::timestamptz END,
			attempts = deliveries.attempts + CASE WHEN k.leased THEN 1 ELSE 0 END, updated_at = $2
		FROM (SELECT next, row_number() OVER (ORDER BY next) <= $4 AS leased FROM nx WHERE next <> 0) AS k
		WHERE deliveries.id = k.next AND deliveries.state = 'waiting'
		RETURNING deliveries.id, deliveries.notification_id, deliveries.webhook_id, deliveries.attempts, deliveries.lease_token)
	SELECT ` + claimedColumns + `
	FROM p AS c JOIN notifications n ON n.id = c.notification_id JOIN webhooks w ON w.id = c.webhook_id
	WHERE c.lease_token <> ''`

// promoteLinesHeadPG is what promoteLinesPG and handOnLinesPG share: the
// lines without a head (headless), the first waiting delivery of each
// (nx, 0 for none) and the webhooks' ordered_head set to it (h).
const promoteLinesHeadPG = `WITH headless AS (SELECT wh.id FROM webhooks wh
		WHERE wh.id = ANY($1::bigint[]) AND wh.ordered = 1 AND wh.state = $3
			AND COALESCE((SELECT d.state FROM deliveries d WHERE d.id = wh.ordered_head), '') NOT IN ('pending', 'in_flight')),
	nx AS MATERIALIZED (SELECT headless.id, COALESCE((SELECT d.id FROM deliveries d WHERE d.webhook_id = headless.id AND d.state = 'waiting' ORDER BY d.id LIMIT 1), 0) AS next
		FROM headless),
	h AS (UPDATE webhooks SET ordered_head = nx.next FROM nx WHERE webhooks.id = nx.id AND webhooks.ordered_head <> nx.next RETURNING webhooks.id),`

// lockLines runs lockLinesPG in tx.
func (postgres) lockLines(tx *gorm.DB, ids []int64) error {
	if _, err := txQuerier(tx).ExecContext(tx.Statement.Context, lockLinesPG, ids); err != nil {
		return fmt.Errorf("lock ordered webhooks: %w", err)
	}
	return nil
}

// promoteLines locks the lines' webhooks (again, at no cost, if the
// transaction already did), then promotes in one statement: two round
// trips whatever the number of lines.
func (p postgres) promoteLines(tx *gorm.DB, ids []int64, now time.Time) (int, error) {
	if err := p.lockLines(tx, ids); err != nil {
		return 0, fmt.Errorf("promote lines: %w", err)
	}
	q, ctx := txQuerier(tx), tx.Statement.Context
	rows, err := q.QueryContext(ctx, promoteLinesPG, ids, now, string(core.WebhookActive))
	if err != nil {
		return 0, fmt.Errorf("promote lines: %w", err)
	}
	defer rows.Close()
	var n int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, fmt.Errorf("promote lines: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("promote lines: %w", err)
	}
	return n, nil
}

func (postgres) lockForUpdate(q *gorm.DB) *gorm.DB {
	return q.Clauses(clause.Locking{Strength: "UPDATE"})
}

func (postgres) serializeSeeding(tx *gorm.DB) error {
	return tx.Exec("SELECT pg_advisory_xact_lock(727100002)").Error
}

func (postgres) greatest() string { return "GREATEST" }

func (postgres) rowsPerInsert() int { return 500 }

func (postgres) tableBytes(ctx context.Context, db *gorm.DB, tables ...string) (int64, error) {
	var n int64
	for _, t := range tables {
		var v int64
		if err := db.WithContext(ctx).Raw(`SELECT pg_total_relation_size(?::regclass)`, t).Scan(&v).Error; err != nil {
			return 0, fmt.Errorf("size of %s: %w", t, err)
		}
		n += v
	}
	return n, nil
}

func (postgres) insertTokenEvents(tx *gorm.DB, rows []tokenEventRow) error {
	q, ctx := txQuerier(tx), tx.Statement.Context
	// COPY cannot skip a row that is there already, as the INSERT
	// below does; none is, unless the store was changed behind the
	// indexer's back, and the cursor row the batch holds locked keeps
	// other writers of the DAO out until it commits.
	var taken bool
	first, last := rows[0], rows[len(rows)-1]
	if err := tx.Statement.ConnPool.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM token_events WHERE chain_id = $1 AND block_number BETWEEN $2 AND $3 AND dao = $4)`,
		int64(first.ChainID), int64(first.BlockNumber), int64(last.BlockNumber), first.DAO).Scan(&taken); err != nil {
		return err
	}
	if !taken && inLogOrder(rows) {
		return copyTokenEvents(ctx, q, rows)
	}
	n := len(rows)
	block, logIndex := make([]int64, n), make([]int64, n)
	kind := make([]int16, n)
	txHash, account, from, to, moved, prev, next := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	at := make([]time.Time, n)
	for i, r := range rows {
		block[i], logIndex[i], kind[i] = int64(r.BlockNumber), int64(r.LogIndex), int16(r.Kind)
		txHash[i], account[i], from[i], to[i], moved[i], prev[i], next[i] = r.TxHash, r.Account, r.FromDelegate, r.ToDelegate, r.Moved, r.PreviousVotes, r.NewVotes
		at[i] = r.At
	}
	_, err := q.ExecContext(ctx, `INSERT INTO token_events (`+tokenEventColumns+`)
		SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[], $5::bigint[], $6::smallint[], $7::text[], $8::text[], $9::text[],
			$10::text[], $11::text[], $12::text[], $13::timestamptz[])
		ON CONFLICT DO NOTHING`,
		first.DAO, int64(first.ChainID), block, txHash, logIndex, kind, account, from, to, moved, prev, next, at)
	return err
}

func (postgres) upsertDelegations(tx *gorm.DB, list []delegationRow, conflict string) error {
	ctx := tx.Statement.Context
	n := len(list)
	delegator, delegate, txHash := make([]string, n), make([]string, n), make([]string, n)
	since, at := make([]int64, n), make([]time.Time, n)
	for i, d := range list {
		delegator[i], delegate[i], since[i], at[i], txHash[i] = d.Delegator, d.Delegate, int64(d.SinceBlock), d.SinceAt, d.TxHash
	}
	_, err := txQuerier(tx).ExecContext(ctx, `INSERT INTO delegations (dao, delegator, delegate, since_block, since_at, tx_hash)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::timestamptz[], $6::text[])`+conflict,
		list[0].DAO, delegator, delegate, since, at, txHash)
	return err
}

func (postgres) upsertDelegates(tx *gorm.DB, out []delegateRow, cols, conflict string) error {
	ctx := tx.Statement.Context
	n := len(out)
	address, power, key := make([]string, n), make([]string, n), make([]string, n)
	powerBlock, delegators, votes, first, updated := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	lastVote := make([]*time.Time, n)
	for i, r := range out {
		address[i], power[i], key[i] = r.Address, r.Power, r.PowerKey
		powerBlock[i], delegators[i], votes[i], first[i], updated[i] = int64(r.PowerBlock), r.Delegators, r.VotesCast, int64(r.FirstPowerBlock), int64(r.UpdatedBlock)
		lastVote[i] = r.LastVoteAt
	}
	_, err := txQuerier(tx).ExecContext(ctx, `INSERT INTO delegates (`+cols+`)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::timestamptz[], $10::bigint[])`+conflict,
		out[0].DAO, address, power, key, powerBlock, delegators, votes, first, lastVote, updated)
	return err
}

// claim skips the rows other claimers hold (FOR UPDATE SKIP LOCKED), in
// one round trip: the claimed rows come back with their notification and
// webhook.
func (p postgres) claim(ctx context.Context, s *Store, where string, args []any, token string, now, until time.Time) ([]core.Job, error) {
	return s.claimJoined(ctx, claimStatement(p, where, " FOR UPDATE SKIP LOCKED"), args, token, now, until)
}

func (postgres) release(ctx context.Context, s *Store, jobs []core.Job, next, now time.Time) error {
	// One statement for any number: a stopping dispatcher may give back
	// thousands.
	ids, tokens := make([]int64, len(jobs)), make([]string, len(jobs))
	for i, j := range jobs {
		ids[i], tokens[i] = j.DeliveryID, j.LeaseToken
	}
	if _, err := s.pool().ExecContext(ctx, `UPDATE deliveries SET state = $1, lease_token = '', next_attempt_at = $2, attempts = attempts - 1, updated_at = $3
		FROM unnest($4::bigint[], $5::text[]) AS v(id, token)
		WHERE deliveries.id = v.id AND deliveries.lease_token = v.token AND deliveries.state = $6`,
		string(core.DeliveryPending), next, now, ids, tokens, string(core.DeliveryInFlight)); err != nil {
		return fmt.Errorf("release deliveries: %w", err)
	}
	return nil
}

// completeFast completes a batch of successes in one round trip
// (completeSucceeded), promoting the next of each ordered line whose head
// is among them, leased to the caller within r; in a batch with failures
// the heads of ordered lines take the general path apart from the rest,
// which may then be all successes.
func (postgres) completeFast(ctx context.Context, s *Store, results []core.AttemptResult, disableAfter time.Duration, r core.Reservation) ([]int64, []core.Job, bool, error) {
	if allSucceeded(results) {
		next, err := s.completeSucceeded(ctx, results, s.now(), r)
		if err != nil {
			return nil, nil, true, fmt.Errorf("complete deliveries: %w", err)
		}
		return nil, next, true, nil
	}
	if anyOrdered(results) {
		if ord, rest := splitOrdered(results); len(rest) > 0 {
			// The heads of ordered lines are recorded apart (by the fast
			// path too if they all succeeded), so that the rest keep the
			// fast path whatever the heads' outcomes.
			d1, err := s.Complete(ctx, rest, disableAfter)
			if err != nil {
				return nil, nil, true, err
			}
			d2, next, err := s.CompleteHandingOn(ctx, ord, disableAfter, r)
			return append(d1, d2...), next, true, err
		}
	}
	return nil, nil, false, nil
}

// lookUpByKey turns sequential scans off for the transaction. On a young
// deliveries table (statistics from when it was nearly empty, and generic
// plans cached then) PostgreSQL otherwise joins the batch against a
// sequential scan of the whole table, once per batch.
func (postgres) lookUpByKey(tx *gorm.DB) error {
	return tx.Exec("SET LOCAL enable_seqscan = off").Error
}

func (postgres) insertAttempts(tx *gorm.DB, attempts []attemptRow) error {
	q, ctx := txQuerier(tx), tx.Statement.Context
	if _, err := q.ExecContext(ctx, `INSERT INTO delivery_attempts (delivery_id, webhook_id, number, started_at, duration_ms, status_code, outcome, error, response_excerpt, plugin_trace)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::timestamptz[], $5::float8[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[])`,
		attemptArrays(attempts)...); err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	return nil
}

func (postgres) updateFinished(tx *gorm.DB, results []core.AttemptResult, f finishedBatch, now time.Time) (map[int64]bool, error) {
	ids, tokens, states, next, status, errs := f.ids, f.tokens, f.states, f.next, f.status, f.errs
	held := make(map[int64]bool, len(ids))
	started, duration, response, trace := successArrays(results)
	query := `WITH v AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $5::int[], $6::text[], $8::timestamptz[], $9::float8[], $10::text[], $11::text[])
			AS v(id, token, state, next_at, status, err, s_started, s_duration, s_response, s_trace))
		UPDATE deliveries SET state = v.state, next_attempt_at = v.next_at,
		completed_at = CASE WHEN v.state = 'pending' THEN NULL ELSE v.next_at END,
		lease_token = '', last_status = v.status, last_error = v.err, updated_at = $7,
		success_started_at = v.s_started, success_duration_ms = v.s_duration, success_response = v.s_response, success_plugin_trace = v.s_trace
		FROM v WHERE deliveries.id = v.id AND deliveries.lease_token = v.token
		RETURNING deliveries.id`
	rows, err := txQuerier(tx).QueryContext(tx.Statement.Context, query, ids, tokens, states, next, status, errs, now, started, duration, response, trace)
	if err != nil {
		return nil, fmt.Errorf("update deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("update deliveries: %w", err)
		}
		held[id] = true
	}
	return held, rows.Err()
}

func (postgres) createNotification(ctx context.Context, s *Store, n core.Notification, source string, r core.Reservation, traceParent string) (fanOut, error) {
	// One statement, atomic on its own: no transaction round trips.
	f, err := s.insertNotificationPG(ctx, s.pool(), n, source, r, traceParent, false)
	if err == nil && len(f.ordered) > 0 {
		// The lines of ordered webhooks get their heads now; were this
		// process to die first, the dispatchers' sweep (PromoteOrdered)
		// would.
		if n, perr := s.promote(ctx, f.ordered); perr != nil {
			s.log.Warn("promote ordered deliveries; the sweep will", "err", perr)
		} else if n > 0 {
			f.queued = true // a new head waits for a claim
		}
	}
	return f, err
}

func (postgres) insertNotificationTx(tx *gorm.DB, s *Store, n core.Notification, source string, traceParent string) (fanOut, error) {
	f, err := s.insertNotificationPG(tx.Statement.Context, txQuerier(tx), n, source, core.Reservation{}, traceParent, true)
	if err == nil && len(f.ordered) > 0 {
		// In the producer's transaction: the heads commit with it.
		var n int
		n, err = s.promoteLines(tx, f.ordered, s.now())
		f.queued = f.queued || n > 0
	}
	return f, err
}
