/// <reference types="@webgpu/types" />
/**
 * Runs attention plans (PagedAttention; SparseAttention with its caches named in `readBack`) on a
 * test device with the runtime's executePlan, the way the GPU tests check them: tensors uploaded,
 * the output poisoned, a fresh scratch pool whose buffers are
 * poisoned with NaN and huge finite values (acquire, fill, give back; executePlan then takes the
 * same buffers), so a split partial or statistic the kernels fail to write cannot pass for another
 * run's data; the output and both caches read back. One pipeline cache per runner: shader ids are
 * content hashes, so a shader that several cases (or profiles) use is compiled once per run even
 * where the driver keeps no cache of its own (lavapipe with a cold shader cache spends seconds on each).
 */
import type { Plan } from "../../src/model/plan.js";
import { executePlan } from "../../src/runtime/execute.js";
import { PipelineCache } from "../../src/runtime/pipeline-cache.js";
import { ScratchPool } from "../../src/runtime/scratch-pool.js";
import { createBuffer, poisonBuffer, poisonBufferCycle, readBuffer, uploadBuffer } from "./gpu.js";

/** Runs a plan whose shaders come from `shaders`; resolves to outputT and the `readBack` tensors as read back. */
export type PagedPlanRunner = (
  plan: Plan,
  shaders: Readonly<Record<string, string>>,
  tensors: Readonly<Record<string, ArrayBufferView>>,
) => Promise<Record<string, ArrayBuffer>>;

export function pagedPlanRunner(
  device: GPUDevice,
  label: string,
  readBack: readonly string[] = ["keyCacheT", "valueCacheT"],
): PagedPlanRunner {
  const shaderTexts = new Map<string, string>();
  const pipelines = new PipelineCache(device, (id) => {
    const text = shaderTexts.get(id);
    if (text === undefined) throw new Error(`no shader ${id} in any compiled planner`);
    return text;
  });
  return async (plan, shaders, tensors) => {
    for (const [id, text] of Object.entries(shaders)) shaderTexts.set(id, text);
    const buffers: Record<string, GPUBuffer> = {};
    for (const [id, bytes] of Object.entries(tensors)) buffers[id] = uploadBuffer(device, bytes);
    const outBytes = (plan.outputShapes.outputT ?? []).reduce((a, b) => a * b, 1) * 2;
    buffers.outputT = createBuffer(device, outBytes);
    poisonBuffer(device, buffers.outputT);
    const scratchPool = new ScratchPool(device, `${label} scratch`);
    const held = Object.values(plan.scratch).map((size) => scratchPool.acquire(Math.max(size, 4)));
    for (const b of held) poisonBufferCycle(device, b);
    scratchPool.release(...held);
    await executePlan(device, pipelines, plan, buffers, { checkErrors: true, scratchPool });
    const out: Record<string, ArrayBuffer> = {};
    out.outputT = await readBuffer(device, buffers.outputT, 0, outBytes);
    for (const id of readBack) out[id] = await readBuffer(device, buffers[id], 0, tensors[id].byteLength);
    for (const b of Object.values(buffers)) b.destroy();
    scratchPool.destroy();
    return out;
  };
}
