package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// The delivery queue's rows (deliveries and their attempt log), the
// predicates of its partial indexes, and the moves outside the
// claim-and-complete cycle: cancel, replay, count. Claiming is in
// queue_claim.go, recording results in queue_complete.go, reads in
// queue_reads.go.

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

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lease token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
