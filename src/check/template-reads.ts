/**
 * Which names a Nunjucks template reads, found statically from its parse tree: bare names
 * (derive entries, DISPATCH_FOLD_WIDTH, env) and members of `tunables` and `dtypes`, and whether
 * it reads what cannot be named so (`tunables[k]`, a template included by an expression).
 * The build uses this to know which run-time values a shader depends on (its specialization
 * key); lint uses it to tell derive entries nothing reads.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// nunjucks ships its node classes as CommonJS modules without type declarations.
const njNodes = require("nunjucks/src/nodes") as Record<string, new (...args: unknown[]) => object>;

import type { TemplateReads } from "../model/checked.js";
import { parseTemplate, templateSafetyProblems } from "./template-safety.js";

/**
 * A template that cannot be used, with a 1-based line and column (0 when nunjucks gives no
 * position): a syntax error, or (`refused`) a construct the template sandbox does not allow.
 */
export class TemplateSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
    readonly refused = false,
    /** The template file the error is in, when it is not the one being checked (an include). */
    readonly file?: string,
  ) {
    super(message);
  }
}

interface NjNode {
  readonly fields?: readonly string[];
  readonly [k: string]: unknown;
}

/** Parses a template and lists what it reads. Throws TemplateSyntaxError (also for the first construct the sandbox refuses). */
export function templateReads(src: string): TemplateReads {
  let ast: unknown;
  try {
    ast = parseTemplate(src);
  } catch (err) {
    const e = err as { message?: string; lineno?: number; colno?: number };
    const msg = String(e.message ?? err)
      .replace(/^\(unknown path\)\s*/, "")
      .replace(/\s*\[Line \d+, Column \d+\]\s*/, " ")
      .trim();
    // nunjucks' parser errors carry 1-based positions; those at the end of the file carry none
    // (0 here): then the opening of what is never closed is the place to show, when there is one.
    const line = e.lineno ?? 0;
    const unclosed = line > 0 ? undefined : unclosedConstruct(src);
    if (unclosed) throw new TemplateSyntaxError(unclosed.message, unclosed.line, unclosed.column);
    throw new TemplateSyntaxError(msg, line, e.colno ?? 0);
  }
  const refused = templateSafetyProblems(ast)[0];
  if (refused) throw new TemplateSyntaxError(refused.message, refused.line, refused.column, true);
  const names = new Set<string>();
  const tunables = new Set<string>();
  const dtypes = new Set<string>();
  const includes: string[] = [];
  let unknownIncludes = false;
  // Every mention of `tunables` is a Symbol node; those that are the target of a literal member
  // (`tunables.X`, `tunables["X"]`) name what they read, any other may read every tunable.
  let tunablesMentions = 0;
  let tunablesMembers = 0;
  const stack: unknown[] = [ast];
  while (stack.length > 0) {
    const x = stack.pop();
    if (!x || typeof x !== "object") continue;
    if (Array.isArray(x)) {
      for (const y of x) stack.push(y);
      continue;
    }
    const node = x as NjNode;
    if (x instanceof njNodes.Symbol) {
      names.add(String(node.value));
      if (node.value === "tunables") tunablesMentions++;
    }
    if (x instanceof njNodes.LookupVal) {
      const target = node.target as NjNode | undefined;
      const val = node.val as NjNode | undefined;
      if (target instanceof njNodes.Symbol && val instanceof njNodes.Literal) {
        if (target.value === "tunables") {
          tunables.add(String(val.value));
          tunablesMembers++;
        }
        if (target.value === "dtypes") dtypes.add(String(val.value));
      }
    }
    if (x instanceof njNodes.Include || x instanceof njNodes.Import || x instanceof njNodes.FromImport || x instanceof njNodes.Extends) {
      const t = node.template as NjNode | undefined;
      if (t instanceof njNodes.Literal) includes.push(String(t.value));
      else unknownIncludes = true;
    }
    // A node list holds its nodes in `children`, which is also one of its fields: pushed once, last
    // (so that it is read first, as before).
    for (const f of node.fields ?? []) if (f !== "children") stack.push(node[f]);
    if ("children" in node) stack.push(node.children);
    // The parser keeps the content of a `{% set x %}…{% endset %}` block in `body`, outside the fields.
    if (x instanceof njNodes.Set && node.body !== undefined) stack.push(node.body);
  }
  return { names, tunables, dtypes, includes, anyTunable: tunablesMentions > tunablesMembers, unknownIncludes };
}

/** Block tags that need an end tag (`{% set x %}` only without `=`). */
const BLOCK_TAGS: ReadonlySet<string> = new Set(["if", "for", "asyncEach", "asyncAll", "macro", "call", "filter", "block", "set"]);

/**
 * The `{{`, `{#` or block tag (`{% if %}`, `{% for %}`, …) of `src` that the file ends inside of or
 * without closing, innermost first, with a message naming what closes it; undefined when there is
 * none (the syntax error is something else).
 */
export function unclosedConstruct(src: string): { message: string; line: number; column: number } | undefined {
  const blocks: { name: string; at: number }[] = [];
  const position = (at: number): { line: number; column: number } => {
    const before = src.slice(0, at);
    return { line: before.split("\n").length, column: at - before.lastIndexOf("\n") };
  };
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf("{", i);
    if (open < 0) break;
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
    if (j >= src.length) {
      const what = two === "{{" ? "`{{`" : two === "{#" ? "the comment `{#`" : "the tag `{%`";
      return { message: `${what} is never closed: the file ends before its \`${close}\``, ...position(open) };
    }
    i = j + 2;
    if (two !== "{%") continue;
    const body = src
      .slice(open + 2, j)
      .replace(/^-/, "")
      .replace(/-$/, "")
      .trim();
    const name = /^[A-Za-z_]\w*/.exec(body)?.[0] ?? "";
    if (name === "raw" || name === "verbatim") {
      const end = new RegExp(`\\{%-?\\s*end${name}\\s*-?%\\}`, "g");
      end.lastIndex = i;
      const m = end.exec(src);
      if (!m) return { message: `\`{% ${name} %}\` is never closed: add \`{% end${name} %}\``, ...position(open) };
      i = m.index + m[0].length;
    } else if (BLOCK_TAGS.has(name) && !(name === "set" && body.includes("="))) {
      blocks.push({ name, at: open });
    } else if (name.startsWith("end") && blocks.length > 0 && blocks[blocks.length - 1]!.name === name.slice(3)) {
      blocks.pop();
    }
  }
  const last = blocks[blocks.length - 1];
  if (!last) return undefined;
  return { message: `\`{% ${last.name} … %}\` is never closed: add \`{% end${last.name} %}\``, ...position(last.at) };
}
