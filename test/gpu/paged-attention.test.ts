/// <reference types="@webgpu/types" />
/**
 * PagedAttention on real WebGPU (Dawn on Mesa lavapipe): every variant against the CPU reference,
 * on fresh random inputs each run (the seed is printed; PAGED_SEED=<n> replays one).
 * The Tint validation of the rendered shaders is in paged-attention-tint.test.ts.
 */
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { f16ToF32 } from "../../src/runtime/f16.js";
import { expectNoUncapturedErrors, getGpuDevice } from "../support/gpu.js";
import { compileForCalls, type CompiledPlanner } from "../support/compiled-plan.js";
import { rng } from "../support/rng.js";
import { pagedPlanRunner, type PagedPlanRunner } from "../support/paged-run.js";
import type { PagedAttentionResult } from "../../src/reference/paged-attention.js";
import {
  ATTENTION_TOL,
  comparePagedRun,
  makePagedCase,
  pagedCaseReference,
  pagedCaseTensors,
  type PagedCaseData,
  type PagedCaseShape,
} from "../support/paged-cases.js";

/**
 * Each case runs with the shaders of two profiles: the one lavapipe's adapter selects
 * (mobile-1024-f16: 32 KiB workgroup storage, 1024 invocations, shader-f16, no subgroups) and
 * desktop-32k, whose shaders may use subgroups (the attention pass for head size 128 does: its
 * reductions take shuffles for the lane distances inside a subgroup, so lavapipe's subgroups of
 * 8 and the H200's of 32 exercise different mixes of shuffles and shared memory). Where the row
 * design runs (subgroups of 32), desktop-48k's shaders run the head-size-128 shapes too: the same
 * design with f16 packed in u32 pairs (docs/f16.md). The test device has the profiles' features
 * and the limits the shaders need.
 */
const PROFILES = ["mobile-1024-f16", "desktop-32k", "desktop-48k"] as const;
type ProfileName = (typeof PROFILES)[number];

/** fp16 attention: |got - want| <= TOL + TOL * |want| (atol = rtol = 5e-3). */
const TOL = ATTENTION_TOL;

const SEED = process.env.PAGED_SEED ? Number(process.env.PAGED_SEED) : Math.floor(Math.random() * 2 ** 31);

const SHAPES: readonly PagedCaseShape[] = [
  { name: "G1 H64 bs16", numHeads: 8, kvNumHeads: 8, headSize: 64, blockSize: 16, batch: 8, maxPast: 60, maxNew: 9 },
  { name: "G4 H128 bs32", numHeads: 8, kvNumHeads: 2, headSize: 128, blockSize: 32, batch: 8, maxPast: 300, maxNew: 12 },
  { name: "G8 H128 bs16", numHeads: 8, kvNumHeads: 1, headSize: 128, blockSize: 16, batch: 8, maxPast: 200, maxNew: 6 },
  // An explicit scale (each design reads it: key per lane here, shared rows below, the row
  // design's fallback and shared rows at H = 128); negative once, so that a sign error shows.
  {
    name: "G8 H64 bs32 long scale 0.09",
    numHeads: 8,
    kvNumHeads: 1,
    headSize: 64,
    blockSize: 32,
    batch: 3,
    maxPast: 700,
    maxNew: 4,
    scale: 0.09,
  },
  // A flat softmax over many splits: every split's partial weighs in the merge (a merge that
  // drops a group of splits moves the output well past the tolerance).
  {
    name: "G8 H64 bs32 long flat",
    numHeads: 8,
    kvNumHeads: 1,
    headSize: 64,
    blockSize: 32,
    batch: 3,
    maxPast: 700,
    maxNew: 4,
    qkAmplitude: 0.05,
  },
  // Head sizes whose vec4 row (20) or scalar row (34) does not divide the workgroup: the generic
  // item mapping of the attention template; H = 34 also takes the scalar (non-vec4) cache path.
  {
    name: "G2 H80 bs16 generic items scale -0.08",
    numHeads: 4,
    kvNumHeads: 2,
    headSize: 80,
    blockSize: 16,
    batch: 4,
    maxPast: 100,
    maxNew: 6,
    scale: -0.08,
  },
  {
    name: "G4 H34 bs16 scalar cache",
    numHeads: 4,
    kvNumHeads: 1,
    headSize: 34,
    blockSize: 16,
    batch: 4,
    maxPast: 100,
    maxNew: 6,
    scalarOnly: true,
  },
  {
    name: "G4 H64 bs16 hostile tables",
    numHeads: 8,
    kvNumHeads: 2,
    headSize: 64,
    blockSize: 16,
    batch: 6,
    maxPast: 150,
    maxNew: 8,
    hostile: true,
  },
  // Head size 128 with each way the 32-key tiles of the head-size-128 attention meet blocks:
  // four blocks per tile (bs 8), a tile per key lookup (bs 24, and 7 heads padded to 8), half a
  // block per tile (bs 64, with hostile tables).
  { name: "G1 H128 bs8", numHeads: 4, kvNumHeads: 4, headSize: 128, blockSize: 8, batch: 4, maxPast: 150, maxNew: 6 },
  {
    name: "G7 H128 bs24 scale 0.1",
    numHeads: 7,
    kvNumHeads: 1,
    headSize: 128,
    blockSize: 24,
    batch: 4,
    maxPast: 200,
    maxNew: 5,
    scale: 0.1,
  },
  {
    name: "G2 H128 bs64 hostile tables",
    numHeads: 4,
    kvNumHeads: 2,
    headSize: 128,
    blockSize: 64,
    batch: 5,
    maxPast: 300,
    maxNew: 8,
    hostile: true,
  },
  // ops.md's smallest block size: one key per block, so every key is its own table lookup (the
  // shared-rows design; a block boundary between every two keys). At least 8 table columns: the
  // split-K variants (SPLIT_MIN_KEYS = 4 here) need 8 keys of table, which B = 1 with past 4 lacks.
  { name: "G2 H64 bs1", numHeads: 4, kvNumHeads: 2, headSize: 64, blockSize: 1, batch: 4, maxPast: 40, maxNew: 5, minTableBlocks: 8 },
  // "Accumulate in f32", scores: q and k of amplitude 500 give scaled scores (q·k / sqrt(H)) of
  // standard deviation about 83000, most past the f16 maximum 65504: a score kept in f16 is
  // infinite and the softmax NaN. `scale: 0` given explicitly means 1/sqrt(H), as absent does.
  {
    name: "G4 H64 bs16 scores past f16 max, scale 0",
    numHeads: 8,
    kvNumHeads: 2,
    headSize: 64,
    blockSize: 16,
    batch: 4,
    maxPast: 100,
    maxNew: 6,
    qkAmplitude: 500,
    scale: 0,
  },
  // "Accumulate in f32", weighted sums: a flat softmax over up to 300 keys whose values have
  // amplitude 60000, so that the unnormalised Σ p·v (and a split's) leaves the f16 range long
  // before it is divided by Σ p.
  {
    name: "G4 H64 bs16 flat, values near f16 max",
    numHeads: 8,
    kvNumHeads: 2,
    headSize: 64,
    blockSize: 16,
    batch: 4,
    maxPast: 300,
    maxNew: 6,
    qkAmplitude: 0.05,
    vAmplitude: 60000,
  },
];

const VARIANTS = [
  "separate_derived",
  "separate_derived_splitk",
  "separate_slot",
  "separate_slot_splitk",
  "packed_derived",
  "packed_derived_splitk",
  "packed_slot",
  "packed_slot_splitk",
] as const;

/**
 * Tunables that steer the variant choice: MAX_SPLITS 1 rules split-K out; SPLIT_MIN_KEYS 4 lets
 * even a one-block table of the smallest block size (8) split (up to MAX_SPLITS = 16 splits, many
 * of them empty on short rows); with 8, a bs 8 case drawn with a one-block table planned the
 * single pass (PAGED_SEED=254942577).
 * With desktop-32k the single pass gets a 32-lane workgroup, like the split pass, so that it
 * takes the head-size-128 attention too.
 */
function tunablesFor(variant: string, profile: ProfileName): Record<string, number> {
  if (variant.endsWith("_splitk")) return { SPLIT_MIN_KEYS: 4 };
  return profile === "mobile-1024-f16" ? { MAX_SPLITS: 1 } : { MAX_SPLITS: 1, WORKGROUP_SIZE: 32 };
}

/**
 * The real compiler, once per profile and tunable setting: this repository's spec and templates
 * built for the profile, with instances taken from every case's shape (head counts, head size,
 * block size and which inputs are present: what the shaders are specialized on).
 */
const planners = new Map<string, Promise<CompiledPlanner>>();
function plannerFor(variant: string, profile: ProfileName): Promise<CompiledPlanner> {
  const tunables = tunablesFor(variant, profile);
  const key = `${profile} ${JSON.stringify(tunables)}`;
  let p = planners.get(key);
  if (!p) {
    const calls = VARIANTS.flatMap((v) =>
      SHAPES.map((shape) => makePagedCase(shape, v.startsWith("packed"), v.includes("_slot"), rng(1)).call),
    );
    p = compileForCalls("PagedAttention", calls, profile, tunables);
    planners.set(key, p);
  }
  return p;
}

// Both profiles' features, and their shared limits: 32 KiB workgroup storage, 1024 invocations.
const device = await getGpuDevice({
  requiredFeatures: ["shader-f16", "subgroups"],
  requiredLimits: { maxComputeWorkgroupStorageSize: 32768, maxComputeInvocationsPerWorkgroup: 1024, maxComputeWorkgroupSizeX: 1024 },
});

/**
 * The desktop-32k cases. With other head sizes its shaders use the designs mobile-1024-f16's use
 * (no subgroups), so only head size 128 runs. Where subgroups have fewer than 32 lanes (lavapipe:
 * 8) its shaders take the key-per-lane fallback, not the row design, and each costs lavapipe
 * 10-60 s to compile, so two shapes check the fallback and the choice between the paths; on a GPU
 * with subgroups of 32 or more (the H200) every head-size-128 shape runs the row design.
 */
const ROW_DESIGN_RUNS = (device?.adapterInfo.subgroupMaxSize ?? 0) >= 32;
const DESKTOP_SHAPES = new Set(
  SHAPES.filter((s) => s.headSize === 128 && (ROW_DESIGN_RUNS || s.name === "G4 H128 bs32" || s.name === "G7 H128 bs24 scale 0.1")).map(
    (s) => s.name,
  ),
);

/** Runs a plan (support/paged-run.ts: poisoned output and scratch, one pipeline cache for the file). */
let runner: PagedPlanRunner | undefined;
const runPlan: PagedPlanRunner = (plan, shaders, tensors) =>
  (runner ??= pagedPlanRunner(device as GPUDevice, "paged test"))(plan, shaders, tensors);

/** Checks a run against the CPU reference (support/paged-cases.ts: comparePagedRun). */
function expectMatchesReference(
  shape: PagedCaseShape,
  c: PagedCaseData,
  got: Record<string, ArrayBuffer>,
): { maxErr: number; maxRatio: number; ref: PagedAttentionResult } {
  const { ref, maxErr, maxRatio, worst, cacheErrors } = comparePagedRun(shape, c, got);
  expect(maxRatio, `seed ${SEED}, ${c.summary}, worst at ${worst}`).toBeLessThanOrEqual(1);
  expect(cacheErrors, `seed ${SEED}`).toEqual([]);
  return { maxErr, maxRatio, ref };
}

describe.runIf(device)("PagedAttention on lavapipe", () => {
  const table: string[] = [];
  console.log(`PagedAttention GPU test seed: ${SEED} (replay with PAGED_SEED=${SEED})`);
  afterEach(async () => {
    if (device) await expectNoUncapturedErrors(device);
  });
  afterAll(() => {
    if (table.length) console.log(["profile | variant | case | numSplits | max |err| | max err/tol", ...table].join("\n"));
    device?.destroy();
  });

  for (const [profile, variant] of PROFILES.flatMap((p) => VARIANTS.map((v) => [p, v] as const))) {
    for (const [i, shape] of SHAPES.entries()) {
      if (shape.scalarOnly && variant.endsWith("_splitk")) continue;
      if (profile === "desktop-32k" && !DESKTOP_SHAPES.has(shape.name)) continue;
      // desktop-48k (no shader-f16: f16 packed in u32 pairs) runs the row design's packed form where
      // the row design runs (subgroups of 32: the H200); lavapipe's fallback in packed form is
      // covered by test/gpu/profiles.test.ts.
      if (profile === "desktop-48k" && !(ROW_DESIGN_RUNS && DESKTOP_SHAPES.has(shape.name))) continue;
      test(`${profile}: ${variant}: ${shape.name}`, async () => {
        const rand = rng(SEED + 7919 * VARIANTS.indexOf(variant) + 104729 * i + 15485863 * PROFILES.indexOf(profile));
        const packed = variant.startsWith("packed");
        const slots = variant.includes("_slot");
        const c = makePagedCase(shape, packed, slots, rand);
        const compiled = await plannerFor(variant, profile);
        const planned = { plan: compiled.plan(c.call), shaders: compiled.shaders };
        expect(planned.plan.variant, c.summary).toBe(variant);
        const tensors = pagedCaseTensors(c);
        const got = await runPlan(planned.plan, planned.shaders, tensors);
        const { maxErr, maxRatio, ref } = expectMatchesReference(shape, c, got);
        const numSplits = planned.plan.passes.find((p) => p.id === "split_attention")?.z ?? 1;
        table.push(
          `${profile} | ${variant} | ${shape.name} (${c.summary}) | ${numSplits} | ${maxErr.toExponential(2)} | ${maxRatio.toFixed(3)}`,
        );
        // Hostile tables may unmap every block of a small batch; other cases must attend to something.
        if (!shape.hostile) expect(c.liveRows, "the case has visible keys").toBeGreaterThan(0);
        if (!shape.hostile)
          expect(
            ref.written.some((w) => w === 1),
            "the case writes something",
          ).toBe(true);
      }, 300_000);
    }
  }

  // ops.md's schedule edges, on a fixed batch (the random batches above reach them by chance
  // only): sequences with no new tokens first, in the middle and last (equal prefix sums the
  // token-to-sequence search must step over), prefill from an empty cache (past 0), decode at a
  // block's last slot and first slot, a long prefill after a past, and a lone first token (past
  // 0, one new token: L = 1, the token sees only its own key); an explicit scale. Every variant,
  // with SHAPES[0]'s shaders.
  for (const variant of VARIANTS) {
    test(`mobile-1024-f16: ${variant}: fixed batch with empty sequences, past 0, block edges`, async () => {
      const shape: PagedCaseShape = { ...SHAPES[0]!, name: "G1 H64 bs16 fixed batch", scale: 0.2 };
      const batch = { past: [7, 0, 15, 0, 16, 40, 0, 3], newTokens: [0, 9, 1, 0, 1, 17, 1, 0] };
      const c = makePagedCase(shape, variant.startsWith("packed"), variant.includes("_slot"), rng(SEED + 101), batch);
      const compiled = await plannerFor(variant, "mobile-1024-f16");
      const plan = compiled.plan(c.call);
      expect(plan.variant, c.summary).toBe(variant);
      const got = await runPlan(plan, compiled.shaders, pagedCaseTensors(c));
      const { maxRatio } = expectMatchesReference(shape, c, got);
      table.push(`mobile-1024-f16 | ${variant} | ${shape.name} (${c.summary}) | - | - | ${maxRatio.toFixed(3)}`);
    }, 300_000);
  }

  // T = 0 (every sequence without new tokens) does nothing: every pass has a zero workgroup count,
  // so none runs; the caches keep every bit, garbage included.
  for (const variant of ["separate_derived", "packed_slot_splitk"] as const) {
    test(`mobile-1024-f16: ${variant}: T = 0 changes nothing`, async () => {
      const shape = SHAPES[0]!;
      const c = makePagedCase(shape, variant.startsWith("packed"), variant.includes("_slot"), rng(SEED + 103), {
        past: [5, 0, 33],
        newTokens: [0, 0, 0],
      });
      expect(c.call.inputs.queryT?.shape[0]).toBe(0);
      const compiled = await plannerFor(variant, "mobile-1024-f16");
      const plan = compiled.plan(c.call);
      expect(plan.variant).toBe(variant);
      for (const p of plan.passes) expect([p.x, p.y, p.z], p.id).toContain(0);
      const got = await runPlan(plan, compiled.shaders, pagedCaseTensors(c));
      expect(got.outputT.byteLength).toBe(0);
      expect(new Uint16Array(got.keyCacheT)).toEqual(c.keyCache);
      expect(new Uint16Array(got.valueCacheT)).toEqual(c.valueCache);
    }, 300_000);
  }

  // More splits than the merge's workgroup (at most 256 invocations, pagedMergeWg): its tree form
  // takes the splits' weights in two chunks. 400 splits of 16 keys over 4701 visible keys: 294
  // hold keys, 106 are empty; a flat softmax so that every split weighs in the output.
  test("mobile-1024-f16: separate_derived_splitk: 400 splits, more than the merge workgroup", async () => {
    const shape: PagedCaseShape = {
      name: "G8 H64 bs16 400 splits",
      numHeads: 8,
      kvNumHeads: 1,
      headSize: 64,
      blockSize: 16,
      batch: 1,
      maxPast: 4700,
      maxNew: 1,
      qkAmplitude: 0.05,
    };
    const c = makePagedCase(shape, false, false, rng(SEED + 31), { past: [4700], newTokens: [1] });
    const compiled = await compileForCalls("PagedAttention", [c.call], "mobile-1024-f16", {
      SPLIT_MIN_KEYS: 8,
      MAX_SPLITS: 400,
      SPLIT_TARGET_WORKGROUPS: 4096,
    });
    const plan = compiled.plan(c.call);
    expect(plan.variant).toBe("separate_derived_splitk");
    expect(plan.passes.find((p) => p.id === "split_attention")?.z).toBe(400);
    const got = await runPlan(plan, compiled.shaders, pagedCaseTensors(c));
    const ref = pagedCaseReference(shape, c);
    const out = new Uint16Array(got.outputT);
    let maxRatio = 0;
    for (let k = 0; k < ref.output.length; k++) {
      const ratio = Math.abs(f16ToF32(out[k]) - ref.output[k]) / (TOL + TOL * Math.abs(ref.output[k]));
      maxRatio = Number.isNaN(ratio) ? Infinity : Math.max(maxRatio, ratio);
    }
    expect(maxRatio, `seed ${SEED}, ${c.summary}`).toBeLessThanOrEqual(1);
  }, 300_000);
});
