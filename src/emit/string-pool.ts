/**
 * String pooling for generated modules: a string literal the code uses more than once becomes one
 * module constant (`$q0`, `$q1`, …, declared first, in order of first use), which keeps the
 * minified module small (messages, tensor ids and binding names recur across variants). Only
 * literals in expression positions are pooled: not in type-only text (code-writer's marks), not in
 * comments, not as object-literal keys, and not the names `typeof` yields (V8 compares
 * `typeof x === "number"` without building the string only when it is a literal).
 */
import { TYPE_END, TYPE_START } from "./code-writer.js";

/** The names `typeof` yields: never pooled. */
const TYPEOF_NAMES = new Set(['"number"', '"string"', '"object"', '"function"', '"boolean"', '"undefined"', '"bigint"', '"symbol"']);

/** A string literal at [start, end) of the code. */
interface Literal {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** The string literals of `code` that may be pooled (see the module comment). */
function poolableLiterals(code: string): Literal[] {
  const out: Literal[] = [];
  let depth = 0;
  let i = 0;
  const n = code.length;
  while (i < n) {
    const c = code[i]!;
    if (c === TYPE_START) {
      depth++;
      i++;
    } else if (c === TYPE_END) {
      depth--;
      i++;
    } else if (c === "/" && code[i + 1] === "*") {
      const e = code.indexOf("*/", i + 2);
      i = e < 0 ? n : e + 2;
    } else if (c === "/" && code[i + 1] === "/") {
      const e = code.indexOf("\n", i);
      i = e < 0 ? n : e;
    } else if (c === '"') {
      let j = i + 1;
      while (j < n && code[j] !== '"') j += code[j] === "\\" ? 2 : 1;
      const lit: Literal = { start: i, end: j + 1, text: code.slice(i, j + 1) };
      i = j + 1;
      if (depth > 0 || TYPEOF_NAMES.has(lit.text)) continue;
      // An object-literal key (`{ "a": …` or `, "a": …`) must stay a literal; a ternary's `? "a" :` may not.
      let a = lit.end;
      while (a < n && (code[a] === " " || code[a] === "\n")) a++;
      if (code[a] === ":") {
        let b = lit.start - 1;
        while (b >= 0 && (code[b] === " " || code[b] === "\n")) b--;
        if (code[b] === "{" || code[b] === ",") continue;
      }
      out.push(lit);
    } else if (c === "'" || c === "`") {
      // Generated code and the prelude quote strings with " only; anything else is a bug here.
      throw new Error(`internal error: unexpected ${c} quote in generated code`);
    } else i++;
  }
  return out;
}

/**
 * `code` with its repeated string literals pooled, and the declarations of the pool (to be placed
 * before the code). A literal is pooled when that makes the module shorter: it occurs at least
 * twice and is longer than the constant's name.
 */
export function poolStrings(code: string): { code: string; declarations: string } {
  const literals = poolableLiterals(code);
  const counts = new Map<string, number>();
  for (const l of literals) counts.set(l.text, (counts.get(l.text) ?? 0) + 1);
  const names = new Map<string, string>();
  for (const l of literals) {
    const count = counts.get(l.text)!;
    if (count < 2 || l.text.length < 5 || names.has(l.text)) continue;
    names.set(l.text, `$q${names.size}`);
  }
  if (names.size === 0) return { code, declarations: "" };
  const parts: string[] = [];
  let at = 0;
  for (const l of literals) {
    const name = names.get(l.text);
    if (name === undefined) continue;
    parts.push(code.slice(at, l.start), name);
    at = l.end;
  }
  parts.push(code.slice(at));
  const declarations = [
    "/** Strings the module uses more than once. */",
    ...[...names].map(([text, name]) => `const ${name} = ${text};`),
    "",
  ].join("\n");
  return { code: parts.join(""), declarations };
}
