/**
 * The fixed part of every generated dispatcher module: types, the error class and the small
 * helpers generated code calls. These mirror eval/ops.ts and plan/interpret.ts exactly (same
 * results, same messages); the differential test checks it. No expression interpreter here:
 * only arithmetic helpers and error formatting.
 */
export const DISPATCHER_PRELUDE = String.raw`/** A tensor as a call describes it: shape and ONNX element type. */
export interface TensorDesc {
  readonly shape: readonly number[];
  readonly dtype: string;
}

/** One call of a kernel: tensors by spec id (absent: omitted or null) and attribute values. */
export interface Call {
  readonly inputs: Readonly<Record<string, TensorDesc | null | undefined>>;
  readonly outputs?: Readonly<Record<string, TensorDesc | null | undefined>>;
  readonly attrs?: Readonly<Record<string, number | string | readonly number[] | undefined>>;
}

export type BindingResource =
  | { readonly kind: "input" | "output"; readonly tensor: string; readonly offset: number; readonly size: number }
  | { readonly kind: "scratch"; readonly scratch: string; readonly offset: number; readonly size: number }
  | { readonly kind: "uniform"; readonly bytes: Uint8Array };

export interface BindingPlan {
  readonly binding: number;
  readonly name: string;
  readonly type: "storage" | "read-only-storage" | "uniform";
  readonly resource: BindingResource;
}

export interface PassPlan {
  readonly id: string;
  readonly name: string;
  readonly shader: string;
  readonly entryPoint: string;
  readonly bindings: readonly BindingPlan[];
  readonly workgroups: readonly [number, number, number];
}

/** What to run for one call: the variant, its passes in order, scratch buffers, output shapes. */
export interface Plan {
  readonly kernel: string;
  readonly variant: string;
  readonly passes: readonly PassPlan[];
  readonly scratch: readonly { readonly id: string; readonly size: number }[];
  readonly outputShapes: Readonly<Record<string, readonly number[]>>;
}

export type CallErrorKind = "invalid_call" | "contract" | "no_variant" | "missing_shader" | "eval";

/** Thrown for a call that cannot be planned: its kind, and a message naming the condition and values. */
export class KernelCallError extends Error {
  readonly kind: CallErrorKind;
  constructor(kind: CallErrorKind, message: string) {
    super(message);
    this.name = "KernelCallError";
    this.kind = kind;
  }
}

type V = number | boolean | string | readonly number[];
type Bag = Readonly<Record<string, unknown>>;

class EvalFailure extends Error {}

const $hasOwn = Object.prototype.hasOwnProperty;

function $err(m: string): never {
  throw new EvalFailure(m);
}
function $overflow(v: number): never {
  return $err("integer overflow: " + v + " is outside ±(2^53 - 1)");
}
function $chk(v: number): number {
  return Number.isSafeInteger(v) ? v : $overflow(v);
}
function $isI(a: number, b: number): boolean {
  return Number.isInteger(a) && Number.isInteger(b);
}
function $fdivI(a: number, b: number): number {
  if (b === 0) $err("integer division by zero (" + a + " / 0)");
  return $chk(Math.floor(a / b));
}
function $modI(a: number, b: number): number {
  if (b === 0) $err("modulo by zero (" + a + " % 0)");
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r === 0 ? 0 : r;
}
function $modF(a: number, b: number): number {
  if (b === 0) $err("modulo by zero (" + a + " % 0)");
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r;
}
function $divF(a: number, b: number): number {
  if (b === 0) $err("division by zero (" + a + " / 0)");
  return a / b;
}
function $fdivF(a: number, b: number): number {
  if (b === 0) $err("division by zero (" + a + " // 0)");
  return Math.floor(a / b);
}
function $divN(a: number, b: number): number {
  return $isI(a, b) ? $fdivI(a, b) : $divF(a, b);
}
function $fdivN(a: number, b: number): number {
  return $isI(a, b) ? $fdivI(a, b) : $fdivF(a, b);
}
function $modN(a: number, b: number): number {
  return $isI(a, b) ? $modI(a, b) : $modF(a, b);
}
function $neg(v: number): number {
  return v === 0 ? 0 : -v;
}
function $dimS(shape: readonly number[], axis: number, what: string): number {
  const rank = shape.length;
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank) $err("dim(" + what + ", " + axis + "): axis out of range for rank " + rank);
  return shape[axis < 0 ? axis + rank : axis];
}
function $ceilDiv(a: number, b: number): number {
  if (b === 0) $err("ceilDiv(" + a + ", 0): division by zero");
  return $chk(-Math.floor(-a / b));
}
function $pow2ceil(n: number): number {
  if (n <= 1) return 1;
  if (n > 2 ** 52) $err("pow2ceil(" + n + "): result exceeds 2^53");
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
function $same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
function $eq(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => $eq(x, b[i]));
  return a === b;
}
function $need(t: TensorDesc | null, what: string, id: string): TensorDesc {
  if (t === null) $err(what + ": tensor \u0060" + id + "\u0060 is absent in this call");
  return t;
}
function $attr(v: unknown, name: string): V {
  if (v === undefined) $err("attrs." + name + ": the call does not give attribute \u0060" + name + "\u0060 and it has no default");
  return v as V;
}
function $wrap(e: unknown, name: string): unknown {
  if (e instanceof EvalFailure && !e.message.startsWith("in \u0060")) return new EvalFailure("in \u0060" + name + "\u0060: " + e.message);
  return e;
}
function $show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map((x) => $show(x)).join(", ") + "]";
  return String(v);
}
function $try(f: () => unknown): unknown {
  try {
    return f();
  } catch (e) {
    if (e instanceof EvalFailure) return e;
    throw e;
  }
}
function $showT(v: unknown): string {
  return v instanceof EvalFailure ? "error: " + v.message : $show(v);
}
function $where(path: readonly string[]): string {
  return path.length ? "in " + path.map((p) => "\u0060" + p + "\u0060").join(" > ") + ": " : "";
}
function $isFail(v: unknown): boolean {
  return v instanceof EvalFailure;
}
function $dimsOk(shape: unknown): boolean {
  if (!Array.isArray(shape)) return false;
  for (const d of shape) if (!Number.isSafeInteger(d) || d < 0) return false;
  return true;
}
function $td(t: unknown): TensorDesc | null {
  return t === undefined || t === null ? null : (t as TensorDesc);
}
function $fail(kind: CallErrorKind, message: string): never {
  throw new KernelCallError(kind, message);
}
function $evalFail(e: unknown, prefix: string, what: string): never {
  if (e instanceof EvalFailure) $fail("eval", prefix + ": " + what + " failed: " + e.message);
  throw e;
}
function $unheld(e: unknown): false {
  if (e instanceof EvalFailure) return false;
  throw e;
}
function $condFail(e: unknown, text: string): string {
  if (e instanceof EvalFailure) return "\u0060" + text + "\u0060 could not be evaluated: " + e.message;
  throw e;
}
function $dimT(t: TensorDesc | null, ax: number, id: string): number {
  if (t === null) $err("dim(shapes." + id + ", " + ax + "): tensor \u0060" + id + "\u0060 is absent in this call");
  const shape = t.shape;
  const rank = shape.length;
  if (!Number.isInteger(ax) || ax < -rank || ax >= rank) $err("dim(shapes." + id + ", " + ax + "): axis out of range for rank " + rank);
  return shape[ax < 0 ? ax + rank : ax];
}
function $product(shape: readonly number[]): number {
  let p = 1;
  for (const d of shape) p *= d;
  return p;
}
function $round4(n: number): number {
  return Math.ceil(n / 4) * 4;
}
const F32 = new Float32Array(1);
const F32_BITS = new Uint32Array(F32.buffer);
/** Writes a 32-bit word little-endian (uniform buffers are little-endian on every WebGPU platform). */
function $word(bytes: Uint8Array, o: number, w: number): void {
  bytes[o] = w & 255;
  bytes[o + 1] = (w >>> 8) & 255;
  bytes[o + 2] = (w >>> 16) & 255;
  bytes[o + 3] = (w >>> 24) & 255;
}
/** Writes a u32 uniform field at byte o, or fails when the value is outside 0..2^32-1. */
function $u32(bytes: Uint8Array, o: number, v: unknown, prefix: string, field: string): void {
  const n = v as number;
  if (!Number.isInteger(n) || n < 0 || n > 4294967295) $fail("eval", prefix + ": uniform field \u0060" + field + "\u0060 (u32) is " + $show(n) + ", outside 0..4294967295");
  $word(bytes, o, n);
}
/** Writes an i32 uniform field at byte o, or fails when the value is outside -2^31..2^31-1. */
function $i32(bytes: Uint8Array, o: number, v: unknown, prefix: string, field: string): void {
  const n = v as number;
  if (!Number.isInteger(n) || n < -2147483648 || n > 2147483647) $fail("eval", prefix + ": uniform field \u0060" + field + "\u0060 (i32) is " + $show(n) + ", outside -2147483648..2147483647");
  $word(bytes, o, n);
}
/** Writes a uniform f32 field at byte o: the nearest f32's bits. */
function $f32(bytes: Uint8Array, o: number, v: unknown): void {
  F32[0] = v as number;
  $word(bytes, o, F32_BITS[0]);
}
function $badWorkgroups(n: unknown, max: number, prefix: string, axis: string): never {
  return $fail("eval", prefix + ": dispatch " + axis + " is " + $show(n) + ", outside 0.." + max + " (maxComputeWorkgroupsPerDimension)");
}
`;
