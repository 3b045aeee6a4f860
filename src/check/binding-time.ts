/**
 * Binding times. Every value is const (literals only), build-time (depends on dtypes, tunables,
 * device limits and features, the variant: known when a profile is built) or run-time (depends
 * on shapes, ranks, presence, attributes or tensor dtypes: known per call).
 *
 * Leaves are named by their spec text; `dim(shapes.X, k)` with a literal axis is its own leaf, so
 * a shader that reads the head size depends on one dimension, not on the whole shape.
 */
import { CheckedDerive } from "../model/checked.js";
import { isRunTimeLeaf, leafText, subExpressions, type Leaf, type TExpr } from "../model/ir.js";

/** A leaf's canonical text, e.g. `attrs.num_heads`, `dim(shapes.keyCacheT, 3)`, `device.limits.maxBufferSize`. */
export type LeafKey = string;

export type BindingTime = "const" | "build" | "run";

export interface LeafInfo {
  readonly key: LeafKey;
  readonly runTime: boolean;
  /** The leaf, or for a dimension leaf the shape leaf and axis. */
  readonly leaf: Leaf;
  readonly axis?: number;
}

/** Collects the leaves an expression depends on, following derive entries through `env`. */
export function leavesOf(
  e: TExpr,
  env: ReadonlyMap<string, CheckedDerive>,
  memo = new Map<string, ReadonlyMap<LeafKey, LeafInfo>>(),
): Map<LeafKey, LeafInfo> {
  const out = new Map<LeafKey, LeafInfo>();
  const visiting = new Set<string>();
  const walk = (x: TExpr): void => {
    switch (x.k) {
      case "const":
        return;
      case "leaf": {
        const key = leafText(x.leaf);
        out.set(key, { key, runTime: isRunTimeLeaf(x.leaf), leaf: x.leaf });
        return;
      }
      case "hasAttr": {
        const key = `has(attrs, ${JSON.stringify(x.name)})`;
        out.set(key, { key, runTime: true, leaf: { ns: "attrs", name: x.name } });
        return;
      }
      case "derive": {
        const cached = memo.get(x.name);
        if (cached) {
          for (const [k, v] of cached) out.set(k, v);
          return;
        }
        const d = env.get(x.name);
        if (!d || visiting.has(x.name)) return;
        visiting.add(x.name);
        const sub = leavesOf(d.expr.texpr, env, memo);
        memo.set(x.name, sub);
        for (const [k, v] of sub) out.set(k, v);
        visiting.delete(x.name);
        return;
      }
      case "call":
        if (
          x.fn === "dim" &&
          x.args[0].k === "leaf" &&
          x.args[0].leaf.ns === "shapes" &&
          x.args[1].k === "const" &&
          typeof x.args[1].value === "number"
        ) {
          const axis = x.args[1].value;
          const key = `dim(shapes.${x.args[0].leaf.name}, ${axis})`;
          out.set(key, { key, runTime: true, leaf: x.args[0].leaf, axis });
          return;
        }
        x.args.forEach(walk);
        return;
      default:
        subExpressions(x).forEach(walk);
        return;
    }
  };
  walk(e);
  return out;
}

/**
 * The call values a message about an expression's value names: the attributes and the dimensions
 * at a constant axis (`attrs.k`, `dim(shapes.xT, 0)`) it reads, directly or through derive entries
 * of `env`, in the order leavesOf finds them.
 */
export function attrAndDimLeaves(e: TExpr, env: ReadonlyMap<string, CheckedDerive>): LeafInfo[] {
  return [...leavesOf(e, env).values()].filter((l) => l.axis !== undefined || (l.leaf.ns === "attrs" && l.key === leafText(l.leaf)));
}

/** The binding time of a set of leaves. */
export function bindingTime(leaves: ReadonlyMap<LeafKey, LeafInfo>): BindingTime {
  let t: BindingTime = "const";
  for (const l of leaves.values()) {
    if (l.runTime) return "run";
    t = "build";
  }
  return t;
}

/** Binding time of every derive entry of an environment. */
export function classifyDerives(
  env: ReadonlyMap<string, CheckedDerive>,
): Map<string, { time: BindingTime; leaves: ReadonlyMap<LeafKey, LeafInfo> }> {
  const memo = new Map<string, ReadonlyMap<LeafKey, LeafInfo>>();
  const out = new Map<string, { time: BindingTime; leaves: ReadonlyMap<LeafKey, LeafInfo> }>();
  for (const [name, d] of env) {
    const leaves = leavesOf(d.expr.texpr, env, memo);
    out.set(name, { time: bindingTime(leaves), leaves });
  }
  return out;
}
