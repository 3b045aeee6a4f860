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
import { TemplateTooDeep, unclosedConstruct } from "./template-scan.js";

/**
 * A template that cannot be used, with a 1-based line and column (0 when nunjucks gives no
 * position): a syntax error, (`refused`) a construct the template sandbox does not allow, or
 * (`tooDeep`) nesting past MAX_TEMPLATE_NESTING.
 */
export class TemplateSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
    readonly refused = false,
    /** The template file the error is in, when it is not the one being checked (an include). */
    readonly file?: string,
    readonly tooDeep = false,
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
    if (err instanceof TemplateTooDeep) throw new TemplateSyntaxError(err.message, err.line, err.column, false, undefined, true);
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
