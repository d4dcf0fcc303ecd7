package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

type deliveryRow struct {
	ID             int64
	NotificationID string
	WebhookID      int64
	State          string
	NextAttemptAt  time.Time
	Attempts       int
	LeaseToken     string
	LastStatus     int
	LastError      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	CompletedAt    *time.Time
	// A succeeded delivery keeps its successful attempt here rather than in
	// the attempt log (migration 0011); deliveries that succeeded before it
	// have theirs in the log and SuccessStartedAt nil.
	SuccessStartedAt   *time.Time
	SuccessDurationMs  float64
	SuccessResponse    string
	SuccessPluginTrace string
}

func (deliveryRow) TableName() string { return "deliveries" }

// successAttempt is the successful attempt a succeeded delivery keeps in its
// row, as the attempt-log row it stands for (the log's last entry), or nil.
func (r deliveryRow) successAttempt() *attemptRow {
	if r.SuccessStartedAt == nil || r.State != string(core.DeliverySucceeded) {
		return nil
	}
	return &attemptRow{
		DeliveryID: r.ID, WebhookID: r.WebhookID, Number: r.Attempts, StartedAt: r.SuccessStartedAt.UTC(), DurationMs: r.SuccessDurationMs,
		StatusCode: r.LastStatus, Outcome: string(core.OutcomeSucceeded), ResponseExcerpt: r.SuccessResponse, PluginTrace: r.SuccessPluginTrace,
	}
}

// successColumns are the success_* values of a result: its attempt for a
// success, none for any other outcome.
type successColumns struct {
	startedAt  *time.Time
	durationMs float64
	response   string
	trace      string
}

func successOf(r core.AttemptResult) successColumns {
	if r.Outcome != core.OutcomeSucceeded {
		return successColumns{}
	}
	a := newAttemptRow(r)
	return successColumns{startedAt: &a.StartedAt, durationMs: a.DurationMs, response: a.ResponseExcerpt, trace: a.PluginTrace}
}

// successArrays is the success_* values of results as four column arrays,
// for unnest on PostgreSQL.
func successArrays(results []core.AttemptResult) (started []*time.Time, duration []float64, response, trace []string) {
	n := len(results)
	started, duration, response, trace = make([]*time.Time, n), make([]float64, n), make([]string, n), make([]string, n)
	for i, r := range results {
		sc := successOf(r)
		started[i], duration[i], response[i], trace[i] = sc.startedAt, sc.durationMs, sc.response, sc.trace
	}
	return started, duration, response, trace
}

func (r deliveryRow) domain() core.Delivery {
	return core.Delivery{
		ID: r.ID, NotificationID: r.NotificationID, WebhookID: r.WebhookID, State: core.DeliveryState(r.State),
		Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt.UTC(), LastError: r.LastError, LastStatus: r.LastStatus,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), CompletedAt: utcPtr(r.CompletedAt),
	}
}

type attemptRow struct {
	ID              int64
	DeliveryID      int64
	WebhookID       int64
	Number          int
	StartedAt       time.Time
	DurationMs      float64
	StatusCode      int
	Outcome         string
	Error           string
	ResponseExcerpt string
	PluginTrace     string
}

func (attemptRow) TableName() string { return "delivery_attempts" }

func (a attemptRow) domain() core.Attempt {
	return core.Attempt{
		Number: a.Number, StartedAt: a.StartedAt.UTC(), DurationMs: a.DurationMs, StatusCode: a.StatusCode,
		Outcome: a.Outcome, Error: a.Error, ResponseExcerpt: a.ResponseExcerpt, PluginTrace: a.PluginTrace,
	}
}

// unfinished is the predicate of the partial index ix_deliveries_due, and
// finished that of ix_deliveries_webhook_done. Queries spell them out
// literally so that the planner matches them to those indexes.
const (
	unfinished = "state IN ('pending', 'in_flight')"
	finished   = "state NOT IN ('pending', 'in_flight')"
)

// cancelUnfinished cancels a deactivated webhook's pending and in-flight
// deliveries, found through the queue's own index.
func cancelUnfinished(tx *gorm.DB, webhookID int64, reason string, now time.Time) error {
	if err := tx.Exec(`UPDATE deliveries SET state = ?, lease_token = '', completed_at = ?, updated_at = ?, last_error = ? WHERE webhook_id = ? AND `+unfinished,
		string(core.DeliveryCanceled), now, now, truncate(reason, 1024), webhookID).Error; err != nil {
		return err
	}
	// An ordered webhook's line goes too, through its own index.
	return tx.Exec(`UPDATE deliveries SET state = ?, completed_at = ?, updated_at = ?, last_error = ? WHERE webhook_id = ? AND state = 'waiting'`,
		string(core.DeliveryCanceled), now, now, truncate(reason, 1024), webhookID).Error
}

// Unfinished counts deliveries pending, in flight or waiting, through the
// partial indexes: cheap however many deliveries have finished.
func (s *Store) Unfinished(ctx context.Context) (int64, error) {
	var n int64
	// Waiting deliveries (ordered lines) are counted through their own index.
	if err := s.db.WithContext(ctx).Raw("SELECT (SELECT COUNT(*) FROM deliveries WHERE " + unfinished + ") + (SELECT COUNT(*) FROM deliveries WHERE state = 'waiting')").Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("count unfinished deliveries: %w", err)
	}
	return n, nil
}

// Claim takes up to limit due deliveries (pending, or in flight with an
// expired lease) for the caller, leasing them until now+lease. Deliveries
// of the webhooks in exclude are left for later. On PostgreSQL concurrent
// claimers skip each other's rows (FOR UPDATE SKIP LOCKED); on SQLite the
// single writer gives the same guarantee.
func (s *Store) Claim(ctx context.Context, limit int, lease time.Duration, exclude []int64) ([]core.Job, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	now := s.now()
	args := []any{string(core.DeliveryInFlight), token, now.Add(lease), now, now}
	// The state list is literal, not bound, so that the planner can match
	// it to the partial index ix_deliveries_due.
	where := unfinished + " AND next_attempt_at <= ?"
	if len(exclude) > 0 {
		where += " AND webhook_id NOT IN (" + marks(len(exclude)) + ")"
		for _, id := range exclude {
			args = append(args, id)
		}
	}
	args = append(args, limit)
	return s.dialect.claim(ctx, s, where, args, token, now, now.Add(lease))
}

// claimStatement is the claim's UPDATE of the deliveries that where
// (with a LIMIT after it) selects, lock the selection's row locks.
func claimStatement(d dialect, where, lock string) string {
	return d.bindFrom(`UPDATE deliveries SET state = ?, lease_token = ?, next_attempt_at = ?, attempts = attempts + 1, updated_at = ?
		WHERE id IN (SELECT id FROM deliveries WHERE `+where+` ORDER BY next_attempt_at, id LIMIT ?`+lock+`)
		RETURNING id, notification_id, webhook_id, attempts`, 1)
}

// claimJoined runs the claim as a data-modifying CTE joined to the
// notifications and webhooks it needs (PostgreSQL).
func (s *Store) claimJoined(ctx context.Context, update string, args []any, token string, now, expires time.Time) ([]core.Job, error) {
	q := `WITH c AS (` + update + `)
		SELECT c.id, c.notification_id, c.webhook_id, c.attempts, n.body, n.trace_parent, w.url, w.state, w.secret_ciphertext,
			w.prev_secret_ciphertext, w.prev_secret_expires_at, w.ordered, w.max_per_second, w.burst
		FROM c JOIN notifications n ON n.id = c.notification_id JOIN webhooks w ON w.id = c.webhook_id`
	rows, err := s.pool().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	defer rows.Close()
	notes := map[string]core.Notification{}
	hooks := map[int64]claimedHook{}
	var jobs []core.Job
	var orphans []int64
	for rows.Next() {
		var (
			j      core.Job
			noteID string
			body   []byte
			h      webhookRow
		)
		if err := rows.Scan(&j.DeliveryID, &noteID, &j.WebhookID, &j.Attempt, &body, &j.TraceParent, &h.URL, &h.State, &h.SecretCiphertext,
			&h.PrevSecretCiphertext, &h.PrevSecretExpiresAt, &h.Ordered, &h.MaxPerSecond, &h.Burst); err != nil {
			return nil, fmt.Errorf("claim deliveries: %w", err)
		}
		ch, ok := hooks[j.WebhookID]
		if !ok {
			ch = claimedHook{active: h.State == string(core.WebhookActive)}
			if ch.active {
				if ch, err = s.claimedHook(h, now); err != nil {
					return nil, err
				}
			}
			hooks[j.WebhookID] = ch
		}
		if !ch.active {
			orphans = append(orphans, j.DeliveryID)
			continue
		}
		n, ok := notes[noteID]
		if !ok {
			r := notificationRow{ID: noteID, Body: body}
			if n, err = r.domain(); err != nil {
				return nil, err
			}
			notes[noteID] = n
		}
		j.LeaseToken, j.LeaseExpires, j.Notification, j.Body = token, expires, n, body
		ch.fill(&j)
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	for _, id := range orphans {
		// The webhook was deactivated between fan-out and claim.
		if _, err := s.pool().ExecContext(ctx, s.bind(`UPDATE deliveries SET state = ?, lease_token = '', completed_at = ?, updated_at = ?, last_error = ? WHERE id = ? AND lease_token = ?`),
			string(core.DeliveryCanceled), now, now, "webhook deactivated", id, token); err != nil {
			return nil, fmt.Errorf("claim deliveries: cancel a deactivated webhook's delivery: %w", err)
		}
	}
	return jobs, nil
}

// claimedHook is what a claim reads of a delivery's webhook.
type claimedHook struct {
	active                bool
	url, secret, previous string
	previousUntil         time.Time
	ordered               bool
	throttle              core.Throttle
}

// claimedHook opens an active webhook's secrets for its claimed jobs.
func (s *Store) claimedHook(h webhookRow, now time.Time) (claimedHook, error) {
	secret, err := s.openSecret(h.URL, h.SecretCiphertext)
	if err != nil {
		return claimedHook{}, err
	}
	prev, until, err := s.openPrevious(h.URL, h.PrevSecretCiphertext, h.PrevSecretExpiresAt, now)
	if err != nil {
		return claimedHook{}, err
	}
	return claimedHook{active: true, url: h.URL, secret: secret, previous: prev, previousUntil: until,
		ordered: h.Ordered == 1, throttle: core.Throttle{MaxPerSecond: h.MaxPerSecond, Burst: h.Burst}}, nil
}

func (h claimedHook) fill(j *core.Job) {
	j.WebhookURL, j.Secret, j.PreviousSecret, j.PreviousUntil = h.url, h.secret, h.previous, h.previousUntil
	j.Ordered, j.Throttle = h.ordered, h.throttle
}

// Release hands claimed deliveries back without counting an attempt, due
// after delay (used when a webhook is at its concurrency limit or the
// process shuts down).
func (s *Store) Release(ctx context.Context, jobs []core.Job, delay time.Duration) error {
	if len(jobs) == 0 {
		return nil
	}
	now := s.now()
	return s.dialect.release(ctx, s, jobs, now.Add(delay), now)
}

// Complete records a batch of attempts in one transaction: the attempt log,
// each delivery's new state (only while the caller still holds its lease),
// and the webhooks' failure streaks, deactivating a webhook on 410 or when
// every delivery has failed for disableAfter (0: never). It returns the ids of webhooks it deactivated.
func (s *Store) Complete(ctx context.Context, results []core.AttemptResult, disableAfter time.Duration) (deactivated []int64, err error) {
	if len(results) == 0 {
		return nil, nil
	}
	if d, done, err := s.dialect.completeFast(ctx, s, results, disableAfter); done {
		return d, err
	}
	now := s.now()
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.dialect.lookUpByKey(tx); err != nil {
			return err
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
// logs their attempts and resets their webhooks' failure streaks, and it
// goes out in one round trip with its transaction (pgx batch) instead of
// six. Batches with failures take the general path, which also deactivates
// webhooks.
func (s *Store) completeSucceeded(ctx context.Context, results []core.AttemptResult, now time.Time) error {
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
	held := make(map[int64]bool, n)
	err := s.pgBatch(ctx, func(c *pgx.Conn) error {
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		// See Complete: every lookup here is by primary key.
		b.Queue("SET LOCAL enable_seqscan = off")
		b.Queue(q, args...)
		b.Queue("COMMIT")
		br := c.SendBatch(ctx, b)
		defer br.Close()
		for i := 0; i < 2; i++ {
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
		_, err = br.Exec()
		return err
	})
	if err != nil {
		return err
	}
	for _, r := range results {
		if !held[r.Job.DeliveryID] {
			s.log.Warn("attempt completed after its lease was lost", "delivery", r.Job.DeliveryID, "outcome", string(r.Outcome))
		}
	}
	return nil
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

// Replay schedules a finished delivery (failed, succeeded, dropped or
// canceled) for a fresh round of attempts, now, with the full retry
// schedule. Its webhook must be active.
func (s *Store) Replay(ctx context.Context, id int64) (core.Delivery, error) {
	var out deliveryRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row deliveryRow
		if err := tx.Where("id = ?", id).Take(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return notFound("delivery")
			}
			return err
		}
		if row.State == string(core.DeliveryPending) || row.State == string(core.DeliveryInFlight) {
			return core.Errorf(core.ECodeConflict, "delivery %d is still %s", id, row.State)
		}
		if row.State == string(core.DeliveryWaiting) {
			return core.Errorf(core.ECodeConflict, "delivery %d is waiting in its webhook's line", id)
		}
		var wh webhookRow
		if err := tx.Select("id", "state", "ordered").Where("id = ?", row.WebhookID).Take(&wh).Error; err != nil {
			return err
		}
		if wh.State != string(core.WebhookActive) {
			return core.Errorf(core.ECodeConflict, "webhook %d is deactivated; reactivate it before replaying", wh.ID)
		}
		if wh.Ordered == 1 {
			// On an ordered webhook a replay joins the back of the line: a
			// new delivery of the same notification, after every one
			// already waiting. The finished one keeps its history.
			now := s.now()
			fresh := deliveryRow{NotificationID: row.NotificationID, WebhookID: row.WebhookID, State: string(core.DeliveryWaiting),
				NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
			if err := tx.Create(&fresh).Error; err != nil {
				return err
			}
			if _, err := s.promoteLines(tx, []int64{row.WebhookID}, now); err != nil {
				return err
			}
			return tx.Where("id = ?", fresh.ID).Take(&out).Error
		}
		if a := row.successAttempt(); a != nil {
			// The round about to start rewrites the row's success: the one
			// it holds joins the attempt log first.
			if err := s.insertAttempts(tx, []attemptRow{*a}); err != nil {
				return err
			}
		}
		now := s.now()
		res := tx.Exec(`UPDATE deliveries SET state = ?, attempts = 0, next_attempt_at = ?, completed_at = NULL, lease_token = '', updated_at = ?,
			success_started_at = NULL, success_duration_ms = 0, success_response = '', success_plugin_trace = ''
			WHERE id = ? AND state = ?`,
			string(core.DeliveryPending), now, now, id, row.State)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return core.Errorf(core.ECodeConflict, "delivery %d changed; try again", id)
		}
		return tx.Where("id = ?", id).Take(&out).Error
	})
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return core.Delivery{}, err
		}
		return core.Delivery{}, fmt.Errorf("replay delivery: %w", err)
	}
	return out.domain(), nil
}

// ListDeliveries lists a webhook's deliveries newest first with their attempts.
// Finished deliveries come from ix_deliveries_webhook_done, unfinished ones
// from the queue's index ix_deliveries_due; without a state filter the two
// halves are merged.
func (s *Store) ListDeliveries(ctx context.Context, webhookID int64, state core.DeliveryState, p core.Page) (items []core.DeliveryDetail, next int64, err error) {
	limit := p.PageLimit() + 1
	half := func(pred string) (string, []any) {
		// The unfinished half reads the queue's index and sorts what it
		// finds: ordered by the bare id, PostgreSQL would rather walk the
		// primary key backwards through every finished delivery, expecting
		// the webhook's few queued ones to turn up early.
		order := "id DESC"
		if pred == unfinished {
			order = "id + 0 DESC"
		}
		q, args := `SELECT * FROM deliveries WHERE webhook_id = ? AND `+pred, []any{webhookID}
		if p.Before > 0 {
			q += " AND id < ?"
			args = append(args, p.Before)
		}
		if state != "" {
			q += " AND state = ?"
			args = append(args, string(state))
		}
		return q + " ORDER BY " + order + " LIMIT ?", append(args, limit)
	}
	var q string
	var args []any
	switch state {
	case core.DeliveryPending, core.DeliveryInFlight:
		q, args = half(unfinished)
	case "":
		done, a1 := half(finished)
		queued, a2 := half(unfinished)
		q, args = `SELECT * FROM (`+done+`) AS done UNION ALL SELECT * FROM (`+queued+`) AS queued ORDER BY id DESC LIMIT ?`, append(append(a1, a2...), limit)
	default:
		q, args = half(finished)
	}
	var rows []deliveryRow
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	if len(rows) > p.PageLimit() {
		rows = rows[:p.PageLimit()]
		next = rows[len(rows)-1].ID
	}
	if len(rows) == 0 {
		return []core.DeliveryDetail{}, 0, nil
	}
	ids := make([]int64, len(rows))
	nids := make([]string, len(rows))
	for i, r := range rows {
		ids[i], nids[i] = r.ID, r.NotificationID
	}
	var atts []attemptRow
	if err := s.db.WithContext(ctx).Where("delivery_id IN ?", ids).Order("id").Find(&atts).Error; err != nil {
		return nil, 0, fmt.Errorf("list attempts: %w", err)
	}
	var notes []notificationRow
	if err := s.db.WithContext(ctx).Select("id", "type", "dao").Where("id IN ?", nids).Find(&notes).Error; err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	byNote := map[string]notificationRow{}
	for _, n := range notes {
		byNote[n.ID] = n
	}
	byDelivery := map[int64][]core.Attempt{}
	for _, a := range atts {
		byDelivery[a.DeliveryID] = append(byDelivery[a.DeliveryID], a.domain())
	}
	items = make([]core.DeliveryDetail, len(rows))
	for i, r := range rows {
		log := byDelivery[r.ID]
		if a := r.successAttempt(); a != nil {
			log = append(log, a.domain())
		}
		if log == nil {
			log = []core.Attempt{}
		}
		n := byNote[r.NotificationID]
		items[i] = core.DeliveryDetail{Delivery: r.domain(), NotificationType: n.Type, DAO: n.DAO, AttemptLog: log}
	}
	return items, next, nil
}

// Delivery returns one delivery.
func (s *Store) Delivery(ctx context.Context, id int64) (core.Delivery, error) {
	var row deliveryRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return core.Delivery{}, notFound("delivery")
		}
		return core.Delivery{}, fmt.Errorf("get delivery: %w", err)
	}
	return row.domain(), nil
}

// QueueStats counts the queue.
func (s *Store) QueueStats(ctx context.Context) (core.QueueStats, error) {
	var rows []struct {
		State string
		N     int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT state, COUNT(*) AS n FROM deliveries GROUP BY state`).Scan(&rows).Error; err != nil {
		return core.QueueStats{}, fmt.Errorf("queue stats: %w", err)
	}
	st := core.QueueStats{ByState: map[string]int64{}}
	for _, r := range rows {
		st.ByState[r.State] = r.N
		if r.State == string(core.DeliveryPending) || r.State == string(core.DeliveryInFlight) || r.State == string(core.DeliveryWaiting) {
			st.Depth += r.N
		}
	}
	if st.Depth > 0 {
		// Ids grow with creation time, so the lowest unfinished id is the
		// oldest, found through the primary key.
		var oldest []deliveryRow
		if err := s.db.WithContext(ctx).Select("created_at").Where(unfinished).
			Order("id").Limit(1).Find(&oldest).Error; err != nil {
			return core.QueueStats{}, fmt.Errorf("queue stats: %w", err)
		}
		if len(oldest) == 1 {
			st.OldestPendingAge = s.now().Sub(oldest[0].CreatedAt.UTC())
		}
	}
	return st, nil
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lease token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
