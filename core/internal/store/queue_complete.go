package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// Completing deliveries: a batch of attempt results is recorded in one
// transaction (the attempt log, each delivery's next state while its lease
// is held, the webhooks' failure streaks and deactivations).

// Complete records a batch of attempts in one transaction: the attempt log,
// each delivery's new state (only while the caller still holds its lease),
// and the webhooks' failure streaks, deactivating a webhook on 410 or when
// every delivery has failed for disableAfter (0: never). It returns the ids of webhooks it deactivated.
func (s *Store) Complete(ctx context.Context, results []core.AttemptResult, disableAfter time.Duration) (deactivated []int64, err error) {
	deactivated, _, err = s.CompleteHandingOn(ctx, results, disableAfter, core.Reservation{})
	return deactivated, err
}

// CompleteHandingOn is Complete for a dispatcher with room r (at most r.N
// deliveries leased for r.Lease, r.Exclude ignored): where the batch ends
// the heads of ordered lines, the next delivery of each line is leased to
// the caller in the same transaction and returned (next), instead of
// being left pending for a claim. It does so for batches of successes on
// PostgreSQL; elsewhere the next heads are pending, and next is empty. The
// caller attempts next as it would claimed jobs; if it dies first their
// leases run out and any process takes them up, still at the head of
// their lines.
func (s *Store) CompleteHandingOn(ctx context.Context, results []core.AttemptResult, disableAfter time.Duration, r core.Reservation) (deactivated []int64, next []core.Job, err error) {
	if len(results) == 0 {
		return nil, nil, nil
	}
	if d, next, done, err := s.dialect.completeFast(ctx, s, results, disableAfter, r); done {
		return d, next, err
	}
	deactivated, err = s.completeGeneral(ctx, results, disableAfter)
	return deactivated, nil, err
}

// completeGeneral is Complete for any batch, in one transaction of several
// statements.
func (s *Store) completeGeneral(ctx context.Context, results []core.AttemptResult, disableAfter time.Duration) (deactivated []int64, err error) {
	now := s.now()
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.dialect.lookUpByKey(tx); err != nil {
			return err
		}
		// Lines are locked before any other webhook (as in
		// completeSucceeded), so that no transaction waits for a line's lock
		// while holding another webhook's that the line's holder wants.
		if lines := orderedLines(results); len(lines) > 0 {
			if err := s.dialect.lockLines(tx, lines); err != nil {
				return err
			}
		}
		held, err := s.finishDeliveries(tx, results, now)
		if err != nil {
			return err
		}
		attempts := make([]attemptRow, 0, len(results))
		type streak struct {
			success, failure bool
			gone             bool
		}
		hooks := map[int64]*streak{}
		var order []int64
		for _, r := range results {
			j := r.Job
			if !held[j.DeliveryID] {
				// The lease ran out and another worker owns the delivery now,
				// or the webhook was deactivated: its record wins.
				s.log.Warn("attempt completed after its lease was lost", "delivery", j.DeliveryID, "outcome", string(r.Outcome))
				continue
			}
			if r.Outcome == core.OutcomeDropped && r.PluginTrace == "" {
				continue
			}
			if r.Outcome != core.OutcomeSucceeded { // a success stays in its delivery's row
				attempts = append(attempts, newAttemptRow(r))
			}
			if r.Outcome == core.OutcomeDropped {
				continue
			}
			st := hooks[j.WebhookID]
			if st == nil {
				st = &streak{}
				hooks[j.WebhookID] = st
				order = append(order, j.WebhookID)
			}
			if r.Outcome == core.OutcomeSucceeded {
				st.success = true
			} else {
				st.failure = true
			}
			st.gone = st.gone || r.Outcome == core.OutcomeGone
		}
		if err := s.insertAttempts(tx, attempts); err != nil {
			return err
		}
		// Rows are locked in id order so that concurrent batches of several
		// processes cannot deadlock on them.
		slices.Sort(order)
		var succeeded, failing, gone []int64
		for _, id := range order {
			st := hooks[id]
			switch {
			case st.success:
				succeeded = append(succeeded, id) // one success ends the failure streak
			default:
				failing = append(failing, id)
			}
			if st.gone {
				gone = append(gone, id)
			}
		}
		if len(succeeded) > 0 {
			// A healthy webhook's row is rewritten at most once a second, so
			// a busy webhook does not serialise every batch on its row.
			if err := tx.Exec(`UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL, last_delivery_at = ?, last_success_at = ?
				WHERE id IN ? AND (consecutive_failures <> 0 OR failing_since IS NOT NULL OR last_success_at IS NULL OR last_success_at < ?)`,
				now, now, succeeded, now.Add(-time.Second)).Error; err != nil {
				return fmt.Errorf("update webhook streaks: %w", err)
			}
		}
		reasons := map[int64]string{}
		for _, id := range gone {
			reasons[id] = "receiver answered 410 Gone"
		}
		if len(failing) > 0 {
			if err := tx.Exec(`UPDATE webhooks SET consecutive_failures = consecutive_failures + 1, failing_since = COALESCE(failing_since, ?), last_delivery_at = ? WHERE id IN ?`,
				now, now, failing).Error; err != nil {
				return fmt.Errorf("update webhook streaks: %w", err)
			}
			if disableAfter > 0 {
				var rows []webhookRow
				if err := tx.Select("id", "failing_since").Where("id IN ? AND state = ? AND failing_since <= ?", failing, string(core.WebhookActive), now.Add(-disableAfter)).Find(&rows).Error; err != nil {
					return fmt.Errorf("check failing webhooks: %w", err)
				}
				for _, r := range rows {
					if _, ok := reasons[r.ID]; !ok && r.FailingSince != nil {
						reasons[r.ID] = fmt.Sprintf("every delivery failed since %s (disable_after %s)", r.FailingSince.UTC().Format(time.RFC3339), disableAfter)
					}
				}
			}
		}
		// An ordered line moves on when its head finishes (succeeded, given
		// up, dropped), in the transaction that finishes it.
		var lines []int64
		for _, r := range results {
			if r.Job.Ordered && r.Outcome != core.OutcomeRetry && held[r.Job.DeliveryID] {
				lines = append(lines, r.Job.WebhookID)
			}
		}
		if _, err := s.promoteLines(tx, lines, now); err != nil {
			return err
		}
		for _, id := range order {
			reason, ok := reasons[id]
			if !ok {
				continue
			}
			res := tx.Exec(`UPDATE webhooks SET state = ?, deactivated_at = ?, deactivated_reason = ?, updated_at = ? WHERE id = ? AND state = ?`,
				string(core.WebhookDeactivated), now, reason, now, id, string(core.WebhookActive))
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				deactivated = append(deactivated, id)
				if err := cancelUnfinished(tx, id, "webhook deactivated: "+reason, now); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("complete deliveries: %w", err)
	}
	return deactivated, nil
}

// orderedLines lists, sorted and distinct, the webhooks of the heads of
// ordered lines in results that finished (any outcome but a retry): the
// lines to promote once they are recorded.
func orderedLines(results []core.AttemptResult) []int64 {
	var lines []int64
	for _, r := range results {
		if r.Job.Ordered && r.Outcome != core.OutcomeRetry {
			lines = append(lines, r.Job.WebhookID)
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// anyOrdered reports whether a batch holds the head of an ordered line:
// without one, as in most batches, it is not copied to be split.
func anyOrdered(results []core.AttemptResult) bool {
	for i := range results {
		if results[i].Job.Ordered {
			return true
		}
	}
	return false
}

// splitOrdered parts results into the heads of ordered lines and the rest.
func splitOrdered(results []core.AttemptResult) (ordered, rest []core.AttemptResult) {
	for _, r := range results {
		if r.Job.Ordered {
			ordered = append(ordered, r)
		} else {
			rest = append(rest, r)
		}
	}
	return ordered, rest
}

// allSucceeded reports whether every attempt of a batch succeeded (or was
// dropped by a plugin): the common case, which changes no failure streak.
func allSucceeded(results []core.AttemptResult) bool {
	for _, r := range results {
		if r.Outcome != core.OutcomeSucceeded && r.Outcome != core.OutcomeDropped {
			return false
		}
	}
	return true
}

// completeSucceeded is Complete for a batch of successes on PostgreSQL: one
// statement finishes the deliveries whose lease the caller still holds,
// logs their attempts and resets their webhooks' failure streaks, another
// promotes the next delivery of each ordered line whose head is among them,
// and it all goes out in one round trip with its transaction (pgx batch)
// instead of six. Batches with failures take the general path, which also deactivates
// webhooks.
//
// With room r, the ordered lines' next heads are leased to the caller and
// returned (handOnLinesPG) rather than left pending.
func (s *Store) completeSucceeded(ctx context.Context, results []core.AttemptResult, now time.Time, r core.Reservation) ([]core.Job, error) {
	n := len(results)
	ids, status := make([]int64, n), make([]int32, n)
	tokens, states, errs := make([]string, n), make([]string, n), make([]string, n)
	attempts := make([]attemptRow, 0)
	for i, r := range results {
		j := r.Job
		ids[i], tokens[i], status[i], errs[i] = j.DeliveryID, j.LeaseToken, int32(r.StatusCode), truncate(r.Error, 1024)
		states[i] = string(core.DeliverySucceeded)
		if r.Outcome == core.OutcomeDropped {
			states[i] = string(core.DeliveryDropped)
			if r.PluginTrace != "" { // else nothing ran that is worth a log entry
				attempts = append(attempts, newAttemptRow(r))
			}
		}
	}
	started, duration, response, trace := successArrays(results)
	// The same lease check and states as finishDeliveries; a success
	// rewrites its webhook's row at most once a second, as in Complete, and
	// webhooks are locked in id order (a sorted array through the primary
	// key) so that concurrent batches of several processes do not deadlock;
	// were one to, PostgreSQL aborts it and the dispatcher retries the batch.
	const q = `WITH v AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $17::text[], $18::timestamptz[], $19::float8[], $20::text[], $21::text[])
			AS v(id, token, state, status, err, s_started, s_duration, s_response, s_trace)),
		f AS (UPDATE deliveries SET state = v.state, next_attempt_at = $5, completed_at = $5, lease_token = '', last_status = v.status, last_error = v.err, updated_at = $5,
				success_started_at = v.s_started, success_duration_ms = v.s_duration, success_response = v.s_response, success_plugin_trace = v.s_trace
			FROM v WHERE deliveries.id = v.id AND deliveries.lease_token = v.token
			RETURNING deliveries.id, deliveries.webhook_id, deliveries.state),
		a AS (INSERT INTO delivery_attempts (delivery_id, webhook_id, number, started_at, duration_ms, status_code, outcome, error, response_excerpt, plugin_trace)
			SELECT x.* FROM unnest($6::bigint[], $7::bigint[], $8::int[], $9::timestamptz[], $10::float8[], $11::int[], $12::text[], $13::text[], $14::text[], $15::text[])
				AS x(delivery_id, webhook_id, number, started_at, duration_ms, status_code, outcome, error, response_excerpt, plugin_trace)
			WHERE x.delivery_id IN (SELECT id FROM f)),
		w AS (UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL, last_delivery_at = $5, last_success_at = $5
			WHERE id = ANY(ARRAY(SELECT DISTINCT webhook_id FROM f WHERE state = 'succeeded' ORDER BY 1))
				AND (consecutive_failures <> 0 OR failing_since IS NOT NULL OR last_success_at IS NULL OR last_success_at < $16))
		SELECT id FROM f`
	args := append(append([]any{ids, tokens, states, status, now}, attemptArrays(attempts)...), now.Add(-time.Second), errs, started, duration, response, trace)
	lines := orderedLines(results)
	handOn := len(lines) > 0 && r.N > 0
	token, expires := "", now.Add(r.Lease)
	if handOn {
		var err error
		if token, err = newToken(); err != nil {
			return nil, err
		}
	}
	held := make(map[int64]bool, n)
	var next []core.Job
	err := s.pgBatch(ctx, func(c *pgx.Conn) error {
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		// See Complete: every lookup here is by primary key.
		b.Queue("SET LOCAL enable_seqscan = off")
		if len(lines) > 0 {
			// The heads of ordered lines hand their lines on in the same
			// transaction, still one round trip: their webhooks are locked
			// first (before the failure streaks' updates, so that every
			// transaction locks lines before other webhooks, in id order),
			// and after the heads are finished the next of each line is
			// promoted, in a statement whose snapshot follows the lock.
			b.Queue(lockLinesPG, lines)
		}
		b.Queue(q, args...)
		switch {
		case handOn:
			b.Queue(handOnLinesPG, lines, now, string(core.WebhookActive), r.N, token, expires)
		case len(lines) > 0:
			b.Queue(promoteLinesPG, lines, now, string(core.WebhookActive))
		}
		b.Queue("COMMIT")
		br := c.SendBatch(ctx, b)
		defer br.Close()
		for i := 0; i < 2; i++ {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if len(lines) > 0 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			held[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		switch {
		case handOn:
			rows, err := br.Query()
			if err != nil {
				return err
			}
			// The statement leases only heads of active webhooks (it reads
			// them under the lines' lock): it leaves no orphan to cancel.
			next, _, err = s.scanClaimed(rows, token, now, expires)
			rows.Close()
			if err != nil {
				return err
			}
		case len(lines) > 0:
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		_, err = br.Exec()
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, res := range results {
		if !held[res.Job.DeliveryID] {
			s.log.Warn("attempt completed after its lease was lost", "delivery", res.Job.DeliveryID, "outcome", string(res.Outcome))
		}
	}
	return next, nil
}

// newAttemptRow is the attempt log entry of a result, its texts bounded.
func newAttemptRow(r core.AttemptResult) attemptRow {
	j := r.Job
	return attemptRow{
		DeliveryID: j.DeliveryID, WebhookID: j.WebhookID, Number: j.Attempt,
		StartedAt: r.StartedAt.UTC(), DurationMs: float64(r.Duration.Microseconds()) / 1000,
		StatusCode: r.StatusCode, Outcome: string(r.Outcome), Error: truncate(r.Error, 1024),
		ResponseExcerpt: truncate(r.ResponseExcerpt, 2048), PluginTrace: r.PluginTrace,
	}
}

// attemptArrays is attempts as ten column arrays, in the column order of
// delivery_attempts (delivery_id … plugin_trace), for unnest on PostgreSQL.
func attemptArrays(attempts []attemptRow) []any {
	n := len(attempts)
	delivery, webhook, number, status := make([]int64, n), make([]int64, n), make([]int32, n), make([]int32, n)
	started, duration := make([]time.Time, n), make([]float64, n)
	outcome, errs, excerpt, trace := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, a := range attempts {
		delivery[i], webhook[i], number[i], status[i] = a.DeliveryID, a.WebhookID, int32(a.Number), int32(a.StatusCode)
		started[i], duration[i] = a.StartedAt, a.DurationMs
		outcome[i], errs[i], excerpt[i], trace[i] = a.Outcome, a.Error, a.ResponseExcerpt, a.PluginTrace
	}
	return []any{delivery, webhook, number, started, duration, status, outcome, errs, excerpt, trace}
}

// insertAttempts records attempts: on PostgreSQL one INSERT from arrays (a
// single statement text, parsed once per connection), on SQLite multi-row
// INSERTs.
func (s *Store) insertAttempts(tx *gorm.DB, attempts []attemptRow) error {
	if len(attempts) == 0 {
		return nil
	}
	return s.dialect.insertAttempts(tx, attempts)
}

// finishDeliveries moves every delivery of results whose lease the caller
// still holds to its next state and returns those ids: on PostgreSQL in one
// statement over a row set v(id, token, state, next_at, status, err) from
// unnest, so that every batch runs the same statement text; on SQLite, where
// a statement costs no round trip, one prepared statement per row (see
// txPrepare).
//
// A non-empty lease token is only ever set by a claim and cleared by every
// move out of in_flight, so matching it is the whole lease check. The
// statement deliberately has no state predicate: one would match the partial
// index ix_deliveries_due, and on a young table (statistics from when it was
// empty) PostgreSQL then scanned every unfinished delivery once per batch row
// instead of looking each id up in the primary key (60 ms per batch of 160).
func (s *Store) finishDeliveries(tx *gorm.DB, results []core.AttemptResult, now time.Time) (map[int64]bool, error) {
	n := len(results)
	ids, status := make([]int64, n), make([]int32, n)
	tokens, states, errs := make([]string, n), make([]string, n), make([]string, n)
	next := make([]time.Time, n)
	for i, r := range results {
		state, at := "", now
		switch r.Outcome {
		case core.OutcomeSucceeded:
			state = string(core.DeliverySucceeded)
		case core.OutcomeRetry:
			state, at = string(core.DeliveryPending), r.NextAttemptAt.UTC()
		case core.OutcomeFailed, core.OutcomeGone:
			state = string(core.DeliveryFailed)
		case core.OutcomeDropped:
			state = string(core.DeliveryDropped)
		default:
			return nil, fmt.Errorf("unknown outcome %q", r.Outcome)
		}
		ids[i], tokens[i], states[i], next[i], status[i], errs[i] = r.Job.DeliveryID, r.Job.LeaseToken, state, at, int32(r.StatusCode), truncate(r.Error, 1024)
	}
	return s.dialect.updateFinished(tx, results, finishedBatch{ids: ids, tokens: tokens, states: states, errs: errs, next: next, status: status}, now)
}
