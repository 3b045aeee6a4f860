/**
 * Why a condition is not true: descends into the condition (through `and`, conditionals and
 * boolean derive entries) to the smallest sub-expression that is false, and lists the values of
 * its operands. The generated dispatcher produces the same explanation with generated code.
 */
import { CheckedDerive, CExpr } from "../model/checked.js";
import type { TExpr, Value } from "../model/ir.js";
import { exprStructure, leafText } from "../model/ir.js";
import { UNKNOWN, evaluate, type EvalEnv, type PValue } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";

/** One step of an explanation: the source text of a sub-expression. */
export interface FalseReason {
  /** Derive entries descended through, outermost first. */
  readonly path: readonly string[];
  /** Source text of the false sub-expression. */
  readonly text: string;
  /** Its operands' texts and values (value or error message). */
  readonly operands: readonly { readonly text: string; readonly value: string }[];
}

/** The source text of a node of an expression. */
export function nodeText(src: CExpr, e: TExpr): string {
  return src.source.text.slice(e.span.start, e.span.end).trim();
}

/** Formats a value the way messages show it. */
export function showValue(v: PValue): string {
  if (v === UNKNOWN) return "unknown";
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => showValue(x as Value)).join(", ")}]`;
  return String(v);
}

function tryEval(e: TExpr, env: EvalEnv): PValue | EvalError {
  try {
    return evaluate(e, env);
  } catch (err) {
    if (err instanceof EvalError) return err;
    throw err;
  }
}

/**
 * The operands whose values make a false leaf-level condition understandable. For an `or`, the
 * operands of its disjuncts (each disjunct's own operands, or the disjunct where it has none),
 * each once: `ranks.x == 1 or ranks.x == 2` shows `ranks.x = 3`, not two `false`s.
 */
export function operandsOf(e: TExpr): TExpr[] {
  switch (e.k) {
    case "binary": {
      if (e.op !== "or") return [e.left, e.right];
      const seen = new Set<string>();
      const out: TExpr[] = [];
      for (const d of [e.left, e.right]) {
        const inner = operandsOf(d);
        for (const o of inner.length ? inner : [d]) {
          const k = exprStructure(o);
          if (!seen.has(k)) {
            seen.add(k);
            out.push(o);
          }
        }
      }
      return out;
    }
    case "not":
    case "neg":
      return operandsOf(e.operand).length ? operandsOf(e.operand) : [e.operand];
    case "call":
      return [...e.args];
    default:
      return [];
  }
}

function isInteresting(e: TExpr): boolean {
  return e.k !== "const";
}

/** Explains why `src` (with root `e`) did not evaluate to true in `env`. */
export function explainFalse(src: CExpr, env: EvalEnv, derives: ReadonlyMap<string, CheckedDerive>): FalseReason {
  let cur: CExpr = src;
  let node: TExpr = src.texpr;
  const path: string[] = [];
  for (let guard = 0; guard < 10000; guard++) {
    if (node.k === "binary" && node.op === "and") {
      const l = tryEval(node.left, env);
      node = l === false || l instanceof EvalError ? node.left : node.right;
      continue;
    }
    if (node.k === "cond") {
      const c = tryEval(node.cond, env);
      if (c === true) node = node.then;
      else if (c === false) node = node.otherwise;
      else {
        node = node.cond;
      }
      continue;
    }
    if (node.k === "derive") {
      const d = derives.get(node.name);
      if (d && d.type.k === "bool") {
        path.push(node.name);
        cur = d.expr;
        node = d.expr.texpr;
        continue;
      }
    }
    break;
  }
  const operands = operandsOf(node)
    .filter(isInteresting)
    .map((o) => {
      const v = tryEval(o, env);
      return {
        text: o.k === "leaf" ? leafText(o.leaf) : nodeText(cur, o),
        value: v instanceof EvalError ? `error: ${v.message}` : showValue(v),
      };
    });
  return { path, text: nodeText(cur, node), operands };
}

/** Renders a reason as one line: "in `a` > `b`: `x == y` is false (x = 1, y = 2)". */
export function formatReason(r: FalseReason, outcome = "is false"): string {
  const where = r.path.length ? `in ${r.path.map((p) => `\`${p}\``).join(" > ")}: ` : "";
  const vals = r.operands.length ? ` (${r.operands.map((o) => `${o.text} = ${o.value}`).join(", ")})` : "";
  return `${where}\`${r.text}\` ${outcome}${vals}`;
}
