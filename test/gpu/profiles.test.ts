/// <reference types="@webgpu/types" />
/**
 * Profile-faithful GPU tests: for every default profile, a device with exactly that profile's
 * features (no shader-f16 and no subgroups where it lacks them) and its limits (clamped to the
 * adapter's where lavapipe has less; compat at Dawn's compatibility feature level), the profile's
 * own dispatcher and shaders (f16 native or packed in u32 pairs: docs/f16.md), and one case per
 * variant of PagedAttention and SparseAttention against the CPU references. Cache slots that no
 * visible key reads hold NaN, infinities and the largest f16 values, the outputs are poisoned, and
 * cache writes are compared bit for bit.
 *
 * One build for all profiles and one pipeline cache per device; the cases use small heads, so that
 * lavapipe compiles each shader quickly. A case whose plan (shaders, dispatch, uniforms) is the
 * same as on a profile tested before with a device of the same kind (feature level and features)
 * is not run again: the table names that profile.
 * The seed is printed; PROFILES_SEED=<n> replays a run. The table printed at the end names
 * profile × variant × case × max error.
 */
import { afterAll, describe, expect, test } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { lintPaths, makeCheckContext } from "../../src/api/lint.js";
import { workgroupFacts } from "../../src/emit/wgsl-limits.js";
import type { CheckedKernel } from "../../src/model/checked.js";
import type { Call, Plan, TensorDesc } from "../../src/model/plan.js";
import { loadConfig } from "../../src/plan/config.js";
import { f16StorageFor } from "../../src/plan/f16-storage.js";
import { DEFAULT_PROFILES, type Profile } from "../../src/plan/profiles.js";
import { pagedAttentionReference } from "../../src/reference/paged-attention.js";
import { buildSparseLayout, sparseAttentionReference, visibleKeys } from "../../src/reference/sparse-attention.js";
import { executePlan } from "../../src/runtime/execute.js";
import { f16ArrayToF32, f16ToF32, f32ArrayToF16, f32ToF16 } from "../../src/runtime/f16.js";
import { PipelineCache } from "../../src/runtime/pipeline-cache.js";
import * as path from "node:path";
import {
  createBuffer,
  getGpuAdapter,
  getProfileDevice as profileDevice,
  poisonBuffer,
  readBuffer,
  uploadBuffer,
  type ProfileDevice,
  orderedF16,
} from "../support/gpu.js";
import { importDispatcher, repoRoot } from "../support/project-build.js";
import { instancesForCalls, type CallInstance } from "../support/compiled-plan.js";
import { rng } from "../support/rng.js";

// The desktop profiles' PagedAttention at head size 128 (the row design) takes its subgroup
// shuffle path only where a 32-invocation workgroup is one 32-lane subgroup (NVIDIA, AMD, Apple;
// the H200); elsewhere it runs its key-per-lane fallback. lavapipe cannot run that path: by
// default its subgroups have 8 lanes, and with LP_NATIVE_VECTOR_WIDTH=1024 it reports 32-lane
// subgroups but numbers the invocations of a 32-invocation workgroup 0..15 twice
// (subgroup_invocation_id), so the design's guard takes the fallback (docs/testing.md).
const probe = await getGpuAdapter();
/** Whether the adapter's subgroups are 32 wide everywhere, so that the row design takes its shuffle path (the H200). */
const ROW_DESIGN_RUNS = (probe?.info.subgroupMinSize ?? 0) >= 32;
const SEED = process.env.PROFILES_SEED ? Number(process.env.PROFILES_SEED) : Math.floor(Math.random() * 2 ** 31);
const TOL = 5e-3;
/** Amplitude of queries and keys (a packed QKV row's V part too): see `values`. */
const QK_AMPLITUDE = 3;
/** What slots no visible key reads hold: NaN, +Inf, -Inf, ±65504 (the largest f16), a NaN with another payload. */
const GARBAGE_F16 = [0x7e00, 0x7c00, 0xfc00, 0x7bff, 0xfbff, 0x7d01];

// ---------------------------------------------------------------- PagedAttention cases

interface PagedCase {
  readonly variant: string;
  readonly N: number;
  readonly Nkv: number;
  readonly H: number;
  readonly bs: number;
  readonly past: readonly number[];
  readonly fresh: readonly number[];
  /** block_table columns (entries past a sequence's blocks are garbage). */
  readonly maxBlocks: number;
}

/**
 * Every variant once. The single-pass cases are a mixed prefill/decode batch with blocks of 16
 * (the tiled design) and a key ceiling under 256, so split-K cannot apply; the split-K cases are
 * decode steps with long histories and blocks of 32 (the key-per-lane design), so the default
 * tunables split them in two.
 */
const PAGED_CASES: readonly PagedCase[] = ["separate_derived", "separate_slot", "packed_derived", "packed_slot"].flatMap((base) => [
  { variant: base, N: 4, Nkv: 2, H: 64, bs: 16, past: [5, 20, 0], fresh: [3, 1, 4], maxBlocks: 3 },
  { variant: `${base}_splitk`, N: 4, Nkv: 2, H: 64, bs: 32, past: [300, 150], fresh: [1, 1], maxBlocks: 10 },
  // The row design (split-K decode, head size 128, on profiles with subgroups), in both f16 forms;
  // two query heads per KV head keep its unrolled code small enough for lavapipe to compile quickly.
  // The variants share the attention shader (the query row length comes from the call), so two of
  // them (separate KV with derived slots, packed QKV with a slot mapping) cover its inputs.
  ...(ROW_DESIGN_RUNS && (base === "separate_derived" || base === "packed_slot")
    ? [{ variant: `${base}_splitk`, N: 4, Nkv: 2, H: 128, bs: 16, past: [300, 90], fresh: [1, 1], maxBlocks: 20 }]
    : []),
]);

interface PagedData {
  readonly call: Call;
  readonly tensors: Record<string, Uint16Array | Int32Array>;
  readonly args: Parameters<typeof pagedAttentionReference>[0];
}

function pagedData(c: PagedCase, rand: () => number): PagedData {
  const packed = c.variant.startsWith("packed");
  const slots = c.variant.includes("_slot");
  const B = c.past.length;
  const cum = new Int32Array(B + 1);
  for (let b = 0; b < B; b++) cum[b + 1] = cum[b] + c.fresh[b];
  const T = cum[B];
  const blocksOf = c.past.map((p, b) => Math.ceil((p + c.fresh[b]) / c.bs));
  const numBlocks = 2 * blocksOf.reduce((x, y) => x + y, 0) + 1;
  const perm = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = perm.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [perm[i], perm[j]] = [perm[j], perm[i]];
  }
  const blockTable = new Int32Array(B * c.maxBlocks);
  let next = 0;
  for (let b = 0; b < B; b++)
    for (let l = 0; l < c.maxBlocks; l++)
      blockTable[b * c.maxBlocks + l] = l < blocksOf[b] ? perm[next++] : rand() < 0.5 ? -1 : 1_000_000 + l;
  const slotMapping = new Int32Array(T);
  const rowElems = c.Nkv * c.H;
  const cacheElems = numBlocks * c.bs * rowElems;
  // The slots a visible key reads: positions [0, past + fresh) of each sequence through its table.
  const visible = new Uint8Array(numBlocks * c.bs);
  for (let b = 0; b < B; b++) {
    for (let pos = 0; pos < c.past[b] + c.fresh[b]; pos++)
      visible[blockTable[b * c.maxBlocks + Math.floor(pos / c.bs)] * c.bs + (pos % c.bs)] = 1;
    for (let t = cum[b]; t < cum[b + 1]; t++) {
      const pos = c.past[b] + t - cum[b];
      slotMapping[t] = blockTable[b * c.maxBlocks + Math.floor(pos / c.bs)] * c.bs + (pos % c.bs);
    }
  }
  // Queries and keys in [-3, 3]: logits with a standard deviation of about 3 after the 1/sqrt(H)
  // scale, a peaked softmax as in trained models (values in [-1, 1] would give an almost flat one).
  const values = (n: number, amplitude = 1): Uint16Array =>
    f32ArrayToF16(Float32Array.from({ length: n }, () => (rand() * 2 - 1) * amplitude));
  const cache = (amplitude = 1): Uint16Array => {
    const v = values(cacheElems, amplitude);
    for (let slot = 0; slot < visible.length; slot++) {
      if (!visible[slot]) for (let e = 0; e < rowElems; e++) v[slot * rowElems + e] = GARBAGE_F16[(slot + e) % GARBAGE_F16.length];
    }
    return v;
  };
  const qWidth = packed ? (c.N + 2 * c.Nkv) * c.H : c.N * c.H;
  const query = values(T * qWidth, QK_AMPLITUDE);
  const key = packed ? null : values(T * rowElems, QK_AMPLITUDE);
  const value = packed ? null : values(T * rowElems);
  const keyCache = cache(QK_AMPLITUDE);
  const valueCache = cache();
  const f16 = (shape: number[]): TensorDesc => ({ shape, dtype: "float16" });
  const i32 = (shape: number[]): TensorDesc => ({ shape, dtype: "int32" });
  const tensors: Record<string, Uint16Array | Int32Array> = {
    queryT: query,
    keyCacheT: keyCache,
    valueCacheT: valueCache,
    cumulativeSequenceLengthT: cum,
    pastSeqlensT: Int32Array.from(c.past),
    blockTableT: blockTable,
  };
  if (key && value) Object.assign(tensors, { keyT: key, valueT: value });
  if (slots) tensors.slotMappingT = slotMapping;
  const call: Call = {
    inputs: {
      queryT: f16([T, qWidth]),
      keyT: key ? f16([T, rowElems]) : null,
      valueT: value ? f16([T, rowElems]) : null,
      keyCacheT: f16([numBlocks, c.bs, c.Nkv, c.H]),
      valueCacheT: f16([numBlocks, c.bs, c.Nkv, c.H]),
      cumulativeSequenceLengthT: i32([B + 1]),
      pastSeqlensT: i32([B]),
      blockTableT: i32([B, c.maxBlocks]),
      slotMappingT: slots ? i32([T]) : null,
    },
    outputs: { outputT: f16([T, c.N * c.H]) },
    attrs: { num_heads: c.N, kv_num_heads: c.Nkv },
  };
  const args = {
    numHeads: c.N,
    kvNumHeads: c.Nkv,
    query: f16ArrayToF32(query),
    key: key && f16ArrayToF32(key),
    value: value && f16ArrayToF32(value),
    keyCache: f16ArrayToF32(keyCache),
    valueCache: f16ArrayToF32(valueCache),
    blockSize: c.bs,
    headSize: c.H,
    cumulativeSequenceLength: cum,
    pastSeqlens: Int32Array.from(c.past),
    blockTable,
    slotMapping: slots ? slotMapping : null,
  };
  return { call, tensors, args };
}

// ---------------------------------------------------------------- SparseAttention cases

interface SparseCase {
  readonly variant: string;
  readonly S: number;
  readonly past?: number;
  readonly maxCacheSeq: number;
  /** [numLayout, localBlocks, vertStride] */
  readonly layout: readonly [number, number, number];
}

const SPARSE = { B: 1, N: 4, Nkv: 2, H: 32, sbs: 16 } as const;

/** Every variant once: prompts of 20 tokens (a key ceiling of 64: one split), decode steps at 600 (two splits). */
const SPARSE_CASES: readonly SparseCase[] = ["separate", "separate_rotary", "packed", "packed_rotary"].flatMap((base) => [
  { variant: base, S: 20, maxCacheSeq: 64, layout: [2, 1, 2] as const },
  { variant: `${base}_splitk`, S: 1, past: 600, maxCacheSeq: 640, layout: [2, 2, 4] as const },
]);

interface SparseData {
  readonly call: Call;
  readonly tensors: Record<string, Uint16Array | Int32Array>;
  readonly inputs: Parameters<typeof sparseAttentionReference>[0];
  readonly attrs: Parameters<typeof sparseAttentionReference>[1];
  /** Cache rows (b, kv head, position) the call writes. */
  readonly written: Uint8Array;
}

function sparseData(c: SparseCase, rand: () => number): SparseData {
  const { B, N, Nkv, H, sbs } = SPARSE;
  const packed = c.variant.startsWith("packed");
  const rotary = c.variant.includes("rotary");
  const layout = buildSparseLayout(c.layout[0], Math.ceil(c.maxCacheSeq / sbs), c.layout[1], c.layout[2]);
  const past = c.past ?? 0;
  const total = past + c.S;
  const qStride = packed ? (N + 2 * Nkv) * H : N * H;
  const half = rotary ? H / 2 : 0;
  // Queries and keys in [-3, 3]: logits with a standard deviation of about 3 after the 1/sqrt(H)
  // scale, a peaked softmax as in trained models (values in [-1, 1] would give an almost flat one).
  const values = (n: number, amplitude = 1): Uint16Array =>
    f32ArrayToF16(Float32Array.from({ length: n }, () => (rand() * 2 - 1) * amplitude));
  // Rows some query reads before this call writes it, per (b, kv head, position); the rest is garbage.
  const read = new Uint8Array(B * Nkv * c.maxCacheSeq);
  const written = new Uint8Array(B * Nkv * c.maxCacheSeq);
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < N; h++) {
      const kvh = Math.floor(h / (N / Nkv));
      for (let qa = past; qa < total; qa++)
        for (const k of visibleKeys(layout, h % layout.numLayout, qa, sbs))
          if (k < c.maxCacheSeq) read[(b * Nkv + kvh) * c.maxCacheSeq + k] = 1;
    }
    for (let kvh = 0; kvh < Nkv; kvh++) for (let p = past; p < total; p++) written[(b * Nkv + kvh) * c.maxCacheSeq + p] = 1;
  }
  const cache = (amplitude = 1): Uint16Array => {
    const v = values(B * Nkv * c.maxCacheSeq * H, amplitude);
    for (let row = 0; row < read.length; row++) {
      if (!read[row] || written[row]) for (let d = 0; d < H; d++) v[row * H + d] = GARBAGE_F16[(row + d) % GARBAGE_F16.length];
    }
    return v;
  };
  const angles = Float32Array.from({ length: c.maxCacheSeq * half }, () => rand() * 2 * Math.PI);
  const cos = f32ArrayToF16(angles.map((a) => Math.cos(a)));
  const sin = f32ArrayToF16(angles.map((a) => Math.sin(a)));
  const query = values(B * c.S * qStride, QK_AMPLITUDE);
  const key = packed ? undefined : values(B * c.S * Nkv * H, QK_AMPLITUDE);
  const value = packed ? undefined : values(B * c.S * Nkv * H);
  const pastKey = cache(QK_AMPLITUDE);
  const pastValue = cache();
  const tensors: Record<string, Uint16Array | Int32Array> = {
    queryT: query,
    pastKeyT: pastKey,
    pastValueT: pastValue,
    blockRowIndicesT: layout.rowIndices,
    blockColIndicesT: layout.colIndices,
    totalSequenceLengthT: Int32Array.from([total]),
    keyTotalSequenceLengthsT: Int32Array.from([total]),
  };
  if (key && value) Object.assign(tensors, { keyT: key, valueT: value });
  if (rotary) Object.assign(tensors, { cosCacheT: cos, sinCacheT: sin });
  const f16 = (shape: number[]): TensorDesc => ({ shape, dtype: "float16" });
  const i32 = (shape: number[]): TensorDesc => ({ shape, dtype: "int32" });
  const cacheShape = [B, Nkv, c.maxCacheSeq, H];
  const call: Call = {
    inputs: {
      queryT: f16([B, c.S, qStride]),
      keyT: key ? f16([B, c.S, Nkv * H]) : null,
      valueT: value ? f16([B, c.S, Nkv * H]) : null,
      pastKeyT: f16(cacheShape),
      pastValueT: f16(cacheShape),
      blockRowIndicesT: i32([layout.numLayout, layout.maxBlocks + 1]),
      blockColIndicesT: i32([layout.numLayout, layout.maxNnz]),
      totalSequenceLengthT: i32([1]),
      keyTotalSequenceLengthsT: i32([B]),
      cosCacheT: rotary ? f16([c.maxCacheSeq, half]) : null,
      sinCacheT: rotary ? f16([c.maxCacheSeq, half]) : null,
    },
    outputs: { outputT: f16([B, c.S, N * H]) },
    attrs: { num_heads: N, kv_num_heads: Nkv, scale: 0, sparse_block_size: sbs, do_rotary: rotary ? 1 : 0, rotary_interleaved: 0 },
  };
  const inputs = {
    batchSize: B,
    seqLen: c.S,
    headSize: H,
    maxCacheSeq: c.maxCacheSeq,
    query: f16ArrayToF32(query),
    key: key && f16ArrayToF32(key),
    value: value && f16ArrayToF32(value),
    pastKey: f16ArrayToF32(pastKey),
    pastValue: f16ArrayToF32(pastValue),
    layout,
    totalSequenceLength: total,
    keyTotalSequenceLengths: [total],
    cosCache: rotary ? f16ArrayToF32(cos) : undefined,
    sinCache: rotary ? f16ArrayToF32(sin) : undefined,
    rotaryHalf: half || undefined,
  };
  const attrs = { numHeads: N, kvNumHeads: Nkv, scale: 0, sparseBlockSize: sbs, doRotary: rotary, rotaryInterleaved: false };
  return { call, tensors, inputs, attrs, written };
}

// ---------------------------------------------------------------- the build

/** The calls of every case (values do not matter for the build: only shapes, presence and attributes). */
const CALLS: Record<string, Call[]> = {
  PagedAttention: PAGED_CASES.map((c) => pagedData(c, rng(1)).call),
  SparseAttention: SPARSE_CASES.map((c) => sparseData(c, rng(1)).call),
};

/** One instance per call: the values of every run-time leaf the kernel's templates depend on. */
function instancesOf(kernel: CheckedKernel, calls: readonly Call[]): CallInstance[] {
  const facts = {
    dtypes: Object.fromEntries(kernel.spec.typeConstraints.map((tc) => [tc.name, tc.types[0]])),
    tunables: {},
    limits: {},
    features: new Set<string>(),
  };
  return instancesForCalls(kernel, facts, calls, "case");
}

/** This repository's specs and templates built for the nine default profiles, with the cases' instances. */
async function buildForCases(): Promise<CompileResult> {
  const loaded = loadConfig(repoRoot);
  const lint = lintPaths([path.resolve(repoRoot, loaded.config.specs)], makeCheckContext(path.resolve(repoRoot, loaded.config.templates)));
  const instances = Object.fromEntries(
    Object.entries(CALLS).map(([name, calls]) => [
      name,
      instancesOf(
        lint.kernels.find((k) => k.spec.name === name)!,
        calls,
      ),
    ]),
  );
  const build = await compile(
    { ...loaded, config: { ...loaded.config, instances, tunables: {} } },
    { profiles: DEFAULT_PROFILES.map((p) => p.name) },
  );
  const errors = build.diagnostics.filter((d) => d.severity === "error");
  if (errors.length) throw new Error(errors.map((d) => `${d.code}: ${d.message}`).join("\n"));
  return build;
}

// ---------------------------------------------------------------- devices

/** A plan as text: two profiles with the same text run the same GPU work. */
function planKey(plan: Plan): string {
  return JSON.stringify(plan);
}

describe.runIf(probe)("every default profile on lavapipe, with its own features, limits and shaders", () => {
  const table: string[] = [];
  /** The first profile each (case, plan) ran on. */
  const ranOn = new Map<string, string>();
  let build: Promise<CompileResult> | undefined;
  const built = (): Promise<CompileResult> => (build ??= buildForCases());
  console.log(`profiles GPU test seed: ${SEED} (replay with PROFILES_SEED=${SEED})`);
  afterAll(() => {
    if (table.length) console.log(["profile | f16 | variant | case | max |err| | max err/tol", ...table].join("\n"));
  });

  for (const [pi, profile] of DEFAULT_PROFILES.entries()) {
    describe(profile.name, () => {
      let dev: ProfileDevice | undefined;
      let cache: PipelineCache | undefined;
      let shaders: ReadonlyMap<string, string> = new Map();
      let planners: Record<string, (c: Call) => Plan> = {};
      const storage = f16StorageFor(profile.features);
      // Devices of one kind (feature level and features) run a plan alike; another kind runs it again.
      const deviceKind = `${profile.compatibilityMode ? "compatibility" : "core"}:${[...profile.features].sort().join(",")}`;
      afterAll(() => dev?.device.destroy());

      const setup = async (): Promise<ProfileDevice> => {
        if (dev) return dev;
        const result = await built();
        shaders = new Map([...result.files].filter(([f]) => f.startsWith("shaders/")).map(([f, t]) => [f.slice(8, -5), t]));
        planners = (await importDispatcher(result.files.get(`${profile.name}/dispatcher.ts`)!)).planners as Record<
          string,
          (c: Call) => Plan
        >;
        dev = await profileDevice(profile);
        if (!dev) throw new Error("no adapter");
        cache = new PipelineCache(dev.device, (id) => shaders.get(id) ?? "");
        if (dev.clamped.length) console.log(`${profile.name}: limits clamped to the adapter's: ${dev.clamped.join(", ")}`);
        return dev;
      };

      /** Runs a plan; outputs and scratch poisoned; returns every tensor's bytes after the run. */
      const run = async (
        plan: Plan,
        tensors: Record<string, Uint16Array | Int32Array>,
        outBytes: number,
      ): Promise<Record<string, ArrayBuffer>> => {
        const device = dev!.device;
        const buffers: Record<string, GPUBuffer> = {};
        for (const [id, data] of Object.entries(tensors)) buffers[id] = uploadBuffer(device, data);
        buffers.outputT = createBuffer(device, outBytes);
        poisonBuffer(device, buffers.outputT);
        const held = Object.values(plan.scratch).map((size) => cache!.scratchPool.acquire(Math.max(size, 4)));
        for (const b of held) poisonBuffer(device, b);
        cache!.scratchPool.release(...held);
        await executePlan(device, cache!, plan, buffers, { checkErrors: true });
        const out: Record<string, ArrayBuffer> = {};
        for (const [id, b] of Object.entries(buffers))
          out[id] = await readBuffer(device, b, 0, id === "outputT" ? outBytes : tensors[id].byteLength);
        for (const b of Object.values(buffers)) b.destroy();
        cache!.scratchPool.trim();
        return out;
      };

      /** Whether a plan's shaders fit the device's workgroup storage (lavapipe has 32 KiB where desktop-48k/64k have more). */
      const fitsDevice = (plan: Plan): string | undefined => {
        const limit = dev!.device.limits.maxComputeWorkgroupStorageSize;
        for (const p of plan.passes) {
          const bytes = workgroupFacts(shaders.get(p.shader) ?? "").workgroupStorageBytes;
          if (bytes !== undefined && bytes > limit)
            return `pass ${p.id} needs ${bytes} bytes of workgroup storage, the device has ${limit}`;
        }
        return undefined;
      };

      /** Output error against the reference, as the max |err| and the max of err / (TOL + TOL |want|). */
      const outputError = (got: ArrayBuffer, want: ArrayLike<number>): { maxErr: number; maxRatio: number; worst: number } => {
        const out = new Uint16Array(got);
        let maxErr = 0;
        let maxRatio = 0;
        let worst = -1;
        for (let k = 0; k < want.length; k++) {
          const err = Math.abs(f16ToF32(out[k]) - want[k]);
          const ratio = err / (TOL + TOL * Math.abs(want[k]));
          if (!(ratio <= maxRatio)) {
            maxRatio = Number.isNaN(ratio) ? Infinity : ratio;
            worst = k;
          }
          if (!(err <= maxErr)) maxErr = Number.isNaN(err) ? Infinity : err;
        }
        return { maxErr, maxRatio, worst };
      };

      /**
       * Cache elements that differ: written ones by value from the reference (copies exactly,
       * computed values such as rotated keys within `ulps` f16 steps), the rest bit for bit from the input.
       */
      const cacheMismatches = (
        got: ArrayBuffer,
        input: Uint16Array,
        want: ArrayLike<number>,
        written: (k: number) => boolean,
        ulps = 0,
      ): string[] => {
        const bits = new Uint16Array(got);
        const bad: string[] = [];
        for (let k = 0; k < input.length && bad.length < 3; k++) {
          const ok = written(k) ? Math.abs(orderedF16(bits[k]) - orderedF16(f32ToF16(want[k]))) <= ulps : bits[k] === input[k];
          if (!ok)
            bad.push(
              `element ${k} (${written(k) ? "written" : "kept"}): 0x${bits[k].toString(16)}, want ${written(k) ? want[k] : `0x${input[k].toString(16)}`}`,
            );
        }
        return bad;
      };

      for (const [ci, c] of PAGED_CASES.entries()) {
        test(`PagedAttention ${c.variant} H${c.H}`, async () => {
          await setup();
          const d = pagedData(c, rng(SEED + 7919 * ci + 104729 * pi));
          const plan = planners.PagedAttention(d.call);
          expect(plan.variant).toBe(c.variant);
          const summary = `H${c.H} bs${c.bs} past=[${c.past}] new=[${c.fresh}]`;
          const key = `paged ${ci} ${deviceKind} ${planKey(plan)}`;
          const skip = ranOn.has(key) ? `same plan and shaders as on ${ranOn.get(key)}` : fitsDevice(plan);
          if (skip) {
            table.push(`${profile.name} | ${storage} | ${c.variant} | ${summary} | not run: ${skip} |`);
            return;
          }
          ranOn.set(key, profile.name);
          const T = d.args.cumulativeSequenceLength[c.past.length];
          const got = await run(plan, d.tensors, T * c.N * c.H * 2);
          const ref = pagedAttentionReference(d.args);
          const e = outputError(got.outputT, ref.output);
          table.push(`${profile.name} | ${storage} | ${c.variant} | ${summary} | ${e.maxErr.toExponential(2)} | ${e.maxRatio.toFixed(3)}`);
          expect(e.maxRatio, `seed ${SEED}: worst output element ${e.worst}`).toBeLessThanOrEqual(1);
          for (const [id, want] of [
            ["keyCacheT", ref.keyCache],
            ["valueCacheT", ref.valueCache],
          ] as const) {
            expect(
              cacheMismatches(got[id], d.tensors[id] as Uint16Array, want, (k) => ref.written[k] === 1),
              `seed ${SEED}: ${id}`,
            ).toEqual([]);
          }
        }, 600_000);
      }

      for (const [ci, c] of SPARSE_CASES.entries()) {
        test(`SparseAttention ${c.variant}`, async () => {
          await setup();
          const d = sparseData(c, rng(SEED + 15485863 * ci + 104729 * pi));
          const plan = planners.SparseAttention(d.call);
          expect(plan.variant).toBe(c.variant);
          const summary = `H${SPARSE.H} S=${c.S} past=${c.past ?? 0} cache ${c.maxCacheSeq}`;
          const key = `sparse ${ci} ${deviceKind} ${planKey(plan)}`;
          const skip = ranOn.has(key) ? `same plan and shaders as on ${ranOn.get(key)}` : fitsDevice(plan);
          if (skip) {
            table.push(`${profile.name} | ${storage} | ${c.variant} | ${summary} | not run: ${skip} |`);
            return;
          }
          ranOn.set(key, profile.name);
          const got = await run(plan, d.tensors, SPARSE.B * c.S * SPARSE.N * SPARSE.H * 2);
          const ref = sparseAttentionReference(d.inputs, d.attrs);
          const e = outputError(got.outputT, ref.output);
          table.push(`${profile.name} | ${storage} | ${c.variant} | ${summary} | ${e.maxErr.toExponential(2)} | ${e.maxRatio.toFixed(3)}`);
          expect(e.maxRatio, `seed ${SEED}: worst output element ${e.worst}`).toBeLessThanOrEqual(1);
          const written = (k: number): boolean => d.written[Math.floor(k / SPARSE.H)] === 1;
          // Rotated keys are computed in f32 and rounded once (pack2x16float or f16()): one f16 step of rounding.
          expect(
            cacheMismatches(got.pastKeyT, d.tensors.pastKeyT as Uint16Array, ref.presentKey, written, c.variant.includes("rotary") ? 1 : 0),
            `seed ${SEED}: present key`,
          ).toEqual([]);
          expect(
            cacheMismatches(got.pastValueT, d.tensors.pastValueT as Uint16Array, ref.presentValue, written),
            `seed ${SEED}: present value`,
          ).toEqual([]);
        }, 120_000);
      }
    });
  }
});
