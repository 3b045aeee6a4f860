/**
 * A hand-written stand-in for kernelc's generated PagedAttention dispatcher, used by the tests
 * until the compiler's back end exists. Everything the compiler will do for one call lives in
 * this one file so that the lead can swap in the generated dispatcher:
 *   - evaluate the spec's derive entries for the call (by hand, in TypeScript);
 *   - pick the variant per the spec's `when` conditions and priorities;
 *   - build each pass's render context per the template contract and render the template;
 *   - build `env.wgsl.resourceDeclarations`, uniform bytes, workgroups and the Plan.
 * Binding lists, element types and buffer types are read from specs/PagedAttention.json itself.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import nunjucks from "nunjucks";
import type { BindingPlan, Call, PassPlan, Plan, TensorDesc } from "../../src/runtime/plan.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The folder the PagedAttention templates are rendered from. */
export const TEMPLATE_DIR = join(ROOT, "templates");
const SPEC_PATH = join(ROOT, "specs", "PagedAttention.json");

/** Device limits and features the plan is made for (a GPUDevice's own are fine). */
export interface PlanDevice {
  readonly limits: {
    readonly maxComputeWorkgroupStorageSize: number;
    readonly maxComputeInvocationsPerWorkgroup: number;
    readonly maxComputeWorkgroupSizeX: number;
    readonly maxComputeWorkgroupsPerDimension: number;
    readonly maxStorageBufferBindingSize: number;
    readonly maxBufferSize: number;
  };
  readonly features: ReadonlySet<string> | { has(name: string): boolean };
}

/** Options of {@link planPagedAttention}: tunable overrides (the compiler pins them per profile). */
export interface PlanOptions {
  readonly tunables?: Partial<Record<TunableName, number>>;
}

type TunableName = "WORKGROUP_SIZE" | "SCATTER_WORKGROUP_SIZE" | "MAX_SPLITS" | "SPLIT_MIN_KEYS" | "SPLIT_TARGET_WORKGROUPS";

/** A render-context value: what the contract passes to templates. */
export type ContextValue = number | boolean | string;

/** The plan of one call, the WGSL of each shader id it names, and what the templates were given. */
export interface ManualPlanResult {
  readonly plan: Plan;
  readonly shaders: Readonly<Record<string, string>>;
  /** Per pass id: the render context (derive values after overrides, tunables, ...). */
  readonly contexts: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

interface RawBinding {
  readonly arg?: string;
  readonly scratch?: string;
  readonly name?: string;
  readonly buffer?: "storage" | "read-only-storage" | "uniform";
  readonly elementType?: string;
  readonly struct?: readonly { name: string; type: "u32" | "i32" | "f32"; value: string }[];
}

interface RawPass {
  readonly id: string;
  readonly name: string;
  readonly shader: string;
  readonly derive?: Readonly<Record<string, string | boolean>>;
  readonly bindings: readonly (string | RawBinding)[];
}

interface RawVariant {
  readonly id: string;
  readonly priority?: number;
  readonly requires?: { readonly features?: readonly string[] };
  readonly derive?: Readonly<Record<string, string>>;
  readonly passes: readonly RawPass[];
}

interface RawSpec {
  readonly inputs: Readonly<Record<string, unknown>>;
  readonly outputs: Readonly<Record<string, unknown>>;
  readonly tunables: Readonly<Record<TunableName, { default: number }>>;
  readonly bindings: Readonly<Record<string, RawBinding>>;
  readonly variants: readonly RawVariant[];
}

const SPEC: RawSpec = JSON.parse(readFileSync(SPEC_PATH, "utf8")) as RawSpec;
const DISPATCH_FOLD_WIDTH = 65535;

const ENV = new nunjucks.Environment(new nunjucks.FileSystemLoader(TEMPLATE_DIR, { noCache: true }), {
  autoescape: false,
  throwOnUndefined: true,
  trimBlocks: true,
  lstripBlocks: true,
});

/** Renders one template per the contract: nunjucks, then trailing whitespace stripped and blank-line runs collapsed. */
export function renderTemplate(shader: string, context: Readonly<Record<string, unknown>>): string {
  const raw = ENV.render(shader, { ...context });
  const lines = raw.split("\n").map((line) => line.replace(/\s+$/, ""));
  const out: string[] = [];
  for (const line of lines) {
    if (line === "" && (out.length === 0 || out[out.length - 1] === "")) continue;
    out.push(line);
  }
  while (out.length > 0 && out[out.length - 1] === "") out.pop();
  return out.join("\n") + "\n";
}

const pow2ceil = (n: number): number => (n <= 1 ? 1 : 2 ** Math.ceil(Math.log2(n)));
const ceilDiv = (a: number, b: number): number => Math.ceil(a / b);
/** The spec language's `/` on integers (all operands here are non-negative): truncating. */
const idiv = (a: number, b: number): number => Math.trunc(a / b);

function dim(desc: TensorDesc | null | undefined, axis: number): number {
  if (!desc) throw new Error(`dim() of an absent tensor (axis ${axis})`);
  const d = desc.shape[axis];
  if (d === undefined) throw new Error(`tensor of rank ${desc.shape.length} has no axis ${axis}`);
  return d;
}

const ONNX_TO_WGSL: Readonly<Record<string, string>> = { float16: "f16", float32: "f32", int32: "i32" };

/** Evaluates every derive entry of the spec (base values, before variant and pass overrides). */
export function deriveValues(call: Call, device: PlanDevice, tunables: Readonly<Record<TunableName, number>>): Record<string, ContextValue> {
  const inp = call.inputs;
  const lim = device.limits;
  const numHeads = Number(call.attrs?.num_heads);
  const kvNumHeads = Number(call.attrs?.kv_num_heads);
  const query = inp.queryT;
  const keyCache = inp.keyCacheT;
  const dtypeT = ONNX_TO_WGSL[query?.dtype ?? ""] ?? "unknown";

  const tokenCount = dim(query, 0);
  const blockSize = dim(keyCache, 1);
  const headSize = dim(keyCache, 3);
  const maxBlocks = dim(inp.blockTableT, 1);
  const batchSize = dim(inp.cumulativeSequenceLengthT, 0) - 1;
  const qHidden = numHeads * headSize;
  const kvHidden = kvNumHeads * headSize;
  const qPerKv = idiv(numHeads, Math.max(1, kvNumHeads));
  const headVec = idiv(headSize, 4);
  const cacheVec4Ok = headSize % 4 === 0;
  const packedStride = qHidden + 2 * kvHidden;
  const pagedBaseWorkgroups = tokenCount * kvNumHeads;
  const pagedAttnQueryFloats = 2 * headSize * qPerKv;
  const pagedAttnLaneFloats = 3 * qPerKv + 1;
  const pagedAttnWgBudget = idiv(Math.floor(lim.maxComputeWorkgroupStorageSize / 4 - pagedAttnQueryFloats), pagedAttnLaneFloats);
  const pagedAttnWg = Math.max(32, Math.min(tunables.WORKGROUP_SIZE, idiv(pow2ceil(Math.max(1, Math.floor(pagedAttnWgBudget)) + 1), 2)));
  const pagedAttnStorageBytes = (pagedAttnQueryFloats + pagedAttnLaneFloats * pagedAttnWg) * 4;
  const pagedAttnStorageFits =
    pagedAttnStorageBytes <= lim.maxComputeWorkgroupStorageSize &&
    pagedAttnWg <= lim.maxComputeInvocationsPerWorkgroup &&
    pagedAttnWg <= lim.maxComputeWorkgroupSizeX;
  const pagedKeyCeiling = maxBlocks * blockSize;
  const pagedSplitWg = Math.min(256, Math.max(32, pow2ceil(headVec)));
  const pagedSplitStorageBytes = (2 * headSize * qPerKv + (3 * qPerKv + 1) * pagedSplitWg) * 4;
  const pagedSplitStorageFits = pagedSplitStorageBytes <= lim.maxComputeWorkgroupStorageSize;
  const pagedSplitCap = Math.max(1, Math.min(tunables.MAX_SPLITS, idiv(pagedKeyCeiling, tunables.SPLIT_MIN_KEYS)));
  const numSplits = Math.max(1, Math.min(pagedSplitCap, ceilDiv(tunables.SPLIT_TARGET_WORKGROUPS, Math.max(1, pagedBaseWorkgroups))));
  const pagedSplitScratchBytes = tokenCount * numHeads * numSplits * headSize * 4;
  const pagedSplitStatsBytes = 2 * tokenCount * numHeads * numSplits * 4;
  const maxWg = Math.min(lim.maxComputeWorkgroupsPerDimension, 65535);
  const pagedSplitFits =
    numSplits >= 2 &&
    cacheVec4Ok &&
    headVec >= 1 &&
    pagedSplitScratchBytes <= lim.maxStorageBufferBindingSize &&
    pagedSplitScratchBytes <= lim.maxBufferSize &&
    pagedSplitStatsBytes <= lim.maxStorageBufferBindingSize &&
    pagedSplitStatsBytes <= lim.maxBufferSize &&
    numSplits <= maxWg &&
    headVec <= lim.maxComputeInvocationsPerWorkgroup &&
    headVec <= lim.maxComputeWorkgroupSizeX &&
    pagedSplitWg <= lim.maxComputeInvocationsPerWorkgroup &&
    pagedSplitWg <= lim.maxComputeWorkgroupSizeX;

  const present = (id: string): boolean => inp[id] !== null && inp[id] !== undefined;
  const sameShape = (a?: TensorDesc | null, b?: TensorDesc | null): boolean =>
    !!a && !!b && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
  const vc = inp.valueCacheT;
  const cacheShapeOk =
    keyCache?.shape.length === 4 &&
    vc?.shape.length === 4 &&
    sameShape(vc, keyCache) &&
    dim(keyCache, 2) === kvNumHeads &&
    blockSize > 0 &&
    headSize > 0 &&
    keyCache.dtype === query?.dtype &&
    vc.dtype === query?.dtype;
  const headLayoutOk = numHeads > 0 && kvNumHeads > 0 && numHeads % kvNumHeads === 0;
  const scheduleShapeOk =
    batchSize >= 1 && dim(inp.pastSeqlensT, 0) === batchSize && dim(inp.blockTableT, 0) === batchSize && maxBlocks >= 1;
  const ioShapeOk = query?.shape.length === 2 && dtypeT === "f16";
  const separateKv =
    present("keyT") &&
    present("valueT") &&
    dim(inp.keyT, 0) === tokenCount &&
    dim(inp.valueT, 0) === tokenCount &&
    dim(inp.keyT, 1) === kvHidden &&
    dim(inp.valueT, 1) === kvHidden &&
    dim(query, 1) === qHidden;
  const packedKv = !present("keyT") && !present("valueT") && dim(query, 1) === packedStride;
  const slotShapeOk = present("slotMappingT") ? dim(inp.slotMappingT, 0) === tokenCount : true;
  const pagedContractOk = cacheShapeOk && headLayoutOk && scheduleShapeOk && ioShapeOk && slotShapeOk;
  const dispatchFits =
    tokenCount <= maxWg &&
    numHeads <= maxWg &&
    tunables.WORKGROUP_SIZE <= lim.maxComputeInvocationsPerWorkgroup &&
    tunables.SCATTER_WORKGROUP_SIZE <= lim.maxComputeInvocationsPerWorkgroup;
  const cacheVec = cacheVec4Ok ? (dtypeT === "f16" ? "vec4<f16>" : "vec4<f32>") : dtypeT;

  return {
    tokenCount,
    blockSize,
    headSize,
    maxBlocks,
    batchSize,
    qHidden,
    kvHidden,
    qPerKv,
    headVec,
    cacheVec4Ok,
    packedStride,
    cacheShapeOk,
    headLayoutOk,
    scheduleShapeOk,
    ioShapeOk,
    separateKv,
    packedKv,
    slotShapeOk,
    pagedContractOk,
    dispatchFits,
    pagedBaseWorkgroups,
    pagedAttnQueryFloats,
    pagedAttnLaneFloats,
    pagedAttnWgBudget,
    pagedAttnWg,
    pagedAttnStorageBytes,
    pagedAttnStorageFits,
    pagedKeyCeiling,
    pagedSplitWg,
    pagedSplitStorageBytes,
    pagedSplitStorageFits,
    pagedSplitCap,
    numSplits,
    pagedSplitScratchBytes,
    pagedSplitStatsBytes,
    pagedSplitFits,
    aScalar: dtypeT,
    scalar: dtypeT,
    numHeads,
    kvNumHeads,
    packedQkv: !present("keyT"),
    hasSlotMapping: present("slotMappingT"),
    attnWorkgroup: pagedAttnWg,
    cacheVec,
    headDimV4: headVec,
    headDim: headSize,
    qNumHeads: numHeads,
    qHiddenV4: idiv(qHidden, 4),
    outVec: dtypeT === "f16" ? "vec4<f16>" : "vec4<f32>",
  };
}

/** The variant the spec's `when` lists and priorities pick for these derive values, or undefined. */
export function chooseVariant(d: Readonly<Record<string, ContextValue>>, features: PlanDevice["features"]): string | undefined {
  if (!(d.pagedContractOk && d.dispatchFits)) return undefined;
  const slot = d.hasSlotMapping === true;
  const layout = d.separateKv ? "separate" : d.packedKv ? "packed" : undefined;
  if (layout === undefined || !features.has("shader-f16")) return undefined;
  const base = `${layout}_${slot ? "slot" : "derived"}`;
  // The split-K variants have priority 10 and win whenever they fit.
  if (d.pagedSplitFits && d.pagedSplitStorageFits) return `${base}_splitk`;
  if (d.pagedAttnStorageFits) return base;
  return undefined;
}

function bindingOf(ref: string | RawBinding): RawBinding {
  if (typeof ref !== "string") return ref;
  const b = SPEC.bindings[ref];
  if (!b) throw new Error(`unknown binding ${ref}`);
  return b;
}

function bindingName(ref: string | RawBinding): string {
  const b = bindingOf(ref);
  if (b.name) return b.name;
  if (typeof ref === "string") return ref;
  throw new Error("inline binding without a name");
}

function bufferType(b: RawBinding): "storage" | "read-only-storage" | "uniform" {
  if (b.struct) return "uniform";
  if (b.buffer) return b.buffer;
  if (b.scratch) return "storage";
  if (b.arg && b.arg in SPEC.outputs) return "storage";
  return "read-only-storage";
}

function elementType(b: RawBinding, ctx: Readonly<Record<string, unknown>>): string {
  const t = b.elementType ?? "";
  if (t.startsWith("$")) {
    const v = ctx[t.slice(1)];
    if (typeof v !== "string") throw new Error(`elementType ${t} is not a string derive`);
    return v;
  }
  return t;
}

/** Builds `env.wgsl.resourceDeclarations` for a pass per the contract. */
export function resourceDeclarations(pass: RawPass, ctx: Readonly<Record<string, unknown>>, f16: boolean): string {
  const lines: string[] = [];
  if (f16) lines.push("enable f16;", "");
  pass.bindings.forEach((ref, n) => {
    const b = bindingOf(ref);
    const name = bindingName(ref);
    if (b.struct) {
      const struct = name.charAt(0).toUpperCase() + name.slice(1);
      lines.push(`struct ${struct} {`);
      for (const f of b.struct) lines.push(`  ${f.name}: ${f.type},`);
      lines.push("}");
      lines.push(`@group(0) @binding(${n}) var<uniform> ${name}: ${struct};`);
    } else {
      const access = bufferType(b) === "storage" ? "read_write" : "read";
      lines.push(`@group(0) @binding(${n}) var<storage, ${access}> ${name}: array<${elementType(b, ctx)}>;`);
    }
  });
  return lines.join("\n");
}

function uniformBytes(fields: readonly { name: string; type: "u32" | "i32" | "f32" }[], values: Readonly<Record<string, number>>): Uint8Array {
  const size = Math.ceil((fields.length * 4) / 16) * 16;
  const view = new DataView(new ArrayBuffer(size));
  fields.forEach((f, i) => {
    const v = values[f.name];
    if (v === undefined) throw new Error(`no value for uniform field ${f.name}`);
    if (f.type === "f32") view.setFloat32(i * 4, v, true);
    else if (f.type === "i32") view.setInt32(i * 4, v, true);
    else view.setUint32(i * 4, v, true);
  });
  return new Uint8Array(view.buffer);
}

function bytesOf(desc: TensorDesc): number {
  const elem = desc.dtype === "float16" ? 2 : 4;
  return desc.shape.reduce((a, b) => a * b, 1) * elem;
}

function shaderId(wgsl: string): string {
  return createHash("sha256").update(wgsl).digest("hex").slice(0, 12);
}

/** The full tunables record: spec defaults with the given overrides. */
export function resolveTunables(over?: PlanOptions["tunables"]): Record<TunableName, number> {
  const out = {} as Record<TunableName, number>;
  for (const [k, v] of Object.entries(SPEC.tunables) as [TunableName, { default: number }][]) out[k] = over?.[k] ?? v.default;
  return out;
}

/** Plans one PagedAttention call like the generated dispatcher will: variant, rendered shaders, bindings, workgroups. */
export function planPagedAttention(call: Call, device: PlanDevice, options: PlanOptions = {}): ManualPlanResult {
  const tunables = resolveTunables(options.tunables);
  const base = deriveValues(call, device, tunables);
  const variantId = chooseVariant(base, device.features);
  if (!variantId) throw new Error("no PagedAttention variant fits this call");
  const variant = SPEC.variants.find((v) => v.id === variantId);
  if (!variant) throw new Error(`variant ${variantId} missing from the spec`);
  const vd: Record<string, ContextValue> = { ...base };
  for (const [k, expr] of Object.entries(variant.derive ?? {})) vd[k] = evalOverride(expr, vd);

  const attrsScale = call.attrs?.scale;
  const tokenCount = base.tokenCount as number;
  const kvNumHeads = base.kvNumHeads as number;
  const numHeads = base.numHeads as number;
  const headSize = base.headSize as number;
  const numSplits = base.numSplits as number;
  const scatterCount = tokenCount * kvNumHeads * headSize;
  const uniformValues: Record<string, number> = {
    batchSize: base.batchSize as number,
    scatterCount,
    scale: typeof attrsScale === "number" ? attrsScale : 0,
  };
  const scatterGroups = ceilDiv(scatterCount, tunables.SCATTER_WORKGROUP_SIZE);
  const dispatch: Record<string, readonly [number, number, number]> = {
    scatter: [Math.min(scatterGroups, 65535), ceilDiv(scatterGroups, 65535), 1],
    main: [tokenCount, kvNumHeads, 1],
    split_attention: [tokenCount, kvNumHeads, numSplits],
    merge: [1, numHeads, tokenCount],
  };
  const scratchSizes: Record<string, number> = {
    partialOut: tokenCount * numHeads * numSplits * headSize * 4,
    partialStats: 2 * tokenCount * numHeads * numSplits * 4,
  };
  const tensorBytes = (id: string): number => {
    const desc = call.inputs[id] ?? (id === "outputT" ? { shape: [tokenCount, numHeads * headSize], dtype: "float16" } : undefined);
    if (!desc) throw new Error(`tensor ${id} is absent`);
    return bytesOf(desc);
  };

  const shaders: Record<string, string> = {};
  const contexts: Record<string, Record<string, unknown>> = {};
  const passes: PassPlan[] = [];
  if (tokenCount > 0) {
    for (const pass of variant.passes) {
      const pd: Record<string, ContextValue> = { ...vd };
      for (const [k, expr] of Object.entries(pass.derive ?? {})) pd[k] = evalOverride(expr, pd);
      const f16 = (variant.requires?.features ?? []).includes("shader-f16");
      const decls = resourceDeclarations(pass, pd, f16);
      const ctx = { ...pd, tunables: { ...tunables }, dtypes: { T: base.aScalar, S: "i32" }, DISPATCH_FOLD_WIDTH, env: { wgsl: { resourceDeclarations: decls } } };
      const wgsl = renderTemplate(pass.shader, ctx);
      const id = shaderId(wgsl);
      shaders[id] = wgsl;
      contexts[pass.id] = ctx;
      const bindings: BindingPlan[] = pass.bindings.map((ref, n) => {
        const b = bindingOf(ref);
        const type = bufferType(b);
        const name = bindingName(ref);
        if (b.struct) return { binding: n, name, type, resource: { kind: "uniform", bytes: uniformBytes(b.struct, uniformValues) } };
        if (b.scratch) {
          const size = scratchSizes[b.scratch];
          if (size === undefined) throw new Error(`unknown scratch ${b.scratch}`);
          return { binding: n, name, type, resource: { kind: "scratch", scratch: b.scratch, offset: 0, size } };
        }
        const tensor = b.arg ?? "";
        const kind = tensor in SPEC.inputs ? "input" : "output";
        return { binding: n, name, type, resource: { kind, tensor, offset: 0, size: tensorBytes(tensor) } };
      });
      const workgroups = dispatch[pass.id];
      if (!workgroups) throw new Error(`no dispatch for pass ${pass.id}`);
      passes.push({ id: pass.id, name: pass.name, shader: id, entryPoint: "main", bindings, workgroups });
    }
  }
  const isSplit = variantId.endsWith("_splitk");
  return {
    plan: {
      kernel: "com.microsoft.PagedAttention",
      variant: variantId,
      passes,
      scratch: isSplit && tokenCount > 0 ? Object.entries(scratchSizes).map(([id, size]) => ({ id, size })) : [],
      outputShapes: {
        outputT: [tokenCount, numHeads * headSize],
        keyCacheT: [...(call.inputs.keyCacheT?.shape ?? [])],
        valueCacheT: [...(call.inputs.valueCacheT?.shape ?? [])],
      },
    },
    shaders,
    contexts,
  };
}

/** The spec's variant/pass derive overrides are a derive name, a quoted string or a literal. */
function evalOverride(expr: string | boolean, values: Readonly<Record<string, ContextValue>>): ContextValue {
  if (typeof expr === "boolean") return expr;
  const quoted = /^"(.*)"$/.exec(expr);
  if (quoted) return quoted[1] ?? "";
  const v = values[expr];
  if (v === undefined) throw new Error(`override ${expr} names no derive value`);
  return v;
}
