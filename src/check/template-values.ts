/**
 * What a spec value must look like to be printed into WGSL by a template: a finite number, a
 * boolean, or a string that is a WGSL identifier or type name (`f16`, `vec4<f32>`,
 * `array<vec4<f16>, 8>`), or a list of those. A string with a newline, `;`, `{` or other
 * punctuation could inject WGSL, so lint reports such literals where the spec writes them and the
 * build checks every value a template reads before rendering.
 */
import type { CheckedDerive } from "../model/checked.js";
import type { TExpr } from "../model/ir.js";

/** The longest string a template may print from the spec. */
const MAX_WORD = 256;

/** Whether `s` is a WGSL identifier, or a type name built from identifiers and integers with `<…>` and `, `. */
export function isWgslWord(s: string): boolean {
  if (s.length === 0 || s.length > MAX_WORD) return false;
  let i = 0;
  const ident = (): boolean => {
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(i));
    if (!m) return false;
    i += m[0].length;
    return true;
  };
  const arg = (depth: number): boolean => {
    const m = /^[0-9]+[iu]?/.exec(s.slice(i));
    if (m) {
      i += m[0].length;
      return true;
    }
    return type(depth);
  };
  const type = (depth: number): boolean => {
    if (depth > 8 || !ident()) return false;
    if (s[i] !== "<") return true;
    i++;
    if (!arg(depth + 1)) return false;
    while (s[i] === ",") {
      i++;
      if (s[i] === " ") i++;
      if (!arg(depth + 1)) return false;
    }
    if (s[i] !== ">") return false;
    i++;
    return true;
  };
  return type(0) && i === s.length;
}

/** Why a value a template reads cannot be printed into WGSL, or undefined when it can. */
export function wgslValueProblem(v: unknown): string | undefined {
  if (typeof v === "boolean") return undefined;
  if (typeof v === "number") return Number.isFinite(v) ? undefined : `${v} is not a finite number`;
  if (typeof v === "string")
    return isWgslWord(v)
      ? undefined
      : `the string ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)} is not a WGSL identifier or type name`;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = wgslValueProblem(v[i]);
      if (p) return `item ${i}: ${p}`;
    }
    return undefined;
  }
  return `a ${typeof v} is not a value a template can print`;
}

/**
 * The string literals that can become the value of the named derive entries (through conditional
 * branches, lists and other derive entries), each with the entry whose expression writes it.
 * Literals compared or passed to functions are not values and are not listed.
 */
export function valueStringLiterals(
  names: Iterable<string>,
  env: ReadonlyMap<string, CheckedDerive>,
): { readonly derive: CheckedDerive; readonly literal: Extract<TExpr, { k: "const" }> }[] {
  const out: { derive: CheckedDerive; literal: Extract<TExpr, { k: "const" }> }[] = [];
  const seen = new Set<string>();
  const pending = [...names];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const d = env.get(name);
    if (!d) continue;
    const stack: TExpr[] = [d.expr.texpr];
    while (stack.length > 0) {
      const e = stack.pop()!;
      if (e.k === "const" && typeof e.value === "string") out.push({ derive: d, literal: e });
      else if (e.k === "cond") stack.push(e.then, e.otherwise);
      else if (e.k === "list") stack.push(...e.items);
      else if (e.k === "derive") pending.push(e.name);
    }
  }
  return out;
}
