/// <reference types="@webgpu/types" />
/**
 * The row design of PagedAttention (templates/paged-attention-row.wgsl.jinja: head size 128,
 * subgroup shuffles; what the desktop profiles run on NVIDIA, AMD and Apple) executed numerically
 * on the test adapter, whatever its subgroup width: the design is built by the real compiler for
 * the adapter's width W (the tunable ROW_SUBGROUP_SIZE pinned to W: 8 on Mesa's lavapipe, 32 on
 * the H200, where the shader is the shipped one) and with its fallback replaced by wrong results
 * (TEST_NO_ROW_FALLBACK = 1, a test-only tunable), so a case passes only if every workgroup ran the
 * row path. Cases: decode with split-K, prefill and mixed batches in one pass, blocks that hold a
 * tile, several per tile and a tile that straddles blocks, 1, 2, 4, 7 and 8 query heads per KV
 * head, f16 native (desktop-32k) and packed in u32 pairs (desktop-48k), on an adapter of 16 or
 * more lanes also two streams per subgroup (ROW_SUBGROUP_SIZE = W / 2), garbage in every cache
 * slot no visible key reads, hostile block tables. With CI=true an adapter whose subgroups are not
 * exactly 8, 16 or 32 lanes wide fails the run: the path the shipped desktop profiles take must
 * have run. The seed is printed; PAGED_ROW_SEED=<n> replays a run.
 */
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { f16ToF32, f32ToF16 } from "../../src/runtime/f16.js";
import { compileForCalls, explained, type CompiledPlanner } from "../support/compiled-plan.js";
import { expectNoUncapturedErrors, getGpuDevice } from "../support/gpu.js";
import { pagedPlanRunner, type PagedPlanRunner } from "../support/paged-run.js";
import {
  ATTENTION_TOL,
  makePagedCase,
  pagedCaseReference,
  pagedCaseTensors,
  type PagedBatch,
  type PagedCaseShape,
} from "../support/paged-cases.js";
import { rng } from "../support/rng.js";
import { requireRowWidth, rowWidth } from "../support/row-width.js";

const SEED = process.env.PAGED_ROW_SEED ? Number(process.env.PAGED_ROW_SEED) : Math.floor(Math.random() * 2 ** 31);
const TOL = ATTENTION_TOL;

// desktop-32k's features (shader-f16, subgroups) and the limits both profiles' row shaders need.
const device = await getGpuDevice({
  requiredFeatures: ["shader-f16", "subgroups"],
  requiredLimits: { maxComputeWorkgroupStorageSize: 32768, maxComputeInvocationsPerWorkgroup: 1024, maxComputeWorkgroupSizeX: 1024 },
});

/** The adapter's subgroup width, when the row design has a build for it (support/row-width.ts). */
const W = rowWidth(device);

interface RowCase {
  readonly profile: "desktop-32k" | "desktop-48k";
  readonly variant: string;
  readonly shape: PagedCaseShape;
  /** A fixed batch (past lengths, new tokens); absent: drawn per run. */
  readonly batch?: PagedBatch;
  /** Pins beyond the file's (e.g. ROW_LOAD_AHEAD 1: K rows loaded one chunk ahead, not two). */
  readonly pins?: Readonly<Record<string, number>>;
  /** Runs only where the adapter's subgroups have at least this many lanes. */
  readonly minWidth?: number;
}

const shape = (
  name: string,
  numHeads: number,
  kvNumHeads: number,
  blockSize: number,
  extra: Partial<PagedCaseShape> = {},
): PagedCaseShape => ({
  name,
  numHeads,
  kvNumHeads,
  headSize: 128,
  blockSize,
  batch: 4,
  maxPast: 120,
  maxNew: 9,
  ...extra,
});

/** Block sizes against the tile of W keys: several blocks per tile, and one that neither divides W nor is a multiple of it. */
const SMALL_BS = (W ?? 32) / 2;
const ODD_BS = W === 8 ? 12 : 24;

/**
 * A handful of cases (lavapipe compiles each distinct shader once, in seconds): each way a tile
 * meets blocks (a tile inside a block: bs 16 and 32; W / bs blocks per tile; a block lookup per
 * key), split-K decode and single-pass prefill, separate and packed QKV, both f16 forms.
 */
const CASES: readonly RowCase[] = [
  {
    profile: "desktop-32k",
    variant: "separate_derived_splitk",
    shape: shape("G4 bs16 decode", 8, 2, 16),
    batch: { past: [300, 77, 0], newTokens: [1, 1, 1] },
  },
  {
    profile: "desktop-48k",
    variant: "packed_slot_splitk",
    shape: shape("G8 bs32 decode", 8, 1, 32),
    batch: { past: [250, 31], newTokens: [1, 1] },
  },
  {
    profile: "desktop-32k",
    variant: "separate_derived",
    shape: shape("G1 bs32 prefill", 4, 4, 32),
    batch: { past: [0, 40, 9], newTokens: [13, 1, 6] },
  },
  {
    profile: "desktop-48k",
    variant: "packed_derived",
    shape: shape("G4 bs16 mixed", 8, 2, 16),
    batch: { past: [20, 0, 61], newTokens: [5, 11, 1] },
  },
  {
    profile: "desktop-32k",
    variant: "separate_slot_splitk",
    shape: shape(`G2 bs${SMALL_BS} decode, hostile tables`, 4, 2, SMALL_BS, { hostile: true }),
    batch: { past: [100, 45, 7], newTokens: [1, 1, 1] },
  },
  {
    profile: "desktop-48k",
    variant: "packed_slot",
    shape: shape(`G7 bs${ODD_BS} mixed, hostile tables`, 7, 1, ODD_BS, { hostile: true }),
    // The last sequence with new tokens loses every block (its outputs must be zeros); the others keep most.
    batch: { past: [89, 30, 0], newTokens: [5, 1, 7] },
  },
  // Batches of many sequences: each token's sequence comes from a binary search over the prefix
  // sums, and sequences without new tokens make equal prefix sums that it must step over.
  {
    profile: "desktop-32k",
    variant: "separate_derived_splitk",
    shape: shape("G4 bs16 decode, 12 sequences", 8, 2, 16),
    batch: { past: [300, 77, 0, 5, 16, 31, 64, 120, 1, 2, 47, 99], newTokens: Array(12).fill(1) },
  },
  {
    profile: "desktop-32k",
    variant: "separate_derived",
    // An explicit scale: the row design reads params.scale itself (not through the fallback).
    shape: shape("G1 bs32 mixed, 40 sequences, scale 0.06", 4, 4, 32, { scale: 0.06 }),
    batch: {
      past: Array.from({ length: 40 }, (_, i) => (i * 37) % 90),
      newTokens: Array.from({ length: 40 }, (_, i) => [1, 0, 3, 1, 0, 0, 2][i % 7]),
    },
  },
  {
    profile: "desktop-32k",
    variant: "separate_derived",
    shape: shape("G1 bs32 mixed, 70 sequences", 4, 4, 32),
    batch: {
      past: Array.from({ length: 70 }, (_, i) => (i * 53) % 70),
      newTokens: Array.from({ length: 70 }, (_, i) => (i === 69 ? 0 : [0, 1, 2, 0, 1][i % 5])),
    },
  },
  // Loads one chunk ahead (ROW_LOAD_AHEAD = 1, the tuner's other choice): several blocks per tile
  // in split-K decode, and a tile inside a block with 8 heads per KV head in one pass.
  {
    profile: "desktop-32k",
    variant: "separate_derived_splitk",
    shape: shape(`G4 bs${SMALL_BS} decode, one chunk ahead`, 8, 2, SMALL_BS),
    batch: { past: [260, 3, 64], newTokens: [1, 1, 1] },
    pins: { ROW_LOAD_AHEAD: 1 },
  },
  {
    profile: "desktop-48k",
    variant: "packed_derived",
    shape: shape("G8 bs32 mixed, one chunk ahead", 8, 1, 32),
    batch: { past: [70, 0], newTokens: [3, 9] },
    pins: { ROW_LOAD_AHEAD: 1 },
  },
  // Two streams in each subgroup (ROW_SUBGROUP_SIZE = W / 2: 16 on the H200's 32-lane subgroups,
  // 8 on lavapipe with LP_NATIVE_VECTOR_WIDTH=512): each stream's shuffles stay in its half and
  // read its head maxima from its own lanes. With lavapipe's default 8 lanes the streams of the
  // W = 8 build are whole subgroups, which the cases above check.
  {
    profile: "desktop-32k",
    variant: "separate_derived_splitk",
    // Scores spread over hundreds (query and key amplitude 12): a stream that took another
    // stream's running max would overflow exp() where its own keys score higher.
    shape: shape("G4 bs16 decode, two streams", 8, 2, 16, { qkAmplitude: 12 }),
    batch: { past: [300, 17, 64], newTokens: [1, 1, 1] },
    pins: { ROW_SUBGROUP_SIZE: (W ?? 32) / 2 },
    minWidth: 16,
  },
  {
    profile: "desktop-48k",
    variant: "packed_derived",
    shape: shape("G8 bs32 mixed, two streams", 8, 1, 32),
    batch: { past: [70, 0, 33], newTokens: [3, 9, 1] },
    pins: { ROW_SUBGROUP_SIZE: (W ?? 32) / 2 },
    minWidth: 16,
  },
];

/**
 * Tunables: the adapter's width, the fallback replaced (tests only), and the variant choice:
 * split-K with a low key threshold, or one pass with the 32-lane workgroup the row design needs.
 */
function tunablesFor(c: RowCase): Record<string, number> {
  const row = { ROW_SUBGROUP_SIZE: W ?? 32, TEST_NO_ROW_FALLBACK: 1, ...c.pins };
  return c.variant.endsWith("_splitk") ? { ...row, SPLIT_MIN_KEYS: 8 } : { ...row, MAX_SPLITS: 1, WORKGROUP_SIZE: 32 };
}

/** One build per (profile, tunables), with the instances of the cases that use it. */
const planners = new Map<string, Promise<CompiledPlanner>>();
function plannerFor(c: RowCase): Promise<CompiledPlanner> {
  const tunables = tunablesFor(c);
  const key = `${c.profile} ${JSON.stringify(tunables)}`;
  let p = planners.get(key);
  if (!p) {
    const calls = CASES.filter((o) => `${o.profile} ${JSON.stringify(tunablesFor(o))}` === key).map(
      (o) => makePagedCase(o.shape, o.variant.startsWith("packed"), o.variant.includes("_slot"), rng(1), o.batch).call,
    );
    p = compileForCalls("PagedAttention", calls, c.profile, tunables);
    planners.set(key, p);
  }
  return p;
}

// An adapter whose subgroups the design cannot use fails the run under CI=true (the path the
// desktop profiles ship must run numerically); elsewhere the file says why its cases do not run.
requireRowWidth(device, "the row design's GPU cases");

/** Runs a plan (support/paged-run.ts: poisoned output and scratch, one pipeline cache for the file). */
let runner: PagedPlanRunner | undefined;
const runPlan: PagedPlanRunner = (plan, shaders, tensors) =>
  (runner ??= pagedPlanRunner(device as GPUDevice, "paged row test"))(plan, shaders, tensors);

describe.runIf(device && W !== undefined)("PagedAttention's row design, executed at the adapter's subgroup width", () => {
  const table: string[] = [];
  console.log(`PagedAttention row design GPU test seed: ${SEED} (replay with PAGED_ROW_SEED=${SEED}); subgroup width ${W ?? "unusable"}`);
  afterEach(async () => {
    if (device) await expectNoUncapturedErrors(device);
  });
  afterAll(() => {
    if (table.length) console.log([`W | profile | variant | case | numSplits | max |err| | max err/tol`, ...table].join("\n"));
    device?.destroy();
  });

  for (const [i, c] of CASES.entries()) {
    if ((W ?? 0) < (c.minWidth ?? 0)) continue;
    test(`W${c.pins?.ROW_SUBGROUP_SIZE ?? W} ${c.profile}: ${c.variant}: ${c.shape.name}`, async () => {
      const rand = rng(SEED + 7919 * i);
      const data = makePagedCase(c.shape, c.variant.startsWith("packed"), c.variant.includes("_slot"), rand, c.batch);
      const compiled = await plannerFor(c);
      const plan = compiled.plan(data.call);
      expect(plan.variant, data.summary).toBe(c.variant);
      const attention = plan.passes.find((p) => p.id === "main" || p.id === "split_attention")!;
      expect(explained(compiled, c.profile, "PagedAttention", attention.shader, "pagedDesign"), `pass ${attention.id}`).toBe("row");
      const text = compiled.shaders[attention.shader];
      expect(text, "the shader is the row design's build for the adapter's width, without its fallback").toContain(
        "not_rows(wid, nwg, lane);",
      );
      expect(text).not.toContain("attend_key_per_lane(wid, nwg, lane);");
      const got = await runPlan(plan, compiled.shaders, pagedCaseTensors(data));
      const ref = pagedCaseReference(c.shape, data);
      const out = new Uint16Array(got.outputT);
      let maxErr = 0;
      let maxRatio = 0;
      let worst = -1;
      for (let k = 0; k < ref.output.length; k++) {
        const err = Math.abs(f16ToF32(out[k]) - ref.output[k]);
        const ratio = err / (TOL + TOL * Math.abs(ref.output[k]));
        if (!(ratio <= maxRatio)) {
          maxRatio = Number.isNaN(ratio) ? Infinity : ratio;
          worst = k;
        }
        if (!(err <= maxErr)) maxErr = Number.isNaN(err) ? Infinity : err;
      }
      const numSplits = plan.passes.find((p) => p.id === "split_attention")?.z ?? 1;
      table.push(
        `${c.pins?.ROW_SUBGROUP_SIZE ?? W} | ${c.profile} | ${c.variant} | ${c.shape.name} (${data.summary}) | ${numSplits} | ${maxErr.toExponential(2)} | ${maxRatio.toFixed(3)}`,
      );
      const { numHeads: N, headSize: H } = c.shape;
      const where = worst >= 0 ? `token ${Math.floor(worst / (N * H))} head ${Math.floor(worst / H) % N} channel ${worst % H}` : "";
      expect(
        maxRatio,
        `seed ${SEED}, ${data.summary}, worst at ${where}: got ${f16ToF32(out[worst])}, want ${ref.output[worst]}`,
      ).toBeLessThanOrEqual(1);
      if (c.variant.endsWith("_splitk")) expect(numSplits, "split-K runs several splits").toBeGreaterThan(1);
      // The caches, bit for bit: written rows hold the new K and V, everything else is untouched.
      for (const [id, before, want] of [
        ["keyCacheT", data.keyCache, ref.keyCache],
        ["valueCacheT", data.valueCache, ref.valueCache],
      ] as const) {
        const cache = new Uint16Array(got[id]);
        let mismatches = 0;
        for (let k = 0; k < before.length; k++) if (cache[k] !== (ref.written[k] ? f32ToF16(want[k]) : before[k])) mismatches++;
        expect(mismatches, `seed ${SEED}, ${id}`).toBe(0);
      }
      expect(data.liveRows, "the case has visible keys").toBeGreaterThan(0);
    }, 300_000);
  }
});
