#!/usr/bin/env node
// The paged K/V read pattern alone, as a ceiling for PagedAttention decode: one 32-lane workgroup
// per (sequence, KV head, split) reads every K and V row of its keys (256-byte head rows of
// [blocks, bs, 8 KV heads, 128] f16 caches, through a shuffled block table) and sums them, with no
// attention math; 8-byte (vec2<u32>) or 16-byte (vec4<u32>) loads per lane, 1 or 4 workgroups'
// work per workgroup. Same shapes and split counts as bench/gpu/attention.mjs. Timestamp queries,
// medians of 60 runs after 300 ms of warm-up. Run on the H200 like attention.mjs
// (scripts/device-run.sh's environment); MICRO_SMALL=1 runs two tiny shapes (lavapipe smoke test).
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { median, shuffled, timestamps } from "./timing.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
process.env.VK_DRIVER_FILES = process.env.KERNELC_VK_ICD ?? process.env.VK_DRIVER_FILES ?? path.join(root, ".lavapipe/lvp_icd.json");
process.env.XDG_RUNTIME_DIR ||= "/tmp";
const { create, globals } = await import("webgpu");
Object.assign(globalThis, globals);
const flags = (process.env.KERNELC_DAWN_FLAGS ?? "").split(/[\s,]+/).filter(Boolean);
const gpu = create(["backend=vulkan", ...flags]);
globalThis.keep = gpu;
const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
const L = adapter.limits;
const device = await adapter.requestDevice({
  requiredFeatures: ["timestamp-query"],
  requiredLimits: { maxStorageBufferBindingSize: L.maxStorageBufferBindingSize, maxBufferSize: L.maxBufferSize },
});
device.addEventListener("uncapturederror", (e) => console.log("GPU error:", e.error.message));
const U = { COPY_DST: 8, STORAGE: 0x80, UNIFORM: 0x40 };
const { querySet: qs, read: readTimestamps } = timestamps(device, 256);
function buf(bytes, fill) {
  const b = device.createBuffer({ size: bytes, usage: U.STORAGE | U.COPY_DST, mappedAtCreation: !!fill });
  if (fill) {
    fill(new Uint32Array(b.getMappedRange()));
    b.unmap();
  }
  return b;
}
const NKV = 8;
function shader({ lw, bs, warps }) {
  const rowsPerLoad = lw === 16 ? 2 : 1;
  const vec = lw === 16 ? "vec4<u32>" : "vec2<u32>";
  const perRow = lw === 16 ? 16 : 32; // elements of `vec` per 256-byte row
  let body = "";
  const loads = 32 / rowsPerLoad;
  for (const which of ["kc", "vc"]) {
    for (let i = 0; i < loads; i++) {
      const s = lw === 16 ? `(${2 * i}u + half)` : `${i}u`;
      body += `    let ${which}${i} = ${which}[rowOf(tile + ${s}, b, kvh, mb) * ${perRow}u + col];\n`;
    }
  }
  let sum = "";
  for (const which of ["kc", "vc"])
    for (let i = 0; i < loads; i++) {
      if (lw === 16)
        sum += `    acc += vec4<f32>(unpack2x16float(${which}${i}.x), unpack2x16float(${which}${i}.y)) + vec4<f32>(unpack2x16float(${which}${i}.z), unpack2x16float(${which}${i}.w));\n`;
      else sum += `    acc += vec4<f32>(unpack2x16float(${which}${i}.x), unpack2x16float(${which}${i}.y));\n`;
    }
  return `
@group(0) @binding(0) var<storage, read> kc: array<${vec}>;
@group(0) @binding(1) var<storage, read> vc: array<${vec}>;
@group(0) @binding(2) var<storage, read> table: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> p: vec4<u32>; // ctx, splits, maxBlocks, 0
fn rowOf(s: u32, b: u32, kvh: u32, mb: u32) -> u32 {
  let e = u32(table[b * mb + s / ${bs}u]);
  return (e * ${bs}u + s % ${bs}u) * ${NKV}u + kvh;
}
@compute @workgroup_size(${32 * warps})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let lane = li % 32u;
  let warp = li / 32u;
  let b = wid.x;
  let kvh = wid.y;
  let split = wid.z * ${warps}u + warp;
  let ctx = p.x;
  let chunk = ctx / p.y;
  let mb = p.z;
  let half = lane / 16u;
  let col = ${lw === 16 ? "lane % 16u" : "lane"};
  var acc = vec4<f32>(0.0);
  for (var tile = split * chunk; tile < (split + 1u) * chunk; tile += 32u) {
${body}${sum}  }
  out[((b * ${NKV}u + kvh) * p.y + split) * 32u + lane] = acc;
}`;
}
async function run(cfg, B, ctx, bs, splits) {
  const nb = (B * ctx) / bs;
  const bytes = nb * bs * NKV * 256;
  const kc = buf(bytes),
    vc = buf(bytes);
  const table = buf(nb * 4, (a) => {
    const s = shuffled(nb);
    for (let i = 0; i < nb; i++) a[i] = s[i];
  });
  const out = buf(B * NKV * splits * 32 * 16);
  const ub = device.createBuffer({ size: 16, usage: U.UNIFORM | U.COPY_DST });
  device.queue.writeBuffer(ub, 0, new Uint32Array([ctx, splits, ctx / bs, 0]));
  const module = device.createShaderModule({ code: shader({ ...cfg, bs }) });
  const pipe = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const bg = device.createBindGroup({
    layout: pipe.getBindGroupLayout(0),
    entries: [kc, vc, table, out]
      .map((buffer, binding) => ({ binding, resource: { buffer } }))
      .concat([{ binding: 4, resource: { buffer: ub } }]),
  });
  const go = (tw) => {
    const e = device.createCommandEncoder();
    const ps = e.beginComputePass(tw ? { timestampWrites: tw } : {});
    ps.setPipeline(pipe);
    ps.setBindGroup(0, bg);
    ps.dispatchWorkgroups(B, NKV, splits / cfg.warps);
    ps.end();
    device.queue.submit([e.finish()]);
  };
  const until = performance.now() + 300;
  while (performance.now() < until) {
    for (let k = 0; k < 20; k++) go();
    await device.queue.onSubmittedWorkDone();
  }
  const reps = 60;
  for (let r = 0; r < reps; r++) go({ querySet: qs, beginningOfPassWriteIndex: 2 * r, endOfPassWriteIndex: 2 * r + 1 });
  const t = await readTimestamps(2 * reps);
  const ms = median(Array.from({ length: reps }, (_, r) => (t[2 * r + 1] - t[2 * r]) / 1e6));
  for (const x of [kc, vc, table, out, ub]) x.destroy();
  console.log(
    `micro lw=${cfg.lw} warps=${cfg.warps} B=${B} ctx=${ctx} bs=${bs} splits=${splits}: ${ms.toFixed(4)} ms, ${((2 * bytes) / ms / 1e9).toFixed(2)} TB/s`,
  );
}
// empty-dispatch cost
const shapes = process.env.MICRO_SMALL
  ? [
      [1, 1024, 16, 4],
      [2, 1024, 32, 4],
    ]
  : [
      [1, 32768, 16, 128],
      [8, 4096, 16, 16],
      [64, 4096, 16, 8],
      [32, 16384, 16, 16],
      [64, 4096, 32, 8],
      [32, 16384, 32, 16],
      [64, 4096, 16, 32],
      [1, 32768, 16, 256],
    ];
for (const [B, ctx, bs, splits] of shapes)
  for (const cfg of [
    { lw: 8, warps: 1 },
    { lw: 16, warps: 1 },
    { lw: 16, warps: 4 },
  ])
    await run(cfg, B, ctx, bs, splits);
