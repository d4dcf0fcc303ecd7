// hooks is a plugin that exercises every part of the library, for the Go
// test core/internal/wasmhost/assemblyscript_test.go, which builds it with
//
//   node_modules/.bin/asc testdata/hooks.ts --runtime minimal --exportStart _initialize \
//     --use abort=assembly/index/abort -O3 --outFile OUT.wasm
//
// The config's "mode" says what each hook does.
import {
  plugin, filter, transform, log, parseJSON, quoteJSON,
  Meta, Sample, Notification, Body, Decision, Output, JSONValue, LEVEL_WARN,
} from "../assembly/index";
export { govgate_alloc, govgate_meta, govgate_filter, govgate_transform } from "../assembly/index";

plugin(new Meta("as-hooks", "0.0.1")
  .schema("{\"type\":\"object\"}")
  .sample(new Sample("keeps", Notification.of("n1", "test", "ens", "2025-03-01T12:00:00Z"), "{\"mode\":\"keep\"}", true))
  .sample(new Sample("drops", Notification.of("n2", "test", "ens"), "{\"mode\":\"drop\"}", false)));

function mode(cfg: JSONValue): string {
  const m = cfg.get("mode");
  return m === null ? "" : m.text;
}

filter((n: Notification, cfg: JSONValue): Decision => {
  const m = mode(cfg);
  if (m == "drop") return Decision.drop("dropped " + n.id + " of " + n.dao + " at " + n.occurredAt);
  if (m == "error") return Decision.error("filter failed for " + n.type);
  if (m == "long") return Decision.drop("é".repeat(600));
  if (m == "abort") assert(false, "boom");
  if (m == "log") log(LEVEL_WARN, "hello from " + n.id);
  if (m == "vote") {
    // BenchmarkPluginCallASVote: what core/internal/wasmhost/testdata/votefilter
    // does in Go, decode the vote and keep it when in favour with a weight.
    const v = parseJSON(n.data);
    const support = v.get("support");
    const weight = v.get("weight");
    if (support !== null && support.text == "1" && weight !== null && weight.isString && weight.text.length > 0) return Decision.keep();
    return Decision.drop();
  }
  if (m == "weight") {
    const w = parseJSON(n.data).get("weight");
    return Decision.drop("weight " + (w === null ? "none" : w.text));
  }
  return Decision.keep();
});

transform((n: Notification, body: Body, cfg: JSONValue): Output => {
  const m = mode(cfg);
  if (m == "upper") return Output.text(body.text().toUpperCase(), "text/plain");
  if (m == "wrap") return Output.text("{\"wrapped\":" + body.text() + ",\"ct\":" + quoteJSON(body.contentType) + "}");
  if (m == "bytes") return Output.bytes(body.bytes, "application/octet-stream");
  if (m == "error") return Output.error("transform failed");
  return Output.unchanged();
});
