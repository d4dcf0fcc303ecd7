package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/store/migrations"
)

// sqlite is the dialect of the embedded SQLite: one writer connection,
// which keeps writers apart without row locks, and batches written one
// prepared single-row statement a row (see txPrepare).
type sqlite struct{}

func (sqlite) name() Dialect { return SQLite }

// configurePool opens one connection: it serialises writers inside the
// process, which is what SQLite does anyway, and removes SQLITE_BUSY
// between them.
func (sqlite) configurePool(db *sql.DB, maxOpen int) { db.SetMaxOpenConns(1) }

// tryChainLock takes a lease kept in this process, keyed by the Store: a
// SQLite file is not shared between processes.
func (sqlite) tryChainLock(ctx context.Context, s *Store, chainID uint64, l *ChainLease) (bool, error) {
	key := fmt.Sprintf("%p/%d", s, chainID)
	localLeaseMu.Lock()
	defer localLeaseMu.Unlock()
	if localLeases[key] {
		return false, nil
	}
	localLeases[key] = true
	l.release = func() {
		localLeaseMu.Lock()
		delete(localLeases, key)
		localLeaseMu.Unlock()
	}
	return true, nil
}

func (sqlite) migrate(ctx context.Context, db *gorm.DB) error {
	opts := migrations.Options()
	opts.UseTransaction = true
	if err := gormigrate.New(db.WithContext(ctx), opts, migrations.All()).Migrate(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func (sqlite) bindFrom(query string, first int) string { return query }

func (sqlite) containsFormat() string { return "instr(%s, ?) > 0" }

// forUpdate is empty: SQLite's single writer connection keeps other
// writers out already.
// lockLines has nothing to lock: SQLite's writers take turns.
func (sqlite) lockLines(tx *gorm.DB, ids []int64) error { return nil }

// promoteLines takes one line at a time: the single writer is the lock.
func (sqlite) promoteLines(tx *gorm.DB, ids []int64, now time.Time) (int, error) {
	return promoteEach(tx, ids, now)
}

func (sqlite) lockForUpdate(q *gorm.DB) *gorm.DB { return q }

// serializeSeeding has nothing to do: SQLite's writers take turns.
func (sqlite) serializeSeeding(tx *gorm.DB) error { return nil }

func (sqlite) greatest() string { return "MAX" }

func (sqlite) rowsPerInsert() int { return sqliteRowsPerInsert }

func (sqlite) tableBytes(ctx context.Context, db *gorm.DB, tables ...string) (int64, error) {
	return 0, nil
}

func (sqlite) insertTokenEvents(tx *gorm.DB, rows []tokenEventRow) error {
	ctx := tx.Statement.Context
	stmt, err := txPrepare(tx, `INSERT INTO token_events (`+tokenEventColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r.DAO, r.ChainID, r.BlockNumber, r.TxHash, r.LogIndex, r.Kind, r.Account, r.FromDelegate, r.ToDelegate,
			r.Moved, r.PreviousVotes, r.NewVotes, r.At); err != nil {
			return err
		}
	}
	return nil
}

func (sqlite) upsertDelegations(tx *gorm.DB, list []delegationRow, conflict string) error {
	ctx := tx.Statement.Context
	stmt, err := txPrepare(tx, `INSERT INTO delegations (dao, delegator, delegate, since_block, since_at, tx_hash) VALUES (?, ?, ?, ?, ?, ?)`+conflict)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, d := range list {
		if _, err := stmt.ExecContext(ctx, d.DAO, d.Delegator, d.Delegate, d.SinceBlock, d.SinceAt, d.TxHash); err != nil {
			return err
		}
	}
	return nil
}

func (sqlite) upsertDelegates(tx *gorm.DB, out []delegateRow, cols, conflict string) error {
	ctx := tx.Statement.Context
	stmt, err := txPrepare(tx, `INSERT INTO delegates (`+cols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`+conflict)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range out {
		if _, err := stmt.ExecContext(ctx, r.DAO, r.Address, r.Power, r.PowerKey, r.PowerBlock, r.Delegators, r.VotesCast, r.FirstPowerBlock, r.LastVoteAt, r.UpdatedBlock); err != nil {
			return err
		}
	}
	return nil
}

// claim runs on the single writer, which keeps claimers apart; the
// claimed rows' notifications and webhooks are read after, each once.
func (d sqlite) claim(ctx context.Context, s *Store, where string, args []any, token string, now, until time.Time) ([]core.Job, error) {
	q := claimStatement(d, where, "")
	type claim struct {
		id, webhook int64
		note        string
		attempts    int
	}
	var claimed []claim
	rows, err := s.pool().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	for rows.Next() {
		var c claim
		if err := rows.Scan(&c.id, &c.note, &c.webhook, &c.attempts); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim deliveries: %w", err)
		}
		claimed = append(claimed, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	// The claim has committed: its deliveries are leased to the caller,
	// who can give back only what it is handed. The reads that make them
	// jobs are local and short, so they do not stop for a context that
	// ends meanwhile (a dispatcher stopping): were they cut short, the
	// deliveries would sit leased to nobody until their leases ran out,
	// instead of being given back with the rest of what was not started.
	ctx = context.WithoutCancel(ctx)
	var nIDs, wIDs []any
	seenN, seenW := map[string]bool{}, map[int64]bool{}
	for _, c := range claimed {
		if !seenN[c.note] {
			seenN[c.note] = true
			nIDs = append(nIDs, c.note)
		}
		if !seenW[c.webhook] {
			seenW[c.webhook] = true
			wIDs = append(wIDs, c.webhook)
		}
	}
	// Each notification is decoded once per claim, however many of its
	// deliveries the claim holds.
	type note struct {
		n           core.Notification
		body        []byte
		traceParent string
	}
	notes := make(map[string]note, len(nIDs))
	rows, err = s.pool().QueryContext(ctx, s.bind(`SELECT id, body, trace_parent FROM notifications WHERE id IN (`+marks(len(nIDs))+`)`), nIDs...)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: load notifications: %w", err)
	}
	for rows.Next() {
		var r notificationRow
		if err := rows.Scan(&r.ID, &r.Body, &r.TraceParent); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim deliveries: load notifications: %w", err)
		}
		n, err := r.domain()
		if err != nil {
			rows.Close()
			return nil, err
		}
		notes[r.ID] = note{n, r.Body, r.TraceParent}
	}
	rows.Close()
	// A read that ended early must fail the claim: the deliveries it did
	// not read about would look orphaned below. Their leases bring them back.
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim deliveries: load notifications: %w", err)
	}
	hooks := make(map[int64]claimedHook, len(wIDs))
	inactive := map[int64]bool{}
	rows, err = s.pool().QueryContext(ctx, s.bind(`SELECT id, url, state, secret_ciphertext, prev_secret_ciphertext, prev_secret_expires_at, ordered, max_per_second, burst FROM webhooks WHERE id IN (`+marks(len(wIDs))+`)`), wIDs...)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: load webhooks: %w", err)
	}
	for rows.Next() {
		var h webhookRow
		if err := rows.Scan(&h.ID, &h.URL, &h.State, &h.SecretCiphertext, &h.PrevSecretCiphertext, &h.PrevSecretExpiresAt, &h.Ordered, &h.MaxPerSecond, &h.Burst); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim deliveries: load webhooks: %w", err)
		}
		if h.State != string(core.WebhookActive) {
			inactive[h.ID] = true
			continue
		}
		ch, err := s.claimedHook(h, now)
		if err != nil {
			rows.Close()
			return nil, err
		}
		hooks[h.ID] = ch
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim deliveries: load webhooks: %w", err)
	}
	jobs := make([]core.Job, 0, len(claimed))
	for _, c := range claimed {
		if inactive[c.webhook] {
			// The webhook was deactivated between fan-out and claim; its
			// deactivation canceled the rest.
			if _, err := s.pool().ExecContext(ctx, s.bind(`UPDATE deliveries SET state = ?, lease_token = '', completed_at = ?, updated_at = ?, last_error = ? WHERE id = ? AND lease_token = ?`),
				string(core.DeliveryCanceled), now, now, "webhook deactivated", c.id, token); err != nil {
				return nil, fmt.Errorf("claim deliveries: cancel a deactivated webhook's delivery: %w", err)
			}
			continue
		}
		n, okN := notes[c.note]
		h, okH := hooks[c.webhook]
		if !okN || !okH {
			// Rows that reference each other cannot be missing: a read
			// that came back short is a failed read, and cancels nothing.
			return nil, fmt.Errorf("claim deliveries: delivery %d: its notification or webhook was not read", c.id)
		}
		j := core.Job{
			DeliveryID: c.id, LeaseToken: token, LeaseExpires: until, Attempt: c.attempts,
			Notification: n.n, Body: n.body, TraceParent: n.traceParent, WebhookID: c.webhook,
		}
		h.fill(&j)
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func (sqlite) release(ctx context.Context, s *Store, jobs []core.Job, next, now time.Time) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, j := range jobs {
			if err := tx.Exec(`UPDATE deliveries SET state = ?, lease_token = '', next_attempt_at = ?, attempts = attempts - 1, updated_at = ?
				WHERE id = ? AND lease_token = ? AND state = ?`,
				string(core.DeliveryPending), next, now, j.DeliveryID, j.LeaseToken, string(core.DeliveryInFlight)).Error; err != nil {
				return fmt.Errorf("release delivery: %w", err)
			}
		}
		return nil
	})
}

func (sqlite) completeFast(ctx context.Context, s *Store, results []core.AttemptResult, disableAfter time.Duration, r core.Reservation) ([]int64, []core.Job, bool, error) {
	return nil, nil, false, nil
}

func (sqlite) lookUpByKey(tx *gorm.DB) error { return nil }

func (sqlite) insertAttempts(tx *gorm.DB, attempts []attemptRow) error {
	ctx := tx.Statement.Context
	stmt, err := txPrepare(tx, `INSERT INTO delivery_attempts (delivery_id, webhook_id, number, started_at, duration_ms, status_code, outcome, error, response_excerpt, plugin_trace)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	defer stmt.Close()
	for _, a := range attempts {
		if _, err := stmt.ExecContext(ctx, a.DeliveryID, a.WebhookID, a.Number, a.StartedAt, a.DurationMs, a.StatusCode, a.Outcome, a.Error, a.ResponseExcerpt, a.PluginTrace); err != nil {
			return fmt.Errorf("record attempts: %w", err)
		}
	}
	return nil
}

func (sqlite) updateFinished(tx *gorm.DB, results []core.AttemptResult, f finishedBatch, now time.Time) (map[int64]bool, error) {
	ids, tokens, states, next, status, errs := f.ids, f.tokens, f.states, f.next, f.status, f.errs
	held := make(map[int64]bool, len(ids))
	stmt, err := txPrepare(tx, `UPDATE deliveries SET state = ?, next_attempt_at = ?,
		completed_at = CASE WHEN ? = 'pending' THEN NULL ELSE ? END,
		lease_token = '', last_status = ?, last_error = ?, updated_at = ?,
		success_started_at = ?, success_duration_ms = ?, success_response = ?, success_plugin_trace = ?
		WHERE id = ? AND lease_token = ?`)
	if err != nil {
		return nil, fmt.Errorf("update deliveries: %w", err)
	}
	defer stmt.Close()
	for i, r := range results {
		sc := successOf(r)
		var startedAt any // a typed nil is not NULL to every driver
		if sc.startedAt != nil {
			startedAt = *sc.startedAt
		}
		res, err := stmt.ExecContext(tx.Statement.Context, states[i], next[i], states[i], next[i], status[i], errs[i], now,
			startedAt, sc.durationMs, sc.response, sc.trace, ids[i], tokens[i])
		if err != nil {
			return nil, fmt.Errorf("update deliveries: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("update deliveries: %w", err)
		} else if n > 0 {
			held[ids[i]] = true
		}
	}
	return held, nil
}

func (sqlite) createNotification(ctx context.Context, s *Store, n core.Notification, source string, r core.Reservation, traceParent string) (fanOut, error) {
	var f fanOut
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		f, err = s.insertNotification(tx, n, source, r, traceParent)
		return err
	})
	return f, err
}

func (sqlite) insertNotificationTx(tx *gorm.DB, s *Store, n core.Notification, source string, traceParent string) (fanOut, error) {
	return s.insertNotification(tx, n, source, core.Reservation{}, traceParent)
}
