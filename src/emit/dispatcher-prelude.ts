/**
 * The fixed parts of every generated dispatcher module: the exported types, the error class, and
 * the small helpers generated code calls. These mirror lang/ops.ts and plan/interpret.ts exactly
 * (same results, same messages); the differential test checks it. No expression interpreter here:
 * only call snapshots, arithmetic helpers and error formatting. A module carries only the helpers
 * its code uses (`preludeFor`), so it compiles under `noUnusedLocals`. Type-only text is marked
 * (« », turned into code-writer's marks), so the same text gives the .ts and the .js module.
 */
import { finishModule, TYPE_END, TYPE_START } from "./code-writer.js";

/** The prelude's type-only text is written between « and » here; generated code marks it with ty()'s marks. */
function marks(text: string): string {
  return text.replace(/«/g, TYPE_START).replace(/»/g, TYPE_END);
}

/** The exported types and the error class: every dispatcher module starts with these. */
export const PRELUDE_TYPES = marks(String.raw`«/** A tensor as a call describes it: shape and ONNX element type. */
export interface TensorDesc<D extends string = string> {
  readonly shape: readonly number[];
  readonly dtype: D;
}»«

/** One call of a kernel: tensors by spec id (absent: omitted or null) and attribute values. */
export interface Call {
  readonly inputs: Readonly<Record<string, TensorDesc | null | undefined>>;
  readonly outputs?: Readonly<Record<string, TensorDesc | null | undefined>> | undefined;
  readonly attrs?: Readonly<Record<string, number | string | readonly number[] | undefined>> | undefined;
}»«

/** What a call binds to a binding: the byte size of its tensor's or scratch buffer's range [0, size), or a uniform's contents as u32 words (word i: bytes 4i..4i+3, little-endian). */
export type BindingResource = number | readonly number[];»«

/** One binding of a pass: its number, WGSL name, buffer type and what it binds (one frozen list per pass, shared by its plans). */
export type BindingPlan = { readonly binding: number; readonly name: string; readonly type: "storage" | "read-only-storage" | "uniform" } & (
  | { readonly kind: "input" | "output"; readonly tensor: string }
  | { readonly kind: "scratch"; readonly scratch: string }
  | { readonly kind: "uniform" }
);»«

/** One compute pass: the shader, its bindings in order, each binding's resource (resources[i] for bindings[i]), and the workgroup counts x, y, z. */
export interface PassPlan {
  readonly id: string;
  readonly name: string;
  readonly shader: string;
  readonly entryPoint: string;
  readonly bindings: readonly BindingPlan[];
  readonly resources: readonly BindingResource[];
  readonly x: number;
  readonly y: number;
  readonly z: number;
}»«

/** What to run for one call: the variant, its passes in order, scratch buffer sizes by id, output shapes. */
export interface Plan {
  readonly kernel: string;
  readonly variant: string;
  readonly passes: readonly PassPlan[];
  readonly scratch: Readonly<Record<string, number>>;
  readonly outputShapes: Readonly<Record<string, readonly number[]>>;
}»«

/** Why a call could not be planned. */
export type CallErrorKind = "invalid_call" | "contract" | "no_variant" | "missing_shader" | "eval";»

/** Thrown for a call that cannot be planned: its kind, and a message naming the condition and values. */
export class KernelCallError extends Error {«
  readonly kind: CallErrorKind;»
  constructor(kind«: CallErrorKind», message«: string») {
    super(message);
    this.name = "KernelCallError";
    this.kind = kind;
  }
}
`);

/** PRELUDE_TYPES as declarations, for the .d.ts of a JavaScript module. */
export const PRELUDE_DECLARATIONS =
  finishModule(PRELUDE_TYPES.slice(0, PRELUDE_TYPES.indexOf("/** Thrown for")), "ts") +
  `/** Thrown for a call that cannot be planned: its kind, and a message naming the condition and values. */
export declare class KernelCallError extends Error {
  readonly kind: CallErrorKind;
  constructor(kind: CallErrorKind, message: string);
}
`;

/**
 * The helpers, each a top-level declaration (with its doc comment). `preludeFor` splits this text
 * at top-level declarations and keeps those a module's code reaches.
 */
const HELPERS = marks(String.raw`«type V = number | boolean | string | readonly number[];»
«type Bag = Readonly<Record<string, unknown>>;»
«type TensorSnap = TensorDesc & { readonly n: number };»
class EvalFailure extends Error {}
/** Called as $hasOwn.call(bag, key) in for-in loops, a form V8 reduces to an enum-cache check. */
const $hasOwn = Object.prototype.hasOwnProperty;
/**
 * Math and Number functions the generated code calls, read once when the module loads: a call of
 * $floor(x) is shorter minified than Math.floor(x) and skips a property read; V8 optimizes it as
 * the same builtin (its call site's target).
 */
const $floor = Math.floor;
/** Math.min, read once (see $floor). */
const $min = Math.min;
/** Math.max, read once (see $floor). */
const $max = Math.max;
/** Number.isSafeInteger, read once (see $floor). */
const $isSafe = Number.isSafeInteger;
/** Number.isInteger, read once (see $floor). */
const $isInt = Number.isInteger;
/**
 * The call itself: an object that is not an array, whose own keys are inputs, outputs and attrs
 * (and any starting with $, for comments), else an invalid_call error: a misspelled bag
 * ("attributes") would otherwise plan with the defaults. Returns which bags the for-in found as own
 * enumerable keys (1 inputs, 2 outputs, 4 attrs; V8 reduces hasOwnProperty in a for-in to an
 * enum-cache check), so that $bag asks hasOwnProperty only for the others.
 */
function $call(c«: unknown», kernel«: string»)«: number» {
  if (typeof c !== "object" || c === null || Array.isArray(c)) $fail("invalid_call", kernel + ": a call must be an object { inputs, outputs, attrs }, got " + $show(c));
  let own = 0;
  for (const k in c) {
    if ($hasOwn.call(c, k)) {
      if (k === "inputs") own |= 1;
      else if (k === "outputs") own |= 2;
      else if (k === "attrs") own |= 4;
      else if (k.charCodeAt(0) !== 36) $fail("invalid_call", kernel + ": the call has an unknown key " + $show(k) + "; a call is an object { inputs, outputs, attrs }");
    }
  }
  return own;
}
/**
 * One of the call's bags (inputs, outputs, attrs), read once if it is the call's own property (an
 * inherited one, e.g. of a polluted Object.prototype, is not read): an object, or undefined when
 * absent; an array is refused (its indices would read as tensor or attribute names, and an empty
 * one would pass as an empty bag). Each bag is read by its name (one inline cache per name; c[k]
 * would see three names and go megamorphic). own: $call found it an own key (else hasOwnProperty asks).
 */
function $bag(c«: object», k«: string», kernel«: string», own«: number»)«: Bag | undefined» {
  const v = own || $hasOwn.call(c, k) ? (k === "inputs" ? (c« as Call»).inputs : k === "outputs" ? (c« as Call»).outputs : (c« as Bag»)[k]) : undefined;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) $fail("invalid_call", kernel + ": call." + k + " must be an object keyed by " + (k === "attrs" ? "attribute name" : "tensor id") + ", got " + $show(v));
  return v« as Bag»;
}
/**
 * A snapshot of a tensor description: its own shape and dtype read once into a fresh array and a
 * string, checked (dimensions non-negative safe integers, at most 64 of them; dtype a string), with
 * its element count n (a TensorSnap), multiplied up left to right as the shape is copied: $buf's
 * byte size needs no second loop over the shape.
 */
function $td(v«: unknown», kernel«: string», what«: string», id«: string»)«: TensorSnap | null» {
  if (v === undefined || v === null) return null;
  if (typeof v !== "object") return $badTensor(kernel, what, id, " must be a tensor { shape, dtype } or null, got " + $show(v));
  // Which of shape and dtype are own properties: found by a for-in over the tensor's keys (V8 reduces
  // hasOwnProperty there to a check of the enumeration cache), then by hasOwnProperty for one that is
  // not enumerable. Each is then read once, shape first, and only when it is the tensor's own.
  let hasShape = false;
  let hasDtype = false;
  for (const k in v) {
    if ($hasOwn.call(v, k)) {
      if (k === "shape") hasShape = true;
      else if (k === "dtype") hasDtype = true;
    }
  }
  if (!hasShape) hasShape = $hasOwn.call(v, "shape");
  if (!hasDtype) hasDtype = $hasOwn.call(v, "dtype");
  const s«: unknown» = hasShape ? (v« as Bag»)["shape"] : undefined;
  const dtype«: unknown» = hasDtype ? (v« as Bag»)["dtype"] : undefined;
  if (!Array.isArray(s)) return $badTensor(kernel, what, id, " has shape " + $show(s) + "; a shape must be an array of non-negative integers");
  const n = s.length;
  if (n > 64) $badTensor(kernel, what, id, " has " + n + " dimensions; at most 64 are supported");
  // Allocated at its length (cheaper than growing it by push); every element is then set.
  const shape«: number[]» = new Array«<number>»(n);
  let ok = true;
  let p = 1;
  for (let i = 0; i < n; i++) {
    const d«: unknown» = $hasOwn.call(s, i) ? s[i] : undefined;
    // Only a valid dimension is multiplied in: anything else (a Symbol, an object) is never converted.
    if (typeof d === "number" && $isSafe(d) && d >= 0) p *= d;
    else ok = false;
    shape[i] = d« as number»;
  }
  if (!ok) $badTensor(kernel, what, id, " has shape " + $show(shape) + "; dimensions must be non-negative integers");
  if (typeof dtype !== "string") return $badTensor(kernel, what, id, " has dtype " + $show(dtype) + "; a dtype must be a string such as \"float16\"");
  return { shape, dtype, n: p };
}
/** Fails for a tensor description of the wrong form. */
function $badTensor(kernel«: string», what«: string», id«: string», detail«: string»)«: never» {
  return $fail("invalid_call", kernel + ": " + what + " \u0060" + id + "\u0060" + detail);
}
/** Fails for a required tensor the call does not give. */
function $missing(kernel«: string», what«: string», id«: string»)«: never» {
  return $fail("invalid_call", kernel + ": required " + what + " \u0060" + id + "\u0060 is missing");
}
/** Fails for a tensor whose dtype its type parameter does not allow (allowed: the allowed dtypes, joined by ", "). */
function $notAllowed(kernel«: string», what«: string», id«: string», dtype«: string», param«: string», allowed«: string»)«: never» {
  return $badTensor(kernel, what, id, " has dtype " + $name(dtype) + ", which " + param + " does not allow; allowed: " + allowed);
}
/**
 * Fails for a tensor whose dtype differs from the one an earlier tensor (by) gave its type parameter:
 * the tensor's own dtype is at fault when the parameter does not allow it, else the two disagree.
 */
function $dtypeClash(kernel«: string», what«: string», id«: string», dtype«: string», by«: string», param«: string», prev«: string», allowed«: string»)«: never» {
  if (allowed.split(", ").indexOf(dtype) < 0) $notAllowed(kernel, what, id, dtype, param, allowed);
  return $badTensor(kernel, what, id, " has dtype " + $name(dtype) + ", but \u0060" + by + "\u0060 makes " + param + " = " + $name(prev) + ": every tensor of " + param + " must have the dtype of the first one the call gives");
}
/** Fails for a tensor of the wrong rank. */
function $badRank(kernel«: string», what«: string», id«: string», rank«: number», got«: number»)«: never» {
  return $badTensor(kernel, what, id, " must have rank " + rank + ", got " + got);
}
/** Fails for a given tensor whose dtype is not its type parameter's (dt, which tensor by gave it; allowed as $dtypeClash), or (rank >= 0) whose rank is not rank. */
function $param(t«: TensorDesc», dt«: string», by«: string», param«: string», allowed«: string», rank«: number», kernel«: string», what«: string», id«: string»)«: void» {
  if (dt !== t.dtype) $dtypeClash(kernel, what, id, t.dtype, by, param, dt, allowed);
  if (rank >= 0 && t.shape.length !== rank) $badRank(kernel, what, id, rank, t.shape.length);
}
/** Fails for a given tensor whose rank is not rank. */
function $rank(t«: TensorDesc», rank«: number», kernel«: string», what«: string», id«: string»)«: void» {
  if (t.shape.length !== rank) $badRank(kernel, what, id, rank, t.shape.length);
}
/** Fails for a given numeric attribute value that is not a finite number (an integer when int). */
function $num(v«: unknown», int«: boolean», kernel«: string», name«: string»)«: void» {
  if (v !== undefined && !(typeof v === "number" && (int ? $isInt(v) : Number.isFinite(v)))) $badAttr(kernel, name, int ? "an integer" : "a finite number", v);
}
/** Fails for an attribute value of the wrong type. */
function $badAttr(kernel«: string», name«: string», want«: string», v«: unknown»)«: never» {
  return $fail("invalid_call", kernel + ": attribute \u0060" + name + "\u0060 must be " + want + ", got " + $show(v));
}
/** A snapshot of an attribute value: a list is copied (own elements, at most 65536), anything else kept. */
function $av(v«: unknown», kernel«: string», name«: string»)«: unknown» {
  if (!Array.isArray(v)) return v;
  const n = v.length;
  if (n > 65536) $fail("invalid_call", kernel + ": attribute \u0060" + name + "\u0060 has " + n + " elements; at most 65536 are supported");
  const out«: unknown[]» = [];
  for (let i = 0; i < n; i++) out.push($hasOwn.call(v, i) ? v[i] : undefined);
  return out;
}
/** Whether an attribute value is a list of finite numbers. */
function $numbers(v«: unknown»)«: boolean» {
  if (!Array.isArray(v)) return false;
  for (let i = 0; i < v.length; i++) if (!(typeof v[i] === "number" && Number.isFinite(v[i]))) return false;
  return true;
}
/** Whether an attribute value is a list of integers (an int-list attribute's value: its elements are ints in every expression). */
function $ints(v«: unknown»)«: boolean» {
  if (!Array.isArray(v)) return false;
  for (let i = 0; i < v.length; i++) if (!(typeof v[i] === "number" && $isSafe(v[i]))) return false;
  return true;
}
function $err(m«: string»)«: never» {
  throw new EvalFailure(m);
}
function $overflow(v«: number»)«: never» {
  return $err("integer overflow: " + v + " is outside ±(2^53 - 1)");
}
function $chk(v«: number»)«: number» {
  return $isSafe(v) ? v : $overflow(v);
}
function $isI(a«: number», b«: number»)«: boolean» {
  return $isInt(a) && $isInt(b);
}
/** a + b, failing on integer overflow when both are integers (number-typed operands). */
function $addN(a«: number», b«: number»)«: number» {
  const r = a + b;
  return $isSafe(r) || !$isI(a, b) ? r : $overflow(r);
}
/** a - b, failing on integer overflow when both are integers (number-typed operands). */
function $subN(a«: number», b«: number»)«: number» {
  const r = a - b;
  return $isSafe(r) || !$isI(a, b) ? r : $overflow(r);
}
/** a * b, failing on integer overflow when both are integers (number-typed operands). */
function $mulN(a«: number», b«: number»)«: number» {
  const r = a * b;
  return $isSafe(r) || !$isI(a, b) ? r : $overflow(r);
}
function $fdivI(a«: number», b«: number»)«: number» {
  if (b === 0) $err("integer division by zero (" + a + " / 0)");
  return $chk($floor(a / b));
}
function $modI(a«: number», b«: number»)«: number» {
  if (b === 0) $err("modulo by zero (" + a + " % 0)");
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r === 0 ? 0 : r;
}
function $modF(a«: number», b«: number»)«: number» {
  if (b === 0) $err("modulo by zero (" + a + " % 0)");
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r;
}
function $divF(a«: number», b«: number»)«: number» {
  if (b === 0) $err("division by zero (" + a + " / 0)");
  return a / b;
}
function $fdivF(a«: number», b«: number»)«: number» {
  if (b === 0) $err("division by zero (" + a + " // 0)");
  return $floor(a / b);
}
function $divN(a«: number», b«: number»)«: number» {
  return $isI(a, b) ? $fdivI(a, b) : $divF(a, b);
}
function $fdivN(a«: number», b«: number»)«: number» {
  return $isI(a, b) ? $fdivI(a, b) : $fdivF(a, b);
}
function $modN(a«: number», b«: number»)«: number» {
  return $isI(a, b) ? $modI(a, b) : $modF(a, b);
}
function $neg(v«: number»)«: number» {
  return v === 0 ? 0 : -v;
}
function $dimS(shape«: readonly number[]», axis«: number», what«: string»)«: number» {
  const rank = shape.length;
  if (!$isInt(axis) || axis < -rank || axis >= rank) $err("dim(" + what + ", " + axis + "): " + ($isInt(axis) ? "axis out of range for rank " + rank : "the axis is not an integer"));
  return shape[axis < 0 ? axis + rank : axis]«!»;
}
function $ceilDiv(a«: number», b«: number»)«: number» {
  if (b === 0) $err("ceilDiv(" + a + ", 0): division by zero");
  return $chk(-$floor(-a / b));
}
function $pow2ceil(n«: number»)«: number» {
  if (n <= 1) return 1;
  if (n > 2 ** 52) $err("pow2ceil(" + n + "): result exceeds 2^53");
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
function $same(a«: readonly number[]», b«: readonly number[]»)«: boolean» {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
function $eq(a«: unknown», b«: unknown»)«: boolean» {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!$eq(a[i], b[i])) return false;
    return true;
  }
  return a === b;
}
function $need(t«: TensorDesc | null», what«: string», id«: string»)«: TensorDesc» {
  if (t === null) $err(what + ": tensor \u0060" + id + "\u0060 is absent in this call");
  return t;
}
function $attr(v«: unknown», name«: string»)«: V» {
  if (v === undefined) $err("attrs." + name + ": the call does not give attribute \u0060" + name + "\u0060 and it has no default");
  return v« as V»;
}
function $wrap(e«: unknown», name«: string»)«: unknown» {
  if (e instanceof EvalFailure && !e.message.startsWith("in \u0060")) return new EvalFailure("in \u0060" + name + "\u0060: " + e.message);
  return e;
}
/**
 * A value as messages show it; never runs the value's own code (objects and functions are named, not
 * converted). Bounded: a string past 256 characters, a list past 64 items and lists nested past 8
 * levels are cut, so a hostile value gives a short message, never a stack overflow.
 */
function $show(v«: unknown», d«: number» = 0)«: string» {
  if (typeof v === "string") return v.length > 256 ? JSON.stringify(v.slice(0, 256)) + "\u2026 (" + v.length + " characters)" : JSON.stringify(v);
  if (Array.isArray(v)) {
    if (d >= 8) return "[\u2026]";
    const n = v.length < 64 ? v.length : 64;
    let s = "[";
    for (let i = 0; i < n; i++) s += (i ? ", " : "") + $show(v[i], d + 1);
    return s + (v.length > n ? ", \u2026 (" + v.length + " items)]" : "]");
  }
  if (typeof v === "object" && v !== null) return "(object)";
  if (typeof v === "function") return "(function)";
  return String(v);
}
/** A name or dtype string a call gives, as messages show it: cut past 256 characters (call-snapshot.ts's showCallName). */
function $name(s«: string»)«: string» {
  return s.length > 256 ? s.slice(0, 256) + "\u2026 (" + s.length + " characters)" : s;
}
function $try(f«: () => unknown»)«: unknown» {
  try {
    return f();
  } catch (e) {
    if (e instanceof EvalFailure) return e;
    throw e;
  }
}
/**
 * Why a chain of conjuncts is not true: parts holds a test and an explanation per conjunct, then
 * the last conjunct's explanation; the explanation of the first conjunct whose test is false or
 * fails is given (the last one's when every test holds).
 */
function $and(parts«: readonly (() => unknown)[]»)«: string» {
  let i = 0;
  for (; i < parts.length - 1; i += 2) {
    const v = $try(parts[i]«!»);
    if (v === false || v instanceof EvalFailure) break;
  }
  return parts[i < parts.length - 1 ? i + 1 : i]«!»()« as string»;
}
function $showT(v«: unknown»)«: string» {
  return v instanceof EvalFailure ? "error: " + v.message : $show(v);
}
/** An operand's value as an explanation shows it: its value, or "error: …" when it fails to evaluate. */
function $sv(f«: () => unknown»)«: string» {
  return $showT($try(f));
}
/**
 * Why a condition is false, with its operands: the derive path, the condition's text between
 * backquotes, "is false", then " (x = 1, y = 2)". The parts hold each operand's text and its value:
 * a constant's shown value, or a function computing it (shown as $sv shows it). The condition's
 * text is the gaps with the operands' texts between them, or the one gap alone.
 */
function $why(path«: readonly string[]», gaps«: readonly string[]», parts«: readonly (string | (() => unknown))[]»)«: string» {
  let s = $where(path) + "\u0060" + gaps[0]«!»;
  for (let i = 1; i < gaps.length; i++) s += (parts[2 * i - 2]« as string») + gaps[i]«!»;
  s += "\u0060 is false (";
  for (let i = 0; i < parts.length; i += 2) {
    const v = parts[i + 1]«!»;
    s += (i ? ", " : "") + (parts[i]« as string») + " = " + (typeof v === "function" ? $sv(v) : v);
  }
  return s + ")";
}
function $where(path«: readonly string[]»)«: string» {
  let s = "";
  for (const p of path) s += (s ? " > " : "in ") + "\u0060" + p + "\u0060";
  return s ? s + ": " : "";
}
function $isFail(v«: unknown»)«: boolean» {
  return v instanceof EvalFailure;
}
function $fail(kind«: CallErrorKind», message«: string»)«: never» {
  throw new KernelCallError(kind, message);
}
function $evalFail(e«: unknown», prefix«: string», what«: string»)«: never» {
  if (e instanceof EvalFailure) $fail("eval", prefix + ": " + what + " failed: " + e.message);
  throw e;
}
function $unheld(e«: unknown»)«: false» {
  if (e instanceof EvalFailure) return false;
  throw e;
}
function $condFail(e«: unknown», text«: string»)«: string» {
  if (e instanceof EvalFailure) return "\u0060" + text + "\u0060 could not be evaluated: " + e.message;
  throw e;
}
/** Why a condition does not hold: the failure of its evaluation (f) when it fails, else its explanation (why). */
function $condWhy(f«: () => unknown», text«: string», why«: () => string»)«: string» {
  try {
    f();
  } catch (e) {
    return $condFail(e, text);
  }
  return why();
}
function $dimT(t«: TensorDesc | null», ax«: number», id«: string»)«: number» {
  if (t === null) $err("dim(shapes." + id + ", " + ax + "): tensor \u0060" + id + "\u0060 is absent in this call");
  const shape = t.shape;
  const rank = shape.length;
  if (!$isInt(ax) || ax < -rank || ax >= rank) $err("dim(shapes." + id + ", " + ax + "): " + ($isInt(ax) ? "axis out of range for rank " + rank : "the axis is not an integer"));
  return shape[ax < 0 ? ax + rank : ax]«!»;
}
function $product(shape«: readonly number[]»)«: number» {
  let p = 1;
  for (let i = 0; i < shape.length; i++) p *= shape[i]«!»;
  return p;
}
function $round4(n«: number»)«: number» {
  return Math.ceil(n / 4) * 4;
}
/** A dimension of an intermediate's shape, or an eval error when it is not a non-negative integer. */
function $sdim(d«: unknown», prefix«: string», id«: string»)«: number» {
  if (!(Number.isSafeInteger(d) && «(»d« as number)» >= 0)) $fail("eval", prefix + ": the shape of intermediate \u0060" + id + "\u0060 has the dimension " + $show(d) + "; dimensions must be non-negative integers");
  return d« as number»;
}
/** An intermediate's shape, each dimension checked as by $sdim. */
function $sshape(shape«: readonly unknown[]», prefix«: string», id«: string»)«: readonly number[]» {
  for (let i = 0; i < shape.length; i++) $sdim(shape[i], prefix, id);
  return shape« as readonly number[]»;
}
/** A binding's or scratch buffer's byte size, or an eval error when it exceeds the profile's binding limit (or 2^53). */
function $fits(size«: number», max«: number», limit«: string», prefix«: string», what«: string»)«: number» {
  if (!(size <= max)) $fail("eval", prefix + ": " + what + " needs " + size + " bytes, more than " + limit + " (" + max + ")");
  return size;
}
/** Whether a computed output shape is a list of non-negative integers of the declared rank (-1: any rank). */
function $isShape(v«: unknown», rank«: number»)«: v is readonly number[]» {
  if (!Array.isArray(v) || (rank >= 0 && v.length !== rank)) return false;
  // An indexed loop: a for-of would call Array.prototype[Symbol.iterator], which a page may replace.
  for (let i = 0; i < v.length; i++) if (!($isSafe(v[i]) && (v[i]« as number») >= 0)) return false;
  return true;
}
/**
 * Fails for a computed output shape that $isShape refuses, naming the spec's shape expression (text)
 * and the attributes and dimensions it reads: reads holds each one's text, then a function computing
 * its value; one whose value fails (a dimension of an absent tensor) is left out.
 */
function $badShape(v«: unknown», rank«: number», kernel«: string», id«: string», text«: string», reads«: readonly (string | (() => unknown))[]»)«: never» {
  let s = "";
  for (let i = 0; i < reads.length; i += 2) {
    const r = $try(reads[i + 1]« as () => unknown»);
    if (!(r instanceof EvalFailure)) s += (s ? ", " : " (") + (reads[i]« as string») + " = " + $show(r);
  }
  return $fail("eval", kernel + ": the shape of output \u0060" + id + "\u0060, \u0060" + text + "\u0060, is " + $show(v) + (s ? s + ")" : "") + "; " + (rank < 0 ? "" : "the spec declares rank " + rank + " and ") + "dimensions must be non-negative integers");
}
/** Fails for a given output whose shape is not the one the spec computes. */
function $badOutput(kernel«: string», id«: string», given«: readonly number[]», want«: readonly number[]», text«: string»)«: never» {
  return $fail("invalid_call", kernel + ": output \u0060" + id + "\u0060 has shape " + $show(given) + ", expected " + $show(want) + " (\u0060" + text + "\u0060)");
}
/** The shader of the first built key (a row: key values, null for any, then the shader id) that vals match. */
function $pick(table«: readonly (readonly unknown[])[]», vals«: readonly unknown[]»)«: string | undefined» {
  const n = vals.length;
  next: for (const row of table) {
    for (let i = 0; i < n; i++) {
      const k = row[i];
      if (k !== null && k !== vals[i]) continue next;
    }
    return row[n]« as string»;
  }
  return undefined;
}
/** Fails for a call whose shader key was not built: the key's leaves and their values. */
function $noShader(head«: string», names«: readonly string[]», vals«: readonly unknown[]», tail«: string»)«: never» {
  let s = "";
  for (let i = 0; i < names.length; i++) s += (i ? ", " : "") + names[i] + "=" + $show(vals[i]);
  return $fail("missing_shader", head + s + tail);
}
/** Fails for a pass whose shader key matches no built shader, given the key's values as shown. */
function $noShown(head«: string», names«: readonly string[]», shown«: readonly string[]», tail«: string»)«: never» {
  let s = "";
  for (let i = 0; i < names.length; i++) s += (i ? ", " : "") + names[i] + "=" + shown[i];
  return $fail("missing_shader", head + s + tail);
}
const F32 = new Float32Array(1);
const F32_BITS = new Uint32Array(F32.buffer);
/** A u32 uniform field's word, or fails when the value is outside 0..2^32-1. */
function $u32(v«: unknown», prefix«: string», field«: string»)«: number» {
  const n = v« as number»;
  if (!$isInt(n) || n < 0 || n > 4294967295) $fail("eval", prefix + ": uniform field \u0060" + field + "\u0060 (u32) is " + $show(n) + ($isInt(n) ? ", outside" : ", not an integer in") + " 0..4294967295");
  return n;
}
/** An i32 uniform field's word (its two's complement as a u32), or fails when the value is outside -2^31..2^31-1. */
function $i32(v«: unknown», prefix«: string», field«: string»)«: number» {
  const n = v« as number»;
  if (!$isInt(n) || n < -2147483648 || n > 2147483647) $fail("eval", prefix + ": uniform field \u0060" + field + "\u0060 (i32) is " + $show(n) + ($isInt(n) ? ", outside" : ", not an integer in") + " -2147483648..2147483647");
  return n >>> 0;
}
/**
 * A uniform f32 field's word: the nearest f32's bits (a value too small for f32 becomes a subnormal
 * or zero), or fails when that is not finite: the value is beyond f32's range (it rounds to
 * ±Infinity), or not finite. One mask and comparison on the bits already made.
 */
function $f32(v«: unknown», prefix«: string», field«: string»)«: number» {
  F32[0] = v« as number»;
  const w = F32_BITS[0]«!»;
  if ((w & 0x7f800000) === 0x7f800000) $fail("eval", prefix + ": uniform field \u0060" + field + "\u0060 (f32) is " + $show(v) + "; it must be a finite number of magnitude below 3.4028235677973366e+38 (larger ones round to Infinity in f32)");
  return w;
}
/** A workgroup count, or an eval error when it is not an integer in 0..max. */
function $wg(n«: unknown», max«: number», prefix«: string», axis«: string»)«: number» {
  if (!(typeof n === "number" && $isInt(n) && n >= 0 && n <= max)) {
    $fail("eval", prefix + ": dispatch " + axis + " is " + $show(n) + ", outside 0.." + max + " (maxComputeWorkgroupsPerDimension)");
  }
  return n;
}
/** Buffer types and binding kinds by the code a pass's layout gives ($bl): BT[code % 3], BK[code / 3]. */
const BT = ["storage", "read-only-storage", "uniform"]« as const»;
const BK = ["input", "output", "scratch", "uniform"]« as const»;
/**
 * A pass's binding list, made once when the module loads from its layout (per binding, in binding
 * order: its WGSL name, a code of its buffer type and kind, and its tensor or scratch id, 0 for a
 * uniform) and frozen: every plan of the pass shares it.
 */
function $bl(layout«: readonly (string | number)[]»)«: readonly BindingPlan[]» {
  const out«: BindingPlan[]» = [];
  for (let i = 0; i < layout.length; i += 3) {
    const c = layout[i + 1]« as number»;
    const kind = BK[(c / 3) | 0]«!»;
    const b«: Record<string, unknown>» = { binding: i / 3, name: layout[i], type: BT[c % 3], kind };
    if (c < 9) b[kind === "scratch" ? kind : "tensor"] = layout[i + 2];
    out.push(Object.freeze(b)« as BindingPlan»);
  }
  return Object.freeze(out);
}
/** One compute pass of a plan (entry point main): its shared binding list, this call's resources (one per binding) and workgroup counts. */
function $pass(id«: string», name«: string», shader«: string», bindings«: readonly BindingPlan[]», resources«: BindingResource[]», x«: number», y«: number», z«: number»)«: PassPlan» {
  return { id, name, shader, entryPoint: "main", bindings, resources, x, y, z };
}
/** A plan (one call of this helper per variant's plan function is shorter minified than the object literal). */
function $plan(kernel«: string», variant«: string», passes«: readonly PassPlan[]», scratch«: Readonly<Record<string, number>>», outputShapes«: Readonly<Record<string, readonly number[]>>»)«: Plan» {
  return { kernel, variant, passes, scratch, outputShapes };
}
/** The scratch sizes of a plan without scratch buffers: one frozen empty record, shared. */
const $none = Object.freeze({});
/** Fails for a binding whose optional tensor the call omits. */
function $omitted(prefix«: string», binding«: string», id«: string»)«: never» {
  return $fail("eval", prefix + ": binding \u0060" + binding + "\u0060 needs tensor \u0060" + id + "\u0060, which the call omits");
}
/**
 * The catch of a plan method: an evaluation failure while stage st (st > 0) ran becomes an "eval"
 * error naming it (stages holds a prefix and a description per stage, from stage 1); anything else is rethrown.
 */
function $evalAt(e«: unknown», stages«: readonly string[]», st«: number»)«: never» {
  if (st > 0 && e instanceof EvalFailure) $fail("eval", stages[2 * st - 2] + ": " + stages[2 * st - 1] + " failed: " + e.message);
  throw e;
}
/**
 * The catch of a pass method: an evaluation failure while stage st (st > 0) ran becomes an "eval"
 * error naming the pass (prefix) and what was evaluated (whats[st - 1]); anything else is rethrown.
 */
function $evalIn(e«: unknown», prefix«: string», whats«: readonly string[]», st«: number»)«: never» {
  if (st > 0 && e instanceof EvalFailure) $fail("eval", prefix + ": " + whats[st - 1] + " failed: " + e.message);
  throw e;
}
/**
 * A tensor's whole byte size (rounded up to 4) as its binding's resource, or an eval error when it
 * exceeds the binding limit; lim is the limit's value and name and the kernel's name (one module
 * constant per kernel and limit).
 */
function $buf(t«: TensorSnap», id«: string», bytes«: number», lim«: readonly [number, string, string]»)«: number» {
  const size = $round4(t.n * bytes);
  if (!(size <= lim[0])) $fail("eval", lim[2] + ": tensor \u0060" + id + "\u0060 needs " + size + " bytes, more than " + lim[1] + " (" + lim[0] + ")");
  return size;
}
`);

/** One top-level declaration of the helpers: its name and text. */
interface Helper {
  readonly name: string;
  readonly text: string;
}

/** The helpers split at top-level declarations (a doc comment belongs to the declaration after it). */
function splitHelpers(text: string): Helper[] {
  const out: Helper[] = [];
  let pending: string[] = [];
  let current: { name: string; lines: string[] } | undefined;
  for (const line of text.split("\n")) {
    const decl = /^\u0001?(?:function|const|class|type) ([A-Za-z_$][\w$]*)/.exec(line);
    if (decl || line.startsWith("/**")) {
      if (current) out.push({ name: current.name, text: current.lines.join("\n") });
      current = undefined;
    }
    if (decl) {
      current = { name: decl[1]!, lines: [...pending, line] };
      pending = [];
    } else if (current) current.lines.push(line);
    else if (line !== "") pending.push(line);
  }
  if (current) out.push({ name: current.name, text: current.lines.join("\n") });
  return out;
}

const HELPER_LIST: readonly Helper[] = splitHelpers(HELPERS);

/** The identifiers code refers to, outside string literals and comments. */
function identifiersOf(code: string): Set<string> {
  const bare = code.replace(/"(?:[^"\\\n]|\\.)*"|\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, " ");
  return new Set(bare.match(/[A-Za-z_$][\w$]*/g) ?? []);
}

/** The helpers `code` uses, with the helpers they use in turn, in declaration order. */
export function preludeFor(code: string): string {
  const byName = new Map(HELPER_LIST.map((h) => [h.name, h]));
  const used = new Set<string>();
  const visit = (text: string): void => {
    for (const id of identifiersOf(text)) {
      const h = byName.get(id);
      if (h && !used.has(id)) {
        used.add(id);
        visit(h.text);
      }
    }
  };
  visit(code);
  return HELPER_LIST.filter((h) => used.has(h.name))
    .map((h) => h.text)
    .join("\n");
}
