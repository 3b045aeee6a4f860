/// <reference types="@webgpu/types" />
/**
 * Tint validation (Dawn's null backend, no GPU needed) of every SparseAttention shader the manual
 * plan renders, over all four variants and a grid of head sizes, GQA ratios, block sizes and
 * workgroup sizes; pipeline creation checks the workgroup storage and size limits too.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { create, globals } from "webgpu";
import type { Call } from "../../src/runtime/plan.js";
import { planSparseAttention, renderSparseTemplate } from "../support/sparse-manual-plan.js";

Object.assign(globalThis, globals);
// Held for the whole file: if Dawn's GPU object were garbage collected, its instance would go
// with it while the device is still in use (seen as a crash of the test worker).
const NULL_GPU = create(["backend=null"]);
const SHADER_OF: Readonly<Record<string, string>> = {
  append: "sparse-kv-append.wgsl.jinja",
  rotate_q: "sparse-rotary-q.wgsl.jinja",
  attend: "sparse-attention.wgsl.jinja",
};

describe("SparseAttention templates (Tint, null backend)", () => {
  let tint: GPUDevice;
  beforeAll(async () => {
    const adapter = await NULL_GPU.requestAdapter();
    if (!adapter) throw new Error("Dawn's null backend gave no adapter");
    tint = await adapter.requestDevice({ requiredFeatures: ["shader-f16"] });
  });
  afterAll(() => tint?.destroy());

  const grid: { packed: boolean; rotary: "off" | "split" | "interleaved"; H: number; N: number; Nkv: number; sbs: number; wg: number }[] = [];
  for (const packed of [false, true]) {
    for (const rotary of ["off", "split", "interleaved"] as const) {
      for (const H of [16, 24, 64, 128, 256]) {
        if (rotary !== "off" && H % 16 !== 0) continue;
        for (const [N, Nkv] of [[8, 8], [32, 8], [8, 1]] as const) {
          for (const [sbs, wg] of [[16, 64], [64, 128], [128, 32]] as const) {
            grid.push({ packed, rotary, H, N, Nkv, sbs, wg });
          }
        }
      }
    }
  }

  test("every variant's shaders compile", async () => {
    const checked = new Set<string>();
    for (const g of grid) {
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
        attrs: {
          num_heads: g.N,
          kv_num_heads: g.Nkv,
          sparse_block_size: g.sbs,
          do_rotary: g.rotary === "off" ? 0 : 1,
          rotary_interleaved: g.rotary === "interleaved" ? 1 : 0,
        },
      };
      const { plan, shaders } = planSparseAttention(call, tint, { tunables: { WORKGROUP_SIZE: g.wg } });
      expect(plan.passes.map((p) => p.id)).toEqual(g.rotary === "off" ? ["append", "attend"] : ["append", "rotate_q", "attend"]);
      for (const [id, code] of Object.entries(shaders)) {
        if (checked.has(id)) continue;
        checked.add(id);
        const module = tint.createShaderModule({ code });
        const info = await module.getCompilationInfo();
        const errors = info.messages.filter((m) => m.type === "error").map((m) => `${m.lineNum}:${m.linePos} ${m.message}`);
        expect(errors, `${JSON.stringify(g)}\n${code}`).toEqual([]);
        // Pipeline creation checks the workgroup storage and size limits too.
        tint.pushErrorScope("validation");
        await tint.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } }).catch((e: Error) => {
          throw new Error(`${JSON.stringify(g)}: ${e.message}`);
        });
        expect(await tint.popErrorScope()).toBeNull();
      }
    }
    expect(checked.size).toBeGreaterThan(40);
  }, 300_000);

  test("templates read only per-model-stable values", () => {
    // Values that vary per call: a template must not read them (they reach shaders through the
    // params uniform, num_workgroups and arrayLength only).
    const perCall = ["batchSize", "seqLen", "maxBlocks", "maxNnz", "appendCount", "rotaryCount", "indexFits", "bindingsFit", "dispatchFits"];
    const reads = new Map<string, Set<string>>();
    for (const packed of [false, true]) {
      for (const rotary of [0, 1, 2]) {
        const call: Call = {
          inputs: {
            queryT: { shape: [2, 3, packed ? 16 * 64 : 8 * 64], dtype: "float16" },
            keyT: packed ? null : { shape: [2, 3, 4 * 64], dtype: "float16" },
            valueT: packed ? null : { shape: [2, 3, 4 * 64], dtype: "float16" },
            pastKeyT: { shape: [2, 4, 256, 64], dtype: "float16" },
            pastValueT: { shape: [2, 4, 256, 64], dtype: "float16" },
            blockRowIndicesT: { shape: [2, 17], dtype: "int32" },
            blockColIndicesT: { shape: [2, 40], dtype: "int32" },
            totalSequenceLengthT: { shape: [1], dtype: "int32" },
            keyTotalSequenceLengthsT: { shape: [2], dtype: "int32" },
            cosCacheT: rotary ? { shape: [256, 32], dtype: "float16" } : null,
            sinCacheT: rotary ? { shape: [256, 32], dtype: "float16" } : null,
          },
          attrs: { num_heads: 8, kv_num_heads: 4, sparse_block_size: 16, do_rotary: rotary ? 1 : 0, rotary_interleaved: rotary === 2 ? 1 : 0 },
        };
        const r = planSparseAttention(call, tint);
        for (const pass of r.plan.passes) {
          const template = SHADER_OF[pass.id];
          const ctx = r.contexts[pass.id];
          const full = renderSparseTemplate(template, ctx);
          expect(full).toBe(r.shaders[pass.shader]);
          // A name is read when removing it changes the rendering (or makes it throw).
          for (const name of Object.keys(ctx)) {
            const { [name]: _dropped, ...rest } = ctx;
            let same: boolean;
            try {
              same = renderSparseTemplate(template, rest) === full;
            } catch {
              same = false;
            }
            if (!same) reads.set(template, (reads.get(template) ?? new Set<string>()).add(name));
          }
        }
      }
    }
    const table = Object.fromEntries([...reads].map(([t, names]) => [t, [...names].sort()]));
    console.log(`template reads: ${JSON.stringify(table)}`);
    for (const names of Object.values(table)) expect(names.filter((n) => perCall.includes(n))).toEqual([]);
    expect(table["sparse-kv-append.wgsl.jinja"]).toEqual(
      [
        "DISPATCH_FOLD_WIDTH", "appendWorkgroupSize", "env", "headSize", "kvNumHeads", "kvSource", "maxCacheSeq", "numHeads",
        "packedQkv", "packedStride", "rotaryDim", "rotaryHalf", "rotaryInterleaved", "scalar", "usesRotary", "vSource",
      ].sort(),
    );
  });
});

