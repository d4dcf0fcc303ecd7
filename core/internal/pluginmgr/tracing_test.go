package pluginmgr_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/govgate/govgate/core"
)

// Under a recording span (a delivery attempt's), each plugin step is a
// child span with the plugin's name, hook, decision and duration; the
// global chain's cached outcome is traced for every delivery that uses it.
// Without one, Apply records nothing.
func TestApplyTracesEachPluginStep(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, filepath.Join(t.TempDir(), "p.db"))
	m, _ := newManager(t, st, "")
	if _, err := m.Upload(ctx, watPlugin(t)); err != nil {
		t.Fatal(err)
	}
	if err := m.SetChain(ctx, core.GlobalChain, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["vote.cast"]}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := m.SetChain(ctx, 7, []core.ChainEntry{{Plugin: "wat-type-filter", Config: json.RawMessage(`{"types":["proposal.created"]}`)}}); err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	vote := note(core.TypeVoteCast)
	body, _ := json.Marshal(vote)

	if _, err := m.Apply(ctx, vote, body, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans without a recording parent", n)
	}
	for _, webhook := range []int64{1, 2, 7} {
		actx, attempt := tp.Tracer("test").Start(ctx, "delivery.attempt")
		if _, err := m.Apply(actx, vote, body, webhook); err != nil {
			t.Fatal(err)
		}
		attempt.End()
		var steps []string
		for _, s := range exp.GetSpans() {
			if s.Parent.SpanID() != attempt.SpanContext().SpanID() {
				continue
			}
			attrs := map[string]string{}
			for _, kv := range s.Attributes {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if s.Name != "plugin wat-type-filter" || attrs["govgate.plugin.name"] != "wat-type-filter" || attrs["govgate.plugin.duration_ms"] == "" || s.EndTime.Before(s.StartTime) {
				t.Fatalf("webhook %d: span %s %v", webhook, s.Name, attrs)
			}
			steps = append(steps, attrs["govgate.plugin.hook"]+" "+attrs["govgate.plugin.decision"])
		}
		want := []string{"filter kept"}
		if webhook == 7 {
			want = append(want, "filter dropped")
		}
		if len(steps) != len(want) || steps[0] != want[0] || (len(want) == 2 && steps[1] != want[1]) {
			t.Fatalf("webhook %d: plugin spans %q, want %q", webhook, steps, want)
		}
	}
}
