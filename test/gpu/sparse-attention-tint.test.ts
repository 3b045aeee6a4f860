/**
 * Every SparseAttention shader the compiler emits for a grid of head sizes, GQA ratios, block sizes,
 * workgroup sizes, QKV layouts and rotary modes passes Tint (the build validates each one with
 * Dawn's null backend and fails otherwise), on the lavapipe profile and the H200's, for the
 * single-pass variants (MAX_SPLITS 1) and the split-K ones (SPLIT_MIN_KEYS 16: every cell splits).
 */
import { describe, expect, test } from "vitest";
import type { Call } from "../../src/model/plan.js";
import { compileForCalls } from "../support/compiled-plan.js";

/** Leaves that vary per call: no shader may be specialized on them. */
const PER_CALL =
  /dim\(shapes\.(queryT|keyT|valueT|keyTotalSequenceLengthsT|blockRowIndicesT|blockColIndicesT|totalSequenceLengthT), [0-9]\)|dim\(shapes\.pastKeyT, 0\)|dim\(shapes\.cosCacheT, 0\)/;

describe("SparseAttention shaders (Tint through the compiler)", () => {
  const grid: { packed: boolean; rotary: "off" | "split" | "interleaved"; H: number; N: number; Nkv: number; sbs: number; wg: number }[] =
    [];
  for (const packed of [false, true]) {
    for (const rotary of ["off", "split", "interleaved"] as const) {
      for (const H of [16, 24, 64, 128, 256]) {
        if (rotary !== "off" && H % 16 !== 0) continue;
        for (const [N, Nkv] of [
          [8, 8],
          [32, 8],
          [8, 1],
        ] as const) {
          for (const [sbs, wg] of [
            [16, 64],
            [64, 128],
            [128, 32],
          ] as const) {
            grid.push({ packed, rotary, H, N, Nkv, sbs, wg });
          }
        }
      }
    }
  }

  function gridCall(g: (typeof grid)[number]): Call {
    return (() => {
      const call: Call = {
        inputs: {
          queryT: { shape: [2, 3, g.packed ? (g.N + 2 * g.Nkv) * g.H : g.N * g.H], dtype: "float16" },
          keyT: g.packed ? null : { shape: [2, 3, g.Nkv * g.H], dtype: "float16" },
          valueT: g.packed ? null : { shape: [2, 3, g.Nkv * g.H], dtype: "float16" },
          pastKeyT: { shape: [2, g.Nkv, 512, g.H], dtype: "float16" },
          pastValueT: { shape: [2, g.Nkv, 512, g.H], dtype: "float16" },
          blockRowIndicesT: { shape: [4, 512 / g.sbs + 1], dtype: "int32" },
          blockColIndicesT: { shape: [4, 10], dtype: "int32" },
          totalSequenceLengthT: { shape: [1], dtype: "int32" },
          keyTotalSequenceLengthsT: { shape: [2], dtype: "int32" },
          cosCacheT: g.rotary === "off" ? null : { shape: [512, g.H / 2], dtype: "float16" },
          sinCacheT: g.rotary === "off" ? null : { shape: [512, g.H / 2], dtype: "float16" },
        },
        outputs: { outputT: { shape: [2, 3, g.N * g.H], dtype: "float16" } },
        attrs: {
          num_heads: g.N,
          kv_num_heads: g.Nkv,
          sparse_block_size: g.sbs,
          do_rotary: g.rotary === "off" ? 0 : 1,
          rotary_interleaved: g.rotary === "interleaved" ? 1 : 0,
        },
      };
      return call;
    })();
  }

  const modes = [
    { name: "single-pass", tunables: { MAX_SPLITS: 1 }, suffix: "", attend: ["attend"] },
    { name: "split-K", tunables: { SPLIT_MIN_KEYS: 16 }, suffix: "_splitk", attend: ["split_attend", "merge"] },
  ];
  for (const profile of ["mobile-1024-f16", "desktop-32k"])
    for (const mode of modes) {
      test(`every ${mode.name} variant's shaders compile on ${profile}`, async () => {
        let shaders = 0;
        for (const wg of [...new Set(grid.map((g) => g.wg))]) {
          const cells = grid.filter((g) => g.wg === wg);
          const calls = cells.map(gridCall);
          const compiled = await compileForCalls("SparseAttention", calls, profile, { WORKGROUP_SIZE: wg, ...mode.tunables });
          cells.forEach((g, i) => {
            const plan = compiled.plan(calls[i]);
            expect(plan.variant, JSON.stringify(g)).toBe(
              `${g.packed ? "packed" : "separate"}${g.rotary === "off" ? "" : "_rotary"}${mode.suffix}`,
            );
            expect(plan.passes.map((p) => p.id)).toEqual([...(g.rotary === "off" ? ["append"] : ["append", "rotate_q"]), ...mode.attend]);
          });
          shaders += Object.keys(compiled.shaders).length;
          const described = JSON.parse(compiled.build.files.get(`${profile}/kernels.json`)!);
          for (const v of described.kernels.SparseAttention.variants)
            for (const p of v.passes) for (const leaf of p.key) expect(leaf, `${v.id}/${p.id}`).not.toMatch(PER_CALL);
        }
        expect(shaders).toBeGreaterThan(40);
      }, 600_000);
    }
});
