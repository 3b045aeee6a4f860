/**
 * A hand-written stand-in for kernelc's generated SparseAttention dispatcher, used by the tests
 * until the compiler's back end exists. Everything the compiler will do for one call lives in
 * this one file so that the lead can swap in the generated dispatcher:
 *   - evaluate the spec's derive entries for the call (by hand, in TypeScript);
 *   - pick the variant per the spec's `when` conditions;
 *   - build each pass's render context per the template contract and render the template;
 *   - build `env.wgsl.resourceDeclarations`, uniform bytes, workgroups and the Plan.
 * Binding lists, element types, buffer types and uniform fields are read from
 * specs/SparseAttention.json itself; only expression evaluation is done by hand here.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import nunjucks from "nunjucks";
import type { BindingPlan, Call, PassPlan, Plan, TensorDesc } from "../../src/runtime/plan.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The folder the SparseAttention templates are rendered from. */
export const SPARSE_TEMPLATE_DIR = join(ROOT, "templates");
const SPEC_PATH = join(ROOT, "specs", "SparseAttention.json");

/** Device limits and features the plan is made for (a GPUDevice's own are fine). */
export interface SparsePlanDevice {
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

type TunableName = "WORKGROUP_SIZE" | "APPEND_WORKGROUP_SIZE";

/** Options of {@link planSparseAttention}: tunable overrides (the compiler pins them per profile). */
export interface SparsePlanOptions {
  readonly tunables?: Partial<Record<TunableName, number>>;
}

/** A render-context value: what the contract passes to templates. */
export type SparseContextValue = number | boolean | string;

/** The plan of one call, the WGSL of each shader id it names, and what the templates were given. */
export interface SparseManualPlanResult {
  readonly plan: Plan;
  readonly shaders: Readonly<Record<string, string>>;
  /** Per pass id: the render context (derive values, tunables, dtypes, env, ...). */
  readonly contexts: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

interface RawField {
  readonly name: string;
  readonly type: "u32" | "i32" | "f32";
  readonly value: string;
}

interface RawBinding {
  readonly arg?: string;
  readonly scratch?: string;
  readonly name?: string;
  readonly buffer?: "storage" | "read-only-storage" | "uniform";
  readonly elementType?: string;
  readonly struct?: readonly RawField[];
}

interface RawPass {
  readonly id: string;
  readonly name: string;
  readonly shader: string;
  readonly bindings: readonly (string | RawBinding)[];
}

interface RawVariant {
  readonly id: string;
  readonly when: readonly string[];
  readonly requires?: { readonly features?: readonly string[] };
  readonly intermediates?: readonly { readonly id: string; readonly dtype: string }[];
  readonly passes: readonly RawPass[];
}

interface RawSpec {
  readonly inputs: Readonly<Record<string, unknown>>;
  readonly outputs: Readonly<Record<string, unknown>>;
  readonly derive: Readonly<Record<string, string>>;
  readonly tunables: Readonly<Record<TunableName, { default: number }>>;
  readonly bindings: Readonly<Record<string, RawBinding>>;
  readonly variants: readonly RawVariant[];
}

const SPEC: RawSpec = JSON.parse(readFileSync(SPEC_PATH, "utf8")) as RawSpec;
const DISPATCH_FOLD_WIDTH = 65535;

const ENV = new nunjucks.Environment(new nunjucks.FileSystemLoader(SPARSE_TEMPLATE_DIR, { noCache: true }), {
  autoescape: false,
  throwOnUndefined: true,
  trimBlocks: true,
  lstripBlocks: true,
});

/** Renders one template per the contract: nunjucks, then trailing whitespace stripped and blank-line runs collapsed. */
export function renderSparseTemplate(shader: string, context: Readonly<Record<string, unknown>>): string {
  const raw = ENV.render(shader, { ...context });
  const out: string[] = [];
  for (const line of raw.split("\n").map((l) => l.replace(/\s+$/, ""))) {
    if (line === "" && (out.length === 0 || out[out.length - 1] === "")) continue;
    out.push(line);
  }
  while (out.length > 0 && out[out.length - 1] === "") out.pop();
  return out.join("\n") + "\n";
}

const ceilDiv = (a: number, b: number): number => Math.ceil(a / b);
/** The spec language's `/` on two ints: floor division (operands here are non-negative). */
const idiv = (a: number, b: number): number => Math.floor(a / b);

function dim(desc: TensorDesc | null | undefined, axis: number): number {
  if (!desc) throw new Error(`dim() of an absent tensor (axis ${axis})`);
  const d = desc.shape[axis];
  if (d === undefined) throw new Error(`tensor of rank ${desc.shape.length} has no axis ${axis}`);
  return d;
}

const rank = (desc: TensorDesc | null | undefined): number => desc?.shape.length ?? -1;
const sameShape = (a?: TensorDesc | null, b?: TensorDesc | null): boolean =>
  !!a && !!b && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
const ONNX_TO_WGSL: Readonly<Record<string, string>> = { float16: "f16", float32: "f32", int32: "i32" };

/**
 * Evaluates every derive entry of specs/SparseAttention.json for a call, by hand: the same
 * formulas, in the same order. `shapes.outputT` is the output shape expression's value.
 */
export function sparseDeriveValues(
  call: Call,
  device: SparsePlanDevice,
  tunables: Readonly<Record<TunableName, number>>,
): Record<string, SparseContextValue> {
  const inp = call.inputs;
  const lim = device.limits;
  const attrs = call.attrs ?? {};
  const numHeads = Number(attrs.num_heads);
  const kvNumHeads = Number(attrs.kv_num_heads);
  const doRotary = Number(attrs.do_rotary ?? 0);
  const rotaryInterleavedAttr = Number(attrs.rotary_interleaved ?? 0);
  const sparseBlockSizeAttr = Number(attrs.sparse_block_size);
  const present = (id: string): boolean => inp[id] !== null && inp[id] !== undefined;
  const query = inp.queryT;
  const dtypeT = ONNX_TO_WGSL[query?.dtype ?? ""] ?? "unknown";

  const batchSize = dim(query, 0);
  const seqLen = dim(query, 1);
  const headSize = dim(inp.pastKeyT, 3);
  const maxCacheSeq = dim(inp.pastKeyT, 2);
  const numLayout = dim(inp.blockRowIndicesT, 0);
  const maxBlocks = dim(inp.blockRowIndicesT, 1) - 1;
  const maxNnz = dim(inp.blockColIndicesT, 1);
  const qHidden = numHeads * headSize;
  const kvHidden = kvNumHeads * headSize;
  const qPerKv = idiv(numHeads, Math.max(1, kvNumHeads));
  const packedStride = qHidden + 2 * kvHidden;
  const usesRotary = doRotary === 1;
  const rotaryHalf = present("cosCacheT") ? dim(inp.cosCacheT, 1) : 0;
  const rotaryDim = 2 * rotaryHalf;

  const headLayoutOk =
    numHeads > 0 && kvNumHeads > 0 && numHeads % kvNumHeads === 0 && numLayout > 0 && numHeads % numLayout === 0 && sparseBlockSizeAttr > 0;
  const headSizeOk = headSize > 0 && headSize % 8 === 0 && (usesRotary ? headSize % 16 === 0 : true);
  const ioShapeOk = rank(query) === 3 && dtypeT === "f16";
  const separateKv =
    present("keyT") &&
    present("valueT") &&
    rank(inp.keyT) === 3 &&
    rank(inp.valueT) === 3 &&
    sameShape(inp.keyT, inp.valueT) &&
    dim(inp.keyT, 0) === batchSize &&
    dim(inp.keyT, 1) === seqLen &&
    dim(inp.keyT, 2) === kvHidden &&
    inp.keyT?.dtype === query?.dtype &&
    inp.valueT?.dtype === query?.dtype &&
    dim(query, 2) === qHidden;
  const packedKv = !present("keyT") && !present("valueT") && dim(query, 2) === packedStride;
  const cacheShapeOk =
    rank(inp.pastKeyT) === 4 &&
    rank(inp.pastValueT) === 4 &&
    sameShape(inp.pastValueT, inp.pastKeyT) &&
    dim(inp.pastKeyT, 0) === batchSize &&
    dim(inp.pastKeyT, 1) === kvNumHeads &&
    maxCacheSeq >= 1 &&
    inp.pastKeyT?.dtype === query?.dtype &&
    inp.pastValueT?.dtype === query?.dtype;
  const layoutShapeOk =
    rank(inp.blockRowIndicesT) === 2 &&
    rank(inp.blockColIndicesT) === 2 &&
    maxBlocks >= 1 &&
    dim(inp.blockColIndicesT, 0) === numLayout &&
    maxNnz >= 1 &&
    maxNnz <= maxBlocks * maxBlocks;
  const lengthsShapeOk =
    rank(inp.totalSequenceLengthT) === 1 &&
    dim(inp.totalSequenceLengthT, 0) === 1 &&
    rank(inp.keyTotalSequenceLengthsT) === 1 &&
    dim(inp.keyTotalSequenceLengthsT, 0) === batchSize;
  const rotaryOk = usesRotary
    ? present("cosCacheT") &&
      present("sinCacheT") &&
      rank(inp.cosCacheT) === 2 &&
      rank(inp.sinCacheT) === 2 &&
      sameShape(inp.sinCacheT, inp.cosCacheT) &&
      rotaryHalf >= 8 &&
      rotaryHalf % 8 === 0 &&
      rotaryDim <= headSize &&
      inp.cosCacheT?.dtype === query?.dtype &&
      inp.sinCacheT?.dtype === query?.dtype
    : !present("cosCacheT") && !present("sinCacheT");
  const indexFits = batchSize * seqLen * packedStride <= 2147483647 && batchSize * kvNumHeads * maxCacheSeq * headSize <= 2147483647;
  const sparseContractOk =
    headLayoutOk && headSizeOk && ioShapeOk && cacheShapeOk && layoutShapeOk && lengthsShapeOk && rotaryOk && indexFits;
  const appendCount = batchSize * kvNumHeads * seqLen * headSize;
  const rotaryCount = batchSize * seqLen * qHidden;
  const appendWorkgroupSize = tunables.APPEND_WORKGROUP_SIZE;
  const attnWorkgroupSize = tunables.WORKGROUP_SIZE;
  const packedQkv = !present("keyT");
  const attnQueryStride = usesRotary || !packedQkv ? qHidden : packedStride;
  const attnBlockChunk = 128;
  const attnStorageBytes = 4 * (qPerKv * headSize + qPerKv * attnWorkgroupSize + attnWorkgroupSize + 3 * attnBlockChunk + 2 * qPerKv + 4);
  const attnStorageFits = qPerKv <= 32 && attnStorageBytes <= lim.maxComputeWorkgroupStorageSize;
  const bindingLimit = Math.min(lim.maxStorageBufferBindingSize, lim.maxBufferSize);
  const bindingsFit =
    2 * batchSize * kvNumHeads * maxCacheSeq * headSize <= bindingLimit && 2 * batchSize * seqLen * packedStride <= bindingLimit;
  const maxWg = Math.min(lim.maxComputeWorkgroupsPerDimension, 65535);
  const dispatchFits =
    seqLen <= maxWg &&
    kvNumHeads <= maxWg &&
    batchSize <= maxWg &&
    ceilDiv(ceilDiv(appendCount, appendWorkgroupSize), 65535) <= maxWg &&
    ceilDiv(ceilDiv(rotaryCount, appendWorkgroupSize), 65535) <= maxWg &&
    attnWorkgroupSize <= lim.maxComputeInvocationsPerWorkgroup &&
    attnWorkgroupSize <= lim.maxComputeWorkgroupSizeX &&
    appendWorkgroupSize <= lim.maxComputeInvocationsPerWorkgroup &&
    appendWorkgroupSize <= lim.maxComputeWorkgroupSizeX;

  const values: Record<string, SparseContextValue> = {
    batchSize,
    seqLen,
    headSize,
    maxCacheSeq,
    numLayout,
    maxBlocks,
    maxNnz,
    qHidden,
    kvHidden,
    qPerKv,
    packedStride,
    usesRotary,
    rotaryHalf,
    rotaryDim,
    headLayoutOk,
    headSizeOk,
    ioShapeOk,
    separateKv,
    packedKv,
    cacheShapeOk,
    layoutShapeOk,
    lengthsShapeOk,
    rotaryOk,
    indexFits,
    sparseContractOk,
    appendCount,
    rotaryCount,
    appendWorkgroupSize,
    attnWorkgroupSize,
    attnQueryStride,
    attnBlockChunk,
    attnStorageBytes,
    attnStorageFits,
    bindingsFit,
    dispatchFits,
    scalar: dtypeT,
    cacheVec: dtypeT === "f16" ? "vec4<f16>" : "vec4<f32>",
    numHeads,
    kvNumHeads,
    sparseBlockSize: sparseBlockSizeAttr,
    packedQkv,
    rotaryInterleaved: rotaryInterleavedAttr === 1,
    kvSource: packedQkv ? "query" : "key",
    vSource: packedQkv ? "query" : "value",
  };
  const missing = Object.keys(SPEC.derive).filter((k) => !(k in values));
  if (missing.length > 0) throw new Error(`sparse-manual-plan does not evaluate derive entries: ${missing.join(", ")}`);
  return values;
}

/** Evaluates a variant `when` entry of the spec: a derive name, optionally negated with `not`. */
function whenHolds(cond: string, d: Readonly<Record<string, SparseContextValue>>): boolean {
  const m = /^(not\s+)?([A-Za-z_][A-Za-z0-9_]*)$/.exec(cond.trim());
  if (!m) throw new Error(`sparse-manual-plan cannot evaluate the condition "${cond}"`);
  const v = d[m[2]];
  if (typeof v !== "boolean") throw new Error(`condition ${m[2]} is not a boolean derive value`);
  return m[1] ? !v : v;
}

/** The variant the spec picks for these derive values (top-level `when`, then the first variant whose `when` holds), or undefined. */
export function chooseSparseVariant(d: Readonly<Record<string, SparseContextValue>>, features: SparsePlanDevice["features"]): string | undefined {
  if (!(d.sparseContractOk && d.dispatchFits && d.bindingsFit)) return undefined;
  const v = SPEC.variants.find(
    (variant) => variant.when.every((c) => whenHolds(c, d)) && (variant.requires?.features ?? []).every((f) => features.has(f)),
  );
  return v?.id;
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
  if (!t.startsWith("$")) return t;
  const v = ctx[t.slice(1)];
  if (typeof v !== "string") throw new Error(`elementType ${t} is not a string derive`);
  return v;
}

/** Builds `env.wgsl.resourceDeclarations` for a pass per the contract. */
export function sparseResourceDeclarations(pass: RawPass, ctx: Readonly<Record<string, unknown>>, f16: boolean): string {
  const lines: string[] = [];
  if (f16) lines.push("enable f16;", "");
  pass.bindings.forEach((ref, n) => {
    const b = bindingOf(ref);
    const name = bindingName(ref);
    if (b.struct) {
      const struct = name.charAt(0).toUpperCase() + name.slice(1);
      lines.push(`struct ${struct} {`, ...b.struct.map((f) => `  ${f.name}: ${f.type},`), "}");
      lines.push(`@group(0) @binding(${n}) var<uniform> ${name}: ${struct};`);
    } else {
      const access = bufferType(b) === "storage" ? "read_write" : "read";
      lines.push(`@group(0) @binding(${n}) var<storage, ${access}> ${name}: array<${elementType(b, ctx)}>;`);
    }
  });
  return lines.join("\n");
}

/** Evaluates a uniform field's value expression: a derive name, `NAME + 1`, or `attrs.scale`. */
function fieldValue(expr: string, d: Readonly<Record<string, SparseContextValue>>, call: Call): number {
  if (expr === "attrs.scale") return Number(call.attrs?.scale ?? 0);
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:\s*\+\s*(\d+))?$/.exec(expr.trim());
  if (!m) throw new Error(`sparse-manual-plan cannot evaluate the uniform value "${expr}"`);
  const v = d[m[1]];
  if (typeof v !== "number") throw new Error(`uniform value ${m[1]} is not a numeric derive value`);
  return v + Number(m[2] ?? 0);
}

function uniformBytes(fields: readonly RawField[], d: Readonly<Record<string, SparseContextValue>>, call: Call): Uint8Array {
  const view = new DataView(new ArrayBuffer(Math.ceil((fields.length * 4) / 16) * 16));
  fields.forEach((f, i) => {
    const v = fieldValue(f.value, d, call);
    if (f.type === "f32") view.setFloat32(i * 4, v, true);
    else if (f.type === "i32") view.setInt32(i * 4, v, true);
    else view.setUint32(i * 4, v, true);
  });
  return new Uint8Array(view.buffer);
}

function bytesOf(desc: TensorDesc): number {
  return desc.shape.reduce((a, b) => a * b, 1) * (desc.dtype === "float16" ? 2 : 4);
}

function shaderId(wgsl: string): string {
  return createHash("sha256").update(wgsl).digest("hex").slice(0, 12);
}

/** The full tunables record: spec defaults with the given overrides. */
export function resolveSparseTunables(over?: SparsePlanOptions["tunables"]): Record<TunableName, number> {
  const out = {} as Record<TunableName, number>;
  for (const [k, v] of Object.entries(SPEC.tunables) as [TunableName, { default: number }][]) out[k] = over?.[k] ?? v.default;
  return out;
}

/** Plans one SparseAttention call like the generated dispatcher will: variant, rendered shaders, bindings, workgroups. */
export function planSparseAttention(call: Call, device: SparsePlanDevice, options: SparsePlanOptions = {}): SparseManualPlanResult {
  const tunables = resolveSparseTunables(options.tunables);
  const d = sparseDeriveValues(call, device, tunables);
  const variantId = chooseSparseVariant(d, device.features);
  if (!variantId) throw new Error("no SparseAttention variant fits this call");
  const variant = SPEC.variants.find((v) => v.id === variantId)!;

  const batchSize = d.batchSize as number;
  const seqLen = d.seqLen as number;
  const numHeads = d.numHeads as number;
  const headSize = d.headSize as number;
  const folded = (count: number): readonly [number, number, number] => {
    const groups = ceilDiv(count, d.appendWorkgroupSize as number);
    return [Math.min(groups, 65535), ceilDiv(groups, 65535), 1];
  };
  const dispatch: Record<string, readonly [number, number, number]> = {
    append: folded(d.appendCount as number),
    rotate_q: folded(d.rotaryCount as number),
    attend: [seqLen, d.kvNumHeads as number, batchSize],
  };
  const outputDesc: TensorDesc = { shape: [batchSize, seqLen, numHeads * headSize], dtype: call.inputs.queryT?.dtype ?? "float16" };
  const tensorBytes = (id: string): number => {
    const desc = id === "outputT" ? outputDesc : call.inputs[id];
    if (!desc) throw new Error(`tensor ${id} is absent`);
    return bytesOf(desc);
  };

  // Intermediate shapes: the spec's only one is rotatedQuery, [batchSize * seqLen * qHidden].
  const scratchSizes: Record<string, number> = {};
  for (const im of variant.intermediates ?? []) {
    if (im.id !== "rotatedQuery" || im.dtype !== "float16") throw new Error(`unexpected intermediate ${im.id}`);
    scratchSizes[im.id] = batchSize * seqLen * (d.qHidden as number) * 2;
  }
  const shaders: Record<string, string> = {};
  const contexts: Record<string, Record<string, unknown>> = {};
  const passes: PassPlan[] = [];
  const f16 = (variant.requires?.features ?? []).includes("shader-f16");
  for (const pass of variant.passes) {
    const decls = sparseResourceDeclarations(pass, d, f16);
    const ctx = {
      ...d,
      tunables: { ...tunables },
      dtypes: { T: d.scalar, M: "i32" },
      DISPATCH_FOLD_WIDTH,
      env: { wgsl: { resourceDeclarations: decls } },
    };
    const wgsl = renderSparseTemplate(pass.shader, ctx);
    const id = shaderId(wgsl);
    shaders[id] = wgsl;
    contexts[pass.id] = ctx;
    const bindings: BindingPlan[] = pass.bindings.map((ref, n) => {
      const b = bindingOf(ref);
      const type = bufferType(b);
      const name = bindingName(ref);
      if (b.struct) return { binding: n, name, type, resource: { kind: "uniform", bytes: uniformBytes(b.struct, d, call) } };
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
  return {
    plan: {
      kernel: "com.microsoft.SparseAttention",
      variant: variantId,
      passes,
      scratch: Object.entries(scratchSizes).map(([id, size]) => ({ id, size })),
      outputShapes: {
        outputT: outputDesc.shape,
        pastKeyT: [...(call.inputs.pastKeyT?.shape ?? [])],
        pastValueT: [...(call.inputs.pastValueT?.shape ?? [])],
      },
    },
    shaders,
    contexts,
  };
}
