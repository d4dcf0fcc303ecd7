package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPartsTable checks the table's rows: unique part and figure names,
// each part runs one way, a Go benchmark's figures say where they come
// from, and every part's needs exist.
func TestPartsTable(t *testing.T) {
	names := map[string]bool{}
	figures := map[string]string{}
	for _, p := range parts {
		if p.name == "" || names[p.name] {
			t.Errorf("part %q: empty or repeated name", p.name)
		}
		names[p.name] = true
		if p.what == "" {
			t.Errorf("part %s: no what", p.name)
		}
		if (p.run == nil) == (p.goBench == nil) {
			t.Errorf("part %s: give run or goBench, one of them", p.name)
		}
		if len(p.figures) == 0 {
			t.Errorf("part %s: no figures", p.name)
		}
		for _, f := range p.figures {
			if other, ok := figures[f.name]; ok {
				t.Errorf("figure %s: in parts %s and %s", f.name, other, p.name)
			}
			figures[f.name] = p.name
			if f.what == "" {
				t.Errorf("figure %s: no what", f.name)
			}
			if !regexp.MustCompile(`^[a-z0-9_]*\*?[a-z0-9_]*$`).MatchString(f.name) || f.name == "*" {
				t.Errorf("figure %s: want lower_snake_case, with at most one *", f.name)
			}
			if p.goBench != nil && (f.bench == "" || f.metric == "") {
				t.Errorf("figure %s: a Go benchmark's figure names its benchmark and metric", f.name)
			}
			if p.goBench == nil && f.bench+f.metric+f.min+f.max != "" {
				t.Errorf("figure %s: only a Go benchmark's figure has a benchmark and metric", f.name)
			}
			if strings.HasSuffix(f.name, "*") != strings.HasSuffix(f.metric, "*") && p.goBench != nil {
				t.Errorf("figure %s: a pattern's metric is a pattern too (%s)", f.name, f.metric)
			}
		}
	}
	for _, p := range parts {
		for _, n := range p.needs {
			if !names[n] {
				t.Errorf("part %s needs %s, which is not a part", p.name, n)
			}
		}
	}
}

func TestSelectParts(t *testing.T) {
	table := []part{
		{name: "a"}, {name: "b", needs: []string{"a"}}, {name: "c", needs: []string{"b"}}, {name: "d"}, {name: "e", always: true},
	}
	for _, tc := range []struct {
		name, only string
		want       []string
		err        string
	}{
		{name: "all", only: "", want: []string{"a", "b", "c", "d", "e"}},
		{name: "one", only: "d", want: []string{"d", "e"}},
		{name: "needs, in the table's order", only: "c", want: []string{"a", "b", "c", "e"}},
		{name: "spaces and repeats", only: " d, c ,d", want: []string{"a", "b", "c", "d", "e"}},
		{name: "unknown", only: "d,nope", err: `no part "nope"; the parts are a, b, c, d, e`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selectParts(table, tc.only)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				names = append(names, p.name)
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("got %v, want %v", names, tc.want)
			}
		})
	}
}

// goTestOutput is go test -bench output as the attempt and plugin_call
// parts get it (trimmed).
const goTestOutput = `goos: linux
goarch: amd64
pkg: github.com/govgate/govgate/core/internal/wasmhost
cpu: AMD EPYC
BenchmarkPluginCall-2   	    2000	     52011 ns/op	        45.30 p50_us	        98.00 p99_us	    1234 B/op	      12 allocs/op
BenchmarkPluginSize-2   	       1	         1.000 ns/op	       312.5 size_kb_dao-filter	        14.25 size_kb_as-type-filter
BenchmarkAttempt/tracing=off-2         	   20000	      4321 ns/op	    2048 B/op	      33 allocs/op
BenchmarkAttempt/tracing=on-2          	   20000	      6543 ns/op	    4096 B/op	      51 allocs/op
BenchmarkDelegatesPage100k/sqlite-2    	       1	 123 ns/op	         0.2100 delegates_page_ms_sqlite	         0.3300 delegates_page_50k_ms_sqlite
BenchmarkDelegatesPage100k/postgres-2  	       1	 456 ns/op	         0.4000 delegates_page_ms_postgres
--- BENCH: BenchmarkPluginCall-2
    bench_test.go:10: a log line
PASS
ok  	github.com/govgate/govgate/core/internal/wasmhost	3.2s
`

func TestReportGoBench(t *testing.T) {
	lines := parseGoBench([]byte(goTestOutput))
	p := &part{name: "x", goBench: &goBench{}, figures: []figure{
		{name: "call_p50_us", bench: "BenchmarkPluginCall", metric: "p50_us", what: "-"},
		{name: "size_kb_*", bench: "BenchmarkPluginSize", metric: "size_kb_*", what: "-"},
		{name: "attempt_allocs_tracing_on", bench: "BenchmarkAttempt/tracing=on", metric: "allocs/op", what: "-"},
		{name: "page_ms_*", bench: "BenchmarkDelegatesPage100k", metric: "delegates_page_ms_*", what: "-"},
	}}
	var out bytes.Buffer
	rec = &recorder{w: &out}
	rec.begin(p)
	if err := reportGoBench(p, lines); err != nil {
		t.Fatal(err)
	}
	if err := rec.end(); err != nil {
		t.Fatal(err)
	}
	want := "bench call_p50_us: 45.30\nbench size_kb_as-type-filter: 14.25\nbench size_kb_dao-filter: 312.5\nbench attempt_allocs_tracing_on: 51\nbench page_ms_postgres: 0.4000\nbench page_ms_sqlite: 0.2100\n"
	if out.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if v := rec.figures[2].Value; v != 312.5 {
		t.Fatalf("size_kb_dao-filter recorded %v, want 312.5", v)
	}

	// A figure two sub-benchmarks report is ambiguous.
	amb := &part{name: "x", goBench: &goBench{}, figures: []figure{{name: "ns", bench: "BenchmarkAttempt", metric: "ns/op", what: "-"}}}
	rec = &recorder{w: &out}
	rec.begin(amb)
	if err := reportGoBench(amb, lines); err == nil || !strings.Contains(err.Error(), "2 sub-benchmarks") {
		t.Fatalf("err %v, want one saying the figure is ambiguous", err)
	}

	// A figure whose benchmark or metric the output lacks fails the part.
	p.figures = append(p.figures, figure{name: "call_p90_us", bench: "BenchmarkPluginCall", metric: "p90_us", what: "-"})
	rec = &recorder{w: &out}
	rec.begin(p)
	if err := reportGoBench(p, lines); err == nil || !strings.Contains(err.Error(), "call_p90_us (BenchmarkPluginCall p90_us)") {
		t.Fatalf("err %v, want one naming the missing figure", err)
	}
}

// TestUndeclaredFigureFailsThePart: a part prints only what it lists, so
// that the table (and the doc made from it) names every figure.
func TestUndeclaredFigureFailsThePart(t *testing.T) {
	var out bytes.Buffer
	rec = &recorder{w: &out}
	p := &part{name: "x", figures: []figure{{name: "listed"}}}
	rec.begin(p)
	report("listed", "%.1f", 1)
	reportMedian("unlisted", "%.2f", []float64{3, 1, 2})
	err := rec.end()
	if err == nil || !strings.Contains(err.Error(), "part x reports figure unlisted") {
		t.Fatalf("err %v, want one naming the unlisted figure", err)
	}
	if want := "bench listed: 1.0\nbench unlisted: 2.00\nrounds unlisted: 3.00 1.00 2.00 (spread 1.00-3.00)\n"; out.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

// TestPerformanceDocListsEveryFigure fails when a figure the bench prints
// has no row in docs/performance.md's table of figures and targets, or a
// part none in its table of parts, or the doc lists a figure no part has.
func TestPerformanceDocListsEveryFigure(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	const fix = "; run: go run ./core/cmd/govgate-bench -doc docs/performance.md"
	rows := docRows(doc, figuresBegin, figuresEnd)
	var listed []string
	for _, row := range rows {
		listed = append(listed, strings.Trim(row[0], "`"))
	}
	for _, f := range allFigures(parts) {
		i := slices.IndexFunc(rows, func(row []string) bool {
			name := strings.Trim(row[0], "`")
			return name == f.name || f.matches(name)
		})
		if i < 0 {
			t.Errorf("figure %s (part %s) has no row in docs/performance.md%s", f.name, f.part, fix)
			continue
		}
		if got := rows[i]; got[1] != f.part || got[2] != cell(f.target) {
			t.Errorf("figure %s: the doc says part %q, target %q; parts.go says %q, %q%s", f.name, got[1], got[2], f.part, f.target, fix)
		}
	}
	for _, name := range listed {
		if !slices.ContainsFunc(allFigures(parts), func(f partFigure) bool { return f.name == name || f.matches(name) }) {
			t.Errorf("docs/performance.md lists figure %s, which no part has%s", name, fix)
		}
	}
	partRows := docRows(doc, partsBegin, partsEnd)
	for _, p := range parts {
		if !slices.ContainsFunc(partRows, func(row []string) bool { return row[0] == "`"+p.name+"`" }) {
			t.Errorf("part %s has no row in docs/performance.md's table of parts%s", p.name, fix)
		}
	}
	if len(partRows) != len(parts) {
		t.Errorf("docs/performance.md has %d parts, parts.go %d%s", len(partRows), len(parts), fix)
	}
}

// TestWriteDoc regenerates a doc from a run, then from nothing: the second
// keeps the first's values, and a figure no run gave reads "–".
func TestWriteDoc(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "performance.md")
	os.WriteFile(doc, []byte("# Performance\n\n"+partsBegin+"\nold\n"+partsEnd+"\n\ntext\n\n"+figuresBegin+"\nold\n"+figuresEnd+"\n"), 0o644)
	run := runRecord{Commit: "abc1234", Figures: []result{
		{Name: "delivery_ratio_postgres", Text: "0.73", Spread: "0.68-1.10"},
		{Name: "plugin_size_kb_slack", Text: "312.5"},
	}}
	b, _ := json.Marshal(run)
	runFile := filepath.Join(dir, "run.json")
	os.WriteFile(runFile, b, 0o644)
	if err := writeDoc(doc, []string{runFile}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(doc)
	for _, want := range []string{
		"| `delivery_ratio_postgres` | postgres | ≥ 0.7 | 0.73 | 0.68-1.10 | abc1234 |",
		"| `plugin_size_kb_slack` | plugin_call |  | 312.5 |  | abc1234 |",
		"| `latency_p99_ms` | latency | ≤ 5 | – |",
		"| `plugin_call` | one call",
		"\n\ntext\n\n",
	} {
		if !strings.Contains(string(first), want) {
			t.Errorf("doc lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(string(first), "\nold\n") || strings.Contains(string(first), "| `plugin_size_kb_*` | plugin_call") {
		t.Errorf("doc keeps what it should replace:\n%s", first)
	}
	if err := writeDoc(doc, nil); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(doc); !bytes.Equal(first, second) {
		t.Errorf("regenerating without a run changed the doc:\n%s\nwas\n%s", second, first)
	}
}

// TestGoBenchmarksExist lists each Go benchmark part's benchmarks with go
// test -list, so that a renamed benchmark fails here rather than in a
// long bench run.
func TestGoBenchmarksExist(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the test binaries of every Go benchmark part")
	}
	for _, p := range parts {
		g := p.goBench
		if g == nil {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			cmd := exec.Command("go", "test", "-list", g.bench, g.pkg)
			cmd.Dir = filepath.Join("..", "..", "..")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go test -list: %v\n%s", err, out)
			}
			for _, f := range p.figures {
				top, _, _ := strings.Cut(f.bench, "/")
				if !slices.Contains(strings.Fields(string(out)), top) {
					t.Errorf("figure %s: %s does not list %s:\n%s", f.name, p.how(), top, out)
				}
			}
		})
	}
}
