package migrations

import (
	"time"

	"gorm.io/gorm"
)

// migrate0020 gives webhooks what their owners choose (subscription,
// ordering, throttle), a previous secret with its expiry for rotations with
// overlap, and the state that ordering and throttling keep in the shared
// database so that every govgate process agrees on it: the head of an
// ordered webhook's line and the throttle's theoretical arrival time
// (GCRA, in microseconds so that both databases do its arithmetic alike).
// Rotations are logged; consumer_signatures remembers owner-signed
// requests until their window closes, so that none is accepted twice.
// Every new column has a constant default: a catalogue change on
// PostgreSQL, and the fan-out and claim paths of existing webhooks read
// nothing new.
func migrate0020(tx *gorm.DB) error {
	type Webhook struct {
		PrevSecretCiphertext []byte
		PrevSecretExpiresAt  *time.Time
	}
	for _, f := range []string{"PrevSecretCiphertext", "PrevSecretExpiresAt"} {
		if err := tx.Migrator().AddColumn(&Webhook{}, f); err != nil {
			return err
		}
	}
	type WebhookRotation struct {
		ID                int64     `gorm:"primaryKey;autoIncrement"`
		WebhookID         int64     `gorm:"not null;index:ix_webhook_rotations_webhook"`
		RotatedAt         time.Time `gorm:"not null"`
		Actor             string    `gorm:"size:16;not null"`
		OverlapSeconds    int64     `gorm:"not null"`
		PreviousExpiresAt time.Time `gorm:"not null"`
	}
	type ConsumerSignature struct {
		Signature string    `gorm:"primaryKey;size:64"`
		WebhookID int64     `gorm:"not null"`
		ExpiresAt time.Time `gorm:"not null;index:ix_consumer_signatures_expires"`
	}
	if err := tx.Migrator().CreateTable(&WebhookRotation{}, &ConsumerSignature{}); err != nil {
		return err
	}
	for _, q := range []string{
		// "|a|b.*|": a pattern is found with one substring search per
		// candidate, in SQL, without parsing the list per row.
		`ALTER TABLE webhooks ADD COLUMN types TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE webhooks ADD COLUMN daos TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE webhooks ADD COLUMN ordered SMALLINT NOT NULL DEFAULT 0`,
		`ALTER TABLE webhooks ADD COLUMN max_per_second DOUBLE PRECISION NOT NULL DEFAULT 0`,
		`ALTER TABLE webhooks ADD COLUMN burst INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE webhooks ADD COLUMN throttle_tat_us BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE webhooks ADD COLUMN ordered_head BIGINT NOT NULL DEFAULT 0`,
		`CREATE INDEX ix_webhooks_ordered ON webhooks (state, id) WHERE ordered = 1`,
		// The lines of ordered webhooks, in order; empty for everyone else.
		`CREATE INDEX ix_deliveries_waiting ON deliveries (webhook_id, id) WHERE state = 'waiting'`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0020(tx *gorm.DB) error {
	for _, q := range []string{
		`UPDATE deliveries SET state = 'pending' WHERE state = 'waiting'`,
		`DROP INDEX ix_deliveries_waiting`,
		`DROP INDEX ix_webhooks_ordered`,
		`DROP TABLE consumer_signatures`,
		`DROP TABLE webhook_rotations`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	for _, c := range []string{"types", "daos", "ordered", "max_per_second", "burst", "throttle_tat_us", "ordered_head", "prev_secret_ciphertext", "prev_secret_expires_at"} {
		if err := tx.Exec(`ALTER TABLE webhooks DROP COLUMN ` + c).Error; err != nil {
			return err
		}
	}
	return nil
}
