/**
 * Jinja's (Python's) meaning of the operators, comparisons, truthiness and numeric filters and
 * tests, for the template sandbox (src/emit/template-sandbox.ts compiles every operator to a call
 * of these). Nunjucks compiles operators to JavaScript's, which differ from Jinja's where shader
 * constants are computed: `-7 % 2` is -1 (Jinja 1), `[] or 3` is `[]` (Jinja 3), `"1" == 1` is
 * true, `2 ** 60` prints a rounded number, `6 / 2` prints `3` (Jinja `3.0`). Each helper computes
 * Jinja's result or throws a TemplateSandboxError saying why and how to write it; none returns a
 * value that differs from Jinja's.
 *
 * Numbers: a JavaScript number that is an integer is a Python int (it must stay within ±2^53, where
 * JavaScript numbers are exact; Jinja's ints are unbounded), one that is not is a Python float. A
 * float whose value is an integer (what `6 / 2`, `2.5 | round` and `0.5 * 4` make) is a JinjaFloat:
 * it computes on as a float, and `| int` makes it an int, but it is never printed, joined with `~`
 * or used as an index or count (Jinja would print `3.0`).
 */
export class JinjaFloat {
  constructor(
    readonly value: number,
    /** The expression that made it, for messages (`6 / 2`). */
    readonly origin: string,
  ) {
    Object.freeze(this);
  }
}

/** A template computed something Jinja would compute differently or refuse (reported as template_error). */
export class JinjaSemanticsError extends Error {
  override readonly name = "JinjaSemanticsError";
}

const LIMIT = "±9007199254740991 (2^53 - 1)";

/** How a value is described in messages. */
export function describeValue(v: unknown): string {
  if (v instanceof JinjaFloat) return `the float ${formatNumber(v.value)}.0`;
  if (typeof v === "number") return Number.isInteger(v) ? `the integer ${v}` : `the float ${formatNumber(v)}`;
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)}`;
  if (typeof v === "boolean") return `the boolean ${v}`;
  if (v === null) return "none";
  if (v === undefined) return "an undefined value";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "function") return "a macro";
  return "a mapping";
}

/** A float's refusal where its text or int-ness would matter. */
export function floatRefusal(v: JinjaFloat, use: string): JinjaSemanticsError {
  return new JinjaSemanticsError(
    `${v.origin} is the float ${formatNumber(v.value)}.0 in Jinja, which ${use}: for an integer apply \`| int\` (\`(a / b) | int\`), or divide with \`//\``,
  );
}

/** A number's Python text: an int's digits, a float's shortest repr with Python's exponent form below 1e-4 (`1e-05`). */
export function formatNumber(n: number): string {
  if (Number.isInteger(n) || n === 0) return String(n);
  const [mant, exp] = n.toExponential().split("e");
  const e = Number(exp);
  if (e >= -4 && e < 16) return String(n);
  return `${mant}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

/** A number operand: its value and whether Python holds it as a float; undefined when it is not a number (booleans are ints, as in Python). */
function numeric(v: unknown): { n: number; float: boolean } | undefined {
  if (typeof v === "number") return { n: v, float: !Number.isInteger(v) };
  if (typeof v === "boolean") return { n: v ? 1 : 0, float: false };
  if (v instanceof JinjaFloat) return { n: v.value, float: true };
  return undefined;
}

/** The result of a numeric operation as the sandbox holds it. */
function made(n: number, float: boolean, describe: () => string): number | JinjaFloat {
  if (float ? Number.isFinite(n) && !Number.isInteger(n) : Number.isSafeInteger(n)) return n === 0 ? 0 : n;
  const what = describe();
  if (Number.isNaN(n)) throw new JinjaSemanticsError(`${what} has no real value (Jinja fails or gives a complex number)`);
  if (!Number.isFinite(n))
    throw new JinjaSemanticsError(`${what} overflows to infinity; keep template arithmetic to integers within ${LIMIT}`);
  if (float) return Number.isInteger(n) ? new JinjaFloat(n, `\`${what}\``) : n;
  if (!Number.isSafeInteger(n))
    throw new JinjaSemanticsError(
      `${what} is outside ${LIMIT}: Jinja computes it exactly, kernelc templates only within that range (compute it in the spec instead)`,
    );
  return n === 0 ? 0 : n;
}

const SYMBOL: Readonly<Record<string, string>> = { add: "+", sub: "-", mul: "*", div: "/", floordiv: "//", mod: "%", pow: "**" };

function short(v: unknown): string {
  if (v instanceof JinjaFloat) return `${formatNumber(v.value)}.0`;
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "string") return JSON.stringify(v.length > 20 ? v.slice(0, 20) + "…" : v);
  if (typeof v === "boolean") return v ? "true" : "false";
  return describeValue(v);
}

/** Python's floor division and modulo of two ints (exact within ±2^53). */
function intFloorDivMod(a: number, b: number): [number, number] {
  let r = a % b;
  let q = (a - r) / b;
  if (r !== 0 && r < 0 !== b < 0) {
    r += b;
    q -= 1;
  }
  return [q, r];
}

/** `a OP b` for the arithmetic operators, as Jinja computes it; `maxChars` bounds a repeated string or list. */
export function binary(op: string, a: unknown, b: unknown, maxChars: number): unknown {
  const what = (): string => `${short(a)} ${SYMBOL[op]} ${short(b)}`;
  const x = numeric(a);
  const y = numeric(b);
  if (x && y) {
    const float = x.float || y.float;
    switch (op) {
      case "add":
        return made(x.n + y.n, float, what);
      case "sub":
        return made(x.n - y.n, float, what);
      case "mul":
        return made(x.n * y.n, float, what);
      case "div":
        if (y.n === 0) throw new JinjaSemanticsError(`${what()} divides by zero (an error in Jinja)`);
        return made(x.n / y.n, true, what);
      case "floordiv":
      case "mod": {
        if (y.n === 0) throw new JinjaSemanticsError(`${what()} divides by zero (an error in Jinja)`);
        if (!float) return made(intFloorDivMod(x.n, y.n)[op === "floordiv" ? 0 : 1], false, what);
        const q = Math.floor(x.n / y.n);
        if (op === "floordiv") return made(q, true, what);
        let r = x.n % y.n;
        if (r !== 0 && r < 0 !== y.n < 0) r += y.n;
        return made(r, true, what);
      }
      case "pow":
        if (!float && y.n < 0) {
          if (x.n === 0) throw new JinjaSemanticsError(`${what()} divides by zero (an error in Jinja)`);
          return made(Math.pow(x.n, y.n), true, what);
        }
        if (float && x.n < 0 && !Number.isInteger(y.n))
          throw new JinjaSemanticsError(`${what()} raises a negative number to a fractional power: Jinja gives a complex number`);
        return made(Math.pow(x.n, y.n), float, what);
    }
  }
  if (op === "add" && typeof a === "string" && typeof b === "string") return a + b;
  if (op === "add" && Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
  if (op === "mul") {
    const [seq, count] = typeof a === "string" || Array.isArray(a) ? [a, b] : [b, a];
    if ((typeof seq === "string" || Array.isArray(seq)) && (typeof count === "number" || typeof count === "boolean")) {
      const n = Number(count);
      if (Number.isInteger(n)) {
        const times = Math.max(0, n);
        if (seq.length * times > maxChars)
          throw new JinjaSemanticsError(
            `${what()} would make ${seq.length * times} items or characters, more than the limit of ${maxChars}`,
          );
        if (typeof seq === "string") return seq.repeat(times);
        const out: unknown[] = [];
        for (let i = 0; i < times; i++) out.push(...(seq as unknown[]));
        return out;
      }
    }
  }
  if (a instanceof JinjaFloat || b instanceof JinjaFloat) {
    const f = (a instanceof JinjaFloat ? a : b) as JinjaFloat;
    throw floatRefusal(f, `cannot be used with ${SYMBOL[op]} here`);
  }
  throw new JinjaSemanticsError(
    `\`${SYMBOL[op]}\` cannot take ${describeValue(a)} and ${describeValue(b)} (Jinja fails here): convert with \`| int\` or \`| string\`, or use \`~\` to join text`,
  );
}

/** `-x` and `+x`. */
export function unary(op: "neg" | "pos", a: unknown): unknown {
  const x = numeric(a);
  if (!x) throw new JinjaSemanticsError(`unary \`${op === "neg" ? "-" : "+"}\` cannot take ${describeValue(a)} (Jinja fails here)`);
  return made(op === "neg" ? -x.n : x.n, x.float, () => `${op === "neg" ? "-" : "+"}${short(a)}`);
}

/** Python's truth value: empty lists, mappings and strings, 0 and none are false. */
export function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof JinjaFloat) return v.value !== 0;
  if (v !== null && typeof v === "object") {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto === null || proto === Object.prototype) return Object.keys(v).length > 0;
    return String(v).length > 0;
  }
  return Boolean(v);
}

/** Python's `==`: numbers by value (booleans are 0 and 1), lists and mappings item by item, other types never equal. */
export function equal(a: unknown, b: unknown): boolean {
  const x = numeric(a);
  const y = numeric(b);
  if (x || y) return x !== undefined && y !== undefined && x.n === y.n;
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => equal(v, b[i]));
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a);
    return (
      ka.length === Object.keys(b).length &&
      ka.every((k) => Object.hasOwn(b, k) && equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    );
  }
  if (a === undefined || b === undefined) return a === b;
  return a === b;
}

/** One comparison `a OP b`, as Python compares (ordering only numbers with numbers and strings with strings). */
export function compareOne(a: unknown, op: string, b: unknown): boolean {
  if (op === "==") return equal(a, b);
  if (op === "!=") return !equal(a, b);
  const x = numeric(a);
  const y = numeric(b);
  let l: number | string;
  let r: number | string;
  if (x && y) [l, r] = [x.n, y.n];
  else if (typeof a === "string" && typeof b === "string") [l, r] = [a, b];
  else
    throw new JinjaSemanticsError(
      `\`${op}\` cannot order ${describeValue(a)} and ${describeValue(b)} (Jinja fails here): compare numbers with numbers and strings with strings`,
    );
  switch (op) {
    case "<":
      return l < r;
    case ">":
      return l > r;
    case "<=":
      return l <= r;
    case ">=":
      return l >= r;
  }
  throw new JinjaSemanticsError(`\`${op}\` is not a Jinja comparison: write \`==\` or \`!=\``);
}

/** A chain `a < b < c` as Python reads it: `a < b and b < c`, each operand computed once and only as needed. */
export function compareChain(first: unknown, ...rest: (string | (() => unknown))[]): boolean {
  let left = first;
  for (let i = 0; i < rest.length; i += 2) {
    const right = (rest[i + 1] as () => unknown)();
    if (!compareOne(left, rest[i] as string, right)) return false;
    left = right;
  }
  return true;
}

/** Python's `needle in haystack`: an item of a list (by `==`), a substring of a string, a key of a mapping. */
export function contains(needle: unknown, haystack: unknown): boolean {
  if (Array.isArray(haystack)) return haystack.some((v) => equal(needle, v));
  if (typeof haystack === "string") {
    if (typeof needle !== "string")
      throw new JinjaSemanticsError(`\`in\` a string needs a string to look for, not ${describeValue(needle)} (Jinja fails here)`);
    return haystack.includes(needle);
  }
  if (haystack !== null && typeof haystack === "object" && !(haystack instanceof JinjaFloat)) {
    const proto = Object.getPrototypeOf(haystack) as unknown;
    if (proto === null || proto === Object.prototype) return typeof needle === "string" && Object.hasOwn(haystack, needle);
  }
  throw new JinjaSemanticsError(
    `\`in\` needs a list, a string or a mapping on its right, not ${describeValue(haystack)} (Jinja fails here)`,
  );
}

/** The last string indexed or sliced, and its code points when it has surrogates: a loop indexing one string looks at it once. */
let lastString: string | undefined;
let lastPoints: readonly string[] | undefined;

/** A string's characters as Python counts them, code points (a string without surrogates is its own), kept for the last string. */
export function codePoints(s: string): string | readonly string[] {
  if (s !== lastString) {
    lastString = s;
    lastPoints = /[\uD800-\uDFFF]/.test(s) ? Array.from(s) : undefined;
  }
  return lastPoints ?? s;
}

/**
 * Python's `seq[i]` of a string or a list for a number `i`: the item (a string's character: a code
 * point, as Python counts) at `i`, counting from the end for a negative `i`; undefined past either
 * end or for a non-integer, as Jinja's undefined.
 */
export function sequenceItem(seq: string | readonly unknown[], i: number): unknown {
  if (!Number.isInteger(i)) return undefined;
  const items = typeof seq === "string" ? codePoints(seq) : seq;
  const at = i < 0 ? items.length + i : i;
  return at >= 0 && at < items.length ? items[at] : undefined;
}

/**
 * Python's `seq[start:stop:step]` of a string (by code points) or a list: each part an integer
 * (a boolean is 0 or 1) or none (null) for its default, negative ones counting from the end, all
 * clamped to the sequence as Python's slice.indices() does.
 */
export function sliceSequence(seq: unknown, start: unknown, stop: unknown, step: unknown): unknown {
  if (typeof seq !== "string" && !Array.isArray(seq))
    throw new JinjaSemanticsError(`\`[a:b]\` slices a list or a string, not ${describeValue(seq)}`);
  const part = (v: unknown, name: string): number | undefined => {
    if (v === null) return undefined;
    if (v instanceof JinjaFloat) throw floatRefusal(v, "is not a slice index (a TypeError)");
    const x = numeric(v);
    if (!x || x.float)
      throw new JinjaSemanticsError(
        `a slice's ${name} must be an integer or left out, not ${describeValue(v)} (Jinja gives an undefined value): convert it with \`| int\``,
      );
    return x.n;
  };
  const by = part(step, "step") ?? 1;
  if (by === 0)
    throw new JinjaSemanticsError("a slice's step must not be 0 (an error in Jinja): leave it out for 1, or give -1 to reverse");
  const items = typeof seq === "string" ? codePoints(seq) : seq;
  const n = items.length;
  const clamp = (v: number | undefined, fallback: number): number => {
    if (v === undefined) return fallback;
    if (v < 0) return Math.max(v + n, by < 0 ? -1 : 0);
    return Math.min(v, by < 0 ? n - 1 : n);
  };
  const from = clamp(part(start, "start"), by < 0 ? n - 1 : 0);
  const to = clamp(part(stop, "stop"), by < 0 ? -1 : n);
  if (by === 1) {
    const run = items.slice(from, Math.max(from, to));
    return typeof run === "string" || typeof seq !== "string" ? run : run.join("");
  }
  const out: unknown[] = [];
  for (let i = from; by > 0 ? i < to : i > to; i += by) out.push(items[i]);
  return typeof seq === "string" ? out.join("") : out;
}

/** The refusal of a member of a string or a list (`s.length`, `xs["upper"]`), saying what to write. */
export function noMembers(seq: string | readonly unknown[], key: string): string {
  const what = typeof seq === "string" ? "a string" : "a list";
  const filter = typeof seq === "string" ? "`s | length`, `s | upper`" : "`xs | length`, `xs | first`";
  return `${what} has no members in kernelc templates (\`.${key}\` or \`[${JSON.stringify(key)}]\` is undefined or a method in Jinja): use a filter (${filter}) or an integer index (\`[0]\`, \`[-1]\`)`;
}

/** `a ~ b`: the Python text of each (booleans as WGSL's `true`/`false`, as kernelc prints them). */
export function concatText(v: unknown): string {
  if (v instanceof JinjaFloat) throw floatRefusal(v, "`~` would join as text ending in `.0`");
  if (v === undefined) return "";
  if (v === null)
    throw new JinjaSemanticsError("`~` joins none, which Jinja writes as `None`: test it first (`x is none`) or give a default");
  if (typeof v === "number") return formatNumber(v);
  return String(v);
}

/** Jinja's `int` filter: truncates a float toward zero, reads a string as Python's int() or float() does, else the default (0). */
export function intFilter(v: unknown, fallback: unknown = 0): unknown {
  const x = numeric(v);
  let n: number | undefined;
  if (x) n = Math.trunc(x.n);
  else if (typeof v === "string") {
    const s = v.trim().replace(/(\d)_(?=\d)/g, "$1");
    if (/^[+-]?\d+$/.test(s)) n = Number(s);
    else if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s)) n = Math.trunc(Number(s));
  }
  if (n === undefined || !Number.isFinite(n)) return fallback;
  return made(n, false, () => `${short(v)} | int`);
}

/** Jinja's `float` filter. */
export function floatFilter(v: unknown, fallback: unknown = 0): unknown {
  const x = numeric(v);
  let n: number | undefined;
  if (x) n = x.n;
  else if (typeof v === "string" && /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(v.trim())) n = Number(v.trim());
  if (n === undefined)
    return typeof fallback === "number" && Number.isInteger(fallback) ? new JinjaFloat(fallback, "the default of `| float`") : fallback;
  return made(n, true, () => `${short(v)} | float`);
}

/**
 * Jinja's `round(precision=0, method="common")`: "common" is Python's round() (the int itself for an
 * int; for a float the nearest multiple of 10^-precision to its exact binary value, halves to the
 * even one, as the float nearest that decimal); "ceil" and "floor" as Jinja computes them,
 * `math.ceil(value * 10**precision) / 10**precision`.
 */
export function roundFilter(v: unknown, precision: unknown = 0, method: unknown = "common"): unknown {
  const x = numeric(v);
  if (!x) throw new JinjaSemanticsError(`\`round\` needs a number, not ${describeValue(v)}`);
  if (typeof precision !== "number" || !Number.isInteger(precision) || precision < 0 || precision > 15)
    throw new JinjaSemanticsError(`\`round\` takes a precision of 0 to 15 digits, not ${short(precision)}`);
  if (method !== "common" && method !== "ceil" && method !== "floor")
    throw new JinjaSemanticsError(`\`round\`'s method is "common", "ceil" or "floor", not ${short(method)}`);
  const what = (): string => `${short(v)} | round${precision === 0 ? "" : `(${precision})`}`;
  if (method !== "common") {
    // An int times 10**precision is an exact int in Python, whose ceil or floor divided back is the int (as a float).
    if (!x.float) return made(x.n, true, what);
    // 10**precision is exact as a double up to 10**22; the product, its ceil or floor and the quotient
    // are each rounded once, as Python's float * int, math.ceil and int / int round them.
    const scale = Number(`1e${precision}`);
    return made((method === "ceil" ? Math.ceil : Math.floor)(x.n * scale) / scale, true, what);
  }
  if (!x.float) return x.n;
  return made(pythonRound(x.n, precision), true, what);
}

/**
 * Python's `round(x, digits)` of a finite float (CPython's double_round): the decimal with `digits`
 * digits after the point nearest to x's exact binary value, halves to the even last digit, read
 * back as the nearest double. Computed exactly: x is mantissa * 2^exponent, so x * 10^digits is
 * the fraction mantissa * 10^digits / 2^-exponent.
 */
export function pythonRound(x: number, digits: number): number {
  if (!Number.isFinite(x) || Number.isInteger(x)) return x;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const bits = view.getBigUint64(0);
  const biased = Number(bits >> 52n);
  const fraction = bits & ((1n << 52n) - 1n);
  // A value that is not an integer has a negative binary exponent (|x| < 2^52 here).
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const shift = BigInt(1075 - (biased === 0 ? 1 : biased));
  const numerator = mantissa * 10n ** BigInt(digits);
  const denominator = 1n << shift;
  let q = numerator / denominator;
  const twice = 2n * (numerator % denominator);
  if (twice > denominator || (twice === denominator && q % 2n === 1n)) q += 1n;
  return Number(`${x < 0 ? "-" : ""}${q}e-${digits}`);
}

/** Jinja's `abs`. */
export function absFilter(v: unknown): unknown {
  const x = numeric(v);
  if (!x) throw new JinjaSemanticsError(`\`abs\` needs a number, not ${describeValue(v)}`);
  return made(Math.abs(x.n), x.float, () => `${short(v)} | abs`);
}

/** The numeric and comparison tests, as Jinja's (booleans are numbers; odd and even by Python's `%`). */
export const JINJA_TESTS: Readonly<Record<string, (...a: unknown[]) => boolean>> = {
  number: (v) => numeric(v) !== undefined,
  odd: (v) => intFloorDivModOf(v, 2, "odd") === 1,
  even: (v) => intFloorDivModOf(v, 2, "even") === 0,
  divisibleby: (v, n) => intFloorDivModOf(v, n, "divisibleby") === 0,
  truthy: (v) => truthy(v),
  falsy: (v) => !truthy(v),
  eq: (a, b) => equal(a, b),
  equalto: (a, b) => equal(a, b),
  ne: (a, b) => !equal(a, b),
  ge: (a, b) => compareOne(a, ">=", b),
  gt: (a, b) => compareOne(a, ">", b),
  greaterthan: (a, b) => compareOne(a, ">", b),
  le: (a, b) => compareOne(a, "<=", b),
  lt: (a, b) => compareOne(a, "<", b),
  lessthan: (a, b) => compareOne(a, "<", b),
};

function intFloorDivModOf(v: unknown, n: unknown, test: string): number {
  const r = binary("mod", v, n, 0);
  const x = numeric(r);
  if (!x) throw new JinjaSemanticsError(`the test \`${test}\` needs a number`);
  return x.n;
}
