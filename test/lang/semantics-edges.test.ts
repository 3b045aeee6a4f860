/**
 * The expression language at the edges where Stryker's mutants of src/lang/ops.ts and
 * src/lang/evaluate.ts survived test/check/evaluate.test.ts (docs/testing.md lists them): every
 * comparison on both sides of equality, modulo with each sign and a zero remainder, float
 * division by zero, pow2ceil at 2^52, shapes equal in length but not in values, partial
 * evaluation of conditionals and comparisons with an unknown side, nested error spans, and
 * errors that are bugs (not EvalError) passing through untouched.
 */
import { describe, expect, it } from "vitest";
import { checkExpr, type Scope } from "../../src/check/check-expr.js";
import type { Leaf, TExpr } from "../../src/model/ir.js";
import { INT, type Type } from "../../src/model/types.js";
import { evaluate, LocatedEvalError, UNKNOWN, type EvalEnv, type PValue } from "../../src/lang/evaluate.js";
import * as ops from "../../src/lang/ops.js";
import { parseExpression } from "../../src/lang/parser.js";

const ATTRS: Record<string, PValue> = { two: 2, seven: 7, u: UNKNOWN, flagU: UNKNOWN };
const ATTR_TYPES: Record<string, Type> = { two: INT, seven: INT, u: INT, flagU: { k: "bool" } };
const SHAPES: Record<string, number[]> = { x: [2, 3, 5] };
const DERIVES: Record<string, { type: Type; value: PValue }> = { rows: { type: INT, value: 12 } };

const scope: Scope = {
  tensors: new Map([["x", { pointer: "/inputs/x", optional: false }]]),
  attrs: new Map(Object.entries(ATTR_TYPES).map(([k, type]) => [k, { type, pointer: `/attributes/${k}` }])),
  tunables: new Set(["WG"]),
  typeParams: new Set(["T"]),
  limits: new Set(["maxBufferSize"]),
  features: new Set(["shader-f16"]),
  deriveType: (name) => DERIVES[name]?.type,
  deriveNames: () => Object.keys(DERIVES),
};

function makeEnv(overrides: Partial<EvalEnv> = {}): EvalEnv {
  return {
    leaf(leaf: Leaf): PValue {
      if (leaf.ns === "attrs") return ATTRS[leaf.name];
      if (leaf.ns === "shapes") return SHAPES[leaf.name];
      if (leaf.ns === "tunables") return 64;
      if (leaf.ns === "dtypes") return "f32";
      throw new ops.EvalError(`no ${leaf.ns}.${leaf.name} in this test`);
    },
    dim: (tensor, axis) => ops.dim(SHAPES[tensor], axis, `shapes.${tensor}`),
    hasAttr: (name) => name in ATTRS,
    derive: (name) => DERIVES[name].value,
    ...overrides,
  };
}

function typed(src: string): TExpr {
  const r = checkExpr(parseExpression(src), scope);
  if (r.problems.length > 0) throw new Error(`${src}: ${r.problems.map((p) => p.message).join("; ")}`);
  return r.texpr;
}

const ev = (src: string, env: EvalEnv = makeEnv()): PValue => evaluate(typed(src), env);

function evalError(src: string): { message: string; at: string } {
  try {
    ev(src);
  } catch (e) {
    if (!(e instanceof LocatedEvalError)) throw e;
    return { message: e.message, at: src.slice(e.span.start, e.span.end) };
  }
  throw new Error(`${src} did not fail`);
}

describe("comparisons on both sides of equality", () => {
  it.each([
    ["1 < 2", true],
    ["2 < 2", false],
    ["3 < 2", false],
    ["1 <= 2", true],
    ["2 <= 2", true],
    ["3 <= 2", false],
    ["1 > 2", false],
    ["2 > 2", false],
    ["3 > 2", true],
    ["1 >= 2", false],
    ["2 >= 2", true],
    ["3 >= 2", true],
    ["1 == 1", true],
    ["1 == 2", false],
    ["1 != 1", false],
    ["1 != 2", true],
    ["2 != 1", true],
    ["[1, 2] == [1, 2]", true],
    ["[1, 2] == [1, 3]", false],
    ["[1, 2] != [1, 3]", true],
  ])("%s = %s", (src, want) => {
    expect(ev(src)).toBe(want);
  });

  it("is unknown when either side is", () => {
    for (const src of [
      "attrs.two == attrs.u",
      "attrs.u == attrs.two",
      "attrs.two < attrs.u",
      "attrs.u >= attrs.two",
      "attrs.two != attrs.u",
    ])
      expect(ev(src), src).toBe(UNKNOWN);
  });
});

describe("arithmetic edges", () => {
  it.each([
    ["6 % -3", 0],
    ["7 % 3", 1],
    ["-7 % 3", 2],
    ["7 % -3", -2],
    ["7.5 % 2", 1.5],
    ["-7.5 % -2", -1.5],
    ["6.0 % -3", 0],
    ["2.5 - 1", 1.5],
    ["1.5 * 2", 3],
    ["1.0 / 4", 0.25],
    ["-(2 - 2)", 0],
    ["max(2, 7)", 7],
    ["min(2, 7)", 2],
    ["pow2ceil(4503599627370496)", 4503599627370496],
    ["pow2ceil(4503599627370495)", 4503599627370496],
  ])("%s = %s (Object.is)", (src, want) => {
    expect(Object.is(ev(src), want), `${src} = ${String(ev(src))}`).toBe(true);
  });

  it.each([
    ["5.0 % 0", "modulo by zero (5 % 0)", "5.0 % 0"],
    ["5.0 // 0", "division by zero (5 // 0)", "5.0 // 0"],
    ["1.0 / 0", "division by zero (1 / 0)", "1.0 / 0"],
    ["pow2ceil(4503599627370497)", "pow2ceil(4503599627370497): result exceeds 2^53", "pow2ceil(4503599627370497)"],
  ])("%s fails", (src, message, at) => {
    expect(evalError(src)).toEqual({ message, at });
  });

  it("keeps the innermost span of a nested error", () => {
    expect(evalError("2 * (1 + 5 % 0)")).toEqual({ message: "modulo by zero (5 % 0)", at: "5 % 0" });
  });
});

describe("shapes and lists", () => {
  it.each([
    ["sameShape(shapes.x, [2, 3, 5])", true],
    ["sameShape(shapes.x, [2, 3, 6])", false],
    ["sameShape([2, 3], shapes.x)", false],
    ["sameShape(shapes.x, [2, 3])", false],
    ["shapes.x == [2, 3, 6]", false],
    ["dim([4, 5], 1)", 5],
  ])("%s = %s", (src, want) => {
    expect(ev(src)).toBe(want);
  });

  it("dim of a list with an unknown element or an unknown axis is unknown", () => {
    expect(ev("dim([2, attrs.u], 0)")).toBe(UNKNOWN);
    expect(ev("dim([2, 3], attrs.u)")).toBe(UNKNOWN);
  });
});

describe("leaves, derive entries and has()", () => {
  it("reads has(attrs, …) and derive entries from the environment", () => {
    expect(ev('has(attrs, "two")')).toBe(true);
    expect(ev('has(attrs, "u")', makeEnv({ hasAttr: (name) => name !== "u" }))).toBe(false);
    expect(ev("rows + 1")).toBe(13);
  });
});

describe("partial evaluation of conditionals", () => {
  it.each([
    ["1 if attrs.flagU else 2", UNKNOWN],
    ["3 if attrs.flagU else 3", 3],
    ["attrs.u if attrs.flagU else 3", UNKNOWN],
    ["(1 // 0) if attrs.flagU else (2 // 0)", UNKNOWN],
    ["(1 // 0) if attrs.flagU else 4", UNKNOWN],
  ])("%s = %s", (src, want) => {
    expect(ev(src)).toBe(want);
  });
});

describe("errors that are bugs pass through unchanged", () => {
  class Bug extends Error {}
  const buggy = makeEnv({
    leaf(leaf: Leaf): PValue {
      if (leaf.ns === "attrs" && leaf.name === "seven") throw new Bug("environment bug");
      return makeEnv().leaf(leaf);
    },
  });

  it.each([
    "attrs.seven",
    "1 + attrs.seven",
    "2 * (1 + attrs.seven)",
    "attrs.seven if attrs.flagU else 1",
    "attrs.two if attrs.flagU else attrs.seven",
  ])("%s", (src) => {
    let thrown: unknown;
    try {
      ev(src, buggy);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(Bug);
    expect(thrown).not.toBeInstanceOf(ops.EvalError);
  });
});

describe("ops tables", () => {
  it("maps every ONNX type kernelc knows to its WGSL scalar", () => {
    expect({ ...ops.ONNX_TO_WGSL }).toEqual({ float16: "f16", float32: "f32", float: "f32", int32: "i32", uint32: "u32", bool: "u32" });
    expect(Object.getPrototypeOf(ops.ONNX_TO_WGSL)).toBe(null);
    expect(Object.isFrozen(ops.ONNX_TO_WGSL)).toBe(true);
  });

  it("f16Ok is true for float16 only", () => {
    expect(ops.f16Ok("float16")).toBe(true);
    expect(ops.f16Ok("float32")).toBe(false);
  });

  it("EvalError is named so", () => {
    expect(new ops.EvalError("x").name).toBe("EvalError");
  });

  it("valuesEqual compares lists element-wise and scalars by identity", () => {
    expect(ops.valuesEqual([1, [2, 3]], [1, [2, 3]])).toBe(true);
    expect(ops.valuesEqual([1, [2, 3]], [1, [2, 4]])).toBe(false);
    expect(ops.valuesEqual([1, 2], [1, 2, 3])).toBe(false);
    expect(ops.valuesEqual("a", "a")).toBe(true);
    expect(ops.valuesEqual(1, 2)).toBe(false);
  });
});
