#!/usr/bin/env node
// Kernel benchmark on a real GPU (the H200 through the device tool): PagedAttention decode shapes
// and SparseAttention sparse-versus-dense, timed with timestamp queries, next to this GPU's copy
// bandwidth measured in the same process. Plans come from the real compiler (dist/, built in
// memory for the profile the adapter selects) and run through the runtime's executePlan.
// Usage: node bench/gpu/attention.mjs [paged|sparse] [--out FILE]
//   (env: KERNELC_VK_ICD, KERNELC_DAWN_FLAGS; BENCH_PINS, BENCH_SHAPES narrow the paged run,
//   BENCH_SPARSE_PINS the sparse one; BENCH_TEMPLATES compares template folders in both;
//   BENCH_PROFILE=<name> runs that profile's shaders on a device with exactly its features, e.g.
//   desktop-48k on the H200 for f16 packed in u32 (no shader-f16) next to desktop-32k's native f16;
//   BENCH_DOUBLE_PASS=<pass id> runs that pass twice in a row, a diagnostic of per-launch costs;
//   BENCH_TABLES=shuffled,identity runs each paged shape with shuffled and with contiguous block tables)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { median, shuffled, timestamps } from "./timing.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dist = (p) => pathToFileURL(path.join(root, "dist", p)).href;
process.env.VK_DRIVER_FILES = process.env.KERNELC_VK_ICD ?? process.env.VK_DRIVER_FILES ?? path.join(root, ".lavapipe/lvp_icd.json");
process.env.XDG_RUNTIME_DIR ||= "/tmp";
const { create, globals } = await import("webgpu");
Object.assign(globalThis, globals);
const ts = (await import("typescript")).default;
const { compile: compileProject } = await import(dist("api/compile.js"));
const { loadConfig } = await import(dist("plan/config.js"));
const { chooseProfile } = await import(dist("runtime/device.js"));
const { PipelineCache } = await import(dist("runtime/pipeline-cache.js"));
const { executePlan } = await import(dist("runtime/execute.js"));
const { f32ToF16 } = await import(dist("runtime/f16.js"));

const outFile = process.argv.includes("--out") ? process.argv[process.argv.indexOf("--out") + 1] : undefined;
const flags = (process.env.KERNELC_DAWN_FLAGS ?? "").split(/[\s,]+/).filter(Boolean);
const gpu = create(["backend=vulkan", ...flags]);
globalThis.keepGpuAlive = gpu;
const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
if (!adapter) throw new Error("no GPU adapter");
const info = adapter.info;
const adapterName = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.replace(/\s+/g, " ").trim();

// The profile this adapter gets at run time, exactly as a user's app would choose it.
const profiles = JSON.parse(fs.readFileSync(path.join(root, "out/profiles.json"), "utf8")).profiles;
const manifests = profiles.map((p) => JSON.parse(fs.readFileSync(path.join(root, "out", p.manifest), "utf8")));
const manifest = process.env.BENCH_PROFILE
  ? manifests.find((m) => m.profile === process.env.BENCH_PROFILE)
  : chooseProfile(adapter, manifests);
if (!manifest)
  throw new Error(
    process.env.BENCH_PROFILE ? `no profile ${process.env.BENCH_PROFILE} in out/profiles.json` : `no profile fits adapter ${adapterName}`,
  );
const profile = manifest.profile;
const L = adapter.limits;
const device = await adapter.requestDevice({
  requiredFeatures: [...manifest.requiredFeatures, ...(adapter.features.has("timestamp-query") ? ["timestamp-query"] : [])],
  requiredLimits: {
    ...manifest.requiredLimits,
    maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
    maxBufferSize: L.maxBufferSize,
  },
});
device.addEventListener("uncapturederror", (e) => console.log("GPU error:", e.error.message));
const U = { COPY_SRC: 4, COPY_DST: 8, STORAGE: 0x80 };
const rows = [];
const log = (...a) => console.log(...a);
log(
  `adapter: ${adapterName}; profile ${process.env.BENCH_PROFILE ? "asked for (BENCH_PROFILE)" : "chosen"}: ${profile}; f16 ${manifest.requiredFeatures.includes("shader-f16") ? "native" : "packed in u32"}; host: ${os.cpus()[0]?.model}`,
);

const QUERIES = 1024;
const { querySet, read: readTimestamps } = timestamps(device, QUERIES);

// Random f16 data in [-1, 1], written in chunks.
const chunk = new Uint16Array(8 << 20);
for (let i = 0; i < chunk.length; i++) chunk[i] = f32ToF16(Math.random() * 2 - 1);
function randomF16Buffer(bytes) {
  const size = Math.ceil(bytes / 4) * 4;
  const buf = device.createBuffer({ size, usage: U.STORAGE | U.COPY_DST | U.COPY_SRC });
  for (let o = 0; o < size; o += chunk.byteLength) device.queue.writeBuffer(buf, o, chunk.buffer, 0, Math.min(chunk.byteLength, size - o));
  return buf;
}
function i32Buffer(values) {
  const a = Int32Array.from(values);
  const buf = device.createBuffer({ size: Math.max(4, a.byteLength), usage: U.STORAGE | U.COPY_DST });
  device.queue.writeBuffer(buf, 0, a);
  return buf;
}

// 1. Copy bandwidth: 1 GiB of vec4<f32>, bytes read + written over time. With `size`, that many
// bytes (a multiple of 16 MiB) instead: the small decode shapes move 128 MiB (64 MiB read and 64
// MiB written here), a size at which launch and ramp-up are part of any kernel's time.
async function copyBandwidth(size) {
  const bytes = size ?? Math.min(1 << 30, L.maxStorageBufferBindingSize - (L.maxStorageBufferBindingSize % (16 * 256 * 4096)));
  const src = randomF16Buffer(bytes);
  const dst = device.createBuffer({ size: bytes, usage: U.STORAGE });
  const module = device.createShaderModule({
    code: `@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = g.x + g.y * n.x * 256u;
  if (i < arrayLength(&src)) { dst[i] = src[i]; }
}`,
  });
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const bg = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [
      { binding: 0, resource: { buffer: src } },
      { binding: 1, resource: { buffer: dst } },
    ],
  });
  const dispatch = (tw) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass(tw ? { timestampWrites: tw } : {});
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    pass.dispatchWorkgroups(4096, bytes / 16 / 256 / 4096);
    pass.end();
    device.queue.submit([enc.finish()]);
  };
  // Keep the GPU busy for a while first so its clocks leave idle (the SM clock reads 345 MHz at rest).
  const warmUntil = performance.now() + 1500;
  while (performance.now() < warmUntil) {
    for (let k = 0; k < 20; k++) dispatch();
    await device.queue.onSubmittedWorkDone();
  }
  const reps = 40;
  for (let r = 0; r < reps; r++) dispatch({ querySet, beginningOfPassWriteIndex: 2 * r, endOfPassWriteIndex: 2 * r + 1 });
  const ts = await readTimestamps(2 * reps);
  const times = [];
  for (let r = 0; r < reps; r++) times.push((ts[2 * r + 1] - ts[2 * r]) / 1e6);
  src.destroy();
  dst.destroy();
  const ms = median(times);
  return { ms, tbps: (2 * bytes) / (ms / 1e3) / 1e12 };
}

// A pass that keeps every SM busy for about 0.1 ms, encoded before each timed run of the probes below
// (a single small workgroup leaves the GPU idle enough that its SM clock stays at 345 MHz, the
// idle clock, as nvidia-smi showed in session 18). It binds the probe's own buffer read-write, so
// Dawn puts a barrier between it and the timed pass, which therefore starts after it ends.
const heaterModule = device.createShaderModule({
  code: `@group(0) @binding(0) var<storage, read_write> buf: array<u32>;
override STEPS: u32;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  var x = f32(g.x);
  for (var k = 0u; k < STEPS; k++) { x = fma(x, 0.999, 0.001); }
  if (x == 12345.0) { buf[0] = g.x; }
}`,
});
// (A CPU adapter such as lavapipe gets a token loop: its timestamps are quantized anyway.)
const heaterPipeline = device.createComputePipeline({
  layout: "auto",
  compute: { module: heaterModule, entryPoint: "main", constants: { STEPS: /llvmpipe|swiftshader/i.test(adapterName) ? 1 : 40000 } },
});
const heaterGroups = new Map();
/** Encodes the heater pass on `buffer` (a storage buffer of the probe) into `enc`. */
function heat(enc, buffer) {
  let bg = heaterGroups.get(buffer);
  if (!bg) {
    bg = device.createBindGroup({ layout: heaterPipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer } }] });
    heaterGroups.set(buffer, bg);
  }
  const pass = enc.beginComputePass();
  pass.setPipeline(heaterPipeline);
  pass.setBindGroup(0, bg);
  pass.dispatchWorkgroups(1056);
  pass.end();
}

/**
 * Submits one compute pass dispatching `pipeline` with bind group `bg` over each of `counts`
 * workgroups (timestamped with `tw` when given), after the heater pass on `heated` when given.
 */
function submitProbe(pipeline, bg, counts, tw, heated) {
  const enc = device.createCommandEncoder();
  if (heated) heat(enc, heated);
  const pass = enc.beginComputePass(tw ? { timestampWrites: tw } : {});
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bg);
  for (const n of counts) pass.dispatchWorkgroups(n);
  pass.end();
  device.queue.submit([enc.finish()]);
}

/** The median of 200 timed runs of `submit(tw)` (a probe's pass), after 300 ms of untimed ones. */
async function medianProbeMs(submit) {
  for (const warmUntil = performance.now() + 300; performance.now() < warmUntil;) {
    for (let k = 0; k < 20; k++) submit(undefined);
    await device.queue.onSubmittedWorkDone();
  }
  const times = [];
  await timedRuns(
    200,
    2,
    async (o) => submit({ querySet, beginningOfPassWriteIndex: o, endOfPassWriteIndex: o + 1 }),
    (t, o) => times.push((t[o + 1] - t[o]) / 1e6),
  );
  return median(times);
}

// 1b. The timing floor: compute passes whose dispatches do nothing (a workgroup that writes one word
// only if a storage word it reads holds a value it never holds), timed exactly as the attention passes are (timestamps at
// the pass's beginning and end, runs submitted back to back): a pass without dispatches, one dispatch of 1 or 1024 32-lane
// workgroups, and two dependent dispatches of 1024 in one pass (the attention + merge shape: Dawn
// puts a barrier between them). Whatever these take, every kernel timed this way pays too. Each
// case runs after the heater (the clocks of a loaded GPU) and again without it (rows marked "GPU
// otherwise idle": what sessions 17 and earlier measured).
async function timingFloor() {
  const flag = device.createBuffer({ size: 16, usage: U.STORAGE });
  const module = device.createShaderModule({
    code: `@group(0) @binding(0) var<storage, read_write> flag: array<u32>;
@compute @workgroup_size(32) fn main(@builtin(local_invocation_index) i: u32) {
  if (flag[0] == 12345u) { flag[1] = i; }
}`,
  });
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: flag } }] });
  const cases = [
    { name: "no dispatch", counts: [] },
    { name: "one dispatch, 1 workgroup", counts: [1] },
    { name: "one dispatch, 1024 workgroups", counts: [1024] },
    { name: "two dispatches of 1024 workgroups", counts: [1024, 1024] },
  ];
  const out = [];
  for (const hot of [true, false])
    for (const c of cases) {
      const ms = await medianProbeMs((tw) => submitProbe(pipeline, bg, c.counts, tw, hot ? flag : undefined));
      out.push({ ...c, name: hot ? c.name : `${c.name} (GPU otherwise idle)`, ms });
    }
  flag.destroy();
  return [...out, ...(await memoryLatency()), ...(await codeProbes())];
}

// 1c. Memory latency as a kernel sees it: one lane follows a chain of N dependent loads (each
// index read is the next one's address), timed as the floor's passes are; the time per load is
// (t(64) - t(0)) / 64. Two chains: 512 words 128 bytes apart (L2-resident after the first run)
// and 2^20 words 1 KiB apart in a 1 GiB buffer (or the largest the device binds), in random order (each load a different line, most
// of them in DRAM and on another page: what a block-table read or a block's first row pays at
// worst). Each run starts where the previous one stopped, so the chains are walked, not repeated.
async function memoryLatency() {
  const module = device.createShaderModule({
    code: `@group(0) @binding(0) var<storage, read> chain: array<u32>;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
override STEPS: u32 = 0u;
@compute @workgroup_size(1) fn main() {
  var i = state[0];
  for (var k = 0u; k < STEPS; k++) { i = chain[i]; }
  state[0] = i;
}`,
  });
  const out = [];
  // The large chain's buffer: 1 GiB, or the largest power of two the device binds.
  const maxBytes = Math.min(2 ** 30, device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  const bigBytes = 2 ** Math.floor(Math.log2(maxBytes));
  for (const [name, words, stride] of [
    ["L2-resident chain (64 KiB)", 512, 32],
    [`DRAM chain (${bigBytes / 2 ** 20} MiB, random 1 KiB slots)`, bigBytes / 1024, 256],
  ]) {
    const order = shuffled(words);
    const host = new Uint32Array(words * stride);
    for (let k = 0; k < words; k++) host[order[k] * stride] = order[(k + 1) % words] * stride;
    const chain = device.createBuffer({ size: host.byteLength, usage: U.STORAGE | U.COPY_DST });
    device.queue.writeBuffer(chain, 0, host);
    const state = device.createBuffer({ size: 16, usage: U.STORAGE | U.COPY_DST });
    device.queue.writeBuffer(state, 0, new Uint32Array([order[0] * stride, 0, 0, 0]));
    const ms = {};
    for (const steps of [0, 64]) {
      const pipeline = device.createComputePipeline({
        layout: "auto",
        compute: { module, entryPoint: "main", constants: { STEPS: steps } },
      });
      const bg = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: chain } },
          { binding: 1, resource: { buffer: state } },
        ],
      });
      ms[steps] = await medianProbeMs((tw) => submitProbe(pipeline, bg, [1], tw, state));
    }
    chain.destroy();
    state.destroy();
    out.push({ name: `${name}: one dependent load`, counts: [1], ms: (ms[64] - ms[0]) / 64 });
  }
  return out;
}

// 1d. Instruction latency and code size as one workgroup sees them: a chain of 4096 dependent
// FMAs written out (straight-line code, about 64 KB of machine code) against the same chain as a
// loop, and 1024 dependent subgroup shuffles in a loop; one 32-lane workgroup, time per step. If the
// written-out chain costs more per step than the loop, fetching instructions limits a large
// unrolled shader's first workgroups.
async function codeProbes() {
  const n = 4096;
  const head = `@group(0) @binding(0) var<storage, read_write> data: array<f32>;
@group(0) @binding(1) var<uniform> count: vec4<u32>;
@compute @workgroup_size(32) fn main(@builtin(local_invocation_index) i: u32) {
  let a = data[0];
  let c = data[1];
  var x = data[2] + f32(i);`;
  const tail = `  if (x == 12345.0) { data[3] = x; }
}`;
  const chain = (k) => Array.from({ length: k }, () => "  x = fma(x, a, c);").join("\n");
  const probes = [
    ["no chain", `${head}\n${tail}`, 1],
    [`${n} dependent FMAs written out`, `${head}\n${chain(n)}\n${tail}`, n],
    [`${n} dependent FMAs in a loop`, `${head}\n  for (var k = 0u; k < count.x; k++) {\n${chain(1)}\n  }\n${tail}`, n],
    [
      `1024 dependent subgroup shuffles in a loop`,
      `enable subgroups;\n${head}\n  for (var k = 0u; k < count.x / 4u; k++) {\n    x = subgroupShuffleXor(x, 1u);\n  }\n${tail}`,
      1024,
    ],
  ];
  if (!device.features.has("subgroups")) probes.pop();
  const data = device.createBuffer({ size: 32, usage: U.STORAGE | U.COPY_DST });
  device.queue.writeBuffer(data, 0, new Float32Array([0.999, 0.001, 1, 0, 0, 0, 0, 0]));
  const count = device.createBuffer({ size: 16, usage: 0x40 | U.COPY_DST });
  device.queue.writeBuffer(count, 0, new Uint32Array([n, 0, 0, 0]));
  const ms = [];
  for (const [, code] of probes) {
    const pipeline = device.createComputePipeline({
      layout: "auto",
      compute: { module: device.createShaderModule({ code }), entryPoint: "main" },
    });
    const entries = [{ binding: 0, resource: { buffer: data } }];
    if (code.includes("count.x")) entries.push({ binding: 1, resource: { buffer: count } });
    const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    ms.push(await medianProbeMs((tw) => submitProbe(pipeline, bg, [1], tw, data)));
  }
  data.destroy();
  count.destroy();
  return probes.slice(1).map(([name, , steps], k) => ({ name: `${name}: one step`, counts: [1], ms: (ms[k + 1] - ms[0]) / steps }));
}

async function importDispatcher(source) {
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-")), "dispatcher.mjs");
  fs.writeFileSync(file, js);
  return import(pathToFileURL(file).href);
}

/**
 * Builds the repository for this profile with extra pinned tunables (and optionally another
 * templates folder, relative to the repository); returns the planner and shaders.
 */
async function compile(kernel, pins, templates) {
  const loaded = loadConfig(root);
  // The pins override the configured tunables of this profile (pins {} = as configured).
  const configured = loaded.config.tunables[profile] ?? {};
  const config = {
    ...loaded.config,
    ...(templates ? { templates } : {}),
    tunables: { ...loaded.config.tunables, [profile]: { ...configured, [kernel]: { ...configured[kernel], ...pins } } },
  };
  const res = await compileProject({ ...loaded, config }, { profiles: [profile] });
  const errors = res.diagnostics.filter((d) => d.severity === "error");
  if (errors.length) throw new Error(errors.map((d) => d.message).join("\n"));
  const mod = await importDispatcher(res.files.get(`${profile}/dispatcher.ts`));
  const shaders = {};
  for (const [rel, text] of res.files) if (rel.startsWith("shaders/")) shaders[rel.slice(8, -5)] = text;
  return { plan: mod.planners[kernel], shaders };
}

/** A configuration's name: its pins as `K=V ...`, or "configured tunables" for none. */
function pinsName(pins) {
  const entries = Object.entries(pins);
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(" ") : "configured tunables";
}

/**
 * Runs `reps` timed executions, `run(o)` writing `stamps` timestamps from query index o, in batches
 * that fit the query set, and calls `collect(t, o)` for each run once its batch is read back.
 */
async function timedRuns(reps, stamps, run, collect) {
  const perBatch = Math.floor(QUERIES / stamps);
  for (let done = 0; done < reps;) {
    const count = Math.min(perBatch, reps - done);
    for (let r = 0; r < count; r++) await run(r * stamps);
    const t = await readTimestamps(stamps * count);
    for (let r = 0; r < count; r++) collect(t, r * stamps);
    done += count;
  }
}

/**
 * Times a plan: the median GPU time of the plan as the runtime encodes it (every pass a dispatch of
 * one compute pass, timestamps at that pass's beginning and end), of the passes named in `focus`
 * alone encoded the same way, and of each pass encoded as its own compute pass (per-pass
 * timestamps: the per-pass figures and their sums, which also count what each pass boundary costs).
 */
async function timePlan(plan, shaders, tensors, focus, reps = 40, cache = new PipelineCache(device, (id) => shaders[id])) {
  const n = plan.passes.length;
  // Warm-up (pipelines, then at least 300 ms of back-to-back runs so the clocks are up), then reps
  // submitted back to back; timestamps read once per batch.
  for (let r = 0; r < 3; r++) await executePlan(device, cache, plan, tensors);
  await device.queue.onSubmittedWorkDone();
  for (const warmUntil = performance.now() + 300; performance.now() < warmUntil;) {
    for (let r = 0; r < 20; r++) await executePlan(device, cache, plan, tensors);
    await device.queue.onSubmittedWorkDone();
  }
  const onePass = async (p) => {
    const times = [];
    await timedRuns(
      reps,
      2,
      (o) =>
        executePlan(device, cache, p, tensors, {
          planTimestampWrites: { querySet, beginningOfPassWriteIndex: o, endOfPassWriteIndex: o + 1 },
        }),
      (t, o) => times.push((t[o + 1] - t[o]) / 1e6),
    );
    return median(times);
  };
  const total = await onePass(plan);
  const focused = await onePass({ ...plan, passes: plan.passes.filter((p) => focus.includes(p.id)) });
  const perPassTotal = [];
  const perPassFocused = [];
  const perPass = plan.passes.map(() => []);
  await timedRuns(
    reps,
    2 * n,
    (o) =>
      executePlan(device, cache, plan, tensors, {
        timestampWrites: (_p, i) => ({ querySet, beginningOfPassWriteIndex: o + 2 * i, endOfPassWriteIndex: o + 2 * i + 1 }),
      }),
    (t, o) => {
      perPassTotal.push((t[o + 2 * n - 1] - t[o]) / 1e6);
      let f = 0;
      plan.passes.forEach((p, i) => {
        const ms = (t[o + 2 * i + 1] - t[o + 2 * i]) / 1e6;
        perPass[i].push(ms);
        if (focus.includes(p.id)) f += ms;
      });
      perPassFocused.push(f);
    },
  );
  return {
    total,
    focused,
    perPassTotal: median(perPassTotal),
    perPassFocused: median(perPassFocused),
    passes: Object.fromEntries(plan.passes.map((p, i) => [p.id, median(perPass[i])])),
  };
}

/** Interleaved rounds per (shape, configuration) in the paged and sparse runs (BENCH_ROUNDS). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/**
 * Rounds run first and discarded (BENCH_WARMUP_ROUNDS): the GPU's clocks ramp up after an idle
 * spell, which made the first round of a short call up to twice as slow as the others.
 */
const WARMUP_ROUNDS = Number(process.env.BENCH_WARMUP_ROUNDS ?? 1);

/**
 * Times each configuration's plan of one call in ROUNDS interleaved rounds on the same buffers:
 * per configuration, its plan and the rounds' medians (all passes, the passes not in `setup`,
 * per pass). A configuration that cannot plan the call is logged once (`label`) and left out.
 */
async function timeInRounds(configs, call, tensors, setup, label) {
  const results = new Map();
  for (let round = -WARMUP_ROUNDS; round < ROUNDS; round++) {
    for (const cfg of configs) {
      let plan;
      try {
        plan = cfg.planner(call);
      } catch (err) {
        if (round === 0) log(`${label(cfg)}: ${err.message}`);
        continue;
      }
      // BENCH_DOUBLE_PASS=<pass id> (diagnostic): that pass runs twice in a row (the second as
      // "<id>-again"), so a cost paid once per launch of a pipeline shows as the difference.
      const again = process.env.BENCH_DOUBLE_PASS;
      if (again && plan.passes.some((p) => p.id === again))
        plan = { ...plan, passes: plan.passes.flatMap((p) => (p.id === again ? [p, { ...p, id: `${p.id}-again` }] : [p])) };
      const focus = plan.passes.filter((p) => !setup.includes(p.id)).map((p) => p.id);
      const r = await timePlan(plan, cfg.shaders, tensors, focus, 40, cfg.cache);
      if (round < 0) continue;
      const got = results.get(cfg) ?? { plan, total: [], focused: [], perPassTotal: [], perPassFocused: [], passes: [] };
      for (const k of ["total", "focused", "perPassTotal", "perPassFocused", "passes"]) got[k].push(r[k]);
      results.set(cfg, got);
    }
  }
  return results;
}

/** The configurations of a run: every pin set with every BENCH_TEMPLATES folder, compiled. */
async function compileConfigs(kernel, pinConfigs) {
  const templateDirs = process.env.BENCH_TEMPLATES ? process.env.BENCH_TEMPLATES.split(",") : [undefined];
  const configs = templateDirs.flatMap((dir) =>
    pinConfigs.map((c) => ({ ...c, name: dir ? `${dir}: ${c.name}` : c.name, templates: dir })),
  );
  for (const cfg of configs) {
    const { plan, shaders } = await compile(kernel, cfg.pins, cfg.templates);
    Object.assign(cfg, { planner: plan, shaders, cache: new PipelineCache(device, (id) => shaders[id]) });
  }
  return configs;
}

// 2. PagedAttention decode: one new token per sequence on top of ctx - 1 cached keys.
async function pagedBench(copy) {
  const N = 32,
    Nkv = 8,
    H = 128;
  // BENCH_PINS (a JSON array of tunable pins, [] = the profile's configured tunables) and
  // BENCH_SHAPES ("BxCTXxBS,...") narrow a run; the defaults are below. BENCH_TEMPLATES
  // ("dir,dir") compares template folders (relative to the repository) in the same run.
  const pinConfigs = process.env.BENCH_PINS
    ? JSON.parse(process.env.BENCH_PINS).map((pins) => ({ name: pinsName(pins), pins }))
    : [
        { name: "configured tunables", pins: {} },
        { name: "SPLIT_TARGET_WORKGROUPS=8192 MAX_SPLITS=64", pins: { SPLIT_TARGET_WORKGROUPS: 8192, MAX_SPLITS: 64 } },
      ];
  const shapes = process.env.BENCH_SHAPES
    ? process.env.BENCH_SHAPES.split(",").map((s) => s.split("x").map(Number))
    : [
        [1, 32768, 16],
        [8, 4096, 16],
        [64, 4096, 16],
        [32, 16384, 16],
        [64, 4096, 32],
        [32, 16384, 32],
      ];
  const configs = await compileConfigs("PagedAttention", pinConfigs);
  // Every configuration of a shape runs on the same buffers (where a large buffer lands in memory
  // changes the time of block-table reads), in ROUNDS interleaved rounds; the figure is the median
  // of the rounds' medians.
  // BENCH_TABLES ("shuffled,identity"): the block tables each shape runs with; "identity" maps
  // logical block i of sequence b to cache block b * blocks + i (a contiguous cache, as PyTorch's rows
  // read it), "shuffled" (the default) puts every block anywhere in the cache.
  const tables = (process.env.BENCH_TABLES ?? "shuffled").split(",");
  for (const [B, ctx, bs] of shapes)
    for (const tableKind of tables) {
      const blocksPer = ctx / bs;
      const numBlocks = B * blocksPer;
      const table = tableKind === "identity" ? Array.from({ length: numBlocks }, (_, i) => i) : shuffled(numBlocks);
      const cacheBytes = numBlocks * bs * Nkv * H * 2;
      const t = {
        queryT: randomF16Buffer(B * N * H * 2),
        keyT: randomF16Buffer(B * Nkv * H * 2),
        valueT: randomF16Buffer(B * Nkv * H * 2),
        keyCacheT: randomF16Buffer(cacheBytes),
        valueCacheT: randomF16Buffer(cacheBytes),
        cumulativeSequenceLengthT: i32Buffer(Array.from({ length: B + 1 }, (_, i) => i)),
        pastSeqlensT: i32Buffer(Array.from({ length: B }, () => ctx - 1)),
        blockTableT: i32Buffer(table),
        outputT: device.createBuffer({ size: B * N * H * 2, usage: U.STORAGE }),
      };
      const f16 = (shape) => ({ shape, dtype: "float16" });
      const i32 = (shape) => ({ shape, dtype: "int32" });
      const call = {
        inputs: {
          queryT: f16([B, N * H]),
          keyT: f16([B, Nkv * H]),
          valueT: f16([B, Nkv * H]),
          keyCacheT: f16([numBlocks, bs, Nkv, H]),
          valueCacheT: f16([numBlocks, bs, Nkv, H]),
          cumulativeSequenceLengthT: i32([B + 1]),
          pastSeqlensT: i32([B]),
          blockTableT: i32([B, blocksPer]),
        },
        outputs: { outputT: f16([B, N * H]) },
        attrs: { num_heads: N, kv_num_heads: Nkv },
      };
      const results = await timeInRounds(configs, call, t, ["scatter"], (cfg) => `paged ${cfg.name} | B=${B} ctx=${ctx} bs=${bs}`);
      const kvBytes = 2 * B * Nkv * ctx * H * 2;
      for (const [cfg, got] of results) {
        const { plan } = got;
        const focused = median(got.focused);
        const splits = plan.passes.find((p) => p.id === "split_attention")?.z ?? 1;
        const row = {
          kernel: "PagedAttention",
          config: tableKind === "shuffled" ? cfg.name : `${cfg.name} (${tableKind} block table)`,
          B,
          ctx,
          blockSize: bs,
          variant: plan.variant,
          splits,
          allPassesMs: median(got.total),
          attentionMs: focused,
          attentionMsRounds: got.focused,
          perPassAllMs: median(got.perPassTotal),
          perPassAttentionMs: median(got.perPassFocused),
          passMs: Object.fromEntries(Object.keys(got.passes[0]).map((id) => [id, median(got.passes.map((p) => p[id]))])),
          kvTBps: kvBytes / (focused / 1e3) / 1e12,
        };
        row.ofCopy = row.kvTBps / copy.tbps;
        rows.push(row);
        log(
          `paged ${row.config} | B=${B} ctx=${ctx} bs=${bs} | ${plan.variant} splits=${splits} | all passes ${row.allPassesMs.toFixed(4)} ms | attention ${focused.toFixed(4)} ms (rounds ${got.focused.map((x) => x.toFixed(3)).join(" ")}) | KV ${row.kvTBps.toFixed(2)} TB/s = ${(100 * row.ofCopy).toFixed(0)}% of copy | passes ${Object.entries(
            row.passMs,
          )
            .map(([id, ms]) => `${id} ${ms.toFixed(4)}`)
            .join(" ")} (as separate passes: all ${row.perPassAllMs.toFixed(4)} attention ${row.perPassAttentionMs.toFixed(4)})`,
        );
      }
      for (const b of Object.values(t)) b.destroy();
    }
}

// 2b. PagedAttention prefill (first measurement): B = 1 with 2048 and 8192 new tokens on an empty
// cache, and a mixed chunked-prefill batch (two decode rows, a 512-token chunk on 2048 cached, a
// 1024-token first chunk). TFLOP/s counts 4 * head size FLOPs per (query, visible key, head): QK^T
// and PV, causal.
async function prefillBench() {
  const N = 32,
    Nkv = 8,
    H = 128,
    bs = 32;
  const cases = [
    { name: "B=1 S=2048", seqs: [[2048, 0]] },
    { name: "B=1 S=8192", seqs: [[8192, 0]] },
    {
      name: "mixed",
      seqs: [
        [1, 4095],
        [1, 4095],
        [512, 2048],
        [1024, 0],
      ],
    },
  ];
  // BENCH_PREFILL_PINS: a JSON array of tunable pins ([{}] = the profile's configured tunables).
  const pinConfigs = JSON.parse(process.env.BENCH_PREFILL_PINS ?? "[{}]");
  const configs = [];
  for (const pins of pinConfigs) {
    const { plan: planner, shaders } = await compile("PagedAttention", pins);
    const name = Object.keys(pins).length
      ? Object.entries(pins)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ")
      : "configured tunables";
    configs.push({ name, pins, planner, shaders, cache: new PipelineCache(device, (id) => shaders[id]) });
  }
  for (const c of cases) {
    const B = c.seqs.length;
    const tokens = c.seqs.reduce((a, [n]) => a + n, 0);
    const blocksPer = Math.max(...c.seqs.map(([n, p]) => Math.ceil((n + p) / bs)));
    const numBlocks = B * blocksPer;
    const cum = [0];
    for (const [n] of c.seqs) cum.push(cum[cum.length - 1] + n);
    let flops = 0;
    for (const [n, p] of c.seqs) flops += 4 * H * N * (n * p + (n * (n + 1)) / 2);
    const t = {
      queryT: randomF16Buffer(tokens * N * H * 2),
      keyT: randomF16Buffer(tokens * Nkv * H * 2),
      valueT: randomF16Buffer(tokens * Nkv * H * 2),
      keyCacheT: randomF16Buffer(numBlocks * bs * Nkv * H * 2),
      valueCacheT: randomF16Buffer(numBlocks * bs * Nkv * H * 2),
      cumulativeSequenceLengthT: i32Buffer(cum),
      pastSeqlensT: i32Buffer(c.seqs.map(([, p]) => p)),
      blockTableT: i32Buffer(shuffled(numBlocks)),
      outputT: device.createBuffer({ size: tokens * N * H * 2, usage: U.STORAGE }),
    };
    const f16 = (shape) => ({ shape, dtype: "float16" });
    const i32 = (shape) => ({ shape, dtype: "int32" });
    const call = {
      inputs: {
        queryT: f16([tokens, N * H]),
        keyT: f16([tokens, Nkv * H]),
        valueT: f16([tokens, Nkv * H]),
        keyCacheT: f16([numBlocks, bs, Nkv, H]),
        valueCacheT: f16([numBlocks, bs, Nkv, H]),
        cumulativeSequenceLengthT: i32([B + 1]),
        pastSeqlensT: i32([B]),
        blockTableT: i32([B, blocksPer]),
      },
      outputs: { outputT: f16([tokens, N * H]) },
      attrs: { num_heads: N, kv_num_heads: Nkv },
    };
    for (const { name, planner, shaders, cache } of configs) {
      let plan;
      try {
        plan = planner(call);
      } catch (err) {
        log(`prefill ${c.name} (${name}): ${err.message}`);
        continue;
      }
      const attn = plan.passes.filter((p) => p.id !== "scatter").map((p) => p.id);
      const r = await timePlan(plan, shaders, t, attn, 20, cache);
      const row = {
        kernel: "PagedAttention prefill",
        ...(configs.length > 1 ? { config: name } : {}),
        case: c.name,
        seqs: c.seqs,
        blockSize: bs,
        variant: plan.variant,
        allPassesMs: r.total,
        attentionMs: r.focused,
        tflops: flops / (r.focused / 1e3) / 1e12,
      };
      rows.push(row);
      log(
        `prefill ${c.name}${configs.length > 1 ? ` (${name})` : ""} | ${plan.variant} | all passes ${r.total.toFixed(3)} ms | attention ${r.focused.toFixed(3)} ms | ${row.tflops.toFixed(2)} TFLOP/s`,
      );
    }
    for (const b of Object.values(t)) b.destroy();
  }
}

// 3. SparseAttention at 8192 keys: a sparse layout next to the dense (lower-triangular) one, same kernel;
// single-pass (MAX_SPLITS=1) next to split-K. "attention" times every pass after append/rotate_q.
function layoutCsr(numLayout, blocks, keep) {
  const rowsOut = [];
  const colsOut = [];
  let maxNnz = 0;
  for (let l = 0; l < numLayout; l++) {
    const row = [0];
    const cols = [];
    for (let q = 0; q < blocks; q++) {
      for (let k = 0; k <= q; k++) if (keep(l, q, k)) cols.push(k);
      row.push(cols.length);
    }
    rowsOut.push(row);
    colsOut.push(cols);
    maxNnz = Math.max(maxNnz, cols.length);
  }
  return { rows: rowsOut.flat(), cols: colsOut.flatMap((c) => [...c, ...Array(maxNnz - c.length).fill(-1)]), maxNnz, blocks };
}
async function sparseBench(copy) {
  const N = 32,
    Nkv = 8,
    H = 128,
    sbs = 64,
    maxSeq = 8192,
    numLayout = 4;
  const blocks = maxSeq / sbs;
  const localBlocks = 4,
    vertStride = 8,
    strideStep = Math.max(1, vertStride / numLayout);
  const layouts = {
    sparse: layoutCsr(numLayout, blocks, (l, q, k) => q - k < localBlocks || (k + l * strideStep + 1) % vertStride === 0),
    dense: layoutCsr(numLayout, blocks, () => true),
  };
  // BENCH_SPARSE_PINS (a JSON array of tunable pins) replaces the three configurations below;
  // BENCH_TEMPLATES compares template folders as in the paged run. Every configuration of a
  // (B, layout) runs on the same buffers in ROUNDS interleaved rounds; the figure is the median of
  // the rounds' medians.
  const pinConfigs = process.env.BENCH_SPARSE_PINS
    ? JSON.parse(process.env.BENCH_SPARSE_PINS).map((pins) => ({ name: pinsName(pins), pins }))
    : [
        { name: "single-pass (MAX_SPLITS=1)", pins: { MAX_SPLITS: 1 } },
        { name: "default tunables", pins: {} },
        { name: "SPLIT_TARGET_WORKGROUPS=1024", pins: { SPLIT_TARGET_WORKGROUPS: 1024 } },
      ];
  const configs = await compileConfigs("SparseAttention", pinConfigs);
  for (const B of [1, 16]) {
    for (const [name, lay] of Object.entries(layouts)) {
      const S = 1;
      const t = {
        queryT: randomF16Buffer(B * S * N * H * 2),
        keyT: randomF16Buffer(B * S * Nkv * H * 2),
        valueT: randomF16Buffer(B * S * Nkv * H * 2),
        pastKeyT: randomF16Buffer(B * Nkv * maxSeq * H * 2),
        pastValueT: randomF16Buffer(B * Nkv * maxSeq * H * 2),
        blockRowIndicesT: i32Buffer(lay.rows),
        blockColIndicesT: i32Buffer(lay.cols),
        totalSequenceLengthT: i32Buffer([maxSeq]),
        keyTotalSequenceLengthsT: i32Buffer(Array(B).fill(maxSeq)),
        outputT: device.createBuffer({ size: B * S * N * H * 2, usage: U.STORAGE }),
      };
      const f16 = (shape) => ({ shape, dtype: "float16" });
      const i32 = (shape) => ({ shape, dtype: "int32" });
      const call = {
        inputs: {
          queryT: f16([B, S, N * H]),
          keyT: f16([B, S, Nkv * H]),
          valueT: f16([B, S, Nkv * H]),
          pastKeyT: f16([B, Nkv, maxSeq, H]),
          pastValueT: f16([B, Nkv, maxSeq, H]),
          blockRowIndicesT: i32([numLayout, blocks + 1]),
          blockColIndicesT: i32([numLayout, lay.maxNnz]),
          totalSequenceLengthT: i32([1]),
          keyTotalSequenceLengthsT: i32([B]),
        },
        outputs: { outputT: f16([B, S, N * H]) },
        attrs: { num_heads: N, kv_num_heads: Nkv, sparse_block_size: sbs, do_rotary: 0, rotary_interleaved: 0 },
      };
      const results = await timeInRounds(configs, call, t, ["append", "rotate_q"], (cfg) => `sparse ${cfg.name} | ${name} | B=${B}`);
      const denseBytes = 2 * B * Nkv * maxSeq * H * 2;
      for (const [cfg, got] of results) {
        const { plan } = got;
        const focused = median(got.focused);
        const splits = plan.passes.find((p) => p.id === "split_attend")?.z ?? 1;
        const row = {
          kernel: "SparseAttention",
          config: cfg.name,
          layout: name,
          B,
          keys: maxSeq,
          variant: plan.variant,
          splits,
          allPassesMs: median(got.total),
          attentionMs: focused,
          attentionMsRounds: got.focused,
          denseEquivalentTBps: denseBytes / (focused / 1e3) / 1e12,
          perPassAllMs: median(got.perPassTotal),
          perPassAttentionMs: median(got.perPassFocused),
        };
        rows.push(row);
        log(
          `sparse ${cfg.name} | ${name} | B=${B} S=1 keys=${maxSeq} | ${plan.variant} splits=${splits} | all passes ${row.allPassesMs.toFixed(4)} ms | attend ${focused.toFixed(4)} ms (rounds ${got.focused.map((x) => x.toFixed(3)).join(" ")}) | dense-equivalent KV ${row.denseEquivalentTBps.toFixed(2)} TB/s (copy ${copy.tbps.toFixed(2)}) | as separate passes: all ${row.perPassAllMs.toFixed(4)} attend ${row.perPassAttentionMs.toFixed(4)} ms`,
        );
      }
      for (const b of Object.values(t)) b.destroy();
    }
  }
}

const copy = await copyBandwidth();
log(`copy bandwidth: ${copy.tbps.toFixed(2)} TB/s (vec4<f32> copy, ${copy.ms.toFixed(3)} ms)`);
rows.push({ kernel: "copy", ms: copy.ms, TBps: copy.tbps });
// The same copy at the size of the small decode shapes' K and V (1 x 32768 and 8 x 4096 read 128
// MiB): what one dispatch of that much traffic reaches, launch and ramp-up included.
const copySmall = await copyBandwidth(64 << 20);
log(
  `copy of 128 MiB moved (64 MiB read + 64 MiB written): ${copySmall.tbps.toFixed(2)} TB/s (${copySmall.ms.toFixed(4)} ms) = ${((100 * copySmall.tbps) / copy.tbps).toFixed(0)}% of the 1 GiB copy`,
);
rows.push({ kernel: "copy", bytes: 2 * (64 << 20), ms: copySmall.ms, TBps: copySmall.tbps });
for (const f of await timingFloor()) {
  log(`timing floor: ${f.name}: ${(f.ms * 1e3).toFixed(f.ms < 1e-4 ? 4 : 2)} us`);
  rows.push({ kernel: "floor", case: f.name, workgroups: f.counts, ms: f.ms });
}
const which = process.argv.slice(2).filter((a) => !a.startsWith("--") && a !== outFile);
if (which.length === 0 || which.includes("paged")) await pagedBench(copy);
if (which.length === 0 || which.includes("sparse")) await sparseBench(copy);
if (which.length === 0 || which.includes("prefill")) await prefillBench();
if (outFile) fs.writeFileSync(outFile, JSON.stringify({ adapter: adapterName, profile, rows }, null, 2));
device.destroy();
process.exit(0);
