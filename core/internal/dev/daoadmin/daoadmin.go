// Package daoadmin is the DAO administration that the admin API's and the
// admin page's tests run on: DAOs are stored in a real store and the
// catalog is reloaded from it after each change, as govgate does, while
// the check of a DAO against its chain is the test's (the e2e tests run
// govgate's own check on a real chain).
package daoadmin

import (
	"context"

	"github.com/govgate/govgate/core"
)

// Store is what Admin needs of the store (core/internal/store's Store).
type Store interface {
	CreateDAO(ctx context.Context, d core.DAO) (core.DAO, error)
	UpdateDAO(ctx context.Context, d core.DAO) (core.DAO, error)
	DeleteDAO(ctx context.Context, slug string) error
	DAOs(ctx context.Context) ([]core.DAO, int64, error)
}

// Admin implements httpapi.DAOAdmin over Store, keeping Catalog in step.
type Admin struct {
	Store   Store
	Catalog *core.LiveDAOs
	// Check refutes a DAO as govgate's check against its chain would;
	// nil accepts every DAO.
	Check func(context.Context, core.DAO) error
}

// New returns an Admin over st with an empty catalog, which Reload fills.
func New(st Store, check func(context.Context, core.DAO) error) *Admin {
	return &Admin{Store: st, Catalog: core.NewLiveDAOs(nil), Check: check}
}

// Reload replaces the catalog with the stored DAOs.
func (a *Admin) Reload(ctx context.Context) error {
	list, _, err := a.Store.DAOs(ctx)
	if err == nil {
		a.Catalog.Replace(list)
	}
	return err
}

func (a *Admin) check(ctx context.Context, d core.DAO) error {
	if a.Check == nil {
		return nil
	}
	return a.Check(ctx, d)
}

// CreateDAO checks d, stores it and reloads the catalog.
func (a *Admin) CreateDAO(ctx context.Context, d core.DAO) (core.DAO, error) {
	if err := a.check(ctx, d); err != nil {
		return core.DAO{}, err
	}
	out, err := a.Store.CreateDAO(ctx, d)
	if err != nil {
		return core.DAO{}, err
	}
	return out, a.Reload(ctx)
}

// UpdateDAO checks d again only when it indexes differently, as govgate
// does, then stores it and reloads the catalog.
func (a *Admin) UpdateDAO(ctx context.Context, d core.DAO) (core.DAO, error) {
	if old, ok := a.Catalog.DAO(d.Slug); !ok || old.IndexingChanged(d) {
		if err := a.check(ctx, d); err != nil {
			return core.DAO{}, err
		}
	}
	out, err := a.Store.UpdateDAO(ctx, d)
	if err != nil {
		return core.DAO{}, err
	}
	return out, a.Reload(ctx)
}

// DeleteDAO removes the DAO and reloads the catalog.
func (a *Admin) DeleteDAO(ctx context.Context, slug string) error {
	if err := a.Store.DeleteDAO(ctx, slug); err != nil {
		return err
	}
	return a.Reload(ctx)
}
