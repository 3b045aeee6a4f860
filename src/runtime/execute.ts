/// <reference types="@webgpu/types" preserve="true" />
/**
 * Runs a Plan (what a generated dispatcher returns for one call) on a device: one command encoder,
 * one compute pass holding each plan pass as a dispatch (one compute pass per plan pass when the
 * passes are timed one by one), one submit.
 */
import {
  byteRange,
  type BindingPlan,
  type BindingResource,
  type ByteRange,
  type PassPlan,
  type PipelineDesc,
  type Plan,
} from "../model/plan.js";
import type { PipelineCache } from "./pipeline-cache.js";
import { UNIFORM_USAGE, type ScratchPool } from "./scratch-pool.js";

/** Options of executePlan. */
export interface ExecuteOptions {
  /** Where scratch and uniform buffers come from; default: the cache's pool. */
  readonly scratchPool?: ScratchPool | undefined;
  /**
   * Timestamp writes of each executed pass, for benchmarks (e.g. begin/end indices 2i, 2i+1 of a
   * query set). Given, each plan pass is encoded as its own compute pass.
   */
  readonly timestampWrites?: ((pass: PassPlan, index: number) => GPUComputePassTimestampWrites | undefined) | undefined;
  /**
   * Timestamp writes at the beginning and end of the one compute pass that holds all of the plan's
   * dispatches (ignored with `timestampWrites`).
   */
  readonly planTimestampWrites?: GPUComputePassTimestampWrites | undefined;
  /**
   * Wrap the encoding and the submit in a validation and an out-of-memory error scope and reject
   * with PlanExecutionError when the device reports an error. Costs a round trip; meant for tests
   * and debugging.
   */
  readonly checkErrors?: boolean | undefined;
  readonly label?: string | undefined;
}

/** What executePlan did. */
export interface ExecuteResult {
  /** Ids of the passes that were dispatched, in order. */
  readonly dispatched: readonly string[];
  /** Ids of the passes skipped because a workgroup count was zero. */
  readonly skipped: readonly string[];
}

/** Thrown when a plan cannot be executed with the given tensors, or the device reports an error for it. */
export class PlanExecutionError extends Error {
  override readonly name = "PlanExecutionError";

  constructor(
    readonly kernel: string,
    readonly passId: string | undefined,
    detail: string,
  ) {
    super(`${kernel}${passId === undefined ? "" : ` pass "${passId}"`}: ${detail}`);
  }
}

/**
 * The pipeline a pass needs: its shader entry point and the binding types in binding order.
 * Binding numbers must be 0, 1, 2, … (as the compiler emits them).
 */
export function pipelineDescOf(pass: PassPlan): PipelineDesc {
  const sorted = [...pass.bindings].sort((a, b) => a.binding - b.binding);
  sorted.forEach((b, i) => {
    if (b.binding !== i)
      throw new Error(`pass "${pass.id}": binding numbers must be 0..${sorted.length - 1}, found ${b.binding} at position ${i}`);
  });
  return { shader: pass.shader, entryPoint: pass.entryPoint, bindings: sorted.map((b) => b.type) };
}

const alignUp = (n: number, a: number): number => Math.ceil(n / a) * a;

/** A byte size or offset: a non-negative safe integer (not NaN, not fractional, not past 2^53). */
const isByteCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

const BINDING_KINDS: readonly unknown[] = ["input", "output", "scratch", "uniform"];

/** What a hand-built plan holds, as a message names it (never running its code): undefined, null, a number, an array, an object, … */
const shown = (v: unknown): string =>
  v == null ? String(v) : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`;

/** Placement of one pass's uniform binding inside the call's single uniform buffer. */
interface UniformSlot {
  readonly offset: number;
  readonly size: number;
}

/**
 * Executes a plan: for each pass with non-zero workgroup counts, binds the tensors' byte ranges,
 * scratch buffers from the pool and the uniform bytes, and dispatches; submits once. Resolves once
 * the work is submitted (not finished): read results with mapAsync or onSubmittedWorkDone.
 * `tensors` maps each tensor id of the plan (inputs and outputs by spec id) to its buffer.
 */
export async function executePlan(
  device: GPUDevice,
  cache: PipelineCache,
  plan: Plan,
  tensors: Readonly<Record<string, GPUBuffer>>,
  options: ExecuteOptions = {},
): Promise<ExecuteResult> {
  checkByteRanges(plan);
  const maxWorkgroups = device.limits.maxComputeWorkgroupsPerDimension;
  const running: PassPlan[] = [];
  const skipped: string[] = [];
  for (const pass of plan.passes) {
    const workgroups = [pass.x, pass.y, pass.z];
    for (const n of workgroups) {
      if (!Number.isInteger(n) || n < 0 || n > maxWorkgroups) {
        throw new PlanExecutionError(
          plan.kernel,
          pass.id,
          `workgroup count ${n} is not an integer in 0..${maxWorkgroups} (maxComputeWorkgroupsPerDimension)`,
        );
      }
    }
    if (workgroups.includes(0)) skipped.push(pass.id);
    else running.push(pass);
  }
  const pipelines = await Promise.all(running.map((pass) => cache.get(pipelineDescOf(pass))));

  const pool = options.scratchPool ?? cache.scratchPool;
  const acquired: GPUBuffer[] = [];
  const checkErrors = options.checkErrors ?? false;
  if (checkErrors) {
    device.pushErrorScope("out-of-memory");
    device.pushErrorScope("validation");
  }
  let submitted = false;
  try {
    const scratch = new Map<string, GPUBuffer>();
    for (const [id, size] of Object.entries(plan.scratch)) {
      const buffer = pool.acquire(Math.max(size, 4));
      acquired.push(buffer);
      scratch.set(id, buffer);
    }
    const { uniformBuffer, slots } = uploadUniforms(device, pool, running, acquired);
    const encoder = device.createCommandEncoder({ label: options.label ?? plan.kernel });
    const perPass = options.timestampWrites;
    // One compute pass for the whole plan: WebGPU makes a dispatch's storage writes visible to the
    // next dispatch of the same pass, and a pass boundary costs GPU time of its own.
    let shared: GPUComputePassEncoder | undefined;
    if (!perPass && running.length > 0) {
      const tw = options.planTimestampWrites;
      shared = encoder.beginComputePass(tw ? { label: plan.kernel, timestampWrites: tw } : { label: plan.kernel });
    }
    running.forEach((pass, index) => {
      const { pipeline, bindGroupLayout } = pipelines[index];
      const entries = pass.bindings.map((b, i): GPUBindGroupEntry => ({
        binding: b.binding,
        resource: bufferBinding(device, plan, pass, b, pass.resources[i], tensors, scratch, uniformBuffer, slots[index][i]),
      }));
      const bindGroup = device.createBindGroup({ label: `${plan.kernel}/${pass.id}`, layout: bindGroupLayout, entries });
      const timestampWrites = perPass?.(pass, index);
      const computePass =
        shared ?? encoder.beginComputePass(timestampWrites ? { label: pass.name, timestampWrites } : { label: pass.name });
      computePass.setPipeline(pipeline);
      computePass.setBindGroup(0, bindGroup);
      computePass.dispatchWorkgroups(pass.x, pass.y, pass.z);
      if (!shared) computePass.end();
    });
    shared?.end();
    device.queue.submit([encoder.finish()]);
    submitted = true;
  } finally {
    pool.release(...acquired);
    if (checkErrors) {
      const validation = await device.popErrorScope();
      const oom = await device.popErrorScope();
      const error = validation ?? oom;
      if (error && submitted) throw new PlanExecutionError(plan.kernel, undefined, `the device reported: ${error.message}`);
    }
  }
  return { dispatched: running.map((p) => p.id), skipped };
}

/**
 * Refuses a plan (a hand-built one may hold anything) with a pass whose resources are not one per
 * binding, a uniform binding whose resource is not its words, or whose scratch sizes or binding
 * offsets and sizes are not non-negative safe integers: NaN, negative, fractional or past 2^53.
 * Runs before anything touches the device.
 */
function checkByteRanges(plan: Plan): void {
  for (const [id, size] of Object.entries(plan.scratch)) {
    if (!isByteCount(size))
      throw new PlanExecutionError(
        plan.kernel,
        undefined,
        `scratch "${id}" has size ${String(size)}; a size must be a non-negative integer`,
      );
  }
  for (const pass of plan.passes) {
    const n = Array.isArray(pass.resources) ? pass.resources.length : "no";
    if (n !== pass.bindings.length)
      throw new PlanExecutionError(
        plan.kernel,
        pass.id,
        `${pass.bindings.length} bindings but ${n} resources; give one per binding (resources[i] for bindings[i])`,
      );
    pass.bindings.forEach((b, i) => {
      const r: unknown = pass.resources[i];
      const fail = (detail: string): never => {
        throw new PlanExecutionError(plan.kernel, pass.id, `binding ${b.binding} "${b.name}": ${detail}`);
      };
      if (!BINDING_KINDS.includes(b.kind))
        fail(`kind is ${shown(b.kind)}, not input, output, scratch or uniform (a plan from an older kernelc? rebuild out/)`);
      if (b.kind === "uniform") {
        if (!Array.isArray(r))
          fail(`a uniform binding's resource is its words, an array of u32 numbers, not ${shown(r)} (resources[${i}])`);
        return;
      }
      const what = b.kind === "scratch" ? `scratch "${b.scratch}"` : `tensor "${b.tensor}"`;
      // A number is the range [0, r); anything else must be a range { offset, size }.
      if (typeof r !== "number" && (typeof r !== "object" || r === null || Array.isArray(r)))
        fail(`${what} needs a byte size or a range { offset, size }, not ${shown(r)} (resources[${i}])`);
      const range = byteRange(r as number | ByteRange);
      for (const field of ["offset", "size"] as const) {
        if (!isByteCount(range[field])) fail(`${what} ${field} ${String(range[field])} is not a non-negative integer`);
      }
    });
  }
}

/** Packs every uniform binding of the running passes into one buffer (one writeBuffer), each at an aligned offset. */
function uploadUniforms(
  device: GPUDevice,
  pool: ScratchPool,
  running: readonly PassPlan[],
  acquired: GPUBuffer[],
): { uniformBuffer: GPUBuffer | undefined; slots: (UniformSlot | undefined)[][] } {
  const align = device.limits.minUniformBufferOffsetAlignment;
  // slots[p][i]: where the uniform resource of running pass p's binding i goes.
  const uploads: { readonly words: readonly number[]; readonly offset: number }[] = [];
  let total = 0;
  const slots = running.map((pass) =>
    pass.bindings.map((b, i): UniformSlot | undefined => {
      if (b.kind !== "uniform") return undefined;
      const words = pass.resources[i] as readonly number[];
      const offset = alignUp(total, align);
      const size = alignUp(Math.max(words.length * 4, 1), 16);
      uploads.push({ words, offset });
      total = offset + size;
      return { offset, size };
    }),
  );
  if (uploads.length === 0) return { uniformBuffer: undefined, slots };
  // Offsets are multiples of 16, so each uniform's words start at a whole u32 of the upload (a
  // u32 array is little-endian here, as on every platform WebGPU runs on).
  const data = new Uint32Array(total / 4);
  for (const u of uploads) data.set(u.words, u.offset / 4);
  const uniformBuffer = pool.acquire(total, UNIFORM_USAGE);
  acquired.push(uniformBuffer);
  device.queue.writeBuffer(uniformBuffer, 0, data);
  return { uniformBuffer, slots };
}

function bufferBinding(
  device: GPUDevice,
  plan: Plan,
  pass: PassPlan,
  b: BindingPlan,
  r: BindingResource,
  tensors: Readonly<Record<string, GPUBuffer>>,
  scratch: ReadonlyMap<string, GPUBuffer>,
  uniformBuffer: GPUBuffer | undefined,
  slot: UniformSlot | undefined,
): GPUBufferBinding {
  const fail = (detail: string): never => {
    throw new PlanExecutionError(plan.kernel, pass.id, `binding ${b.binding} "${b.name}": ${detail}`);
  };
  if (b.kind === "uniform") {
    if (b.type !== "uniform") fail(`uniform words bound as "${b.type}"`);
    if (!uniformBuffer || !slot) return fail("uniform slot missing");
    return { buffer: uniformBuffer, offset: slot.offset, size: slot.size };
  }
  if (b.type === "uniform") fail(`a ${b.kind} range bound as a uniform`);
  let buffer: GPUBuffer | undefined;
  let what: string;
  if (b.kind === "scratch") {
    buffer = scratch.get(b.scratch);
    what = `scratch "${b.scratch}"`;
    if (!buffer) fail(`${what} has no size in the plan's scratch`);
  } else {
    buffer = Object.hasOwn(tensors, b.tensor) ? tensors[b.tensor] : undefined;
    what = `tensor "${b.tensor}"`;
    if (!buffer) fail(`no buffer was given for ${what} (tensors given: ${Object.keys(tensors).join(", ") || "none"})`);
  }
  const buf = buffer as GPUBuffer;
  // A number is the range [0, r) (checkByteRanges refused anything else but a ByteRange).
  const { offset, size: bytes } = byteRange(r as number | ByteRange);
  if (bytes <= 0)
    fail(
      `${what} range has size ${bytes}; a binding must not be empty (WebGPU refuses it), yet the pass dispatches ` +
        `${pass.x}x${pass.y}x${pass.z} workgroups. When a call's tensor has no elements, give the passes that bind it 0 ` +
        `workgroups (a dispatch such as \`"x": "groups if n > 0 else 0"\` in the spec; a pass with a workgroup count of 0 ` +
        `is skipped) or reject such calls in a \`when\` condition`,
    );
  const alignment = device.limits.minStorageBufferOffsetAlignment;
  if (offset % alignment !== 0) fail(`${what} offset ${offset} is not a multiple of minStorageBufferOffsetAlignment (${alignment})`);
  // Storage bindings must be a multiple of 4 bytes: an odd number of f16 elements is bound with
  // its last 2-byte pad (arrayLength then counts one more element), when the buffer has room.
  const size = alignUp(bytes, 4);
  if (offset + size > buf.size) {
    fail(
      `${what} needs ${offset + size} bytes (range [${offset}, ${offset + bytes}), bound as ${size} bytes), but its buffer has ` +
        `${buf.size}: the range exceeds its buffer. Create the buffer with at least ${offset + size} bytes: storage is bound in whole ` +
        `4-byte words, so a tensor whose data is not a multiple of 4 bytes (a bool tensor is 1 byte per element, an f16 tensor 2) needs ` +
        `room for its last word's padding`,
    );
  }
  return { buffer: buf, offset, size };
}
