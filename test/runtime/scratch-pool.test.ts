/// <reference types="@webgpu/types" />
import { describe, expect, it } from "vitest";
import { SCRATCH_USAGE, ScratchPool, UNIFORM_USAGE, sizeClassOf } from "../../src/runtime/scratch-pool.js";

describe("sizeClassOf", () => {
  it.each([
    [0, 256],
    [1, 256],
    [256, 256],
    [257, 512],
    [4000, 4096],
    [1 << 20, 1 << 20],
    [(1 << 20) + 1, (1 << 20) + (1 << 17)],
    [3_000_000, 3_145_728],
    [(1 << 30) - 1, 1 << 30],
  ])("%d -> %d", (size, expected) => {
    expect(sizeClassOf(size)).toBe(expected);
  });

  it("never wastes more than 12.5 % above 1 MiB and never returns less than asked", () => {
    for (let size = (1 << 20) + 1; size < 1 << 28; size = Math.ceil(size * 1.37)) {
      const c = sizeClassOf(size);
      expect(c).toBeGreaterThanOrEqual(size);
      expect((c - size) / size).toBeLessThanOrEqual(0.125);
    }
  });

  it("rejects negative sizes", () => {
    expect(() => sizeClassOf(-1)).toThrow(RangeError);
  });
});

/** A fake device that creates plain objects standing for buffers and counts destroys. */
function fakeDevice(maxBufferSize = 1 << 30): { device: GPUDevice; created: { size: number; usage: number }[]; destroyed: number[] } {
  const created: { size: number; usage: number }[] = [];
  const destroyed: number[] = [];
  const device = {
    limits: { maxBufferSize },
    createBuffer: ({ size, usage }: { size: number; usage: number }) => {
      const id = created.length;
      created.push({ size, usage });
      return { size, usage, destroy: () => destroyed.push(id) };
    },
  } as unknown as GPUDevice;
  return { device, created, destroyed };
}

describe("ScratchPool", () => {
  it("reuses a released buffer of the same size class and usage", () => {
    const { device, created } = fakeDevice();
    const pool = new ScratchPool(device);
    const a = pool.acquire(1000);
    pool.release(a);
    expect(pool.acquire(900)).toBe(a);
    expect(pool.acquire(1000)).not.toBe(a);
    expect(pool.acquire(1000, UNIFORM_USAGE).usage).toBe(UNIFORM_USAGE);
    expect(created).toEqual([
      { size: 1024, usage: SCRATCH_USAGE },
      { size: 1024, usage: SCRATCH_USAGE },
      { size: 1024, usage: UNIFORM_USAGE },
    ]);
    expect(pool.inUseCount).toBe(3);
  });

  it("serves a request above maxBufferSize's class with the exact size", () => {
    const { device, created } = fakeDevice(3_000_000);
    new ScratchPool(device).acquire(2_999_999);
    expect(created[0].size).toBe(3_000_000);
  });

  it("refuses to take back a buffer it did not lend", () => {
    const { device } = fakeDevice();
    const pool = new ScratchPool(device);
    const a = pool.acquire(16);
    pool.release(a);
    expect(() => pool.release(a)).toThrow(/not in use/);
  });

  it("trims free buffers and destroys all", () => {
    const { device, destroyed } = fakeDevice();
    const pool = new ScratchPool(device);
    const a = pool.acquire(16);
    pool.acquire(16);
    pool.release(a);
    expect(pool.allocatedBytes).toBe(512);
    pool.trim();
    expect(destroyed).toEqual([0]);
    expect(pool.bufferCount).toBe(1);
    pool.destroy();
    expect(destroyed).toEqual([0, 1]);
    expect(pool.bufferCount).toBe(0);
  });
});
