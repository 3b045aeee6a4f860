/**
 * Whether a template prints `env.wgsl.resourceDeclarations` as it stands and does nothing else
 * with it, so that its output for any declarations text D is its output for a placeholder with
 * every placeholder replaced by D. Then a pass's shader is rendered once, not twice (once without
 * the accessor helpers to see which it calls, once with them): see renderWithDeclarations.
 *
 * Decided from the parse tree, conservatively: every `env` is read as `env.wgsl.<name>` (so it is
 * never assigned, passed or iterated), and every `env.wgsl.resourceDeclarations` is an item of a
 * `{{ … }}` output that goes straight to the template's output: not inside a macro or call block,
 * a `{% set %}` or `{% filter %}` block, or a block of template inheritance, whose output another
 * template construct could change. The same holds for each template it includes or imports, whose
 * include sites must be in such places too; a template named by an expression fails the test.
 */
import { createRequire } from "node:module";
import { parseTemplate } from "../check/template-safety.js";

const require = createRequire(import.meta.url);
// nunjucks ships its node classes as CommonJS modules without type declarations.
const njNodes = require("nunjucks/src/nodes") as Record<string, new (...args: unknown[]) => object>;

interface NjNode {
  readonly fields?: readonly string[];
  readonly [k: string]: unknown;
}

/** The members of env.wgsl a template may read without spoiling the test. */
const ENV_WGSL_MEMBERS = new Set(["resourceDeclarations", "storage", "scalar", "f16Storage"]);

/** Nodes whose content's output another construct can capture, filter or repeat as a value. */
const CAPTURING = [
  "Macro",
  "Caller",
  "Capture",
  "Filter",
  "FilterAsync",
  "CallExtension",
  "CallExtensionAsync",
  "Block",
  "Super",
  "Extends",
];

/** What one template's parse tree says: whether it passes the test itself, and the templates it names. */
export interface DeclarationPrints {
  readonly asIs: boolean;
  /** Templates it includes or imports (literal names). */
  readonly includes: readonly string[];
}

/** Examines one template's source (an unparsable one does not pass). */
export function declarationPrints(src: string): DeclarationPrints {
  let ast: unknown;
  try {
    ast = parseTemplate(src);
  } catch {
    return { asIs: false, includes: [] };
  }
  const includes: string[] = [];
  let asIs = true;
  /** [node, parent, inside a capturing construct] */
  const stack: [unknown, NjNode | undefined, boolean][] = [[ast, undefined, false]];
  const capturing = CAPTURING.map((n) => njNodes[n]).filter(Boolean);
  while (stack.length > 0 && asIs) {
    const [x, parent, captured] = stack.pop()!;
    if (!x || typeof x !== "object") continue;
    if (Array.isArray(x)) {
      for (const y of x) stack.push([y, parent, captured]);
      continue;
    }
    const node = x as NjNode;
    const inside = captured || capturing.some((c) => x instanceof c);
    if (x instanceof njNodes.Symbol && node.value === "env") {
      // `env` must be the target of `env.wgsl`, itself the target of a literal member.
      const wgsl = parent;
      asIs = false;
      if (wgsl instanceof njNodes.LookupVal && wgsl.target === x && isLiteral(wgsl.val, "wgsl")) {
        const member = findParent(ast, wgsl);
        if (member instanceof njNodes.LookupVal && member.target === wgsl && member.val instanceof njNodes.Literal) {
          const name = String((member.val as NjNode).value);
          if (ENV_WGSL_MEMBERS.has(name)) {
            if (name !== "resourceDeclarations") asIs = true;
            else {
              const output = findParent(ast, member);
              asIs = !inside && output instanceof njNodes.Output && Array.isArray(output.children) && output.children.includes(member);
            }
          }
        }
      }
    }
    if (x instanceof njNodes.Include || x instanceof njNodes.Import || x instanceof njNodes.FromImport || x instanceof njNodes.Extends) {
      const t = node.template as NjNode | undefined;
      if (!(t instanceof njNodes.Literal)) asIs = false;
      else includes.push(String(t.value));
      if (x instanceof njNodes.Include && inside) asIs = false;
    }
    for (const f of childFields(node)) stack.push([node[f], node, inside]);
  }
  return { asIs, includes };
}

/**
 * The members of a node that hold nodes: its `fields`, `children`, and `body` where the parser
 * sets one outside the fields (the Capture of a `{% set x %}…{% endset %}` block).
 */
function childFields(node: NjNode): string[] {
  const out = (node.fields ?? []).filter((f) => f !== "children" && f !== "body");
  if ("children" in node) out.push("children");
  if ("body" in node) out.push("body");
  return out;
}

function isLiteral(x: unknown, value: string): boolean {
  return x instanceof njNodes.Literal && (x as NjNode).value === value;
}

/** The node whose field or children hold `child` (a search from the root: templates are small and this runs once per template). */
function findParent(root: unknown, child: object): NjNode | undefined {
  const stack: [unknown, NjNode | undefined][] = [[root, undefined]];
  while (stack.length > 0) {
    const [x, parent] = stack.pop()!;
    if (x === child) return parent;
    if (!x || typeof x !== "object") continue;
    if (Array.isArray(x)) {
      for (const y of x) stack.push([y, parent]);
      continue;
    }
    const node = x as NjNode;
    for (const f of childFields(node)) stack.push([node[f], node]);
  }
  return undefined;
}
