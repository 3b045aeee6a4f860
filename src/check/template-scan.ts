/**
 * Linear scans of a template's source, without Nunjucks' parser: its tags (`{{ }}`, `{% %}`,
 * `{# #}`), the construct a file ends without closing, and how deep the template nests.
 *
 * Why the nesting is scanned before parsing: Nunjucks' parser and compiler recurse once per
 * nested block, bracket, unary operator and binary operator, so a template nested thousands of
 * levels deep (20,000 `{% if %}`s, `((((…))))`) overflows the JavaScript stack, and the error
 * names neither the file nor the line. The scan finds where such a template passes the limit
 * first, in one pass that cannot overflow; parseTemplate (template-safety.ts) checks the tree it
 * parses against the same limit, for the nesting the parser builds with loops (`1 + 1 + …`,
 * `x | abs | abs …`, `a.b.c…`) that only the compiler recurses into.
 */

/**
 * How deep a template may nest, in levels of its parse tree: each block (`{% if %}`, `{% for %}`,
 * `{% macro %}`, …) counts two, each bracket, unary or binary operator, comparison and member
 * access one, each filter two. Nunjucks compiles about twice as deep on Node's default stack.
 */
export const MAX_TEMPLATE_NESTING = 512;

/** What to do about a template that nests too deep (the message says where and how deep). */
export const TEMPLATE_NESTING_HINT =
  "flatten the template: join conditions with `and` or `elif` rather than nesting `{% if %}`s, move repeated parts into a macro or a loop, and compute long expressions in the spec's derive entries";

/** A template that nests deeper than MAX_TEMPLATE_NESTING; line and column 1-based. */
export class TemplateTooDeep extends Error {
  override readonly name = "TemplateTooDeep";
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
  }
}

/** What a template that passes the nesting limit does, for a message that names the template first ("template `x.wgsl` …"). */
export function tooDeepMessage(what: string): string {
  return `nests more than ${MAX_TEMPLATE_NESTING} levels deep at this line (${what}): Nunjucks cannot compile deeper templates`;
}

/** One tag of a template: `{{ … }}`, `{% … %}` or `{# … #}`, by offsets into the source. */
interface Tag {
  readonly kind: "{{" | "{%" | "{#";
  /** Offset of the tag's `{`. */
  readonly open: number;
  /** The text between the delimiters (without `-` whitespace control), and where it starts. */
  readonly body: string;
  readonly bodyStart: number;
  /** False when the file ends inside the tag. */
  readonly closed: boolean;
  /** The tag's name (`if`, `endfor`, …) for `{%`; "" otherwise. */
  readonly name: string;
  /** For `{% raw %}` and `{% verbatim %}`: false when no end tag follows (the scan ends there). */
  readonly rawClosed?: boolean;
}

/** The tags of `src` in order; a `{% raw %}` or `{% verbatim %}` tag's content is skipped. */
function* templateTags(src: string): Generator<Tag> {
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf("{", i);
    if (open < 0) return;
    const two = src.slice(open, open + 2);
    if (two !== "{{" && two !== "{%" && two !== "{#") {
      i = open + 1;
      continue;
    }
    const close = two === "{{" ? "}}" : two === "{%" ? "%}" : "#}";
    let j = open + 2;
    let quote = "";
    for (; j < src.length; j++) {
      if (two === "{#") {
        if (src.startsWith(close, j)) break;
      } else if (quote) {
        if (src[j] === "\\") j++;
        else if (src[j] === quote) quote = "";
      } else if (src[j] === '"' || src[j] === "'") quote = src[j];
      else if (src.startsWith(close, j)) break;
    }
    const closed = j < src.length;
    const lead = src[open + 2] === "-" ? 1 : 0;
    const bodyStart = open + 2 + lead;
    const bodyEnd = closed && src[j - 1] === "-" && j - 1 >= bodyStart ? j - 1 : Math.min(j, src.length);
    const body = src.slice(bodyStart, bodyEnd);
    const name = two === "{%" ? (/^\s*([A-Za-z_]\w*)/.exec(body)?.[1] ?? "") : "";
    if (!closed) {
      yield { kind: two, open, body, bodyStart, closed, name };
      return;
    }
    i = j + 2;
    if (name === "raw" || name === "verbatim") {
      const end = new RegExp(`\\{%-?\\s*end${name}\\s*-?%\\}`, "g");
      end.lastIndex = i;
      const m = end.exec(src);
      yield { kind: two, open, body, bodyStart, closed, name, rawClosed: m !== null };
      if (!m) return;
      i = m.index + m[0].length;
      continue;
    }
    yield { kind: two, open, body, bodyStart, closed, name };
  }
}

/** Block tags that need an end tag (`{% set x %}` only without `=`). */
const BLOCK_TAGS: ReadonlySet<string> = new Set(["if", "for", "asyncEach", "asyncAll", "macro", "call", "filter", "block", "set"]);

function opensBlock(tag: Tag): boolean {
  return BLOCK_TAGS.has(tag.name) && !(tag.name === "set" && tag.body.includes("="));
}

/** The 1-based line and column of offset `at` of `src`. */
function positionOf(src: string, at: number): { line: number; column: number } {
  const before = src.slice(0, at);
  return { line: before.split("\n").length, column: at - before.lastIndexOf("\n") };
}

/**
 * The `{{`, `{#` or block tag (`{% if %}`, `{% for %}`, …) of `src` that the file ends inside of or
 * without closing, innermost first, with a message naming what closes it; undefined when there is
 * none (the syntax error is something else).
 */
export function unclosedConstruct(src: string): { message: string; line: number; column: number } | undefined {
  const blocks: { name: string; at: number }[] = [];
  for (const tag of templateTags(src)) {
    if (!tag.closed) {
      const close = tag.kind === "{{" ? "}}" : tag.kind === "{%" ? "%}" : "#}";
      const what = tag.kind === "{{" ? "`{{`" : tag.kind === "{#" ? "the comment `{#`" : "the tag `{%`";
      return { message: `${what} is never closed: the file ends before its \`${close}\``, ...positionOf(src, tag.open) };
    }
    if (tag.rawClosed === false)
      return { message: `\`{% ${tag.name} %}\` is never closed: add \`{% end${tag.name} %}\``, ...positionOf(src, tag.open) };
    if (tag.kind !== "{%") continue;
    if (opensBlock(tag)) blocks.push({ name: tag.name, at: tag.open });
    else if (tag.name.startsWith("end") && blocks.length > 0 && blocks[blocks.length - 1]!.name === tag.name.slice(3)) blocks.pop();
  }
  const last = blocks[blocks.length - 1];
  if (!last) return undefined;
  return { message: `\`{% ${last.name} … %}\` is never closed: add \`{% end${last.name} %}\``, ...positionOf(src, last.at) };
}

/** Words after which an operand is expected (so `-`, `+` and `not` there are unary). */
const OPERATOR_WORDS: ReadonlySet<string> = new Set(["and", "or", "not", "in", "is", "if", "else"]);

/**
 * Where `src` first nests deeper than MAX_TEMPLATE_NESTING as Nunjucks' parser recurses into it:
 * blocks (two levels each), brackets, and runs of unary `-`, `+` and `not`, inside `{{ }}` and
 * `{% %}`. Undefined when it stays within the limit (the parse tree is then checked as well).
 */
export function sourceNestingProblem(src: string): TemplateTooDeep | undefined {
  let blocks = 0;
  const fail = (at: number, what: string): TemplateTooDeep => {
    const { line, column } = positionOf(src, at);
    return new TemplateTooDeep(tooDeepMessage(what), line, column);
  };
  for (const tag of templateTags(src)) {
    if (tag.kind === "{#") continue;
    if (tag.kind === "{%") {
      if (tag.name.startsWith("end") && BLOCK_TAGS.has(tag.name.slice(3))) blocks = Math.max(0, blocks - 1);
      else if (opensBlock(tag)) {
        blocks++;
        if (2 * blocks > MAX_TEMPLATE_NESTING) return fail(tag.open, `${blocks} blocks inside each other`);
      }
    }
    // The expression: brackets nest, and so does each unary operator until its operand.
    const pending: number[] = [];
    let unary = 0;
    let nested = 0;
    let expectOperand = true;
    const body = tag.body;
    for (let k = 0; k < body.length;) {
      const ch = body[k];
      if (/\s/.test(ch)) {
        k++;
        continue;
      }
      if (ch === '"' || ch === "'") {
        let e = k + 1;
        while (e < body.length && body[e] !== ch) e += body[e] === "\\" ? 2 : 1;
        k = e + 1;
        unary = 0;
        expectOperand = false;
        continue;
      }
      const word = /^[A-Za-z_]\w*|^\d[\w.]*/.exec(body.slice(k, k + 64))?.[0];
      const isUnary = expectOperand && (ch === "-" || ch === "+" || word === "not");
      const opens = ch === "(" || ch === "[" || ch === "{";
      if (isUnary || opens) {
        if (isUnary) unary++;
        else {
          pending.push(unary);
          nested += unary + 1;
          unary = 0;
        }
        if (2 * blocks + nested + unary > MAX_TEMPLATE_NESTING) {
          const operators = nested - pending.length + unary;
          return fail(tag.bodyStart + k, `${blocks} blocks, ${pending.length} brackets and ${operators} unary operators inside each other`);
        }
        expectOperand = true;
        k += word === "not" ? word.length : 1;
        continue;
      }
      if (ch === ")" || ch === "]" || ch === "}") {
        const u = pending.pop();
        if (u !== undefined) nested -= u + 1;
        unary = 0;
        expectOperand = false;
        k++;
        continue;
      }
      if (word !== undefined) {
        // A word of the expression language expects an operand after it; a name or a number is one.
        expectOperand = OPERATOR_WORDS.has(word);
        if (!expectOperand) unary = 0;
        k += word.length;
        continue;
      }
      // Any other operator or punctuation (`,`, `:`, `.`, `|`, `*`, `==`, …) expects an operand.
      expectOperand = true;
      k++;
    }
  }
  return undefined;
}
