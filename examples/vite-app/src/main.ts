/**
 * The kernelc Vite example: open the generated bundle on this browser's GPU (loadBundle picks the
 * best profile the adapter can run), plan one PagedAttention decode call with the profile's
 * dispatcher, run it, and check the result against a CPU reference.
 */
import bundleIndex from "../out/index.js";
import { executePlan, f16ArrayToF32, f32ArrayToF16, loadBundle, roundToF16 } from "kernelc/runtime";
import { decodeReference, type DecodeShape } from "./reference.js";

const statusEl = document.querySelector<HTMLElement>("#status");
const logEl = document.querySelector<HTMLElement>("#log");

function log(line: string): void {
  if (logEl) logEl.textContent += line + "\n";
}

function setStatus(status: "pass" | "fail", text: string): void {
  if (!statusEl) return;
  statusEl.dataset["status"] = status;
  statusEl.textContent = text;
}

/** Deterministic pseudo-random f16 values in [-1, 1). */
function randomF16(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = roundToF16(s / 2 ** 31 - 1);
  }
  return out;
}

async function run(): Promise<void> {
  if (!navigator.gpu) throw new Error("WebGPU is not available in this browser");
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error("no WebGPU adapter");
  const bundle = await loadBundle(adapter, bundleIndex);
  const { device, cache } = bundle;
  log(`profile: ${bundle.profile}`);

  // Two sequences decoding one token each, with 20 and 37 tokens already in the paged cache.
  const shape: DecodeShape = { numHeads: 32, kvNumHeads: 8, headSize: 128, blockSize: 16, numBlocks: 8, maxBlocks: 4 };
  const batch = 2;
  const hidden = shape.numHeads * shape.headSize;
  const kvHidden = shape.kvNumHeads * shape.headSize;
  const cacheShape = [shape.numBlocks, shape.blockSize, shape.kvNumHeads, shape.headSize];
  const cacheElems = cacheShape.reduce((a, b) => a * b, 1);
  const inputs = {
    query: randomF16(batch * hidden, 1),
    key: randomF16(batch * kvHidden, 2),
    value: randomF16(batch * kvHidden, 3),
    keyCache: randomF16(cacheElems, 4),
    valueCache: randomF16(cacheElems, 5),
    pastSeqlens: Int32Array.from([20, 37]),
    blockTable: Int32Array.from([5, 2, 7, 0, 1, 6, 3, 4]),
  };
  const cumulative = Int32Array.from([0, 1, 2]);

  const f16 = "float16";
  const plan = bundle.dispatcher.planners.PagedAttention({
    inputs: {
      queryT: { shape: [batch, hidden], dtype: f16 },
      keyT: { shape: [batch, kvHidden], dtype: f16 },
      valueT: { shape: [batch, kvHidden], dtype: f16 },
      keyCacheT: { shape: cacheShape, dtype: f16 },
      valueCacheT: { shape: cacheShape, dtype: f16 },
      cumulativeSequenceLengthT: { shape: [batch + 1], dtype: "int32" },
      pastSeqlensT: { shape: [batch], dtype: "int32" },
      blockTableT: { shape: [batch, shape.maxBlocks], dtype: "int32" },
    },
    outputs: { outputT: { shape: [batch, hidden], dtype: f16 } },
    attrs: { num_heads: shape.numHeads, kv_num_heads: shape.kvNumHeads },
  });
  log(`variant: ${plan.variant}, passes: ${plan.passes.map((p) => p.name).join(", ")}`);

  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const upload = (data: Uint16Array | Int32Array): GPUBuffer => {
    const buffer = device.createBuffer({ size: Math.max(4, Math.ceil(data.byteLength / 4) * 4), usage });
    device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
    return buffer;
  };
  const output = device.createBuffer({ size: batch * hidden * 2, usage });
  // Poison the output (NaN as f16) so a result the kernel did not write cannot pass.
  device.queue.writeBuffer(output, 0, new Uint16Array(batch * hidden).fill(0x7e00));
  await executePlan(device, cache, plan, {
    queryT: upload(f32ArrayToF16(inputs.query)),
    keyT: upload(f32ArrayToF16(inputs.key)),
    valueT: upload(f32ArrayToF16(inputs.value)),
    keyCacheT: upload(f32ArrayToF16(inputs.keyCache)),
    valueCacheT: upload(f32ArrayToF16(inputs.valueCache)),
    cumulativeSequenceLengthT: upload(cumulative),
    pastSeqlensT: upload(inputs.pastSeqlens),
    blockTableT: upload(inputs.blockTable),
    outputT: output,
  });
  const readback = device.createBuffer({ size: output.size, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(output, 0, readback, 0, output.size);
  device.queue.submit([encoder.finish()]);
  await readback.mapAsync(GPUMapMode.READ);
  const gpu = f16ArrayToF32(new Uint16Array(readback.getMappedRange().slice(0)));
  readback.unmap();

  const cpu = decodeReference(shape, inputs);
  let maxError = 0;
  for (let i = 0; i < cpu.length; i++) {
    const error = Math.abs((gpu[i] ?? NaN) - (cpu[i] ?? NaN));
    maxError = Number.isNaN(error) ? Infinity : Math.max(maxError, error);
  }
  const tolerance = 1e-2;
  log(`max |gpu - cpu| over ${cpu.length} outputs: ${maxError.toExponential(2)} (tolerance ${tolerance})`);
  if (maxError <= tolerance) setStatus("pass", `PASS: the GPU result matches the CPU reference (profile ${bundle.profile})`);
  else setStatus("fail", `FAIL: the GPU result differs from the CPU reference by ${maxError}`);
}

run().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  setStatus("fail", `FAIL: ${err instanceof Error ? err.message : String(err)}`);
});
