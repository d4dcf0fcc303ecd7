package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

// HealthSource answers a DAO's health snapshot from state kept fresh in the
// background: body is the JSON snapshot, status its HTTP status. ok is false
// for an unknown DAO.
type HealthSource interface {
	JSON(dao string) (body []byte, status int, ok bool)
}

// APIConfig configures NewAPI.
type APIConfig struct {
	// DAOs is the catalog in force: DAOs added or removed at run time are
	// served or refused at once.
	DAOs   core.DAOCatalog
	Health HealthSource
	Logger *slog.Logger
	// Routes adds more routes (proposals).
	Routes []func(e *gin.Engine)
	// Governor, when set, tells what the indexer read of a DAO's governor
	// (its COUNTING_MODE() and clock unit), served with GET /daos; false
	// before it was read.
	Governor func(ctx context.Context, slug string) (core.GovernorInfo, bool, error)
}

// daoItem is a DAO as GET /daos serves it: its configuration, and what
// its governor said of itself once read.
type daoItem struct {
	core.DAO
	CountingMode *string `json:"countingMode,omitempty"`
	ClockMode    *string `json:"clockMode,omitempty"`
}

// NewAPI returns the handler of the REST API listener.
func NewAPI(cfg APIConfig) http.Handler {
	log := cfg.Logger
	e := newEngine(log)
	daos := cfg.DAOs
	if daos == nil {
		daos = core.FixedDAOs{}
	}
	e.GET("/openapi.yaml", serveOpenAPI)
	e.GET("/daos", func(c *gin.Context) {
		list := publicDAOs(daos.DAOs())
		items := make([]daoItem, len(list))
		for i, d := range list {
			items[i].DAO = d
			if cfg.Governor == nil {
				continue
			}
			g, ok, err := cfg.Governor(c.Request.Context(), d.Slug)
			if err != nil {
				// The DAOs are the configuration: a store that cannot
				// answer leaves out what the governor said, not the list.
				log.Warn("read governor", "dao", d.Slug, "err", err)
				continue
			}
			if ok {
				items[i].CountingMode, items[i].ClockMode = &g.CountingMode, &g.ClockMode
			}
		}
		c.JSON(http.StatusOK, gin.H{"items": items})
	})
	e.GET("/:dao/health", func(c *gin.Context) {
		slug := c.Param("dao")
		if _, ok := daos.DAO(slug); !ok {
			writeError(c, log, core.Errorf(core.ECodeUnknownDAO, "unknown dao %q (GET /daos lists them)", slug))
			return
		}
		if cfg.Health == nil {
			writeError(c, log, core.Errorf(core.ECodeUnavailable, "health is not available yet"))
			return
		}
		body, status, ok := cfg.Health.JSON(slug)
		if !ok {
			writeError(c, log, core.Errorf(core.ECodeUnavailable, "health of %q is not computed yet; retry in a second", slug))
			return
		}
		c.Header("Cache-Control", "no-store")
		c.Data(status, "application/health+json", body)
	})
	for _, add := range cfg.Routes {
		add(e)
	}
	return e
}

// publicDAOs is the DAO list as GET /daos serves it: where each DAO is
// defined is the admin's business.
func publicDAOs(list []core.DAO) []core.DAO {
	out := make([]core.DAO, len(list))
	for i, d := range list {
		d.Source = ""
		out[i] = d
	}
	return out
}
