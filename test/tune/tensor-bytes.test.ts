/**
 * The bytes `kernelc tune` fills a call's tensors with (docs/config.md, the `tune` section): seeded
 * random floats in [-1, 1], random bools true and false alike (1 byte each, 0 or 1), iota and
 * constants, and arrays repeated; a bool tensor is 1 byte per element, padded to whole 4-byte words.
 */
import { describe, expect, it } from "vitest";
import { tensorBytes } from "../../src/tune/tune.js";
import type { TuneCallConfig } from "../../src/plan/config.js";

const call = (data: TuneCallConfig["data"]): TuneCallConfig =>
  ({ name: "c", inputs: {}, outputs: {}, attrs: {}, ...(data ? { data } : {}) }) as TuneCallConfig;

describe("tune's tensor bytes", () => {
  it("fills a bool tensor with random 0/1 bytes, about half true, padded to a word", () => {
    const n = 1001;
    const bytes = tensorBytes(call({ m: { fill: "random" } }), "m", { shape: [n], dtype: "bool" }, 12345, n);
    expect(bytes.length).toBe(1004);
    const vals = [...bytes.subarray(0, n)];
    expect(vals.every((v) => v === 0 || v === 1)).toBe(true);
    const ones = vals.filter((v) => v === 1).length;
    expect(ones).toBeGreaterThan(n * 0.4);
    expect(ones).toBeLessThan(n * 0.6);
    expect([...bytes.subarray(n)]).toEqual([0, 0, 0]);
    // Another seed, other bytes.
    expect(tensorBytes(call({ m: { fill: "random" } }), "m", { shape: [n], dtype: "bool" }, 777, n)).not.toEqual(bytes);
  });

  it("writes given bool values as true where nonzero", () => {
    const bytes = tensorBytes(call({ m: [0, 2, -1, 0.5, 0] }), "m", { shape: [5], dtype: "bool" }, 1, 5);
    expect([...bytes]).toEqual([0, 1, 1, 1, 0, 0, 0, 0]);
  });

  it("fills floats with random values in [-1, 1] by default, and iota and constants as asked", () => {
    const f = new Float32Array(tensorBytes(call(undefined), "x", { shape: [64], dtype: "float32" }, 9, 64).buffer);
    expect(f.every((v) => v >= -1 && v <= 1)).toBe(true);
    expect(new Set(f).size).toBeGreaterThan(60);
    const iota = new Int32Array(tensorBytes(call({ i: { fill: "iota" } }), "i", { shape: [4], dtype: "int32" }, 1, 4).buffer);
    expect([...iota]).toEqual([0, 1, 2, 3]);
    const c = new Float32Array(
      tensorBytes(call({ c: { fill: "constant", value: 2.5 } }), "c", { shape: [3], dtype: "float32" }, 1, 3).buffer,
    );
    expect([...c]).toEqual([2.5, 2.5, 2.5]);
  });
});
