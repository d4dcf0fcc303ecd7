// A small JSON reader for plugin configs and notification data: enough to
// read what a chain entry configures, with no dependency. Numbers are kept
// as written (a uint256 vote weight does not fit a float).

export const enum Kind {
  Null = 0,
  Bool = 1,
  Number = 2,
  String = 3,
  Array = 4,
  Object = 5,
  // Invalid is what parse returns for text that is not JSON; error says why.
  Invalid = 6,
}

const noItems = new Array<JSONValue>(0);
const noKeys = new Array<string>(0);

// JSONValue is one parsed JSON value.
export class JSONValue {
  kind: Kind = Kind.Null;
  bool: bool = false;
  // text is a string's value, a number as written, or an Invalid's error.
  text: string = "";
  // items and keys are an array's items or an object's values and keys;
  // scalars share empty ones, so treat them as read-only.
  items: JSONValue[] = noItems;
  keys: string[] = noKeys;

  get isNull(): bool { return this.kind == Kind.Null; }
  get isValid(): bool { return this.kind != Kind.Invalid; }
  get isString(): bool { return this.kind == Kind.String; }
  get isArray(): bool { return this.kind == Kind.Array; }
  get isObject(): bool { return this.kind == Kind.Object; }
  get error(): string { return this.kind == Kind.Invalid ? this.text : ""; }

  // get returns the member key of an object, or null when absent or when
  // this is not an object.
  get(key: string): JSONValue | null {
    if (this.kind != Kind.Object) return null;
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.items[i];
    }
    return null;
  }

  // unknownKey returns the first key of an object that is not in known, or
  // "": a config with a misspelt key should fail loudly, as the Go SDK's do.
  unknownKey(known: string[]): string {
    if (this.kind != Kind.Object) return "";
    for (let i = 0; i < this.keys.length; i++) {
      if (!known.includes(this.keys[i])) return this.keys[i];
    }
    return "";
  }

  // strings returns the strings of an array, skipping other values.
  strings(): string[] {
    const out = new Array<string>();
    for (let i = 0; i < this.items.length; i++) {
      if (this.items[i].kind == Kind.String) out.push(this.items[i].text);
    }
    return out;
  }
}

function invalid(msg: string, at: i32): JSONValue {
  const v = new JSONValue();
  v.kind = Kind.Invalid;
  v.text = msg + " at offset " + at.toString();
  return v;
}

// parseJSON parses one JSON value; surrounding white space is allowed,
// anything else after the value is an error.
export function parseJSON(s: string): JSONValue {
  const p = new Parser(s);
  const v = p.value(0);
  if (v.kind == Kind.Invalid) return v;
  p.space();
  if (p.i < s.length) return invalid("data after the JSON value", p.i);
  return v;
}

const maxDepth = 64;

class Parser {
  i: i32 = 0;
  constructor(public s: string) {}

  space(): void {
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) return;
      this.i++;
    }
  }

  literal(word: string): bool {
    if (this.s.substr(this.i, word.length) != word) return false;
    this.i += word.length;
    return true;
  }

  value(depth: i32): JSONValue {
    if (depth > maxDepth) return invalid("nested too deep", this.i);
    this.space();
    if (this.i >= this.s.length) return invalid("unexpected end", this.i);
    const c = this.s.charCodeAt(this.i);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x5b) return this.array(depth);
    if (c == 0x22) return this.string();
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    const v = new JSONValue();
    if (this.literal("null")) return v;
    if (this.literal("true")) { v.kind = Kind.Bool; v.bool = true; return v; }
    if (this.literal("false")) { v.kind = Kind.Bool; return v; }
    return invalid("unexpected character", this.i);
  }

  number(): JSONValue {
    const start = this.i;
    const s = this.s;
    if (s.charCodeAt(this.i) == 0x2d) this.i++;
    const digits = this.i;
    while (this.i < s.length && isDigit(s.charCodeAt(this.i))) this.i++;
    if (this.i == digits) return invalid("bad number", start);
    if (s.charCodeAt(digits) == 0x30 && this.i - digits > 1) return invalid("leading zero", start);
    if (this.i < s.length && s.charCodeAt(this.i) == 0x2e) {
      this.i++;
      const f = this.i;
      while (this.i < s.length && isDigit(s.charCodeAt(this.i))) this.i++;
      if (this.i == f) return invalid("bad number", start);
    }
    if (this.i < s.length && (s.charCodeAt(this.i) | 0x20) == 0x65) {
      this.i++;
      if (this.i < s.length && (s.charCodeAt(this.i) == 0x2b || s.charCodeAt(this.i) == 0x2d)) this.i++;
      const e = this.i;
      while (this.i < s.length && isDigit(s.charCodeAt(this.i))) this.i++;
      if (this.i == e) return invalid("bad number", start);
    }
    const v = new JSONValue();
    v.kind = Kind.Number;
    v.text = s.substring(start, this.i);
    return v;
  }

  string(): JSONValue {
    const start = this.i;
    this.i++; // the opening quote
    const s = this.s;
    let out = "";
    let run = this.i;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c == 0x22) {
        out = out.length == 0 ? s.substring(run, this.i) : out + s.substring(run, this.i);
        this.i++;
        const v = new JSONValue();
        v.kind = Kind.String;
        v.text = out;
        return v;
      }
      if (c < 0x20) return invalid("control character in string", this.i);
      if (c != 0x5c) { this.i++; continue; }
      out += s.substring(run, this.i);
      this.i++;
      if (this.i >= s.length) break;
      const e = s.charCodeAt(this.i);
      this.i++;
      if (e == 0x22) out += "\"";
      else if (e == 0x5c) out += "\\";
      else if (e == 0x2f) out += "/";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else if (e == 0x6e) out += "\n";
      else if (e == 0x72) out += "\r";
      else if (e == 0x74) out += "\t";
      else if (e == 0x75) {
        if (this.i + 4 > s.length) break;
        let u = 0;
        for (let k = 0; k < 4; k++) {
          const h = hexValue(s.charCodeAt(this.i + k));
          if (h < 0) return invalid("bad \\u escape", this.i);
          u = (u << 4) | h;
        }
        this.i += 4;
        // Surrogate pairs arrive as two escapes; a string keeps UTF-16.
        out += String.fromCharCode(u);
      } else return invalid("bad escape", this.i - 1);
      run = this.i;
    }
    return invalid("unterminated string", start);
  }

  array(depth: i32): JSONValue {
    const v = new JSONValue();
    v.kind = Kind.Array;
    v.items = new Array<JSONValue>();
    this.i++;
    this.space();
    if (this.i < this.s.length && this.s.charCodeAt(this.i) == 0x5d) { this.i++; return v; }
    while (true) {
      const item = this.value(depth + 1);
      if (item.kind == Kind.Invalid) return item;
      v.items.push(item);
      this.space();
      if (this.i >= this.s.length) return invalid("unexpected end", this.i);
      const c = this.s.charCodeAt(this.i++);
      if (c == 0x5d) return v;
      if (c != 0x2c) return invalid("expected , or ]", this.i - 1);
    }
  }

  object(depth: i32): JSONValue {
    const v = new JSONValue();
    v.kind = Kind.Object;
    v.items = new Array<JSONValue>();
    v.keys = new Array<string>();
    this.i++;
    this.space();
    if (this.i < this.s.length && this.s.charCodeAt(this.i) == 0x7d) { this.i++; return v; }
    while (true) {
      this.space();
      if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 0x22) return invalid("expected a key", this.i);
      const key = this.string();
      if (key.kind == Kind.Invalid) return key;
      this.space();
      if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 0x3a) return invalid("expected :", this.i);
      this.i++;
      const item = this.value(depth + 1);
      if (item.kind == Kind.Invalid) return item;
      v.keys.push(key.text);
      v.items.push(item);
      this.space();
      if (this.i >= this.s.length) return invalid("unexpected end", this.i);
      const c = this.s.charCodeAt(this.i++);
      if (c == 0x7d) return v;
      if (c != 0x2c) return invalid("expected , or }", this.i - 1);
    }
  }
}

function isDigit(c: i32): bool { return c >= 0x30 && c <= 0x39; }

function hexValue(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  c |= 0x20;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

// quoteJSON returns s as a JSON string, quotes included.
export function quoteJSON(s: string): string {
  let out = "\"";
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    out += s.substring(run, i);
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5c) out += "\\\\";
    else if (c == 0x0a) out += "\\n";
    else if (c == 0x0d) out += "\\r";
    else if (c == 0x09) out += "\\t";
    else out += "\\u00" + (c < 0x10 ? "0" : "") + c.toString(16);
    run = i + 1;
  }
  return out + s.substring(run) + "\"";
}
