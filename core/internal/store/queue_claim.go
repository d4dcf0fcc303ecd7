package store

import (
	"context"
	"fmt"
	"time"

	"github.com/govgate/govgate/core"
)

// Claiming deliveries: a dispatcher leases due deliveries with what it
// needs to send them (notification, webhook, secrets), and hands back
// those it cannot send yet. The claim's algorithm is the dialect's (see
// dialect.claim).

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

// claimedColumns are what a claim returns of each delivery it leased (c),
// with its notification (n) and webhook (w), in scanClaimed's order.
const claimedColumns = `c.id, c.notification_id, c.webhook_id, c.attempts, n.body, n.trace_parent, w.url, w.state, w.secret_ciphertext,
	w.prev_secret_ciphertext, w.prev_secret_expires_at, w.ordered, w.max_per_second, w.burst`

// claimJoined runs the claim as a data-modifying CTE joined to the
// notifications and webhooks it needs (PostgreSQL).
func (s *Store) claimJoined(ctx context.Context, update string, args []any, token string, now, expires time.Time) ([]core.Job, error) {
	q := `WITH c AS (` + update + `)
		SELECT ` + claimedColumns + `
		FROM c JOIN notifications n ON n.id = c.notification_id JOIN webhooks w ON w.id = c.webhook_id`
	rows, err := s.pool().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	defer rows.Close()
	jobs, orphans, err := s.scanClaimed(rows, token, now, expires)
	if err != nil {
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

// claimedRows is what scanClaimed reads: database/sql's rows, or pgx's in a
// batch.
type claimedRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanClaimed turns the rows of claimedColumns leased under token into
// jobs; orphans are the deliveries of webhooks no longer active, which the
// caller cancels.
func (s *Store) scanClaimed(rows claimedRows, token string, now, expires time.Time) (jobs []core.Job, orphans []int64, err error) {
	notes := map[string]core.Notification{}
	hooks := map[int64]claimedHook{}
	for rows.Next() {
		var (
			j      core.Job
			noteID string
			body   []byte
			h      webhookRow
		)
		if err := rows.Scan(&j.DeliveryID, &noteID, &j.WebhookID, &j.Attempt, &body, &j.TraceParent, &h.URL, &h.State, &h.SecretCiphertext,
			&h.PrevSecretCiphertext, &h.PrevSecretExpiresAt, &h.Ordered, &h.MaxPerSecond, &h.Burst); err != nil {
			return nil, nil, err
		}
		ch, ok := hooks[j.WebhookID]
		if !ok {
			ch = claimedHook{active: h.State == string(core.WebhookActive)}
			if ch.active {
				if ch, err = s.claimedHook(h, now); err != nil {
					return nil, nil, err
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
				return nil, nil, err
			}
			notes[noteID] = n
		}
		j.LeaseToken, j.LeaseExpires, j.Notification, j.Body = token, expires, n, body
		ch.fill(&j)
		jobs = append(jobs, j)
	}
	return jobs, orphans, rows.Err()
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
