package e2e_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/httpapi"
)

// The pieces the e2e tests are wired from: a dev chain for every test, and
// for the tests that run govgate's parts in this process (rather than the
// built binary) a gateway to it and the public API.

var quiet = slog.New(slog.DiscardHandler)

// startChain starts a dev chain, closed when the test ends.
func startChain(t *testing.T, opts devchain.Options) *devchain.Chain {
	t.Helper()
	c, err := devchain.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newGW returns a gateway to the dev chain, closed when the test ends.
func newGW(t *testing.T, c *devchain.Chain) *chain.Gateway {
	gw, err := chain.New(c.ChainConfig(), chain.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	return gw
}

// serveAPI serves govgate's public API for daos with the given routes
// (httpapi.ProposalRoutes and the like), until the test ends.
func serveAPI(t *testing.T, daos []core.DAO, routes ...func(*gin.Engine)) *httptest.Server {
	api := httptest.NewServer(httpapi.NewAPI(httpapi.APIConfig{DAOs: core.FixedDAOs(daos), Health: staticHealth{}, Logger: quiet, Routes: routes}))
	t.Cleanup(api.Close)
	return api
}

// staticHealth serves no health: the in-process tests read proposals and
// delegates only.
type staticHealth struct{}

func (staticHealth) JSON(string) ([]byte, int, bool) { return nil, 0, false }
