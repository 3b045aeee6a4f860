/// <reference types="@webgpu/types" />
/**
 * com.microsoft.SparseAttention on a real WebGPU implementation (Dawn on Mesa lavapipe), against
 * the CPU reference. (Tint validation of the shader grid: sparse-attention-tint.test.ts.)
 * Every case runs twice: the single-pass variant (MAX_SPLITS 1 rules split-K out) and the split-K
 * variant (SPLIT_MIN_KEYS 16 makes even a 48-key cache split, so many splits are empty;
 * SPLIT_TARGET_WORKGROUPS 1024 lets the prompt cases split too).
 *
 * Inputs are fresh random values each run; the seed is printed and SPARSE_SEED=<n> replays it.
 */
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { globals } from "webgpu";
import { PipelineCache } from "../../src/runtime/pipeline-cache.js";
import { executePlan } from "../../src/runtime/execute.js";
import { f16ToF32, f32ArrayToF16 } from "../../src/runtime/f16.js";
import { ScratchPool } from "../../src/runtime/scratch-pool.js";
import { makeSparseCase, sparseCacheErrors, sparseCaseReference, type SparseCase } from "../support/sparse-cases.js";
import { expectNoUncapturedErrors, getGpuDevice, poisonBuffer, poisonBufferCycle, readBuffer, uploadBuffer } from "../support/gpu.js";
import { compileForCalls } from "../support/compiled-plan.js";
import { rng } from "../support/rng.js";

/** The profile lavapipe's adapter selects (32 KiB workgroup storage, 1024 invocations, shader-f16, 128 MiB bindings). */
const LAVAPIPE_PROFILE = "mobile-1024-f16";

Object.assign(globalThis, globals);

const SEED = process.env.SPARSE_SEED ? Number(process.env.SPARSE_SEED) : Date.now() % 2 ** 31;
console.log(`sparse-attention GPU test seed: ${SEED} (replay with SPARSE_SEED=${SEED})`);

/** fp16 attention: |got - want| <= TOL + TOL * |want| (atol = rtol = 5e-3). */
const TOL = 5e-3;

/** The sizes (N, Nkv, H, block size) of attention shaders A and B, C and G, which several cases share. */
const SIZES_AB = { N: 4, Nkv: 2, H: 32, sbs: 16 } as const;
const SIZES_C = { N: 4, Nkv: 1, H: 64, sbs: 64 } as const;
const SIZES_G = { N: 8, Nkv: 1, H: 16, sbs: 8 } as const;

// Compiling the attention shader dominates the run time on lavapipe (seconds per shader), so the
// cases share shaders: it specializes on (N, Nkv, H, block size, workgroup size, query stride)
// only, and the query stride is the plain Q row whenever rotary is on or QKV is separate.
const CASES: readonly SparseCase[] = [
  // Attention shader A: N=4, Nkv=2, H=32, block 16.
  {
    name: "golden CSR, prompt, separate",
    B: 1,
    S: 64,
    ...SIZES_AB,
    maxCacheSeq: 64,
    layout: "golden",
    rotary: "off",
    packed: false,
  },
  {
    name: "prompt, 4 layouts, split rotary, packed, padded key totals, hostile CSR",
    B: 2,
    S: 80,
    ...SIZES_AB,
    maxCacheSeq: 128,
    layout: [4, 2, 3],
    rotary: "split",
    packed: true,
    hostileCsr: true,
  },
  {
    name: "decode S=1 at 15/16/63 (block edges), interleaved rotary, separate",
    B: 3,
    S: 1,
    ...SIZES_AB,
    maxCacheSeq: 80,
    layout: [2, 1, 2],
    past: [15, 16, 63],
    rotary: "interleaved",
    packed: false,
  },
  {
    name: "decode past 2100 (two 128-block chunks), split rotary, separate",
    B: 1,
    S: 1,
    ...SIZES_AB,
    maxCacheSeq: 2112,
    layout: [2, 2, 4],
    past: [2100],
    rotary: "split",
    packed: false,
  },
  // ops.md's past_b edges on shader A's attention: a row past the cache's end (batch 0 writes
  // positions 63 and 64 of a 64-row cache: the second is dropped, not written into the next KV
  // head's row 0, which layout 1's heads read), a decode key total below S (past clamped to 0).
  {
    name: "decode S=2, a row past the cache's end, a key total below S, separate",
    B: 3,
    S: 2,
    ...SIZES_AB,
    maxCacheSeq: 64,
    layout: [2, 1, 2],
    past: [63, -1, 30],
    rotary: "off",
    packed: false,
  },
  // A sparse block size that is not a power of two, and split (NeoX) rotary over part of the head
  // (R = 16 of H = 32: pairs d, d + 8; channels 16..31 pass through).
  {
    name: "decode S=2 at 22/47/70, sbs 24, partial split rotary (R = 16 of H = 32), separate",
    B: 3,
    S: 2,
    N: 4,
    Nkv: 2,
    H: 32,
    sbs: 24,
    maxCacheSeq: 96,
    layout: [2, 1, 2],
    past: [22, 47, 70],
    rotary: "split",
    rotaryDim: 16,
    packed: false,
  },
  // Shader B: as A with the packed query row.
  {
    name: "golden CSR, decode S=2 crossing blocks, packed",
    B: 2,
    S: 2,
    ...SIZES_AB,
    maxCacheSeq: 64,
    layout: "golden",
    past: [15, 46],
    rotary: "off",
    packed: true,
  },
  // Shader C: GQA 4 query heads per KV head, H=64, block 64.
  {
    name: "decode S=3, partial interleaved rotary, scale 0.3, sbs 64, G=4",
    B: 2,
    S: 3,
    ...SIZES_C,
    maxCacheSeq: 192,
    layout: [2, 1, 2],
    past: [62, 130],
    rotary: "interleaved",
    rotaryDim: 32,
    packed: false,
    scale: 0.3,
  },
  {
    name: "prompt S=130, sbs 64, 4 layouts, separate, G=4",
    B: 1,
    S: 130,
    ...SIZES_C,
    maxCacheSeq: 192,
    layout: [4, 1, 2],
    rotary: "off",
    packed: false,
  },
  // Shader D: H=256 with 32 lanes (two vec4 chunks per lane).
  {
    name: "decode S=2, split rotary, packed, H=256 with 32 lanes",
    B: 1,
    S: 2,
    N: 4,
    Nkv: 2,
    H: 256,
    sbs: 64,
    maxCacheSeq: 128,
    layout: [2, 1, 2],
    past: [70],
    rotary: "split",
    packed: true,
    tunables: { WORKGROUP_SIZE: 32 },
  },
  // Shader E: H=24 (6 vec4 chunks, lanes left idle in the V phase).
  {
    name: "prompt, H=24, G=2, sbs 16",
    B: 1,
    S: 40,
    N: 4,
    Nkv: 2,
    H: 24,
    sbs: 16,
    maxCacheSeq: 48,
    layout: [4, 1, 2],
    rotary: "off",
    packed: false,
  },
  // Shader F: no GQA, H=128, block 64.
  {
    name: "decode S=3 at 61/125, G=1, H=128, sbs 64",
    B: 2,
    S: 3,
    N: 2,
    Nkv: 2,
    H: 128,
    sbs: 64,
    maxCacheSeq: 192,
    layout: [2, 1, 2],
    past: [61, 125],
    rotary: "off",
    packed: false,
  },
  // "Accumulate in f32" on shader A, scores: q and k of amplitude 500 give scaled scores of
  // standard deviation about 83000, most past the f16 maximum 65504 (a score kept in f16 is
  // infinite and the softmax NaN). `scale: 0` given explicitly means 1/sqrt(H).
  {
    name: "decode S=2 at 0/17/40, scores past f16 max, explicit scale 0, split rotary",
    B: 3,
    S: 2,
    ...SIZES_AB,
    maxCacheSeq: 64,
    layout: [2, 1, 2],
    past: [0, 17, 40],
    rotary: "split",
    packed: false,
    scale: 0,
    qkAmplitude: 500,
  },
  // Weighted sums: a flat softmax over up to 600 keys (every block listed) whose values have
  // amplitude 60000, so that the unnormalised Σ p·v (and a split's) leaves the f16 range.
  {
    name: "decode S=1 at 590, flat, values near f16 max, dense layout, separate",
    B: 1,
    S: 1,
    ...SIZES_AB,
    maxCacheSeq: 640,
    layout: [2, 40, 1],
    past: [590],
    rotary: "off",
    packed: false,
    qkAmplitude: 0.05,
    vAmplitude: 60000,
  },
  // Shader G: G = 8 (one KV head for 8 query heads), H = 16, sparse block size 8. A one-token
  // prompt (total_sequence_length == S == 1: past 0, the row sees only its own key; batch 1's
  // key total is padding, ignored in prompt mode), interleaved rotary over the whole head, packed.
  {
    name: "prompt S=1 (total = S = 1), G=8, H=16, sbs 8, interleaved rotary, packed",
    B: 2,
    S: 1,
    ...SIZES_G,
    maxCacheSeq: 32,
    layout: [2, 1, 2],
    rotary: "interleaved",
    packed: true,
  },
  // Decode S=1 where batch 0 has past 0 (its row sees one key: its own) and batch 1 past 30 (the
  // cache's last row); G = 8, 8 layouts (one per head), separate.
  {
    name: "decode S=1 at past 0 and 30 (the last row), G=8, 8 layouts, H=16, sbs 8, separate",
    B: 2,
    S: 1,
    ...SIZES_G,
    maxCacheSeq: 32,
    layout: [8, 1, 3],
    past: [0, 30],
    rotary: "off",
    packed: false,
  },
];

/** Tunables that steer the variant choice (on top of the case's own). */
const MODES = {
  single: { MAX_SPLITS: 1 },
  splitk: { SPLIT_MIN_KEYS: 16, SPLIT_TARGET_WORKGROUPS: 1024 },
} as const;
type Mode = keyof typeof MODES;

const device = await getGpuDevice();

describe.runIf(device)("SparseAttention on lavapipe vs the CPU reference", () => {
  const gpu = device as GPUDevice;
  const shaders: Record<string, string> = {};
  const cache = new PipelineCache(gpu, (id) => {
    const code = shaders[id];
    if (code === undefined) throw new Error(`unknown shader ${id}`);
    return code;
  });
  afterEach(async () => {
    await expectNoUncapturedErrors(gpu);
  });
  afterAll(() => gpu.destroy());

  const runs = CASES.flatMap((c, i) => (Object.keys(MODES) as Mode[]).map((mode) => [`${mode}: ${c.name}`, c, i, mode] as const));
  test.each(runs)("%s", { timeout: 240_000 }, async (_name, c, index, mode) => {
    const rand = rng(SEED + index * 7919);
    const d = makeSparseCase(c, rand);
    const { layout, totalSequenceLength, inputs, call, pastKeyBits, pastValueBits } = d;
    const expected = sparseCaseReference(d);
    // The real compiler: this repository's spec and templates, built for the lavapipe profile.
    const compiled = await compileForCalls("SparseAttention", [call], LAVAPIPE_PROFILE, { ...c.tunables, ...MODES[mode] });
    const plan = compiled.plan(call);
    const planShaders = compiled.shaders;
    const base = `${c.packed ? "packed" : "separate"}${c.rotary === "off" ? "" : "_rotary"}`;
    expect(plan.variant).toBe(mode === "splitk" ? `${base}_splitk` : base);
    const attendPasses = plan.passes.map((p) => p.id).filter((id) => id !== "append" && id !== "rotate_q");
    expect(attendPasses).toEqual(mode === "splitk" ? ["split_attend", "merge"] : ["attend"]);
    if (mode === "splitk") {
      const splits = plan.passes.find((p) => p.id === "split_attend")!.z;
      // numSplits = min(MAX_SPLITS 16, keyCeiling / SPLIT_MIN_KEYS, ceil(SPLIT_TARGET_WORKGROUPS 1024 / (B*S*Nkv))).
      const keyCeiling = Math.min(c.maxCacheSeq, layout.maxBlocks * c.sbs);
      expect(splits).toBe(Math.min(16, Math.floor(keyCeiling / 16), Math.ceil(1024 / (c.B * c.S * c.Nkv))));
      expect(splits).toBeGreaterThanOrEqual(2);
    }
    Object.assign(shaders, planShaders);

    const tensors: Record<string, GPUBuffer> = {
      queryT: uploadBuffer(gpu, f32ArrayToF16(inputs.query)),
      pastKeyT: uploadBuffer(gpu, pastKeyBits),
      pastValueT: uploadBuffer(gpu, pastValueBits),
      blockRowIndicesT: uploadBuffer(gpu, layout.rowIndices),
      blockColIndicesT: uploadBuffer(gpu, layout.colIndices),
      totalSequenceLengthT: uploadBuffer(gpu, Int32Array.from([totalSequenceLength])),
      keyTotalSequenceLengthsT: uploadBuffer(gpu, Int32Array.from(inputs.keyTotalSequenceLengths)),
      outputT: uploadBuffer(gpu, new Uint16Array(c.B * c.S * c.N * c.H)),
    };
    if (inputs.key && inputs.value) {
      tensors.keyT = uploadBuffer(gpu, f32ArrayToF16(inputs.key));
      tensors.valueT = uploadBuffer(gpu, f32ArrayToF16(inputs.value));
    }
    if (inputs.cosCache && inputs.sinCache) {
      tensors.cosCacheT = uploadBuffer(gpu, f32ArrayToF16(inputs.cosCache));
      tensors.sinCacheT = uploadBuffer(gpu, f32ArrayToF16(inputs.sinCache));
    }
    poisonBuffer(gpu, tensors.outputT);
    // A fresh scratch pool per case (the rotated query, split partials), poisoned with NaN and huge
    // finite values: a partial or statistic the kernels fail to write cannot pass for another
    // case's data.
    const scratchPool = new ScratchPool(gpu, "sparse test scratch");
    const held = Object.values(plan.scratch).map((size) => scratchPool.acquire(Math.max(size, 4)));
    for (const b of held) poisonBufferCycle(gpu, b);
    scratchPool.release(...held);
    await executePlan(gpu, cache, plan, tensors, { checkErrors: true, scratchPool });

    const readBits = async (id: string, n: number): Promise<Uint16Array> => new Uint16Array(await readBuffer(gpu, tensors[id], 0, n * 2));
    const output = Float32Array.from(await readBits("outputT", expected.output.length), f16ToF32);
    const presentKey = await readBits("pastKeyT", expected.presentKey.length);
    const presentValue = await readBits("pastValueT", expected.presentValue.length);
    for (const buffer of Object.values(tensors)) buffer.destroy();
    scratchPool.destroy();

    expectClose("output", output, expected.output, c.vAmplitude ?? 1);
    // Caches, bit for bit (a rotated key may be either f16 neighbour of its f32 value).
    expect(sparseCacheErrors(c, d, expected, presentKey, presentValue), `seed ${SEED}`).toEqual([]);
  });
});

/**
 * Fails with the first few mismatches (index, got, want) when |got - want| > TOL * vAmp + TOL * |want|
 * anywhere (atol scaled by the values' amplitude: attention is linear in V), or a value is NaN.
 */
function expectClose(what: string, got: Float32Array, want: Float32Array, vAmp: number): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  const bad: string[] = [];
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const ratio = Math.abs(got[i] - want[i]) / (TOL * vAmp + TOL * Math.abs(want[i]));
    if (!(ratio <= 1)) {
      if (bad.length < 8) bad.push(`[${i}] got ${got[i]} want ${want[i]}`);
    } else {
      worst = Math.max(worst, ratio);
    }
  }
  expect(
    bad,
    `${what}: mismatches beyond atol = ${TOL * vAmp}, rtol = ${TOL}, seed ${SEED} (max in-tolerance error/tolerance ${worst.toFixed(3)})`,
  ).toEqual([]);
}
