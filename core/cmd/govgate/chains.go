package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

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
)

// chainService wires the chain gateways, the indexers and the health monitor.
type chainService struct {
	st       *store.Store
	daos     []core.DAO
	log      *slog.Logger
	gateways map[uint64]*chain.Gateway
	runners  map[uint64]*indexer.Runner
	monitor  *health.Monitor
	// decoder decodes proposals' calls for proposal.created and the API.
	decoder *calldata.Decoder
}

func startChains(ctx context.Context, cfg config.Config, log *slog.Logger, st *store.Store, producer *wakingStore, reg *prometheus.Registry, runBG func(string, func(context.Context) error)) (*chainService, error) {
	s := &chainService{st: st, daos: cfg.DAOs, log: log, gateways: map[uint64]*chain.Gateway{}, runners: map[uint64]*indexer.Runner{}}
	gwMetrics, ixMetrics := chain.NewMetrics(), indexer.NewMetrics()
	reg.MustRegister(gwMetrics.Collectors()...)
	reg.MustRegister(ixMetrics.Collectors()...)
	dec, err := calldata.New(cfg.Decode)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	s.decoder = dec
	var locker indexer.Locker = storeLocker{st}
	for _, ch := range cfg.Chains {
		gw, err := chain.New(ch, chain.Options{Logger: log, Metrics: gwMetrics})
		if err != nil {
			return nil, err
		}
		s.gateways[ch.ID] = gw
		reg.MustRegister(gw.Collector())
		var daos []core.DAO
		for _, d := range cfg.DAOs {
			if d.ChainID == ch.ID {
				daos = append(daos, d)
			}
		}
		if len(daos) == 0 {
			continue
		}
		r, err := indexer.NewRunner(gw, indexStore{producer}, locker, ch.ID, ch.Confirmations, daos, cfg.Indexer, indexer.Options{Logger: log, Metrics: ixMetrics, Actions: dec})
		if err != nil {
			return nil, err
		}
		s.runners[ch.ID] = r
		reg.MustRegister(r.Collector())
		runBG(fmt.Sprintf("indexer of chain %d", ch.ID), r.Run)
	}
	for _, d := range cfg.DAOs {
		if _, ok := s.gateways[d.ChainID]; !ok {
			log.Warn("no chain configured for a DAO: it is listed but not indexed, and its health fails", "dao", d.Slug, "chain_id", d.ChainID)
		}
	}
	mon, err := health.NewMonitor(cfg.DAOs, health.Sources{
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
			for _, r := range s.runners {
				if st, ok := r.Status(dao); ok {
					return health.IndexerStatus(st), true
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
	go mon.Run(ctx)
	go func() {
		<-ctx.Done()
		for _, gw := range s.gateways {
			gw.Close()
		}
	}()
	return s, nil
}

func (s *chainService) Health() httpapi.HealthSource { return s.monitor }

// Governor answers what the indexer read of a DAO's governor, from the
// store: every process serving the DAO knows it, not only the indexing one.
func (s *chainService) Governor(ctx context.Context, slug string) (core.GovernorInfo, bool, error) {
	return s.st.Governor(ctx, slug)
}

func (s *chainService) APIRoutes() []func(*gin.Engine) {
	return []func(*gin.Engine){httpapi.ProposalRoutes(httpapi.WithActions(s.st, s.decoder), s.daos, s.log), httpapi.DelegateRoutes(s.st, s.daos, s.log)}
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
				Indexer   []indexer.DAOStatus    `json:"indexer"`
			}
			items := []chainView{}
			for id, gw := range s.gateways {
				v := chainView{ID: id, Name: gw.Config().Name, Upstreams: gw.Status(), Indexer: []indexer.DAOStatus{}}
				if r := s.runners[id]; r != nil {
					v.Indexer = r.Statuses()
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

func (s indexStore) ApplyBatch(ctx context.Context, b indexer.Batch) error {
	if err := s.Store.ApplyBatch(ctx, b); err != nil {
		return err
	}
	if len(b.Notifications) > 0 {
		s.Wake()
	}
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
