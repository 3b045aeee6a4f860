/// <reference types="@webgpu/types" />
/**
 * A real WebGPU device for tests: Dawn (the `webgpu` package) on Vulkan, by default Mesa lavapipe
 * unpacked by scripts/setup-lavapipe.sh into .lavapipe/.
 *
 * Environment:
 * - KERNELC_VK_ICD: a Vulkan ICD manifest to use instead of .lavapipe/lvp_icd.json
 *   (on the H200: /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json).
 * - KERNELC_DAWN_FLAGS: extra flags for Dawn's create(), separated by spaces or commas, e.g.
 *   "enable-dawn-features=vulkan_enable_f16_on_nvidia" (needed for shader-f16 on NVIDIA).
 * - CI=true: a missing adapter or feature is an error (the run fails) instead of a skip.
 *
 * Usage in a test file (top-level await):
 *   const device = await getGpuDevice();
 *   describe.runIf(device)("on the GPU", () => { ... });
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { requiredLimitsFor, type Profile } from "../../src/plan/profiles.js";
import { BufferUsage, MapMode } from "../../src/runtime/gpu-constants.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The ICD manifest scripts/setup-lavapipe.sh writes. */
export const LAVAPIPE_ICD = resolve(REPO_ROOT, ".lavapipe/lvp_icd.json");

/** Options of getGpuDevice. */
export interface GpuDeviceOptions {
  /** Default: ["shader-f16"]. */
  readonly requiredFeatures?: readonly string[];
  readonly requiredLimits?: Readonly<Record<string, number>>;
}

/** The environment variables and Dawn flags getGpuDevice uses; exported for reports and docs. */
export function gpuEnvironment(): { icd: string; dawnFlags: string[] } {
  const icd = process.env.KERNELC_VK_ICD || LAVAPIPE_ICD;
  const extra = (process.env.KERNELC_DAWN_FLAGS ?? "").split(/[\s,]+/).filter((f) => f.length > 0);
  return { icd, dawnFlags: ["backend=vulkan", ...extra] };
}

let gpuPromise: Promise<GPU> | undefined;

/** Creates Dawn's GPU object once per process, after pointing the Vulkan loader at the ICD. */
function loadGpu(icd: string, flags: readonly string[]): Promise<GPU> {
  gpuPromise ??= (async () => {
    // The Vulkan loader reads these when Dawn creates its instance, so they are set before loading.
    process.env.VK_DRIVER_FILES = icd;
    process.env.XDG_RUNTIME_DIR ||= "/tmp";
    const { create } = await import("webgpu");
    return create([...flags]);
  })();
  return gpuPromise;
}

/** Returns why no device could be had: throws under CI=true, else prints the reason and returns undefined. */
function unavailable(reason: string): undefined {
  const message = `no WebGPU device for GPU tests: ${reason}`;
  if (process.env.CI === "true") throw new Error(`${message} (CI=true: GPU tests must run)`);
  console.warn(`${message}; skipping GPU tests`);
  return undefined;
}

/**
 * Returns the adapter (at the given feature level: "compatibility" gives compatibility-mode
 * devices, as Dawn implements them), or undefined (after printing why) when there is none and CI
 * is not "true".
 */
export async function getGpuAdapter(featureLevel: "core" | "compatibility" = "core"): Promise<GPUAdapter | undefined> {
  const { icd, dawnFlags } = gpuEnvironment();
  if (!existsSync(icd)) {
    return unavailable(`the Vulkan ICD manifest ${icd} does not exist (run: bash scripts/setup-lavapipe.sh)`);
  }
  const gpu = await loadGpu(icd, dawnFlags);
  const adapter = await gpu.requestAdapter({ featureLevel });
  return adapter ?? unavailable(`Dawn (${dawnFlags.join(" ")}) found no Vulkan adapter with VK_DRIVER_FILES=${icd}`);
}

/**
 * Returns a device with the given features (default shader-f16) and limits, or undefined (after
 * printing why) when none is available and CI is not "true". Each call makes a new device; destroy
 * it when done.
 */
export async function getGpuDevice(options: GpuDeviceOptions = {}): Promise<GPUDevice | undefined> {
  const adapter = await getGpuAdapter();
  if (!adapter) return undefined;
  const requiredFeatures = options.requiredFeatures ?? ["shader-f16"];
  const missing = requiredFeatures.filter((f) => !adapter.features.has(f));
  if (missing.length > 0) {
    return unavailable(
      `the adapter lacks ${missing.join(", ")} (on NVIDIA set KERNELC_DAWN_FLAGS=enable-dawn-features=vulkan_enable_f16_on_nvidia)`,
    );
  }
  const device = await adapter.requestDevice({
    label: "kernelc test device",
    requiredFeatures: [...requiredFeatures] as GPUFeatureName[],
    requiredLimits: { ...options.requiredLimits },
  });
  const errors: string[] = [];
  uncaptured.set(device, errors);
  device.addEventListener("uncapturederror", (event) => {
    const message = (event as GPUUncapturedErrorEvent).error.message;
    console.error(`uncaptured WebGPU error: ${message}`);
    errors.push(message);
  });
  return device;
}

export interface ProfileDevice {
  readonly device: GPUDevice;
  /** Limits lowered to what the adapter has, as "name profile→adapter". */
  readonly clamped: readonly string[];
}

/** A device with exactly the profile's features and its limits (clamped to the adapter's), compat at the compatibility feature level. */
export async function getProfileDevice(profile: Profile): Promise<ProfileDevice | undefined> {
  const adapter = await getGpuAdapter(profile.compatibilityMode ? "compatibility" : "core");
  if (!adapter) return undefined;
  const missing = profile.features.filter((f) => !adapter.features.has(f));
  if (missing.length) throw new Error(`the adapter lacks ${missing.join(", ")}, which profile ${profile.name} has`);
  const clamped: string[] = [];
  const requiredLimits: Record<string, number> = {};
  for (const [name, want] of Object.entries(requiredLimitsFor(profile))) {
    const has = (adapter.limits as unknown as Record<string, number>)[name];
    requiredLimits[name] = Math.min(want, has);
    if (has < want) clamped.push(`${name} ${want}→${has}`);
  }
  const device = await adapter.requestDevice({
    label: `kernelc ${profile.name}`,
    requiredFeatures: [...profile.features] as GPUFeatureName[],
    requiredLimits,
  });
  device.addEventListener("uncapturederror", (event) => {
    throw new Error(`uncaptured WebGPU error on ${profile.name}: ${(event as GPUUncapturedErrorEvent).error.message}`);
  });
  return { device, clamped };
}

/** Uncaptured errors of each device getGpuDevice made, in order, until taken by takeUncapturedErrors. */
const uncaptured = new WeakMap<GPUDevice, string[]>();

/** Returns (and forgets) the uncaptured errors the device has reported so far; waits for its queue first. */
export async function takeUncapturedErrors(device: GPUDevice): Promise<string[]> {
  await device.queue.onSubmittedWorkDone();
  const errors = uncaptured.get(device) ?? [];
  return errors.splice(0, errors.length);
}

/**
 * Throws if the device reported any uncaptured WebGPU error (validation, out of memory, internal)
 * since the last check: a test must fail on such an error, not merely log it. readBuffer calls it
 * before every read; GPU test files also call it after each test.
 */
export async function expectNoUncapturedErrors(device: GPUDevice): Promise<void> {
  const errors = await takeUncapturedErrors(device);
  if (errors.length > 0) throw new Error(`uncaptured WebGPU error(s):\n${errors.join("\n")}`);
}

/** Usage of test buffers: storage, copyable both ways. */
export const TEST_BUFFER_USAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST;

/** Creates a buffer of `size` bytes (rounded up to 4). */
export function createBuffer(device: GPUDevice, size: number, usage: number = TEST_BUFFER_USAGE, label?: string): GPUBuffer {
  return device.createBuffer({ label, size: Math.max(4, Math.ceil(size / 4) * 4), usage });
}

/** Creates a buffer holding a copy of `data` (its size rounded up to 4 bytes, the pad zeroed). */
export function uploadBuffer(device: GPUDevice, data: ArrayBufferView, usage: number = TEST_BUFFER_USAGE, label?: string): GPUBuffer {
  const buffer = device.createBuffer({
    label,
    size: Math.max(4, Math.ceil(data.byteLength / 4) * 4),
    usage,
    mappedAtCreation: true,
  });
  new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  buffer.unmap();
  return buffer;
}

/** Writes `data` into a buffer at a byte offset (sizes multiple of 4, as writeBuffer requires). */
export function writeBuffer(device: GPUDevice, buffer: GPUBuffer, offset: number, data: ArrayBufferView): void {
  device.queue.writeBuffer(buffer, offset, data.buffer, data.byteOffset, data.byteLength);
}

/** The default poison: a NaN as f32 and as each f16 half, and a huge value as i32/u32. */
export const POISON_U32 = 0x7fba7fba;

/** Fills a whole buffer with a 32-bit pattern, so that elements a kernel fails to write are visible. */
export function poisonBuffer(device: GPUDevice, buffer: GPUBuffer, pattern: number = POISON_U32): void {
  const words = new Uint32Array(buffer.size / 4).fill(pattern >>> 0);
  device.queue.writeBuffer(buffer, 0, words);
}

/**
 * Poison for scratch and intermediate buffers: a repeating cycle of three 32-bit words, 1e30, 1e30
 * and a NaN, so that consecutive pairs (a split's (max, sum) statistics, vec4 partials) take every
 * combination of a huge finite value and a NaN. A statistic a kernel fails to write then either
 * dominates the merge (max 1e30 with a positive sum) or turns it into NaN; neither is ignored.
 */
export const SCRATCH_POISON_WORDS: readonly number[] = [0x7149f2ca, 0x7149f2ca, 0x7fc00000];

/** Fills a whole buffer with a repeating cycle of 32-bit words (default SCRATCH_POISON_WORDS). */
export function poisonBufferCycle(device: GPUDevice, buffer: GPUBuffer, words: readonly number[] = SCRATCH_POISON_WORDS): void {
  const data = new Uint32Array(buffer.size / 4);
  for (let i = 0; i < data.length; i++) data[i] = words[i % words.length] >>> 0;
  device.queue.writeBuffer(buffer, 0, data);
}

/**
 * f16 bit patterns that no kernel may let reach a result: NaN, both infinities, the largest finite
 * values of both signs and a large finite value. Tests fill every cache slot that no visible key
 * reads with them (cycling by position), so masking by multiplication (0 * NaN = NaN, 0 * Inf =
 * NaN) or a read of the wrong row shows in the output.
 */
export const F16_GARBAGE: readonly number[] = [0x7e00, 0x7c00, 0xfc00, 0x7bff, 0xfbff, 0x7a00, 0x7fff];

/** f16 bits as integers ordered like the values they denote (adjacent values differ by 1), for ULP distances. */
export function orderedF16(bits: number): number {
  return bits & 0x8000 ? -(bits & 0x7fff) : bits;
}

/** Copies a byte range of a buffer to a mappable one and returns its bytes once the GPU is done. */
export async function readBuffer(device: GPUDevice, buffer: GPUBuffer, offset = 0, size = buffer.size - offset): Promise<ArrayBuffer> {
  await expectNoUncapturedErrors(device);
  const padded = Math.ceil(size / 4) * 4;
  const staging = device.createBuffer({ size: Math.max(4, padded), usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, offset, staging, 0, padded);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(MapMode.READ);
  const bytes = staging.getMappedRange(0, padded).slice(0, size);
  staging.unmap();
  staging.destroy();
  return bytes;
}

/** Runs `work` inside validation and out-of-memory error scopes and throws the first error the device reports. */
export async function expectNoGpuError<T>(device: GPUDevice, work: () => T | Promise<T>): Promise<T> {
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  const outcome = await Promise.resolve()
    .then(work)
    .then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
  const validation = await device.popErrorScope();
  const oom = await device.popErrorScope();
  if (!outcome.ok) throw outcome.error;
  const error = validation ?? oom;
  if (error) throw new Error(`WebGPU error: ${error.message}`);
  return outcome.value;
}
