package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

type webhookRow struct {
	ID                  int64
	URL                 string
	State               string
	SecretCiphertext    []byte
	CreatedAt           time.Time
	UpdatedAt           time.Time
	DeactivatedAt       *time.Time
	DeactivatedReason   string
	ConsecutiveFailures int
	FailingSince        *time.Time
	LastDeliveryAt      *time.Time
	LastSuccessAt       *time.Time
	// The owner's settings and the state they keep (migration 0020).
	Types                string
	DAOs                 string `gorm:"column:daos"`
	Ordered              int
	MaxPerSecond         float64
	Burst                int
	ThrottleTatUs        int64
	OrderedHead          int64
	PrevSecretCiphertext []byte
	PrevSecretExpiresAt  *time.Time
}

func (webhookRow) TableName() string { return "webhooks" }

func (r webhookRow) domain() core.Webhook {
	return core.Webhook{
		ID: r.ID, URL: r.URL, State: core.WebhookState(r.State),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		DeactivatedAt: utcPtr(r.DeactivatedAt), DeactivatedReason: r.DeactivatedReason,
		ConsecutiveFailures: r.ConsecutiveFailures, FailingSince: utcPtr(r.FailingSince),
		LastDeliveryAt: utcPtr(r.LastDeliveryAt),
		Settings: core.WebhookSettings{
			Subscription: core.Subscription{Types: decodeList(r.Types), DAOs: decodeList(r.DAOs)},
			Ordered:      r.Ordered == 1,
			Throttle:     core.Throttle{MaxPerSecond: r.MaxPerSecond, Burst: r.Burst},
		},
		PreviousSecretExpiresAt: utcPtr(r.PrevSecretExpiresAt),
	}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// secretAAD binds a sealed secret to its webhook URL.
func secretAAD(url string) []byte { return []byte("govgate/webhook-secret/v1:" + url) }

// RegisterWebhook registers url (already normalised) with secret. created
// is true when the secret was stored: a first registration, or the
// reactivation of a deactivated webhook, whose old secret is replaced and
// never signs again. When url is already active nothing changes and created
// is false. Concurrent calls for one url store exactly one secret.
func (s *Store) RegisterWebhook(ctx context.Context, url, secret string) (wh core.Webhook, created bool, err error) {
	return s.RegisterWebhookWith(ctx, url, secret, core.WebhookSettings{})
}

// RegisterWebhookWith is RegisterWebhook with the owner's settings, which
// take effect on a first registration or a reactivation only: an active
// webhook keeps its own.
func (s *Store) RegisterWebhookWith(ctx context.Context, url, secret string, set core.WebhookSettings) (wh core.Webhook, created bool, err error) {
	sealed, err := s.cipher.Seal([]byte(secret), secretAAD(url))
	if err != nil {
		return core.Webhook{}, false, fmt.Errorf("register webhook: %w", err)
	}
	now := s.now()
	types, daos, ordered := encodeList(set.Types), encodeList(set.DAOs), boolInt(set.Ordered)
	// INSERT … ON CONFLICT DO NOTHING makes the first writer win on both
	// databases without an error that would abort a PostgreSQL transaction.
	res := s.db.WithContext(ctx).Exec(
		`INSERT INTO webhooks (url, state, secret_ciphertext, created_at, updated_at, deactivated_reason, consecutive_failures, types, daos, ordered, max_per_second, burst)
		 VALUES (?, ?, ?, ?, ?, '', 0, ?, ?, ?, ?, ?) ON CONFLICT (url) DO NOTHING`,
		url, string(core.WebhookActive), sealed, now, now, types, daos, ordered, set.MaxPerSecond, set.Burst)
	if res.Error != nil {
		return core.Webhook{}, false, fmt.Errorf("register webhook: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		wh, err := s.webhookByURL(ctx, url)
		return wh, true, err
	}
	// The URL exists: reactivate it only if it is deactivated. The state
	// condition makes exactly one concurrent reactivation win. A rotated-out
	// secret goes with the old registration.
	res = s.db.WithContext(ctx).Exec(
		`UPDATE webhooks SET state = ?, secret_ciphertext = ?, updated_at = ?, deactivated_at = NULL,
		   deactivated_reason = '', consecutive_failures = 0, failing_since = NULL,
		   types = ?, daos = ?, ordered = ?, max_per_second = ?, burst = ?, throttle_tat_us = 0, ordered_head = 0,
		   prev_secret_ciphertext = NULL, prev_secret_expires_at = NULL
		 WHERE url = ? AND state = ?`,
		string(core.WebhookActive), sealed, now, types, daos, ordered, set.MaxPerSecond, set.Burst, url, string(core.WebhookDeactivated))
	if res.Error != nil {
		return core.Webhook{}, false, fmt.Errorf("reactivate webhook: %w", res.Error)
	}
	wh, err = s.webhookByURL(ctx, url)
	return wh, res.RowsAffected == 1, err
}

func (s *Store) webhookByURL(ctx context.Context, url string) (core.Webhook, error) {
	var row webhookRow
	err := s.db.WithContext(ctx).Where("url = ?", url).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return core.Webhook{}, notFound("webhook")
	}
	if err != nil {
		return core.Webhook{}, fmt.Errorf("get webhook: %w", err)
	}
	return row.domain(), nil
}

// Webhook returns the webhook with the given id.
func (s *Store) Webhook(ctx context.Context, id int64) (core.Webhook, error) {
	var row webhookRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return core.Webhook{}, notFound("webhook")
	}
	if err != nil {
		return core.Webhook{}, fmt.Errorf("get webhook: %w", err)
	}
	return row.domain(), nil
}

// WebhookSecret returns the plaintext secret of a webhook, for signing.
func (s *Store) WebhookSecret(ctx context.Context, id int64) (string, error) {
	var row webhookRow
	err := s.db.WithContext(ctx).Select("url", "secret_ciphertext").Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", notFound("webhook")
	}
	if err != nil {
		return "", fmt.Errorf("get webhook secret: %w", err)
	}
	return s.openSecret(row.URL, row.SecretCiphertext)
}

func (s *Store) openSecret(url string, sealed []byte) (string, error) {
	pt, err := s.cipher.Open(sealed, secretAAD(url))
	if err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return string(pt), nil
}

// DeactivateWebhook deactivates the active webhook registered for url and
// cancels its pending deliveries. A URL that is unknown or already
// deactivated is not found.
func (s *Store) DeactivateWebhook(ctx context.Context, url, reason string) (core.Webhook, error) {
	return s.deactivate(ctx, "url = ?", url, reason)
}

// DeactivateWebhookByID is DeactivateWebhook by id.
func (s *Store) DeactivateWebhookByID(ctx context.Context, id int64, reason string) (core.Webhook, error) {
	return s.deactivate(ctx, "id = ?", id, reason)
}

func (s *Store) deactivate(ctx context.Context, where string, arg any, reason string) (core.Webhook, error) {
	var out webhookRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row webhookRow
		if err := tx.Where(where+" AND state = ?", arg, string(core.WebhookActive)).Take(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return core.Errorf(core.ECodeNotFound, "no active webhook is registered for this url")
			}
			return err
		}
		now := s.now()
		res := tx.Model(&webhookRow{}).Where("id = ? AND state = ?", row.ID, string(core.WebhookActive)).
			Updates(map[string]any{"state": string(core.WebhookDeactivated), "deactivated_at": now, "deactivated_reason": truncate(reason, 512), "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return core.Errorf(core.ECodeNotFound, "no active webhook is registered for this url")
		}
		if err := cancelUnfinished(tx, row.ID, "webhook deactivated", now); err != nil {
			return err
		}
		row.State, row.DeactivatedAt, row.DeactivatedReason, row.UpdatedAt = string(core.WebhookDeactivated), &now, reason, now
		out = row
		return nil
	})
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return core.Webhook{}, err
		}
		return core.Webhook{}, fmt.Errorf("deactivate webhook: %w", err)
	}
	return out.domain(), nil
}

// ReactivateWebhookByID reactivates a deactivated webhook from the admin
// API, keeping its secret: the owner asked for nothing new and could not
// receive a new secret. Re-registering through POST /webhooks is the way to
// rotate it.
func (s *Store) ReactivateWebhookByID(ctx context.Context, id int64) (core.Webhook, error) {
	now := s.now()
	res := s.db.WithContext(ctx).Model(&webhookRow{}).Where("id = ? AND state = ?", id, string(core.WebhookDeactivated)).
		Updates(map[string]any{"state": string(core.WebhookActive), "deactivated_at": nil, "deactivated_reason": "",
			"consecutive_failures": 0, "failing_since": nil, "updated_at": now})
	if res.Error != nil {
		return core.Webhook{}, fmt.Errorf("reactivate webhook: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		if _, err := s.Webhook(ctx, id); err != nil {
			return core.Webhook{}, err
		}
		return core.Webhook{}, core.Errorf(core.ECodeConflict, "webhook is already active")
	}
	return s.Webhook(ctx, id)
}

// ListWebhooks lists webhooks newest first. next is the Before of the next
// page, 0 when there is none.
func (s *Store) ListWebhooks(ctx context.Context, f core.WebhookFilter, p core.Page) (items []core.Webhook, next int64, err error) {
	q := s.db.WithContext(ctx).Model(&webhookRow{}).Order("id DESC").Limit(p.PageLimit() + 1)
	if p.Before > 0 {
		q = q.Where("id < ?", p.Before)
	}
	if f.State != "" {
		q = q.Where("state = ?", string(f.State))
	}
	if f.Search != "" {
		// LOWER on both sides: SQLite's LIKE ignores case, PostgreSQL's does not.
		q = q.Where(`LOWER(url) LIKE ? ESCAPE '\'`, "%"+escapeLike(strings.ToLower(f.Search))+"%")
	}
	var rows []webhookRow
	if err := q.Omit("secret_ciphertext", "prev_secret_ciphertext").Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("list webhooks: %w", err)
	}
	if len(rows) > p.PageLimit() {
		rows = rows[:p.PageLimit()]
		next = rows[len(rows)-1].ID
	}
	items = make([]core.Webhook, len(rows))
	for i, r := range rows {
		items[i] = r.domain()
	}
	return items, next, nil
}

// escapeLike makes s match itself literally inside a LIKE pattern.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the column holds valid UTF-8.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
