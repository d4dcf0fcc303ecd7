package migrations

import (
	"time"

	"gorm.io/gorm"
)

func migrate0002(tx *gorm.DB) error {
	type Plugin struct {
		Name       string    `gorm:"primaryKey;size:64"`
		Version    string    `gorm:"size:64;not null"`
		SHA256     string    `gorm:"column:sha256;size:64;not null"`
		Size       int       `gorm:"not null"`
		Source     string    `gorm:"size:16;not null"`
		Enabled    bool      `gorm:"not null"`
		Wasm       []byte    `gorm:"not null"`
		UploadedAt time.Time `gorm:"not null"`
		UpdatedAt  time.Time `gorm:"not null"`
	}
	type PluginChain struct {
		WebhookID int64     `gorm:"primaryKey;autoIncrement:false"`
		Entries   string    `gorm:"type:text;not null"`
		UpdatedAt time.Time `gorm:"not null"`
	}
	return tx.Migrator().CreateTable(&Plugin{}, &PluginChain{})
}

func rollback0002(tx *gorm.DB) error {
	return dropTables(tx, "plugin_chains", "plugins")
}
