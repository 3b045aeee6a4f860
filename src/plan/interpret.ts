/**
 * The reference planner: executes a KernelModel for one call by interpreting the checked IR.
 * The generated dispatcher must agree with it exactly (variant, workgroups, sizes, uniform bytes,
 * and error kinds and messages); test/dispatcher/differential.test.ts holds them to that.
 */
import { deriveEnv } from "../check/check-spec.js";
import { type CExpr, type CheckedBinding, type CheckedDerive } from "../model/checked.js";
import type { Value } from "../model/ir.js";
import { evaluate } from "../lang/evaluate.js";
import { EvalError, valuesEqual } from "../lang/ops.js";
import type { BindingPlan, Call, PassPlan, Plan, ScratchPlan, TensorDesc } from "../model/plan.js";
import { CallLeaves, DeriveEnv, attrValue } from "./env.js";
import { explainFalse, formatReason, showValue } from "./explain-false.js";
import { ELEMENT_BYTES, type AssignmentModel, type KernelModel, type VariantModel } from "./dispatch-model.js";

export type CallErrorKind = "invalid_call" | "contract" | "no_variant" | "missing_shader" | "eval";

/** The error a plan function throws for a call it cannot plan. Same kinds and messages as the generated code's. */
export class KernelCallError extends Error {
  constructor(readonly kind: CallErrorKind, message: string) {
    super(message);
    this.name = "KernelCallError";
  }
}

function own<T>(rec: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return rec !== null && rec !== undefined && Object.prototype.propertyIsEnumerable.call(rec, key) ? rec[key] : undefined;
}

/** Validates the call's tensors and attributes against the spec; returns the dtype assignment. */
export function validateCall(model: KernelModel, call: Call): Record<string, string> {
  const k = model.kernel;
  const spec = k.spec;
  const name = spec.name;
  const fail = (msg: string): never => {
    throw new KernelCallError("invalid_call", `${name}: ${msg}`);
  };
  const inputIds = spec.inputs.map((i) => i.name);
  const outputIds = spec.outputs.map((o) => o.name);
  for (const key of Object.keys(call.inputs ?? {})) if (!inputIds.includes(key)) fail(`unknown input \`${key}\`; inputs are ${inputIds.join(", ")}`);
  for (const key of Object.keys(call.outputs ?? {})) if (!outputIds.includes(key)) fail(`unknown output \`${key}\`; outputs are ${outputIds.join(", ")}`);
  const attrNames = spec.attributes.map((a) => a.name);
  for (const key of Object.keys(call.attrs ?? {})) if (!attrNames.includes(key)) fail(`unknown attribute \`${key}\`; attributes are ${attrNames.join(", ")}`);
  const params = new Map(spec.typeConstraints.map((t) => [t.name, t.types]));
  const bound: Record<string, string> = {};
  const boundBy: Record<string, string> = {};
  const visit = (id: string, dtype: string, rank: number | undefined, optional: boolean, t: TensorDesc | null | undefined, what: string): void => {
    if (t === null || t === undefined) {
      if (!optional) fail(`required ${what} \`${id}\` is missing`);
      return;
    }
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) fail(`${what} \`${id}\` has shape ${showValue(t.shape as Value)}; dimensions must be non-negative integers`);
    if (params.has(dtype)) {
      const prev = own(bound, dtype);
      if (prev === undefined) {
        bound[dtype] = t.dtype;
        boundBy[dtype] = id;
      } else if (prev !== t.dtype) fail(`${what} \`${id}\` has dtype ${t.dtype}, but \`${boundBy[dtype]}\` makes ${dtype} = ${prev}`);
    } else if (t.dtype !== dtype) fail(`${what} \`${id}\` must have dtype ${dtype}, got ${t.dtype}`);
    if (rank !== undefined && t.shape.length !== rank) fail(`${what} \`${id}\` must have rank ${rank}, got ${t.shape.length}`);
  };
  for (const i of spec.inputs) visit(i.name, i.dtype, i.rank, i.optional, own(call.inputs, i.name), "input");
  for (const o of spec.outputs) visit(o.name, o.dtype, o.rank, o.optional || inputIds.includes(o.name), own(call.outputs, o.name), "output");
  for (const [p, allowed] of params) {
    const b = own(bound, p);
    if (b === undefined) bound[p] = allowed[0];
    else if (!allowed.includes(b)) fail(`${p} = ${b} is not allowed; allowed: ${allowed.join(", ")}`);
  }
  for (const a of spec.attributes) {
    const v = own(call.attrs as Record<string, Value | undefined> | undefined, a.name);
    if (v === undefined) continue;
    const t = k.attrTypes.get(a.name)!;
    const ok =
      t.k === "string" ? typeof v === "string" : t.k === "list" ? Array.isArray(v) && v.every((x) => typeof x === "number" && Number.isFinite(x)) : typeof v === "number" && Number.isFinite(v) && (t.k !== "int" || Number.isInteger(v));
    if (!ok) fail(`attribute \`${a.name}\` must be ${t.k === "string" ? "a string" : t.k === "list" ? "a list of numbers" : t.k === "int" ? "an integer" : "a finite number"}, got ${showValue(v)}`);
  }
  for (const c of spec.attributeConstraints) {
    const v = attrValue(k, call, c.name);
    if (v === undefined) {
      if (c.required) fail(`attribute \`${c.name}\` is required`);
      continue;
    }
    if (c.values && !c.values.some((x) => x === v)) fail(`attribute \`${c.name}\` is ${showValue(v)}; allowed values: ${c.values.map((x) => showValue(x)).join(", ")}`);
  }
  return bound;
}

function findAssignment(model: KernelModel, dtypes: Record<string, string>): AssignmentModel {
  for (const a of model.assignments) {
    if (Object.keys(dtypes).every((p) => a.facts.dtypes[p] === dtypes[p])) return a;
  }
  const desc = Object.keys(dtypes).map((p) => `${p}=${dtypes[p]}`).join(", ");
  throw new KernelCallError("no_variant", `${model.kernel.spec.name}: nothing was built for ${desc || "this call"} on profile ${model.profile}`);
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

/** Encodes a uniform struct's field values (4 bytes each, little-endian) into a 16-byte-rounded buffer. */
export function uniformBytes(fields: readonly { name: string; type: "u32" | "i32" | "f32"; value: Value }[], structName: string, prefix: string): Uint8Array {
  const size = Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  fields.forEach((f, i) => {
    const v = f.value as number;
    if (f.type === "f32") view.setFloat32(i * 4, v, true);
    else if (f.type === "u32") {
      if (!Number.isInteger(v) || v < 0 || v > 4294967295) throw new KernelCallError("eval", `${prefix}: uniform field \`${structName}.${f.name}\` (u32) is ${showValue(v)}, outside 0..4294967295`);
      view.setUint32(i * 4, v, true);
    } else {
      if (!Number.isInteger(v) || v < -2147483648 || v > 2147483647) throw new KernelCallError("eval", `${prefix}: uniform field \`${structName}.${f.name}\` (i32) is ${showValue(v)}, outside -2147483648..2147483647`);
      view.setInt32(i * 4, v, true);
    }
  });
  return bytes;
}

/** The outcome of choosing a variant for a call: the chosen one, and why each earlier one was rejected. */
export interface Selection {
  readonly chosen?: { readonly vm: VariantModel; readonly env: DeriveEnv };
  readonly rejected: readonly { readonly variant: string; readonly reason: string }[];
  readonly topEnv: DeriveEnv;
  readonly leaves: CallLeaves;
}

/** Validates the call, checks the kernel's conditions, and walks the variants in selection order. */
export function selectVariant(model: KernelModel, call: Call): Selection {
  const k = model.kernel;
  const name = k.spec.name;
  const dtypes = validateCall(model, call);
  const a = findAssignment(model, dtypes);
  const leaves = new CallLeaves(k, call, a.facts);
  const topEnv = new DeriveEnv(k.derive, leaves);
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
    if (reason === undefined) return { chosen: { vm, env }, rejected, topEnv, leaves };
    rejected.push({ variant: vm.variant.id, reason });
  }
  return { rejected, topEnv, leaves };
}

/** Plans one call: the reference semantics of a generated plan function. */
export function interpretPlan(model: KernelModel, call: Call): Plan {
  const sel = selectVariant(model, call);
  if (!sel.chosen) {
    const pruned = model.prunedVariants.length ? `; not built for profile ${model.profile}: ${model.prunedVariants.join(", ")}` : "";
    throw new KernelCallError("no_variant", `${model.kernel.spec.name}: no variant fits this call on profile ${model.profile}: ${sel.rejected.map((r) => `${r.variant}: ${r.reason}`).join("; ")}${pruned}`);
  }
  return buildPlan(model, sel.chosen.vm, sel.chosen.env, sel.topEnv, sel.leaves);
}

function buildPlan(model: KernelModel, vm: VariantModel, venv: DeriveEnv, topEnv: DeriveEnv, leaves: CallLeaves): Plan {
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
        if (err instanceof EvalError) throw new KernelCallError("eval", `${pprefix}: shader key ${pm.keyLeaves[i].key} failed: ${err.message}`);
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
    throw new KernelCallError("missing_shader", `${prefix}: no shader was built for pass \`${pm.pass.id}\` with ${desc} on profile ${model.profile}; ${model.instancesHint}`);
  });
  const scratch: ScratchPlan[] = v.intermediates.map((im) => {
    const shape = evalOrThrow(im.shape, venv, `the shape of intermediate \`${im.id}\``, prefix) as number[];
    return { id: im.id, size: roundUp4(product(shape) * ELEMENT_BYTES[im.dtype]) };
  });
  const scratchSize = new Map(scratch.map((s) => [s.id, s.size]));
  const maxWg = model.assignments[0]?.facts.limits.maxComputeWorkgroupsPerDimension ?? 65535;
  const passes: PassPlan[] = vm.passes.map((pm, pi) => {
    const { id, penv } = shaderIds[pi];
    const pprefix = `${prefix}: pass \`${pm.pass.id}\``;
    const bindings: BindingPlan[] = pm.bindings.map((b, bi) => ({ binding: bi, name: b.name, type: b.buffer, resource: resourceFor(b, penv, leaves, scratchSize, pprefix) }));
    const wg = pm.pass.dispatch.map((d, i) => {
      const n = evalOrThrow(d, penv, `dispatch ${"xyz"[i]}`, pprefix) as number;
      if (!Number.isInteger(n) || n < 0 || n > maxWg) throw new KernelCallError("eval", `${pprefix}: dispatch ${"xyz"[i]} is ${showValue(n)}, outside 0..${maxWg} (maxComputeWorkgroupsPerDimension)`);
      return n;
    }) as unknown as [number, number, number];
    return { id: pm.pass.id, name: pm.pass.name, shader: id, entryPoint: "main", bindings, workgroups: wg };
  });
  const outputShapes: Record<string, readonly number[]> = {};
  for (const o of k.spec.outputs) {
    const shapeExpr = k.outputShapes.get(o.name);
    if (!shapeExpr) continue;
    if (o.optional && !(topEnv.leaf({ ns: "present", name: o.name }) as boolean)) continue;
    outputShapes[o.name] = evalOrThrow(shapeExpr, topEnv, `the shape of output \`${o.name}\``, `${k.spec.name}`) as number[];
  }
  return { kernel: k.spec.name, variant: v.id, passes, scratch, outputShapes };
}

function resourceFor(b: CheckedBinding, env: DeriveEnv, leaves: CallLeaves, scratch: ReadonlyMap<string, number>, prefix: string): BindingPlan["resource"] {
  if (b.kind === "uniform") {
    const fields = (b.fields ?? []).map((f) => ({ name: f.name, type: f.type, value: evalOrThrow(f.value, env, `uniform field \`${b.name}.${f.name}\``, prefix) }));
    return { kind: "uniform", bytes: uniformBytes(fields, b.name, prefix) };
  }
  if (b.kind === "scratch") return { kind: "scratch", scratch: b.ref!, offset: 0, size: scratch.get(b.ref!) ?? 0 };
  const t = leaves.tensor(b.ref!);
  if (!t) throw new KernelCallError("eval", `${prefix}: binding \`${b.name}\` needs tensor \`${b.ref}\`, which the call omits`);
  const bytes = ELEMENT_BYTES[t.dtype];
  if (bytes === undefined) throw new KernelCallError("eval", `${prefix}: tensor \`${b.ref}\` has dtype ${t.dtype}, which cannot be bound`);
  return { kind: b.refIsInput ? "input" : "output", tensor: b.ref!, offset: 0, size: roundUp4(product(t.shape) * bytes) };
}
