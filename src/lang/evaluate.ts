/**
 * The interpreter of the checked IR. With every leaf known it is the reference semantics of a
 * spec (the generated dispatcher must agree with it exactly). With some leaves UNKNOWN it is a
 * three-valued partial evaluator: the build uses it to prune combinations that can never run.
 */
import type { Span } from "../core/diagnostic.js";
import type { Leaf, TExpr, Value } from "../model/ir.js";
import { leafText } from "../model/ir.js";
import * as ops from "./ops.js";
import { EvalError } from "./ops.js";

/** A value not known at this evaluation (a run-time leaf during the build). */
export const UNKNOWN: unique symbol = Symbol("unknown");
export type PValue = Value | typeof UNKNOWN;

/** Where evaluation reads leaves and derive entries from. */
export interface EvalEnv {
  /** The value of a leaf, UNKNOWN, or throws EvalError (e.g. the shape of an absent tensor). */
  leaf(leaf: Leaf): PValue;
  /** dim(shapes.X, axis): lets an environment know single dimensions without the whole shape. */
  dim(tensor: string, axis: number): PValue;
  /** has(attrs, "name"). */
  hasAttr(name: string): PValue;
  /** The value of a derive entry (the environment memoizes and detects cycles). */
  derive(name: string): PValue;
}

/** An EvalError with the span of the sub-expression that failed. */
export class LocatedEvalError extends EvalError {
  constructor(
    message: string,
    readonly span: Span,
  ) {
    super(message);
  }
}

function num(v: PValue): number {
  return v as number;
}

/** Evaluates `e`. Throws LocatedEvalError on a run-time error of a known computation. */
export function evaluate(e: TExpr, env: EvalEnv): PValue {
  try {
    return evalNode(e, env);
  } catch (err) {
    if (err instanceof LocatedEvalError) throw err;
    if (err instanceof EvalError) throw new LocatedEvalError(err.message, e.span);
    throw err;
  }
}

function sub(e: TExpr, env: EvalEnv): PValue {
  try {
    return evalNode(e, env);
  } catch (err) {
    if (err instanceof LocatedEvalError || !(err instanceof EvalError)) throw err;
    throw new LocatedEvalError(err.message, e.span);
  }
}

/** In partial evaluation an error in a branch that may not run must not escape: it becomes UNKNOWN. */
function guarded(e: TExpr, env: EvalEnv): PValue {
  try {
    return sub(e, env);
  } catch (err) {
    if (err instanceof EvalError) return UNKNOWN;
    throw err;
  }
}

function isFloatTyped(e: TExpr): boolean {
  return e.type.k === "float";
}

function evalNode(e: TExpr, env: EvalEnv): PValue {
  switch (e.k) {
    case "const":
      return e.value;
    case "leaf":
      return env.leaf(e.leaf);
    case "hasAttr":
      return env.hasAttr(e.name);
    case "derive":
      return env.derive(e.name);
    case "list": {
      const items = e.items.map((i) => sub(i, env));
      return items.some((i) => i === UNKNOWN) ? UNKNOWN : (items as Value[]);
    }
    case "neg": {
      const v = sub(e.operand, env);
      return v === UNKNOWN ? UNKNOWN : v === 0 ? 0 : -num(v);
    }
    case "not": {
      const v = sub(e.operand, env);
      return v === UNKNOWN ? UNKNOWN : !v;
    }
    case "cond": {
      const c = sub(e.cond, env);
      if (c === true) return sub(e.then, env);
      if (c === false) return sub(e.otherwise, env);
      const a = guarded(e.then, env);
      const b = guarded(e.otherwise, env);
      return a !== UNKNOWN && b !== UNKNOWN && ops.valuesEqual(a, b) ? a : UNKNOWN;
    }
    case "binary":
      return evalBinary(e, env);
    case "call":
      return evalCall(e, env);
  }
}

function evalBinary(e: Extract<TExpr, { k: "binary" }>, env: EvalEnv): PValue {
  if (e.op === "and" || e.op === "or") {
    const short = e.op === "or";
    const l = sub(e.left, env);
    if (l === short) return short;
    if (l === !short) return sub(e.right, env);
    // Left unknown: the result is known only if the right side decides it on its own.
    const r = guarded(e.right, env);
    return r === short ? short : UNKNOWN;
  }
  const l = sub(e.left, env);
  const r = sub(e.right, env);
  if (l === UNKNOWN || r === UNKNOWN) return UNKNOWN;
  switch (e.op) {
    case "==":
      return ops.valuesEqual(l, r);
    case "!=":
      return !ops.valuesEqual(l, r);
    case "<":
      return num(l) < num(r);
    case "<=":
      return num(l) <= num(r);
    case ">":
      return num(l) > num(r);
    case ">=":
      return num(l) >= num(r);
  }
  const a = num(l);
  const b = num(r);
  const intArith = !isFloatTyped(e.left) && !isFloatTyped(e.right) && Number.isInteger(a) && Number.isInteger(b);
  switch (e.op) {
    case "+":
      return intArith ? ops.checkInt(a + b) : a + b;
    case "-":
      return intArith ? ops.checkInt(a - b) : a - b;
    case "*":
      return intArith ? ops.checkInt(a * b) : a * b;
    case "/":
      return intArith ? ops.floorDivInt(a, b) : ops.divFloat(a, b);
    case "//":
      return intArith ? ops.floorDivInt(a, b) : ops.floorDivFloat(a, b);
    case "%":
      return intArith ? ops.modInt(a, b) : ops.modFloat(a, b);
  }
}

function evalCall(e: Extract<TExpr, { k: "call" }>, env: EvalEnv): PValue {
  if (e.fn === "dim") {
    const axis = sub(e.args[1], env);
    const target = e.args[0];
    if (target.k === "leaf" && target.leaf.ns === "shapes") {
      if (axis === UNKNOWN) {
        sub(target, env);
        return UNKNOWN;
      }
      return env.dim(target.leaf.name, num(axis));
    }
    const shape = sub(target, env);
    if (shape === UNKNOWN || axis === UNKNOWN) return UNKNOWN;
    return ops.dim(shape as number[], num(axis), "shape");
  }
  const args = e.args.map((a) => sub(a, env));
  if (args.some((a) => a === UNKNOWN)) {
    // min/max can still be bounded, but only exact values are useful here.
    return UNKNOWN;
  }
  switch (e.fn) {
    case "min":
      return Math.min(...(args as number[]));
    case "max":
      return Math.max(...(args as number[]));
    case "floor":
      return ops.checkInt(Math.floor(num(args[0])));
    case "ceilDiv":
      return ops.ceilDiv(num(args[0]), num(args[1]));
    case "pow2ceil":
      return ops.pow2ceil(num(args[0]));
    case "sameShape":
      return ops.sameShape(args[0] as number[], args[1] as number[]);
    case "f16Ok":
      return ops.f16Ok(args[0] as string);
  }
}

/** Describes a leaf for error messages. */
export function describeLeaf(leaf: Leaf): string {
  return leafText(leaf);
}
