import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  F16_MAX,
  F16_MIN_SUBNORMAL,
  F16_NAN,
  f16ArrayToF32,
  f16ToF32,
  f32ArrayToF16,
  f32ToF16,
  roundToF16,
} from "../../src/runtime/f16.js";

const isNanBits = (h: number): boolean => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;

/** Expected values of f16 bit patterns, written out by hand. */
const ANCHORS: [number, number][] = [
  [0x0000, 0],
  [0x0001, 2 ** -24],
  [0x0002, 2 ** -23],
  [0x03ff, 1023 * 2 ** -24],
  [0x0400, 2 ** -14],
  [0x3555, 0.333251953125],
  [0x3bff, 0.99951171875],
  [0x3c00, 1],
  [0x3c01, 1.0009765625],
  [0x4000, 2],
  [0x4248, 3.140625],
  [0x7bff, 65504],
  [0x7c00, Infinity],
  [0x8001, -(2 ** -24)],
  [0xc000, -2],
  [0xfbff, -65504],
  [0xfc00, -Infinity],
];

describe("f16ToF32", () => {
  it.each(ANCHORS)("0x%s is %s", (bits, value) => {
    expect(f16ToF32(bits)).toBe(value);
  });

  it("keeps the sign of zero", () => {
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
    expect(Object.is(f16ToF32(0x0000), 0)).toBe(true);
  });

  it("gives NaN for every NaN pattern", () => {
    for (const bits of [0x7c01, 0x7e00, 0x7fff, 0xfc01, 0xfe00, 0xffff]) expect(f16ToF32(bits)).toBeNaN();
  });

  it("is strictly increasing over the positive finite patterns with the right ulp per exponent", () => {
    for (let h = 1; h <= 0x7bff; h++) {
      const exp = (h - 1) >>> 10;
      const ulp = 2 ** (Math.max(exp, 1) - 25);
      expect(f16ToF32(h) - f16ToF32(h - 1)).toBe(ulp);
    }
  });
});

/** All finite non-negative f16 values, index = bit pattern (0x0000..0x7bff). */
const FINITE = Array.from({ length: 0x7c00 }, (_, h) => f16ToF32(h));

/** Reference conversion: nearest finite f16 by binary search, ties to the even pattern, overflow at 65520. */
function referenceToF16(x: number): number {
  if (Number.isNaN(x)) return F16_NAN;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= F16_MAX + 16) return sign | 0x7c00;
  let lo = 0;
  let hi = FINITE.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (FINITE[mid] <= a) lo = mid;
    else hi = mid;
  }
  if (a >= FINITE[hi]) return sign | hi;
  const below = a - FINITE[lo];
  const above = FINITE[hi] - a;
  if (below < above) return sign | lo;
  if (above < below) return sign | hi;
  return sign | (lo % 2 === 0 ? lo : hi);
}

describe("f32ToF16", () => {
  it("round-trips every non-NaN pattern", () => {
    for (let h = 0; h <= 0xffff; h++) {
      if (isNanBits(h)) continue;
      expect(f32ToF16(f16ToF32(h))).toBe(h);
    }
  });

  it("rounds every midpoint between neighbours to the even one, and its f32 neighbours to the nearer", () => {
    const f32 = new Float32Array(1);
    const u32 = new Uint32Array(f32.buffer);
    for (let h = 0; h < 0x7bff; h++) {
      const mid = (FINITE[h] + FINITE[h + 1]) / 2;
      const even = h % 2 === 0 ? h : h + 1;
      expect(f32ToF16(mid)).toBe(even);
      expect(f32ToF16(-mid)).toBe(0x8000 | even);
      f32[0] = mid;
      u32[0] -= 1;
      expect(f32ToF16(f32[0])).toBe(h);
      u32[0] += 2;
      expect(f32ToF16(f32[0])).toBe(h + 1);
    }
  });

  it("handles subnormals, underflow and overflow", () => {
    expect(f32ToF16(F16_MIN_SUBNORMAL)).toBe(0x0001);
    expect(f32ToF16(2 ** -25)).toBe(0x0000);
    expect(f32ToF16(1.5 * 2 ** -25)).toBe(0x0001);
    expect(f32ToF16(3 * 2 ** -25)).toBe(0x0002);
    expect(f32ToF16(5 * 2 ** -25)).toBe(0x0002);
    expect(f32ToF16(2 ** -14 - 2 ** -26)).toBe(0x0400);
    expect(f32ToF16(-(2 ** -30))).toBe(0x8000);
    expect(f32ToF16(1e-45)).toBe(0x0000);
    expect(f32ToF16(F16_MAX)).toBe(0x7bff);
    expect(f32ToF16(65519.99)).toBe(0x7bff);
    expect(f32ToF16(65520)).toBe(0x7c00);
    expect(f32ToF16(-65520)).toBe(0xfc00);
    expect(f32ToF16(1e10)).toBe(0x7c00);
    expect(f32ToF16(3.4028234663852886e38)).toBe(0x7c00);
  });

  it("maps infinities, zeros and NaN", () => {
    expect(f32ToF16(Infinity)).toBe(0x7c00);
    expect(f32ToF16(-Infinity)).toBe(0xfc00);
    expect(f32ToF16(0)).toBe(0x0000);
    expect(f32ToF16(-0)).toBe(0x8000);
    expect(f32ToF16(NaN)).toBe(F16_NAN);
    expect(isNanBits(f32ToF16(NaN))).toBe(true);
  });

  it("rounds a double once (no double rounding through f32)", () => {
    const justAboveTie = 1 + 2 ** -11 + 2 ** -40;
    expect(Math.fround(justAboveTie)).toBe(1 + 2 ** -11);
    expect(f32ToF16(justAboveTie)).toBe(0x3c01);
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00);
  });

  it("matches the reference on random f32 values", () => {
    fc.assert(
      fc.property(fc.float({ noNaN: true }), (x) => f32ToF16(x) === referenceToF16(x)),
      { numRuns: 20000 },
    );
  });

  it("matches the reference on random f32 values in the f16 range", () => {
    fc.assert(
      fc.property(fc.float({ min: -70000, max: 70000, noNaN: true }), (x) => f32ToF16(x) === referenceToF16(x)),
      { numRuns: 20000 },
    );
  });

  it("matches the reference on random doubles", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), (x) => f32ToF16(x) === referenceToF16(x)),
      { numRuns: 20000 },
    );
  });
});

describe("roundToF16 and the array conversions", () => {
  it("rounds to the nearest representable value", () => {
    expect(roundToF16(0.1)).toBe(0.0999755859375);
    expect(roundToF16(1 / 3)).toBe(0.333251953125);
    expect(roundToF16(70000)).toBe(Infinity);
  });

  it("converts arrays both ways", () => {
    const values = [0, -0, 1, -2.5, 0.1, 65504, 1e6, 2 ** -24, NaN];
    const bits = f32ArrayToF16(values);
    expect(bits).toBeInstanceOf(Uint16Array);
    expect(Array.from(bits)).toEqual(values.map((v) => f32ToF16(v)));
    const back = f16ArrayToF32(bits);
    expect(back).toBeInstanceOf(Float32Array);
    expect(Array.from(back)).toEqual([0, -0, 1, -2.5, 0.0999755859375, 65504, Infinity, 2 ** -24, NaN]);
  });
});
