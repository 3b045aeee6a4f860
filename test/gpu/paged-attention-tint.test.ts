/// <reference types="@webgpu/types" />
/**
 * Tint validation (Dawn's null backend, no GPU needed) of every PagedAttention shader the manual
 * plan renders, over all eight variants and a grid of head sizes, GQA ratios and block sizes; and
 * a check that the templates read only per-model-stable render values.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { create, globals } from "webgpu";
import type { Call } from "../../src/runtime/plan.js";
import { planPagedAttention, renderTemplate } from "../support/paged-manual-plan.js";

Object.assign(globalThis, globals);
// Held for the whole file: Dawn tears its instance down when this object is collected.
const gpu = create(["backend=null"]);

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

/** The limits of profile mobile-1024-f16, capped at what the adapter offers. */
function profileLimits(adapter: GPUAdapter): Record<string, number> {
  const want: Record<string, number> = { maxComputeWorkgroupStorageSize: 32768, maxComputeInvocationsPerWorkgroup: 1024, maxComputeWorkgroupSizeX: 1024 };
  const have = adapter.limits as unknown as Record<string, number>;
  return Object.fromEntries(Object.entries(want).map(([k, v]) => [k, Math.min(v, have[k] ?? v)]));
}

function templateOf(passName: string): string {
  if (passName.endsWith("ScatterKV")) return "paged-scatter-kv.wgsl.jinja";
  if (passName.endsWith("Merge")) return "attn-flash-decode-splitk-merge.wgsl.jinja";
  return "paged-attention.wgsl.jinja";
}

describe("PagedAttention templates (Tint, null backend)", () => {
  let device: GPUDevice;
  beforeAll(async () => {
    const adapter = await gpu.requestAdapter();
    if (!adapter) throw new Error("Dawn's null backend gave no adapter");
    // The mobile-1024-f16 profile's limits as far as the null adapter goes (it has 16 KiB of workgroup storage).
    device = await adapter.requestDevice({ requiredFeatures: ["shader-f16"], requiredLimits: profileLimits(adapter) });
  });
  afterAll(() => device?.destroy());

  const grid: { variant: string; H: number; N: number; Nkv: number; bs: number }[] = [];
  for (const variant of VARIANTS) {
    for (const H of [64, 128, 256, 6]) {
      if (H === 6 && variant.endsWith("_splitk")) continue;
      for (const [N, Nkv] of [[8, 8], [32, 8], [8, 1]] as const) {
        // G = 8 at H = 256 needs more than the null adapter's 16 KiB of workgroup storage.
        if (H === 256 && N / Nkv === 8) continue;
        for (const bs of [16, 32]) grid.push({ variant, H, N, Nkv, bs });
      }
    }
  }

  test("every variant's shaders compile and their pipelines fit the limits", async () => {
    let checked = 0;
    for (const g of grid) {
      const packed = g.variant.startsWith("packed");
      const slots = g.variant.includes("_slot");
      const call: Call = {
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
        attrs: { num_heads: g.N, kv_num_heads: g.Nkv },
      };
      const r = planPagedAttention(call, device, { tunables: g.variant.endsWith("_splitk") ? {} : { MAX_SPLITS: 1 } });
      expect(r.plan.variant).toBe(g.variant);
      for (const pass of r.plan.passes) {
        const code = r.shaders[pass.shader];
        const module = device.createShaderModule({ code });
        const errors = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error");
        expect(errors.map((e) => `${g.variant} H=${g.H} ${pass.id} ${e.lineNum}:${e.linePos} ${e.message}`)).toEqual([]);
        device.pushErrorScope("validation");
        await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } }).catch((e: Error) => {
          throw new Error(`${g.variant} H=${g.H} ${pass.id}: ${e.message}`);
        });
        expect(await device.popErrorScope()).toBeNull();
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(grid.length * 2);
  }, 120_000);

  test("templates read only per-model-stable values", () => {
    const perCall = ["tokenCount", "batchSize", "maxBlocks", "numSplits", "pagedBaseWorkgroups", "pagedKeyCeiling", "pagedSplitCap", "pagedSplitScratchBytes", "pagedSplitStatsBytes"];
    const packedCall = grid.filter((g) => g.H === 128 && g.N === 32 && g.bs === 16);
    const reads = new Map<string, Set<string>>();
    for (const g of packedCall) {
      const packed = g.variant.startsWith("packed");
      const call: Call = {
        inputs: {
          queryT: { shape: [4, packed ? (g.N + 2 * g.Nkv) * g.H : g.N * g.H], dtype: "float16" },
          keyT: packed ? null : { shape: [4, g.Nkv * g.H], dtype: "float16" },
          valueT: packed ? null : { shape: [4, g.Nkv * g.H], dtype: "float16" },
          keyCacheT: { shape: [64, g.bs, g.Nkv, g.H], dtype: "float16" },
          valueCacheT: { shape: [64, g.bs, g.Nkv, g.H], dtype: "float16" },
          cumulativeSequenceLengthT: { shape: [3], dtype: "int32" },
          pastSeqlensT: { shape: [2], dtype: "int32" },
          blockTableT: { shape: [2, 32], dtype: "int32" },
          slotMappingT: g.variant.includes("_slot") ? { shape: [4], dtype: "int32" } : null,
        },
        attrs: { num_heads: g.N, kv_num_heads: g.Nkv },
      };
      const r = planPagedAttention(call, device, { tunables: g.variant.endsWith("_splitk") ? {} : { MAX_SPLITS: 1 } });
      for (const pass of r.plan.passes) {
        const ctx = r.contexts[pass.id];
        const shader = r.shaders[pass.shader];
        const full = renderTemplate(templateOf(pass.name), ctx);
        expect(full).toBe(shader);
        // A name is read when removing it changes the rendering (or makes it throw).
        for (const name of Object.keys(ctx)) {
          const { [name]: _dropped, ...rest } = ctx;
          let same: boolean;
          try {
            same = renderTemplate(templateOf(pass.name), rest) === full;
          } catch {
            same = false;
          }
          if (!same) {
            const set = reads.get(templateOf(pass.name)) ?? new Set<string>();
            set.add(name);
            reads.set(templateOf(pass.name), set);
          }
        }
      }
    }
    for (const [template, names] of reads) {
      console.log(`${template} reads: ${[...names].sort().join(", ")}`);
      expect([...names].filter((n) => perCall.includes(n)), template).toEqual([]);
    }
    expect(reads.size).toBe(3);
  });
});
