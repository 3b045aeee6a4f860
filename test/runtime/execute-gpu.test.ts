/// <reference types="@webgpu/types" />
/**
 * The runtime on a real device (lavapipe by default, see test/support/gpu.ts): hand-written WGSL
 * run through hand-written Plans, outputs poisoned first and compared with a CPU computation.
 */
import { afterAll, describe, expect, it } from "vitest";
import { executePlan, PlanExecutionError } from "../../src/runtime/execute.js";
import { f16ArrayToF32, f32ArrayToF16, f32ToF16, roundToF16 } from "../../src/runtime/f16.js";
import { PipelineCache, ShaderCompilationError, warmUp } from "../../src/runtime/pipeline-cache.js";
import type { BindingPlan, BindingResource, Manifest, PassPlan, Plan } from "../../src/model/plan.js";
import { BufferUsage } from "../../src/runtime/gpu-constants.js";
import { getGpuDevice, poisonBuffer, POISON_U32, readBuffer, uploadBuffer, createBuffer } from "../support/gpu.js";
import { rng } from "../support/rng.js";

const device = await getGpuDevice({ requiredFeatures: ["shader-f16"] });
const timedDevice = await getGpuDevice({ requiredFeatures: ["timestamp-query"] });

afterAll(() => {
  device?.destroy();
  timedDevice?.destroy();
});

const SHADERS: Record<string, string> = {
  // One pass: y = a*x + b. `unused` is declared but never read: an explicit layout keeps it, "auto" would drop it.
  axpb: `
struct Params {
  a: f32,
  b: f32,
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> unused: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i < arrayLength(&y)) {
    y[i] = params.a * x[i] + params.b;
  }
}
`,
  // Two passes through a scratch buffer, as two entry points of one module: t = a*x, then y = t + b.
  twoStep: `
struct Params {
  a: f32,
  b: f32,
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> t: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn scale(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i < arrayLength(&t)) {
    t[i] = params.a * x[i];
  }
}

@group(0) @binding(0) var<storage, read> tIn: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> shiftParams: Params;

@compute @workgroup_size(64)
fn shift(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i < arrayLength(&y)) {
    y[i] = tIn[i] + shiftParams.b;
  }
}
`,
  // Overwrites its output; the plans use it with a zero workgroup count, so it must never run.
  clobber: `
@group(0) @binding(0) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  if (gid.x < arrayLength(&y)) {
    y[gid.x] = 12345.0;
  }
}
`,
  // f16: y = a*x + b with the count from the uniform (an odd f16 count is bound padded to 4 bytes).
  axpbF16: `enable f16;

struct Params {
  a: f32,
  b: f32,
  n: u32,
}
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x;
  if (i < params.n) {
    y[i] = f16(params.a) * x[i] + f16(params.b);
  }
}
`,
  broken: `
@compute @workgroup_size(64)
fn main() {
  let v: f32 = undefinedThing;
}
`,
};

const SEED = (Date.now() ^ (process.pid << 8)) >>> 0;

function loader(calls: string[]): (id: string) => Promise<string> {
  return async (id) => {
    calls.push(id);
    const code = SHADERS[id];
    if (code === undefined) throw new Error(`no shader ${id}`);
    return code;
  };
}

/** A binding with its resource, as a pass's `bindings[i]` and `resources[i]` (see `bound`). */
interface Bound {
  readonly binding: BindingPlan;
  readonly resource: BindingResource;
}

/** A pass's `bindings` and `resources` from bindings listed with their resources. */
const bound = (list: readonly Bound[]): Pick<PassPlan, "bindings" | "resources"> => ({
  bindings: list.map((b) => b.binding),
  resources: list.map((b) => b.resource),
});

/** A uniform binding whose contents are the bytes of `data` (a whole number of 4-byte words), as u32 words. */
const uniform = (binding: number, name: string, data: ArrayBufferView): Bound => ({
  binding: { binding, name, type: "uniform", kind: "uniform" },
  resource: Array.from(new Uint32Array(data.buffer, data.byteOffset, data.byteLength / 4)),
});

const tensor = (
  binding: number,
  name: string,
  type: "storage" | "read-only-storage",
  kind: "input" | "output",
  id: string,
  offset: number,
  size: number,
): Bound => ({ binding: { binding, name, type, kind, tensor: id }, resource: offset === 0 ? size : { offset, size } });

const scratchRange = (binding: number, name: string, type: "storage" | "read-only-storage", id: string, size: number): Bound => ({
  binding: { binding, name, type, kind: "scratch", scratch: id },
  resource: size,
});

/** The workgroup counts of a pass over n elements, 64 per workgroup. */
const groups = (n: number): Pick<PassPlan, "x" | "y" | "z"> => ({ x: Math.ceil(n / 64), y: 1, z: 1 });

/**
 * A pass with a zero workgroup count, as a dispatcher emits for an empty input: it must be skipped
 * entirely (its empty binding would be invalid, and its shader is never even loaded).
 */
function clobberPass(): PassPlan {
  return {
    id: "clobber",
    name: "must be skipped",
    shader: "clobber",
    entryPoint: "main",
    ...bound([tensor(0, "y", "storage", "output", "y", 0, 0)]),
    x: 0,
    y: 1,
    z: 1,
  };
}

/** x lives at byte 256 of its buffer, y at byte 0 of a buffer with a poisoned tail. */
const X_OFFSET = 256;

function axpbPlan(n: number, a: number, b: number): Plan {
  return {
    kernel: "axpb",
    variant: "one-pass",
    passes: [
      clobberPass(),
      {
        id: "axpb",
        name: "y = a*x + b",
        shader: "axpb",
        entryPoint: "main",
        ...bound([
          tensor(0, "x", "read-only-storage", "input", "x", X_OFFSET, 4 * n),
          tensor(1, "y", "storage", "output", "y", 0, 4 * n),
          uniform(2, "params", new Float32Array([a, b])),
          tensor(3, "unused", "read-only-storage", "input", "x", 0, 4),
        ]),
        ...groups(n),
      },
    ],
    scratch: {},
    outputShapes: { y: [n] },
  };
}

function twoStepPlan(n: number, a: number, b: number): Plan {
  const params = new Float32Array([a, b]);
  return {
    kernel: "axpb",
    variant: "two-pass",
    passes: [
      {
        id: "scale",
        name: "t = a*x",
        shader: "twoStep",
        entryPoint: "scale",
        ...bound([
          tensor(0, "x", "read-only-storage", "input", "x", X_OFFSET, 4 * n),
          scratchRange(1, "t", "storage", "t", 4 * n),
          uniform(2, "params", params),
        ]),
        ...groups(n),
      },
      clobberPass(),
      {
        id: "shift",
        name: "y = t + b",
        shader: "twoStep",
        entryPoint: "shift",
        ...bound([
          scratchRange(0, "tIn", "read-only-storage", "t", 4 * n),
          tensor(1, "y", "storage", "output", "y", 0, 4 * n),
          uniform(2, "shiftParams", params),
        ]),
        ...groups(n),
      },
    ],
    scratch: { t: 4 * n },
    outputShapes: { y: [n] },
  };
}

/** Random f32 inputs of varied magnitude and sign. */
function randomInputs(n: number, next: () => number): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = (next() * 2 - 1) * 2 ** Math.floor(next() * 16 - 8);
  return x;
}

/** Uploads x at X_OFFSET of a buffer; creates y with a 256-byte tail; poisons y. */
function setUp(gpu: GPUDevice, xBytes: ArrayBufferView, yBytes: number): { x: GPUBuffer; y: GPUBuffer } {
  const padded = new Uint8Array(X_OFFSET + xBytes.byteLength);
  padded.set(new Uint8Array(xBytes.buffer, xBytes.byteOffset, xBytes.byteLength), X_OFFSET);
  const x = uploadBuffer(gpu, padded, undefined, "x");
  const y = createBuffer(gpu, yBytes + 256, undefined, "y");
  poisonBuffer(gpu, y);
  return { x, y };
}

function expectPoisonedTail(bytes: ArrayBuffer, fromByte: number): void {
  const tail = new Uint8Array(bytes, fromByte);
  const poison = new Uint8Array(new Uint32Array([POISON_U32]).buffer);
  const bad = tail.findIndex((v, i) => v !== poison[(fromByte + i) % 4]);
  expect(bad, `byte ${fromByte + bad} past the output was written`).toBe(-1);
}

describe.runIf(device)(`executePlan on ${device ? "a WebGPU device" : "no device"} (seed ${SEED})`, () => {
  const gpu = device as GPUDevice;
  const next = rng(SEED);

  it("runs a one-pass f32 plan: y = a*x + b, skipping zero-workgroup passes", async () => {
    const calls: string[] = [];
    const cache = new PipelineCache(gpu, loader(calls));
    const n = 1000;
    const a = Math.fround(next() * 4 - 2);
    const b = Math.fround(next() * 10 - 5);
    const xs = randomInputs(n, next);
    const { x, y } = setUp(gpu, xs, 4 * n);
    const result = await executePlan(gpu, cache, axpbPlan(n, a, b), { x, y }, { checkErrors: true });
    expect(result).toEqual({ dispatched: ["axpb"], skipped: ["clobber"] });
    const bytes = await readBuffer(gpu, y);
    const out = new Float32Array(bytes, 0, n);
    for (let i = 0; i < n; i++) {
      const separate = Math.fround(Math.fround(a * xs[i]) + b);
      const fused = Math.fround(a * xs[i] + b);
      if (out[i] !== separate && out[i] !== fused) {
        expect.fail(`y[${i}] = ${out[i]}, expected ${separate} (or fused ${fused}) for x = ${xs[i]}, a = ${a}, b = ${b}`);
      }
    }
    expectPoisonedTail(bytes, 4 * n);
    expect(calls).toEqual(["axpb"]);
  });

  it("runs a two-pass plan through a scratch buffer, exactly, and reuses the pool's buffers across calls", async () => {
    const cache = new PipelineCache(gpu, loader([]));
    for (const n of [777, 700]) {
      const a = Math.fround(next() * 4 - 2);
      const b = Math.fround(next() * 10 - 5);
      const xs = randomInputs(n, next);
      const { x, y } = setUp(gpu, xs, 4 * n);
      const result = await executePlan(gpu, cache, twoStepPlan(n, a, b), { x, y }, { checkErrors: true });
      expect(result.dispatched).toEqual(["scale", "shift"]);
      const bytes = await readBuffer(gpu, y);
      const out = new Float32Array(bytes, 0, n);
      const expected = xs.map((v) => Math.fround(Math.fround(a * v) + b));
      expect(Array.from(out)).toEqual(Array.from(expected));
      expectPoisonedTail(bytes, 4 * n);
      // One scratch buffer and one uniform buffer, the second call served from the first's.
      expect(cache.scratchPool.bufferCount).toBe(2);
    }
  });

  it("encodes a plan's passes as the dispatches of one compute pass; one pass each when timed per pass", async () => {
    const cache = new PipelineCache(gpu, loader([]));
    const n = 300;
    const { x, y } = setUp(gpu, randomInputs(n, next), 4 * n);
    const begun: (string | undefined)[] = [];
    const createEncoder = gpu.createCommandEncoder;
    gpu.createCommandEncoder = (d?: GPUCommandEncoderDescriptor) => {
      const encoder = createEncoder.call(gpu, d);
      const begin = encoder.beginComputePass;
      encoder.beginComputePass = (pd?: GPUComputePassDescriptor) => {
        begun.push(pd?.label);
        return begin.call(encoder, pd);
      };
      return encoder;
    };
    try {
      await executePlan(gpu, cache, twoStepPlan(n, 2, 3), { x, y }, { checkErrors: true });
      expect(begun).toEqual(["axpb"]);
      begun.length = 0;
      // A per-pass timestamp callback that writes nothing still asks for one compute pass per pass.
      await executePlan(gpu, cache, twoStepPlan(n, 2, 3), { x, y }, { checkErrors: true, timestampWrites: () => undefined });
      expect(begun).toEqual(["t = a*x", "y = t + b"]);
    } finally {
      gpu.createCommandEncoder = createEncoder;
    }
  });

  it("creates each pipeline once, even when asked concurrently, and warms up a manifest", async () => {
    const calls: string[] = [];
    const cache = new PipelineCache(gpu, loader(calls));
    const desc = { shader: "twoStep", entryPoint: "scale", bindings: ["read-only-storage", "storage", "uniform"] } as const;
    const [p1, p2] = await Promise.all([cache.get(desc), cache.get(desc)]);
    expect(p1).toBe(p2);
    const manifest: Pick<Manifest, "pipelines"> = {
      pipelines: [
        desc,
        { shader: "twoStep", entryPoint: "shift", bindings: ["read-only-storage", "storage", "uniform"] },
        { shader: "clobber", entryPoint: "main", bindings: ["storage"] },
      ],
    };
    expect(await warmUp(cache, manifest)).toBe(3);
    expect(cache.size).toBe(3);
    expect(calls).toEqual(["twoStep", "clobber"]);
    await expect(cache.get({ ...desc, bindings: ["storage", "storage", "uniform"] })).rejects.toThrow(/already created with/);
  });

  it("reports a WGSL compilation error with its line, and a missing entry point", async () => {
    const cache = new PipelineCache(gpu, loader([]));
    const error = await cache.get({ shader: "broken", entryPoint: "main", bindings: [] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ShaderCompilationError);
    expect((error as Error).message).toMatch(/^WGSL shader "broken" does not compile \(1 error\):\nbroken:4:\d+: error: .*undefinedThing/);
    expect((error as Error).message).toContain("  let v: f32 = undefinedThing;");
    await expect(cache.get({ shader: "clobber", entryPoint: "nope", bindings: ["storage"] })).rejects.toThrow(
      /cannot create the compute pipeline clobber:nope/,
    );
  });

  it("names a missing tensor and an out-of-range binding", async () => {
    const cache = new PipelineCache(gpu, loader([]));
    const n = 64;
    const { x, y } = setUp(gpu, new Float32Array(n), 4 * n);
    await expect(executePlan(gpu, cache, axpbPlan(n, 1, 0), { x })).rejects.toThrow(
      new PlanExecutionError("axpb", "axpb", 'binding 1 "y": no buffer was given for tensor "y" (tensors given: x)'),
    );
    await expect(executePlan(gpu, cache, axpbPlan(n * 4, 1, 0), { x, y })).rejects.toThrow(/exceeds its buffer/);
    expect(cache.scratchPool.inUseCount).toBe(0);
  });

  it("refuses an empty tensor range in a pass that dispatches workgroups, saying how a spec skips the pass", async () => {
    // A user kernel that dispatches one workgroup per row for a [rows, 0] tensor plans a 0-byte range.
    const cache = new PipelineCache(gpu, loader([]));
    const { x, y } = setUp(gpu, new Float32Array(64), 256);
    const plan = axpbPlan(0, 1, 0);
    const empty: Plan = { ...plan, passes: [plan.passes[0]!, { ...plan.passes[1]!, x: 5, y: 1, z: 1 }] };
    await expect(executePlan(gpu, cache, empty, { x, y })).rejects.toThrow(
      new PlanExecutionError(
        "axpb",
        "axpb",
        'binding 0 "x": tensor "x" range has size 0; a binding must not be empty (WebGPU refuses it), yet the pass dispatches 5x1x1 ' +
          "workgroups. When a call's tensor has no elements, give the passes that bind it 0 workgroups (a dispatch such as " +
          '`"x": "groups if n > 0 else 0"` in the spec; a pass with a workgroup count of 0 is skipped) or reject such calls in a `when` condition',
      ),
    );
    expect(cache.scratchPool.inUseCount).toBe(0);
  });

  it("refuses a uniform resource that is not its words (a plan from an older kernelc had a { kind, words } object)", async () => {
    const cache = new PipelineCache(gpu, loader([]));
    const n = 64;
    const { x, y } = setUp(gpu, new Float32Array(n), 4 * n);
    const plan = axpbPlan(n, 1, 0);
    const pass = plan.passes[1]!;
    const resources = pass.resources.map((r, i) =>
      pass.bindings[i]!.kind === "uniform" ? ({ kind: "uniform", words: r } as unknown as BindingResource) : r,
    );
    const old: Plan = { ...plan, passes: [plan.passes[0]!, { ...pass, resources }] };
    await expect(executePlan(gpu, cache, old, { x, y })).rejects.toThrow(
      new PlanExecutionError(
        "axpb",
        "axpb",
        'binding 2 "params": a uniform binding\'s resource is its words, an array of u32 numbers, not an object (resources[2])',
      ),
    );
    expect(cache.scratchPool.inUseCount).toBe(0);
  });

  it("runs an f16 kernel (shader-f16) with an odd element count", async () => {
    const cache = new PipelineCache(gpu, loader([]));
    const n = 999;
    const a = roundToF16(next() * 4 - 2);
    const b = roundToF16(next() * 8 - 4);
    const xs = f32ArrayToF16(Array.from(randomInputs(n, next), (v) => v / 4));
    const { x, y } = setUp(gpu, xs, 2 * n);
    const params = new DataView(new ArrayBuffer(12));
    params.setFloat32(0, a, true);
    params.setFloat32(4, b, true);
    params.setUint32(8, n, true);
    const plan: Plan = {
      kernel: "axpbF16",
      variant: "f16",
      passes: [
        {
          id: "axpb",
          name: "y = a*x + b in f16",
          shader: "axpbF16",
          entryPoint: "main",
          ...bound([
            tensor(0, "x", "read-only-storage", "input", "x", X_OFFSET, 2 * n),
            tensor(1, "y", "storage", "output", "y", 0, 2 * n),
            uniform(2, "params", params),
          ]),
          ...groups(n),
        },
      ],
      scratch: {},
      outputShapes: { y: [n] },
    };
    await executePlan(gpu, cache, plan, { x, y }, { checkErrors: true });
    const bytes = await readBuffer(gpu, y);
    const out = new Uint16Array(bytes, 0, n);
    const xf = f16ArrayToF32(xs);
    for (let i = 0; i < n; i++) {
      const candidates = new Set([f32ToF16(roundToF16(a * xf[i]) + b), f32ToF16(a * xf[i] + b), f32ToF16(Math.fround(a * xf[i] + b))]);
      if (!candidates.has(out[i])) {
        expect.fail(
          `y[${i}] = 0x${out[i].toString(16)}, expected one of ${[...candidates].map((c) => `0x${c.toString(16)}`).join(", ")} for x = ${xf[i]}, a = ${a}, b = ${b}`,
        );
      }
    }
    expectPoisonedTail(bytes, 2 * n);
  });
});

/** The first `count` timestamps of a query set, resolved and read back. */
async function readTimestamps(gpu: GPUDevice, querySet: GPUQuerySet, count: number): Promise<BigUint64Array> {
  const resolved = gpu.createBuffer({ size: 8 * count, usage: BufferUsage.QUERY_RESOLVE | BufferUsage.COPY_SRC });
  const encoder = gpu.createCommandEncoder();
  encoder.resolveQuerySet(querySet, 0, count, resolved, 0);
  gpu.queue.submit([encoder.finish()]);
  return new BigUint64Array(await readBuffer(gpu, resolved));
}

describe.runIf(timedDevice)("executePlan with timestamp writes", () => {
  it("writes a begin and an end timestamp for each executed pass", async () => {
    const gpu = timedDevice as GPUDevice;
    const cache = new PipelineCache(gpu, loader([]));
    const n = 4096;
    const { x, y } = setUp(gpu, new Float32Array(n).fill(1), 4 * n);
    const querySet = gpu.createQuerySet({ type: "timestamp", count: 4 });
    const seen: string[] = [];
    const result = await executePlan(
      gpu,
      cache,
      twoStepPlan(n, 2, 3),
      { x, y },
      {
        checkErrors: true,
        timestampWrites: (pass, index) => {
          seen.push(`${pass.id}@${index}`);
          return { querySet, beginningOfPassWriteIndex: 2 * index, endOfPassWriteIndex: 2 * index + 1 };
        },
      },
    );
    expect(result.skipped).toEqual(["clobber"]);
    expect(seen).toEqual(["scale@0", "shift@1"]);
    const ticks = await readTimestamps(gpu, querySet, 4);
    expect(ticks[0] > 0n).toBe(true);
    for (let i = 1; i < 4; i++) expect(ticks[i] >= ticks[i - 1]).toBe(true);
    expect(Array.from(new Float32Array(await readBuffer(gpu, y, 0, 4 * n)))).toEqual(new Array(n).fill(5));
  });

  it("writes a begin and an end timestamp for the whole plan, its passes run as one compute pass", async () => {
    const gpu = timedDevice as GPUDevice;
    const cache = new PipelineCache(gpu, loader([]));
    const n = 4096;
    const { x, y } = setUp(gpu, new Float32Array(n).fill(2), 4 * n);
    const querySet = gpu.createQuerySet({ type: "timestamp", count: 2 });
    const result = await executePlan(
      gpu,
      cache,
      twoStepPlan(n, 2, 3),
      { x, y },
      { checkErrors: true, planTimestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } },
    );
    expect(result.dispatched).toEqual(["scale", "shift"]);
    const ticks = await readTimestamps(gpu, querySet, 2);
    expect(ticks[0] > 0n).toBe(true);
    expect(ticks[1] >= ticks[0]).toBe(true);
    expect(Array.from(new Float32Array(await readBuffer(gpu, y, 0, 4 * n)))).toEqual(new Array(n).fill(7));
  });
});
