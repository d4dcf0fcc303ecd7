package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

type notificationRow struct {
	ID         string
	Type       string
	DAO        string `gorm:"column:dao"`
	OccurredAt time.Time
	Body       []byte
	Source     string
	CreatedAt  time.Time
}

func (notificationRow) TableName() string { return "notifications" }

// NotificationBody is the canonical JSON form of n: the delivery body
// unless a plugin transforms it.
func NotificationBody(n core.Notification) ([]byte, error) {
	data := n.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return nil, fmt.Errorf("notification data: %w", err)
		}
		data = buf.Bytes()
	}
	n.Data = data
	n.OccurredAt = n.OccurredAt.UTC().Truncate(time.Millisecond)
	return json.Marshal(n)
}

// CreateNotification stores n and, in the same transaction, one pending
// delivery for every active webhook. When a notification with the same id
// exists, nothing changes and created is false. It returns only once the
// transaction is committed.
func (s *Store) CreateNotification(ctx context.Context, n core.Notification, source string) (created bool, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		created, err = s.InsertNotificationTx(tx, n, source)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("create notification: %w", err)
	}
	return created, nil
}

// InsertNotificationTx is CreateNotification inside the caller's
// transaction, for producers (the indexer) that must store a notification
// atomically with their own state.
func (s *Store) InsertNotificationTx(tx *gorm.DB, n core.Notification, source string) (bool, error) {
	body, err := NotificationBody(n)
	if err != nil {
		return false, err
	}
	now := s.now()
	res := tx.Exec(`INSERT INTO notifications (id, type, dao, occurred_at, body, source, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		n.ID, n.Type, n.DAO, n.OccurredAt.UTC(), body, source, now)
	if res.Error != nil {
		return false, fmt.Errorf("insert notification: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	// Fan-out is one INSERT … SELECT: enqueueing for 100,000 webhooks is a
	// single statement, not 100,000 round trips.
	if err := tx.Exec(`INSERT INTO deliveries (notification_id, webhook_id, state, next_attempt_at, attempts, lease_token, last_status, last_error, created_at, updated_at)
		SELECT ?, id, ?, ?, 0, '', 0, '', ?, ? FROM webhooks WHERE state = ?`,
		n.ID, string(core.DeliveryPending), now, now, now, string(core.WebhookActive)).Error; err != nil {
		return false, fmt.Errorf("fan out notification: %w", err)
	}
	return true, nil
}

// Notification returns a stored notification.
func (s *Store) Notification(ctx context.Context, id string) (core.Notification, error) {
	var row notificationRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if err == gorm.ErrRecordNotFound {
			return core.Notification{}, notFound("notification")
		}
		return core.Notification{}, fmt.Errorf("get notification: %w", err)
	}
	return row.domain()
}

func (r notificationRow) domain() (core.Notification, error) {
	var n core.Notification
	if err := json.Unmarshal(r.Body, &n); err != nil {
		return core.Notification{}, fmt.Errorf("decode notification %s: %w", r.ID, err)
	}
	return n, nil
}

// ListNotifications lists notifications newest first.
func (s *Store) ListNotifications(ctx context.Context, f core.NotificationFilter) ([]core.Notification, error) {
	limit := core.Page{Limit: f.Limit}.PageLimit()
	q := s.db.WithContext(ctx).Model(&notificationRow{}).Order("created_at DESC, id DESC").Limit(limit)
	if f.DAO != "" {
		q = q.Where("dao = ?", f.DAO)
	}
	if f.Type != "" {
		q = q.Where("type = ?", f.Type)
	}
	if !f.Before.IsZero() {
		q = q.Where("created_at < ?", f.Before.UTC())
	}
	var rows []notificationRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	out := make([]core.Notification, 0, len(rows))
	for _, r := range rows {
		n, err := r.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
