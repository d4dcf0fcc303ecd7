package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/govgate/govgate/core/internal/dev/testcert"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

// The rss part measures the resident memory of the delivering gateway
// itself: a separate `govgate serve` process, built as `go tool task build`
// builds the production binary, run with configs/govgate.yaml (the
// defaults: 64 workers, claims of 64, the delivery backlog) while 100,000
// deliveries are pending: 10,000 active webhooks, and 10 notifications for
// all of them posted to its admin API one after another, which fans each out
// (as many deliveries as the backlog holds go straight to the workers, in
// memory; the rest are queued).
//
// Plugins: the examples that plugins/build.sh builds, loaded from
// GOVGATE_PLUGINS_DIR as `go tool task run` loads them. The headline
// figures have no chain (the default: loaded plugins that no chain names
// sleep, keeping only their binaries); rss_100k_pending_mb_chain adds a
// global chain of dao-filter then slack, two Go plugins whose instances
// run for every attempt.
//
// The receiver first is slow (it takes each request and never answers: the
// attempt times out after the default 10 s, so that workers, connections
// and the backlog stay full), then refuses (it closes every connection it
// has or gets: attempts fail at once and the dispatcher churns through the
// queue, rescheduling each delivery). Nothing succeeds: at the end every
// delivery must still be unfinished.
//
// The figure is the highest VmRSS of /proc/PID/status, sampled every 50 ms
// while the deliveries are pending: from 5 s after govgate's first garbage
// collection since the first notification's post (GODEBUG=gctrace=1 lines
// in its log) to the end of both phases. Until then the process may still
// hold what its start (compiling the plugins) left: the heap goal that
// compilation set lets the runtime keep freed pages (up to 100 MB more in
// the runs that set these numbers), and it returns them within 1-5 s of
// the collection that lowers the goal. That depends on when the collector
// happens to run, not on the queue; the peak with it, and VmHWM, the
// lifetime peak, go to stderr with each round.
const (
	rssWebhooks      = 10_000
	rssNotifications = 10
	rssSlowFor       = 15 * time.Second
	rssRefuseFor     = 15 * time.Second
	rssSampling      = 50 * time.Millisecond
	rssGrace         = 5 * time.Second
	rssSecretKey     = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // base64 of the bench's box key
	rssAdmin         = "bench-admin-token"
)

var (
	rssStores = flag.String("rss-stores", "postgres,sqlite", "stores the rss part runs govgate on, comma-separated: postgres, sqlite")
	rssRounds = flag.Int("rss-rounds", 3, "rounds of each rss figure (each takes about 40 s)")
)

// rssResult is one round's memory figures of the govgate process, in MB:
// VmRSS before the first notification, its peak once the start's leftovers
// are gone (the figure; see sample), its peak from the first post, and
// VmHWM.
type rssResult struct {
	idle, peak, window, hwm float64
}

// rssBuild builds the production govgate binary and the example plugins
// into dir; it returns the binary and the plugin directory.
func rssBuild(ctx context.Context, dir string) (bin, plugins string, err error) {
	bin, plugins = filepath.Join(dir, "govgate"), filepath.Join(dir, "plugins")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "nodevchain nomsgpack", "-ldflags", "-s -w", "-o", bin, "./core/cmd/govgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build govgate: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "bash", "plugins/build.sh", plugins).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build plugins: %v: %s", err, out)
	}
	return bin, plugins, nil
}

// rssRound runs one round on dbURL, an empty database, in dir, with the
// plugins in the directory plugins ("": none), and with a global chain
// through two of them if chain.
func rssRound(ctx context.Context, bin, plugins string, chain bool, dir, dbURL string) (rssResult, error) {
	rcv, err := startStallReceiver(dir)
	if err != nil {
		return rssResult{}, err
	}
	defer rcv.close()

	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st, err := store.Open(ctx, dbURL, box, store.Options{MaxOpenConns: 8})
	if err != nil {
		return rssResult{}, err
	}
	err = registerWebhooks(ctx, st, rcv.addr, rssWebhooks)
	st.Close()
	if err != nil {
		return rssResult{}, err
	}

	g, err := startGovgate(ctx, bin, []string{
		"GOVGATE_DATABASE_URL=" + dbURL,
		"GOVGATE_SECRET_KEY=" + rssSecretKey,
		"GOVGATE_ADMIN_TOKEN=" + rssAdmin,
		"GOVGATE_DELIVERY_ALLOW_PRIVATE=true",
		"GOVGATE_DELIVERY_CA_FILE=" + rcv.caFile,
		"GOVGATE_PLUGINS_DIR=" + plugins,
	})
	if err != nil {
		return rssResult{}, err
	}
	defer g.stop()
	if chain {
		chain := `{"items": [{"plugin": "dao-filter", "config": {"daos": ["uniswap"]}}, {"plugin": "slack", "config": {}}]}`
		if _, err := g.admin(ctx, http.MethodPut, "/admin/api/chain", chain); err != nil {
			return rssResult{}, err
		}
	}
	time.Sleep(5 * time.Second) // idle, as a gateway is between bursts
	pid := g.cmd.Process.Pid
	var res rssResult
	if res.idle, err = procStatusMB(pid, "VmRSS"); err != nil {
		return rssResult{}, err
	}

	gc0, logFrom := g.collections(), len(g.logs())
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan rssResult, 1)
	go func() { sampled <- g.sample(sctx, gc0) }()
	for i := 0; i < rssNotifications; i++ {
		_, body := notificationBody(i)
		if _, err := g.admin(ctx, http.MethodPost, "/admin/api/notifications", string(body)); err != nil {
			stopSampling()
			<-sampled
			return rssResult{}, err
		}
	}
	time.Sleep(rssSlowFor)
	rcv.refuse()
	time.Sleep(rssRefuseFor)
	stopSampling()
	s := <-sampled
	res.peak, res.window = s.peak, s.window
	if res.peak == 0 {
		return rssResult{}, fmt.Errorf("govgate collected no garbage in the first %s of pending deliveries", rssSlowFor+rssRefuseFor-rssGrace)
	}
	if res.hwm, err = procStatusMB(pid, "VmHWM"); err != nil {
		return rssResult{}, err
	}

	raw, err := g.admin(ctx, http.MethodGet, "/admin/api/stats", "")
	if err != nil {
		return rssResult{}, err
	}
	var stats struct {
		QueueDepth        int64            `json:"queueDepth"`
		DeliveriesByState map[string]int64 `json:"deliveriesByState"`
	}
	if err := json.Unmarshal(raw, &stats); err != nil {
		return rssResult{}, fmt.Errorf("stats: %w", err)
	}
	if want := int64(rssWebhooks * rssNotifications); stats.QueueDepth != want {
		return rssResult{}, fmt.Errorf("%d deliveries unfinished at the end, want all %d (%v)", stats.QueueDepth, want, stats.DeliveriesByState)
	}
	if os.Getenv("GOVGATE_BENCH_DEBUG") != "" {
		for _, line := range strings.Split(g.logs()[logFrom:], "\n") {
			if gcLine.MatchString(line) {
				debugf("  %s", line)
			}
		}
		g.debugMemory(ctx)
		held, refused := rcv.counts()
		debugf("rss %s: idle %.0f MB, peak %.0f MB (%.0f with the start's garbage), VmHWM %.0f MB; requests held by the slow receiver %d, connections refused %d; %v",
			dbURL[:8], res.idle, res.peak, res.window, res.hwm, held, refused, stats.DeliveriesByState)
	}
	return res, nil
}

// registerWebhooks stores n active webhooks for the receiver at addr, as
// many goroutines as the database takes writers.
func registerWebhooks(ctx context.Context, st *store.Store, addr string, n int) error {
	writers := 8
	if st.Dialect() == store.SQLite {
		writers = 1
	}
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			for i := w; i < n; i += writers {
				if _, _, err := st.RegisterWebhook(ctx, fmt.Sprintf("https://%s/hook/%d", addr, i), benchSecret); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// stallReceiver is an HTTPS receiver that never answers: while slow it
// holds every request it gets, and once told to refuse it closes every
// connection it holds or gets.
type stallReceiver struct {
	l       net.Listener
	addr    string
	caFile  string
	mu      sync.Mutex
	refused bool
	conns   map[net.Conn]bool
	// requests held while slow, connections refused
	requests, refusals int
}

func startStallReceiver(dir string) (*stallReceiver, error) {
	cert, caPEM, err := testcert.New()
	if err != nil {
		return nil, err
	}
	r := &stallReceiver{caFile: filepath.Join(dir, "stall-ca.pem"), conns: map[net.Conn]bool{}}
	if err := os.WriteFile(r.caFile, caPEM, 0o600); err != nil {
		return nil, err
	}
	if r.l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	r.addr = r.l.Addr().String()
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	go func() {
		for {
			c, err := r.l.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			if r.refused {
				r.refusals++
				r.mu.Unlock()
				c.(*net.TCPConn).SetLinger(0) // a reset, as from a host with nothing listening
				c.Close()
				continue
			}
			r.conns[c] = true
			r.mu.Unlock()
			go r.hold(tls.Server(c, cfg))
		}
	}()
	return r, nil
}

// hold reads requests off c and answers none of them.
func (r *stallReceiver) hold(c *tls.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.requests++
		r.mu.Unlock()
	}
}

func (r *stallReceiver) refuse() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = true
	for c := range r.conns {
		c.Close()
	}
	r.conns = map[net.Conn]bool{}
}

func (r *stallReceiver) counts() (requests, refusals int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, r.refusals
}

func (r *stallReceiver) close() {
	r.refuse()
	r.l.Close()
}

// govgateProc is a running `govgate serve`.
type govgateProc struct {
	cmd       *exec.Cmd
	adminAddr string
	apiAddr   string
	log       *bytes.Buffer
	logMu     sync.Mutex
	gcs       int // GODEBUG=gctrace=1 lines in log
	exited    chan struct{}
}

// listening is serve's log line for a listener it opened.
var listening = regexp.MustCompile(`msg=listening listener=(\w+) addr=http://(\S+)`)

// startGovgate starts `govgate serve` with configs/govgate.yaml and env on
// ports the kernel picks, which it learns from the log (as the e2e
// harness does).
func startGovgate(ctx context.Context, bin string, env []string) (*govgateProc, error) {
	return startGovgateWith(ctx, bin, "configs/govgate.yaml", env)
}

// startGovgateWith is startGovgate with the configuration file cfgPath.
func startGovgateWith(ctx context.Context, bin, cfgPath string, env []string) (*govgateProc, error) {
	g := &govgateProc{log: &bytes.Buffer{}, exited: make(chan struct{})}
	g.cmd = exec.Command(bin, "serve", "--config", cfgPath)
	// gctrace prints a line a collection on stderr: the bench counts them
	// from the log, where scraping the metrics would add to the memory
	// measured.
	godebug := "gctrace=1"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	g.cmd.Env = append(append(os.Environ(), env...), "GODEBUG="+godebug,
		"GOVGATE_API_ADDR=127.0.0.1:0", "GOVGATE_WEBHOOKS_ADDR=127.0.0.1:0", "GOVGATE_ADMIN_ADDR=127.0.0.1:0", "GOVGATE_LOG_FORMAT=text")
	g.cmd.Stdout, g.cmd.Stderr = g, g
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { g.cmd.Wait(); close(g.exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		found := map[string]string{}
		for _, m := range listening.FindAllStringSubmatch(g.logs(), -1) {
			found[m[1]] = m[2]
		}
		if len(found) == 3 {
			g.adminAddr, g.apiAddr = found["admin"], found["api"]
			return g, nil
		}
		select {
		case <-g.exited:
			return nil, fmt.Errorf("govgate exited at start:\n%s", g.logs())
		case <-ctx.Done():
			g.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	g.stop()
	return nil, fmt.Errorf("govgate did not start:\n%s", g.logs())
}

// gcLine is the start of a line of GODEBUG=gctrace=1.
var gcLine = regexp.MustCompile(`(?m)^gc \d+ @`)

func (g *govgateProc) Write(p []byte) (int, error) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	g.gcs += len(gcLine.FindAllIndex(p, -1))
	return g.log.Write(p)
}

// collections is how many garbage collections govgate has logged.
func (g *govgateProc) collections() int {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.gcs
}

func (g *govgateProc) logs() string {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.log.String()
}

// stop ends govgate with SIGTERM, or SIGKILL after 30 s.
func (g *govgateProc) stop() {
	select {
	case <-g.exited:
		return
	default:
	}
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(30 * time.Second):
		g.cmd.Process.Kill()
		<-g.exited
	}
}

// admin calls the admin API and returns the answer's body; a status other
// than 2xx is an error.
func (g *govgateProc) admin(ctx context.Context, method, path, body string) ([]byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+g.adminAddr+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+rssAdmin)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return out, nil
}

// sample reads govgate's VmRSS every rssSampling until ctx ends. The
// peak it returns starts rssGrace after govgate's first garbage collection
// since it had made gc0: what the start left (the plugins' compilation) is
// not what the pending deliveries hold. window is the peak from the start.
func (g *govgateProc) sample(ctx context.Context, gc0 int) rssResult {
	var res rssResult
	collected, second, mark := false, 0.0, ""
	var collectedAt time.Time
	var series []string // each second's peak (debug output)
	t := time.NewTicker(rssSampling)
	defer t.Stop()
	for i := 1; ; i++ {
		if mb, err := procStatusMB(g.cmd.Process.Pid, "VmRSS"); err == nil {
			res.window, second = max(res.window, mb), max(second, mb)
			if collected {
				res.peak = max(res.peak, mb)
			}
		}
		if collectedAt.IsZero() && g.collections() > gc0 {
			collectedAt = time.Now()
		}
		if !collected && !collectedAt.IsZero() && time.Since(collectedAt) >= rssGrace {
			collected, mark = true, "|"
		}
		if i%int(time.Second/rssSampling) == 0 {
			series, second, mark = append(series, fmt.Sprintf("%s%.0f", mark, second)), 0, ""
		}
		select {
		case <-ctx.Done():
			debugf("rss each second, MB (| counted from here): %s", strings.Join(series, " "))
			return res
		case <-t.C:
		}
	}
}

// procStatusMB reads a field of /proc/PID/status given in kB (VmRSS, VmHWM)
// in MB.
func procStatusMB(pid int, field string) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			kb, err := strconv.ParseFloat(f[0], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// rssBench reports rss_100k_pending_mb (PostgreSQL, the production store),
// rss_100k_pending_mb_sqlite (the default store) and
// rss_100k_pending_mb_chain (PostgreSQL, two Go plugins in the delivery
// path): each the median of -rss-rounds rounds, every round's figures on
// stderr.
func rssBench(ctx context.Context, tmp string, newDB func(name string) (string, error)) error {
	dir := filepath.Join(tmp, "rss")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	bin, plugins, err := rssBuild(ctx, dir)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		name, store, plugins string
		chain                bool
	}{
		{"rss_100k_pending_mb", "postgres", plugins, false},
		{"rss_100k_pending_mb_sqlite", "sqlite", plugins, false},
		{"rss_100k_pending_mb_chain", "postgres", plugins, true},
	} {
		if !slices.Contains(strings.Split(*rssStores, ","), c.store) {
			continue
		}
		var peaks []float64
		var each []string
		for r := 0; r < *rssRounds; r++ {
			rdir := filepath.Join(dir, fmt.Sprintf("round%d", r))
			if err := os.MkdirAll(rdir, 0o700); err != nil {
				return err
			}
			url := "sqlite:" + filepath.Join(rdir, "govgate.db")
			if c.store == "postgres" {
				if url, err = newDB(fmt.Sprintf("bench_rss_%d", r)); err != nil {
					return err
				}
			}
			res, err := rssRound(ctx, bin, c.plugins, c.chain, rdir, url)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			os.RemoveAll(rdir)
			peaks = append(peaks, res.peak)
			each = append(each, fmt.Sprintf("%.0f (idle before %.0f; with the start's garbage %.0f; VmHWM %.0f)", res.peak, res.idle, res.window, res.hwm))
		}
		reportMedian(c.name, "%.0f", peaks)
		fmt.Fprintf(os.Stderr, "%s rounds, MB: %s\n", c.name, strings.Join(each, "; "))
	}
	return nil
}

// debugMemory prints where govgate's resident memory is (debug output):
// its Go runtime's own figures and its mappings' resident sizes by kind.
func (g *govgateProc) debugMemory(ctx context.Context) {
	if raw, err := g.admin(ctx, http.MethodGet, "/metrics", ""); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			for _, m := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes", "go_memstats_next_gc_bytes", "go_goroutines"} {
				if f := strings.Fields(line); len(f) == 2 && f[0] == m {
					v, _ := strconv.ParseFloat(f[1], 64)
					if strings.HasSuffix(m, "_bytes") {
						fmt.Fprintf(os.Stderr, "debug:   %s %.1f MB\n", m, v/(1<<20))
					} else {
						fmt.Fprintf(os.Stderr, "debug:   %s %.0f\n", m, v)
					}
				}
			}
		}
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", g.cmd.Process.Pid))
	if err != nil {
		return
	}
	kb := map[string]float64{}
	kind := ""
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") {
			// A mapping's header: address range, perms, offset, dev, inode, [path].
			kind = "anon " + f[1]
			if len(f) >= 6 {
				kind = f[5] + " " + f[1]
			}
			continue
		}
		if len(f) == 3 && f[0] == "Rss:" {
			v, _ := strconv.ParseFloat(f[1], 64)
			kb[kind] += v
		}
	}
	for k, v := range kb {
		if v >= 1024 {
			fmt.Fprintf(os.Stderr, "debug:   rss %-40s %.1f MB\n", k, v/1024)
		}
	}
}

func debugf(format string, args ...any) {
	if os.Getenv("GOVGATE_BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "debug: "+format+"\n", args...)
	}
}
