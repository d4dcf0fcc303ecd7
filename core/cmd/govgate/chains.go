package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/calldata"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/config"
	"github.com/govgate/govgate/core/internal/health"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/supervisor"
)

// chainService wires the chain gateways, the indexers, the DAO catalog and
// the health monitor. The catalog is the store's daos table: the
// configuration file seeds its DAOs at start, the admin API changes the
// others, and every process reloads it when its version moves.
type chainService struct {
	st       *store.Store
	catalog  *core.LiveDAOs
	log      *slog.Logger
	gateways map[uint64]*chain.Gateway
	runners  map[uint64]*indexer.Runner
	monitor  *health.Monitor

	mu      sync.Mutex // serialises reloads
	version int64      // of the catalog in force
	// decoder decodes proposals' calls for proposal.created and the API.
	decoder *calldata.Decoder
}

// probeTimeout bounds checking one DAO against its chain.
const probeTimeout = 30 * time.Second

// startChains starts, under the supervisor, an indexer per chain, the
// catalog's follower and the health monitor; the gateways close after the
// indexers stop. ctx bounds the start's own calls.
func startChains(ctx context.Context, cfg config.Config, log *slog.Logger, st *store.Store, producer *wakingStore, reg *prometheus.Registry, sup *supervisor.Supervisor) (*chainService, error) {
	s := &chainService{st: st, catalog: core.NewLiveDAOs(nil), log: log, gateways: map[uint64]*chain.Gateway{}, runners: map[uint64]*indexer.Runner{}}
	gwMetrics, ixMetrics := chain.NewMetrics(), indexer.NewMetrics()
	reg.MustRegister(gwMetrics.Collectors()...)
	reg.MustRegister(ixMetrics.Collectors()...)
	dec, err := calldata.New(cfg.Decode)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	s.decoder = dec
	// SIGHUP reads the operator's ABIs and signatures file again (not the
	// config: the files it names), as operators reload other daemons.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	sup.Go("decode: reload on SIGHUP", func(ctx context.Context) error {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-hup:
				if err := dec.Reload(cfg.Decode); err != nil {
					log.Error("decode: reload refused; the ABIs and signatures loaded before stay in force", "err", err)
					continue
				}
				log.Info("decode: reloaded the operator's ABIs and signatures", "abi_dir", cfg.Decode.ABIDir, "signatures_file", cfg.Decode.SignaturesFile)
			}
		}
	}, nil)
	for _, ch := range cfg.Chains {
		gw, err := chain.New(ch, chain.Options{Logger: log, Metrics: gwMetrics})
		if err != nil {
			return nil, err
		}
		s.gateways[ch.ID] = gw
		reg.MustRegister(gw.Collector())
	}
	sup.OnStop("chain gateways", func(context.Context) error {
		for _, gw := range s.gateways {
			gw.Close()
		}
		return nil
	})
	// The runners start with the file's DAOs, which they check against
	// their chains before the store takes them; then with the store's.
	var locker indexer.Locker = storeLocker{st}
	for _, ch := range cfg.Chains {
		gw := s.gateways[ch.ID]
		var filed []core.DAO
		for _, d := range cfg.DAOs {
			if d.ChainID == ch.ID {
				filed = append(filed, d)
			}
		}
		r, err := indexer.NewRunner(gw, indexStore{producer}, locker, ch.ID, ch.Confirmations, filed, cfg.Indexer,
			indexer.Options{Logger: log, Metrics: ixMetrics, AddressesPerRequest: gw.Config().MaxAddressesPerRequest, Actions: dec})
		if err != nil {
			return nil, err
		}
		s.runners[ch.ID] = r
		reg.MustRegister(r.Collector())
	}
	if err := s.seed(ctx, cfg.DAOs); err != nil {
		return nil, err
	}
	if err := s.reload(ctx); err != nil {
		return nil, err
	}
	for id, r := range s.runners {
		sup.Go(fmt.Sprintf("indexer of chain %d", id), r.Run, nil)
	}
	for _, d := range s.catalog.DAOs() {
		if _, ok := s.gateways[d.ChainID]; !ok {
			log.Warn("no chain configured for a DAO: it is listed but not indexed, and its health fails", "dao", d.Slug, "chain_id", d.ChainID)
		}
	}
	// Every process follows the catalog: a DAO another process added is
	// served here within a LockRetry, and indexed by whichever leads.
	sup.Go("DAO catalog", func(ctx context.Context) error {
		s.follow(ctx, cfg.Indexer.LockRetry)
		return nil
	}, nil)
	mon, err := health.NewMonitor(s.catalog, health.Sources{
		PingDB: st.Ping,
		Upstreams: func(chainID uint64) []health.Upstream {
			gw := s.gateways[chainID]
			if gw == nil {
				return nil
			}
			var out []health.Upstream
			for _, u := range gw.Status() {
				out = append(out, health.Upstream{URL: u.URL, State: u.State, ConsecutiveFailures: u.ConsecutiveFailures, TotalFailures: u.TotalFailures,
					LastError: u.LastError, LastErrorAt: u.LastErrorAt, LastSuccessAt: u.LastSuccessAt})
			}
			return out
		},
		Indexer: func(dao string) (health.IndexerStatus, bool) {
			d, ok := s.catalog.DAO(dao)
			if !ok {
				return health.IndexerStatus{}, false
			}
			if r := s.runners[d.ChainID]; r != nil {
				if st, ok := r.Status(dao); ok {
					return st, true
				}
			}
			return health.IndexerStatus{}, false
		},
	}, cfg.Health, health.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	s.monitor = mon
	mon.Refresh()
	sup.Go("health monitor", func(ctx context.Context) error {
		mon.Run(ctx)
		return nil
	}, nil)
	return s, nil
}

// seed checks the configuration file's DAOs that are new or changed since
// the store last saw them against their chains, then makes them the
// store's config DAOs. A DAO its chain refutes stops the start, with the
// field named; a chain that does not answer only delays the check to the
// indexer, which refuses the DAO then (its health says why).
func (s *chainService) seed(ctx context.Context, daos []core.DAO) error {
	stored, _, err := s.st.DAOs(ctx)
	if err != nil {
		return err
	}
	have := map[string]core.DAO{}
	for _, d := range stored {
		have[d.Slug] = d
	}
	index := map[string]int{}
	todo := map[uint64][]string{}
	for i, d := range daos {
		index[d.Slug] = i
		if old, ok := have[d.Slug]; ok && old.Source == core.DAOSourceConfig && !old.IndexingChanged(d) {
			continue
		}
		todo[d.ChainID] = append(todo[d.ChainID], d.Slug)
	}
	for chainID, slugs := range todo {
		r := s.runners[chainID]
		if r == nil {
			continue
		}
		err := r.Check(ctx, slugs)
		var pe *indexer.ProbeError
		if errors.As(err, &pe) {
			return fmt.Errorf("config: daos[%d].%s: %s", index[pe.DAO], pe.Field, pe.Message)
		}
		if err != nil {
			return err
		}
	}
	return s.st.SeedDAOs(ctx, daos)
}

// reload reads the catalog from the store if its version moved, and hands
// each runner its chain's DAOs.
func (s *chainService) reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.st.DAOsVersion(ctx)
	if err != nil {
		return err
	}
	if v == s.version && s.version != 0 {
		return nil
	}
	daos, v, err := s.st.DAOs(ctx)
	if err != nil {
		return err
	}
	// The runners first, then the catalog: health never finds a DAO of
	// the catalog that its runner does not know (it says "added, waiting
	// for the first poll" from here on).
	for id, r := range s.runners {
		if err := r.SetDAOs(daosOf(daos, id)); err != nil {
			return err
		}
	}
	s.catalog.Replace(daos)
	s.version = v
	if s.monitor != nil {
		s.monitor.Refresh()
	}
	return nil
}

func daosOf(daos []core.DAO, chainID uint64) []core.DAO {
	var out []core.DAO
	for _, d := range daos {
		if d.ChainID == chainID {
			out = append(out, d)
		}
	}
	return out
}

// follow reloads the catalog every interval until ctx ends.
func (s *chainService) follow(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.reload(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("reload daos", "err", err)
			}
		}
	}
}

// check refutes a DAO that the admin API would add: its chain must be
// configured here, and answer for its governor and token. It returns what
// the probe learned of the governor, for keep.
func (s *chainService) check(ctx context.Context, d core.DAO) (core.GovernorDetails, error) {
	gw := s.gateways[d.ChainID]
	if gw == nil {
		return core.GovernorDetails{}, httpapi.FieldErr(&core.FieldError{Field: "chain_id", Message: fmt.Sprintf("no chain %d is configured (chains[] in the configuration file)", d.ChainID)})
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	gd, err := indexer.Probe(pctx, gw, d)
	var pe *indexer.ProbeError
	switch {
	case errors.As(err, &pe):
		return gd, httpapi.FieldErr(&core.FieldError{Field: pe.Field, Message: pe.Message})
	case err != nil:
		s.log.Warn("could not check a DAO against its chain", "dao", d.Slug, "err", err)
		return gd, core.Errorf(core.ECodeUnavailable, "chain %d did not answer to check the dao; try again", d.ChainID)
	}
	return gd, nil
}

// keep stores what checking a DAO learned of its governor, for the
// generation the store gave the DAO: the leader indexes it without
// probing it again.
func (s *chainService) keep(ctx context.Context, gd core.GovernorDetails, d core.DAO) {
	gd.DAO, gd.Generation = d.Slug, d.Generation
	if err := s.st.SaveGovernorDetails(ctx, []core.GovernorDetails{gd}); err != nil {
		s.log.Warn("could not keep the governor's details: the indexer probes it again", "dao", d.Slug, "err", err)
	}
}

// CreateDAO implements httpapi.DAOAdmin.
func (s *chainService) CreateDAO(ctx context.Context, d core.DAO) (core.DAO, error) {
	gd, err := s.check(ctx, d)
	if err != nil {
		return core.DAO{}, err
	}
	out, err := s.st.CreateDAO(ctx, d)
	if err != nil {
		return core.DAO{}, err
	}
	s.keep(ctx, gd, out)
	s.log.Info("dao added through the admin API", "dao", d.Slug, "chain_id", d.ChainID, "governor", d.Governor)
	return out, s.reload(ctx)
}

// UpdateDAO implements httpapi.DAOAdmin.
func (s *chainService) UpdateDAO(ctx context.Context, d core.DAO) (core.DAO, error) {
	var (
		gd      core.GovernorDetails
		checked bool
	)
	if old, ok := s.catalog.DAO(d.Slug); !ok || old.IndexingChanged(d) {
		var err error
		if gd, err = s.check(ctx, d); err != nil {
			return core.DAO{}, err
		}
		checked = true
	}
	out, err := s.st.UpdateDAO(ctx, d)
	if err != nil {
		return core.DAO{}, err
	}
	if checked {
		s.keep(ctx, gd, out)
	}
	s.log.Info("dao changed through the admin API", "dao", d.Slug)
	return out, s.reload(ctx)
}

// DeleteDAO implements httpapi.DAOAdmin.
func (s *chainService) DeleteDAO(ctx context.Context, slug string) error {
	if err := s.st.DeleteDAO(ctx, slug); err != nil {
		return err
	}
	s.log.Info("dao removed through the admin API", "dao", slug)
	return s.reload(ctx)
}

func (s *chainService) Health() httpapi.HealthSource { return s.monitor }

// Governor answers what the indexer read of a DAO's governor, from the
// store: every process serving the DAO knows it, not only the indexing one.
func (s *chainService) Governor(ctx context.Context, slug string) (core.GovernorInfo, bool, error) {
	return s.st.Governor(ctx, slug)
}

// DAOs is the catalog in force.
func (s *chainService) DAOs() core.DAOCatalog { return s.catalog }

func (s *chainService) APIRoutes() []func(*gin.Engine) {
	return []func(*gin.Engine){httpapi.ProposalRoutes(httpapi.WithActions(s.st, s.decoder), s.catalog, s.log), httpapi.DelegateRoutes(s.st, s.catalog, s.log)}
}

func (s *chainService) AdminRoutes() []func(*gin.RouterGroup) {
	return []func(*gin.RouterGroup){func(g *gin.RouterGroup) {
		g.GET("/health", func(c *gin.Context) {
			c.JSON(http.StatusOK, gin.H{"items": s.monitor.Snapshots(), "status": s.monitor.Overall()})
		})
		g.GET("/chains", func(c *gin.Context) {
			type chainView struct {
				ID        uint64                 `json:"id"`
				Name      string                 `json:"name"`
				Upstreams []chain.UpstreamStatus `json:"upstreams"`
				Summary   *indexer.Summary       `json:"summary,omitempty"`
				Indexer   []indexer.DAOStatus    `json:"indexer,omitempty"`
			}
			// ?daos=false leaves out the line per DAO, a thousand lines
			// on a chain indexed whole.
			perDAO := c.Query("daos") != "false"
			items := []chainView{}
			for id, gw := range s.gateways {
				v := chainView{ID: id, Name: gw.Config().Name, Upstreams: gw.Status()}
				if r := s.runners[id]; r != nil {
					sum := r.Summary()
					v.Summary = &sum
					if perDAO {
						v.Indexer = r.Statuses()
					}
				}
				items = append(items, v)
			}
			c.JSON(http.StatusOK, gin.H{"items": items})
		})
	}}
}

// indexStore is the store as the indexer uses it; storing a batch with
// notifications wakes the local dispatcher.
type indexStore struct{ *wakingStore }

func (s indexStore) ApplyBatches(ctx context.Context, b core.ChainBatch) ([]string, error) {
	dropped, err := s.Store.ApplyBatches(ctx, b)
	if err != nil {
		return nil, err
	}
	for _, p := range b.DAOs {
		if len(p.Notifications) > 0 {
			s.Wake()
			break
		}
	}
	return dropped, nil
}

// Rollback wakes the dispatcher for the orphan notices it stores.
func (s indexStore) Rollback(ctx context.Context, chainID uint64, to indexer.BlockRef) error {
	if err := s.Store.Rollback(ctx, chainID, to); err != nil {
		return err
	}
	s.Wake()
	return nil
}

// storeLocker hands out the store's chain leases to the indexer.
type storeLocker struct{ st *store.Store }

func (l storeLocker) TryLock(ctx context.Context, chainID uint64) (indexer.Lease, bool, error) {
	lease, ok, err := l.st.TryChainLock(ctx, chainID)
	if !ok || err != nil {
		return nil, ok, err
	}
	return lease, true, nil
}
