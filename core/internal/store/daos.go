package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/govgate/govgate/core"
)

// The DAOs govgate follows live in the daos table: the configuration
// file's (source "config"), seeded at every start, and those the admin API
// adds (source "api"). dao_registries holds one version number that every
// change bumps, so that each process sees a change with one cheap query
// and reloads the list. A DAO's generation is the version at which its
// indexing definition (chain, governor, kind, token, start block) last
// changed: the indexer's writes carry it, and the store refuses those of
// an older generation (see ApplyBatches).

type daoRow struct {
	Slug            string `gorm:"primaryKey"`
	Name            string
	ChainID         uint64
	Governor        string
	Kind            string
	StartBlock      uint64
	Token           string
	NotifyFromBlock *uint64
	NotifyHistory   bool
	Source          string
	Generation      int64
	Position        int64
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (daoRow) TableName() string { return "daos" }

func (r daoRow) domain() core.DAO {
	return core.DAO{Slug: r.Slug, Name: r.Name, ChainID: r.ChainID, Governor: r.Governor, Kind: core.GovernorKind(r.Kind),
		StartBlock: r.StartBlock, Token: r.Token, NotifyFromBlock: r.NotifyFromBlock, NotifyHistory: r.NotifyHistory,
		Source: r.Source, Generation: r.Generation}
}

// ErrDAOFromConfig is returned (wrapped) for a change to a DAO that the
// configuration file defines.
var ErrDAOFromConfig = core.Errorf(core.ECodeConflict, "this dao is defined in the configuration file: change it there")

// DAOsVersion returns the version of the DAO list: it changes with every
// change to it.
func (s *Store) DAOsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.WithContext(ctx).Table("dao_registries").Where("id = 1").Select("version").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("dao list version: %w", err)
	}
	return v, nil
}

// DAOs returns every stored DAO in the order they were added, and the
// list's version.
func (s *Store) DAOs(ctx context.Context) ([]core.DAO, int64, error) {
	var (
		rows []daoRow
		v    int64
	)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Table("dao_registries").Where("id = 1").Select("version").Scan(&v).Error; err != nil {
			return err
		}
		return tx.Order("position, slug").Find(&rows).Error
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list daos: %w", err)
	}
	out := make([]core.DAO, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, v, nil
}

// bump increments the list's version in tx and returns it.
func bump(tx *gorm.DB) (int64, error) {
	if err := tx.Exec(`UPDATE dao_registries SET version = version + 1 WHERE id = 1`).Error; err != nil {
		return 0, fmt.Errorf("bump dao list version: %w", err)
	}
	var v int64
	if err := tx.Table("dao_registries").Where("id = 1").Select("version").Scan(&v).Error; err != nil {
		return 0, err
	}
	return v, nil
}

func rowOf(d core.DAO) daoRow {
	return daoRow{Slug: d.Slug, Name: d.Name, ChainID: d.ChainID, Governor: d.Governor, Kind: string(d.Kind), StartBlock: d.StartBlock,
		Token: d.Token, NotifyFromBlock: d.NotifyFromBlock, NotifyHistory: d.NotifyHistory, Source: d.Source}
}

// SeedDAOs makes the configuration file's DAOs the store's config DAOs: it
// adds those missing, updates those changed (a changed indexing definition
// starts the DAO's index anew) and removes config DAOs the file no longer
// lists. A DAO the admin API added under a slug the file now uses is taken
// over by the file. Nothing changes, and the version stays, when the file
// says what the store has.
func (s *Store) SeedDAOs(ctx context.Context, daos []core.DAO) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Processes starting together seed one after the other.
		if err := s.dialect.serializeSeeding(tx); err != nil {
			return err
		}
		var rows []daoRow
		if err := tx.Find(&rows).Error; err != nil {
			return err
		}
		have := map[string]daoRow{}
		var maxPos int64
		for _, r := range rows {
			have[r.Slug] = r
			maxPos = max(maxPos, r.Position)
		}
		want := map[string]bool{}
		var v int64
		version := func() (int64, error) {
			if v == 0 {
				var err error
				v, err = bump(tx)
				return v, err
			}
			return v, nil
		}
		now := s.now()
		for i, d := range daos {
			want[d.Slug] = true
			d.Source = core.DAOSourceConfig
			row := rowOf(d)
			old, ok := have[d.Slug]
			switch {
			case !ok:
				g, err := version()
				if err != nil {
					return err
				}
				row.Generation, row.Position, row.CreatedAt, row.UpdatedAt = g, int64(i), now, now
				if err := tx.Create(&row).Error; err != nil {
					return fmt.Errorf("seed dao %s: %w", d.Slug, err)
				}
				// An index built before DAOs had generations (a legacy
				// cursor) is the DAO's only if it followed the same
				// governor: the indexer checks (SettleLegacyCursor).
			case sameDAO(old, row) && old.Position == int64(i):
				continue
			default:
				g, err := version()
				if err != nil {
					return err
				}
				row.Generation, row.Position, row.CreatedAt, row.UpdatedAt = old.Generation, int64(i), old.CreatedAt, now
				if old.domain().IndexingChanged(d) || old.Source != core.DAOSourceConfig {
					row.Generation = g
					if err := purgeDAO(tx, d.Slug); err != nil {
						return err
					}
				} else if err := setNotifyFrom(tx, old, row); err != nil {
					return err
				}
				if err := tx.Save(&row).Error; err != nil {
					return fmt.Errorf("seed dao %s: %w", d.Slug, err)
				}
			}
		}
		for _, r := range rows {
			if r.Source == core.DAOSourceConfig && !want[r.Slug] {
				if _, err := version(); err != nil {
					return err
				}
				if err := deleteDAO(tx, r.Slug); err != nil {
					return err
				}
			}
		}
		if err := dropStrayLegacy(tx); err != nil {
			return err
		}
		// API DAOs follow the file's, in the order they were added.
		for _, r := range rows {
			if r.Source == core.DAOSourceAPI && !want[r.Slug] && r.Position < int64(len(daos)) {
				if err := tx.Model(&daoRow{}).Where("slug = ?", r.Slug).Update("position", maxPos+int64(len(daos))+1).Error; err != nil {
					return err
				}
				maxPos++
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("seed daos: %w", err)
	}
	return nil
}

func sameDAO(a, b daoRow) bool {
	na, nb := a.NotifyFromBlock, b.NotifyFromBlock
	return a.Name == b.Name && a.Source == b.Source && !a.domain().IndexingChanged(b.domain()) && a.NotifyHistory == b.NotifyHistory &&
		(na == nil) == (nb == nil) && (na == nil || *na == *nb)
}

// CreateDAO adds a DAO through the admin API. A taken slug is a conflict.
func (s *Store) CreateDAO(ctx context.Context, d core.DAO) (core.DAO, error) {
	d.Source = core.DAOSourceAPI
	row := rowOf(d)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&daoRow{}).Where("slug = ?", d.Slug).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return core.Errorf(core.ECodeConflict, "a dao with slug %q exists", d.Slug)
		}
		g, err := bump(tx)
		if err != nil {
			return err
		}
		var pos int64
		if err := tx.Model(&daoRow{}).Select("COALESCE(MAX(position), -1) + 1").Scan(&pos).Error; err != nil {
			return err
		}
		now := s.now()
		row.Generation, row.Position, row.CreatedAt, row.UpdatedAt = g, pos, now, now
		// Whatever a DAO of this slug left behind belongs to no one now.
		if err := purgeDAO(tx, d.Slug); err != nil {
			return err
		}
		return tx.Create(&row).Error
	})
	if err != nil {
		return core.DAO{}, wrapDAOErr("create dao", err)
	}
	return row.domain(), nil
}

// UpdateDAO changes an API DAO. A change of chain, governor, kind, token or
// start block starts its index anew (a new generation; what was indexed
// is deleted, its notifications kept); a change of the notify settings
// applies to the blocks not indexed yet; the name changes at once.
func (s *Store) UpdateDAO(ctx context.Context, d core.DAO) (core.DAO, error) {
	d.Source = core.DAOSourceAPI
	row := rowOf(d)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var old []daoRow
		q := tx.Where("slug = ?", d.Slug).Limit(1)
		q = s.dialect.lockForUpdate(q)
		if err := q.Find(&old).Error; err != nil {
			return err
		}
		if len(old) == 0 {
			return core.Errorf(core.ECodeNotFound, "no dao %q", d.Slug)
		}
		if old[0].Source == core.DAOSourceConfig {
			return ErrDAOFromConfig
		}
		g, err := bump(tx)
		if err != nil {
			return err
		}
		row.Generation, row.Position, row.CreatedAt, row.UpdatedAt = old[0].Generation, old[0].Position, old[0].CreatedAt, s.now()
		if old[0].domain().IndexingChanged(d) {
			row.Generation = g
			if err := purgeDAO(tx, d.Slug); err != nil {
				return err
			}
		} else if err := setNotifyFrom(tx, old[0], row); err != nil {
			return err
		}
		return tx.Save(&row).Error
	})
	if err != nil {
		return core.DAO{}, wrapDAOErr("update dao", err)
	}
	return row.domain(), nil
}

// setNotifyFrom moves the stored first pushed block of a DAO whose notify
// settings changed; the indexer applies it to the blocks it indexes next.
func setNotifyFrom(tx *gorm.DB, old, row daoRow) error {
	var from *uint64
	switch {
	case row.NotifyHistory:
		zero := uint64(0)
		from = &zero
	case row.NotifyFromBlock != nil:
		from = row.NotifyFromBlock
	}
	if from == nil || sameDAO(old, row) {
		return nil
	}
	return tx.Exec(`UPDATE chain_cursors SET notify_from = ? WHERE dao = ?`, *from, row.Slug).Error
}

// DeleteDAO removes an API DAO and what was indexed of it (its
// notifications and their deliveries stay).
func (s *Store) DeleteDAO(ctx context.Context, slug string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var old []daoRow
		if err := tx.Where("slug = ?", slug).Limit(1).Find(&old).Error; err != nil {
			return err
		}
		if len(old) == 0 {
			return core.Errorf(core.ECodeNotFound, "no dao %q", slug)
		}
		if old[0].Source == core.DAOSourceConfig {
			return ErrDAOFromConfig
		}
		if _, err := bump(tx); err != nil {
			return err
		}
		return deleteDAO(tx, slug)
	})
	return wrapDAOErr("delete dao", err)
}

func deleteDAO(tx *gorm.DB, slug string) error {
	if err := tx.Where("slug = ?", slug).Delete(&daoRow{}).Error; err != nil {
		return err
	}
	if err := tx.Exec(`DELETE FROM dao_probes WHERE dao = ?`, slug).Error; err != nil {
		return err
	}
	return purgeDAO(tx, slug)
}

// purgeDAO deletes what was indexed of a DAO: its cursor, proposals,
// votes (with their overrides) and timelines, delegations and the clock
// points of its token's events, and what its governor said of itself.
// What its probe learned stays: it names its generation (dao_probes), so a
// new definition does not read it.
func purgeDAO(tx *gorm.DB, slug string) error {
	for _, table := range []string{"chain_cursors", "proposal_revisions", "proposals", "votes", "token_events", "delegations", "delegates", "delegated_powers",
		"vote_overrides", "proposal_timeline", "clock_points", "dao_governors"} {
		if err := tx.Exec(`DELETE FROM `+table+` WHERE dao = ?`, slug).Error; err != nil {
			return fmt.Errorf("purge %s of dao %s: %w", table, slug, err)
		}
	}
	return nil
}

func wrapDAOErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *core.Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}
