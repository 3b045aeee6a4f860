/**
 * The reference planner: executes a KernelModel for one call by interpreting the checked IR.
 * The generated dispatcher must agree with it exactly (variant, workgroups, sizes, uniform words,
 * and error kinds and messages); test/dispatcher/differential.test.ts holds them to that.
 */
import { attrAndDimLeaves } from "../check/binding-time.js";
import { deriveEnv } from "../check/check-spec.js";
import { type CExpr, type CheckedBinding, type CheckedDerive } from "../model/checked.js";
import type { Value } from "../model/ir.js";
import { evaluate } from "../lang/evaluate.js";
import { EvalError, valuesEqual } from "../lang/ops.js";
import type { BindingPlan, BindingResource, PassPlan, Plan, TensorDesc } from "../model/plan.js";
import { appendPointer } from "../core/json-source.js";
import { KernelCallError } from "./call-error.js";
import { showCallName, showCallValue, snapshotCall, type CallSnapshot } from "./call-snapshot.js";
import { CallLeaves, DeriveEnv, attrValue } from "./env.js";
import { explainFalse, formatReason, showValue } from "./explain-false.js";
import { outputsToFill, unfixedOutputMessage, type AssignmentModel, type KernelModel, type VariantModel } from "./dispatch-model.js";

export { KernelCallError, type CallErrorKind } from "./call-error.js";

/**
 * Bytes per element of the ONNX element types a binding may hold. The interpreter's own table,
 * kept apart from the generator's (dispatch-model.ts) so that a wrong size on either side shows up
 * as a disagreement in the differential test instead of being shared by both.
 */
const BYTES_PER_ELEMENT: ReadonlyMap<string, number> = new Map([
  ["float16", 2],
  ["float32", 4],
  ["float", 4],
  ["int32", 4],
  ["uint32", 4],
  ["bool", 1],
]);

/** WebGPU's default binding limits, for a profile that names none. */
const DEFAULT_MAX_STORAGE_BINDING = 134217728;
const DEFAULT_MAX_UNIFORM_BINDING = 65536;

/** Validates a snapshot of the call against the spec; returns the dtype assignment. */
export function validateCall(model: KernelModel, call: CallSnapshot): Record<string, string> {
  const k = model.kernel;
  const spec = k.spec;
  const name = spec.name;
  const fail = (msg: string, pointer = ""): never => {
    throw new KernelCallError("invalid_call", `${name}: ${msg}`, pointer);
  };
  const at = (...tokens: string[]): string => tokens.reduce<string>((p, t) => appendPointer(p, t), "");
  const bagOf = (what: string): string => `${what}s`;
  const inputIds = spec.inputs.map((i) => i.name);
  const fill = outputsToFill(k);
  const params = new Map(spec.typeConstraints.map((t) => [t.name, t.types]));
  const bound = new Map<string, string>();
  const boundBy = new Map<string, string>();
  const visit = (
    id: string,
    dtype: string,
    rank: number | undefined,
    optional: boolean,
    t: TensorDesc | null | undefined,
    what: string,
  ): void => {
    if (t === null || t === undefined) {
      if (!optional) fail(`required ${what} \`${id}\` is missing`, at(bagOf(what)));
      return;
    }
    const allowed = params.get(dtype);
    if (allowed !== undefined) {
      // A dtype the parameter does not allow is the fault of the tensor that has it, checked where
      // the tensor is: the first tensor of the parameter the call gives sets it for the others.
      const prev = bound.get(dtype);
      if (prev !== t.dtype && !allowed.includes(t.dtype))
        fail(
          `${what} \`${id}\` has dtype ${showCallName(t.dtype)}, which ${dtype} does not allow; allowed: ${allowed.join(", ")}`,
          at(bagOf(what), id, "dtype"),
        );
      if (prev === undefined) {
        bound.set(dtype, t.dtype);
        boundBy.set(dtype, id);
      } else if (prev !== t.dtype)
        fail(
          `${what} \`${id}\` has dtype ${showCallName(t.dtype)}, but \`${boundBy.get(dtype)}\` makes ${dtype} = ${showCallName(prev)}: every tensor of ${dtype} must have the dtype of the first one the call gives`,
          at(bagOf(what), id, "dtype"),
        );
    } else if (t.dtype !== dtype)
      fail(`${what} \`${id}\` must have dtype ${dtype}, got ${showCallName(t.dtype)}`, at(bagOf(what), id, "dtype"));
    if (rank !== undefined && t.shape.length !== rank)
      fail(`${what} \`${id}\` must have rank ${rank}, got ${t.shape.length}`, at(bagOf(what), id, "shape"));
  };
  for (const i of spec.inputs) visit(i.name, i.dtype, i.rank, i.optional, call.inputs[i.name], "input");
  for (const o of spec.outputs)
    visit(o.name, o.dtype, o.rank, o.optional || inputIds.includes(o.name) || fill.has(o.name), call.outputs[o.name], "output");
  const dtypes: Record<string, string> = {};
  for (const [p, allowed] of params) {
    const b = bound.get(p);
    if (b === undefined) {
      const unfixed = unfixedOutputMessage(k, fill, p, allowed);
      if (unfixed !== undefined) fail(unfixed, at("outputs"));
      dtypes[p] = allowed[0]!;
    } else dtypes[p] = b;
  }
  for (const a of spec.attributes) {
    const v = call.attrs[a.name];
    if (v === undefined) continue;
    const t = k.attrTypes.get(a.name)!;
    // An int-list attribute's elements are ints in every expression: a call gives integers.
    const ints = t.k === "list" && t.elem.k === "int";
    const ok =
      t.k === "string"
        ? typeof v === "string"
        : t.k === "list"
          ? Array.isArray(v) && v.every((x) => typeof x === "number" && (ints ? Number.isSafeInteger(x) : Number.isFinite(x)))
          : typeof v === "number" && Number.isFinite(v) && (t.k !== "int" || Number.isInteger(v));
    if (!ok)
      fail(
        `attribute \`${a.name}\` must be ${t.k === "string" ? "a string" : ints ? "a list of integers" : t.k === "list" ? "a list of numbers" : t.k === "int" ? "an integer" : "a finite number"}, got ${showCallValue(v)}`,
        at("attrs", a.name),
      );
  }
  for (const c of spec.attributeConstraints) {
    const v = attrValue(k, call, c.name);
    if (v === undefined) {
      if (c.required) fail(`attribute \`${c.name}\` is required`, at("attrs"));
      continue;
    }
    if (c.values && !c.values.some((x) => x === v))
      fail(
        `attribute \`${c.name}\` is ${showCallValue(v)}; allowed values: ${c.values.map((x) => showValue(x)).join(", ")}`,
        at("attrs", c.name),
      );
  }
  return dtypes;
}

function findAssignment(model: KernelModel, dtypes: Record<string, string>): AssignmentModel {
  for (const a of model.assignments) {
    if (Object.keys(dtypes).every((p) => a.facts.dtypes[p] === dtypes[p])) return a;
  }
  const desc = Object.keys(dtypes)
    .map((p) => `${p}=${dtypes[p]}`)
    .join(", ");
  throw new KernelCallError(
    "no_variant",
    `${model.kernel.spec.name}: nothing was built for ${desc || "this call"} on profile ${model.profile}`,
  );
}

/** Evaluates a condition: true, or the reason it is not. */
function conditionHolds(c: CExpr, env: DeriveEnv, derives: ReadonlyMap<string, CheckedDerive>): true | string {
  let v: unknown;
  try {
    v = evaluate(c.texpr, env);
  } catch (err) {
    if (err instanceof EvalError) return `\`${c.source.text}\` could not be evaluated: ${err.message}`;
    throw err;
  }
  if (v === true) return true;
  return formatReason(explainFalse(c, env, derives));
}

function evalOrThrow(c: CExpr, env: DeriveEnv, what: string, prefix: string): Value {
  try {
    return evaluate(c.texpr, env) as Value;
  } catch (err) {
    if (err instanceof EvalError) throw new KernelCallError("eval", `${prefix}: ${what} failed: ${err.message}`);
    throw err;
  }
}

function product(shape: readonly number[]): number {
  let p = 1;
  for (const d of shape) p *= d;
  return p;
}

function roundUp4(n: number): number {
  return Math.ceil(n / 4) * 4;
}

/**
 * A uniform struct's field values as u32 words (one per field: an i32 as its two's complement, an
 * f32 as the bits of the nearest f32), zero-padded to a multiple of 16 bytes. A u32 or i32 value
 * outside the type's range fails, and so does an f32 value whose nearest f32 is not finite (its
 * magnitude is 2^128 - 2^103 or more, or it is NaN or infinite). A value too small for f32 is not an
 * error: it becomes a subnormal or zero, the nearest f32 (docs/spec-format.md, uniform fields).
 */
export function uniformWords(
  fields: readonly { name: string; type: "u32" | "i32" | "f32"; value: Value }[],
  structName: string,
  prefix: string,
): number[] {
  const size = Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
  const words = new Array<number>(size / 4).fill(0);
  fields.forEach((f, i) => {
    const v = f.value as number;
    if (f.type === "f32") {
      if (!Number.isFinite(Math.fround(v)))
        throw new KernelCallError(
          "eval",
          `${prefix}: uniform field \`${structName}.${f.name}\` (f32) is ${showValue(v)}; it must be a finite number of magnitude below 3.4028235677973366e+38 (larger ones round to Infinity in f32)`,
        );
      words[i] = new Uint32Array(new Float32Array([v]).buffer)[0]!;
    } else if (f.type === "u32") {
      if (!Number.isInteger(v) || v < 0 || v > 4294967295)
        throw new KernelCallError(
          "eval",
          `${prefix}: uniform field \`${structName}.${f.name}\` (u32) is ${showValue(v)}, ${Number.isInteger(v) ? "outside" : "not an integer in"} 0..4294967295`,
        );
      words[i] = v;
    } else {
      if (!Number.isInteger(v) || v < -2147483648 || v > 2147483647)
        throw new KernelCallError(
          "eval",
          `${prefix}: uniform field \`${structName}.${f.name}\` (i32) is ${showValue(v)}, ${Number.isInteger(v) ? "outside" : "not an integer in"} -2147483648..2147483647`,
        );
      words[i] = v >>> 0;
    }
  });
  return words;
}

/**
 * The attributes and dimensions `src` reads (see attrAndDimLeaves) with the call's values, as
 * " (attrs.k = -4, dim(shapes.xT, 0) = 8)"; one without a value (a dimension of an absent tensor)
 * is left out, and nothing is given when none is left.
 */
function readValues(src: CExpr, derives: ReadonlyMap<string, CheckedDerive>, leaves: CallLeaves): string {
  const shown = attrAndDimLeaves(src.texpr, derives).flatMap((l) => {
    try {
      const v = l.axis === undefined ? leaves.leaf(l.leaf) : leaves.dim(l.leaf.name, l.axis);
      return [`${l.key} = ${showCallValue(v)}`];
    } catch (err) {
      if (err instanceof EvalError) return [];
      throw err;
    }
  });
  return shown.length ? ` (${shown.join(", ")})` : "";
}

/** The outcome of choosing a variant for a call: the chosen one, and why each earlier one was rejected. */
export interface Selection {
  readonly chosen?: { readonly vm: VariantModel; readonly env: DeriveEnv };
  readonly rejected: readonly { readonly variant: string; readonly reason: string }[];
  readonly topEnv: DeriveEnv;
  readonly leaves: CallLeaves;
  /** The shapes of the outputs with a declared shape (absent optional outputs left out). */
  readonly outputShapes: Readonly<Record<string, readonly number[]>>;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Each output with a declared shape, in spec order: its shape is computed and checked (a list of
 * non-negative integers of the declared rank); a given output must have it, an output the call
 * left out (one outputsToFill allows) is planned with it.
 */
function checkOutputs(
  model: KernelModel,
  a: AssignmentModel,
  call: CallSnapshot,
  leaves: CallLeaves,
  topEnv: DeriveEnv,
): Record<string, readonly number[]> {
  const k = model.kernel;
  const name = k.spec.name;
  const inputIds = new Set(k.spec.inputs.map((i) => i.name));
  const fill = outputsToFill(k);
  const shapes: Record<string, readonly number[]> = {};
  for (const o of k.spec.outputs) {
    const se = k.outputShapes.get(o.name);
    if (!se) continue;
    const given = inputIds.has(o.name) ? (call.outputs[o.name] ?? null) : leaves.tensor(o.name);
    const present = inputIds.has(o.name) ? leaves.tensor(o.name) !== null : given !== null || fill.has(o.name);
    if (!present) continue;
    const v = evalOrThrow(se, topEnv, `the shape of output \`${o.name}\``, name);
    const rank = o.rank ?? -1;
    const ok = Array.isArray(v) && (rank < 0 || v.length === rank) && v.every((d) => Number.isSafeInteger(d) && (d as number) >= 0);
    if (!ok) {
      const declares = rank < 0 ? "" : `the spec declares rank ${rank} and `;
      throw new KernelCallError(
        "eval",
        `${name}: the shape of output \`${o.name}\`, \`${se.source.text}\`, is ${showCallValue(v)}${readValues(se, k.derive, leaves)}; ${declares}dimensions must be non-negative integers`,
      );
    }
    const shape = v as readonly number[];
    if (given !== null && !sameShape(given.shape, shape)) {
      throw new KernelCallError(
        "invalid_call",
        `${name}: output \`${o.name}\` has shape ${showCallValue(given.shape)}, expected ${showCallValue(shape)} (\`${se.source.text}\`)`,
        appendPointer(appendPointer("/outputs", o.name), "shape"),
      );
    }
    if (given === null && !inputIds.has(o.name)) {
      const param = k.spec.typeConstraints.some((tc) => tc.name === o.dtype);
      call.outputs[o.name] = { shape, dtype: param ? a.facts.dtypes[o.dtype]! : o.dtype };
    }
    shapes[o.name] = shape;
  }
  return shapes;
}

/** Snapshots and validates the call, checks its outputs and the kernel's conditions, and walks the variants in selection order. */
export function selectVariant(model: KernelModel, call: unknown): Selection {
  const k = model.kernel;
  const name = k.spec.name;
  const snap = snapshotCall(model, call);
  const dtypes = validateCall(model, snap);
  const a = findAssignment(model, dtypes);
  const leaves = new CallLeaves(k, snap, a.facts);
  const topEnv = new DeriveEnv(k.derive, leaves);
  const outputShapes = checkOutputs(model, a, snap, leaves, topEnv);
  for (const c of k.when) {
    const r = conditionHolds(c, topEnv, k.derive);
    if (r !== true) throw new KernelCallError("contract", `${name}: condition \`${c.source.text}\` failed: ${r}`);
  }
  const rejected: { variant: string; reason: string }[] = [];
  for (const vm of a.variants) {
    const derives = deriveEnv(k, vm.variant);
    const env = new DeriveEnv(derives, leaves);
    let reason: string | undefined;
    for (const c of vm.variant.when) {
      const r = conditionHolds(c, env, derives);
      if (r !== true) {
        reason = r;
        break;
      }
    }
    if (reason === undefined) return { chosen: { vm, env }, rejected, topEnv, leaves, outputShapes };
    rejected.push({ variant: vm.variant.id, reason });
  }
  return { rejected, topEnv, leaves, outputShapes };
}

/** Plans one call: the reference semantics of a generated plan function. */
export function interpretPlan(model: KernelModel, call: unknown): Plan {
  const sel = selectVariant(model, call);
  if (!sel.chosen) {
    const pruned = model.prunedVariants.length ? `; not built for profile ${model.profile}: ${model.prunedVariants.join(", ")}` : "";
    throw new KernelCallError(
      "no_variant",
      `${model.kernel.spec.name}: no variant fits this call on profile ${model.profile}: ${sel.rejected.map((r) => `${r.variant}: ${r.reason}`).join("; ")}${pruned}`,
    );
  }
  return buildPlan(model, sel.chosen.vm, sel.chosen.env, sel.leaves, sel.outputShapes);
}

/** A byte size checked against a binding limit of the profile. */
function fits(size: number, max: number, limit: string, prefix: string, what: string): number {
  if (!(size <= max)) throw new KernelCallError("eval", `${prefix}: ${what} needs ${size} bytes, more than ${limit} (${max})`);
  return size;
}

function buildPlan(
  model: KernelModel,
  vm: VariantModel,
  venv: DeriveEnv,
  leaves: CallLeaves,
  outputShapes: Readonly<Record<string, readonly number[]>>,
): Plan {
  const k = model.kernel;
  const v = vm.variant;
  const prefix = `${k.spec.name}: variant \`${v.id}\``;
  // Shader ids first: a call whose key was not built fails before any other work.
  const shaderIds = vm.passes.map((pm) => {
    const penv = new DeriveEnv(deriveEnv(k, v, pm.pass), leaves);
    const pprefix = `${prefix}: pass \`${pm.pass.id}\``;
    const raw = (i: number): Value => {
      const l = pm.keyLeaves[i];
      if (l.axis !== undefined) return penv.dim(l.leaf.name, l.axis) as Value;
      if (l.key.startsWith("has(")) return penv.hasAttr(l.leaf.name) as Value;
      return penv.leaf(l.leaf) as Value;
    };
    // Key leaves are read lazily, in entry order, left to right: a wildcard (null) reads nothing.
    const memo = new Map<number, Value>();
    const leafValue = (i: number): Value => {
      if (memo.has(i)) return memo.get(i)!;
      try {
        const val = raw(i);
        memo.set(i, val);
        return val;
      } catch (err) {
        if (err instanceof EvalError)
          throw new KernelCallError("eval", `${pprefix}: shader key ${pm.keyLeaves[i].key} failed: ${err.message}`);
        throw err;
      }
    };
    for (const [json, id] of pm.shaders) {
      const key = JSON.parse(json) as (Value | null)[];
      if (key.every((kv, i) => kv === null || valuesEqual(leafValue(i), kv))) return { id, penv };
    }
    const desc = pm.keyLeaves
      .map((l, i) => {
        let shown: string;
        try {
          shown = showValue(raw(i));
        } catch (err) {
          if (!(err instanceof EvalError)) throw err;
          shown = `error: ${err.message}`;
        }
        return `${l.key}=${shown}`;
      })
      .join(", ");
    throw new KernelCallError(
      "missing_shader",
      `${prefix}: no shader was built for pass \`${pm.pass.id}\` with ${desc} on profile ${model.profile}; ${model.instancesHint}`,
    );
  });
  const limits = model.assignments[0]?.facts.limits ?? {};
  const maxStorage = limits.maxStorageBufferBindingSize ?? DEFAULT_MAX_STORAGE_BINDING;
  const maxUniform = limits.maxUniformBufferBindingSize ?? DEFAULT_MAX_UNIFORM_BINDING;
  // Scratch sizes by id, in the intermediates' order (a plain record: ids are identifiers, never __proto__).
  const scratch: Record<string, number> = {};
  for (const im of v.intermediates) {
    const shape = evalOrThrow(im.shape, venv, `the shape of intermediate \`${im.id}\``, prefix) as number[];
    const bad = shape.find((d) => !(Number.isSafeInteger(d) && d >= 0));
    if (bad !== undefined)
      throw new KernelCallError(
        "eval",
        `${prefix}: the shape of intermediate \`${im.id}\` has the dimension ${showCallValue(bad)}; dimensions must be non-negative integers`,
      );
    const size = roundUp4(product(shape) * BYTES_PER_ELEMENT.get(im.dtype)!);
    scratch[im.id] = fits(size, maxStorage, "maxStorageBufferBindingSize", prefix, `intermediate \`${im.id}\``);
  }
  const scratchSize = new Map(Object.entries(scratch));
  const maxWg = model.assignments[0]?.facts.limits.maxComputeWorkgroupsPerDimension ?? 65535;
  const passes: PassPlan[] = vm.passes.map((pm, pi) => {
    const { id, penv } = shaderIds[pi];
    const pprefix = `${prefix}: pass \`${pm.pass.id}\``;
    const bindings: BindingPlan[] = pm.bindings.map((b, bi): BindingPlan => {
      const base = { binding: bi, name: b.name, type: b.buffer };
      if (b.kind === "uniform") return { ...base, kind: "uniform" };
      if (b.kind === "scratch") return { ...base, kind: "scratch", scratch: b.ref! };
      return { ...base, kind: b.refIsInput ? "input" : "output", tensor: b.ref! };
    });
    // In binding order, so the first failing binding is the one reported (as the dispatcher does).
    const resources = pm.bindings.map((b) => resourceFor(b, penv, leaves, scratchSize, pprefix, k.spec.name, maxStorage, maxUniform));
    const [x, y, z] = pm.pass.dispatch.map((d, i) => {
      const n = evalOrThrow(d, penv, `dispatch ${"xyz"[i]}`, pprefix) as number;
      if (!Number.isInteger(n) || n < 0 || n > maxWg)
        throw new KernelCallError(
          "eval",
          `${pprefix}: dispatch ${"xyz"[i]} is ${showValue(n)}, outside 0..${maxWg} (maxComputeWorkgroupsPerDimension)`,
        );
      return n;
    }) as [number, number, number];
    return { id: pm.pass.id, name: pm.pass.name, shader: id, entryPoint: "main", bindings, resources, x, y, z };
  });
  return { kernel: k.spec.name, variant: v.id, passes, scratch, outputShapes };
}

function resourceFor(
  b: CheckedBinding,
  env: DeriveEnv,
  leaves: CallLeaves,
  scratch: ReadonlyMap<string, number>,
  prefix: string,
  kernel: string,
  maxStorage: number,
  maxUniform: number,
): BindingResource {
  if (b.kind === "uniform") {
    const fields = (b.fields ?? []).map((f) => ({
      name: f.name,
      type: f.type,
      value: evalOrThrow(f.value, env, `uniform field \`${b.name}.${f.name}\``, prefix),
    }));
    const size = Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
    fits(size, maxUniform, "maxUniformBufferBindingSize", prefix, `uniform \`${b.name}\``);
    return uniformWords(fields, b.name, prefix);
  }
  if (b.kind === "scratch") return scratch.get(b.ref!) ?? 0;
  const t = leaves.tensor(b.ref!);
  if (!t) throw new KernelCallError("eval", `${prefix}: binding \`${b.name}\` needs tensor \`${b.ref}\`, which the call omits`);
  const bytes = BYTES_PER_ELEMENT.get(t.dtype);
  if (bytes === undefined) throw new KernelCallError("eval", `${prefix}: tensor \`${b.ref}\` has dtype ${t.dtype}, which cannot be bound`);
  // A tensor is a storage buffer (the schema allows no other buffer type for it).
  return fits(roundUp4(product(t.shape) * bytes), maxStorage, "maxStorageBufferBindingSize", kernel, `tensor \`${b.ref}\``);
}
