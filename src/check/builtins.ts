/**
 * The builtin functions of the expression language: their names, arity and typing rules.
 * Their run-time meaning lives in eval/ops.ts, shared by the interpreter and generated code.
 */
import type { BuiltinName } from "../model/ir.js";
import { BOOL, INT, isNumeric, numericJoin, showType, type Type } from "../model/types.js";

export interface BuiltinInfo {
  readonly minArgs: number;
  readonly maxArgs: number;
  readonly signature: string;
  readonly doc: string;
  /** The result type, or a message naming the argument that does not fit. */
  readonly typeOf: (args: readonly Type[]) => Type | { readonly error: string; readonly arg: number };
}

function expectNumeric(args: readonly Type[], fn: string): { error: string; arg: number } | undefined {
  for (let i = 0; i < args.length; i++) {
    if (!isNumeric(args[i])) return { error: `argument ${i + 1} of \`${fn}\` must be a number, found ${showType(args[i])}`, arg: i };
  }
  return undefined;
}

function expectInt(args: readonly Type[], fn: string): { error: string; arg: number } | undefined {
  for (let i = 0; i < args.length; i++) {
    const t = args[i];
    if (t.k !== "int" && t.k !== "number" && t.k !== "error")
      return { error: `argument ${i + 1} of \`${fn}\` must be an int, found ${showType(t)}`, arg: i };
  }
  return undefined;
}

export const BUILTINS: Readonly<Record<BuiltinName, BuiltinInfo>> = {
  dim: {
    minArgs: 2,
    maxArgs: 2,
    signature: "dim(shape, axis: int) -> int",
    doc: "The size of one axis of a shape (an element of a list of numbers, of its element type); a negative axis counts from the end. An axis outside the rank is an error.",
    typeOf: (a) => {
      // The result is an element of the list: an int of a shape, a float of a list<float>, so that
      // `dim(attrs.scales, 0) / 2` divides as floats do.
      if (a[0].k !== "error" && (a[0].k !== "list" || !isNumeric(a[0].elem)))
        return { error: `argument 1 of \`dim\` must be a shape or a list of numbers, found ${showType(a[0])}`, arg: 0 };
      if (a[1].k !== "int" && a[1].k !== "number" && a[1].k !== "error")
        return { error: `argument 2 of \`dim\` must be an int, found ${showType(a[1])}`, arg: 1 };
      return a[0].k === "list" ? a[0].elem : INT;
    },
  },
  min: {
    minArgs: 2,
    maxArgs: 16,
    signature: "min(a, b, …) -> number",
    doc: "The smallest argument; int when every argument is an int.",
    typeOf: (a) => expectNumeric(a, "min") ?? a.reduce(numericJoin),
  },
  max: {
    minArgs: 2,
    maxArgs: 16,
    signature: "max(a, b, …) -> number",
    doc: "The largest argument; int when every argument is an int.",
    typeOf: (a) => expectNumeric(a, "max") ?? a.reduce(numericJoin),
  },
  floor: {
    minArgs: 1,
    maxArgs: 1,
    signature: "floor(x) -> int",
    doc: "The largest int not greater than x.",
    typeOf: (a) => expectNumeric(a, "floor") ?? INT,
  },
  ceilDiv: {
    minArgs: 2,
    maxArgs: 2,
    signature: "ceilDiv(a: int, b: int) -> int",
    doc: "a / b rounded up (towards positive infinity); b = 0 is an error.",
    typeOf: (a) => expectInt(a, "ceilDiv") ?? INT,
  },
  pow2ceil: {
    minArgs: 1,
    maxArgs: 1,
    signature: "pow2ceil(n: int) -> int",
    doc: "The smallest power of two >= n (1 for n <= 1).",
    typeOf: (a) => expectInt(a, "pow2ceil") ?? INT,
  },
  sameShape: {
    minArgs: 2,
    maxArgs: 2,
    signature: "sameShape(a: shape, b: shape) -> bool",
    doc: "Whether two shapes have the same rank and dimensions.",
    typeOf: (a) => {
      for (let i = 0; i < 2; i++) {
        if (a[i].k !== "list" && a[i].k !== "error")
          return { error: `argument ${i + 1} of \`sameShape\` must be a shape, found ${showType(a[i])}`, arg: i };
      }
      return BOOL;
    },
  },
  f16Ok: {
    minArgs: 1,
    maxArgs: 1,
    signature: "f16Ok(t: dtype) -> bool",
    doc: "Whether a tensor's ONNX element type is float16, the storage type of kernelc's f16 kernels.",
    typeOf: (a) =>
      a[0].k === "dtype" || a[0].k === "error"
        ? BOOL
        : { error: `argument 1 of \`f16Ok\` must be a dtype (tensorDtypes.X), found ${showType(a[0])}`, arg: 0 },
  },
};

/** Whether `name` names a function of the language: a builtin, or `has` (parsed on its own). */
export function isFunctionName(name: string): boolean {
  return Object.prototype.hasOwnProperty.call(BUILTINS, name) || name === "has";
}

/** `has` is special: its first argument is a namespace, its second a string literal naming a member. */
export const HAS_DOC =
  'has(attrs, "name") -> bool: whether the call gives the attribute (or it has a default); has(present, "tensor"), has(device.features, "feature").';

export const BUILTIN_NAMES: readonly string[] = [...Object.keys(BUILTINS), "has"];
