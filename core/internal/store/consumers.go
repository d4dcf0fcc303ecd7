package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// What a webhook's owner chooses and the state it keeps: subscriptions
// (matched in the fan-out's SQL), ordered lines, the throttle's bucket,
// rotated secrets and the signatures of owner requests already used.

// encodeList stores a list as "|a|b|" ("" for none), so that one
// substring search finds an item without parsing the list per row.
func encodeList(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return "|" + strings.Join(items, "|") + "|"
}

func decodeList(s string) []string {
	s = strings.Trim(s, "|")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "|")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// subscribed is the SQL condition, on the webhooks table, that a
// webhook's subscription wants a notification of type typ for dao: no
// types or one of the patterns that match typ, and no daos or dao.
func (s *Store) subscribed(typ, dao string) (string, []any) {
	find := s.dialect.containsFormat()
	var b strings.Builder
	var args []any
	b.WriteString("(types = ''")
	for _, p := range core.TypePatternsOf(typ) {
		b.WriteString(" OR " + fmt.Sprintf(find, "types"))
		args = append(args, "|"+p+"|")
	}
	b.WriteString(") AND (daos = '' OR " + fmt.Sprintf(find, "daos") + ")")
	args = append(args, "|"+dao+"|")
	return b.String(), args
}

// settingsChosen is true of a webhook whose owner chose a subscription,
// ordering or a throttle: settings that the fan-out must match in SQL or
// carry in each job. Migration 0050's index has this predicate, word for
// word, and holds only such webhooks.
const settingsChosen = `types <> '' OR daos <> '' OR ordered = 1 OR max_per_second > 0`

// settingsInUse is true when an active webhook has chosen settings: one
// probe of migration 0050's index, empty until an owner chooses, whatever
// the number of webhooks.
const settingsInUse = `EXISTS (SELECT 1 FROM webhooks WHERE state = 'active' AND (` + settingsChosen + `))`

// settingsRecheck is how long a store whose plain fan-out found settings in
// use goes straight to the subscribed one before it tries the plain one
// again: a plain attempt that finds settings in use is a statement thrown
// away, and this bounds how often that happens while owners use them.
const settingsRecheck = time.Second

// plainFanOut reports whether the next fan-out should try the plain
// statements (those of webhooks without settings) first. It is only a
// guess about which statements will do: the plain ones check
// settingsInUse themselves, in the transaction and snapshot that picks the
// webhooks, so that a subscription or ordering chosen a moment ago, in any
// process, is never missed.
func (s *Store) plainFanOut() bool { return time.Now().UnixNano() >= s.settingsUntil.Load() }

// settingsFound records that a plain fan-out found settings in use.
func (s *Store) settingsFound() {
	s.settingsUntil.Store(time.Now().Add(settingsRecheck).UnixNano())
}

// prevSecretAAD binds a rotated-out secret to its webhook URL and to its
// column: it cannot be swapped for the current one.
func prevSecretAAD(url string) []byte { return []byte("govgate/webhook-secret/v1/previous:" + url) }

// OwnerSecrets returns the active webhook registered for url and its
// current secret, for checking an owner's signed request. A URL that is
// unknown or deactivated is not found.
func (s *Store) OwnerSecret(ctx context.Context, url string) (core.Webhook, string, error) {
	var row webhookRow
	err := s.db.WithContext(ctx).Where("url = ? AND state = ?", url, string(core.WebhookActive)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return core.Webhook{}, "", notFound("webhook")
	}
	if err != nil {
		return core.Webhook{}, "", fmt.Errorf("get webhook: %w", err)
	}
	secret, err := s.openSecret(row.URL, row.SecretCiphertext)
	if err != nil {
		return core.Webhook{}, "", err
	}
	return row.domain(), secret, nil
}

// WebhookByURL returns the webhook registered for url, in any state.
func (s *Store) WebhookByURL(ctx context.Context, url string) (core.Webhook, error) {
	return s.webhookByURL(ctx, url)
}

// UseSignature records that an owner's request signed with signature (hex)
// was accepted; fresh is false when it had been already, and the request
// must be refused as a replay. The record is kept until expires, when the
// signature's timestamp leaves the window anyway; expired records are
// swept as new ones come. The shared database makes this hold across
// every govgate process.
func (s *Store) UseSignature(ctx context.Context, webhookID int64, signature string, expires time.Time) (fresh bool, err error) {
	now := s.now()
	db := s.db.WithContext(ctx)
	if err := db.Exec(`DELETE FROM consumer_signatures WHERE expires_at < ?`, now).Error; err != nil {
		return false, fmt.Errorf("sweep used signatures: %w", err)
	}
	res := db.Exec(`INSERT INTO consumer_signatures (signature, webhook_id, expires_at) VALUES (?, ?, ?) ON CONFLICT (signature) DO NOTHING`,
		strings.ToLower(signature), webhookID, expires.UTC())
	if res.Error != nil {
		return false, fmt.Errorf("record signature: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

type rotationRow struct {
	ID                int64
	WebhookID         int64
	RotatedAt         time.Time
	Actor             string
	OverlapSeconds    int64
	PreviousExpiresAt time.Time
}

func (rotationRow) TableName() string { return "webhook_rotations" }

func (r rotationRow) domain() core.Rotation {
	return core.Rotation{ID: r.ID, WebhookID: r.WebhookID, RotatedAt: r.RotatedAt.UTC(), By: r.Actor,
		OverlapSeconds: r.OverlapSeconds, PreviousExpiresAt: r.PreviousExpiresAt.UTC()}
}

// RotateWebhookSecret makes secret the active webhook's current secret.
// The one it replaces keeps verifying (deliveries carry its signature too)
// for overlap; a secret rotated out earlier stops at once, so that at most
// two ever sign. The rotation is logged with who asked for it.
func (s *Store) RotateWebhookSecret(ctx context.Context, id int64, secret string, overlap time.Duration, actor string) (core.Rotation, error) {
	var out rotationRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := s.lockActiveWebhook(tx.Select("id", "url", "state", "secret_ciphertext"), id, "; register it again to get a new secret")
		if err != nil {
			return err
		}
		old, err := s.openSecret(row.URL, row.SecretCiphertext)
		if err != nil {
			return err
		}
		sealed, err := s.cipher.Seal([]byte(secret), secretAAD(row.URL))
		if err != nil {
			return err
		}
		now := s.now()
		until := now.Add(overlap)
		var prev []byte
		var prevUntil *time.Time
		if overlap > 0 {
			if prev, err = s.cipher.Seal([]byte(old), prevSecretAAD(row.URL)); err != nil {
				return err
			}
			prevUntil = &until
		}
		if err := tx.Exec(`UPDATE webhooks SET secret_ciphertext = ?, prev_secret_ciphertext = ?, prev_secret_expires_at = ?, updated_at = ? WHERE id = ?`,
			sealed, prev, prevUntil, now, id).Error; err != nil {
			return err
		}
		out = rotationRow{WebhookID: id, RotatedAt: now, Actor: actor, OverlapSeconds: int64(overlap / time.Second), PreviousExpiresAt: until}
		return tx.Create(&out).Error
	})
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return core.Rotation{}, err
		}
		return core.Rotation{}, fmt.Errorf("rotate webhook secret: %w", err)
	}
	return out.domain(), nil
}

// lockActiveWebhook reads webhook id's columns that q selects, locked for
// the transaction; a webhook that is not active is a conflict, its message
// ending with hint.
func (s *Store) lockActiveWebhook(q *gorm.DB, id int64, hint string) (webhookRow, error) {
	var row webhookRow
	if err := s.dialect.lockForUpdate(q.Where("id = ?", id)).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return row, notFound("webhook")
		}
		return row, err
	}
	if row.State != string(core.WebhookActive) {
		return row, core.Errorf(core.ECodeConflict, "webhook %d is deactivated%s", id, hint)
	}
	return row, nil
}

// UpdateWebhookSettings changes an active webhook's settings. Turning
// ordering on puts the webhook's pending deliveries in line (those in
// flight finish as they are); turning it off lets every waiting one go at
// once. A changed throttle starts with a full bucket.
func (s *Store) UpdateWebhookSettings(ctx context.Context, id int64, p core.SettingsPatch) (core.Webhook, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := s.lockActiveWebhook(tx.Omit("secret_ciphertext", "prev_secret_ciphertext"), id, "")
		if err != nil {
			return err
		}
		before := row.domain().Settings
		set := p.Apply(before)
		now := s.now()
		updates := map[string]any{
			"types": encodeList(set.Types), "daos": encodeList(set.DAOs), "ordered": boolInt(set.Ordered),
			"max_per_second": set.MaxPerSecond, "burst": set.Burst, "updated_at": now,
		}
		if set.Throttle != before.Throttle {
			updates["throttle_tat_us"] = 0
		}
		if set.Ordered != before.Ordered {
			updates["ordered_head"] = 0
		}
		if err := tx.Model(&webhookRow{}).Where("id = ?", id).Updates(updates).Error; err != nil {
			return err
		}
		switch {
		case set.Ordered && !before.Ordered:
			if err := tx.Exec(`UPDATE deliveries SET state = 'waiting', updated_at = ? WHERE webhook_id = ? AND state = 'pending'`, now, id).Error; err != nil {
				return err
			}
			_, err := s.promoteLines(tx, []int64{id}, now)
			return err
		case !set.Ordered && before.Ordered:
			return tx.Exec(`UPDATE deliveries SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE webhook_id = ? AND state = 'waiting'`, now, now, id).Error
		}
		return nil
	})
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) {
			return core.Webhook{}, err
		}
		return core.Webhook{}, fmt.Errorf("update webhook settings: %w", err)
	}
	return s.Webhook(ctx, id)
}

// WebhookView returns a webhook with its ordering line and its rotations,
// newest first (at most 50).
func (s *Store) WebhookView(ctx context.Context, id int64) (core.WebhookView, error) {
	var row webhookRow
	err := s.db.WithContext(ctx).Omit("secret_ciphertext", "prev_secret_ciphertext").Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return core.WebhookView{}, notFound("webhook")
	}
	if err != nil {
		return core.WebhookView{}, fmt.Errorf("get webhook: %w", err)
	}
	v := core.WebhookView{Webhook: row.domain(), Rotations: []core.Rotation{}}
	if exp := v.PreviousSecretExpiresAt; exp != nil && !exp.After(s.now()) {
		v.PreviousSecretExpiresAt = nil
	}
	var rots []rotationRow
	if err := s.db.WithContext(ctx).Where("webhook_id = ?", id).Order("id DESC").Limit(50).Find(&rots).Error; err != nil {
		return core.WebhookView{}, fmt.Errorf("list rotations: %w", err)
	}
	for _, r := range rots {
		v.Rotations = append(v.Rotations, r.domain())
	}
	v.Ordering.Enabled = row.Ordered == 1
	if err := s.db.WithContext(ctx).Raw(`SELECT COUNT(*) FROM deliveries WHERE webhook_id = ? AND state = 'waiting'`, id).Scan(&v.Ordering.Waiting).Error; err != nil {
		return core.WebhookView{}, fmt.Errorf("count waiting deliveries: %w", err)
	}
	if row.OrderedHead != 0 {
		var head []deliveryRow
		if err := s.db.WithContext(ctx).Where("id = ?", row.OrderedHead).Limit(1).Find(&head).Error; err != nil {
			return core.WebhookView{}, fmt.Errorf("get line head: %w", err)
		}
		if len(head) == 1 && (head[0].State == string(core.DeliveryPending) || head[0].State == string(core.DeliveryInFlight)) {
			d := head[0].domain()
			v.Ordering.Head = &d
			// A head that has failed waits for its retries, and the line
			// with it: pending after an attempt, or in flight again (a claim
			// counts the attempt it starts).
			if (d.State == core.DeliveryPending && d.Attempts > 0) || (d.State == core.DeliveryInFlight && d.Attempts > 1) {
				v.Ordering.Blocked = true
				v.Ordering.BlockedReason = fmt.Sprintf("delivery %d (notification %s) failed %d attempt(s), last: %s; next attempt at %s; %d waiting behind it",
					d.ID, d.NotificationID, d.Attempts, orDash(d.LastError), d.NextAttemptAt.Format(time.RFC3339), v.Ordering.Waiting)
			}
		}
	}
	return v, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// promoteLines moves the next waiting delivery of each ordered webhook in
// ids to the front of its line (pending, due now) unless the line already
// has a head that is pending or in flight, and records the head in the
// webhook's ordered_head (0 for an empty line). It runs in the caller's
// transaction and locks each webhook's row first (PostgreSQL), in id order,
// so that two processes never both promote: the statements after the lock
// see whatever the other committed. It returns how many it promoted. How
// it does so is the dialect's: one statement after the lock on
// PostgreSQL, a few per line on SQLite (promoteEach).
func (s *Store) promoteLines(tx *gorm.DB, ids []int64, now time.Time) (int, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return 0, nil
	}
	return s.dialect.promoteLines(tx, ids, now)
}

// promoteEach is promoteLines one line at a time, for SQLite, whose single
// writer makes the lock moot and whose statements cost no round trip.
func promoteEach(tx *gorm.DB, ids []int64, now time.Time) (int, error) {
	promoted := 0
	for _, id := range ids {
		var hooks []webhookRow
		if err := tx.Raw(`SELECT id, state, ordered, ordered_head FROM webhooks WHERE id = ?`, id).Scan(&hooks).Error; err != nil {
			return promoted, fmt.Errorf("promote line: %w", err)
		}
		if len(hooks) == 0 || hooks[0].Ordered != 1 || hooks[0].State != string(core.WebhookActive) {
			continue
		}
		if head := hooks[0].OrderedHead; head != 0 {
			var states []string
			if err := tx.Raw(`SELECT state FROM deliveries WHERE id = ?`, head).Scan(&states).Error; err != nil {
				return promoted, fmt.Errorf("promote line: %w", err)
			}
			if len(states) == 1 && (states[0] == string(core.DeliveryPending) || states[0] == string(core.DeliveryInFlight)) {
				continue
			}
		}
		var next []int64
		if err := tx.Raw(`SELECT id FROM deliveries WHERE webhook_id = ? AND state = 'waiting' ORDER BY id LIMIT 1`, id).Scan(&next).Error; err != nil {
			return promoted, fmt.Errorf("promote line: %w", err)
		}
		head := int64(0)
		if len(next) == 1 {
			head = next[0]
			if err := tx.Exec(`UPDATE deliveries SET state = 'pending', next_attempt_at = ?, updated_at = ? WHERE id = ? AND state = 'waiting'`, now, now, head).Error; err != nil {
				return promoted, fmt.Errorf("promote line: %w", err)
			}
			promoted++
		}
		if head != hooks[0].OrderedHead {
			if err := tx.Exec(`UPDATE webhooks SET ordered_head = ? WHERE id = ?`, head, id).Error; err != nil {
				return promoted, fmt.Errorf("promote line: %w", err)
			}
		}
	}
	return promoted, nil
}

// promote is promoteLines in a transaction of its own.
func (s *Store) promote(ctx context.Context, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n := 0
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		n, err = s.promoteLines(tx, ids, s.now())
		return err
	})
	return n, err
}

// PromoteOrdered gives every ordered webhook whose line has no head its
// next delivery: the fan-out and the completion of a head promote at once,
// and this sweep, which a dispatcher runs on each poll, repairs a line
// whose promotion was lost (a process killed between a PostgreSQL fan-out
// and its promotion). It reads the ordered webhooks through their own
// index: nothing when none is ordered.
func (s *Store) PromoteOrdered(ctx context.Context) (int, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Raw(`SELECT id FROM webhooks WHERE ordered = 1 AND state = ?`, string(core.WebhookActive)).Scan(&ids).Error; err != nil {
		return 0, fmt.Errorf("list ordered webhooks: %w", err)
	}
	return s.promote(ctx, ids)
}

// TakeThrottle asks the webhook's token bucket for one attempt now: 0 when
// granted, else how long until the next one may start. The bucket is GCRA
// (one theoretical arrival time per webhook, in microseconds) updated by a
// single conditional statement, so that every process sharing the database
// draws from the same bucket: over any interval of length L, at most
// Burst + L×MaxPerSecond attempts are granted.
func (s *Store) TakeThrottle(ctx context.Context, webhookID int64, t core.Throttle) (time.Duration, error) {
	if !t.On() {
		return 0, nil
	}
	now := s.now().UnixMicro()
	// Rounded up: the bucket never refills faster than the rate.
	interval := int64(1e6/t.MaxPerSecond) + 1
	tolerance := int64(t.EffectiveBurst()-1) * interval
	res := s.db.WithContext(ctx).Exec(`UPDATE webhooks SET throttle_tat_us = (CASE WHEN throttle_tat_us > ? THEN throttle_tat_us ELSE ? END) + ?
		WHERE id = ? AND throttle_tat_us - ? <= ?`, now, now, interval, webhookID, tolerance, now)
	if res.Error != nil {
		return 0, fmt.Errorf("take throttle: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		return 0, nil
	}
	var tat []int64
	if err := s.db.WithContext(ctx).Raw(`SELECT throttle_tat_us FROM webhooks WHERE id = ?`, webhookID).Scan(&tat).Error; err != nil {
		return 0, fmt.Errorf("take throttle: %w", err)
	}
	if len(tat) == 0 {
		return 0, notFound("webhook")
	}
	return max(time.Duration(tat[0]-tolerance-now)*time.Microsecond, time.Millisecond), nil
}

// ReplayDeliveries replays webhookID's finished deliveries with ids from
// first to last (inclusive, at most 1,000 of them) as Replay does; those
// still queued, or another webhook's, are skipped.
func (s *Store) ReplayDeliveries(ctx context.Context, webhookID, first, last int64) (core.ReplayResult, error) {
	out := core.ReplayResult{Replayed: []core.Delivery{}, Skipped: []int64{}}
	if last < first || last-first >= 1000 {
		return out, core.Errorf(core.ECodeInvalidRequest, "a range holds 1 to 1000 delivery ids")
	}
	var ids []int64
	if err := s.db.WithContext(ctx).Raw(`SELECT id FROM deliveries WHERE webhook_id = ? AND id >= ? AND id <= ? ORDER BY id`, webhookID, first, last).Scan(&ids).Error; err != nil {
		return out, fmt.Errorf("replay deliveries: %w", err)
	}
	for _, id := range ids {
		d, err := s.Replay(ctx, id)
		if core.ErrorCode(err) == core.ECodeConflict {
			out.Skipped = append(out.Skipped, id)
			continue
		}
		if err != nil {
			return out, err
		}
		out.Replayed = append(out.Replayed, d)
	}
	return out, nil
}

// parseIDs reads a comma-separated list of ids (string_agg's).
func parseIDs(s string) []int64 {
	var ids []int64
	for _, f := range strings.Split(s, ",") {
		if id, err := strconv.ParseInt(f, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// openPrevious opens a rotated-out secret that still verifies at now;
// "" once its overlap has ended.
func (s *Store) openPrevious(url string, sealed []byte, until *time.Time, now time.Time) (string, time.Time, error) {
	if len(sealed) == 0 || until == nil || !until.After(now) {
		return "", time.Time{}, nil
	}
	pt, err := s.cipher.Open(sealed, prevSecretAAD(url))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("previous webhook secret: %w", err)
	}
	return string(pt), until.UTC(), nil
}
