import { describe, expect, it } from "vitest";
import { checkExpr, type Scope } from "../../src/check/check-expr.js";
import type { Leaf, TExpr } from "../../src/model/ir.js";
import { INT, type Type } from "../../src/model/types.js";
import { evaluate, LocatedEvalError, UNKNOWN, type EvalEnv, type PValue } from "../../src/lang/evaluate.js";
import * as ops from "../../src/lang/ops.js";
import { parseExpression } from "../../src/lang/parser.js";

/** Attributes: `k` known ints, `u` unknown (a run-time value during the build). */
const ATTRS: Record<string, PValue> = { two: 2, seven: 7, u: UNKNOWN, flagU: UNKNOWN };
const ATTR_TYPES: Record<string, Type> = { two: INT, seven: INT, u: INT, flagU: { k: "bool" } };
const SHAPES: Record<string, number[]> = { x: [2, 3, 5] };

const scope: Scope = {
  tensors: new Map([["x", { pointer: "/inputs/x", optional: false }]]),
  attrs: new Map(Object.entries(ATTR_TYPES).map(([k, type]) => [k, { type, pointer: `/attributes/${k}` }])),
  tunables: new Set(["WG"]),
  typeParams: new Set(["T"]),
  limits: new Set(["maxBufferSize"]),
  features: new Set(["shader-f16"]),
  deriveType: () => undefined,
  deriveNames: () => [],
};

const env: EvalEnv = {
  leaf(leaf: Leaf): PValue {
    if (leaf.ns === "attrs") return ATTRS[leaf.name];
    if (leaf.ns === "shapes") return SHAPES[leaf.name];
    if (leaf.ns === "tunables") return 64;
    if (leaf.ns === "dtypes") return "f32";
    throw new ops.EvalError(`no ${leaf.ns}.${leaf.name} in this test`);
  },
  dim: (tensor, axis) => ops.dim(SHAPES[tensor], axis, `shapes.${tensor}`),
  hasAttr: (name) => name in ATTRS,
  derive: () => {
    throw new Error("no derive entries here");
  },
};

function typed(src: string): TExpr {
  const r = checkExpr(parseExpression(src), scope);
  if (r.problems.length > 0) throw new Error(`${src}: ${r.problems.map((p) => p.message).join("; ")}`);
  return r.texpr;
}

const ev = (src: string): PValue => evaluate(typed(src), env);

function evalError(src: string): { message: string; at: string } {
  try {
    ev(src);
  } catch (e) {
    if (!(e instanceof LocatedEvalError)) throw e;
    return { message: e.message, at: src.slice(e.span.start, e.span.end) };
  }
  throw new Error(`${src} did not fail`);
}

describe("arithmetic", () => {
  it.each([
    ["7 / 2", 3],
    ["-7 / 2", -4],
    ["7 / -2", -4],
    ["-7 / -2", 3],
    ["7 // 2", 3],
    ["-7 // 2", -4],
    ["-7 % 2", 1],
    ["7 % -2", -1],
    ["-7 % -2", -1],
    ["7 % 2", 1],
    ["6 % 3", 0],
    ["-6 % 3", 0],
    ["7.0 / 2", 3.5],
    ["7 / 2.0", 3.5],
    ["-7.0 // 2", -4],
    ["-7.5 % 2", 0.5],
    ["7.5 % -2", -0.5],
    ["1 + 2 * 3", 7],
    ["(1 + 2) * 3", 9],
    ["10 - 3 - 2", 5],
    ["-(2 - 5)", 3],
    ["1.5 + 1", 2.5],
    ["attrs.seven / attrs.two", 3],
    ["9007199254740990 + 1", 9007199254740991],
  ])("%s = %s", (src, want) => {
    expect(ev(src)).toBe(want);
  });

  it.each([
    ["9007199254740991 + 1", "integer overflow: 9007199254740992 is outside ±(2^53 - 1)", "9007199254740991 + 1"],
    ["-9007199254740991 - 1", "integer overflow: -9007199254740992 is outside ±(2^53 - 1)", "-9007199254740991 - 1"],
    ["4503599627370496 * 4", "integer overflow: 18014398509481984 is outside ±(2^53 - 1)", "4503599627370496 * 4"],
    ["1 / 0", "integer division by zero (1 / 0)", "1 / 0"],
    ["1 + 7 // (2 - 2)", "integer division by zero (7 / 0)", "7 // (2 - 2)"],
    ["5 % 0", "modulo by zero (5 % 0)", "5 % 0"],
    ["1.0 / 0", "division by zero (1 / 0)", "1.0 / 0"],
    ["ceilDiv(3, 0)", "ceilDiv(3, 0): division by zero", "ceilDiv(3, 0)"],
  ])("%s fails", (src, message, at) => {
    expect(evalError(src)).toEqual({ message, at });
  });
});

describe("comparisons and logic", () => {
  it.each([
    ["1 < 2", true],
    ["2 <= 2", true],
    ["3 > 4", false],
    ["1 == 1.0", true],
    ['"a" == "a"', true],
    ['"a" != "b"', true],
    ["[1, 2] == [1, 2]", true],
    ["[1, 2] == [1, 2, 3]", false],
    ["shapes.x == [2, 3, 5]", true],
    ["not (1 < 2)", false],
    ["1 if 1 < 2 else 2", 1],
    ["1 if 1 > 2 else 2", 2],
  ])("%s = %s", (src, want) => {
    expect(ev(src)).toBe(want);
  });

  it.each([
    ["false and (1 / 0 == 1)", false],
    ["true or (1 / 0 == 1)", true],
    ["1 if true else 1 / 0", 1],
    ["1 / 0 if false else 2", 2],
  ])("short-circuits: %s = %s without error", (src, want) => {
    expect(ev(src)).toBe(want);
  });

  it("evaluates the right side when the left does not decide", () => {
    expect(evalError("true and (1 / 0 == 1)").message).toBe("integer division by zero (1 / 0)");
  });
});

describe("builtins", () => {
  it.each([
    ["dim(shapes.x, 0)", 2],
    ["dim(shapes.x, -1)", 5],
    ["dim(shapes.x, -3)", 2],
    ["dim([4, 5], -1)", 5],
    ["pow2ceil(0)", 1],
    ["pow2ceil(1)", 1],
    ["pow2ceil(5)", 8],
    ["pow2ceil(8)", 8],
    ["pow2ceil(-3)", 1],
    ["pow2ceil(1025)", 2048],
    ["ceilDiv(7, 2)", 4],
    ["ceilDiv(8, 2)", 4],
    ["ceilDiv(-7, 2)", -3],
    ["ceilDiv(7, -2)", -3],
    ["ceilDiv(-7, -2)", 4],
    ["floor(-1.5)", -2],
    ["floor(2.5)", 2],
    ["min(3, 1, 2)", 1],
    ["max(3, 1.5)", 3],
    ["sameShape(shapes.x, [2, 3, 5])", true],
    ["sameShape(shapes.x, [2, 3])", false],
  ])("%s = %s", (src, want) => {
    expect(ev(src)).toBe(want);
  });

  it.each([
    ["dim(shapes.x, 3)", "dim(shapes.x, 3): axis out of range for rank 3", "dim(shapes.x, 3)"],
    ["dim(shapes.x, -4)", "dim(shapes.x, -4): axis out of range for rank 3", "dim(shapes.x, -4)"],
    ["1 + dim([4, 5], 2)", "dim(shape, 2): axis out of range for rank 2", "dim([4, 5], 2)"],
    ["pow2ceil(9007199254740991)", "pow2ceil(9007199254740991): result exceeds 2^53", "pow2ceil(9007199254740991)"],
  ])("%s fails", (src, message, at) => {
    expect(evalError(src)).toEqual({ message, at });
  });
});

describe("three-valued partial evaluation", () => {
  it.each([
    ["attrs.flagU and false", false],
    ["false and attrs.flagU", false],
    ["attrs.flagU or true", true],
    ["true or attrs.flagU", true],
    ["7 if attrs.flagU else 7", 7],
    ["attrs.two if attrs.flagU else 2", 2],
    ["attrs.flagU and (1 / 0 == 1)", UNKNOWN],
    ["attrs.flagU and true", UNKNOWN],
    ["attrs.flagU or false", UNKNOWN],
    ["1 if attrs.flagU else 2", UNKNOWN],
    ["attrs.u + 1", UNKNOWN],
    ["attrs.u * 0", UNKNOWN],
    ["attrs.u == attrs.u", UNKNOWN],
    ["not attrs.flagU", UNKNOWN],
    ["-attrs.u", UNKNOWN],
    ["min(attrs.u, 1)", UNKNOWN],
    ["[attrs.u, 1]", UNKNOWN],
    ["dim(shapes.x, attrs.u)", UNKNOWN],
    // an error in a branch that may not run is not an error yet
    ["1 / 0 if attrs.flagU else 2", UNKNOWN],
  ])("%s", (src, want) => {
    expect(ev(src)).toBe(want);
  });

  it("a known error still fails next to an unknown", () => {
    expect(evalError("attrs.u + 1 / 0").message).toBe("integer division by zero (1 / 0)");
  });
});
