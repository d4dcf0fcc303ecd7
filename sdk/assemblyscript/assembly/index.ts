// @govgate/sdk for AssemblyScript: write a govgate plugin (ABI version 1,
// sdk/ABI.md) without handling pointers. It does what the Go SDK does:
// imports the version marker, exports govgate_alloc, govgate_meta,
// govgate_filter and govgate_transform, decodes the input, parses each
// distinct config once, answers every config of a call, and keeps the
// output alive until the next call.
//
// A plugin registers its metadata and hooks at the top level of its entry
// file and re-exports the ABI functions:
//
//   import { plugin, filter, Meta, Notification, Decision, JSONValue } from "@govgate/sdk";
//   export { govgate_alloc, govgate_meta, govgate_filter, govgate_transform } from "@govgate/sdk";
//
//   plugin(new Meta("my-filter", "1.0.0"));
//   filter((n: Notification, cfg: JSONValue): Decision => Decision.keep());

import { JSONValue, parseJSON, quoteJSON } from "./json";

export { JSONValue, Kind, parseJSON, quoteJSON } from "./json";

// ---- imports (sdk/ABI.md, Imports) ----

// @ts-ignore: decorator
@external("govgate", "abi_v1")
declare function abiV1(): void;

// @ts-ignore: decorator
@external("govgate", "log")
declare function hostLog(level: i32, ptr: usize, len: i32): void;

// Calling the marker keeps it among the module's imports: a host that does
// not speak ABI v1 cannot link the plugin. This runs in _initialize.
abiV1();

// ABI_VERSION is the plugin ABI version this library builds plugins for.
export const ABI_VERSION: i32 = 1;

// Notification types the chain indexer emits; the admin API sends TYPE_TEST.
// The gateway's list (core.NotificationTypes) is the one these follow: a
// test there reads this file.
export const TYPE_PROPOSAL_CREATED = "proposal.created";
export const TYPE_VOTE_CAST = "vote.cast";
export const TYPE_VOTE_OVERRIDDEN = "vote.overridden";
export const TYPE_PROPOSAL_QUEUED = "proposal.queued";
export const TYPE_PROPOSAL_EXECUTED = "proposal.executed";
export const TYPE_PROPOSAL_CANCELED = "proposal.canceled";
export const TYPE_PROPOSAL_EXTENDED = "proposal.extended";
// Time-driven: the confirmed head crossed a proposal's voteStart, voteEnd
// (or a lead before it), or its ETA plus the timelock's grace period.
export const TYPE_PROPOSAL_ACTIVE = "proposal.active";
export const TYPE_PROPOSAL_ENDING_SOON = "proposal.ending_soon";
export const TYPE_PROPOSAL_SUCCEEDED = "proposal.succeeded";
export const TYPE_PROPOSAL_DEFEATED = "proposal.defeated";
export const TYPE_PROPOSAL_EXPIRED = "proposal.expired";
// The voting token's delegations.
export const TYPE_DELEGATE_CHANGED = "delegate.changed";
export const TYPE_DELEGATE_VOTES_CHANGED = "delegate.votes_changed";
// A notification already sent came from blocks a reorganisation dropped.
export const TYPE_NOTIFICATION_ORPHANED = "notification.orphaned";
export const TYPE_TEST = "test";

// ---- logs ----

export const LEVEL_DEBUG: i32 = 0;
export const LEVEL_INFO: i32 = 1;
export const LEVEL_WARN: i32 = 2;
export const LEVEL_ERROR: i32 = 3;

// log sends a line to the gateway's plugin log, which keeps the latest lines
// of each plugin and limits their rate.
export function log(level: i32, msg: string): void {
  const b = String.UTF8.encode(msg);
  hostLog(level, changetype<usize>(b), b.byteLength);
}

// abort is the module's abort handler (asconfig.json: "use": ["abort=..."]):
// a failed assertion or an out-of-range index logs why and traps, and the
// chain entry's failure policy decides.
export function abort(message: string | null, file: string | null, line: u32, column: u32): void {
  let msg = "abort";
  if (message !== null) msg += ": " + message;
  if (file !== null) msg += " at " + file + ":" + line.toString() + ":" + column.toString();
  log(3, msg); // LEVEL_ERROR, which may not be initialized yet when start-up aborts
  unreachable();
}

// ---- what a plugin sees ----

// Notification is the governance event a plugin sees. Its JSON form is the
// delivery body govgate sends when no plugin transforms it:
// {"id","type","dao","occurredAt","data"}.
export class Notification {
  id: string = "";
  type: string = "";
  dao: string = "";
  // occurredAt is RFC 3339 with nanoseconds, UTC; "" when unknown.
  occurredAt: string = "";
  // The payload is decoded from the input only when a hook reads data.
  private dataText: string | null = "";
  private dataPtr: usize = 0;
  private dataLen: i32 = 0;

  // data is the event's payload as JSON text; parse it with parseJSON.
  get data(): string {
    let d = this.dataText;
    if (d === null) {
      d = String.UTF8.decodeUnsafe(this.dataPtr, this.dataLen);
      this.dataText = d;
    }
    return d;
  }

  set data(s: string) { this.dataText = s; }

  // dataAt points data at UTF-8 text in the call's input, which stays
  // allocated until the call returns; the library calls it, plugins do not.
  dataAt(ptr: usize, len: i32): void {
    this.dataText = null;
    this.dataPtr = ptr;
    this.dataLen = len;
  }

  static of(id: string, type: string, dao: string, occurredAt: string = "", data: string = "{}"): Notification {
    const n = new Notification();
    n.id = id;
    n.type = type;
    n.dao = dao;
    n.occurredAt = occurredAt;
    n.data = data;
    return n;
  }

  toJSON(): string {
    let s = "{\"id\":" + quoteJSON(this.id) + ",\"type\":" + quoteJSON(this.type) + ",\"dao\":" + quoteJSON(this.dao);
    if (this.occurredAt.length > 0) s += ",\"occurredAt\":" + quoteJSON(this.occurredAt);
    return s + ",\"data\":" + (this.data.length > 0 ? this.data : "null") + "}";
  }
}

// Body is the delivery body as the chain has made it so far.
export class Body {
  constructor(public bytes: ArrayBuffer, public contentType: string) {}

  // text decodes the body as UTF-8.
  text(): string { return String.UTF8.decode(this.bytes); }
}

// ---- answers ----

const STATUS_DROP: u8 = 0;
const STATUS_KEEP: u8 = 1;
const STATUS_ERROR: u8 = 2;
const STATUS_BODY: u8 = 3;
const STATUS_UNCHANGED: u8 = 4;

// Decision is a filter's answer for one config.
export class Decision {
  constructor(public status: u8, public message: string) {}

  static keep(): Decision { return new Decision(STATUS_KEEP, ""); }

  // drop drops the delivery. The gateway records the reason with it, after
  // the plugin's name: write it for the person reading the delivery log and
  // name the value that decided. It is cut to 512 bytes, ending in "…".
  static drop(reason: string = ""): Decision { return new Decision(STATUS_DROP, reason); }

  // error fails the call for this config; the chain entry's failure policy
  // decides what becomes of the delivery.
  static error(message: string): Decision { return new Decision(STATUS_ERROR, message); }
}

// Output is a transform's answer for one config.
export class Output {
  status: u8 = STATUS_UNCHANGED;
  message: string = "";
  contentType: string = "";
  body: ArrayBuffer = new ArrayBuffer(0);

  // unchanged delivers the body as it was.
  static unchanged(): Output { return new Output(); }

  // text replaces the body with s, as UTF-8; a contentType of "" keeps the
  // current one.
  static text(s: string, contentType: string = ""): Output {
    return Output.bytes(String.UTF8.encode(s), contentType);
  }

  // bytes replaces the body; a contentType of "" keeps the current one.
  static bytes(b: ArrayBuffer, contentType: string = ""): Output {
    const o = new Output();
    o.status = STATUS_BODY;
    o.body = b;
    o.contentType = contentType;
    return o;
  }

  // error fails the call for this config, as Decision.error.
  static error(message: string): Output {
    const o = new Output();
    o.status = STATUS_ERROR;
    o.message = message;
    return o;
  }
}

// ---- metadata ----

// Sample is an input with the outcome the plugin promises for it; the
// gateway runs the samples before it activates the plugin.
export class Sample {
  // config is JSON text, "" for none; body is the delivery body before the
  // plugin, "" for the notification's JSON; expectBody "" checks no body.
  body: string = "";
  expectBody: string = "";
  expectContentType: string = "";

  constructor(public name: string, public input: Notification, public config: string, public expectKeep: bool) {}

  toJSON(): string {
    let s = "{\"name\":" + quoteJSON(this.name) + ",\"input\":" + this.input.toJSON();
    if (this.config.length > 0) s += ",\"config\":" + this.config;
    if (this.body.length > 0) s += ",\"body\":" + quoteJSON(this.body);
    s += ",\"expectKeep\":" + (this.expectKeep ? "true" : "false");
    if (this.expectBody.length > 0) s += ",\"expectBody\":" + quoteJSON(this.expectBody);
    if (this.expectContentType.length > 0) s += ",\"expectContentType\":" + quoteJSON(this.expectContentType);
    return s + "}";
  }
}

// Meta describes a plugin to the people who install and configure it.
export class Meta {
  // configSchema is a JSON Schema of the config as JSON text, "" for none.
  configSchema: string = "";
  samples: Sample[] = [];

  // name: lowercase letters, digits and inner '.', '_' or '-', at most 64
  // bytes; loading a plugin replaces the loaded one of the same name.
  constructor(public name: string, public version: string) {}

  schema(json: string): Meta { this.configSchema = json; return this; }

  sample(s: Sample): Meta { this.samples.push(s); return this; }
}

// ---- registration ----

export type FilterFn = (n: Notification, config: JSONValue) => Decision;
export type TransformFn = (n: Notification, body: Body, config: JSONValue) => Output;

let meta: Meta | null = null;
let filterFn: FilterFn | null = null;
let transformFn: TransformFn | null = null;

// plugin records the plugin's metadata; call it once, at the top level.
export function plugin(m: Meta): void {
  assert(meta === null, "plugin called twice");
  meta = m;
}

// filter registers the plugin's filter: it returns whether the notification
// is delivered to a webhook whose chain configures the plugin with config.
// config is parsed once per distinct config and kept (null JSON when the
// chain entry has none); it must be treated as read-only. A filter must
// depend only on its arguments: the gateway calls it once for all the
// webhooks that share a config.
export function filter(fn: FilterFn): void {
  assert(filterFn === null, "filter registered twice");
  filterFn = fn;
}

// transform registers the plugin's transform: it receives the delivery body
// as the chain has made it so far and returns what to send instead.
export function transform(fn: TransformFn): void {
  assert(transformFn === null, "transform registered twice");
  transformFn = fn;
}

function metaJSON(): string {
  const m = meta;
  if (m === null) return "{\"abi\":1,\"name\":\"\",\"version\":\"\",\"hooks\":[]}";
  let hooks = new Array<string>();
  if (filterFn !== null) hooks.push("\"filter\"");
  if (transformFn !== null) hooks.push("\"transform\"");
  let s = "{\"abi\":" + ABI_VERSION.toString() + ",\"name\":" + quoteJSON(m.name) + ",\"version\":" + quoteJSON(m.version) +
    ",\"hooks\":[" + hooks.join(",") + "]";
  if (m.configSchema.length > 0) s += ",\"configSchema\":" + m.configSchema;
  if (m.samples.length > 0) {
    const parts = new Array<string>();
    for (let i = 0; i < m.samples.length; i++) parts.push(m.samples[i].toJSON());
    s += ",\"samples\":[" + parts.join(",") + "]";
  }
  return s + "}";
}

// ---- configs ----

// maxConfigs bounds the parsed configs an instance keeps.
const maxConfigs = 256;
let configs = new Map<string, JSONValue>();

function config(raw: string): JSONValue {
  if (configs.has(raw)) return configs.get(raw);
  let v = parseJSON(raw.trim().length == 0 ? "null" : raw);
  if (configs.size >= maxConfigs) configs.clear();
  configs.set(raw, v);
  return v;
}

// ---- the exports (sdk/ABI.md, Exports and A call) ----

let input: ArrayBuffer | null = null; // allocated by govgate_alloc for the next call
let output: ArrayBuffer | null = null; // the last answer, read by the host after the call

export function govgate_alloc(size: i32): usize {
  const b = new ArrayBuffer(size > 0 ? size : 1);
  input = b;
  return changetype<usize>(b);
}

export function govgate_meta(): u64 { return ret(String.UTF8.encode(metaJSON())); }

export function govgate_filter(ptr: usize, len: i32): u64 { return call(true, ptr, len); }

export function govgate_transform(ptr: usize, len: i32): u64 { return call(false, ptr, len); }

function ret(b: ArrayBuffer): u64 {
  output = b;
  if (b.byteLength == 0) return 0;
  return (<u64>changetype<usize>(b) << 32) | <u64>b.byteLength;
}

// reader walks the input: fields are a little-endian u32 length and bytes.
class Reader {
  ok: bool = true;
  constructor(public p: usize, public end: usize) {}

  u32(): u32 {
    if (this.p + 4 > this.end) { this.ok = false; return 0; }
    const v = load<u32>(this.p);
    this.p += 4;
    return v;
  }

  // field returns the start of the next field and leaves its length in n.
  n: u32 = 0;
  field(): usize {
    const n = this.u32();
    if (!this.ok || <u64>this.p + <u64>n > <u64>this.end) { this.ok = false; this.n = 0; return 0; }
    const at = this.p;
    this.p += n;
    this.n = n;
    return at;
  }

  string(): string {
    const at = this.field();
    return this.ok ? String.UTF8.decodeUnsafe(at, this.n) : "";
  }
}

// Writer builds the output.
class Writer {
  buf: Uint8Array = new Uint8Array(64);
  len: i32 = 0;

  grow(n: i32): void {
    if (this.len + n <= this.buf.length) return;
    let c = this.buf.length * 2;
    while (c < this.len + n) c *= 2;
    const b = new Uint8Array(c);
    b.set(this.buf.subarray(0, this.len));
    this.buf = b;
  }

  u8(v: u8): void { this.grow(1); this.buf[this.len++] = v; }

  u32(v: u32): void {
    this.grow(4);
    store<u32>(changetype<usize>(this.buf.buffer) + <usize>this.len, v);
    this.len += 4;
  }

  bytes(b: ArrayBuffer): void {
    this.grow(b.byteLength);
    memory.copy(changetype<usize>(this.buf.buffer) + <usize>this.len, changetype<usize>(b), b.byteLength);
    this.len += b.byteLength;
  }

  result(status: u8, payload: ArrayBuffer): void {
    this.u8(status);
    this.u32(payload.byteLength);
    this.bytes(payload);
  }

  done(): ArrayBuffer { return this.buf.buffer.slice(0, this.len); }
}

function errorOutput(msg: string): u64 {
  const w = new Writer();
  w.result(STATUS_ERROR, String.UTF8.encode(msg));
  return ret(w.done());
}

// maxReasonBytes bounds a drop reason, as the Go SDK does, so that the
// delivery log (1,024 bytes with its prefix) keeps it whole.
const maxReasonBytes = 512;

function reasonBytes(s: string): ArrayBuffer {
  const b = String.UTF8.encode(s);
  if (b.byteLength <= maxReasonBytes) return b;
  const u = Uint8Array.wrap(b);
  let n = maxReasonBytes - 3;
  while (n > 0 && (u[n] & 0xc0) == 0x80) n--;
  const out = new Uint8Array(n + 3);
  out.set(u.subarray(0, n));
  out[n] = 0xe2;
  out[n + 1] = 0x80;
  out[n + 2] = 0xa6; // "…"
  return out.buffer;
}

function call(isFilter: bool, ptr: usize, len: i32): u64 {
  // The input stays referenced from the global while the call reads it.
  const out = answer(isFilter, ptr, len);
  input = null;
  // Between calls only globals hold memory (the output, the configs), so a
  // full collection here is safe with the minimal runtime, which has no
  // shadow stack and collects only when asked: a call costs less than with
  // the incremental runtime, and memory stays bounded.
  __collect();
  return out;
}

function answer(isFilter: bool, ptr: usize, len: i32): u64 {
  const in_ = input;
  if (in_ === null || ptr != changetype<usize>(in_) || len < 0 || len > in_.byteLength) {
    return errorOutput("input was not allocated with govgate_alloc");
  }
  const f = filterFn;
  const t = transformFn;
  if (isFilter && f === null) return errorOutput("plugin has no filter hook");
  if (!isFilter && t === null) return errorOutput("plugin has no transform hook");

  const r = new Reader(ptr, ptr + <usize>len);
  const n = new Notification();
  n.id = r.string();
  n.type = r.string();
  n.dao = r.string();
  n.occurredAt = r.string();
  const dataAt = r.field();
  n.dataAt(dataAt, r.n);
  const bodyAt = r.field();
  const bodyLen = r.n;
  const contentType = r.string();
  const count = r.u32();
  if (!r.ok) return errorOutput("decode input: truncated");
  if (count > 4096) return errorOutput("decode input: " + count.toString() + " configs, at most 4096");

  let body: Body | null = null;
  const w = new Writer();
  for (let i: u32 = 0; i < count; i++) {
    const raw = r.string();
    if (!r.ok) return errorOutput("decode input: truncated");
    const cfg = config(raw);
    if (!cfg.isValid) {
      w.result(STATUS_ERROR, String.UTF8.encode("decode config: " + cfg.error));
      continue;
    }
    if (isFilter) {
      const d = (<FilterFn>f)(n, cfg);
      if (d.status == STATUS_DROP) w.result(STATUS_DROP, reasonBytes(d.message));
      else if (d.status == STATUS_ERROR) w.result(STATUS_ERROR, String.UTF8.encode(d.message));
      else w.result(STATUS_KEEP, new ArrayBuffer(0));
      continue;
    }
    if (body === null) {
      const b = new ArrayBuffer(bodyLen);
      memory.copy(changetype<usize>(b), bodyAt, bodyLen);
      body = new Body(b, contentType);
    }
    const o = (<TransformFn>t)(n, <Body>body, cfg);
    if (o.status == STATUS_ERROR) {
      w.result(STATUS_ERROR, String.UTF8.encode(o.message));
    } else if (o.status == STATUS_BODY) {
      const ct = String.UTF8.encode(o.contentType);
      w.u8(STATUS_BODY);
      w.u32(4 + ct.byteLength + o.body.byteLength);
      w.u32(ct.byteLength);
      w.bytes(ct);
      w.bytes(o.body);
    } else {
      w.result(STATUS_UNCHANGED, new ArrayBuffer(0));
    }
  }
  if (r.p != r.end) return errorOutput("decode input: " + (r.end - r.p).toString() + " bytes after the last config");
  return ret(w.done());
}
