package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/govgate/govgate/core"
)

type pluginRow struct {
	Name       string `gorm:"primaryKey"`
	Version    string
	SHA256     string `gorm:"column:sha256"`
	Size       int
	Source     string
	Enabled    bool
	Wasm       []byte
	UploadedAt time.Time
	UpdatedAt  time.Time
}

func (pluginRow) TableName() string { return "plugins" }

func (r pluginRow) domain() core.StoredPlugin {
	return core.StoredPlugin{Name: r.Name, Version: r.Version, SHA256: r.SHA256, Size: r.Size, Source: r.Source, Enabled: r.Enabled,
		UploadedAt: r.UploadedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Wasm: r.Wasm}
}

type chainRow struct {
	WebhookID int64 `gorm:"primaryKey;autoIncrement:false"`
	Entries   string
	UpdatedAt time.Time
}

func (chainRow) TableName() string { return "plugin_chains" }

// SavePlugin stores a plugin module under its name, replacing an older
// module of that name, and enables it.
func (s *Store) SavePlugin(ctx context.Context, p core.StoredPlugin) (core.StoredPlugin, error) {
	now := s.now()
	row := pluginRow{Name: p.Name, Version: p.Version, SHA256: p.SHA256, Size: len(p.Wasm), Source: p.Source, Enabled: true, Wasm: p.Wasm, UploadedAt: now, UpdatedAt: now}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"version", "sha256", "size", "source", "enabled", "wasm", "uploaded_at", "updated_at"}),
	}).Create(&row).Error
	if err != nil {
		return core.StoredPlugin{}, fmt.Errorf("save plugin: %w", err)
	}
	return row.domain(), nil
}

// Plugins lists the stored plugins by name; with wasm, their modules too.
func (s *Store) Plugins(ctx context.Context, wasm bool) ([]core.StoredPlugin, error) {
	q := s.db.WithContext(ctx).Order("name")
	if !wasm {
		q = q.Omit("wasm")
	}
	var rows []pluginRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list plugins: %w", err)
	}
	out := make([]core.StoredPlugin, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// SetPluginEnabled enables or disables a stored plugin.
func (s *Store) SetPluginEnabled(ctx context.Context, name string, enabled bool) (core.StoredPlugin, error) {
	res := s.db.WithContext(ctx).Model(&pluginRow{}).Where("name = ?", name).Updates(map[string]any{"enabled": enabled, "updated_at": s.now()})
	if res.Error != nil {
		return core.StoredPlugin{}, fmt.Errorf("set plugin enabled: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return core.StoredPlugin{}, notFound("plugin")
	}
	var row pluginRow
	if err := s.db.WithContext(ctx).Omit("wasm").Where("name = ?", name).Take(&row).Error; err != nil {
		return core.StoredPlugin{}, fmt.Errorf("get plugin: %w", err)
	}
	return row.domain(), nil
}

// DeletePlugin removes a stored plugin. Chains that name it keep the entry,
// which then follows its failure policy until it is removed or the plugin
// comes back.
func (s *Store) DeletePlugin(ctx context.Context, name string) error {
	res := s.db.WithContext(ctx).Where("name = ?", name).Delete(&pluginRow{})
	if res.Error != nil {
		return fmt.Errorf("delete plugin: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return notFound("plugin")
	}
	// Touch the chains so that other processes notice the change.
	return s.db.WithContext(ctx).Exec(`UPDATE plugin_chains SET updated_at = ?`, s.now()).Error
}

// Chain returns the chain of a webhook (core.GlobalChain for the global one).
func (s *Store) Chain(ctx context.Context, webhookID int64) ([]core.ChainEntry, error) {
	var row chainRow
	err := s.db.WithContext(ctx).Where("webhook_id = ?", webhookID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return []core.ChainEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get chain: %w", err)
	}
	var entries []core.ChainEntry
	if err := json.Unmarshal([]byte(row.Entries), &entries); err != nil {
		return nil, fmt.Errorf("decode chain: %w", err)
	}
	return entries, nil
}

// SetChain replaces the chain of a webhook (core.GlobalChain for the global one).
func (s *Store) SetChain(ctx context.Context, webhookID int64, entries []core.ChainEntry) error {
	if entries == nil {
		entries = []core.ChainEntry{}
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		return fmt.Errorf("encode chain: %w", err)
	}
	row := chainRow{WebhookID: webhookID, Entries: string(raw), UpdatedAt: s.now()}
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "webhook_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"entries", "updated_at"}),
	}).Create(&row).Error
}

// Chains returns every stored chain by webhook id.
func (s *Store) Chains(ctx context.Context) (map[int64][]core.ChainEntry, error) {
	var rows []chainRow
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list chains: %w", err)
	}
	out := make(map[int64][]core.ChainEntry, len(rows))
	for _, r := range rows {
		var entries []core.ChainEntry
		if err := json.Unmarshal([]byte(r.Entries), &entries); err != nil {
			return nil, fmt.Errorf("decode chain of webhook %d: %w", r.WebhookID, err)
		}
		if len(entries) > 0 {
			out[r.WebhookID] = entries
		}
	}
	return out, nil
}

// PluginsVersion changes whenever a plugin or a chain changes, so that a
// process can poll it cheaply and reload only then.
func (s *Store) PluginsVersion(ctx context.Context) (string, error) {
	var pc, cc int64
	var pt, ct sql.NullString
	row := s.db.WithContext(ctx).Raw(`SELECT (SELECT COUNT(*) FROM plugins), (SELECT MAX(updated_at) FROM plugins),
		(SELECT COUNT(*) FROM plugin_chains), (SELECT MAX(updated_at) FROM plugin_chains)`).Row()
	if err := row.Scan(&pc, &pt, &cc, &ct); err != nil {
		return "", fmt.Errorf("plugins version: %w", err)
	}
	return fmt.Sprintf("%d/%s/%d/%s", pc, pt.String, cc, ct.String), nil
}
