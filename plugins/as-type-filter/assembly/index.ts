// as-type-filter is a govgate plugin in AssemblyScript: it keeps a
// notification when its type is listed in the config,
//
//   {"types": ["proposal.created", "vote.cast"]}
//
// and keeps every type when the list is missing or empty. A drop says why,
// in the words of the Go event-filter: type "proposal.queued" is not in the
// list. Unknown keys in the config are an error, as in the Go SDK.
import { plugin, filter, Meta, Sample, Notification, Decision, JSONValue, quoteJSON } from "@govgate/sdk";
export { govgate_alloc, govgate_meta, govgate_filter, govgate_transform } from "@govgate/sdk";

const listed = "{\"types\":[\"proposal.created\",\"vote.cast\"]}";

plugin(new Meta("as-type-filter", "1.0.0")
  .schema("{\"type\":\"object\",\"properties\":{\"types\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},\"additionalProperties\":false}")
  .sample(new Sample("listed type", Notification.of("n1", "vote.cast", "uniswap", "2025-03-01T12:00:00Z"), listed, true))
  .sample(new Sample("other type", Notification.of("n2", "proposal.queued", "uniswap", "2025-03-01T12:00:00Z"), listed, false))
  .sample(new Sample("prefix of a listed type", Notification.of("n3", "vote", "uniswap"), "{\"types\":[\"vote.cast\"]}", false))
  .sample(new Sample("no list keeps all", Notification.of("n4", "test", "uniswap"), "{}", true)));

const known = ["types"];

filter((n: Notification, cfg: JSONValue): Decision => {
  if (cfg.isNull) return Decision.keep();
  if (!cfg.isObject) return Decision.error("decode config: want a JSON object");
  const unknown = cfg.unknownKey(known);
  if (unknown.length > 0) return Decision.error("decode config: unknown field " + quoteJSON(unknown));
  const types = cfg.get("types");
  if (types === null || types.isNull) return Decision.keep();
  if (!types.isArray) return Decision.error("decode config: types: want an array of strings");
  if (types.items.length == 0 || types.strings().includes(n.type)) return Decision.keep();
  return Decision.drop("type " + quoteJSON(n.type) + " is not in the list");
});
