/// <reference types="@webgpu/types" preserve="true" />
/**
 * Runs a Plan (what a generated dispatcher returns for one call) on a device: one command encoder,
 * one compute pass holding each plan pass as a dispatch (one compute pass per plan pass when the
 * passes are timed one by one), one submit.
 */
import type { BindingPlan, BindingResource, PassPlan, PipelineDesc, Plan } from "../model/plan.js";
import type { PipelineCache } from "./pipeline-cache.js";
import { UNIFORM_USAGE, type ScratchPool } from "./scratch-pool.js";

/** Options of executePlan. */
export interface ExecuteOptions {
  /** Where scratch and uniform buffers come from; default: the cache's pool. */
  readonly scratchPool?: ScratchPool;
  /**
   * Timestamp writes of each executed pass, for benchmarks (e.g. begin/end indices 2i, 2i+1 of a
   * query set). Given, each plan pass is encoded as its own compute pass.
   */
  readonly timestampWrites?: (pass: PassPlan, index: number) => GPUComputePassTimestampWrites | undefined;
  /**
   * Timestamp writes at the beginning and end of the one compute pass that holds all of the plan's
   * dispatches (ignored with `timestampWrites`).
   */
  readonly planTimestampWrites?: GPUComputePassTimestampWrites;
  /**
   * Wrap the encoding and the submit in a validation and an out-of-memory error scope and reject
   * with PlanExecutionError when the device reports an error. Costs a round trip; meant for tests
   * and debugging.
   */
  readonly checkErrors?: boolean;
  readonly label?: string;
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
    for (const n of pass.workgroups) {
      if (!Number.isInteger(n) || n < 0 || n > maxWorkgroups) {
        throw new PlanExecutionError(
          plan.kernel,
          pass.id,
          `workgroup count ${n} is not an integer in 0..${maxWorkgroups} (maxComputeWorkgroupsPerDimension)`,
        );
      }
    }
    if (pass.workgroups.some((n) => n === 0)) skipped.push(pass.id);
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
    for (const s of plan.scratch) {
      if (scratch.has(s.id)) throw new PlanExecutionError(plan.kernel, undefined, `scratch "${s.id}" is declared twice`);
      const buffer = pool.acquire(Math.max(s.size, 4));
      acquired.push(buffer);
      scratch.set(s.id, buffer);
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
      computePass.dispatchWorkgroups(pass.workgroups[0], pass.workgroups[1], pass.workgroups[2]);
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
 * binding, or whose scratch sizes or binding offsets and sizes are not non-negative safe integers:
 * NaN, negative, fractional or past 2^53. Runs before anything touches the device.
 */
function checkByteRanges(plan: Plan): void {
  for (const s of plan.scratch) {
    if (!isByteCount(s.size))
      throw new PlanExecutionError(
        plan.kernel,
        undefined,
        `scratch "${s.id}" has size ${String(s.size)}; a size must be a non-negative integer`,
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
      const r = pass.resources[i];
      if (typeof r !== "object" || r === null)
        throw new PlanExecutionError(
          plan.kernel,
          pass.id,
          `binding ${b.binding} (${b.name}) has no resource (resources[${i}] is ${String(r)})`,
        );
      if (r.kind === "uniform") {
        if (!Array.isArray(r.words))
          throw new PlanExecutionError(
            plan.kernel,
            pass.id,
            `binding ${b.binding} (${b.name}): a uniform resource needs \`words\`, an array of u32 words (a plan from an older kernelc has \`bytes\`: rebuild out/ with this one)`,
          );
        return;
      }
      const what = r.kind === "scratch" ? `scratch "${r.scratch}"` : `tensor "${r.tensor}"`;
      for (const [field, n] of [
        ["offset", r.offset],
        ["size", r.size],
      ] as const) {
        if (!isByteCount(n)) {
          throw new PlanExecutionError(
            plan.kernel,
            pass.id,
            `binding ${b.binding} "${b.name}": ${what} ${field} ${String(n)} is not a non-negative integer`,
          );
        }
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
    pass.resources.map((r): UniformSlot | undefined => {
      if (r.kind !== "uniform") return undefined;
      const offset = alignUp(total, align);
      const size = alignUp(Math.max(r.words.length * 4, 1), 16);
      uploads.push({ words: r.words, offset });
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
  if (r.kind === "uniform") {
    if (b.type !== "uniform") fail(`uniform bytes bound as "${b.type}"`);
    if (!uniformBuffer || !slot) return fail("uniform slot missing");
    return { buffer: uniformBuffer, offset: slot.offset, size: slot.size };
  }
  if (b.type === "uniform") fail(`a ${r.kind} range bound as a uniform`);
  let buffer: GPUBuffer | undefined;
  let what: string;
  if (r.kind === "scratch") {
    buffer = scratch.get(r.scratch);
    what = `scratch "${r.scratch}"`;
    if (!buffer) fail(`${what} is not declared in the plan's scratch list`);
  } else {
    buffer = Object.hasOwn(tensors, r.tensor) ? tensors[r.tensor] : undefined;
    what = `tensor "${r.tensor}"`;
    if (!buffer) fail(`no buffer was given for ${what} (tensors given: ${Object.keys(tensors).join(", ") || "none"})`);
  }
  const buf = buffer as GPUBuffer;
  if (r.size <= 0)
    fail(
      `${what} range has size ${r.size}; a binding must not be empty (WebGPU refuses it), yet the pass dispatches ` +
        `${pass.workgroups.join("x")} workgroups. When a call's tensor has no elements, give the passes that bind it 0 ` +
        `workgroups (a dispatch such as \`"x": "groups if n > 0 else 0"\` in the spec; a pass with a workgroup count of 0 ` +
        `is skipped) or reject such calls in a \`when\` condition`,
    );
  const alignment = device.limits.minStorageBufferOffsetAlignment;
  if (r.offset % alignment !== 0) fail(`${what} offset ${r.offset} is not a multiple of minStorageBufferOffsetAlignment (${alignment})`);
  // Storage bindings must be a multiple of 4 bytes: an odd number of f16 elements is bound with
  // its last 2-byte pad (arrayLength then counts one more element), when the buffer has room.
  const size = alignUp(r.size, 4);
  if (r.offset + size > buf.size) {
    fail(
      `${what} needs ${r.offset + size} bytes (range [${r.offset}, ${r.offset + r.size}), bound as ${size} bytes), but its buffer has ` +
        `${buf.size}: the range exceeds its buffer. Create the buffer with at least ${r.offset + size} bytes: storage is bound in whole ` +
        `4-byte words, so a tensor whose data is not a multiple of 4 bytes (a bool tensor is 1 byte per element, an f16 tensor 2) needs ` +
        `room for its last word's padding`,
    );
  }
  return { buffer: buf, offset: r.offset, size };
}
