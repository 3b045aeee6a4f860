/// <reference types="@webgpu/types" />
import { readdirSync } from "node:fs";
import { test } from "vitest";
import { globals } from "webgpu";
import nunjucks from "nunjucks";
import type { Call } from "../../src/runtime/plan.js";
import { getGpuDevice } from "../support/gpu.js";
import { planSparseAttention } from "../support/sparse-manual-plan.js";

Object.assign(globalThis, globals);
const device = (await getGpuDevice())!;

test("probe", async () => {
  const call: Call = {
    inputs: {
      queryT: { shape: [1, 1, 4 * 64], dtype: "float16" },
      keyT: { shape: [1, 1, 64], dtype: "float16" },
      valueT: { shape: [1, 1, 64], dtype: "float16" },
      pastKeyT: { shape: [1, 1, 80, 64], dtype: "float16" },
      pastValueT: { shape: [1, 1, 80, 64], dtype: "float16" },
      blockRowIndicesT: { shape: [2, 6], dtype: "int32" },
      blockColIndicesT: { shape: [2, 10], dtype: "int32" },
      totalSequenceLengthT: { shape: [1], dtype: "int32" },
      keyTotalSequenceLengthsT: { shape: [1], dtype: "int32" },
    },
    attrs: { num_heads: 4, kv_num_heads: 1, sparse_block_size: 16 },
  };
  const r = planSparseAttention(call, device);
  const ctx = r.contexts.attend;
  const env = new nunjucks.Environment(new nunjucks.FileSystemLoader("/tmp/probe", { noCache: true }), { autoescape: false, throwOnUndefined: true, trimBlocks: true, lstripBlocks: true });
  const pass = r.plan.passes.find((p) => p.id === "attend")!;
  for (const f of readdirSync("/tmp/probe").sort()) {
    const code = env.render(f, ctx);
    const module = device.createShaderModule({ code });
    const info = await module.getCompilationInfo();
    if (info.messages.some((m) => m.type === "error")) { console.log(f, info.messages.map((m) => `${m.lineNum}: ${m.message}`)); continue; }
    const t0 = performance.now();
    const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
    const entries = pass.bindings.map((b) => ({ binding: b.binding, resource: { buffer: device.createBuffer({ size: b.type === "uniform" ? 32 : 65536, usage: b.type === "uniform" ? GPUBufferUsage.UNIFORM : GPUBufferUsage.STORAGE }) } }));
    const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    const enc = device.createCommandEncoder();
    const cp = enc.beginComputePass();
    cp.setPipeline(pipeline); cp.setBindGroup(0, bg); cp.dispatchWorkgroups(1, 1, 1); cp.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    console.log(f, (performance.now() - t0).toFixed(0), "ms");
  }
}, 600000);
