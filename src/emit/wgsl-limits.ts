/**
 * Static workgroup facts of a WGSL compute shader (entry point `main`): its @workgroup_size and the
 * bytes of its var<workgroup> declarations, read without a GPU so they can be checked against any
 * device profile's limits. A small tokenizer and constant evaluator cover what generated shaders use;
 * anything beyond it is reported as unresolved, never guessed.
 */
import { LineMap } from "../core/line-map.js";

/** What workgroupFacts could establish; a missing field is listed in `unresolved` with the reason. */
export interface WorkgroupFacts {
  readonly workgroupSize?: readonly [number, number, number];
  /** The 1-based WGSL line of main's `@workgroup_size` attribute, when main has one. */
  readonly workgroupSizeLine?: number;
  readonly workgroupStorageBytes?: number;
  /** The 1-based WGSL line of the largest var<workgroup> declaration (the first of equals), when there is one. */
  readonly largestWorkgroupVarLine?: number;
  readonly unresolved: readonly string[];
}

/** One way a shader exceeds a profile: the message, the limit, and the 1-based WGSL line it is about (when known). */
export interface LimitProblem {
  readonly message: string;
  readonly limit: string;
  readonly line?: number;
}

/** A token and its offset in the WGSL text. */
type Token = { readonly kind: "ident" | "number" | "punct"; readonly text: string; readonly offset: number };

/** Thrown inside this module for something the evaluator cannot resolve; caught and listed. */
class Unresolved extends Error {}

/** The match of a sticky pattern at offset `i` of `src`, or undefined. */
function matchAt(pattern: RegExp, src: string, i: number): string | undefined {
  pattern.lastIndex = i;
  return pattern.exec(src)?.[0];
}

/** Whether a UTF-16 code (NaN past the end) is an ASCII digit. */
function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** Splits WGSL into tokens, dropping line and (nested) block comments. */
function tokenize(src: string): Token[] {
  // An identifier and a number literal, matched at an offset (sticky: the rest of the text is not copied).
  const identAt = /[A-Za-z_][A-Za-z0-9_]*/y;
  const numberAt = /(0[xX][0-9a-fA-F]+[iu]?|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?[fhiu]?)/y;
  const space = /\s+/y;
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    const code = src.charCodeAt(i);
    // ASCII is classified by code (what the patterns match there); anything else by the patterns.
    if (code < 128 ? code === 32 || (code >= 9 && code <= 13) : /\s/.test(c)) {
      space.lastIndex = i;
      space.exec(src);
      i = space.lastIndex;
    } else if (src.startsWith("//", i)) {
      const nl = src.indexOf("\n", i);
      i = nl < 0 ? src.length : nl + 1;
    } else if (src.startsWith("/*", i)) {
      let depth = 1;
      i += 2;
      while (i < src.length && depth > 0) {
        if (src.startsWith("/*", i)) {
          depth++;
          i += 2;
        } else if (src.startsWith("*/", i)) {
          depth--;
          i += 2;
        } else i++;
      }
    } else if ((code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95) {
      const m = matchAt(identAt, src, i)!;
      tokens.push({ kind: "ident", text: m, offset: i });
      i += m.length;
    } else if (isDigit(code) || (c === "." && isDigit(src.charCodeAt(i + 1)))) {
      const m = matchAt(numberAt, src, i) ?? c;
      tokens.push({ kind: "number", text: m, offset: i });
      i += m.length;
    } else {
      // Every punctuation token but `->` is one character, and anything else is a token of its own.
      const p = src.startsWith("->", i) ? "->" : c;
      tokens.push({ kind: "punct", text: p, offset: i });
      i += p.length;
    }
  }
  return tokens;
}

interface StructMember {
  readonly name: string;
  readonly type: Token[];
  readonly align?: Token[];
  readonly size?: Token[];
}

/** The module-scope declarations the facts depend on. */
interface ModuleScope {
  readonly consts: Map<string, Token[]>;
  readonly overrides: Set<string>;
  readonly aliases: Map<string, Token[]>;
  readonly structs: Map<string, StructMember[]>;
  readonly workgroupVars: { name: string; type: Token[]; offset: number }[];
  /** The arguments of main's @workgroup_size, split at top-level commas; undefined when main has none. */
  mainWorkgroupSize?: Token[][];
  /** Offset of main's `@workgroup_size` in the text. */
  mainWorkgroupSizeOffset?: number;
  mainFound: boolean;
}

/**
 * Index after the bracket that matches the opening one at `i`; the end of the tokens when it is never
 * closed or `i` is past the end (WGSL cut short, such as `fn f(` or a last `struct S`, which Tint reports).
 */
function skipBalanced(tokens: readonly Token[], i: number): number {
  const open = tokens[i]?.text;
  if (open === undefined) return tokens.length;
  const close = open === "(" ? ")" : open === "{" ? "}" : open === "[" ? "]" : ">";
  let depth = 0;
  for (let j = i; j < tokens.length; j++) {
    if (tokens[j].text === open) depth++;
    else if (tokens[j].text === close && --depth === 0) return j + 1;
  }
  return tokens.length;
}

/**
 * Tokens from `i` up to (not including) the first `stop` at bracket depth 0, and the index of that
 * stop. `<`/`>` count as brackets only with `angles` (inside types), since in expressions they compare.
 */
function until(tokens: readonly Token[], i: number, stops: readonly string[], angles = false): [Token[], number] {
  let depth = 0;
  const out: Token[] = [];
  for (let j = i; j < tokens.length; j++) {
    const t = tokens[j].text;
    if (depth === 0 && stops.includes(t)) return [out, j];
    if (t === "(" || t === "[" || t === "{" || (angles && t === "<")) depth++;
    else if (t === ")" || t === "]" || t === "}" || (angles && t === ">")) depth = Math.max(0, depth - 1);
    out.push(tokens[j]);
  }
  return [out, tokens.length];
}

/** Splits a token list at commas of bracket depth 0. */
function splitArgs(tokens: readonly Token[]): Token[][] {
  const args: Token[][] = [];
  let i = 0;
  while (i < tokens.length) {
    const [arg, stop] = until(tokens, i, [","], true);
    args.push(arg);
    i = stop + 1;
  }
  return args.filter((a) => a.length > 0);
}

/** Reads attributes starting at `i`: name and argument tokens of each, and the index after them. */
function readAttributes(tokens: readonly Token[], i: number): [{ name: string; args: Token[][]; offset: number }[], number] {
  const attrs: { name: string; args: Token[][]; offset: number }[] = [];
  while (tokens[i]?.text === "@" && tokens[i + 1]) {
    const name = tokens[i + 1].text;
    const offset = tokens[i].offset;
    i += 2;
    let args: Token[][] = [];
    if (tokens[i]?.text === "(") {
      const end = skipBalanced(tokens, i);
      args = splitArgs(tokens.slice(i + 1, end - 1));
      i = end;
    }
    attrs.push({ name, args, offset });
  }
  return [attrs, i];
}

function scanModule(tokens: readonly Token[]): ModuleScope {
  const scope: ModuleScope = {
    consts: new Map(),
    overrides: new Set(),
    aliases: new Map(),
    structs: new Map(),
    workgroupVars: [],
    mainFound: false,
  };
  let i = 0;
  while (i < tokens.length) {
    const [attrs, next] = readAttributes(tokens, i);
    i = next;
    const t = tokens[i];
    if (!t) break;
    if (t.text === "const" || t.text === "override") {
      const name = tokens[i + 1]?.text ?? "";
      const [decl, stop] = until(tokens, i + 2, [";"]);
      const eq = decl.findIndex((d) => d.text === "=");
      if (t.text === "override") scope.overrides.add(name);
      else if (eq >= 0) scope.consts.set(name, decl.slice(eq + 1));
      i = stop + 1;
    } else if (t.text === "alias") {
      const [decl, stop] = until(tokens, i + 3, [";"]);
      scope.aliases.set(tokens[i + 1]?.text ?? "", decl);
      i = stop + 1;
    } else if (t.text === "struct") {
      const name = tokens[i + 1]?.text ?? "";
      const end = skipBalanced(tokens, i + 2);
      scope.structs.set(name, readMembers(tokens.slice(i + 3, end - 1)));
      i = end;
    } else if (t.text === "var") {
      let j = i + 1;
      let space = "";
      if (tokens[j]?.text === "<") {
        const end = skipBalanced(tokens, j);
        space = tokens[j + 1]?.text ?? "";
        j = end;
      }
      const name = tokens[j]?.text ?? "";
      const [decl, stop] = until(tokens, j + 1, [";"]);
      if (space === "workgroup") {
        const [type] = until(decl, 1, ["="], true);
        scope.workgroupVars.push({ name, type, offset: t.offset });
      }
      i = stop + 1;
    } else if (t.text === "fn") {
      const name = tokens[i + 1]?.text ?? "";
      let j = i + 2;
      while (j < tokens.length && tokens[j].text !== "{") j = tokens[j].text === "(" ? skipBalanced(tokens, j) : j + 1;
      if (name === "main" && attrs.some((a) => a.name === "compute")) {
        scope.mainFound = true;
        const size = attrs.find((a) => a.name === "workgroup_size");
        scope.mainWorkgroupSize = size?.args;
        scope.mainWorkgroupSizeOffset = size?.offset;
      }
      i = skipBalanced(tokens, j);
    } else {
      i++;
    }
  }
  return scope;
}

function readMembers(tokens: readonly Token[]): StructMember[] {
  const members: StructMember[] = [];
  let i = 0;
  while (i < tokens.length) {
    const [attrs, next] = readAttributes(tokens, i);
    const name = tokens[next]?.text ?? "";
    const [type, stop] = until(tokens, next + 2, [","], true);
    members.push({
      name,
      type,
      align: attrs.find((a) => a.name === "align")?.args[0],
      size: attrs.find((a) => a.name === "size")?.args[0],
    });
    i = stop + 1;
  }
  return members;
}

/** Evaluates integer constant expressions: literals, module consts, + - * / %, unary -, parentheses, u32()/i32(). */
class Evaluator {
  private readonly evaluating = new Set<string>();

  constructor(private readonly scope: ModuleScope) {}

  evaluate(tokens: readonly Token[]): number {
    let pos = 0;
    const text = tokens.map((t) => t.text).join(" ");
    const peek = (): string | undefined => tokens[pos]?.text;
    const fail = (why: string): never => {
      throw new Unresolved(`\`${text}\`: ${why}`);
    };
    const primary = (): number => {
      const t = tokens[pos++];
      if (!t) return fail("expression ends early");
      if (t.text === "(") {
        const v = sum();
        if (tokens[pos++]?.text !== ")") fail("missing )");
        return v;
      }
      if (t.text === "-") return -primary();
      if (t.kind === "number") {
        if (!/^(0[xX][0-9a-fA-F]+|[0-9]+)[iu]?$/.test(t.text)) fail(`${t.text} is not an integer literal`);
        return Number.parseInt(t.text.replace(/[iu]$/, ""), t.text.startsWith("0x") || t.text.startsWith("0X") ? 16 : 10);
      }
      if (t.kind === "ident") {
        if ((t.text === "u32" || t.text === "i32") && peek() === "(") {
          pos++;
          const v = sum();
          if (tokens[pos++]?.text !== ")") fail("missing )");
          return v;
        }
        return this.constant(t.text);
      }
      return fail(`unexpected ${t.text}`);
    };
    const product = (): number => {
      let v = primary();
      while (peek() === "*" || peek() === "/" || peek() === "%") {
        const op = tokens[pos++].text;
        const r = primary();
        if (op === "*") v *= r;
        else {
          if (r === 0) fail("division by zero");
          v = op === "/" ? Math.trunc(v / r) : v % r;
        }
      }
      return v;
    };
    const sum = (): number => {
      let v = product();
      while (peek() === "+" || peek() === "-") {
        const op = tokens[pos++].text;
        const r = product();
        v = op === "+" ? v + r : v - r;
      }
      return v;
    };
    const v = sum();
    if (pos !== tokens.length) fail(`cannot evaluate from ${tokens[pos].text}`);
    if (!Number.isSafeInteger(v)) fail("value out of range");
    return v;
  }

  private constant(name: string): number {
    if (this.scope.overrides.has(name)) throw new Unresolved(`${name} is an override (set at pipeline creation)`);
    const expr = this.scope.consts.get(name);
    if (!expr) throw new Unresolved(`${name} is not a module-scope const`);
    if (this.evaluating.has(name)) throw new Unresolved(`${name} is defined in terms of itself`);
    this.evaluating.add(name);
    try {
      return this.evaluate(expr);
    } finally {
      this.evaluating.delete(name);
    }
  }
}

interface Layout {
  readonly size: number;
  readonly align: number;
}

const roundUp = (k: number, n: number): number => Math.ceil(n / k) * k;

const SCALAR_SIZE: Readonly<Record<string, number>> = { f16: 2, f32: 4, i32: 4, u32: 4, bool: 4 };
const SHORT_SCALAR: Readonly<Record<string, string>> = { f: "f32", h: "f16", i: "i32", u: "u32" };

/** WGSL size and alignment (WGSL spec §14.4 "Memory Layout") of the type written by `tokens`. */
function layoutOf(tokens: readonly Token[], scope: ModuleScope, ev: Evaluator, depth = 0): Layout {
  if (depth > 32) throw new Unresolved("type nests too deeply");
  const text = tokens.map((t) => t.text).join("");
  const name = tokens[0]?.text;
  if (!name) throw new Unresolved("missing type");
  const args = tokens.length > 1 && tokens[1].text === "<" ? splitArgs(tokens.slice(2, skipBalanced(tokens, 1) - 1)) : [];
  if (tokens.length > 1 && (tokens[1].text !== "<" || skipBalanced(tokens, 1) !== tokens.length))
    throw new Unresolved(`cannot read type ${text}`);
  if (name in SCALAR_SIZE && args.length === 0) return { size: SCALAR_SIZE[name], align: SCALAR_SIZE[name] };
  let m = /^vec([234])([fhiu]?)$/.exec(name);
  if (m) {
    const scalar = m[2] ? SHORT_SCALAR[m[2]] : args[0]?.map((t) => t.text).join("");
    const s = scalar !== undefined ? SCALAR_SIZE[scalar] : undefined;
    if (s === undefined) throw new Unresolved(`cannot read type ${text}`);
    const n = Number(m[1]);
    return { size: n * s, align: (n === 3 ? 4 : n) * s };
  }
  m = /^mat([234])x([234])([fh]?)$/.exec(name);
  if (m) {
    const scalar = m[3] ? SHORT_SCALAR[m[3]] : args[0]?.map((t) => t.text).join("");
    const s = scalar !== undefined ? SCALAR_SIZE[scalar] : undefined;
    if (s === undefined) throw new Unresolved(`cannot read type ${text}`);
    const cols = Number(m[1]);
    const rows = Number(m[2]);
    const col = { size: rows * s, align: (rows === 3 ? 4 : rows) * s };
    return { size: cols * roundUp(col.align, col.size), align: col.align };
  }
  if (name === "atomic") {
    const inner = args[0]?.map((t) => t.text).join("");
    if (inner !== "u32" && inner !== "i32") throw new Unresolved(`cannot read type ${text}`);
    return { size: 4, align: 4 };
  }
  if (name === "array") {
    if (args.length !== 2) throw new Unresolved(`${text} has no fixed element count`);
    const elem = layoutOf(args[0], scope, ev, depth + 1);
    const count = ev.evaluate(args[1]);
    if (count <= 0) throw new Unresolved(`${text} has a non-positive element count`);
    return { size: count * roundUp(elem.align, elem.size), align: elem.align };
  }
  const alias = scope.aliases.get(name);
  if (alias && args.length === 0) return layoutOf(alias, scope, ev, depth + 1);
  const struct = scope.structs.get(name);
  if (struct && args.length === 0) {
    let offset = 0;
    let align = 1;
    for (const member of struct) {
      const inner = layoutOf(member.type, scope, ev, depth + 1);
      const a = member.align ? ev.evaluate(member.align) : inner.align;
      const s = member.size ? ev.evaluate(member.size) : inner.size;
      offset = roundUp(a, offset) + s;
      align = Math.max(align, a);
    }
    return { size: roundUp(align, offset), align };
  }
  throw new Unresolved(`unknown type ${text}`);
}

/**
 * Statically reads the entry point `main`'s @workgroup_size and the total size of var<workgroup>
 * declarations (each rounded up to 16 bytes, as WebGPU counts them against
 * maxComputeWorkgroupStorageSize; every module-scope workgroup variable is counted, used or not).
 * Resolves module-scope consts and integer arithmetic; lists what it cannot resolve in `unresolved`.
 */
export function workgroupFacts(wgsl: string): WorkgroupFacts {
  const scope = scanModule(tokenize(wgsl));
  const ev = new Evaluator(scope);
  const lines = new LineMap(wgsl);
  const lineOf = (offset: number): number => lines.position(offset).line;
  const unresolved: string[] = [];
  let workgroupSize: [number, number, number] | undefined;
  if (!scope.mainFound) {
    unresolved.push("workgroup size: no `@compute fn main` in the module");
  } else if (!scope.mainWorkgroupSize || scope.mainWorkgroupSize.length === 0 || scope.mainWorkgroupSize.length > 3) {
    unresolved.push("workgroup size: `main` has no @workgroup_size with 1 to 3 arguments");
  } else {
    try {
      const dims = scope.mainWorkgroupSize.map((arg) => ev.evaluate(arg));
      workgroupSize = [dims[0], dims[1] ?? 1, dims[2] ?? 1];
    } catch (err) {
      if (!(err instanceof Unresolved)) throw err;
      unresolved.push(`workgroup size: ${err.message}`);
    }
  }
  let workgroupStorageBytes: number | undefined = 0;
  let largest: { bytes: number; offset: number } | undefined;
  for (const v of scope.workgroupVars) {
    try {
      const bytes = roundUp(16, layoutOf(v.type, scope, ev).size);
      if (workgroupStorageBytes !== undefined) workgroupStorageBytes += bytes;
      if (!largest || bytes > largest.bytes) largest = { bytes, offset: v.offset };
    } catch (err) {
      if (!(err instanceof Unresolved)) throw err;
      unresolved.push(`var<workgroup> ${v.name}: ${err.message}`);
      workgroupStorageBytes = undefined;
    }
  }
  return {
    workgroupSize,
    ...(scope.mainWorkgroupSizeOffset !== undefined ? { workgroupSizeLine: lineOf(scope.mainWorkgroupSizeOffset) } : {}),
    workgroupStorageBytes,
    ...(largest ? { largestWorkgroupVarLine: lineOf(largest.offset) } : {}),
    unresolved,
  };
}

const AXES = ["X", "Y", "Z"] as const;

/** Problems against a profile's limits: X/Y/Z sizes vs maxComputeWorkgroupSizeX/Y/Z, product vs maxComputeInvocationsPerWorkgroup, storage bytes vs maxComputeWorkgroupStorageSize. Limits absent from `limits` are not checked. */
export function checkWorkgroupLimits(facts: WorkgroupFacts, limits: Readonly<Record<string, number>>): LimitProblem[] {
  const problems: LimitProblem[] = [];
  const size = facts.workgroupSize;
  const sizeLine = facts.workgroupSizeLine !== undefined ? { line: facts.workgroupSizeLine } : {};
  if (size) {
    size.forEach((n, i) => {
      const name = `maxComputeWorkgroupSize${AXES[i]}`;
      const max = limits[name];
      if (max !== undefined && n > max)
        problems.push({
          message: `@workgroup_size ${AXES[i].toLowerCase()} is ${n}, more than ${name} = ${max}`,
          limit: name,
          ...sizeLine,
        });
    });
    const total = size[0] * size[1] * size[2];
    const maxInv = limits.maxComputeInvocationsPerWorkgroup;
    if (maxInv !== undefined && total > maxInv) {
      problems.push({
        message: `@workgroup_size(${size.join(", ")}) is ${total} invocations, more than maxComputeInvocationsPerWorkgroup = ${maxInv}`,
        limit: "maxComputeInvocationsPerWorkgroup",
        ...sizeLine,
      });
    }
  }
  const bytes = facts.workgroupStorageBytes;
  const maxBytes = limits.maxComputeWorkgroupStorageSize;
  if (bytes !== undefined && maxBytes !== undefined && bytes > maxBytes) {
    problems.push({
      message: `var<workgroup> declarations take ${bytes} bytes, more than maxComputeWorkgroupStorageSize = ${maxBytes}`,
      limit: "maxComputeWorkgroupStorageSize",
      ...(facts.largestWorkgroupVarLine !== undefined ? { line: facts.largestWorkgroupVarLine } : {}),
    });
  }
  return problems;
}

/** WGSL identifiers of a body (not members after `.`), comments removed, with how often each occurs. */
export function identifierCounts(body: string): Map<string, number> {
  const counts = new Map<string, number>();
  const code = body.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/\/\/[^\n]*/g, " ");
  // A member after `.` (gid.x) is not a use of a variable of that name.
  for (const m of code.matchAll(/(?<![\w.])(?<!\.\s+)[A-Za-z_][A-Za-z0-9_]*/g)) counts.set(m[0], (counts.get(m[0]) ?? 0) + 1);
  return counts;
}
