package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// result is one figure of a run, as -json records it.
type result struct {
	Name string `json:"name"`
	Part string `json:"part"`
	// Value is the figure; Text is how the bench printed it.
	Value float64 `json:"value"`
	Text  string  `json:"text"`
	// Rounds are the figure's rounds when it is their median; Spread is
	// their lowest and highest, or a Go benchmark's, as printed ("0.40-0.54").
	Rounds []float64 `json:"rounds,omitempty"`
	Spread string    `json:"spread,omitempty"`
}

// runRecord is the JSON file -json writes: what was measured, on what.
type runRecord struct {
	Commit  string    `json:"commit"`
	Date    time.Time `json:"date"`
	Go      string    `json:"go"`
	CPUs    int       `json:"cpus"`
	Args    []string  `json:"args"`
	Figures []result  `json:"figures"`
}

// recorder prints each figure as it is reported and keeps it for -json. A
// part may report only the figures it lists.
type recorder struct {
	w       io.Writer
	part    *part
	figures []result
	err     error
}

var rec = &recorder{w: os.Stdout}

func (r *recorder) begin(p *part) { r.part, r.err = p, nil }

// end returns the first figure the part reported without listing it.
func (r *recorder) end() error {
	err := r.err
	r.part, r.err = nil, nil
	return err
}

func (r *recorder) add(res result) {
	if r.part == nil {
		r.err = errors.Join(r.err, fmt.Errorf("figure %s reported outside a part", res.Name))
		return
	}
	if _, ok := r.part.declared(res.Name); !ok {
		r.err = errors.Join(r.err, fmt.Errorf("part %s reports figure %s, which it does not list: add it to the part's figures in parts.go", r.part.name, res.Name))
	}
	res.Part = r.part.name
	r.figures = append(r.figures, res)
	fmt.Fprintf(r.w, "bench %s: %s\n", res.Name, res.Text)
	if res.Spread != "" {
		if len(res.Rounds) > 0 {
			each := make([]string, len(res.Rounds))
			format := roundsFormat(res.Text)
			for i, v := range res.Rounds {
				each[i] = fmt.Sprintf(format, v)
			}
			fmt.Fprintf(r.w, "rounds %s: %s (spread %s)\n", res.Name, strings.Join(each, " "), res.Spread)
		} else {
			fmt.Fprintf(r.w, "rounds %s: (spread %s)\n", res.Name, res.Spread)
		}
	}
}

// roundsFormat is the format that prints a round as text printed the
// median: as many decimals.
func roundsFormat(text string) string {
	if _, frac, ok := strings.Cut(text, "."); ok {
		return "%." + strconv.Itoa(len(frac)) + "f"
	}
	return "%.0f"
}

// report prints and records one figure of the running part.
func report(name string, format string, v float64) {
	rec.add(result{Name: name, Value: v, Text: fmt.Sprintf(format, v)})
}

// reportMedian reports the median of a figure's rounds, and on a line of
// its own ("rounds NAME: …") every round and their spread.
func reportMedian(name, format string, rounds []float64) {
	m := median(rounds)
	rec.add(result{Name: name, Value: m, Text: fmt.Sprintf(format, m), Rounds: slices.Clone(rounds),
		Spread: fmt.Sprintf(format+"-"+format, slices.Min(rounds), slices.Max(rounds))})
}

func (r *recorder) writeJSON(path string, args []string) error {
	commit, _ := exec.Command("git", "describe", "--always", "--dirty").Output()
	run := runRecord{Commit: strings.TrimSpace(string(commit)), Date: time.Now().UTC().Truncate(time.Second), Go: runtime.Version(),
		CPUs: runtime.NumCPU(), Args: args, Figures: r.figures}
	if run.Figures == nil {
		run.Figures = []result{}
	}
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// benchLine is one result line of go test -bench: the benchmark's name
// without its -GOMAXPROCS suffix, and each metric's value as printed, by
// unit.
type benchLine struct {
	name    string
	metrics map[string]string
}

// parseGoBench reads go test -bench output's result lines
// ("BenchmarkX-2   3   123 ns/op   4.5 p50_us").
func parseGoBench(out []byte) []benchLine {
	var lines []benchLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		l := benchLine{name: name, metrics: map[string]string{}}
		for i := 2; i+1 < len(f); i += 2 {
			l.metrics[f[i+1]] = f[i]
		}
		lines = append(lines, l)
	}
	return lines
}

// runGoBench runs a part's Go benchmarks and reports its figures from
// their metrics. A figure the output does not give fails the part: a
// renamed benchmark or metric must not drop a figure silently.
func runGoBench(ctx context.Context, p *part) error {
	g := p.goBench
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", g.bench, "-benchtime", g.benchtime, g.pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s%s", p.how(), err, out, stderr.Bytes())
	}
	return reportGoBench(p, parseGoBench(out))
}

func reportGoBench(p *part, lines []benchLine) error {
	var missing []string
	for _, f := range p.figures {
		var found []result
		for _, l := range lines {
			// A figure's benchmark may have sub-benchmarks (one per store,
			// say), each reporting metrics of its own names.
			if l.name != f.bench && !strings.HasPrefix(l.name, f.bench+"/") {
				continue
			}
			for unit, text := range l.metrics {
				name, ok := figureName(f, unit)
				if !ok {
					continue
				}
				v, err := strconv.ParseFloat(text, 64)
				if err != nil {
					return fmt.Errorf("%s %s: %q: %w", l.name, unit, text, err)
				}
				res := result{Name: name, Value: v, Text: text}
				if f.min != "" && f.max != "" && l.metrics[f.min] != "" && l.metrics[f.max] != "" {
					res.Spread = l.metrics[f.min] + "-" + l.metrics[f.max]
				}
				found = append(found, res)
			}
		}
		if len(found) == 0 {
			missing = append(missing, fmt.Sprintf("%s (%s %s)", f.name, f.bench, f.metric))
			continue
		}
		if len(found) > 1 && !strings.Contains(f.name, "*") {
			return fmt.Errorf("figure %s: %s reports %s in %d sub-benchmarks: name one (BenchmarkX/sub)", f.name, f.bench, f.metric, len(found))
		}
		slices.SortFunc(found, func(a, b result) int { return strings.Compare(a.Name, b.Name) })
		for _, res := range found {
			rec.add(res)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the benchmarks gave no %s", strings.Join(missing, ", "))
	}
	return nil
}

// figureName maps a benchmark's metric unit to the figure's name: the
// figure's own, or for a pattern the name with the unit's suffix.
func figureName(f figure, unit string) (string, bool) {
	prefix, ok := strings.CutSuffix(f.metric, "*")
	if !ok {
		return f.name, unit == f.metric
	}
	suffix, ok := strings.CutPrefix(unit, prefix)
	if !ok || suffix == "" {
		return "", false
	}
	return strings.TrimSuffix(f.name, "*") + suffix, true
}
