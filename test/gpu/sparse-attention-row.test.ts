/// <reference types="@webgpu/types" />
/**
 * The row design of SparseAttention (templates/sparse-attention-row.wgsl.jinja: head size 128,
 * subgroup shuffles, sparse blocks that hold whole tiles; what the desktop profiles run on NVIDIA,
 * AMD and Apple) executed numerically on the test adapter, whatever its subgroup width: built by
 * the real compiler for the adapter's width W (ROW_SUBGROUP_SIZE pinned to W: 8 on Mesa's lavapipe,
 * 32 on the H200, where the shader is the shipped one) with its fallback replaced by wrong results
 * (TEST_NO_ROW_FALLBACK = 1), so a case passes only if every workgroup ran the row path. Cases:
 * split-K decode and single-pass prompts and decode, 1, 2, 4, 7 and 8 query heads per KV head
 * (heads of a group on different layouts, so a block is read for some heads and not others),
 * blocks of one, two and four tiles, a cache whose end falls inside a listed block, rotary and
 * packed QKV, f16 native (desktop-32k) and packed in u32 pairs (desktop-48k); garbage in every
 * cache row no query sees, poisoned outputs and scratch. With CI=true an adapter whose subgroups
 * are not exactly 8, 16 or 32 lanes wide fails the run. SPARSE_ROW_SEED=<n> replays a run.
 */
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { f16ToF32, f32ToF16 } from "../../src/runtime/f16.js";
import { compileForCalls, explained, type CompiledPlanner } from "../support/compiled-plan.js";
import { expectNoUncapturedErrors, getGpuDevice } from "../support/gpu.js";
import { pagedPlanRunner, type PagedPlanRunner } from "../support/paged-run.js";
import { ATTENTION_TOL } from "../support/paged-cases.js";
import { makeSparseCase, sparseCaseReference, sparseCaseTensors, sparseWrittenMask, type SparseCase } from "../support/sparse-cases.js";
import { rng } from "../support/rng.js";
import { requireRowWidth, rowWidth } from "../support/row-width.js";

const SEED = process.env.SPARSE_ROW_SEED ? Number(process.env.SPARSE_ROW_SEED) : Math.floor(Math.random() * 2 ** 31);
const TOL = ATTENTION_TOL;

const device = await getGpuDevice({
  requiredFeatures: ["shader-f16", "subgroups"],
  requiredLimits: { maxComputeWorkgroupStorageSize: 32768, maxComputeInvocationsPerWorkgroup: 1024, maxComputeWorkgroupSizeX: 1024 },
});

/** The adapter's subgroup width, when the row design has a build for it (support/row-width.ts). */
const W = rowWidth(device);
/** One tile of W keys: the sparse block sizes below are 1, 2 and 4 tiles. */
const T = W ?? 32;

interface RowCase {
  readonly profile: "desktop-32k" | "desktop-48k";
  readonly mode: "splitk" | "single";
  readonly c: SparseCase;
}

const base = { H: 128, rotary: "off", packed: false } as const;
const CASES: readonly RowCase[] = [
  {
    profile: "desktop-32k",
    mode: "splitk",
    c: {
      ...base,
      name: "G4 decode, 4 layouts, block of 2 tiles, hostile CSR",
      B: 2,
      S: 1,
      N: 8,
      Nkv: 2,
      sbs: 2 * T,
      maxCacheSeq: 12 * T,
      layout: [4, 1, 2],
      past: [9 * T + 3, 4 * T - 1],
      hostileCsr: true,
    },
  },
  {
    profile: "desktop-48k",
    mode: "splitk",
    c: {
      ...base,
      name: "G8 decode, packed QKV, split rotary, block of 1 tile",
      B: 1,
      S: 1,
      N: 8,
      Nkv: 1,
      sbs: T,
      maxCacheSeq: 20 * T,
      layout: [8, 2, 3],
      past: [17 * T + 5],
      rotary: "split",
      packed: true,
    },
  },
  {
    profile: "desktop-32k",
    mode: "single",
    c: {
      ...base,
      name: "G1 prompt, block of 2 tiles",
      B: 1,
      S: 5 * T + 3,
      N: 2,
      Nkv: 2,
      sbs: 2 * T,
      maxCacheSeq: 6 * T,
      layout: [2, 1, 2],
    },
  },
  {
    profile: "desktop-48k",
    mode: "single",
    c: {
      ...base,
      name: "G2 decode S=3, the cache ends inside a listed block of 4 tiles",
      B: 2,
      S: 3,
      N: 4,
      Nkv: 2,
      sbs: 4 * T,
      maxCacheSeq: 8 * T + 8,
      layout: [2, 1, 2],
      past: [2 * T - 1, 8 * T + 5],
      rotary: "interleaved",
    },
  },
  {
    profile: "desktop-32k",
    mode: "splitk",
    c: {
      ...base,
      name: "G7 decode, one layout, scale 0.3, hostile CSR",
      B: 2,
      S: 1,
      N: 7,
      Nkv: 1,
      sbs: T,
      maxCacheSeq: 10 * T,
      layout: [1, 2, 3],
      past: [10 * T - 1, 3],
      scale: 0.3,
      hostileCsr: true,
    },
  },
];

const MODES = {
  single: { MAX_SPLITS: 1 },
  splitk: { SPLIT_MIN_KEYS: 16, SPLIT_TARGET_WORKGROUPS: 1024 },
} as const;

function tunablesFor(r: RowCase): Record<string, number> {
  return { ROW_SUBGROUP_SIZE: T, TEST_NO_ROW_FALLBACK: 1, ...MODES[r.mode] };
}

/** One build per (profile, mode), with the instances of the cases that use it. */
const planners = new Map<string, Promise<CompiledPlanner>>();
function plannerFor(r: RowCase): Promise<CompiledPlanner> {
  const key = `${r.profile} ${r.mode}`;
  let p = planners.get(key);
  if (!p) {
    const calls = CASES.filter((o) => `${o.profile} ${o.mode}` === key).map((o) => makeSparseCase(o.c, rng(1)).call);
    p = compileForCalls("SparseAttention", calls, r.profile, tunablesFor(r));
    planners.set(key, p);
  }
  return p;
}

requireRowWidth(device, "the sparse row design's GPU cases");

let runner: PagedPlanRunner | undefined;
const runPlan: PagedPlanRunner = (plan, shaders, tensors) =>
  (runner ??= pagedPlanRunner(device as GPUDevice, "sparse row test", ["pastKeyT", "pastValueT"]))(plan, shaders, tensors);

describe.runIf(device && W !== undefined)("SparseAttention's row design, executed at the adapter's subgroup width", () => {
  console.log(`SparseAttention row design GPU test seed: ${SEED} (replay with SPARSE_ROW_SEED=${SEED}); subgroup width ${W ?? "unusable"}`);
  afterEach(async () => {
    if (device) await expectNoUncapturedErrors(device);
  });
  afterAll(() => device?.destroy());

  for (const [i, r] of CASES.entries()) {
    const { c } = r;
    test(`W${W} ${r.profile} ${r.mode}: ${c.name}`, async () => {
      const d = makeSparseCase(c, rng(SEED + 7919 * i));
      const compiled = await plannerFor(r);
      const plan = compiled.plan(d.call);
      const variant = `${c.packed ? "packed" : "separate"}${c.rotary === "off" ? "" : "_rotary"}${r.mode === "splitk" ? "_splitk" : ""}`;
      expect(plan.variant).toBe(variant);
      const attention = plan.passes.find((p) => p.id === "attend" || p.id === "split_attend")!;
      expect(explained(compiled, r.profile, "SparseAttention", attention.shader, "sparseDesign"), `pass ${attention.id}`).toBe("row");
      const text = compiled.shaders[attention.shader];
      expect(text, "the row design's build for the adapter's width, without its fallback").toContain("not_rows(wid, ");
      expect(text).not.toContain("attend_key_per_lane(wid, ");
      const splits = plan.passes.find((p) => p.id === "split_attend")?.z ?? 1;
      if (r.mode === "splitk") expect(splits, "split-K runs several splits").toBeGreaterThan(1);

      const got = await runPlan(plan, compiled.shaders, sparseCaseTensors(d));
      const ref = sparseCaseReference(d);
      const out = new Uint16Array(got.outputT);
      let worst = -1;
      let maxRatio = 0;
      for (let k = 0; k < ref.output.length; k++) {
        const ratio = Math.abs(f16ToF32(out[k]) - ref.output[k]) / (TOL + TOL * Math.abs(ref.output[k]));
        if (!(ratio <= maxRatio)) {
          maxRatio = Number.isNaN(ratio) ? Infinity : ratio;
          worst = k;
        }
      }
      const where = worst >= 0 ? `row ${Math.floor(worst / (c.N * c.H))} head ${Math.floor(worst / c.H) % c.N} channel ${worst % c.H}` : "";
      expect(
        maxRatio,
        `seed ${SEED}, ${splits} split(s), worst at ${where}: got ${f16ToF32(out[worst])}, want ${ref.output[worst]}`,
      ).toBeLessThanOrEqual(1);
      // The caches, bit for bit where nothing rotates: written rows hold the new K and V (rotated K
      // rows may round to the other f16 neighbour, which sparse-attention.test.ts checks), the rest is untouched.
      const written = sparseWrittenMask(c, ref);
      for (const [id, before, want, rotated] of [
        ["pastKeyT", d.pastKeyBits, ref.presentKey, c.rotary !== "off"],
        ["pastValueT", d.pastValueBits, ref.presentValue, false],
      ] as const) {
        const cache = new Uint16Array(got[id]);
        let mismatches = 0;
        for (let k = 0; k < before.length; k++) {
          if (written[k] && rotated) continue;
          if (cache[k] !== (written[k] ? f32ToF16(want[k]) : before[k])) mismatches++;
        }
        expect(mismatches, `seed ${SEED}, ${id}`).toBe(0);
      }
    }, 600_000);
  }
});
