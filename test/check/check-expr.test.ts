import { describe, expect, it } from "vitest";
import { probe } from "./probe-spec.js";

describe("types of well-typed expressions", () => {
  it.each([
    ["1 + 2", "int"],
    ["1 + 2.0", "float"],
    ["7 / 2", "int"],
    ["7.0 / 2", "float"],
    ["7 / 2.0", "float"],
    ["7 // 2", "int"],
    ["7.5 // 2", "float"],
    ["7 % 2", "int"],
    ["-rows", "int"],
    ["+rows", "int"],
    ["-1.5", "float"],
    ["1 < 2", "bool"],
    ["not flag", "bool"],
    ["flag and rows > 0", "bool"],
    ['"a" == "b"', "bool"],
    ['"a"', "string"],
    ["true", "bool"],
    ["[1, 2]", "shape (list<int>)"],
    ["[]", "shape (list<int>)"],
    ["[1, 2.5]", "list<float>"],
    ["1 if flag else 2", "int"],
    ["1 if flag else 2.0", "float"],
    ['"x" if flag else dtypes.T', "string"],
    // namespaces
    ["shapes.x", "shape (list<int>)"],
    ["shapes.y", "shape (list<int>)"],
    ["ranks.x", "int"],
    ["present.bias", "bool"],
    ["tensorDtypes.x", "dtype"],
    ["dtypes.T", "string"],
    ["tunables.WG", "int"],
    ["device.limits.maxBufferSize", "int"],
    ['has(device.features, "shader-f16")', "bool"],
    ['has(attrs, "scale")', "bool"],
    ['has(present, "bias")', "bool"],
    // attribute types come from the default or the allowed values; `number` when unknown
    ["attrs.axis", "number"],
    ["attrs.alpha", "float"],
    ["attrs.scale", "number"],
    ["attrs.mode", "string"],
    ["attrs.kind", "string"],
    ["attrs.pads", "shape (list<int>)"],
    ["attrs.axis + 1", "number"],
    ["attrs.axis + 1.0", "float"],
    // builtins
    ["dim(shapes.x, 0)", "int"],
    ["dim(shapes.x, -1)", "int"],
    ["min(1, 2)", "int"],
    ["min(1, 2.0)", "float"],
    ["max(1, 2, 3)", "int"],
    ["max(attrs.axis, 1)", "number"],
    ["floor(1.5)", "int"],
    ["ceilDiv(7, 2)", "int"],
    ["ceilDiv(attrs.axis, 2)", "int"],
    ["pow2ceil(5)", "int"],
    ["sameShape(shapes.x, shapes.y)", "bool"],
    ["f16Ok(tensorDtypes.x)", "bool"],
    // derive entries
    ["rows", "int"],
    ["half", "int"],
    ["ratio", "float"],
    ["flag", "bool"],
    // comparisons across types that unify
    ["rows == 1.0", "bool"],
    ["tensorDtypes.x == tensorDtypes.y", "bool"],
    ['tensorDtypes.x == "float16"', "bool"],
    ['dtypes.T == "f16"', "bool"],
  ])("%s : %s", (src, type) => {
    const r = probe(src);
    expect(r.problems).toEqual([]);
    expect(r.type).toBe(type);
  });
});

const SIG = {
  dim: "dim(shape, axis: int) -> int",
  min: "min(a, b, …) -> number",
  max: "max(a, b, …) -> number",
  floor: "floor(x) -> int",
  ceilDiv: "ceilDiv(a: int, b: int) -> int",
  pow2ceil: "pow2ceil(n: int) -> int",
  sameShape: "sameShape(a: shape, b: shape) -> bool",
  f16Ok: "f16Ok(t: dtype) -> bool",
};
const HAS =
  'has(attrs, "name") -> bool: whether the call gives the attribute (or it has a default); has(present, "tensor"), has(device.features, "feature").';

describe("builtins: arity and argument errors", () => {
  it.each([
    ["dim(shapes.x)", "wrong_arity", "`dim` takes 2 arguments, got 1", SIG.dim, "dim(shapes.x)"],
    ["dim(shapes.x, 0, 1)", "wrong_arity", "`dim` takes 2 arguments, got 3", SIG.dim, "dim(shapes.x, 0, 1)"],
    ["dim(1, 0)", "type_mismatch", "argument 1 of `dim` must be a shape or a list of numbers, found int", SIG.dim, "1"],
    [
      "dim(['a', 'b'], 0)",
      "type_mismatch",
      "argument 1 of `dim` must be a shape or a list of numbers, found list<string>",
      SIG.dim,
      "['a', 'b']",
    ],
    ["dim([true], 0)", "type_mismatch", "argument 1 of `dim` must be a shape or a list of numbers, found list<bool>", SIG.dim, "[true]"],
    ["dim(shapes.x, 1.5)", "type_mismatch", "argument 2 of `dim` must be an int, found float", SIG.dim, "1.5"],
    ["dim(shapes.x, flag)", "type_mismatch", "argument 2 of `dim` must be an int, found bool", SIG.dim, "flag"],
    ["min(1)", "wrong_arity", "`min` takes 2 to 16 arguments, got 1", SIG.min, "min(1)"],
    ["min(1, true)", "type_mismatch", "argument 2 of `min` must be a number, found bool", SIG.min, "true"],
    ["max()", "wrong_arity", "`max` takes 2 to 16 arguments, got 0", SIG.max, "max()"],
    ["max(shapes.x, 1)", "type_mismatch", "argument 1 of `max` must be a number, found shape (list<int>)", SIG.max, "shapes.x"],
    [
      "min(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)",
      "wrong_arity",
      "`min` takes 2 to 16 arguments, got 17",
      SIG.min,
      "min(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)",
    ],
    ["floor()", "wrong_arity", "`floor` takes 1 argument, got 0", SIG.floor, "floor()"],
    ["floor(1, 2)", "wrong_arity", "`floor` takes 1 argument, got 2", SIG.floor, "floor(1, 2)"],
    ["floor(true)", "type_mismatch", "argument 1 of `floor` must be a number, found bool", SIG.floor, "true"],
    ["ceilDiv(1)", "wrong_arity", "`ceilDiv` takes 2 arguments, got 1", SIG.ceilDiv, "ceilDiv(1)"],
    ["ceilDiv(1.5, 2)", "type_mismatch", "argument 1 of `ceilDiv` must be an int, found float", SIG.ceilDiv, "1.5"],
    ["ceilDiv(1, ratio)", "type_mismatch", "argument 2 of `ceilDiv` must be an int, found float", SIG.ceilDiv, "ratio"],
    ["pow2ceil(1, 2)", "wrong_arity", "`pow2ceil` takes 1 argument, got 2", SIG.pow2ceil, "pow2ceil(1, 2)"],
    ['pow2ceil("a")', "type_mismatch", "argument 1 of `pow2ceil` must be an int, found string", SIG.pow2ceil, '\\"a\\"'],
    ["sameShape(shapes.x)", "wrong_arity", "`sameShape` takes 2 arguments, got 1", SIG.sameShape, "sameShape(shapes.x)"],
    ["sameShape(1, shapes.x)", "type_mismatch", "argument 1 of `sameShape` must be a shape, found int", SIG.sameShape, "1"],
    ["sameShape(shapes.x, 2)", "type_mismatch", "argument 2 of `sameShape` must be a shape, found int", SIG.sameShape, "2"],
    ["f16Ok()", "wrong_arity", "`f16Ok` takes 1 argument, got 0", SIG.f16Ok, "f16Ok()"],
    ["f16Ok(1)", "type_mismatch", "argument 1 of `f16Ok` must be a dtype (tensorDtypes.X), found int", SIG.f16Ok, "1"],
    ["f16Ok(dtypes.T)", "type_mismatch", "argument 1 of `f16Ok` must be a dtype (tensorDtypes.X), found string", SIG.f16Ok, "dtypes.T"],
    ["has(attrs)", "wrong_arity", "`has` takes 2 arguments, got 1", HAS, "has(attrs)"],
    ["has(attrs, mode)", "type_mismatch", "the second argument of `has` must be a string literal", HAS, "mode"],
    ['has(shapes, "x")', "type_mismatch", "`has` does not apply to `shapes`", HAS, "shapes"],
    ['has(1, "x")', "type_mismatch", "the first argument of `has` must be `attrs`, `present` or `device.features`", HAS, "1"],
    ['has(attrs, "modee")', "unknown_attribute", "`modee` is not a declared attribute", "did you mean `mode`?", '\\"modee\\"'],
    ['has(present, "biass")', "unknown_tensor", "`biass` is not an input or output of this kernel", "did you mean `bias`?", '\\"biass\\"'],
    [
      'has(device.features, "shader-f17")',
      "unknown_member",
      "`shader-f17` is not a WebGPU feature",
      "did you mean `shader-f16`?",
      '\\"shader-f17\\"',
    ],
  ])("%s", (src, code, message, hint, at) => {
    expect(probe(src).problems).toEqual([{ code, message, hint, at }]);
  });

  it("the result of a failed call is an error type, not a second error", () => {
    const r = probe("dim(shapes.x) + 1");
    expect(r.problems.map((p) => p.code)).toEqual(["wrong_arity"]);
    expect(r.type).toBe("error");
  });
});

describe("names and namespaces", () => {
  it.each([
    ["rowz", "unknown_name", "unknown name `rowz`: it is not a derive entry or a namespace", "did you mean `rows`?", "rowz"],
    ["Rows", "unknown_name", "unknown name `Rows`: it is not a derive entry or a namespace", "did you mean `rows`?", "Rows"],
    ["shapse.x", "unknown_name", "unknown name `shapse`: it is not a derive entry or a namespace", "did you mean `shapes`?", "shapse"],
    [
      "zzzzzz",
      "unknown_name",
      "unknown name `zzzzzz`: it is not a derive entry or a namespace",
      "declare it under `derive`, or use a namespace: shapes, ranks, present, tensorDtypes, attrs, tunables, dtypes, device",
      "zzzzzz",
    ],
    ["shapes", "type_mismatch", "`shapes` is a namespace, not a value", "name one of its members, e.g. `shapes.x`", "shapes"],
    [
      "device",
      "type_mismatch",
      "`device` is a namespace, not a value",
      "name one of its members, e.g. `device.limits.maxBufferSize`",
      "device",
    ],
    ["dim", "not_callable", "`dim` is a function; call it", "write `dim(…)`", "dim"],
    [
      "foo(1)",
      "unknown_function",
      "unknown function `foo`",
      "builtins: dim, min, max, floor, ceilDiv, pow2ceil, sameShape, f16Ok, has",
      "foo",
    ],
    ["mn(1, 2)", "unknown_function", "unknown function `mn`", "did you mean `min`?", "mn"],
    ["rows(1)", "not_callable", "`rows` is a derive entry, not a function", undefined, "rows"],
    ["(1 + 2)(3)", "not_callable", "only builtin functions can be called", undefined, "(1 + 2)"],
    ["shapes.xx", "unknown_tensor", "`xx` is not an input or output of this kernel", "did you mean `x`?", "xx"],
    ["ranks.q", "unknown_tensor", "`q` is not an input or output of this kernel", "did you mean `x`?", "q"],
    ["present.nothing", "unknown_tensor", "`nothing` is not an input or output of this kernel", "declared tensors: x, bias, y", "nothing"],
    ["tensorDtypes.bais", "unknown_tensor", "`bais` is not an input or output of this kernel", "declared tensors: x, bias, y", "bais"],
    ["tensorDtypes.biass", "unknown_tensor", "`biass` is not an input or output of this kernel", "did you mean `bias`?", "biass"],
    ["attrs.axs", "unknown_attribute", "`axs` is not a declared attribute", "did you mean `axis`?", "axs"],
    ["tunables.wg", "unknown_tunable", "`wg` is not a declared tunable", "did you mean `WG`?", "wg"],
    ["dtypes.U", "unknown_type_param", "`U` is not a type constraint of this kernel", "did you mean `T`?", "U"],
    [
      "device.limits.maxBufferSiz",
      "unknown_limit",
      "`maxBufferSiz` is not a WebGPU limit",
      "did you mean `maxBufferSize`?",
      "maxBufferSiz",
    ],
    ["device.limitz.x", "unknown_member", "`device` has no member `limitz`", "did you mean `limits`?", "limitz"],
    [
      "device.features.x",
      "type_mismatch",
      '`device.features` members are not identifiers; test a feature with `has(device.features, "name")`',
      undefined,
      "device.features.x",
    ],
    [
      "ranks.x.y",
      "unknown_member",
      "an int value has no member `y`",
      "only namespaces (shapes, attrs, device.limits, …) have members",
      "y",
    ],
    [
      "rows.size",
      "unknown_member",
      "an int value has no member `size`",
      "only namespaces (shapes, attrs, device.limits, …) have members",
      "size",
    ],
  ])("%s", (src, code, message, hint, at) => {
    expect(probe(src).problems).toEqual([{ code, message, hint, at }]);
  });

  it.each([
    ["attrs.constructor", "constructor", "attrs"],
    ["shapes.__proto__", "__proto__", "shapes"],
    ["device.limits.toString", "toString", "device.limits"],
    ["tunables.prototype", "prototype", "tunables"],
    ["dtypes.hasOwnProperty", "hasOwnProperty", "dtypes"],
    ["present.valueOf", "valueOf", "present"],
  ])("%s is forbidden", (src, member, ns) => {
    expect(probe(src).problems).toEqual([
      {
        code: "forbidden_member",
        message: `\`${member}\` is not a member of \`${ns}\``,
        hint:
          ns === "device.limits"
            ? "members of `device.limits` are the WebGPU limit names (GPUSupportedLimits), such as `maxComputeWorkgroupStorageSize`"
            : `members of \`${ns}\` are only the names the spec declares`,
        at: member,
      },
    ]);
  });
});

describe("type mismatches", () => {
  it.each([
    ["1 + true", "`+` needs numbers, found bool", undefined, "true"],
    ["true * 2", "`*` needs numbers, found bool", undefined, "true"],
    ["attrs.mode * 2", "`*` needs numbers, found string", undefined, "attrs.mode"],
    ["shapes.x + 1", "`+` needs numbers, found shape (list<int>)", undefined, "shapes.x"],
    ["not 3", "`not` needs a bool, found int", "compare explicitly, e.g. `x == 0`", "3"],
    ['-"a"', "unary `-` needs a number, found string", undefined, '\\"a\\"'],
    ['"a" < 1', "`<` needs numbers, found string and int", undefined, '\\"a\\" < 1'],
    ["flag >= 1", "`>=` needs numbers, found bool and int", undefined, "flag >= 1"],
    ["shapes.x == 1", "cannot compare shape (list<int>) with int", undefined, "shapes.x == 1"],
    ["tensorDtypes.x != 1", "cannot compare dtype with int", undefined, "tensorDtypes.x != 1"],
    ["flag and 1", "`and` needs bool operands, found int", "compare explicitly, e.g. `x > 0`", "1"],
    ["1 or flag", "`or` needs bool operands, found int", "compare explicitly, e.g. `x > 0`", "1"],
    [
      "1 if flag else true",
      "the branches of the conditional have different types: int and bool",
      "make both branches the same type",
      "1 if flag else true",
    ],
    [
      'shapes.x if flag else "s"',
      "the branches of the conditional have different types: shape (list<int>) and string",
      "make both branches the same type",
      'shapes.x if flag else \\"s\\"',
    ],
    ["[1, true]", "list items have different types: int and bool", undefined, "true"],
  ])("%s", (src, message, hint, at) => {
    expect(probe(src).problems).toEqual([{ code: "type_mismatch", message, hint, at }]);
  });

  it("a non-bool condition is reported, the conditional keeps its branches' type", () => {
    const r = probe("1 if 2 else 3");
    expect(r.problems).toEqual([
      { code: "type_mismatch", message: "the condition after `if` must be a bool, found int", hint: undefined, at: "2" },
    ]);
    expect(r.type).toBe("int");
  });

  it("reports every independent error of one expression", () => {
    const r = probe("rowz + foo(1) + attrs.nope");
    expect(r.problems.map((p) => p.code)).toEqual(["unknown_name", "unknown_function", "unknown_attribute"]);
  });
});
