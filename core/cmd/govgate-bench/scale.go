package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/dev/rpcproxy"
)

// The scale part: govgate serve indexing every DAO of a chain over an RPC
// that answers each request 50 ms late, as a hosted provider does. The dev
// chain gets -scale-daos DAOs (minimal proxies of one OpenZeppelin governor
// and token, DeployScale) and -scale-history blocks of history with
// governance on some of them, all generated here, at bench time.
var (
	scaleDAOs     = flag.Int("scale-daos", 1000, "DAOs on the chain in the scale part")
	scaleHistory  = flag.Int("scale-history", 10_000, "blocks of history the scale part's backfill reads")
	scaleActive   = flag.Int("scale-active", 50, "DAOs with governance activity while the head lag is measured")
	scaleLagRun   = flag.Duration("scale-lag-run", 5*time.Minute, "how long the head lag is measured, a block every 2 s")
	scaleQuick    = flag.Bool("quick", false, "shorter scale part, for development: the head lag over 1 minute (the figure of record is -scale-lag-run's)")
	scaleLatency  = flag.Duration("scale-latency", 50*time.Millisecond, "latency the RPC proxy adds to every request")
	scaleBaseline = flag.String("scale-baseline", "", "a git revision of govgate before shared reads whose RPC calls per poll at the head to measure too, on -scale-baseline-daos DAOs")
	scaleBaseDAOs = flag.Int("scale-baseline-daos", 100, "DAOs of the baseline run (the old code reads each DAO on its own: 1,000 take minutes a poll)")
)

// scaleBlockTime is the dev chain's block time while the head is measured.
const scaleBlockTime = 2 * time.Second

func scaleBench(ctx context.Context, tmp string) error {
	dir := filepath.Join(tmp, "scale")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	bin := filepath.Join(dir, "govgate")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "nodevchain nomsgpack", "-o", bin, "./core/cmd/govgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build govgate: %v: %s", err, out)
	}
	c, err := devchain.Start(ctx, devchain.Options{Accounts: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now()
	daos, err := c.DeployScale(ctx, *scaleDAOs)
	if err != nil {
		return err
	}
	debugf("scale: %d DAOs deployed in %s", len(daos), time.Since(start).Round(time.Millisecond))
	// History: governance on the active DAOs every 500 blocks.
	act := c.NewScaleActivity(daos[:min(*scaleActive, len(daos))])
	head, err := c.Head(ctx)
	if err != nil {
		return err
	}
	end := head.Number.Uint64() + uint64(*scaleHistory)
	for n := head.Number.Uint64(); n < end; n += 500 {
		for range 3 {
			if _, err := act.Step(ctx); err != nil {
				return err
			}
			c.Commit()
		}
		if err := c.MineTo(ctx, min(n+500, end)); err != nil {
			return err
		}
	}
	debugf("scale: %d blocks of history (%d proposals, %d votes) in %s", *scaleHistory, act.Proposed, act.Voted, time.Since(start).Round(time.Millisecond))

	proxy, err := rpcproxy.Start(c.RPCURL(), *scaleLatency)
	if err != nil {
		return err
	}
	defer proxy.Close()
	if *scaleBaseline != "" {
		if err := scaleBaselineRun(ctx, dir, c, daos[:min(*scaleBaseDAOs, len(daos))], proxy); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
	}
	cfgPath := filepath.Join(dir, "scale.yaml")
	if err := os.WriteFile(cfgPath, []byte(scaleConfig(proxy.URL(), daos, true)), 0o600); err != nil {
		return err
	}
	calls0 := proxy.Total()
	start = time.Now()
	g, err := startGovgateWith(ctx, bin, cfgPath, []string{"GOVGATE_DATABASE_URL=sqlite:" + filepath.Join(dir, "scale.db"), "GOVGATE_ADMIN_TOKEN=" + rssAdmin,
		"GOVGATE_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "GOVGATE_LOG_LEVEL=info"})
	if err != nil {
		return err
	}
	defer g.stop()
	sum, err := waitAtHead(ctx, g, len(daos), 30*time.Minute)
	if err != nil {
		return err
	}
	report("backfill_1000_daos_s", "%.1f", time.Since(start).Seconds())
	report("backfill_1000_daos_rpc_calls", "%.0f", float64(proxy.Total()-calls0))
	debugf("scale: caught up at block %d; calls by method %v", sum.SharedCursor, proxy.Calls())

	// At the head with nothing happening: a block every 2 s, no event.
	stop := mine(c, nil)
	time.Sleep(2 * scaleBlockTime)
	perPoll := callsPerPoll(proxy, 30*time.Second)
	stop()
	report("rpc_calls_per_poll_1000_daos", "%.2f", perPoll)

	// With governance on the active DAOs every block.
	lagRun := *scaleLagRun
	if *scaleQuick {
		lagRun = time.Minute
	}
	stop = mine(c, act)
	lags, err := sampleLag(ctx, c, g, lagRun)
	stop()
	if err != nil {
		return err
	}
	slices.Sort(lags)
	report("head_lag_blocks_1000_daos", "%.0f", lags[len(lags)-1])
	fmt.Printf("rounds head_lag_blocks_1000_daos: (max of %d samples over %s, median %.0f, a block every %s, %d proposals and %d votes on %d DAOs)\n",
		len(lags), lagRun, lags[len(lags)/2], scaleBlockTime, act.Proposed, act.Voted, *scaleActive)

	ms, err := activeProposalsMs(ctx, g)
	if err != nil {
		return err
	}
	report("active_proposals_1000_daos_ms", "%.1f", ms)
	hwm, err := procStatusMB(g.cmd.Process.Pid, "VmHWM")
	if err != nil {
		return err
	}
	report("rss_1000_daos_mb", "%.0f", hwm)
	return nil
}

// scaleConfig is govgate's configuration for the scale part: the chain
// behind the proxy and every DAO, seeded from the file. shared says
// whether the binary knows the settings of shared reads (the baseline
// does not).
func scaleConfig(rpc string, daos []*devchain.Deployment, shared bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log_level: info\nchains:\n  - id: %d\n    name: devchain\n    rpc: [%q]\n    confirmations: 0\n    request_timeout: 30s\n", devchain.ChainID, rpc)
	if shared {
		// An operator indexing a whole chain raises the provider's
		// concurrency from the default 8.
		b.WriteString("    max_concurrency: 16\n")
	}
	b.WriteString("indexer:\n  poll_interval: 2s\n  lagging_blocks: 1000000\ndaos:\n")
	for _, d := range daos {
		fmt.Fprintf(&b, "  - {slug: %s, name: %q, chain_id: %d, governor: %q, kind: %s, start_block: %d}\n",
			d.Slug, d.Name, devchain.ChainID, d.Governor.Hex(), d.Kind, d.StartBlock)
	}
	return b.String()
}

// chainSummary is the part of GET /admin/api/chains?daos=false the bench reads.
type chainSummary struct {
	Leader       bool   `json:"leader"`
	SharedCursor uint64 `json:"sharedCursor"`
	DAOs         int    `json:"daos"`
	AtHead       int    `json:"atHead"`
	Refused      int    `json:"refused"`
}

func (g *govgateProc) summary(ctx context.Context) (chainSummary, error) {
	body, err := g.admin(ctx, http.MethodGet, "/admin/api/chains?daos=false", "")
	if err != nil {
		return chainSummary{}, err
	}
	var out struct {
		Items []struct {
			Summary chainSummary `json:"summary"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Items) != 1 {
		return chainSummary{}, fmt.Errorf("chains: %v: %s", err, body)
	}
	return out.Items[0].Summary, nil
}

// waitAtHead waits until every DAO is at the head.
func waitAtHead(ctx context.Context, g *govgateProc, n int, limit time.Duration) (chainSummary, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		s, err := g.summary(ctx)
		if err == nil && s.DAOs == n && s.AtHead == n {
			return s, nil
		}
		if err == nil && s.Refused > 0 {
			return s, fmt.Errorf("%d DAOs refused:\n%s", s.Refused, tail(g.logs(), 3000))
		}
		select {
		case <-g.exited:
			return s, fmt.Errorf("govgate exited:\n%s", tail(g.logs(), 3000))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return chainSummary{}, fmt.Errorf("not at the head after %s:\n%s", limit, tail(g.logs(), 3000))
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// mine seals a block every scaleBlockTime, after a step of act if set,
// until stop is called.
func mine(c *devchain.Chain, act *devchain.ScaleActivity) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(scaleBlockTime)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if act != nil {
					if _, err := act.Step(context.Background()); err != nil {
						debugf("scale activity: %v", err)
					}
				}
				c.Commit()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// callsPerPoll is the calls through the proxy over d divided by its head
// reads (one per poll).
func callsPerPoll(p *rpcproxy.Proxy, d time.Duration) float64 {
	c0, h0 := p.Total(), p.HeadReads()
	time.Sleep(d)
	c1, h1 := p.Total(), p.HeadReads()
	if h1 == h0 {
		return 0
	}
	debugf("scale: %d calls over %d polls", c1-c0, h1-h0)
	return float64(c1-c0) / float64(h1-h0)
}

// sampleLag samples, every second for d, how many blocks the chain's head
// is ahead of the shared cursor.
func sampleLag(ctx context.Context, c *devchain.Chain, g *govgateProc, d time.Duration) ([]float64, error) {
	var lags []float64
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		s, err := g.summary(ctx)
		if err != nil {
			return nil, err
		}
		h, err := c.Head(ctx)
		if err != nil {
			return nil, err
		}
		lag := 0.0
		if n := h.Number.Uint64(); n > s.SharedCursor {
			lag = float64(n - s.SharedCursor)
		}
		lags = append(lags, lag)
		time.Sleep(time.Second)
	}
	return lags, nil
}

// activeProposalsMs is the median time of GET /proposals?state=active
// over every DAO, of 50 requests after 5 to warm up.
func activeProposalsMs(ctx context.Context, g *govgateProc) (float64, error) {
	var times []float64
	for i := range 55 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+g.apiAddr+"/proposals?state=active", nil)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		var body struct{ Items []json.RawMessage }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET /proposals?state=active: %d %v", resp.StatusCode, err)
		}
		if i == 0 {
			debugf("scale: %d active proposals served", len(body.Items))
		}
		if i >= 5 {
			times = append(times, float64(time.Since(start).Microseconds())/1000)
		}
	}
	return median(times), nil
}

// scaleBaselineRun builds govgate at -scale-baseline and measures its RPC
// calls per poll at the head over daos, with nothing happening.
func scaleBaselineRun(ctx context.Context, dir string, c *devchain.Chain, daos []*devchain.Deployment, proxy *rpcproxy.Proxy) error {
	src := filepath.Join(dir, "baseline-src")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf("git archive %q | tar -x -C %q", *scaleBaseline, src))
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, out)
	}
	bin := filepath.Join(dir, "govgate-baseline")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "nodevchain nomsgpack", "-o", bin, "./core/cmd/govgate")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v: %s", err, out)
	}
	cfgPath := filepath.Join(dir, "baseline.yaml")
	if err := os.WriteFile(cfgPath, []byte(scaleConfig(proxy.URL(), daos, false)), 0o600); err != nil {
		return err
	}
	g, err := startGovgateWith(ctx, bin, cfgPath, []string{"GOVGATE_DATABASE_URL=sqlite:" + filepath.Join(dir, "baseline.db"), "GOVGATE_ADMIN_TOKEN=" + rssAdmin,
		"GOVGATE_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="})
	if err != nil {
		return err
	}
	defer g.stop()
	// Caught up when every DAO is: the old admin API lists each.
	deadline := time.Now().Add(30 * time.Minute)
	for {
		body, err := g.admin(ctx, http.MethodGet, "/admin/api/chains", "")
		if err == nil {
			var out struct {
				Items []struct {
					Indexer []struct{ CaughtUp bool } `json:"indexer"`
				} `json:"items"`
			}
			if json.Unmarshal(body, &out) == nil && len(out.Items) == 1 && len(out.Items[0].Indexer) == len(daos) &&
				!slices.ContainsFunc(out.Items[0].Indexer, func(s struct{ CaughtUp bool }) bool { return !s.CaughtUp }) {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("baseline not caught up:\n%s", tail(g.logs(), 2000))
		}
		time.Sleep(time.Second)
	}
	stop := mine(c, nil)
	defer stop()
	time.Sleep(2 * scaleBlockTime)
	perPoll := callsPerPoll(proxy, time.Minute)
	report(fmt.Sprintf("rpc_calls_per_poll_%d_daos_baseline", len(daos)), "%.1f", perPoll)
	fmt.Printf("rounds rpc_calls_per_poll_%d_daos_baseline: (govgate %s, the code before shared reads, %d DAOs)\n", len(daos), *scaleBaseline, len(daos))
	return nil
}
