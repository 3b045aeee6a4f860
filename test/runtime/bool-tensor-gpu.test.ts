/// <reference types="@webgpu/types" />
/**
 * Bool tensors on a real device (lavapipe by default, see test/support/gpu.ts): the kernels of
 * test/fixtures/bool, built by the compiler for the `core` profile and planned by its generated
 * dispatcher, on fresh random inputs of odd lengths (never a multiple of 4), compared with a CPU
 * reference byte for byte. A bool tensor is 1 byte per element, bound as u32 words of 4 elements
 * (docs/templates.md#bool-tensors):
 *
 * - Where reads a bool input with load_condition: its bytes hold 0, 1 and other nonzero values
 *   (true), and the padding bytes of its last word hold 0xFF, which no output may show.
 * - Greater writes a bool output one element per invocation (store_out: atomic byte updates) and one
 *   word per invocation (store4_out); Not reads and writes bool tensors both ways (load_x/store_y,
 *   load4_x/store4_y). Outputs are poisoned first, with room past the bound range: every visible
 *   byte must be 0 or 1 as the reference says, padding bytes keep the poison (per element) or are 0
 *   (per word), and bytes past the bound range keep the poison.
 * - A bool buffer too small for the shape is refused before anything reaches the device, with the
 *   tensor, the bytes needed and given, and the fix.
 *
 * Environment: BOOL_SEED=<n> replays the inputs; CI=true makes a missing GPU adapter a failure.
 */
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { executePlan, PlanExecutionError } from "../../src/runtime/execute.js";
import { PipelineCache } from "../../src/runtime/pipeline-cache.js";
import type { Call, Plan } from "../../src/model/plan.js";
import { createBuffer, getGpuDevice, poisonBuffer, POISON_U32, readBuffer, uploadBuffer } from "../support/gpu.js";
import { importDispatcher } from "../support/project-build.js";
import { rng } from "../support/rng.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/bool");
const PROFILE = "core";
const SEED = Number(process.env.BOOL_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** Bytes of poison each output buffer has past the range the plan binds. */
const TAIL = 16;
/** The bytes of POISON_U32, little-endian. */
const POISON_BYTES = new Uint8Array(new Uint32Array([POISON_U32]).buffer);

const device = await getGpuDevice({ requiredFeatures: [] });

afterAll(() => device?.destroy());

type Planner = (call: Call) => Plan;
let planners: Record<string, Planner>;
let cache: PipelineCache;

beforeAll(async () => {
  if (!device) return;
  const built = await compile(loadConfig(ROOT), { profiles: [PROFILE] });
  expect(built.diagnostics).toEqual([]);
  planners = (await importDispatcher(built.files.get(`${PROFILE}/dispatcher.ts`)!)).planners as Record<string, Planner>;
  const shaders = new Map<string, string>();
  for (const [rel, text] of built.files) if (rel.startsWith("shaders/")) shaders.set(rel.slice("shaders/".length, -".wgsl".length), text);
  cache = new PipelineCache(device, (id) => shaders.get(id)!);
}, 60_000);

const roundUp4 = (n: number): number => Math.ceil(n / 4) * 4;

/** Odd lengths: small ones around a word, one past a workgroup of 64, and random ones up to a few thousand. */
function lengths(r: () => number): number[] {
  const random = Array.from({ length: 3 }, () => 1 + 2 * Math.floor(r() * 2500));
  return [1, 3, 5, 7, 65, 4097, ...random].map((n) => (n % 4 === 0 ? n + 1 : n));
}

/**
 * A bool tensor's bytes, bound size (n rounded up to 4): each element 0, 1 or another nonzero byte
 * (true), and every padding byte of the last word 0xFF.
 */
function boolBytes(r: () => number, n: number): Uint8Array {
  const bytes = new Uint8Array(roundUp4(n)).fill(0xff);
  for (let i = 0; i < n; i++) {
    const u = r();
    bytes[i] = u < 0.45 ? 0 : u < 0.8 ? 1 : 2 + Math.floor(r() * 254);
  }
  return bytes;
}

/** Random f32 values, with repeats so that comparisons see equal operands. */
function floats(r: () => number, n: number, pool?: Float32Array): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = pool && r() < 0.2 ? pool[i]! : Math.fround((r() * 2 - 1) * 100);
  return out;
}

/** A poisoned output buffer of `size` bytes plus TAIL more. */
function poisonedOutput(gpu: GPUDevice, size: number): GPUBuffer {
  const buffer = createBuffer(gpu, size + TAIL);
  poisonBuffer(gpu, buffer);
  return buffer;
}

/** Runs a plan (checking the device's errors) and returns the bytes of `out`. */
async function run(gpu: GPUDevice, plan: Plan, tensors: Record<string, GPUBuffer>, out: GPUBuffer): Promise<Uint8Array> {
  await executePlan(gpu, cache, plan, tensors, { checkErrors: true });
  return new Uint8Array(await readBuffer(gpu, out));
}

/** Checks a bool output: visible bytes as `expected`, the last word's padding as `pad` says, poison past the bound range. */
function expectBoolOutput(got: Uint8Array, expected: Uint8Array, pad: "poison" | "zero", what: string): void {
  const n = expected.length;
  for (let i = 0; i < n; i++) if (got[i] !== expected[i]) expect.fail(`${what}: byte ${i} is ${got[i]}, expected ${expected[i]}`);
  for (let i = n; i < roundUp4(n); i++) expect(got[i], `${what}: padding byte ${i}`).toBe(pad === "zero" ? 0 : POISON_BYTES[i % 4]);
  for (let i = roundUp4(n); i < got.length; i++) expect(got[i], `${what}: byte ${i}, past the bound range`).toBe(POISON_BYTES[i % 4]);
}

describe.runIf(device)(`bool tensors on ${PROFILE} (seed ${SEED})`, () => {
  const gpu = device!;

  it("the plans bind a bool tensor of n elements as n bytes rounded up to 4", () => {
    const call: Call = {
      inputs: { condT: { shape: [7], dtype: "bool" }, xT: { shape: [7], dtype: "float32" }, yT: { shape: [7], dtype: "float32" } },
    };
    const resources = planners.Where(call).passes[0]!.resources;
    expect(resources.slice(0, 4)).toEqual([8, 28, 28, 28]);
  });

  it("Where: out = condition ? x : y, any nonzero byte true, the padding's 0xFF bytes read by no element", async () => {
    const r = rng(SEED);
    for (const n of lengths(r)) {
      const cond = boolBytes(r, n);
      const x = floats(r, n);
      const y = floats(r, n);
      const plan = planners.Where({
        inputs: { condT: { shape: [n], dtype: "bool" }, xT: { shape: [n], dtype: "float32" }, yT: { shape: [n], dtype: "float32" } },
      });
      const out = poisonedOutput(gpu, n * 4);
      const tensors = { condT: uploadBuffer(gpu, cond), xT: uploadBuffer(gpu, x), yT: uploadBuffer(gpu, y), outT: out };
      const got = new Uint32Array((await run(gpu, plan, tensors, out)).buffer);
      const xBits = new Uint32Array(x.buffer);
      const yBits = new Uint32Array(y.buffer);
      for (let i = 0; i < n; i++) {
        const want = cond[i] !== 0 ? xBits[i] : yBits[i];
        if (got[i] !== want)
          expect.fail(`n=${n}: out[${i}] has bits ${got[i]!.toString(16)}, expected ${want!.toString(16)} (condition byte ${cond[i]})`);
      }
      for (let i = n; i < got.length; i++) expect(got[i], `n=${n}: word ${i} past the output`).toBe(POISON_U32);
      for (const b of Object.values(tensors)) b.destroy();
    }
  });

  for (const [variant, perWord] of [
    ["element", 0],
    ["word", 1],
  ] as const) {
    it(`Greater (${variant}): a bool output, each byte 0 or 1, written ${perWord ? "a word per invocation" : "per element with atomics"}`, async () => {
      const r = rng(SEED ^ (0x5eed + perWord));
      for (const n of lengths(r)) {
        const a = floats(r, n);
        const b = floats(r, n, a);
        const plan = planners.Greater({
          inputs: { aT: { shape: [n], dtype: "float32" }, bT: { shape: [n], dtype: "float32" } },
          attrs: { perWord },
        });
        expect(plan.variant).toBe(variant);
        const out = poisonedOutput(gpu, roundUp4(n));
        const tensors = { aT: uploadBuffer(gpu, a), bT: uploadBuffer(gpu, b), outT: out };
        const got = await run(gpu, plan, tensors, out);
        const expected = Uint8Array.from(a, (v, i) => (v > b[i]! ? 1 : 0));
        expectBoolOutput(got, expected, perWord ? "zero" : "poison", `Greater ${variant} n=${n}`);
        for (const t of Object.values(tensors)) t.destroy();
      }
    });

    it(`Not (${variant}): bool in and out, the input's garbage padding reaching no output byte`, async () => {
      const r = rng(SEED ^ (0xb001 + perWord));
      for (const n of lengths(r)) {
        const x = boolBytes(r, n);
        const plan = planners.Not({ inputs: { xT: { shape: [n], dtype: "bool" } }, attrs: { perWord } });
        expect(plan.variant).toBe(variant);
        const out = poisonedOutput(gpu, roundUp4(n));
        const xBuf = uploadBuffer(gpu, x);
        const got = await run(gpu, plan, { xT: xBuf, yT: out }, out);
        const expected = Uint8Array.from(x.subarray(0, n), (v) => (v === 0 ? 1 : 0));
        expectBoolOutput(got, expected, perWord ? "zero" : "poison", `Not ${variant} n=${n}`);
        xBuf.destroy();
        out.destroy();
      }
    });
  }

  it("a bool buffer too small for the shape is refused, naming the tensor, the bytes needed and given, and the fix", async () => {
    const n = 7;
    const plan = planners.Where({
      inputs: { condT: { shape: [n], dtype: "bool" }, xT: { shape: [n], dtype: "float32" }, yT: { shape: [n], dtype: "float32" } },
    });
    const x = uploadBuffer(gpu, new Float32Array(n));
    const out = poisonedOutput(gpu, n * 4);
    // 7 bytes: the elements without the last word's padding; 4 bytes: a word short.
    for (const size of [7, 4]) {
      const cond = gpu.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      const run = executePlan(gpu, cache, plan, { condT: cond, xT: x, yT: x, outT: out }, { checkErrors: true });
      await expect(run).rejects.toThrow(PlanExecutionError);
      await expect(run).rejects.toThrow(
        `tensor "condT" needs 8 bytes (range [0, 8), bound as 8 bytes), but its buffer has ${size}: the range exceeds its buffer. Create the buffer with at least 8 bytes`,
      );
      await expect(run).rejects.toThrow("a bool tensor is 1 byte per element");
      cond.destroy();
    }
    // Nothing ran: the output keeps its poison.
    expect(new Uint32Array(await readBuffer(gpu, out))).toEqual(new Uint32Array((n * 4 + TAIL) / 4).fill(POISON_U32));
  });
});
