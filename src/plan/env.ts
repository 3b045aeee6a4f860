/**
 * Evaluation environments: where leaves come from when expressions are evaluated.
 * - `StaticLeaves`: the build's view — dtypes, tunables, device limits and features of one
 *   profile and combination; run-time leaves UNKNOWN unless an instance pins them.
 * - `CallLeaves`: one call's view — every leaf known (or an error, e.g. an absent tensor's shape).
 * `DeriveEnv` evaluates derive entries on demand, memoized, on top of either.
 */
import { CheckedBinding, CheckedDerive, CheckedKernel } from "../model/checked.js";
import type { Leaf, Value } from "../model/ir.js";
import { EvalError, ONNX_TO_WGSL, dim as dimOf } from "../lang/ops.js";
import { UNKNOWN, evaluate, type EvalEnv, type PValue } from "../lang/evaluate.js";
import type { Call, TensorDesc } from "../model/plan.js";

/** Supplies leaf values. */
export interface LeafSource {
  leaf(leaf: Leaf): PValue;
  dim(tensor: string, axis: number): PValue;
  hasAttr(name: string): PValue;
}

/** Build-time facts of one candidate: the dtype assignment (ONNX names), tunables, limits, features. */
export interface StaticFacts {
  readonly dtypes: Readonly<Record<string, string>>;
  readonly tunables: Readonly<Record<string, number>>;
  readonly limits: Readonly<Record<string, number>>;
  readonly features: ReadonlySet<string>;
}

function own<T>(rec: Readonly<Record<string, T>>, key: string): T | undefined {
  return rec !== null && rec !== undefined && Object.prototype.propertyIsEnumerable.call(rec, key) ? rec[key] : undefined;
}

/** The WGSL scalar name of an ONNX element type. */
export function wgslScalar(onnx: string): string {
  const w = own(ONNX_TO_WGSL, onnx);
  if (w === undefined) throw new EvalError(`ONNX type ${onnx} has no WGSL scalar type`);
  return w;
}

function staticLeaf(facts: StaticFacts, leaf: Leaf): PValue {
  switch (leaf.ns) {
    case "dtypes": {
      const t = own(facts.dtypes, leaf.name);
      return t === undefined ? UNKNOWN : wgslScalar(t);
    }
    case "tunables":
      return own(facts.tunables, leaf.name) ?? UNKNOWN;
    case "limits":
      return own(facts.limits, leaf.name) ?? UNKNOWN;
    case "features":
      return facts.features.has(leaf.name);
    default:
      return UNKNOWN;
  }
}

/** Build-time leaves, with run-time leaves UNKNOWN except those an instance pins (by leaf key text). */
export class StaticLeaves implements LeafSource {
  constructor(
    private readonly facts: StaticFacts,
    private readonly pinned: ReadonlyMap<string, Value> = new Map(),
  ) {}
  leaf(leaf: Leaf): PValue {
    const p = this.pinned.get(`${leaf.ns}.${leaf.name}`);
    if (p !== undefined) return p;
    return staticLeaf(this.facts, leaf);
  }
  dim(tensor: string, axis: number): PValue {
    return this.pinned.get(`dim(shapes.${tensor}, ${axis})`) ?? UNKNOWN;
  }
  hasAttr(name: string): PValue {
    return this.pinned.get(`has(attrs, ${JSON.stringify(name)})`) ?? UNKNOWN;
  }
}

/**
 * WGSL scalar types of the ONNX element types, as a call's `dtypes.*` leaves read them: the
 * interpreter's own small table, kept apart from lang/ops.ts's (which the generator folds with),
 * so that a wrong entry on either side makes the differential test disagree.
 */
const CALL_WGSL_SCALAR: ReadonlyMap<string, string> = new Map([
  ["float16", "f16"],
  ["float32", "f32"],
  ["float", "f32"],
  ["int32", "i32"],
  ["uint32", "u32"],
  ["bool", "u32"],
]);

/** A call's leaves. Tensor ids that are inputs read the call's inputs; output-only ids read its outputs. */
export class CallLeaves implements LeafSource {
  constructor(
    private readonly kernel: CheckedKernel,
    private readonly call: Call,
    private readonly facts: StaticFacts,
  ) {}

  /** The tensor for an id, or null when absent. */
  tensor(id: string): TensorDesc | null {
    const isInput = this.kernel.spec.inputs.some((i) => i.name === id);
    const bag = isInput ? this.call.inputs : (this.call.outputs ?? {});
    const t = own(bag as Record<string, TensorDesc | null | undefined>, id);
    return t ?? null;
  }

  private need(id: string, what: string): TensorDesc {
    const t = this.tensor(id);
    if (!t) throw new EvalError(`${what}: tensor \`${id}\` is absent in this call`);
    return t;
  }

  leaf(leaf: Leaf): PValue {
    switch (leaf.ns) {
      case "shapes":
        return this.need(leaf.name, `shapes.${leaf.name}`).shape as number[];
      case "ranks":
        return this.need(leaf.name, `ranks.${leaf.name}`).shape.length;
      case "present":
        return this.tensor(leaf.name) !== null;
      case "tensorDtypes":
        return this.need(leaf.name, `tensorDtypes.${leaf.name}`).dtype;
      case "attrs": {
        const v = attrValue(this.kernel, this.call, leaf.name);
        if (v === undefined)
          throw new EvalError(`attrs.${leaf.name}: the call does not give attribute \`${leaf.name}\` and it has no default`);
        return v;
      }
      case "dtypes": {
        // The interpreter's own table, apart from the one the generator folds with (see CALL_WGSL_SCALAR).
        const t = own(this.facts.dtypes, leaf.name);
        if (t === undefined) return UNKNOWN;
        const w = CALL_WGSL_SCALAR.get(t);
        if (w === undefined) throw new EvalError(`ONNX type ${t} has no WGSL scalar type`);
        return w;
      }
      default:
        return staticLeaf(this.facts, leaf);
    }
  }
  dim(tensor: string, axis: number): PValue {
    return dimOf(this.need(tensor, `dim(shapes.${tensor}, ${axis})`).shape, axis, `shapes.${tensor}`);
  }
  hasAttr(name: string): PValue {
    return attrValue(this.kernel, this.call, name) !== undefined;
  }
}

/** An attribute's value in a call, falling back to its default; undefined when neither. */
export function attrValue(kernel: CheckedKernel, call: Call, name: string): Value | undefined {
  const given = call.attrs ? own(call.attrs as Record<string, Value | undefined>, name) : undefined;
  if (given !== undefined) return given;
  const spec = kernel.spec.attributes.find((a) => a.name === name);
  return spec?.default as Value | undefined;
}

/**
 * Derive values shared by several DeriveEnvs over the same derive table whose leaf sources agree on
 * every leaf the entries `names` read (enumeration: the combinations of one instance's unfixed
 * booleans, for the entries that read none of them): each is evaluated once for all of them.
 */
export interface SharedDerives {
  /** Whether the entry of this name is shared (asked once per name). */
  readonly shares: (name: string) => boolean;
  readonly memo: Map<string, PValue>;
  readonly failed: Map<string, EvalError>;
}

/** An empty SharedDerives for the entries `shares` accepts. */
export function sharedDerives(shares: (name: string) => boolean): SharedDerives {
  const answers = new Map<string, boolean>();
  return {
    shares: (name) => {
      let a = answers.get(name);
      if (a === undefined) answers.set(name, (a = shares(name)));
      return a;
    },
    memo: new Map(),
    failed: new Map(),
  };
}

/** Evaluates derive entries on demand with memoization, over a leaf source. */
export class DeriveEnv implements EvalEnv {
  /** This environment's own values and failures. */
  private readonly own: Pick<SharedDerives, "memo" | "failed"> = { memo: new Map(), failed: new Map() };

  constructor(
    private readonly derives: ReadonlyMap<string, CheckedDerive>,
    readonly leaves: LeafSource,
    /** Entries whose values are kept with other environments' (see SharedDerives). */
    private readonly shared?: SharedDerives,
  ) {}

  /** Whether a derive entry of this name is visible here. */
  has(name: string): boolean {
    return this.derives.has(name);
  }
  leaf(leaf: Leaf): PValue {
    return this.leaves.leaf(leaf);
  }
  dim(tensor: string, axis: number): PValue {
    return this.leaves.dim(tensor, axis);
  }
  hasAttr(name: string): PValue {
    return this.leaves.hasAttr(name);
  }
  derive(name: string): PValue {
    const store = this.shared?.shares(name) ? this.shared : this.own;
    const m = store.memo.get(name);
    if (m !== undefined) return m;
    const f = store.failed.get(name);
    if (f) throw f;
    const d = this.derives.get(name);
    if (!d) throw new EvalError(`derive entry \`${name}\` is not defined here`);
    try {
      const v = evaluate(d.expr.texpr, this);
      store.memo.set(name, v);
      return v;
    } catch (err) {
      if (err instanceof EvalError) {
        const wrapped = err.message.startsWith("in `") ? err : new EvalError(`in \`${name}\`: ${err.message}`);
        store.failed.set(name, wrapped);
        throw wrapped;
      }
      throw err;
    }
  }
}

/**
 * A binding's WGSL element type at build time: its literal, the string value of the derive entry
 * it names, or the WGSL scalar of its tensor's type parameter (`u32` for bool). Undefined for a
 * binding without one (the params uniform). Throws EvalError when the value is not a string known
 * at build time.
 */
export function bindingElementType(b: CheckedBinding, env: DeriveEnv): string | undefined {
  if (!b.elementType) return undefined;
  if ("literal" in b.elementType) return b.elementType.literal;
  if ("typeParam" in b.elementType) {
    const t = env.leaf({ ns: "dtypes", name: b.elementType.typeParam });
    if (typeof t !== "string")
      throw new EvalError(`element type of binding \`${b.name}\` (type parameter ${b.elementType.typeParam}) is not known at build time`);
    return t;
  }
  const v = env.derive(b.elementType.derive);
  if (typeof v !== "string")
    throw new EvalError(
      `element type \`$${b.elementType.derive}\` of binding \`${b.name}\` is ${v === UNKNOWN ? "not known at build time" : String(v)}`,
    );
  return v;
}
