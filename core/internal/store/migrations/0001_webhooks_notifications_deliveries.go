package migrations

import (
	"time"

	"gorm.io/gorm"
)

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
	return dropTables(tx, "delivery_attempts", "deliveries", "notifications", "webhooks")
}
