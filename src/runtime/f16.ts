/**
 * IEEE 754 binary16 (WGSL f16) conversions for preparing inputs and reading outputs of f16 kernels.
 *
 * Conversion to f16 rounds a JS number exactly once to the nearest binary16 value, ties to even,
 * with overflow to ±Infinity and gradual underflow through the subnormals. Every f32 is a JS number,
 * so for f32 inputs this is the IEEE f32 -> f16 conversion; for other doubles it avoids the double
 * rounding that going through f32 first would introduce. Conversion from f16 is exact.
 */

const F16_EXP_BIAS = 15;
const F16_MANT_BITS = 10;
const F16_INF = 0x7c00;
/** The quiet NaN this module produces for any NaN input. */
export const F16_NAN = 0x7e00;
/** Largest finite f16 value, 65504. */
export const F16_MAX = 65504;
/** Smallest positive subnormal f16 value, 2^-24. */
export const F16_MIN_SUBNORMAL = 2 ** -24;

/** Rounds a non-negative value to an integer, ties to even; exact for values below 2^52. */
function roundHalfEven(v: number): number {
  const floor = Math.floor(v);
  const rest = v - floor;
  if (rest > 0.5 || (rest === 0.5 && floor % 2 === 1)) return floor + 1;
  return floor;
}

/** Returns floor(log2(a)) for a positive finite normal double, read from its exponent bits. */
function exponentOf(a: number, scratch: DataView): number {
  scratch.setFloat64(0, a);
  return ((scratch.getUint16(0) >>> 4) & 0x7ff) - 1023;
}

/** Converts a number to the bits of the nearest f16 (round to nearest, ties to even); NaN gives 0x7e00. */
export function f32ToF16(value: number): number {
  return toF16With(value, new DataView(new ArrayBuffer(8)));
}

function toF16With(value: number, scratch: DataView): number {
  if (Number.isNaN(value)) return F16_NAN;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const a = Math.abs(value);
  if (a === Infinity) return sign | F16_INF;
  // Below 2^-14 the f16 result is subnormal (or rounds up to the smallest normal): a fixed point
  // number of units 2^-24. Scaling by a power of two is exact, so one rounding happens.
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24);
  const e = exponentOf(a, scratch);
  if (e > F16_EXP_BIAS) return sign | F16_INF;
  // a * 2^(10 - e) lies in [1024, 2048); rounding may carry into the exponent (2048), which the
  // addition below handles, including the carry from 65504 + half an ulp up to Infinity.
  const significand = roundHalfEven(a * 2 ** (F16_MANT_BITS - e));
  const bits = ((e + F16_EXP_BIAS) << F16_MANT_BITS) + (significand - 1024);
  return sign | Math.min(bits, F16_INF);
}

/** Converts f16 bits (the low 16 bits of the argument) to the exact number they denote. */
export function f16ToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> F16_MANT_BITS) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * F16_MIN_SUBNORMAL;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mant) * 2 ** (exp - F16_EXP_BIAS - F16_MANT_BITS);
}

/** Rounds a number to the nearest f16 value (ties to even) and returns it as a number. */
export function roundToF16(value: number): number {
  return f16ToF32(f32ToF16(value));
}

/** Converts numbers to packed f16 bits, ready to upload to an `array<f16>` buffer. */
export function f32ArrayToF16(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  const scratch = new DataView(new ArrayBuffer(8));
  for (let i = 0; i < values.length; i++) out[i] = toF16With(values[i], scratch);
  return out;
}

/** Converts packed f16 bits (e.g. read back from an `array<f16>` buffer) to f32 values. */
export function f16ArrayToF32(bits: ArrayLike<number>): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = f16ToF32(bits[i]);
  return out;
}
