/// <reference types="@webgpu/types" preserve="true" />
/**
 * A pool of reusable GPU buffers (scratch storage and uniform buffers), kept by size class.
 *
 * Why reuse is safe: WebGPU runs a queue's submissions and writeBuffer calls in order, so a buffer
 * released right after a submit can be bound by the next call (its earlier contents are never
 * needed again, and a later writeBuffer lands after the earlier submission has read the buffer).
 * A buffer must not be released before the command buffer that uses it has been submitted.
 */
import { BufferUsage } from "./gpu-constants.js";

/** Usage of scratch storage buffers: bindable as storage, copyable for debugging and tests. */
export const SCRATCH_USAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST;
/** Usage of uniform buffers the runtime fills with writeBuffer. */
export const UNIFORM_USAGE = BufferUsage.UNIFORM | BufferUsage.COPY_DST;

const MIN_BUFFER_SIZE = 256;

const FINE_CLASSES_FROM = 1 << 20;

/**
 * The size a request is served with, so that calls whose sizes vary a little (token counts) reuse the
 * same buffers: a power of two of at least 256 bytes up to 1 MiB, above that a multiple of an eighth
 * of the power of two below it (at most 12.5 % waste).
 */
export function sizeClassOf(size: number): number {
  if (!Number.isFinite(size) || size < 0) throw new RangeError(`buffer size must be a non-negative number, got ${size}`);
  let pow = MIN_BUFFER_SIZE;
  while (pow < size) pow *= 2;
  if (pow <= FINE_CLASSES_FROM) return pow;
  const step = pow / 16;
  return Math.ceil(size / step) * step;
}

/** Allocates and reuses buffers by (usage, size class); one pool per device. */
export class ScratchPool {
  private readonly free = new Map<string, GPUBuffer[]>();
  private readonly owned = new Set<GPUBuffer>();
  private readonly inUse = new Set<GPUBuffer>();

  constructor(
    readonly device: GPUDevice,
    private readonly label = "kernelc scratch",
  ) {}

  /** Returns a buffer of at least `size` bytes with exactly the given usage, reusing a released one when possible. */
  acquire(size: number, usage: number = SCRATCH_USAGE): GPUBuffer {
    let sizeClass = sizeClassOf(size);
    if (sizeClass > this.device.limits.maxBufferSize) sizeClass = Math.ceil(size / 4) * 4;
    const key = `${usage}:${sizeClass}`;
    const buffer = this.free.get(key)?.pop() ?? this.allocate(sizeClass, usage);
    this.inUse.add(buffer);
    return buffer;
  }

  /** Gives buffers back for reuse; call after submitting the commands that use them. */
  release(...buffers: GPUBuffer[]): void {
    for (const buffer of buffers) {
      if (!this.inUse.delete(buffer)) throw new Error("ScratchPool.release: this buffer is not in use from this pool");
      const key = `${buffer.usage}:${buffer.size}`;
      const list = this.free.get(key);
      if (list) list.push(buffer);
      else this.free.set(key, [buffer]);
    }
  }

  /** Bytes held by the pool, in use or free. */
  get allocatedBytes(): number {
    let total = 0;
    for (const b of this.owned) total += b.size;
    return total;
  }

  /** Number of buffers the pool has created and not destroyed. */
  get bufferCount(): number {
    return this.owned.size;
  }

  /** Number of buffers acquired and not yet released. */
  get inUseCount(): number {
    return this.inUse.size;
  }

  /** Destroys the free buffers (those in use stay). */
  trim(): void {
    for (const list of this.free.values()) {
      for (const b of list) {
        this.owned.delete(b);
        b.destroy();
      }
    }
    this.free.clear();
  }

  /** Destroys every buffer of the pool, in use or not. */
  destroy(): void {
    this.trim();
    for (const b of this.inUse) {
      this.owned.delete(b);
      b.destroy();
    }
    this.inUse.clear();
  }

  private allocate(size: number, usage: number): GPUBuffer {
    const buffer = this.device.createBuffer({ label: `${this.label} ${size}`, size, usage });
    this.owned.add(buffer);
    return buffer;
  }
}
