//go:build !nodevchain

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/config"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/dev/testcert"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/supervisor"
	"github.com/govgate/govgate/sdk/receiver"
)

// EnvDevReceiverAddr is where `govgate dev` serves its demo receiver.
const EnvDevReceiverAddr = "GOVGATE_DEV_RECEIVER_ADDR"

// devEnv is what `govgate dev` adds to serve: an in-process chain with two
// DAOs and scripted governance activity, and a demo HTTPS receiver,
// registered as a webhook, that verifies every delivery with sdk/receiver
// and logs it, so that a new user sees signed notifications arrive offline.
type devEnv struct {
	chain  *devchain.Chain
	srv    *http.Server
	url    string
	secret atomic.Pointer[string]
	log    *slog.Logger
}

// startDevChain starts the dev chain, its scripted activity and the demo
// receiver under the supervisor, which stops them after everything that
// uses them.
func startDevChain(ctx context.Context, cfg *config.Config, log *slog.Logger, sup *supervisor.Supervisor) (*devEnv, error) {
	c, err := devchain.Start(ctx, devchain.Options{BlockTime: time.Second, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("dev chain: %w", err)
	}
	sup.OnStop("dev chain", func(context.Context) error { return c.Close() })
	d := &devEnv{chain: c, log: log}
	cc := c.ChainConfig()
	cfg.Chains = []chain.ChainConfig{cc.WithDefaults()}
	cfg.DAOs = c.DAOs()
	if slices.Equal(cfg.Indexer.EndingSoon, indexer.Config{}.WithDefaults().EndingSoon) {
		// The dev DAOs vote for minutes, not days: leads that show.
		cfg.Indexer.EndingSoon = []time.Duration{2 * time.Minute, 30 * time.Second}
	}
	log.Info("dev chain running", "rpc", c.RPCURL(), "chain_id", c.ChainID(), "daos", len(cfg.DAOs))
	sup.Go("dev chain activity", func(ctx context.Context) error {
		// A failed scene is logged and the script starts again: dev mode
		// should keep producing governance activity for as long as it runs.
		for ctx.Err() == nil {
			err := c.RunActivity(ctx, 5*time.Second)
			if err == nil || errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return nil
			}
			log.Warn("dev chain scene failed; continuing", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
		return nil
	}, nil)

	// The demo receiver has its own certificate; the delivery client trusts it.
	cert, caPEM, err := testcert.New()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "govgate-dev-")
	if err != nil {
		return nil, err
	}
	if cfg.Delivery.CAFile != "" {
		extra, err := os.ReadFile(cfg.Delivery.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.EnvDeliveryCAFile, err)
		}
		caPEM = append(append(extra, '\n'), caPEM...)
	}
	if cfg.Decode.ABIDir == "" {
		// The ABIs of the dev proposals' own targets, as an operator
		// would file them: their calls decode with names.
		cfg.Decode.ABIDir = filepath.Join(dir, "abis")
		if err := c.WriteABIs(cfg.Decode.ABIDir); err != nil {
			return nil, err
		}
	}
	cfg.Delivery.CAFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(cfg.Delivery.CAFile, caPEM, 0o600); err != nil {
		return nil, err
	}
	if !cfg.Delivery.AllowPrivate {
		cfg.Delivery.AllowPrivate = true
		log.Info("dev mode allows loopback webhook targets (GOVGATE_DELIVERY_ALLOW_PRIVATE=true)")
	}
	addr := os.Getenv(EnvDevReceiverAddr)
	if addr == "" {
		addr = "127.0.0.1:8083"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dev receiver (%s): %w", EnvDevReceiverAddr, err)
	}
	d.url = "https://" + l.Addr().String() + "/govgate"
	d.srv = &http.Server{Handler: http.HandlerFunc(d.receive), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	sup.Go("dev receiver", func(context.Context) error {
		if err := d.srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, shutdownServer(d.srv))
	return d, nil
}

// register makes the demo receiver a webhook (once per database).
func (d *devEnv) register(ctx context.Context, st *store.Store) error {
	secret, err := signing.NewSecret()
	if err != nil {
		return err
	}
	wh, created, err := st.RegisterWebhook(ctx, d.url, secret)
	if err != nil {
		return err
	}
	if !created {
		if secret, err = st.WebhookSecret(ctx, wh.ID); err != nil {
			return err
		}
	}
	d.secret.Store(&secret)
	d.log.Info("dev receiver registered as a webhook; it verifies and logs every delivery", "url", d.url, "webhook", wh.ID)
	return nil
}

func (d *devEnv) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	secret := d.secret.Load()
	if secret == nil {
		http.Error(w, "not registered yet", http.StatusServiceUnavailable)
		return
	}
	if err := receiver.Verify(*secret, r.Header, body, time.Now()); err != nil {
		d.log.Warn("dev receiver refused a delivery", "err", err)
		http.Error(w, err.Error(), receiver.StatusCode(err))
		return
	}
	d.log.Info("dev receiver: signature verified", "id", r.Header.Get("X-Webhook-Id"), "body", excerpt(body, 160))
	w.WriteHeader(http.StatusNoContent)
}

func excerpt(b []byte, n int) string {
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
