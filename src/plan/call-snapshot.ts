/**
 * The reference semantics of reading a call: the call's bags, each bag's own keys, each tensor's
 * own shape and dtype and each attribute value read exactly once into fresh plain values, checked
 * for form (the call and each bag an object that is not an array; a shape of at most 64
 * non-negative safe integers; a string dtype). Nothing the caller holds is read again afterwards,
 * so a getter or Proxy that answers differently later cannot change a plan, and inherited
 * properties (a polluted Object.prototype) are never read.
 * The generated dispatcher's `$call`, `$bag`, `$td` and `$av` helpers do the same, in the same
 * order, with the same messages.
 */
import type { Call, TensorDesc } from "../model/plan.js";
import type { KernelModel } from "./dispatch-model.js";
import { appendPointer } from "../core/json-source.js";
import { KernelCallError } from "./call-error.js";

/** Most dimensions a tensor may have, and most elements a list attribute may have. */
export const MAX_RANK = 64;
export const MAX_LIST = 65536;

const hasOwn = (o: object, k: string | number): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** Characters of a string, items of a list and levels of nested lists that call errors show. */
const SHOW_CHARS = 256;
const SHOW_ITEMS = 64;
const SHOW_DEPTH = 8;

/**
 * A value as call errors show it; never runs the value's own code (objects and functions are named,
 * not converted). Bounded (the generated dispatcher's $show cuts the same way): a long string or
 * list is cut with the count, and lists nested deeper than SHOW_DEPTH show as `[…]`, so a hostile
 * call gives a short message and never overflows the stack.
 */
export function showCallValue(v: unknown, depth = 0): string {
  if (typeof v === "string")
    return v.length > SHOW_CHARS ? `${JSON.stringify(v.slice(0, SHOW_CHARS))}\u2026 (${v.length} characters)` : JSON.stringify(v);
  if (Array.isArray(v)) {
    if (depth >= SHOW_DEPTH) return "[\u2026]";
    const n = Math.min(v.length, SHOW_ITEMS);
    let s = "[";
    for (let i = 0; i < n; i++) s += (i ? ", " : "") + showCallValue(v[i], depth + 1);
    return s + (v.length > n ? `, \u2026 (${v.length} items)]` : "]");
  }
  if (typeof v === "object" && v !== null) return "(object)";
  if (typeof v === "function") return "(function)";
  return String(v);
}

/**
 * A name or dtype string a call gives (an unknown tensor or attribute name, a dtype), as call errors
 * show it: as given, but cut past SHOW_CHARS characters like a shown string (the generated
 * dispatcher's $name cuts the same way), so a megabyte of name gives a short message.
 */
export function showCallName(s: string): string {
  return s.length > SHOW_CHARS ? `${s.slice(0, SHOW_CHARS)}\u2026 (${s.length} characters)` : s;
}

/** A snapshot: the call's tensors and attributes as fresh plain records (no prototype). */
export interface CallSnapshot extends Call {
  readonly inputs: Record<string, TensorDesc | null>;
  readonly outputs: Record<string, TensorDesc | null>;
  /** Attribute values as read (validateCall checks their types before anything uses them). */
  readonly attrs: Record<string, AttrValue | undefined>;
}

type AttrValue = number | string | readonly number[];

function record<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** Reads a call once into a snapshot; throws KernelCallError("invalid_call") for a call of the wrong form. */
export function snapshotCall(model: KernelModel, call: unknown): CallSnapshot {
  const spec = model.kernel.spec;
  const K = spec.name;
  const fail = (msg: string, pointer = ""): never => {
    throw new KernelCallError("invalid_call", `${K}: ${msg}`, pointer);
  };
  const bagOf = (what: string): string => (what === "attribute" ? "attrs" : `${what}s`);
  const at = (...tokens: string[]): string => tokens.reduce<string>((p, t) => appendPointer(p, t), "");
  if (typeof call !== "object" || call === null || Array.isArray(call))
    fail(`a call must be an object { inputs, outputs, attrs }, got ${showCallValue(call)}`);
  const c = call as Record<string, unknown>;
  // Own keys other than the three bags (and $-keys, for comments) are refused, as the dispatcher does.
  for (const k in c)
    if (k !== "inputs" && k !== "outputs" && k !== "attrs" && !k.startsWith("$") && hasOwn(c, k))
      fail(`the call has an unknown key ${showCallValue(k)}; a call is an object { inputs, outputs, attrs }`, at(k));
  const bag = (k: string): Record<string, unknown> | undefined => {
    const v = hasOwn(c, k) ? c[k] : undefined;
    if (v === undefined || v === null) return undefined;
    // An array is refused: its indices would read as names, and an empty one would pass as an empty bag.
    if (typeof v !== "object" || Array.isArray(v))
      fail(`call.${k} must be an object keyed by ${k === "attrs" ? "attribute name" : "tensor id"}, got ${showCallValue(v)}`, at(k));
    return v as Record<string, unknown>;
  };
  const bags = { inputs: bag("inputs"), outputs: bag("outputs"), attrs: bag("attrs") };
  const tensor = (v: unknown, what: string, id: string): TensorDesc | null => {
    if (v === undefined || v === null) return null;
    const where = `${what} \`${id}\``;
    const here = at(bagOf(what), id);
    if (typeof v !== "object") fail(`${where} must be a tensor { shape, dtype } or null, got ${showCallValue(v)}`, here);
    const o = v as Record<string, unknown>;
    const s = hasOwn(o, "shape") ? o.shape : undefined;
    const dtype = hasOwn(o, "dtype") ? o.dtype : undefined;
    const shapeAt = hasOwn(o, "shape") ? here + "/shape" : here;
    if (!Array.isArray(s))
      return fail(`${where} has shape ${showCallValue(s)}; a shape must be an array of non-negative integers`, shapeAt);
    const n = s.length;
    if (n > MAX_RANK) fail(`${where} has ${n} dimensions; at most ${MAX_RANK} are supported`, shapeAt);
    const shape: number[] = [];
    for (let i = 0; i < n; i++) shape.push((hasOwn(s, i) ? s[i] : undefined) as number);
    if (!shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      fail(`${where} has shape ${showCallValue(shape)}; dimensions must be non-negative integers`, shapeAt);
    if (typeof dtype !== "string")
      fail(
        `${where} has dtype ${showCallValue(dtype)}; a dtype must be a string such as "float16"`,
        hasOwn(o, "dtype") ? here + "/dtype" : here,
      );
    return { shape, dtype: dtype as string };
  };
  const attr = (v: unknown, name: string): unknown => {
    if (!Array.isArray(v)) return v;
    const n = v.length;
    if (n > MAX_LIST) fail(`attribute \`${name}\` has ${n} elements; at most ${MAX_LIST} are supported`, at("attrs", name));
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) out.push(hasOwn(v, i) ? v[i] : undefined);
    return out;
  };
  const inputs = record<TensorDesc | null>();
  const outputs = record<TensorDesc | null>();
  const attrs = record<AttrValue | undefined>();
  const each = (
    b: Record<string, unknown> | undefined,
    ids: readonly string[],
    what: string,
    take: (key: string, v: unknown) => void,
  ): void => {
    if (b === undefined) return;
    // for-in skipping inherited keys: the same keys, in the same order, as the generated code reads.
    for (const key in b) {
      if (!hasOwn(b, key)) continue;
      if (!ids.includes(key)) fail(`unknown ${what} \`${showCallName(key)}\`; ${what}s are ${ids.join(", ")}`, at(bagOf(what), key));
      take(key, b[key]);
    }
  };
  each(
    bags.inputs,
    spec.inputs.map((i) => i.name),
    "input",
    (key, v) => (inputs[key] = tensor(v, "input", key)),
  );
  each(
    bags.outputs,
    spec.outputs.map((o) => o.name),
    "output",
    (key, v) => (outputs[key] = tensor(v, "output", key)),
  );
  each(
    bags.attrs,
    spec.attributes.map((a) => a.name),
    "attribute",
    (key, v) => (attrs[key] = attr(v, key) as AttrValue | undefined),
  );
  return { inputs, outputs, attrs };
}
