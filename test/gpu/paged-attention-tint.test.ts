/**
 * Every PagedAttention shader the compiler emits, for all eight variants over a grid of head sizes,
 * GQA ratios and block sizes, passes Tint (the build validates each with Dawn's null backend and
 * checks workgroup size and storage against the profile's limits, failing otherwise), on the
 * lavapipe profile and the H200's; and no shader is specialized on a per-call value.
 */
import { describe, expect, test } from "vitest";
import type { Call } from "../../src/model/plan.js";
import { compileForCalls } from "../support/compiled-plan.js";

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

/** Leaves that vary per call (token count, batch, table width, cache capacity): no shader may depend on them. */
const PER_CALL =
  /dim\(shapes\.(queryT|keyT|valueT|outputT|cumulativeSequenceLengthT|pastSeqlensT|blockTableT|slotMappingT), [0-9]\)|dim\(shapes\.(keyCacheT|valueCacheT), 0\)/;

const grid: { variant: string; H: number; N: number; Nkv: number; bs: number }[] = [];
for (const variant of VARIANTS) {
  for (const H of [64, 128, 256, 6]) {
    if (H === 6 && variant.endsWith("_splitk")) continue;
    for (const [N, Nkv] of [
      [8, 8],
      [32, 8],
      [8, 1],
    ] as const)
      for (const bs of [16, 32]) grid.push({ variant, H, N, Nkv, bs });
  }
}

function gridCall(g: (typeof grid)[number]): Call {
  const packed = g.variant.startsWith("packed");
  const slots = g.variant.includes("_slot");
  return {
    inputs: {
      queryT: { shape: [4, packed ? (g.N + 2 * g.Nkv) * g.H : g.N * g.H], dtype: "float16" },
      keyT: packed ? null : { shape: [4, g.Nkv * g.H], dtype: "float16" },
      valueT: packed ? null : { shape: [4, g.Nkv * g.H], dtype: "float16" },
      keyCacheT: { shape: [64, g.bs, g.Nkv, g.H], dtype: "float16" },
      valueCacheT: { shape: [64, g.bs, g.Nkv, g.H], dtype: "float16" },
      cumulativeSequenceLengthT: { shape: [3], dtype: "int32" },
      pastSeqlensT: { shape: [2], dtype: "int32" },
      blockTableT: { shape: [2, 32], dtype: "int32" },
      slotMappingT: slots ? { shape: [4], dtype: "int32" } : null,
    },
    outputs: { outputT: { shape: [4, g.N * g.H], dtype: "float16" } },
    attrs: { num_heads: g.N, kv_num_heads: g.Nkv },
  };
}

describe("PagedAttention shaders (Tint through the compiler)", () => {
  for (const profile of ["mobile-1024-f16", "desktop-32k"]) {
    for (const split of [false, true]) {
      test(`${split ? "split-K" : "single-pass"} variants compile on ${profile}`, async () => {
        const cells = grid.filter((g) => g.variant.endsWith("_splitk") === split && !(g.H === 6 && split));
        const calls = cells.map(gridCall);
        const compiled = await compileForCalls("PagedAttention", calls, profile, split ? { SPLIT_MIN_KEYS: 8 } : { MAX_SPLITS: 1 });
        cells.forEach((g, i) => {
          const plan = compiled.plan(calls[i]);
          expect(plan.variant, JSON.stringify(g)).toBe(g.variant);
          // The attention design follows the profile the shader is rendered for: with subgroups
          // (desktop-32k), head size 128 and at most 8 query heads per KV head, the row design
          // (a 32-lane workgroup), single pass and split-K alike.
          const attention = plan.passes.find((p) => p.id === "main" || p.id === "split_attention")!;
          const wgsl = compiled.shaders[attention.shader];
          const rows = profile === "desktop-32k" && g.H === 128 && g.N / g.Nkv <= 8;
          expect(wgsl.includes("fn attend_rows("), JSON.stringify(g)).toBe(rows);
          expect(/^enable subgroups;$/m.test(wgsl), JSON.stringify(g)).toBe(rows);
        });
        expect(Object.keys(compiled.shaders).length).toBeGreaterThan(20);
        const described = JSON.parse(compiled.build.files.get(`${profile}/kernels.json`)!);
        for (const v of described.kernels.PagedAttention.variants)
          for (const p of v.passes) for (const leaf of p.key) expect(leaf, `${v.id}/${p.id}`).not.toMatch(PER_CALL);
      }, 600_000);
    }
  }

  // The row design's builds for 8- and 16-lane subgroups (ROW_SUBGROUP_SIZE) with its fallback, as a
  // user could build them (lavapipe runs W = 8 with the fallback replaced, in
  // test/gpu/paged-attention-row.test.ts): each way a tile of W keys meets blocks (bs 16: a tile
  // inside a block; W / 2: two blocks per tile; 12 or 24: a lookup per key) with 1, 7 and 8 query
  // heads per KV head, split-K and single pass (a 32-lane workgroup).
  for (const W of [8, 16]) {
    test(`the row design built for ${W}-lane subgroups`, async () => {
      for (const split of [true, false]) {
        const cells: { variant: string; H: number; N: number; Nkv: number; bs: number }[] = [];
        for (const [N, Nkv] of [
          [8, 8],
          [7, 1],
          [8, 1],
        ] as const)
          for (const bs of [16, W / 2, W === 8 ? 12 : 24])
            cells.push({ variant: split ? "separate_derived_splitk" : "packed_slot", H: 128, N, Nkv, bs });
        const calls = cells.map(gridCall);
        const tunables = split ? { SPLIT_MIN_KEYS: 8 } : { MAX_SPLITS: 1, WORKGROUP_SIZE: 32 };
        const compiled = await compileForCalls("PagedAttention", calls, "desktop-32k", { ...tunables, ROW_SUBGROUP_SIZE: W });
        cells.forEach((g, i) => {
          const plan = compiled.plan(calls[i]);
          expect(plan.variant, JSON.stringify(g)).toBe(g.variant);
          const attention = plan.passes.find((p) => p.id === "main" || p.id === "split_attention")!;
          const wgsl = compiled.shaders[attention.shader];
          expect(wgsl, JSON.stringify(g)).toContain(`fn reduce_pairs(p: array<f32, ${W}>, lane: u32) -> f32 {`);
          // 32 / W streams of W lanes, each inside one subgroup of at least W lanes.
          expect(wgsl, JSON.stringify(g)).toContain(`if (sg_size < ${W}u || sg_id != lane % sg_size) {`);
          expect(wgsl, JSON.stringify(g)).toContain(`attend_rows(wid, nwg, lane % ${W}u, lane / ${W}u, sg_id - lane % ${W}u);`);
          expect(wgsl, JSON.stringify(g)).toContain("attend_key_per_lane(wid, nwg, lane);");
          expect(wgsl, JSON.stringify(g)).not.toContain("not_rows");
        });
      }
    }, 600_000);
  }
});
