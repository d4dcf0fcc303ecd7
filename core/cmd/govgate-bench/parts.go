package main

import (
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"text/tabwriter"
)

// part is one row of the bench's table: a name for -only, what it
// measures, how it runs (run here, or goBench), and the figures it prints.
type part struct {
	name string
	what string
	// needs names parts this one uses the results of; -only adds them.
	needs []string
	// always runs the part whatever -only says (figures of the whole run).
	always bool

	run     func(*bench) error
	goBench *goBench

	figures []figure
}

// goBench runs Go benchmarks of a package with go test, from the module's
// root: go test -run '^$' -bench BENCH -benchtime BENCHTIME PKG.
type goBench struct {
	pkg, bench, benchtime string
}

// figure is one figure a part prints, "bench NAME: VALUE".
type figure struct {
	// name is what the bench prints and records. A * in a name stands for
	// any text (one per example plugin, say); a Go benchmark's pattern ends
	// in *, and so does its metric, which gives the suffix.
	name string
	// target is what the figure should meet ("≥ 0.7"), "" for none.
	target string
	// what says what the figure measures, for docs/performance.md.
	what string

	// A Go benchmark's figure comes from its output: the benchmark (its
	// name without the -GOMAXPROCS suffix; a sub-benchmark as
	// BenchmarkX/sub) and the metric's unit (b.ReportMetric's, or ns/op,
	// allocs/op). min and max, if given, are the units of the spread.
	bench, metric string
	min, max      string
}

// parts is the bench, in the order it runs. Delivery figures come first
// (PostgreSQL before SQLite, see measurePostgres), then the rest; the Go
// benchmarks run last, each in a process of its own.
var parts = []part{
	{name: "postgres", what: "delivery throughput on PostgreSQL against the wire ceiling", needs: []string{"ceiling"}, run: (*bench).measurePostgres,
		figures: []figure{
			{name: "delivery_per_s_postgres", what: "deliveries per second from ingest to recorded 2xx on PostgreSQL, 50 webhooks × 200 notifications"},
			{name: "delivery_ratio_postgres", target: "≥ 0.7", what: "`delivery_per_s_postgres` / the wire ceiling measured right before each round"},
		}},
	{name: "sqlite", what: "delivery throughput on the embedded SQLite against the wire ceiling", needs: []string{"ceiling"}, run: (*bench).measureSQLite,
		figures: []figure{
			{name: "delivery_per_s_sqlite", what: "the same on the embedded SQLite"},
			{name: "delivery_ratio_sqlite", target: "≥ 0.5", what: "`delivery_per_s_sqlite` / the wire ceiling measured right before each round"},
		}},
	{name: "ceiling", what: "a plain Go client posting the same pre-signed bodies to the same receiver", run: (*bench).measureCeiling,
		figures: []figure{
			{name: "wire_ceiling_per_s", what: "requests per second with as many client goroutines as the dispatcher has workers: the most any dispatcher could do here"},
		}},
	{name: "latency", what: "ingest-to-arrival latency at half the PostgreSQL throughput", needs: []string{"postgres"}, run: (*bench).measureLatency,
		figures: []figure{
			{name: "latency_p50_ms", what: "median time from ingest to arrival at the receiver, 10 webhooks, five 5-second runs"},
			{name: "latency_p99_ms", target: "≤ 5", what: "99th percentile of the same"},
		}},
	{name: "fanout", what: "enqueueing one notification for 100,000 webhooks", run: (*bench).measureFanout,
		figures: []figure{
			{name: "fanout_100k_s", what: "seconds to enqueue one notification for 100,000 active webhooks on PostgreSQL"},
			{name: "fanout_100k_s_sqlite", what: "the same on SQLite"},
		}},
	{name: "plugins", what: "PostgreSQL throughput with a global plugin chain against a plain run", run: (*bench).measurePlugins,
		figures: []figure{
			{name: "delivery_per_s_postgres_plain", what: "PostgreSQL throughput without plugins, right before each chain run"},
			{name: "delivery_per_s_postgres_plugins", what: "PostgreSQL throughput with a global dao-filter → slack chain"},
			{name: "plugin_chain_ratio", target: "≥ 0.9", what: "`delivery_per_s_postgres_plugins` / `delivery_per_s_postgres_plain`"},
		}},
	{name: "otel", what: "PostgreSQL throughput with every notification traced against untraced", run: (*bench).measureOtel,
		figures: []figure{
			{name: "delivery_per_s_postgres_otel_off", what: "PostgreSQL throughput with tracing off, right before each traced run"},
			{name: "delivery_per_s_postgres_otel_on", what: "the same with every notification sampled and exported over OTLP/HTTP to a loopback collector"},
			{name: "otel_spans_exported", what: "spans the collector received in a traced run"},
			{name: "otel_ratio", target: "≥ 0.85", what: "`delivery_per_s_postgres_otel_on` / `delivery_per_s_postgres_otel_off`"},
		}},
	{name: "ordered", what: "ordered delivery on PostgreSQL, and its effect on the unordered endpoints beside it", run: (*bench).measureOrdered,
		figures: []figure{
			{name: "ordered_delivery_per_s", what: "one ordered endpoint, deliveries per second from the first ingest to the last recorded success (one at a time)"},
			{name: "unordered_per_s_alone", what: "the throughput run's unordered endpoints alone, right before each run beside an ordered one"},
			{name: "unordered_per_s_with_ordered_neighbour", what: "the same with one ordered endpoint receiving the same notifications beside them"},
			{name: "unordered_ratio_with_ordered_neighbour", target: "≥ 0.9", what: "`unordered_per_s_with_ordered_neighbour` / `unordered_per_s_alone`"},
		}},
	{name: "health", what: "GET /{dao}/health against a static route of the same REST API", run: (*bench).measureHealth,
		figures: []figure{
			{name: "health_per_s", what: "`GET /{dao}/health` requests per second, 16 keep-alive clients, same process"},
			{name: "static_route_per_s", what: "a static route of the same handler under the same load"},
			{name: "health_ratio", target: "≥ 0.8", what: "`health_per_s` / `static_route_per_s`"},
		}},
	{name: "delegation", what: "indexing a token's 1,000,000 delegation events against bare eth_getLogs", run: (*bench).measureDelegation,
		figures: []figure{
			{name: "delegation_getlogs_events_per_s", what: "bare `eth_getLogs` of the same block ranges, events per second (before the PostgreSQL run)"},
			{name: "delegation_events_per_s", what: "`DelegateChanged`/`DelegateVotesChanged` events indexed into PostgreSQL per second"},
			{name: "delegation_ratio", target: "≥ 0.5", what: "`delegation_events_per_s` / `delegation_getlogs_events_per_s`"},
			{name: "delegation_bytes_per_event", what: "PostgreSQL table bytes (events, delegates, delegations, powers) per event indexed"},
			{name: "delegation_getlogs_events_per_s_sqlite", what: "bare `eth_getLogs`, before the SQLite run"},
			{name: "delegation_events_per_s_sqlite", what: "the same events indexed into SQLite per second"},
			{name: "delegation_ratio_sqlite", target: "≥ 0.5", what: "`delegation_events_per_s_sqlite` / `delegation_getlogs_events_per_s_sqlite`"},
			{name: "delegation_bytes_per_event_sqlite", what: "SQLite file bytes per event indexed"},
		}},
	{name: "scale", what: "govgate serve indexing 1,000 DAOs of one dev chain behind an RPC proxy that adds latency (scale.go)", run: (*bench).measureScale,
		figures: []figure{
			{name: "backfill_1000_daos_s", target: "lower is better", what: "`govgate serve`'s start to every DAO at the head, seconds"},
			{name: "backfill_1000_daos_rpc_calls", target: "lower is better", what: "the RPC calls that took (most of them the DAOs' probes)"},
			{name: "rpc_calls_per_poll_1000_daos", target: "≤ 5", what: "calls per poll at the head, a block every 2 s and no governance (calls through the proxy / head reads)"},
			{name: "head_lag_blocks_1000_daos", target: "≤ 2 polls' worth", what: "the most blocks the head was ahead of the shared cursor, sampled every second with governance on 50 DAOs"},
			{name: "active_proposals_1000_daos_ms", target: "< 50", what: "`GET /proposals?state=active` over the 1,000 DAOs, median of 50, ms"},
			{name: "rss_1000_daos_mb", target: "≤ 600", what: "VmHWM of `govgate serve` over the whole run, MB"},
			{name: "rpc_calls_per_poll_*_daos_baseline", what: "the same calls per poll for the code before shared reads (-scale-baseline), on -scale-baseline-daos DAOs"},
		}},
	{name: "rss", what: "resident memory of a govgate serve of its own while 100,000 deliveries are pending", run: (*bench).measureRSS,
		figures: []figure{
			{name: "rss_100k_pending_mb", target: "≤ 128", what: "peak VmRSS, MB, of the production binary on PostgreSQL with 100,000 deliveries pending (rss.go)"},
			{name: "rss_100k_pending_mb_sqlite", what: "the same on SQLite"},
			{name: "rss_100k_pending_mb_chain", what: "PostgreSQL, with dao-filter → slack as a global chain: two Go plugins, their pools of instances warm"},
		}},
	{name: "peak_rss", what: "the bench process's own peak memory", always: true, run: (*bench).measurePeakRSS,
		figures: []figure{
			{name: "peak_rss_mb", what: "VmHWM of the govgate-bench process at the end of its in-process parts, MB (Go benchmarks run in processes of their own)"},
		}},
	{name: "plugin_call", what: "one call of each example plugin through the wasm host, and each module's size",
		goBench: &goBench{pkg: "./core/internal/wasmhost", bench: "BenchmarkPlugin(Call|CallAS|CallASVote|CallEventFilter|CallSlack|Size)$", benchtime: "2000x"},
		figures: []figure{
			{name: "plugin_call_p50_us", target: "≤ 150", bench: "BenchmarkPluginCall", metric: "p50_us", what: "a Go filter decoding a 1 KB notification with `encoding/json`, median µs per call"},
			{name: "plugin_call_p99_us", bench: "BenchmarkPluginCall", metric: "p99_us", what: "its 99th percentile"},
			{name: "plugin_call_as_p50_us", bench: "BenchmarkPluginCallAS", metric: "p50_us", what: "the AssemblyScript type filter on the same notification, median µs"},
			{name: "plugin_call_as_p99_us", bench: "BenchmarkPluginCallAS", metric: "p99_us", what: "its 99th percentile"},
			{name: "plugin_call_as_vote_p50_us", bench: "BenchmarkPluginCallASVote", metric: "p50_us", what: "an AssemblyScript plugin reading a vote's fields, median µs"},
			{name: "plugin_call_as_vote_p99_us", bench: "BenchmarkPluginCallASVote", metric: "p99_us", what: "its 99th percentile"},
			{name: "plugin_call_event_filter_p50_us", bench: "BenchmarkPluginCallEventFilter", metric: "p50_us", what: "the Go event-filter example on the same notification, median µs"},
			{name: "plugin_call_event_filter_p99_us", bench: "BenchmarkPluginCallEventFilter", metric: "p99_us", what: "its 99th percentile"},
			{name: "plugin_call_slack_p50_us", bench: "BenchmarkPluginCallSlack", metric: "p50_us", what: "the slack example transforming a vote, median µs"},
			{name: "plugin_call_slack_p99_us", bench: "BenchmarkPluginCallSlack", metric: "p99_us", what: "its 99th percentile"},
			{name: "plugin_size_kb_*", bench: "BenchmarkPluginSize", metric: "size_kb_*", what: "each example plugin's module as plugins/build.sh builds it, KB"},
		}},
	{name: "plugin_import", what: "a fresh start importing every example plugin, cold compilation cache",
		goBench: &goBench{pkg: "./core/internal/pluginmgr", bench: "BenchmarkImportExamples$", benchtime: "3x"},
		figures: []figure{
			{name: "plugin_import_s", target: "≤ 2", bench: "BenchmarkImportExamples", metric: "import_s", min: "import_min_s", max: "import_max_s", what: "importing the example plugins into an empty store, median of three rounds, seconds"},
			{name: "plugin_wake_all_s", bench: "BenchmarkImportExamples", metric: "wake_all_s", what: "compiling them all to machine code side by side and warming their instances, which a chain naming them all pays after the import"},
		}},
	{name: "attempt", what: "one delivery attempt's own cost (no network), tracing off and on",
		goBench: &goBench{pkg: "./core/internal/delivery", bench: "BenchmarkAttempt$", benchtime: "20000x"},
		figures: []figure{
			{name: "attempt_ns_tracing_off", bench: "BenchmarkAttempt/tracing=off", metric: "ns/op", what: "ns per attempt, tracing off"},
			{name: "attempt_allocs_tracing_off", bench: "BenchmarkAttempt/tracing=off", metric: "allocs/op", what: "allocations per attempt, tracing off: no more than before tracing existed (TestTracingOffAllocatesNothing)"},
			{name: "attempt_ns_tracing_on", bench: "BenchmarkAttempt/tracing=on", metric: "ns/op", what: "ns per attempt, tracing on"},
			{name: "attempt_allocs_tracing_on", bench: "BenchmarkAttempt/tracing=on", metric: "allocs/op", what: "allocations per attempt, tracing on"},
		}},
	{name: "index", what: "indexing 10,000 votes against raw eth_getLogs",
		goBench: &goBench{pkg: "./core/internal/indexer", bench: "BenchmarkIndex10kVotes$", benchtime: "3x"},
		figures: []figure{
			{name: "index_events_per_s", bench: "BenchmarkIndex10kVotes", metric: "index_events_per_s", what: "events indexed per second, with proposal states and the token's events"},
			{name: "getlogs_events_per_s", bench: "BenchmarkIndex10kVotes", metric: "getlogs_events_per_s", what: "raw `eth_getLogs` of the same ranges, events per second"},
			{name: "index_ratio", target: "≥ 0.5", bench: "BenchmarkIndex10kVotes", metric: "index_ratio", what: "`index_events_per_s` / `getlogs_events_per_s`"},
		}},
	{name: "decode", what: "decoding one proposal action's calldata, uncached, over the curated set's functions and batches",
		goBench: &goBench{pkg: "./core/internal/calldata", bench: "BenchmarkDecode$", benchtime: "20000x"},
		figures: []figure{
			{name: "decode_us_per_action", bench: "BenchmarkDecode", metric: "decode_p50_us", what: "median µs to decode one action (function, arguments, nested calls); its p99 is BenchmarkDecode's decode_p99_us"},
		}},
	{name: "state_calls", what: "eth_calls to keep 100 open proposals' states true",
		goBench: &goBench{pkg: "./core/internal/indexer", bench: "BenchmarkStateCalls100Proposals$", benchtime: "1x"},
		figures: []figure{
			{name: "state_rpc_calls_per_1k_blocks", target: "lower is better", bench: "BenchmarkStateCalls100Proposals", metric: "state_rpc_calls_per_1k_blocks", what: "eth_calls per 1,000 polled blocks with 100 proposals open"},
			{name: "naive_state_calls_per_1k_blocks", bench: "BenchmarkStateCalls100Proposals", metric: "naive_state_calls_per_1k_blocks", what: "asking `state()` of each open proposal at every poll instead"},
		}},
	{name: "delegates_page", what: "the delegate leaderboard over 100,000 delegates, by each sort, on both stores",
		goBench: &goBench{pkg: "./core/internal/store", bench: "BenchmarkDelegatesPage100k$", benchtime: "1x"},
		figures: []figure{
			{name: "delegates_page_ms_*", target: "< 50", bench: "BenchmarkDelegatesPage100k", metric: "delegates_page_ms_*", what: "the first page of the leaderboard, ms (median of 21), per store and sort"},
			{name: "delegates_page_50k_ms_*", bench: "BenchmarkDelegatesPage100k", metric: "delegates_page_50k_ms_*", what: "the page after the 50,000th delegate, ms, per store and sort"},
		}},
}

// selectParts returns the parts -only names, with the parts they need and
// those that always run, in the table's order; all of them for "".
func selectParts(table []part, only string) ([]*part, error) {
	byName := map[string]*part{}
	for i := range table {
		byName[table[i].name] = &table[i]
	}
	want := map[string]bool{}
	var add func(name string) error
	add = func(name string) error {
		p, ok := byName[name]
		if !ok {
			return fmt.Errorf("-only: no part %q; the parts are %s", name, strings.Join(partNames(table), ", "))
		}
		if want[name] {
			return nil
		}
		want[name] = true
		for _, n := range p.needs {
			if err := add(n); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range splitList(only) {
		if err := add(name); err != nil {
			return nil, err
		}
	}
	var out []*part
	for i := range table {
		if only == "" || want[table[i].name] || table[i].always {
			out = append(out, &table[i])
		}
	}
	return out, nil
}

func partNames(table []part) []string {
	var names []string
	for _, p := range table {
		names = append(names, p.name)
	}
	return names
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// how says how a part runs, for -list and the doc.
func (p *part) how() string {
	if g := p.goBench; g != nil {
		return fmt.Sprintf("go test -run '^$' -bench '%s' -benchtime %s %s", g.bench, g.benchtime, g.pkg)
	}
	name := runtime.FuncForPC(reflect.ValueOf(p.run).Pointer()).Name()
	return "govgate-bench's " + name[strings.LastIndexByte(name, '.')+1:]
}

// declared returns the part's figure that name is, if it lists one.
func (p *part) declared(name string) (figure, bool) {
	for _, f := range p.figures {
		if f.matches(name) {
			return f, true
		}
	}
	return figure{}, false
}

func (f figure) matches(name string) bool {
	if prefix, suffix, ok := strings.Cut(f.name, "*"); ok {
		return strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix) && len(name) > len(prefix)+len(suffix)
	}
	return f.name == name
}

func printParts(w io.Writer, table []part) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PART\tWHAT\tHOW")
	for _, p := range table {
		what := p.what
		if len(p.needs) > 0 {
			what += " (needs " + strings.Join(p.needs, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.name, what, p.how())
	}
	tw.Flush()
}

// partFigure is a figure with the name of its part.
type partFigure struct {
	part string
	figure
}

// allFigures returns every figure of the table with its part, in order.
func allFigures(table []part) []partFigure {
	var out []partFigure
	for _, p := range table {
		for _, f := range p.figures {
			out = append(out, partFigure{p.name, f})
		}
	}
	return out
}
