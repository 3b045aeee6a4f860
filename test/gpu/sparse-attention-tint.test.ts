/// <reference types="@webgpu/types" />
/**
 * Tint validation (Dawn's null backend, no GPU needed) of every SparseAttention shader the manual
 * plan renders, over all four variants and a grid of head sizes, GQA ratios, block sizes and
 * workgroup sizes; pipeline creation checks the workgroup storage and size limits too.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { create, globals } from "webgpu";
import type { Call } from "../../src/runtime/plan.js";
import { planSparseAttention } from "../support/sparse-manual-plan.js";

Object.assign(globalThis, globals);

describe("SparseAttention templates (Tint, null backend)", () => {
  let tint: GPUDevice;
  beforeAll(async () => {
    console.log("creating");
    const adapter = await create(["backend=null"]).requestAdapter();
    console.log("adapter");
    if (!adapter) throw new Error("Dawn's null backend gave no adapter");
    tint = await adapter.requestDevice({ requiredFeatures: ["shader-f16"] });
    console.log("device");
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
      console.log("plan", JSON.stringify(g));
      const { plan, shaders } = planSparseAttention(call, tint, { tunables: { WORKGROUP_SIZE: g.wg } });
      expect(plan.passes.map((p) => p.id)).toEqual(g.rotary === "off" ? ["append", "attend"] : ["append", "rotate_q", "attend"]);
      for (const [id, code] of Object.entries(shaders)) {
        if (checked.has(id)) continue;
        checked.add(id);
        console.log("module");
        const module = tint.createShaderModule({ code });
        console.log("info");
        const info = await module.getCompilationInfo();
        console.log("pipeline");
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
});
