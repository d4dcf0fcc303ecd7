// Command govgate-bench measures govgate's performance figures and prints
// one line per figure, "bench NAME: VALUE", and for a figure measured in
// rounds a line "rounds NAME: …" with every round and their spread. Figures
// that have a target are mostly ratios against a baseline measured in the
// same run (a plain Go client posting the same pre-signed bodies to the
// same receiver, say), since the machines these run on are small and noisy.
//
// The bench is a table of parts (parts in parts.go), run in the table's
// order. Each part has a name, says what it measures, runs either in this
// process (run) or as a Go benchmark of a package (goBench, through go
// test), and lists the figures it prints: a figure a part does not list
// fails the run, so the table is the whole list. -list prints the table;
// -only part[,part] runs some parts (and the parts they need); -json FILE
// records the figures; -doc FILE -from RUN.json regenerates the tables of
// docs/performance.md from the table and recorded runs.
//
// Adding a part is one entry in parts. For a Go benchmark:
//
//	{name: "decode", what: "decoding a proposal's calldata",
//		goBench: &goBench{pkg: "./core/internal/decode", bench: "BenchmarkDecode$", benchtime: "1000x"},
//		figures: []figure{{name: "decode_us_per_action", bench: "BenchmarkDecode", metric: "us_per_action",
//			target: "≤ 50", what: "decoding one action's calldata"}}},
//
// where metric is the unit the benchmark gives b.ReportMetric (or ns/op,
// allocs/op…). A part measured here gives run instead: a func(*bench) error
// that calls report or reportMedian once for each figure it lists. Then
// `go run ./core/cmd/govgate-bench -doc docs/performance.md` adds the new
// rows to the doc; TestPerformanceDocListsEveryFigure fails until it has.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/config"
	"github.com/govgate/govgate/core/internal/delivery"
	"github.com/govgate/govgate/core/internal/dev/pgtest"
	"github.com/govgate/govgate/core/internal/dev/testcert"
	"github.com/govgate/govgate/core/internal/health"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/plugindelivery"
	"github.com/govgate/govgate/core/internal/pluginmgr"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/signing"
	"github.com/govgate/govgate/core/internal/ssrf"
	"github.com/govgate/govgate/core/internal/store"
	"github.com/govgate/govgate/core/internal/tracing"
	"github.com/govgate/govgate/core/internal/wasmhost"
	"github.com/govgate/govgate/sdk/receiver"
)

var (
	webhooks      = flag.Int("webhooks", 50, "webhooks in the throughput runs")
	notifications = flag.Int("notifications", 200, "notifications in the throughput runs")
	workers       = flag.Int("workers", config.Default().Delivery.Workers, "dispatcher workers (and ceiling client concurrency; govgate serve's default)")
	batchSize     = flag.Int("batch", 64, "dispatcher claim batch size")
	backlog       = flag.Int("backlog", config.Default().Delivery.Backlog, "fresh deliveries handed straight to the dispatcher (govgate serve's default)")
	fanout        = flag.Int("fanout", 100_000, "webhooks in the fan-out run")
	cpuProfile    = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile    = flag.String("memprofile", "", "write an allocation profile of the whole run to this file")
	runProfiles   = flag.String("run-cpuprofiles", "", "write a CPU profile of each measured pipeline run, from its first ingest to its last recorded success, into this directory, named after the run's database")
	rounds        = flag.Int("rounds", 5, "rounds of each figure measured in rounds; each round measures the baseline and the subject back to back, and the medians are reported")
	only          = flag.String("only", "", "run only these parts (and the parts they need), comma-separated; -list names them")
	listParts     = flag.Bool("list", false, "print the table of parts and exit")
	jsonOut       = flag.String("json", "", "also write the run's figures to this file, as JSON (what -doc reads)")
	docFile       = flag.String("doc", "", "regenerate the tables of this performance doc (docs/performance.md) from the table of parts and the runs -from names, and exit")
	docFrom       = flag.String("from", "", "with -doc: runs written by -json, comma-separated, later ones first for the figures they share; a figure none has keeps the doc's value")
	orderedNotes  = flag.Int("ordered-notifications", 300, "notifications in the ordered part's one-endpoint run")

	delegationEvents = flag.Int("delegations", 1_000_000, "delegation events in the delegation part (even; the figure is 1,000,000, fewer while iterating)")
	delegationStores = flag.String("delegation-stores", "sqlite,postgres", "stores the delegation part indexes into, comma-separated: sqlite, postgres")
)

func main() {
	flag.Parse()
	switch {
	case *listParts:
		printParts(os.Stdout, parts)
		return
	case *docFile != "":
		if err := writeDoc(*docFile, splitList(*docFrom)); err != nil {
			fmt.Fprintln(os.Stderr, "govgate-bench:", err)
			os.Exit(1)
		}
		return
	}
	selected, err := selectParts(parts, *only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "govgate-bench:", err)
		os.Exit(2)
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	err = run(context.Background(), selected)
	// The figures measured so far are recorded even when a later part
	// failed: a long run's first parts are worth keeping.
	if *jsonOut != "" {
		if werr := rec.writeJSON(*jsonOut, os.Args[1:]); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "govgate-bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if *memProfile != "" {
		if f, err := os.Create(*memProfile); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
}

// bench is what the parts of one run share.
type bench struct {
	ctx context.Context
	tmp string

	// The loopback receiver and the client that posts to it, started by
	// the first part that delivers (wire).
	rcv    *benchReceiver
	client *http.Client

	pg  *pgtest.Server
	dbs []string

	// ceilings are the wire ceilings measured right before each delivery
	// run of the postgres and sqlite parts, each the baseline of its ratio;
	// the ceiling part reports their median.
	ceilings []float64
	// pgRate is the postgres part's median throughput: the latency part
	// ingests at half of it.
	pgRate float64
}

func run(ctx context.Context, selected []*part) error {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	tmp, err := os.MkdirTemp("", "govgate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &bench{ctx: ctx, tmp: tmp}
	defer b.close()
	for _, p := range selected {
		rec.begin(p)
		if p.goBench != nil {
			err = runGoBench(ctx, p)
		} else {
			err = p.run(b)
		}
		if err := rec.end(); err != nil {
			return err
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// wire starts the receiver and the client the delivery parts share.
func (b *bench) wire() error {
	if b.rcv != nil {
		return nil
	}
	rcv, err := startReceiver(b.tmp)
	if err != nil {
		return err
	}
	client, err := ssrf.NewClient(ssrf.ClientOptions{AllowPrivate: true, CAFile: rcv.caFile, Timeout: 10 * time.Second, MaxIdleConnsPerHost: *workers})
	if err != nil {
		rcv.srv.Close()
		return err
	}
	b.rcv, b.client = rcv, client
	return nil
}

// newDB creates an empty PostgreSQL database (starting the server on first
// use) and returns its URL.
func (b *bench) newDB(name string) (string, error) {
	if b.pg == nil {
		pg, err := pgtest.Start()
		if err != nil {
			return "", fmt.Errorf("postgresql (install it, or see README): %w", err)
		}
		b.pg = pg
	}
	// Earlier runs' databases go first, so that autovacuum does not clean
	// up after them during this one.
	for _, old := range b.dbs {
		if err := b.pg.DropDatabase(b.ctx, old); err != nil {
			return "", err
		}
	}
	b.dbs = []string{name}
	return b.pg.CreateDatabase(b.ctx, name)
}

func (b *bench) close() {
	if b.rcv != nil {
		b.rcv.srv.Close()
	}
	if b.pg != nil {
		b.pg.Destroy()
	}
}

// deliveryRounds measures *rounds throughput runs on the databases url
// gives, each right after a wire ceiling (kept in b.ceilings): the rates and
// their ratios to their ceilings.
func (b *bench) deliveryRounds(url func(round int) (string, error)) (rates, ratios []float64, err error) {
	if err := b.wire(); err != nil {
		return nil, nil, err
	}
	total := *webhooks * *notifications
	for r := 0; r < *rounds; r++ {
		u, err := url(r)
		if err != nil {
			return nil, nil, err
		}
		// Each ratio's baseline is the wire ceiling measured right before
		// its run, so that a noisy neighbour affects both alike.
		base, err := wireCeiling(b.ctx, b.client, b.rcv, total)
		if err != nil {
			return nil, nil, err
		}
		b.ceilings = append(b.ceilings, base)
		rate, err := throughput(b.ctx, u, b.client, b.rcv, nil)
		if err != nil {
			return nil, nil, err
		}
		rates, ratios = append(rates, rate), append(ratios, rate/base)
	}
	return rates, ratios, nil
}

// measurePostgres is the postgres part. It runs before sqlite, so that
// none of its rounds follows a SQLite run (whose file writes the kernel
// flushes later).
func (b *bench) measurePostgres() error {
	rates, ratios, err := b.deliveryRounds(func(r int) (string, error) { return b.newDB(fmt.Sprintf("bench_throughput_%d", r)) })
	if err != nil {
		return err
	}
	b.pgRate = median(rates)
	reportMedian("delivery_per_s_postgres", "%.0f", rates)
	reportMedian("delivery_ratio_postgres", "%.2f", ratios)
	return nil
}

func (b *bench) measureSQLite() error {
	rates, ratios, err := b.deliveryRounds(func(r int) (string, error) {
		return "sqlite:" + filepath.Join(b.tmp, fmt.Sprintf("bench%d.db", r)), nil
	})
	if err != nil {
		return err
	}
	reportMedian("delivery_per_s_sqlite", "%.0f", rates)
	reportMedian("delivery_ratio_sqlite", "%.2f", ratios)
	return nil
}

// measureCeiling reports the median of the ceilings the delivery parts
// measured, topped up to -rounds when they measured fewer.
func (b *bench) measureCeiling() error {
	if err := b.wire(); err != nil {
		return err
	}
	for len(b.ceilings) < *rounds {
		c, err := wireCeiling(b.ctx, b.client, b.rcv, *webhooks**notifications)
		if err != nil {
			return err
		}
		b.ceilings = append(b.ceilings, c)
	}
	reportMedian("wire_ceiling_per_s", "%.0f", b.ceilings)
	return nil
}

func (b *bench) measureLatency() error {
	if err := b.wire(); err != nil {
		return err
	}
	var p50s, p99s []float64
	for r := 0; r < *rounds; r++ {
		url, err := b.newDB(fmt.Sprintf("bench_latency_%d", r))
		if err != nil {
			return err
		}
		p50, p99, err := latency(b.ctx, url, b.client, b.rcv, b.pgRate/2)
		if err != nil {
			return err
		}
		p50s, p99s = append(p50s, p50), append(p99s, p99)
	}
	reportMedian("latency_p50_ms", "%.1f", p50s)
	reportMedian("latency_p99_ms", "%.1f", p99s)
	return nil
}

func (b *bench) measureFanout() error {
	url, err := b.newDB("bench_fanout")
	if err != nil {
		return err
	}
	took, err := fanOut(b.ctx, url, *fanout)
	if err != nil {
		return err
	}
	report("fanout_100k_s", "%.3f", took)
	took, err = fanOut(b.ctx, "sqlite:"+filepath.Join(b.tmp, "fanout.db"), *fanout)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	report("fanout_100k_s_sqlite", "%.3f", took)
	return nil
}

// measurePlugins is the same PostgreSQL run with a global chain of a filter
// and a transform, against a plain run made right before it.
func (b *bench) measurePlugins() error {
	if err := b.wire(); err != nil {
		return err
	}
	plugins, err := pluginChain(b.ctx, b.tmp)
	if err != nil {
		return err
	}
	var plains, chains, ratios []float64
	for r := 0; r < *rounds; r++ {
		plainURL, err := b.newDB(fmt.Sprintf("bench_plain_%d", r))
		if err != nil {
			return err
		}
		plain, err := throughput(b.ctx, plainURL, b.client, b.rcv, nil)
		if err != nil {
			return err
		}
		chainURL, err := b.newDB(fmt.Sprintf("bench_chain_%d", r))
		if err != nil {
			return err
		}
		withChain, err := throughput(b.ctx, chainURL, b.client, b.rcv, plugins)
		if err != nil {
			return fmt.Errorf("plugin chain run: %w", err)
		}
		plains, chains, ratios = append(plains, plain), append(chains, withChain), append(ratios, withChain/plain)
	}
	reportMedian("delivery_per_s_postgres_plain", "%.0f", plains)
	reportMedian("delivery_per_s_postgres_plugins", "%.0f", chains)
	reportMedian("plugin_chain_ratio", "%.2f", ratios)
	return nil
}

// measureOtel is the same PostgreSQL run with tracing on, every
// notification sampled, spans batched and exported over OTLP/HTTP to a
// loopback collector, against a run with tracing off made right before it.
func (b *bench) measureOtel() error {
	if err := b.wire(); err != nil {
		return err
	}
	var offs, ons, ratios, spans []float64
	for r := 0; r < *rounds; r++ {
		offURL, err := b.newDB(fmt.Sprintf("bench_otel_off_%d", r))
		if err != nil {
			return err
		}
		off, err := throughput(b.ctx, offURL, b.client, b.rcv, nil)
		if err != nil {
			return err
		}
		onURL, err := b.newDB(fmt.Sprintf("bench_otel_on_%d", r))
		if err != nil {
			return err
		}
		on, exported, err := tracedThroughput(b.ctx, onURL, b.client, b.rcv)
		if err != nil {
			return fmt.Errorf("traced run: %w", err)
		}
		offs, ons, ratios, spans = append(offs, off), append(ons, on), append(ratios, on/off), append(spans, float64(exported))
	}
	reportMedian("delivery_per_s_postgres_otel_off", "%.0f", offs)
	reportMedian("delivery_per_s_postgres_otel_on", "%.0f", ons)
	reportMedian("otel_spans_exported", "%.0f", spans)
	reportMedian("otel_ratio", "%.2f", ratios)
	return nil
}

func (b *bench) measureOrdered() error {
	if err := b.wire(); err != nil {
		return err
	}
	return orderedBench(b.ctx, b.newDB, b.client, b.rcv)
}

func (b *bench) measureHealth() error {
	_, err := healthRatio(b.ctx, b.tmp)
	return err
}

func (b *bench) measureDelegation() error {
	var targets []delegationTarget
	for _, name := range strings.Split(*delegationStores, ",") {
		switch name {
		case "sqlite":
			sqlitePath := filepath.Join(b.tmp, "delegation.db")
			targets = append(targets, delegationTarget{name: "sqlite", url: "sqlite:" + sqlitePath, size: func(*store.Store) (int64, error) {
				return dbSize(sqlitePath), nil
			}})
		case "postgres":
			pgURL, err := b.newDB("bench_delegation")
			if err != nil {
				return err
			}
			targets = append(targets, delegationTarget{name: "postgres", url: pgURL, size: func(st *store.Store) (int64, error) {
				return st.TableBytes(b.ctx, "token_events", "delegates", "delegations", "delegated_powers")
			}})
		default:
			return fmt.Errorf("-delegation-stores: unknown store %q", name)
		}
	}
	res, err := delegationBench(b.ctx, targets)
	if err != nil {
		return err
	}
	for i, t := range targets {
		suffix := "_sqlite"
		if t.name == "postgres" {
			suffix = "" // the figure of record
		}
		report("delegation_getlogs_events_per_s"+suffix, "%.0f", res.getLogsPerS[i])
		report("delegation_events_per_s"+suffix, "%.0f", res.perS[i])
		report("delegation_ratio"+suffix, "%.2f", res.perS[i]/res.getLogsPerS[i])
		report("delegation_bytes_per_event"+suffix, "%.0f", res.bytes[i])
	}
	return nil
}

func (b *bench) measureScale() error {
	return scaleBench(b.ctx, b.tmp)
}

func (b *bench) measureRSS() error {
	return rssBench(b.ctx, b.tmp, b.newDB)
}

func (b *bench) measurePeakRSS() error {
	report("peak_rss_mb", "%.0f", peakRSSMB())
	return nil
}

const benchSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// benchReceiver is a loopback HTTPS receiver that verifies each delivery's
// signature, with the SDK's receiver, and records when it arrived.
type benchReceiver struct {
	srv     *http.Server
	addr    string
	caFile  string
	count   atomic.Int64
	mu      sync.Mutex
	arrived map[string]time.Time // X-Webhook-Id → first arrival
	track   atomic.Bool
	// ordered counts the deliveries to /ordered/… paths (the ordered part's
	// endpoints), which count also counts.
	ordered atomic.Int64
}

func startReceiver(dir string) (*benchReceiver, error) {
	cert, caPEM, err := testcert.New()
	if err != nil {
		return nil, err
	}
	r := &benchReceiver{caFile: filepath.Join(dir, "ca.pem"), arrived: map[string]time.Time{}}
	if err := os.WriteFile(r.caFile, caPEM, 0o600); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.addr = l.Addr().String()
	// The SDK's receiver reads and verifies each delivery, as an
	// integrator's Go receiver would.
	r.srv = &http.Server{Handler: receiver.Handler(benchSecret, r.deliver), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ErrorLog: nil}
	go r.srv.ServeTLS(l, "", "")
	return r, nil
}

func (r *benchReceiver) deliver(w http.ResponseWriter, req *http.Request, _ []byte) {
	if r.track.Load() {
		now := time.Now()
		r.mu.Lock()
		id := req.Header.Get("X-Webhook-Id") + req.URL.Path
		if _, ok := r.arrived[id]; !ok {
			r.arrived[id] = now
		}
		r.mu.Unlock()
	}
	if strings.HasPrefix(req.URL.Path, "/ordered/") {
		r.ordered.Add(1)
	}
	r.count.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

func notificationBody(i int) (core.Notification, []byte) {
	n := core.Notification{
		ID: fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i), Type: core.TypeVoteCast, DAO: "uniswap", OccurredAt: time.Now(),
		Data: []byte(`{"proposalId":"123456789012345678901234567890","voter":"0x1234567890abcdef1234567890abcdef12345678","support":1,"weight":"4200000000000000000000","reason":"benchmarking the gateway with a realistic reason string"}`),
	}
	body, _ := store.NotificationBody(n)
	return n, body
}

// wireCeiling posts n pre-signed bodies with as many goroutines as the
// dispatcher has workers: the most any dispatcher could do here.
func wireCeiling(ctx context.Context, client *http.Client, rcv *benchReceiver, n int) (float64, error) {
	type req struct {
		body []byte
		h    http.Header
	}
	reqs := make([]req, n)
	for i := range reqs {
		note, body := notificationBody(i)
		h := signing.Sign(benchSecret, note.ID, time.Now(), body)
		h.Set("Content-Type", "application/json")
		reqs[i] = req{body, h}
	}
	url := "https://" + rcv.addr + "/ceiling"
	// Like testing.B, each measured run starts with the garbage of what
	// came before it collected.
	runtime.GC()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(reqs[i].body)))
				hr.Header = reqs[i].h.Clone()
				resp, err := client.Do(hr)
				if err != nil || resp.StatusCode/100 != 2 {
					failed.Add(1)
				}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	cpu0, m0 := selfCPU(), machineCPU()
	wg.Wait()
	if os.Getenv("GOVGATE_BENCH_DEBUG") != "" {
		m := machineCPU().since(m0)
		fmt.Fprintf(os.Stderr, "debug: ceiling %.2fs; cpu: bench process %.2fs; machine idle %.2fs of %.2fs\n", time.Since(start).Seconds(), selfCPU()-cpu0, m.idle, m.total)
	}
	if f := failed.Load(); f > 0 {
		return 0, fmt.Errorf("ceiling: %d requests failed", f)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

type pipeline struct {
	st           *store.Store
	d            *delivery.Dispatcher
	closePlugins func()
	cancel       context.CancelFunc
	done         chan struct{}
}

// withPlugins sets up a plugin manager on the store, with the given global
// chain, and returns the dispatcher's transformer and what closes the
// plugins' host.
type withPlugins func(ctx context.Context, st *store.Store) (delivery.Transformer, func(), error)

func startPipeline(ctx context.Context, dbURL string, client *http.Client, rcv *benchReceiver, hooks int, plugins withPlugins) (*pipeline, error) {
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st, err := store.Open(ctx, dbURL, box, store.Options{MaxOpenConns: 40, Tracer: notificationTracer()})
	if err != nil {
		return nil, err
	}
	var tr delivery.Transformer
	closePlugins := func() {}
	if plugins != nil {
		if tr, closePlugins, err = plugins(ctx, st); err != nil {
			st.Close()
			return nil, err
		}
	}
	for i := 0; i < hooks; i++ {
		if _, _, err := st.RegisterWebhook(ctx, fmt.Sprintf("https://%s/hook/%d", rcv.addr, i), benchSecret); err != nil {
			return nil, err
		}
	}
	d, err := delivery.New(delivery.Config{
		Queue: st, Client: client, Transformer: tr, UserAgent: "govgate-bench", Timeout: 10 * time.Second, Workers: *workers,
		PerWebhookConcurrency: 8, Schedule: []time.Duration{time.Second}, Lease: time.Minute, BatchSize: *batchSize, PollInterval: 50 * time.Millisecond,
		Backlog: *backlog, Tracer: deliveryTracer(),
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	p := &pipeline{st: st, d: d, closePlugins: closePlugins, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(p.done); d.Run(rctx) }()
	return p, nil
}

func (p *pipeline) stop() {
	p.cancel()
	<-p.done
	p.closePlugins()
	p.st.Close()
}

func (p *pipeline) ingest(ctx context.Context, n core.Notification) error {
	// As govgate serve does: fresh deliveries go straight to the local
	// dispatcher as far as it has room, the rest through the queue.
	_, err := p.st.CreateNotificationHandoff(ctx, n, "bench", p.d)
	return err
}

// throughput measures ingest to recorded 2xx for webhooks × notifications
// deliveries.
func throughput(ctx context.Context, dbURL string, client *http.Client, rcv *benchReceiver, plugins withPlugins) (float64, error) {
	p, err := startPipeline(ctx, dbURL, client, rcv, *webhooks, plugins)
	if err != nil {
		return 0, err
	}
	defer p.stop()
	total := int64(*webhooks * *notifications)
	if p.st.Dialect() == store.Postgres {
		// Start from a clean buffer pool: the set-up's dirty pages are not
		// the run's to write.
		if err := p.st.DB().WithContext(ctx).Exec("CHECKPOINT").Error; err != nil {
			return 0, err
		}
	}
	debugStatements(ctx, p.st, false)
	runtime.GC() // as in wireCeiling
	if *runProfiles != "" && *cpuProfile == "" {
		name, _, _ := strings.Cut(filepath.Base(dbURL), "?")
		f, err := os.Create(filepath.Join(*runProfiles, name+".pprof"))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	pgCPU0, selfCPU0, m0, gc0 := postgresCPU(), selfCPU(), machineCPU(), gcStats()
	seen0 := rcv.count.Load()
	start := time.Now()
	for i := 0; i < *notifications; i++ {
		n, _ := notificationBody(i)
		if err := p.ingest(ctx, n); err != nil {
			return 0, err
		}
	}
	ingested, mIngest := time.Since(start), machineCPU().since(m0)
	// Until the receiver has seen every delivery, watch its counter, which
	// costs the database nothing; then poll the store until every success
	// is recorded, which is where the figure ends. The full statistics are
	// read once, after the clock stops.
	deadline := time.Now().Add(5 * time.Minute)
	for rcv.count.Load()-seen0 < total && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	received := time.Since(start)
	for {
		left, err := p.st.Unfinished(ctx)
		if err != nil {
			return 0, err
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d not delivered after 5 minutes", left, total)
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(start)
	if os.Getenv("GOVGATE_BENCH_DEBUG") != "" {
		m, gc := machineCPU().since(m0), gcStats().since(gc0)
		fmt.Fprintf(os.Stderr, "debug: %s ingest %.3fs, received %.3fs, recorded %.3fs; cpu: postgres %.2fs, bench process %.2fs (gc %.2fs in %d cycles, %.0f MB allocated); machine idle %.2fs of %.2fs (while ingesting %.2fs of %.2fs)\n",
			dbURL[:8], ingested.Seconds(), received.Seconds(), took.Seconds(), postgresCPU()-pgCPU0, selfCPU()-selfCPU0, gc.cpu, gc.cycles, gc.allocMB, m.idle, m.total, mIngest.idle, mIngest.total)
		debugStatements(ctx, p.st, true)
	}
	st, err := p.st.QueueStats(ctx)
	if err != nil {
		return 0, err
	}
	if got := st.ByState[string(core.DeliverySucceeded)]; got != total {
		return 0, fmt.Errorf("%d of %d deliveries succeeded (%v)", got, total, st.ByState)
	}
	return float64(total) / took.Seconds(), nil
}

// latency ingests at a steady rate (deliveries per second) for a few
// seconds and returns the p50 and p99 time from the start of the ingest call
// to the delivery's arrival at the receiver, in milliseconds.
func latency(ctx context.Context, dbURL string, client *http.Client, rcv *benchReceiver, rate float64) (p50, p99 float64, err error) {
	const hooks = 10
	p, err := startPipeline(ctx, dbURL, client, rcv, hooks, nil)
	if err != nil {
		return 0, 0, err
	}
	defer p.stop()
	rcv.mu.Lock()
	rcv.arrived = map[string]time.Time{}
	rcv.mu.Unlock()
	rcv.track.Store(true)
	defer rcv.track.Store(false)
	perSec := max(rate/hooks, 1)
	interval := time.Duration(float64(time.Second) / perSec)
	sent := map[string]time.Time{}
	end := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		n, _ := notificationBody(i)
		sent[n.ID] = time.Now()
		if err := p.ingest(ctx, n); err != nil {
			return 0, 0, err
		}
		time.Sleep(time.Until(sent[n.ID].Add(interval)))
	}
	want := len(sent) * hooks
	deadline := time.Now().Add(time.Minute)
	for {
		rcv.mu.Lock()
		got := len(rcv.arrived)
		rcv.mu.Unlock()
		if got >= want {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("latency: %d of %d arrived", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var lat []float64
	rcv.mu.Lock()
	for key, at := range rcv.arrived {
		id := key[:strings.Index(key, "/")]
		lat = append(lat, float64(at.Sub(sent[id]).Microseconds())/1000)
	}
	rcv.mu.Unlock()
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}

// fanOut stores hooks active webhooks and times the enqueueing of one
// notification for all of them.
func fanOut(ctx context.Context, dbURL string, hooks int) (float64, error) {
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st, err := store.Open(ctx, dbURL, box, store.Options{})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	sealed, _ := box.Seal([]byte(benchSecret), []byte("fan-out"))
	now := time.Now().UTC()
	const chunk = 5000
	for i := 0; i < hooks; i += chunk {
		var b strings.Builder
		b.WriteString("INSERT INTO webhooks (url, state, secret_ciphertext, created_at, updated_at, deactivated_reason, consecutive_failures) VALUES ")
		args := []any{}
		for j := i; j < min(i+chunk, hooks); j++ {
			if j > i {
				b.WriteString(",")
			}
			b.WriteString("(?, 'active', ?, ?, ?, '', 0)")
			args = append(args, "https://fanout-"+strconv.Itoa(j)+".example.com/hook", sealed, now, now)
		}
		if err := st.DB().WithContext(ctx).Exec(b.String(), args...).Error; err != nil {
			return 0, err
		}
	}
	n, _ := notificationBody(0)
	start := time.Now()
	if _, err := st.CreateNotification(ctx, n, "bench"); err != nil {
		return 0, err
	}
	took := time.Since(start).Seconds()
	stats, err := st.QueueStats(ctx)
	if err != nil {
		return 0, err
	}
	if stats.Depth != int64(hooks) {
		return 0, fmt.Errorf("fan-out enqueued %d deliveries, want %d", stats.Depth, hooks)
	}
	return took, nil
}

// pluginChain builds the dao-filter and slack example plugins and returns a
// setup that loads them and sets the global chain to filter then transform.
func pluginChain(ctx context.Context, tmp string) (withPlugins, error) {
	wasm := map[string][]byte{}
	for _, name := range []string{"dao-filter", "slack"} {
		out := filepath.Join(tmp, name+".wasm")
		cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./plugins/"+name)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %v: %s", name, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		wasm[name] = b
	}
	return func(ctx context.Context, st *store.Store) (delivery.Transformer, func(), error) {
		host, err := wasmhost.New(ctx, wasmhost.Config{CacheDir: filepath.Join(tmp, "wasm-cache")})
		if err != nil {
			return nil, nil, err
		}
		mgr := pluginmgr.New(host, st, "", slog.Default())
		// As govgate serve does: the manager's Run prepares each
		// notification's global outcome ahead of the workers.
		mctx, stop := context.WithCancel(ctx)
		running := make(chan struct{})
		go func() { defer close(running); mgr.Run(mctx, 2*time.Second) }()
		closeHost := func() {
			stop()
			<-running
			host.Close(context.Background())
		}
		for _, b := range wasm {
			if _, err := mgr.Upload(ctx, b); err != nil {
				closeHost()
				return nil, nil, err
			}
		}
		if err := mgr.SetChain(ctx, core.GlobalChain, []core.ChainEntry{
			{Plugin: "dao-filter", Config: []byte(`{"daos":["uniswap"]}`)},
			{Plugin: "slack", Config: []byte(`{}`)},
		}); err != nil {
			closeHost()
			return nil, nil, err
		}
		return plugindelivery.Transformer(mgr), closeHost, nil
	}, nil
}

// traced is the trace pipeline of the otel part's traced runs; nil
// everywhere else.
var traced *tracing.Tracing

func notificationTracer() store.NotificationTracer {
	if traced == nil {
		return nil
	}
	return traced
}

func deliveryTracer() trace.Tracer {
	if traced == nil {
		return nil
	}
	return traced.Tracer()
}

// tracedThroughput is throughput with tracing on at full sampling,
// exporting to a loopback OTLP/HTTP collector that keeps the requests and
// decodes them only after the clock stops (a real collector runs in another
// process). It returns the spans the collector got, all flushed.
func tracedThroughput(ctx context.Context, dbURL string, client *http.Client, rcv *benchReceiver) (rate float64, spans int, err error) {
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	collector := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go collector.Serve(l)
	defer collector.Close()
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + l.Addr().String() + "/v1/traces",
		"OTEL_TRACES_SAMPLER":                "always_on",
		// Room for a whole run's spans: a full queue drops spans, which
		// would make tracing look cheaper than it is.
		"OTEL_BSP_MAX_QUEUE_SIZE": strconv.Itoa(2 * (*webhooks**notifications + *notifications)),
	} {
		os.Setenv(k, v)
		defer os.Unsetenv(k)
	}
	if traced, err = tracing.Start(ctx, tracing.Config{ServiceVersion: "bench"}); err != nil {
		return 0, 0, err
	}
	defer func() { traced = nil }()
	rate, err = throughput(ctx, dbURL, client, rcv, nil)
	if err := traced.Shutdown(ctx); err != nil {
		return 0, 0, err
	}
	if err != nil {
		return 0, 0, err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bodies {
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			return 0, 0, fmt.Errorf("collector: %w", err)
		}
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				spans += len(ss.GetSpans())
			}
		}
	}
	return rate, spans, nil
}

// healthRatio compares GET /{dao}/health with a static route of the same
// REST API handler, under the same keep-alive load, in this process.
func healthRatio(ctx context.Context, tmp string) (float64, error) {
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(tmp, "health.db"), box, store.Options{})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	daos := core.FixedDAOs{{Slug: "uniswap", Name: "Uniswap", ChainID: 1, Governor: "0x408ED6354d4973f66138C91495F2f2FCbd8724C3", Kind: core.KindGovernorBravo}}
	mon, err := health.NewMonitor(daos, health.Sources{PingDB: st.Ping, Upstreams: func(uint64) []health.Upstream { return nil },
		Indexer: func(string) (health.IndexerStatus, bool) { return health.IndexerStatus{}, false }}, health.Config{}, health.Options{})
	if err != nil {
		return 0, err
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mon.Refresh()
	go mon.Run(mctx)
	api := httpapi.NewAPI(httpapi.APIConfig{DAOs: daos, Health: mon, Logger: slog.Default(), Routes: []func(*gin.Engine){func(e *gin.Engine) {
		e.GET("/static", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", []byte(`{"status":"pass"}`)) })
	}}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: api}
	go srv.Serve(l)
	defer srv.Close()
	load := func(path string) float64 {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		var n atomic.Int64
		deadline := time.Now().Add(2 * time.Second)
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					resp, err := client.Get("http://" + l.Addr().String() + path)
					if err != nil {
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		return float64(n.Load()) / 2
	}
	load("/static") // warm up
	var statics, healths, ratios []float64
	for r := 0; r < *rounds; r++ {
		static := load("/static")
		h := load("/uniswap/health")
		statics, healths, ratios = append(statics, static), append(healths, h), append(ratios, h/static)
	}
	reportMedian("health_per_s", "%.0f", healths)
	reportMedian("static_route_per_s", "%.0f", statics)
	reportMedian("health_ratio", "%.2f", ratios)
	return median(ratios), nil
}

// postgresCPU sums the CPU seconds of every postgres process (debug output).
func postgresCPU() float64 {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	total := 0.0
	for _, d := range dirs {
		raw, err := os.ReadFile(d)
		if err != nil || !strings.Contains(string(raw), "(postgres)") {
			continue
		}
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (ut + st) / 100
	}
	return total
}

// cpuTimes is the machine's CPU time so far, all cores together, in
// seconds: idle (with I/O wait) and in total (/proc/stat).
type cpuTimes struct{ idle, total float64 }

func machineCPU() cpuTimes {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	var c cpuTimes
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		c.total += v / 100
		if i == 3 || i == 4 { // idle, iowait
			c.idle += v / 100
		}
	}
	return c
}

func (c cpuTimes) since(before cpuTimes) cpuTimes {
	return cpuTimes{c.idle - before.idle, c.total - before.total}
}

// gcTimes is the collector's work so far in this process (debug output).
type gcTimes struct {
	cpu     float64 // seconds, estimated by the runtime
	cycles  uint64
	allocMB float64
}

func gcStats() gcTimes {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return gcTimes{cpu: s[0].Value.Float64(), cycles: s[1].Value.Uint64(), allocMB: float64(s[2].Value.Uint64()) / (1 << 20)}
}

func (g gcTimes) since(o gcTimes) gcTimes {
	return gcTimes{cpu: g.cpu - o.cpu, cycles: g.cycles - o.cycles, allocMB: g.allocMB - o.allocMB}
}

// selfCPU is this process's CPU seconds (debug output).
func selfCPU() float64 {
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	ut, _ := strconv.ParseFloat(f[13], 64)
	st, _ := strconv.ParseFloat(f[14], 64)
	return (ut + st) / 100
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// peakRSSMB reads the process's peak resident set size (VmHWM).
func peakRSSMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// debugStatements resets (print false) or prints (print true) PostgreSQL's
// per-statement totals when GOVGATE_BENCH_DEBUG is set; pgtest then loads
// pg_stat_statements.
func debugStatements(ctx context.Context, st *store.Store, print bool) {
	if os.Getenv("GOVGATE_BENCH_DEBUG") == "" || st.Dialect() != store.Postgres {
		return
	}
	db := st.DB()
	if !print {
		db.WithContext(ctx).Exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		db.WithContext(ctx).Exec("SELECT pg_stat_statements_reset()")
		return
	}
	var rows []struct {
		Calls, Plans int64
		Total, Plan  float64
		Rows         int64
		Query        string
	}
	db.WithContext(ctx).Raw(`SELECT SUM(calls) AS calls, SUM(total_exec_time) AS total, SUM(total_plan_time) AS plan, SUM(plans) AS plans, SUM(rows) AS rows, left(regexp_replace(query, '\s+', ' ', 'g'), 70) AS query
		FROM pg_stat_statements GROUP BY 6 ORDER BY 2 DESC LIMIT 8`).Scan(&rows)
	for _, r := range rows {
		fmt.Fprintf(os.Stderr, "  %8.1fms exec %6.1fms plan (%d plans) %6d calls %7d rows  %s\n", r.Total, r.Plan, r.Plans, r.Calls, r.Rows, r.Query)
	}
	var tables []struct {
		Relname                      string
		NTupIns, NTupUpd, NTupHotUpd int64
	}
	db.WithContext(ctx).Raw(`SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE n_tup_ins > 0 ORDER BY relname`).Scan(&tables)
	for _, t := range tables {
		fmt.Fprintf(os.Stderr, "  table %s: %d inserted, %d updated (%d HOT)\n", t.Relname, t.NTupIns, t.NTupUpd, t.NTupHotUpd)
	}
}
