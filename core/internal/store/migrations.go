package store

import (
	"context"
	"fmt"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/govgate/govgate/core/internal/store/migrations"
)

func (s *Store) migrate(ctx context.Context) error {
	opts := migrations.Options()
	opts.UseTransaction = true
	m := gormigrate.New(s.db.WithContext(ctx), opts, migrations.All())
	if s.dialect == Postgres {
		// Several govgate processes may start at once: one migrates, the
		// others wait for it.
		return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(727100001)").Error; err != nil {
				return fmt.Errorf("migrate: lock: %w", err)
			}
			if err := migrations.New(tx).Migrate(); err != nil {
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
