/// <reference types="@webgpu/types" />
/**
 * The kernels kernelc ships, as a user runs them: out/mobile-1024-f16's generated dispatcher (the
 * profile lavapipe's adapter selects) plans each call, the WGSL comes from out/shaders, and the
 * outputs and caches are compared with the CPU references (docs/ops.md) on fresh random inputs,
 * one or two calls per configured instance (kernelc.config.json: the head counts, head sizes,
 * block sizes and cache lengths of real models). The other GPU tests build the kernels in memory
 * from specs/ and templates/ for small test shapes; this one checks that out/ holds working
 * kernels for the shapes it was built for. Caches hold garbage wherever no visible key reads,
 * the output and scratch buffers are poisoned (support/paged-run.ts).
 * The seed is printed; SHIPPED_SEED=<n> replays a run.
 *
 * Lavapipe spends seconds to minutes compiling each of these full-size shaders (the whole file took
 * 15 min on the 2-core development VM), so `npm test` runs four cases: llama-3-8b-b16 (split-K
 * and single pass), phi-3-mini-b16 (head size 96) and phi-3-small-8k-no-rotary (prompt).
 * KERNELC_SHIPPED_ALL=1 registers every case (all 16 passed on an H100 and on lavapipe, 2026-12-06);
 * without it the others are not registered, so the run reports no skipped tests.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import type { Plan } from "../../src/model/plan.js";
import { DEFAULT_PROFILES } from "../../src/plan/profiles.js";
import { f16ToF32 } from "../../src/runtime/f16.js";
import { planners } from "../../out/mobile-1024-f16/dispatcher.js";
import { expectNoUncapturedErrors, getProfileDevice } from "../support/gpu.js";
import { comparePagedRun, makePagedCase, pagedCaseTensors, type PagedBatch, type PagedCaseShape } from "../support/paged-cases.js";
import { pagedPlanRunner, type PagedPlanRunner } from "../support/paged-run.js";
import { repoRoot } from "../support/project-build.js";
import { rng } from "../support/rng.js";
import { makeSparseCase, sparseCacheErrors, sparseCaseReference, sparseCaseTensors, type SparseCase } from "../support/sparse-cases.js";

const SEED = process.env.SHIPPED_SEED ? Number(process.env.SHIPPED_SEED) : Math.floor(Math.random() * 2 ** 31);
const PROFILE = DEFAULT_PROFILES.find((p) => p.name === "mobile-1024-f16")!;

/** out/shaders by shader id. */
const shipped: Record<string, string> = {};
const shaderDir = join(repoRoot, "out", "shaders");
for (const f of readdirSync(shaderDir)) if (f.endsWith(".wgsl")) shipped[f.slice(0, -5)] = readFileSync(join(shaderDir, f), "utf8");

/**
 * The configured PagedAttention instances, each with a mixed decode/prefill batch (few tokens:
 * the dispatcher takes split-K) and a prefill batch of 160 tokens (tokens × KV heads past the
 * split target: the single pass); separate or packed QKV and slot_mapping alternate.
 */
const PAGED: readonly (PagedCaseShape & { readonly instance: string })[] = [
  { instance: "llama-3-8b-b16", numHeads: 32, kvNumHeads: 8, headSize: 128, blockSize: 16 },
  { instance: "llama-3-8b-b32", numHeads: 32, kvNumHeads: 8, headSize: 128, blockSize: 32 },
  { instance: "mha-32x128-b16", numHeads: 32, kvNumHeads: 32, headSize: 128, blockSize: 16 },
  { instance: "qwen2.5-7b-b16", numHeads: 28, kvNumHeads: 4, headSize: 128, blockSize: 16 },
  { instance: "qwen2.5-7b-b32", numHeads: 28, kvNumHeads: 4, headSize: 128, blockSize: 32 },
  { instance: "phi-3-mini-b16", numHeads: 32, kvNumHeads: 32, headSize: 96, blockSize: 16 },
].map((s) => ({ ...s, name: s.instance, batch: 4, maxPast: 200, maxNew: 6 }));

/** The cases `npm test` runs (the rest with KERNELC_SHIPPED_ALL=1). */
const ALL = process.env.KERNELC_SHIPPED_ALL === "1";
const DEFAULT_CASES = new Set([
  "PagedAttention llama-3-8b-b16: mixed batch, separate",
  "PagedAttention llama-3-8b-b16: prefill 160 tokens, packed",
  "PagedAttention phi-3-mini-b16: prefill 160 tokens, separate, slot_mapping",
  "SparseAttention phi-3-small-8k-no-rotary: prompt S=70, packed",
]);
const runs = (name: string): boolean => ALL || DEFAULT_CASES.has(name);

const PREFILL: PagedBatch = { past: [0, 37], newTokens: [100, 60] };

/** phi-3-small-8k's SparseAttention shape: 32/8 heads, H 128, blocks of 64, 8192-row caches. */
const PHI3_SMALL = { N: 32, Nkv: 8, H: 128, sbs: 64, maxCacheSeq: 8192 } as const;

/** The configured SparseAttention instances. */
const SPARSE: readonly SparseCase[] = [
  {
    name: "phi-3-small-8k: decode S=1 at 700 and 1535, split rotary, separate",
    B: 2,
    S: 1,
    ...PHI3_SMALL,
    layout: [8, 2, 8],
    past: [700, 1535],
    rotary: "split",
    packed: false,
  },
  {
    name: "phi-3-small-8k: prompt S=150, split rotary, packed",
    B: 1,
    S: 150,
    ...PHI3_SMALL,
    layout: [8, 2, 8],
    rotary: "split",
    packed: true,
  },
  {
    name: "phi-3-small-8k-no-rotary: decode S=3 at 64 and 4000, separate",
    B: 2,
    S: 3,
    ...PHI3_SMALL,
    layout: [4, 1, 4],
    past: [64, 4000],
    rotary: "off",
    packed: false,
  },
  {
    name: "phi-3-small-8k-no-rotary: prompt S=70, packed",
    B: 1,
    S: 70,
    ...PHI3_SMALL,
    layout: [8, 2, 8],
    rotary: "off",
    packed: true,
  },
];

/** Separate or packed QKV and slot_mapping alternate over the instances and their two batches. */
function pagedLayout(i: number, prefill: boolean): { packed: boolean; slots: boolean } {
  return { packed: (i + (prefill ? 1 : 0)) % 2 === 1, slots: i % 3 !== 0 };
}

function caseName(i: number, prefill: boolean): string {
  const { packed, slots } = pagedLayout(i, prefill);
  const what = `${prefill ? "prefill 160 tokens" : "mixed batch"}, ${packed ? "packed" : "separate"}${slots ? ", slot_mapping" : ""}`;
  return `PagedAttention ${PAGED[i]!.instance}: ${what}`;
}

const profileDevice = await getProfileDevice(PROFILE);
const device = profileDevice?.device;

describe.runIf(device)("shipped kernels (out/mobile-1024-f16, out/shaders) on lavapipe", () => {
  test("every default case names a case of this file", () => {
    const names = [...PAGED.flatMap((_, i) => [false, true].map((p) => caseName(i, p))), ...SPARSE.map((c) => `SparseAttention ${c.name}`)];
    for (const n of DEFAULT_CASES) expect(names).toContain(n);
  });

  const gpu = device as GPUDevice;
  const table: string[] = [];
  console.log(`shipped kernels GPU test seed: ${SEED} (replay with SHIPPED_SEED=${SEED})`);
  const paged: PagedPlanRunner = pagedPlanRunner(gpu, "shipped paged");
  const sparse: PagedPlanRunner = pagedPlanRunner(gpu, "shipped sparse", ["pastKeyT", "pastValueT"]);
  afterEach(async () => {
    await expectNoUncapturedErrors(gpu);
  });
  afterAll(() => {
    if (table.length) console.log(["case | variant | max err/tol", ...table].join("\n"));
    gpu.destroy();
  });

  for (const [i, shape] of PAGED.entries()) {
    for (const prefill of [false, true]) {
      const { packed, slots } = pagedLayout(i, prefill);
      const name = caseName(i, prefill);
      if (runs(name))
        test(
          name,
          async () => {
            const c = makePagedCase(shape, packed, slots, rng(SEED + 7919 * i + (prefill ? 104729 : 0)), prefill ? PREFILL : undefined);
            const plan = planners.PagedAttention(c.call as Parameters<typeof planners.PagedAttention>[0]) as unknown as Plan;
            expect(plan.variant.startsWith(packed ? "packed" : "separate"), plan.variant).toBe(true);
            const got = await paged(plan, shipped, pagedCaseTensors(c));
            const { maxRatio, worst, cacheErrors } = comparePagedRun(shape, c, got);
            table.push(`${name} (${c.summary}) | ${plan.variant} | ${maxRatio.toFixed(3)}`);
            expect(maxRatio, `seed ${SEED}, ${c.summary}, worst at ${worst}`).toBeLessThanOrEqual(1);
            expect(cacheErrors, `seed ${SEED}`).toEqual([]);
          },
          300_000,
        );
    }
  }

  for (const [i, c] of SPARSE.entries()) {
    if (runs(`SparseAttention ${c.name}`))
      test(`SparseAttention ${c.name}`, async () => {
        const d = makeSparseCase(c, rng(SEED + 15485863 * (i + 1)));
        const plan = planners.SparseAttention(d.call as Parameters<typeof planners.SparseAttention>[0]) as unknown as Plan;
        const got = await sparse(plan, shipped, sparseCaseTensors(d));
        const expected = sparseCaseReference(d);
        const out = new Uint16Array(got.outputT);
        let maxRatio = 0;
        let worst = "";
        for (let k = 0; k < expected.output.length; k++) {
          const want = expected.output[k];
          const ratio = Math.abs(f16ToF32(out[k]) - want) / (5e-3 + 5e-3 * Math.abs(want));
          if (!(ratio <= maxRatio)) {
            maxRatio = Number.isNaN(ratio) ? Infinity : ratio;
            worst = `[${k}] got ${f16ToF32(out[k])} want ${want}`;
          }
        }
        table.push(`SparseAttention ${c.name} | ${plan.variant} | ${maxRatio.toFixed(3)}`);
        expect(maxRatio, `seed ${SEED}, worst ${worst}`).toBeLessThanOrEqual(1);
        const cacheErrors = sparseCacheErrors(c, d, expected, new Uint16Array(got.pastKeyT), new Uint16Array(got.pastValueT));
        expect(cacheErrors, `seed ${SEED}`).toEqual([]);
      }, 300_000);
  }
});
