/**
 * The checked expression IR: the parser's AST with every name resolved (to a leaf of a
 * namespace, a derive entry or a builtin) and every node typed. Immutable; the interpreter
 * (eval/) and the dispatcher generator (emit/) both walk it, so they share one meaning.
 */
import type { Span } from "../core/diagnostic.js";
import type { BinaryOp } from "./ast.js";
import type { Type } from "./types.js";

/** A value of the language at evaluation time. Lists are shapes or literal lists. */
export type Value = number | boolean | string | readonly Value[];

/**
 * A leaf: a value that comes from outside the expressions.
 * Run-time leaves (known per call): shape, rank, present, tensorDtype, attr.
 * Build-time leaves (known per profile and combination): dtype, tunable, limit, feature.
 */
export type Leaf =
  | { readonly ns: "shapes"; readonly name: string }
  | { readonly ns: "ranks"; readonly name: string }
  | { readonly ns: "present"; readonly name: string }
  | { readonly ns: "tensorDtypes"; readonly name: string }
  | { readonly ns: "attrs"; readonly name: string }
  | { readonly ns: "dtypes"; readonly name: string }
  | { readonly ns: "tunables"; readonly name: string }
  | { readonly ns: "limits"; readonly name: string }
  | { readonly ns: "features"; readonly name: string };

export const RUN_TIME_NAMESPACES = new Set(["shapes", "ranks", "present", "tensorDtypes", "attrs"]);

/** Whether a leaf is known only per call. */
export function isRunTimeLeaf(leaf: Leaf): boolean {
  return RUN_TIME_NAMESPACES.has(leaf.ns);
}

/** The leaf as it is written in a spec, e.g. `shapes.queryT`, `device.limits.maxBufferSize`. */
export function leafText(leaf: Leaf): string {
  if (leaf.ns === "limits") return `device.limits.${leaf.name}`;
  if (leaf.ns === "features") return `has(device.features, ${JSON.stringify(leaf.name)})`;
  return `${leaf.ns}.${leaf.name}`;
}

export type BuiltinName = "dim" | "min" | "max" | "floor" | "ceilDiv" | "pow2ceil" | "sameShape" | "f16Ok";

export type TExpr =
  | { readonly k: "const"; readonly value: Value; readonly type: Type; readonly span: Span }
  | { readonly k: "leaf"; readonly leaf: Leaf; readonly type: Type; readonly span: Span }
  /** `has(attrs, "x")`: whether the call supplies attribute x (or it has a default). */
  | { readonly k: "hasAttr"; readonly name: string; readonly type: Type; readonly span: Span }
  | { readonly k: "derive"; readonly name: string; readonly type: Type; readonly span: Span }
  | { readonly k: "call"; readonly fn: BuiltinName; readonly args: readonly TExpr[]; readonly type: Type; readonly span: Span }
  | { readonly k: "neg"; readonly operand: TExpr; readonly type: Type; readonly span: Span }
  | { readonly k: "not"; readonly operand: TExpr; readonly type: Type; readonly span: Span }
  | { readonly k: "binary"; readonly op: BinaryOp; readonly left: TExpr; readonly right: TExpr; readonly type: Type; readonly span: Span }
  | { readonly k: "cond"; readonly cond: TExpr; readonly then: TExpr; readonly otherwise: TExpr; readonly type: Type; readonly span: Span }
  | { readonly k: "list"; readonly items: readonly TExpr[]; readonly type: Type; readonly span: Span };

/** The direct sub-expressions of `e`, in source order (none for constants, leaves, `has` and derive references). */
export function subExpressions(e: TExpr): readonly TExpr[] {
  switch (e.k) {
    case "call":
      return e.args;
    case "list":
      return e.items;
    case "neg":
    case "not":
      return [e.operand];
    case "binary":
      return [e.left, e.right];
    case "cond":
      return [e.cond, e.then, e.otherwise];
    default:
      return [];
  }
}

const structures = new WeakMap<TExpr, string>();
/**
 * A sub-expression's structure as text, spans and types left out: the same expression written
 * twice (or in two places) gives the same text. Kept per node (nodes are immutable).
 */
export function exprStructure(e: TExpr): string {
  let k = structures.get(e);
  if (k === undefined) {
    k = JSON.stringify(e, (name, v: unknown) => (name === "span" || name === "type" ? undefined : v));
    structures.set(e, k);
  }
  return k;
}
