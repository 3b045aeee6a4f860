/**
 * How deep derive entries nest, and the cap on it. Evaluating, typing or generating code for a
 * derive entry descends through its sub-expressions and, at each reference, into the entry it
 * reads; every phase after the check phase does that recursively. So the check phase measures,
 * without recursion, the nesting of every entry (one level per sub-expression, plus the nesting of
 * each entry referenced) and reports an entry past MAX_DERIVE_NESTING: no valid spec can overflow
 * the stack later. A chain of 700 entries `c0 = c1 + 1`, … nests about 1400 levels.
 */
import type { Expr } from "../model/ast.js";
import type { CheckedDerive } from "../model/checked.js";
import type { TExpr } from "../model/ir.js";

/** The deepest a derive entry may nest: sub-expression levels plus those of the entries it reads, transitively. */
export const MAX_DERIVE_NESTING = 1024;

/** The bare names an expression mentions, in the order the checker meets them (left to right, outer first). */
export function exprNames(e: Expr): string[] {
  const names: string[] = [];
  const stack: Expr[] = [e];
  while (stack.length > 0) {
    const x = stack.pop()!;
    switch (x.kind) {
      case "name":
        names.push(x.name);
        break;
      case "member":
        stack.push(x.object);
        break;
      case "call":
        for (let i = x.args.length - 1; i >= 0; i--) stack.push(x.args[i]);
        stack.push(x.callee);
        break;
      case "unary":
        stack.push(x.operand);
        break;
      case "binary":
        stack.push(x.right, x.left);
        break;
      case "cond":
        stack.push(x.otherwise, x.then, x.cond);
        break;
      case "list":
        for (let i = x.items.length - 1; i >= 0; i--) stack.push(x.items[i]);
        break;
      default:
        break;
    }
  }
  return names;
}

/** An entry's nesting and the entry its deepest path continues into. */
export interface Nesting {
  readonly levels: number;
  readonly next?: string;
}

/** The height of an expression when a derive reference counts the nesting of the entry it reads (`known`), and the entry on its deepest path. */
function height(e: TExpr, known: ReadonlyMap<string, Nesting>): Nesting {
  let best: Nesting = { levels: 1 };
  const consider = (child: TExpr): void => {
    const h = height(child, known);
    if (h.levels + 1 > best.levels) best = { levels: h.levels + 1, next: h.next };
  };
  switch (e.k) {
    case "derive": {
      const n = known.get(e.name);
      return n ? { levels: n.levels + 1, next: e.name } : best;
    }
    case "call":
      e.args.forEach(consider);
      return best;
    case "list":
      e.items.forEach(consider);
      return best;
    case "neg":
    case "not":
      consider(e.operand);
      return best;
    case "binary":
      consider(e.left);
      consider(e.right);
      return best;
    case "cond":
      consider(e.cond);
      consider(e.then);
      consider(e.otherwise);
      return best;
    default:
      return best;
  }
}

/**
 * The nesting of every entry of a derive environment, computed in dependency order without
 * recursing through entries (an expression itself is at most MAX_EXPR_DEPTH deep). A reference
 * that closes a cycle counts as one level (cycles are reported on their own).
 */
export function deriveNesting(env: ReadonlyMap<string, CheckedDerive>): Map<string, Nesting> {
  const known = new Map<string, Nesting>();
  const onPath = new Set<string>();
  for (const start of env.keys()) {
    if (known.has(start)) continue;
    const stack: { name: string; reads: string[]; i: number }[] = [{ name: start, reads: [...(env.get(start)?.reads ?? [])], i: 0 }];
    onPath.add(start);
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.i < top.reads.length) {
        const r = top.reads[top.i++];
        if (env.has(r) && !known.has(r) && !onPath.has(r)) {
          stack.push({ name: r, reads: [...(env.get(r)?.reads ?? [])], i: 0 });
          onPath.add(r);
        }
        continue;
      }
      stack.pop();
      onPath.delete(top.name);
      known.set(top.name, height(env.get(top.name)!.expr.texpr, known));
    }
  }
  return known;
}

/** The chain of entries along the deepest path from `name`. */
export function deepestChain(name: string, nesting: ReadonlyMap<string, Nesting>): string[] {
  const chain = [name];
  const seen = new Set(chain);
  for (let n = nesting.get(name)?.next; n !== undefined && !seen.has(n); n = nesting.get(n)?.next) {
    chain.push(n);
    seen.add(n);
  }
  return chain;
}
