/**
 * The run-time meaning of the expression language's operators and builtins, on plain JS values.
 * The interpreter calls these; the dispatcher generator emits the same definitions (see
 * emit/dispatcher-prelude.ts) and a differential test holds the two to one behaviour.
 *
 * Ints are JS numbers that are safe integers; any int result outside ±(2^53 - 1) is an error.
 */

/** An expression failed at evaluation time (division by zero, axis out of range, absent tensor, …). */
export class EvalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EvalError";
  }
}

export function checkInt(v: number): number {
  if (!Number.isSafeInteger(v)) throw new EvalError(`integer overflow: ${v} is outside ±(2^53 - 1)`);
  return v;
}

/** Python-style floor division and modulo of ints. */
export function floorDivInt(a: number, b: number): number {
  if (b === 0) throw new EvalError(`integer division by zero (${a} / 0)`);
  return checkInt(Math.floor(a / b));
}

export function modInt(a: number, b: number): number {
  if (b === 0) throw new EvalError(`modulo by zero (${a} % 0)`);
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r === 0 ? 0 : r;
}

export function modFloat(a: number, b: number): number {
  if (b === 0) throw new EvalError(`modulo by zero (${a} % 0)`);
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r;
}

export function divFloat(a: number, b: number): number {
  if (b === 0) throw new EvalError(`division by zero (${a} / 0)`);
  return a / b;
}

export function floorDivFloat(a: number, b: number): number {
  if (b === 0) throw new EvalError(`division by zero (${a} // 0)`);
  return Math.floor(a / b);
}

export function dim(shape: readonly number[], axis: number, what: string): number {
  const rank = shape.length;
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank) {
    throw new EvalError(
      `dim(${what}, ${axis}): ${Number.isInteger(axis) ? `axis out of range for rank ${rank}` : "the axis is not an integer"}`,
    );
  }
  return shape[axis < 0 ? axis + rank : axis];
}

export function ceilDiv(a: number, b: number): number {
  if (b === 0) throw new EvalError(`ceilDiv(${a}, 0): division by zero`);
  return checkInt(-Math.floor(-a / b));
}

export function pow2ceil(n: number): number {
  if (n <= 1) return 1;
  if (n > 2 ** 52) throw new EvalError(`pow2ceil(${n}): result exceeds 2^53`);
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** ONNX element type names kernelc knows, with their WGSL scalar where one exists. */
export const ONNX_TO_WGSL: Readonly<Record<string, string>> = Object.freeze(
  Object.assign(Object.create(null), { float16: "f16", float32: "f32", float: "f32", int32: "i32", uint32: "u32", bool: "u32" }),
);

export function f16Ok(t: string): boolean {
  return t === "float16";
}

/** Structural equality of values (lists element-wise). */
export function valuesEqual(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => valuesEqual(x, b[i]));
  return a === b;
}
