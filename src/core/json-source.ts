/**
 * A strict JSON parser (RFC 8259: no comments, no trailing commas, no single quotes) that keeps
 * the source location of every value and every object key.
 *
 * Why hand-written: `JSON.parse` loses offsets, merges duplicate keys silently and turns a
 * `__proto__` key into a prototype when the result is copied carelessly. Here objects are arrays
 * of entries, never JS objects, so no key can reach a prototype; `toPlain` builds the plain data
 * Ajv needs with every key as an own data property.
 *
 * Offsets are indices into the source string (UTF-16 code units), so `source.slice(span.start,
 * span.end)` is the text of a node; line-map.ts turns them into line:column when rendering.
 * Nesting is depth-checked before each recursion, so deep input gives `json_too_deep`, never a
 * stack overflow.
 */
import type { Diagnostic, Span } from "./diagnostic.js";
import { makeDiagnostic } from "./codes.js";

/** Fields every JSON node has: its span in the source and its RFC 6901 pointer. */
interface JsonNodeBase {
  readonly span: Span;
  readonly pointer: string;
}

/** A JSON object: its entries in source order (keys unique: duplicates are reported and dropped). */
export interface JsonObject extends JsonNodeBase {
  readonly kind: "object";
  readonly entries: readonly JsonEntry[];
}

/** One `"key": value` member of an object. */
export interface JsonEntry {
  readonly key: string;
  /** Span of the key including its quotes. */
  readonly keySpan: Span;
  readonly value: JsonNode;
}

/** A JSON array. */
export interface JsonArray extends JsonNodeBase {
  readonly kind: "array";
  readonly items: readonly JsonNode[];
}

/** A JSON string, decoded. */
export interface JsonString extends JsonNodeBase {
  readonly kind: "string";
  readonly value: string;
  /**
   * Present only when the string contained escapes: for each UTF-16 code unit of `value`, the
   * source offset of the character (or escape sequence) it came from, plus one final entry, the
   * offset of the closing quote. Without escapes, `value[i]` sits at `span.start + 1 + i`.
   */
  readonly offsetMap?: readonly number[];
}

/** A JSON number; `raw` is its source text. */
export interface JsonNumber extends JsonNodeBase {
  readonly kind: "number";
  readonly value: number;
  readonly raw: string;
}

/** `true` or `false`. */
export interface JsonBoolean extends JsonNodeBase {
  readonly kind: "boolean";
  readonly value: boolean;
}

/** `null`. */
export interface JsonNull extends JsonNodeBase {
  readonly kind: "null";
}

/** Any JSON value with its location. */
export type JsonNode = JsonObject | JsonArray | JsonString | JsonNumber | JsonBoolean | JsonNull;

/** Plain JSON data as produced by `toPlain` (objects have a null prototype). */
export type PlainJson = null | boolean | number | string | PlainJson[] | { [key: string]: PlainJson };

/** Where an object node built by the parser keeps its key → entry map (not enumerable: nodes compare and print as before). */
const MEMBER_INDEX = Symbol("members");

/** Freezes an object node with its member index attached, so getMember is a map lookup (linear lint on objects with many keys). */
function indexed(node: JsonObject, index: ReadonlyMap<string, JsonEntry>): JsonObject {
  Object.defineProperty(node, MEMBER_INDEX, { value: index, enumerable: false });
  return Object.freeze(node);
}

/** Limits that stop hostile or accidental huge inputs. */
export interface JsonLimits {
  /** Maximum nesting of arrays/objects (the document root value is depth 1). */
  readonly maxDepth: number;
  /** Maximum size of the file in UTF-8 bytes. */
  readonly maxBytes: number;
}

/** The default limits: 128 levels, 4 MiB. */
export const DEFAULT_JSON_LIMITS: JsonLimits = { maxDepth: 128, maxBytes: 4 * 1024 * 1024 };

/** Result of parsing: the tree when the text is well-formed JSON (duplicate keys still give a tree). */
export interface JsonParseResult {
  readonly root?: JsonNode;
  readonly diagnostics: readonly Diagnostic[];
}

/** Escapes one reference token of a JSON pointer (RFC 6901: `~` → `~0`, `/` → `~1`). */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Appends a reference token (object key or array index) to a JSON pointer. */
export function appendPointer(pointer: string, token: string | number): string {
  return `${pointer}/${escapePointerToken(String(token))}`;
}

/** Splits a JSON pointer into its unescaped reference tokens ("" → []). */
export function splitPointer(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** Thrown inside the parser to stop at the first syntax error; turned into a Diagnostic at the boundary. */
class JsonSyntaxError extends Error {
  constructor(readonly diagnostic: Diagnostic) {
    super(diagnostic.message);
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

/** Recursive-descent parser state for one source text. */
class Parser {
  private pos = 0;
  private readonly diagnostics: Diagnostic[] = [];

  constructor(
    private readonly text: string,
    private readonly file: string,
    private readonly limits: JsonLimits,
  ) {}

  /** document = ws value ws EOF */
  parseDocument(): JsonParseResult {
    try {
      if (this.text.charCodeAt(0) === 0xfeff) this.pos = 1;
      this.skipWhitespace();
      const root = this.parseValue("", 1);
      this.skipWhitespace();
      if (this.pos < this.text.length) {
        this.fail(this.pos, this.pos + 1, "expected the end of the document after the top-level value", {
          hint: "a JSON file holds exactly one value; remove the extra text or wrap the values in an array",
        });
      }
      return { root, diagnostics: this.diagnostics };
    } catch (e) {
      if (e instanceof JsonSyntaxError) return { diagnostics: [...this.diagnostics, e.diagnostic] };
      throw e;
    }
  }

  /** value = object / array / string / number / "true" / "false" / "null" */
  /** The pointer of the value being parsed: where a syntax error is reported. */
  private where = "";

  private parseValue(pointer: string, depth: number): JsonNode {
    this.where = pointer;
    const c = this.text[this.pos];
    switch (c) {
      case "{":
        return this.parseObject(pointer, depth);
      case "[":
        return this.parseArray(pointer, depth);
      case '"':
        return this.parseString(pointer);
      case "t":
      case "f":
      case "n":
        return this.parseLiteral(pointer);
      default:
        if (c === "-" || (c >= "0" && c <= "9")) return this.parseNumber(pointer);
        return this.failExpected("a JSON value");
    }
  }

  /** object = "{" ws [ member *( ws "," ws member ) ] ws "}" ; member = string ws ":" ws value */
  private parseObject(pointer: string, depth: number): JsonObject {
    const start = this.pos;
    this.checkDepth(depth, start);
    this.pos++;
    const entries: JsonEntry[] = [];
    const seen = new Map<string, Span>();
    const index = new Map<string, JsonEntry>();
    this.skipWhitespace();
    if (this.text[this.pos] === "}") {
      this.pos++;
      return indexed({ kind: "object", entries: Object.freeze(entries), span: Object.freeze({ start, end: this.pos }), pointer }, index);
    }
    for (;;) {
      if (this.text[this.pos] !== '"') this.failExpected("an object key (a double-quoted string)");
      const keyNode = this.parseString(pointer);
      const key = keyNode.value;
      const keySpan = keyNode.span;
      this.skipWhitespace();
      if (this.text[this.pos] !== ":") this.failExpected("`:` after the object key");
      this.pos++;
      this.skipWhitespace();
      const value = this.parseValue(appendPointer(pointer, key), depth + 1);
      this.where = pointer;
      const first = seen.get(key);
      if (first === undefined) {
        seen.set(key, keySpan);
        const entry = Object.freeze({ key, keySpan, value });
        entries.push(entry);
        index.set(key, entry);
      } else {
        this.diagnostics.push(
          makeDiagnostic(
            "json_duplicate_key",
            `duplicate key ${JSON.stringify(key)}: this object already has a member with this key`,
            { file: this.file, span: keySpan, pointer: appendPointer(pointer, key) },
            {
              hint: "remove or rename one of the two members; only the first one is used",
              notes: [{ message: "first defined here", location: { file: this.file, span: first, pointer: appendPointer(pointer, key) } }],
            },
          ),
        );
      }
      this.skipWhitespace();
      const c = this.text[this.pos];
      if (c === ",") {
        const comma = this.pos++;
        this.skipWhitespace();
        if (this.text[this.pos] === "}") {
          this.fail(comma, comma + 1, "trailing comma before `}`", {
            hint: "JSON does not allow a trailing comma; remove this `,`",
          });
        }
        continue;
      }
      if (c === "}") {
        this.pos++;
        return indexed({ kind: "object", entries: Object.freeze(entries), span: Object.freeze({ start, end: this.pos }), pointer }, index);
      }
      this.failExpected("`,` or `}` after an object member");
    }
  }

  /** array = "[" ws [ value *( ws "," ws value ) ] ws "]" */
  private parseArray(pointer: string, depth: number): JsonArray {
    const start = this.pos;
    this.checkDepth(depth, start);
    this.pos++;
    const items: JsonNode[] = [];
    this.skipWhitespace();
    if (this.text[this.pos] === "]") {
      this.pos++;
      return Object.freeze({ kind: "array", items: Object.freeze(items), span: Object.freeze({ start, end: this.pos }), pointer });
    }
    for (;;) {
      items.push(this.parseValue(appendPointer(pointer, items.length), depth + 1));
      this.where = pointer;
      this.skipWhitespace();
      const c = this.text[this.pos];
      if (c === ",") {
        const comma = this.pos++;
        this.skipWhitespace();
        if (this.text[this.pos] === "]") {
          this.fail(comma, comma + 1, "trailing comma before `]`", {
            hint: "JSON does not allow a trailing comma; remove this `,`",
          });
        }
        continue;
      }
      if (c === "]") {
        this.pos++;
        return Object.freeze({ kind: "array", items: Object.freeze(items), span: Object.freeze({ start, end: this.pos }), pointer });
      }
      this.failExpected("`,` or `]` after an array element");
    }
  }

  /** string = '"' *char '"' ; char = unescaped / "\" ( ["\/bfnrt] / "u" 4HEXDIG ) */
  private parseString(pointer: string): JsonString {
    const start = this.pos;
    this.pos++;
    let value = "";
    let offsets: number[] | undefined;
    let runStart = this.pos;
    const text = this.text;
    for (;;) {
      if (this.pos >= text.length) {
        this.fail(start, text.length, 'unterminated string: expected a closing `"` before the end of the file');
      }
      const code = text.charCodeAt(this.pos);
      if (code === 0x22) break;
      if (code < 0x20) {
        const what = code === 0x0a ? "a line break" : `the control character U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
        this.fail(this.pos, this.pos + 1, `${what} cannot appear inside a JSON string`, {
          hint:
            code === 0x0a
              ? 'a JSON string cannot span lines; close it with `"` or write `\\n`'
              : "write control characters as escapes such as `\\t` or `\\u0001`",
        });
      }
      if (code !== 0x5c) {
        this.pos++;
        continue;
      }
      offsets ??= [];
      value += text.slice(runStart, this.pos);
      for (let i = runStart; i < this.pos; i++) offsets.push(i);
      const escStart = this.pos;
      const e = text[this.pos + 1];
      if (e === undefined) this.fail(escStart, escStart + 1, 'unterminated string: expected a closing `"` before the end of the file');
      if (e === "u") {
        const hex = text.slice(this.pos + 2, this.pos + 6);
        if (!/^[0-9A-Fa-f]{4}$/.test(hex)) {
          const bad = /^[0-9A-Fa-f]*/.exec(hex)![0].length;
          this.fail(
            escStart,
            Math.min(text.length, this.pos + 3 + bad),
            "invalid unicode escape: expected `\\u` followed by 4 hex digits",
            {
              hint: "write e.g. `\\u00e9`",
            },
          );
        }
        value += String.fromCharCode(parseInt(hex, 16));
        offsets.push(escStart);
        this.pos += 6;
      } else if (Object.hasOwn(ESCAPES, e)) {
        value += ESCAPES[e];
        offsets.push(escStart);
        this.pos += 2;
      } else {
        this.fail(escStart, escStart + 2, `invalid escape \`\\${e}\` in a string`, {
          hint: 'JSON allows only \\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX; write a backslash as `\\\\`',
        });
      }
      runStart = this.pos;
    }
    value += text.slice(runStart, this.pos);
    if (offsets !== undefined) {
      for (let i = runStart; i <= this.pos; i++) offsets.push(i);
    }
    this.pos++;
    const span = Object.freeze({ start, end: this.pos });
    return Object.freeze(
      offsets === undefined
        ? { kind: "string", value, span, pointer }
        : { kind: "string", value, offsetMap: Object.freeze(offsets), span, pointer },
    );
  }

  /** number = [ "-" ] int [ frac ] [ exp ] */
  private parseNumber(pointer: string): JsonNumber {
    const start = this.pos;
    const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    m.lastIndex = start;
    const match = m.exec(this.text);
    if (match === null) {
      this.fail(start, start + 1, "expected a digit after `-`");
    }
    const raw = match[0];
    this.pos = start + raw.length;
    const next = this.text[this.pos];
    if (next !== undefined && /[0-9A-Za-z_.+-]/.test(next)) {
      let end = this.pos;
      while (end < this.text.length && /[0-9A-Za-z_.+-]/.test(this.text[end])) end++;
      const hint = /^-?0[0-9]/.test(this.text.slice(start, end))
        ? "JSON numbers cannot have leading zeros"
        : /^-?[0-9]+\.$/.test(this.text.slice(start, end))
          ? "JSON numbers need a digit after the decimal point"
          : undefined;
      this.fail(start, end, `invalid number \`${this.text.slice(start, end)}\``, { hint });
    }
    const value = Number(raw);
    if (!Number.isFinite(value)) this.fail(start, this.pos, `number \`${raw}\` is too large to represent`);
    return Object.freeze({ kind: "number", value, raw, span: Object.freeze({ start, end: this.pos }), pointer });
  }

  /** literal = "true" / "false" / "null" */
  private parseLiteral(pointer: string): JsonBoolean | JsonNull {
    const start = this.pos;
    for (const word of ["true", "false", "null"] as const) {
      if (this.text.startsWith(word, start) && !/[A-Za-z0-9_]/.test(this.text[start + word.length] ?? "")) {
        this.pos += word.length;
        const span = Object.freeze({ start, end: this.pos });
        return Object.freeze(
          word === "null" ? { kind: "null", span, pointer } : { kind: "boolean", value: word === "true", span, pointer },
        );
      }
    }
    return this.failExpected("a JSON value");
  }

  /** ws = *( %x20 / %x09 / %x0A / %x0D ); comments are reported as such. */
  private skipWhitespace(): void {
    const text = this.text;
    for (;;) {
      const c = text.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
        this.pos++;
        continue;
      }
      if (c === 0x2f && (text[this.pos + 1] === "/" || text[this.pos + 1] === "*")) {
        this.fail(this.pos, this.pos + 2, "comments are not allowed in JSON", {
          hint: "remove the comment; describe a field in docs or in a `description`-like string instead",
        });
      }
      return;
    }
  }

  private checkDepth(depth: number, start: number): void {
    if (depth > this.limits.maxDepth) {
      throw new JsonSyntaxError(
        makeDiagnostic(
          "json_too_deep",
          `JSON nesting is deeper than the limit of ${this.limits.maxDepth} levels`,
          { file: this.file, span: { start, end: start + 1 }, pointer: this.where },
          { hint: "flatten the structure; kernel specs need only a few levels" },
        ),
      );
    }
  }

  /** Throws json_syntax "expected X, found Y" at the current position. */
  private failExpected(expected: string): never {
    const { found, end } = this.describeFound();
    let hint: string | undefined;
    const c = this.text[this.pos];
    if (c === "'") hint = 'JSON strings and keys use double quotes `"`';
    else if (c !== undefined && /[A-Za-z_$]/.test(c))
      hint = "JSON keys and strings must be in double quotes; the only bare words are true, false and null";
    return this.fail(this.pos, end, `expected ${expected}, found ${found}`, { hint });
  }

  private describeFound(): { found: string; end: number } {
    if (this.pos >= this.text.length) return { found: "the end of the file", end: this.pos };
    const word = /[A-Za-z_$][A-Za-z0-9_$]*/y;
    word.lastIndex = this.pos;
    const w = word.exec(this.text);
    if (w !== null) return { found: `\`${w[0].length > 20 ? `${w[0].slice(0, 20)}…` : w[0]}\``, end: this.pos + w[0].length };
    const cp = this.text.codePointAt(this.pos)!;
    const ch = String.fromCodePoint(cp);
    const shown = cp < 0x20 || cp === 0x7f ? `U+${cp.toString(16).toUpperCase().padStart(4, "0")}` : `\`${ch}\``;
    return { found: shown, end: this.pos + ch.length };
  }

  private fail(start: number, end: number, message: string, extra?: { hint?: string }): never {
    throw new JsonSyntaxError(
      makeDiagnostic(
        "json_syntax",
        message,
        { file: this.file, span: { start, end: Math.max(end, start) }, pointer: this.where },
        { hint: extra?.hint },
      ),
    );
  }
}

/**
 * Parses `text` as strict JSON. Returns the located tree, or only diagnostics when the text is
 * not JSON; duplicate keys give diagnostics but still a tree (keeping the first member).
 */
export function parseJson(text: string, file: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): JsonParseResult {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limits.maxBytes) {
    return {
      diagnostics: [
        makeDiagnostic(
          "file_too_large",
          `the file is ${bytes} bytes, more than the limit of ${limits.maxBytes} bytes`,
          { file },
          { hint: "kernel specs are small; check that this is the right file" },
        ),
      ],
    };
  }
  const utf16 = utf16Encoding(text);
  if (utf16 !== undefined) {
    return {
      diagnostics: [
        makeDiagnostic(
          "json_syntax",
          `the file is encoded as ${utf16}, not UTF-8: kernelc reads JSON files as UTF-8`,
          { file, span: { start: 0, end: 0 }, pointer: "" },
          { hint: "save the file as UTF-8 (without a byte order mark, or with the UTF-8 one)" },
        ),
      ],
    };
  }
  return new Parser(text, file, limits).parseDocument();
}

/**
 * The UTF-16 encoding a file read as UTF-8 was written in, told by its byte order mark (FF FE or
 * FE FF, each byte invalid in UTF-8 and so read as U+FFFD) followed by a NUL of the first
 * character's other byte; undefined for any other text. Without this, such a file's error was
 * "expected a JSON value, found `\uFFFD`".
 */
function utf16Encoding(text: string): string | undefined {
  if (!text.startsWith("\uFFFD\uFFFD")) return undefined;
  if (text[2] === "\u0000") return "UTF-16 big-endian";
  if (text[3] === "\u0000") return "UTF-16 little-endian";
  return undefined;
}

/**
 * Converts a located tree into plain data for Ajv. Objects have a null prototype and every key,
 * `__proto__` included, becomes an own enumerable data property. Iterative, so any depth the
 * parser accepted converts without deep recursion.
 */
export function toPlain(node: JsonNode): PlainJson {
  const convert = (n: JsonNode): PlainJson => {
    switch (n.kind) {
      case "object":
        return Object.create(null) as { [key: string]: PlainJson };
      case "array":
        return new Array<PlainJson>(n.items.length);
      case "string":
      case "number":
      case "boolean":
        return n.value;
      case "null":
        return null;
    }
  };
  const root = convert(node);
  const stack: { node: JsonNode; out: PlainJson }[] = [{ node, out: root }];
  while (stack.length > 0) {
    const { node: n, out } = stack.pop()!;
    if (n.kind === "object") {
      for (const e of n.entries) {
        const v = convert(e.value);
        Object.defineProperty(out, e.key, { value: v, enumerable: true, writable: true, configurable: true });
        stack.push({ node: e.value, out: v });
      }
    } else if (n.kind === "array") {
      const arr = out as PlainJson[];
      n.items.forEach((item, i) => {
        const v = convert(item);
        arr[i] = v;
        stack.push({ node: item, out: v });
      });
    }
  }
  return root;
}

/** The value of `key` in an object node, if present (a map lookup for objects built by the parser). */
export function getMember(obj: JsonObject, key: string): JsonEntry | undefined {
  const index = (obj as { readonly [MEMBER_INDEX]?: ReadonlyMap<string, JsonEntry> })[MEMBER_INDEX];
  return index !== undefined ? index.get(key) : obj.entries.find((e) => e.key === key);
}

/** Object keys that name JavaScript object internals: a spec never needs them, and copied into a plain object `__proto__` would set a prototype. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** An object member whose key is forbidden, with the member's pointer. */
export interface ForbiddenKey {
  readonly entry: JsonEntry;
  readonly pointer: string;
}

/**
 * The one forbidden-key walker (spec validation and config parsing share it): every object
 * member whose key is in `forbidden`, in document order. Iterative, so any depth the parser
 * accepted is fine.
 */
export function findForbiddenKeys(root: JsonNode, forbidden: ReadonlySet<string> = FORBIDDEN_KEYS): ForbiddenKey[] {
  const out: ForbiddenKey[] = [];
  const stack: JsonNode[] = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.kind === "object") {
      for (const e of n.entries) if (forbidden.has(e.key)) out.push({ entry: e, pointer: appendPointer(n.pointer, e.key) });
      for (let i = n.entries.length - 1; i >= 0; i--) stack.push(n.entries[i].value);
    } else if (n.kind === "array") {
      for (let i = n.items.length - 1; i >= 0; i--) stack.push(n.items[i]);
    }
  }
  return out.sort((a, b) => a.entry.keySpan.start - b.entry.keySpan.start);
}

/** What a JSON pointer resolves to: the node, and the object entry holding it when it is an object member. */
export interface PointerTarget {
  readonly node: JsonNode;
  readonly entry?: JsonEntry;
}

/** Resolves an RFC 6901 JSON pointer against a tree; undefined when it names nothing. */
export function resolvePointer(root: JsonNode, pointer: string): PointerTarget | undefined {
  let target: PointerTarget = { node: root };
  for (const token of splitPointer(pointer)) {
    const n = target.node;
    if (n.kind === "object") {
      const entry = getMember(n, token);
      if (entry === undefined) return undefined;
      target = { node: entry.value, entry };
    } else if (n.kind === "array") {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      const item = n.items[Number(token)];
      if (item === undefined) return undefined;
      target = { node: item };
    } else {
      return undefined;
    }
  }
  return target;
}

/** The JSON type name of a node as JSON Schema names it ("integer" for whole numbers). */
export function jsonTypeOf(node: JsonNode): "object" | "array" | "string" | "integer" | "number" | "boolean" | "null" {
  if (node.kind === "number") return Number.isInteger(node.value) ? "integer" : "number";
  return node.kind;
}
