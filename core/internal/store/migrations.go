package store

import (
	"context"
	"fmt"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrations are append-only: a released migration is never edited, so a
// user who upgrades keeps their data. Each one freezes the table shapes it
// creates instead of reusing live model types.
var migrations = []*gormigrate.Migration{
	{ID: "0001_webhooks_notifications_deliveries", Migrate: migrate0001, Rollback: rollback0001},
	{ID: "0002_plugins_and_chains", Migrate: migrate0002, Rollback: rollback0002},
	{ID: "0003_chain_index", Migrate: migrate0003, Rollback: rollback0003},
	{ID: "0004_deliveries_indexes", Migrate: migrate0004, Rollback: rollback0004},
	{ID: "0005_deliveries_queue_indexes", Migrate: migrate0005, Rollback: rollback0005},
	{ID: "0006_proposal_state_quorum_notify_from", Migrate: migrate0006, Rollback: rollback0006},
	{ID: "0007_notifications_trace_parent", Migrate: migrate0007, Rollback: rollback0007},
	{ID: "0008_delegation", Migrate: migrate0008, Rollback: rollback0008},
	{ID: "0009_token_events_keyed_by_log", Migrate: migrate0009, Rollback: rollback0009},
	{ID: "0010_delegates_listing_indexes", Migrate: migrate0010, Rollback: rollback0010},
	{ID: "0011_deliveries_success_inline", Migrate: migrate0011, Rollback: rollback0011},
	{ID: "0015_vote_overrides_clock_points_timeline", Migrate: migrate0015, Rollback: rollback0015},
	{ID: "0016_dao_governors", Migrate: migrate0016, Rollback: rollback0016},
	{ID: "0020_webhook_consumer_settings", Migrate: migrate0020, Rollback: rollback0020},
	{ID: "0030_chain_shared_cursors", Migrate: migrate0030, Rollback: rollback0030},
	{ID: "0031_notifications_chain_block", Migrate: migrate0031, Rollback: rollback0031},
	{ID: "0032_daos", Migrate: migrate0032, Rollback: rollback0032},
	{ID: "0033_dao_probes", Migrate: migrate0033, Rollback: rollback0033},
	{ID: "0050_webhooks_with_settings_index", Migrate: migrate0050, Rollback: rollback0050},
}

func (s *Store) migrate(ctx context.Context) error {
	m := gormigrate.New(s.db.WithContext(ctx), &gormigrate.Options{
		TableName:                 "schema_migrations",
		IDColumnName:              "id",
		IDColumnSize:              255,
		UseTransaction:            true,
		ValidateUnknownMigrations: true,
	}, migrations)
	if s.dialect == Postgres {
		// Several govgate processes may start at once: one migrates, the
		// others wait for it.
		return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(727100001)").Error; err != nil {
				return fmt.Errorf("migrate: lock: %w", err)
			}
			if err := gormigrate.New(tx, &gormigrate.Options{
				TableName: "schema_migrations", IDColumnName: "id", IDColumnSize: 255,
				ValidateUnknownMigrations: true,
			}, migrations).Migrate(); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			return nil
		})
	}
	if err := m.Migrate(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func migrate0001(tx *gorm.DB) error {
	type Webhook struct {
		ID                  int64     `gorm:"primaryKey;autoIncrement"`
		URL                 string    `gorm:"size:2048;not null;uniqueIndex:ux_webhooks_url"`
		State               string    `gorm:"size:16;not null;index"`
		SecretCiphertext    []byte    `gorm:"not null"`
		CreatedAt           time.Time `gorm:"not null"`
		UpdatedAt           time.Time `gorm:"not null"`
		DeactivatedAt       *time.Time
		DeactivatedReason   string `gorm:"size:512;not null;default:''"`
		ConsecutiveFailures int    `gorm:"not null;default:0"`
		FailingSince        *time.Time
		LastDeliveryAt      *time.Time
		LastSuccessAt       *time.Time
	}
	type Notification struct {
		ID         string    `gorm:"primaryKey;size:128"`
		Type       string    `gorm:"size:64;not null;index:ix_notifications_type"`
		DAO        string    `gorm:"column:dao;size:64;not null;index:ix_notifications_dao"`
		OccurredAt time.Time `gorm:"not null"`
		Body       []byte    `gorm:"not null"`
		Source     string    `gorm:"size:16;not null"`
		CreatedAt  time.Time `gorm:"not null;index:ix_notifications_created"`
	}
	type Delivery struct {
		ID             int64     `gorm:"primaryKey;autoIncrement"`
		NotificationID string    `gorm:"size:128;not null;uniqueIndex:ux_deliveries_notification_webhook,priority:1"`
		WebhookID      int64     `gorm:"not null;uniqueIndex:ux_deliveries_notification_webhook,priority:2;index:ix_deliveries_webhook,priority:1"`
		State          string    `gorm:"size:16;not null"`
		NextAttemptAt  time.Time `gorm:"not null"`
		Attempts       int       `gorm:"not null;default:0"`
		LeaseToken     string    `gorm:"size:64;not null;default:''"`
		LastStatus     int       `gorm:"not null;default:0"`
		LastError      string    `gorm:"size:1024;not null;default:''"`
		CreatedAt      time.Time `gorm:"not null"`
		UpdatedAt      time.Time `gorm:"not null"`
		CompletedAt    *time.Time
	}
	type DeliveryAttempt struct {
		ID              int64     `gorm:"primaryKey;autoIncrement"`
		DeliveryID      int64     `gorm:"not null;index:ix_attempts_delivery"`
		WebhookID       int64     `gorm:"not null"`
		Number          int       `gorm:"not null"`
		StartedAt       time.Time `gorm:"not null"`
		DurationMs      float64   `gorm:"not null"`
		StatusCode      int       `gorm:"not null;default:0"`
		Outcome         string    `gorm:"size:16;not null"`
		Error           string    `gorm:"size:1024;not null;default:''"`
		ResponseExcerpt string    `gorm:"size:2048;not null;default:''"`
		PluginTrace     string    `gorm:"type:text;not null;default:''"`
	}
	if err := tx.Migrator().CreateTable(&Webhook{}, &Notification{}, &Delivery{}, &DeliveryAttempt{}); err != nil {
		return err
	}
	// The claim query walks this partial index in due order and never
	// touches finished deliveries, however many there are.
	return tx.Exec(`CREATE INDEX ix_deliveries_due ON deliveries (next_attempt_at, id) WHERE state IN ('pending', 'in_flight')`).Error
}

func rollback0001(tx *gorm.DB) error {
	return tx.Migrator().DropTable("delivery_attempts", "deliveries", "notifications", "webhooks")
}

// migrate0004 lets listing a webhook's newest deliveries walk
// (webhook_id, id) instead of sorting all of that webhook's rows.
func migrate0004(tx *gorm.DB) error {
	if err := tx.Exec(`CREATE INDEX ix_deliveries_webhook_id ON deliveries (webhook_id, id)`).Error; err != nil {
		return err
	}
	return tx.Exec(`DROP INDEX ix_deliveries_webhook`).Error
}

func rollback0004(tx *gorm.DB) error {
	if err := tx.Exec(`CREATE INDEX ix_deliveries_webhook ON deliveries (webhook_id)`).Error; err != nil {
		return err
	}
	return tx.Exec(`DROP INDEX ix_deliveries_webhook_id`).Error
}

// migrate0005 keeps the queue's row writes off the deliveries table's
// secondary indexes. PostgreSQL rewrites every index entry of a row whose
// indexed (or index-predicate) column changes, and each queue transition
// changes the state. Measured in psql on 10,000 deliveries, the two indexes
// below made each claim and each completion cost 10–15 µs more.
//   - (notification_id, webhook_id) was a unique index that no query reads:
//     a notification fans out once, in the transaction that stores it,
//     guarded by its primary key.
//   - (webhook_id, id), for a webhook's delivery list, now covers finished
//     deliveries only, which are written once more and never again. A
//     webhook's unfinished deliveries are found through ix_deliveries_due,
//     which holds only the queue.
func migrate0005(tx *gorm.DB) error {
	for _, q := range []string{
		`CREATE INDEX ix_deliveries_webhook_done ON deliveries (webhook_id, id) WHERE state NOT IN ('pending', 'in_flight')`,
		`DROP INDEX ix_deliveries_webhook_id`,
		`DROP INDEX ux_deliveries_notification_webhook`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0005(tx *gorm.DB) error {
	for _, q := range []string{
		`CREATE UNIQUE INDEX ux_deliveries_notification_webhook ON deliveries (notification_id, webhook_id)`,
		`CREATE INDEX ix_deliveries_webhook_id ON deliveries (webhook_id, id)`,
		`DROP INDEX ix_deliveries_webhook_done`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// migrate0006 gives proposals the governor's own state, their quorum and
// clock, and the time-driven notifications already emitted (milestones);
// cursors get the first block whose changes are pushed. Rows indexed
// before it said "created" for every open proposal: they become pending,
// and the indexer asks the governor for their state on its next poll.
// Their time-driven notifications are marked sent when voting had ended at
// the cursor (block-clock DAOs), so that an upgrade does not push a
// history of outcomes; a proposal still open gets them.
func migrate0006(tx *gorm.DB) error {
	for _, q := range []string{
		`ALTER TABLE proposals ADD COLUMN clock VARCHAR(16) NOT NULL DEFAULT 'blocknumber'`,
		`ALTER TABLE proposals ADD COLUMN quorum VARCHAR(80)`,
		`ALTER TABLE proposals ADD COLUMN quorum_reached BOOLEAN NOT NULL DEFAULT false`,
		`ALTER TABLE proposals ADD COLUMN milestones BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE chain_cursors ADD COLUMN notify_from BIGINT NOT NULL DEFAULT 0`,
		`UPDATE proposals SET milestones = CASE WHEN vote_end < COALESCE((SELECT c.block FROM chain_cursors c WHERE c.dao = proposals.dao), 0)
			THEN 65535 ELSE 0 END, state = 'pending' WHERE state = 'created'`,
		`CREATE INDEX ix_proposals_state_seq ON proposals (state, seq)`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0006(tx *gorm.DB) error {
	for _, q := range []string{
		`DROP INDEX ix_proposals_state_seq`,
		`UPDATE proposals SET state = 'created' WHERE state IN ('pending', 'active', 'defeated', 'succeeded', 'expired')`,
		`ALTER TABLE chain_cursors DROP COLUMN notify_from`,
		`ALTER TABLE proposals DROP COLUMN milestones`,
		`ALTER TABLE proposals DROP COLUMN quorum_reached`,
		`ALTER TABLE proposals DROP COLUMN quorum`,
		`ALTER TABLE proposals DROP COLUMN clock`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// migrate0007 stores each notification's W3C traceparent with it, so that a
// delivery attempt after a retry or a restart joins the notification's
// trace. A constant default makes the column a catalogue change on
// PostgreSQL (11+), not a table rewrite.
func migrate0007(tx *gorm.DB) error {
	return tx.Exec(`ALTER TABLE notifications ADD COLUMN trace_parent TEXT NOT NULL DEFAULT ''`).Error
}

func rollback0007(tx *gorm.DB) error {
	return tx.Exec(`ALTER TABLE notifications DROP COLUMN trace_parent`).Error
}

// migrate0011 gives a delivery the columns of its successful attempt, which
// it keeps in its own row instead of the attempt log (see
// completeSucceeded): the row is rewritten on success anyway, and an
// attempt-log row with its two index entries was a third of what
// PostgreSQL wrote per delivery. Constant defaults keep the columns a
// catalogue change on PostgreSQL.
func migrate0011(tx *gorm.DB) error {
	type Delivery struct {
		SuccessStartedAt *time.Time
	}
	if err := tx.Migrator().AddColumn(&Delivery{}, "SuccessStartedAt"); err != nil {
		return err
	}
	for _, q := range []string{
		`ALTER TABLE deliveries ADD COLUMN success_duration_ms DOUBLE PRECISION NOT NULL DEFAULT 0`,
		`ALTER TABLE deliveries ADD COLUMN success_response TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE deliveries ADD COLUMN success_plugin_trace TEXT NOT NULL DEFAULT ''`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

func rollback0011(tx *gorm.DB) error {
	for _, c := range []string{"success_started_at", "success_duration_ms", "success_response", "success_plugin_trace"} {
		if err := tx.Exec(`ALTER TABLE deliveries DROP COLUMN ` + c).Error; err != nil {
			return err
		}
	}
	return nil
}

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

// migrate0050 indexes the webhooks whose owner chose a subscription,
// ordering or a throttle, an index that stays empty until one does: the
// fan-out asks it, in the statements that store a notification, whether
// any active webhook needs that machinery, and takes the plain statements
// when none does (settingsInUse). Its predicate is
// settingsChosen word for word, so that both databases match the question
// to it (TestSettingsInUseReadsItsIndex).
func migrate0050(tx *gorm.DB) error {
	return tx.Exec(`CREATE INDEX ix_webhooks_with_settings ON webhooks (state) WHERE types <> '' OR daos <> '' OR ordered = 1 OR max_per_second > 0`).Error
}

func rollback0050(tx *gorm.DB) error {
	return tx.Exec(`DROP INDEX ix_webhooks_with_settings`).Error
}
