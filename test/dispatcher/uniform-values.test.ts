/**
 * Uniform field values and the call's form, generated dispatcher against the interpreter: an f32
 * field whose value rounds to ±Infinity in f32 (an attribute of 1e39, a product past f32's range or
 * past a double's) or is NaN is an eval error naming the field and the value, never Infinity in the
 * words, while a value too small for f32 becomes a subnormal or zero; a 0/1 flag attribute takes
 * only 0 and 1 (its call type says `0 | 1`) and a bool reaches a uniform only as a u32 0 or 1 (a
 * bool-valued field is a type_mismatch with a hint); a call, or its inputs, outputs or attrs, given
 * as an array is an invalid_call. Each call's outcome is the same from both planners.
 */
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import { outcome, type Outcome } from "../support/plan-outcome.js";
import { importDispatcher } from "../support/project-build.js";
import { writeProject } from "../support/temp-project.js";
import { onePassVariants, perElementShader } from "../support/one-pass.js";

const spec = {
  domain: "com.example",
  name: "Flags",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "float32", rank: 1, shape: "shapes.xT" } },
  attributes: { scale: { default: 1.0 }, a: { default: 1.0 }, b: { default: 1.0 }, flag: { default: 0 } },
  attributeConstraints: { flag: { values: [0, 1] } },
  derive: { n: "dim(shapes.xT, 0)", big: "attrs.scale > 2.0", ab: "attrs.a * 1.0 * attrs.b" },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: {
      struct: [
        { name: "n", type: "u32", value: "n" },
        { name: "flag", type: "u32", value: "attrs.flag" },
        { name: "big", type: "u32", value: "1 if big else 0" },
        { name: "s", type: "f32", value: "attrs.scale" },
        { name: "d", type: "f32", value: "ab - ab" },
        { name: "p", type: "f32", value: "ab" },
      ],
    },
  },
  variants: onePassVariants("Flags", "flags.wgsl.jinja"),
};

const template = perElementShader(
  "let on = params.flag != 0u || params.big != 0u;",
  "y[gid.x] = select(x[gid.x], x[gid.x] * params.s + params.d + params.p, on);",
);

/** The bits of the f32 nearest to v, as a u32. */
const bits = (v: number): number => new Uint32Array(new Float32Array([v]).buffer)[0]!;

const x = { shape: [4], dtype: "float32" };
const prefix = "Flags: variant `main`: pass `main`: ";
const f32Rule = "; it must be a finite number of magnitude below 3.4028235677973366e+38 (larger ones round to Infinity in f32)";

describe("uniform values and call forms, dispatcher against interpreter", async () => {
  const root = writeProject("uniform-values", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "specs/Flags.json": JSON.stringify(spec, null, 2),
    "templates/flags.wgsl.jinja": template,
  });
  const result = await compile(loadConfig(root));
  const source = result.files.get("core/dispatcher.ts")!;
  const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Flags")!.model;
  const plan = ((await importDispatcher(source)).planners as Record<string, (c: unknown) => unknown>).Flags!;

  /** The outcome of a call, after checking that both planners give it. */
  const both = (call: unknown): Outcome => {
    const generated = outcome(() => plan(call));
    expect(generated).toEqual(outcome(() => interpretPlan(model, call)));
    return generated;
  };
  const words = (call: unknown): number[] => {
    const o = both(call);
    if (!("plan" in o)) throw new Error(`no plan: ${JSON.stringify(o)}`);
    return (o.plan as { passes: { resources: number[][] }[] }).passes[0]!.resources[2]!;
  };
  const error = (call: unknown): { kind: string; message: string } => {
    const o = both(call);
    if (!("error" in o)) throw new Error(`planned: ${JSON.stringify(o)}`);
    return o.error;
  };

  it("builds without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });

  it("writes an f32 field as the nearest f32's bits, subnormals and zero included", () => {
    expect(words({ inputs: { xT: x } })).toEqual([4, 0, 0, bits(1), 0, bits(1), 0, 0]);
    const largest = 3.4028235677973362e38;
    expect(words({ inputs: { xT: x }, attrs: { scale: largest } })).toEqual([4, 0, 1, 0x7f7fffff, 0, bits(1), 0, 0]);
    expect(words({ inputs: { xT: x }, attrs: { scale: -largest } })).toEqual([4, 0, 0, 0xff7fffff, 0, bits(1), 0, 0]);
    expect(words({ inputs: { xT: x }, attrs: { scale: 1e-40 } })[3]).toBe(bits(1e-40));
    expect(bits(1e-40)).toBeGreaterThan(0);
    expect(bits(1e-40)).toBeLessThan(0x00800000);
    expect(words({ inputs: { xT: x }, attrs: { scale: 1e-50 } })[3]).toBe(0);
    expect(words({ inputs: { xT: x }, attrs: { scale: -1e-50 } })[3]).toBe(0x80000000);
    expect(words({ inputs: { xT: x }, attrs: { a: 1e-30, b: 1e-30 } })[5]).toBe(0);
  });

  it("fails for an f32 value that rounds to ±Infinity, naming the field and the value", () => {
    for (const [scale, shown] of [
      [1e39, "1e+39"],
      [-1e39, "-1e+39"],
      [3.4028235677973366e38, "3.4028235677973366e+38"],
      [Number.MAX_VALUE, "1.7976931348623157e+308"],
    ] as const) {
      expect(error({ inputs: { xT: x }, attrs: { scale } })).toEqual({
        kind: "eval",
        message: `${prefix}uniform field \`params.s\` (f32) is ${shown}${f32Rule}`,
      });
    }
  });

  it("fails for a computed f32 value past f32's range, past a double's (Infinity), or NaN", () => {
    expect(error({ inputs: { xT: x }, attrs: { a: 1e20, b: -1e20 } })).toEqual({
      kind: "eval",
      message: `${prefix}uniform field \`params.p\` (f32) is -1e+40${f32Rule}`,
    });
    // 1e200 * 1e200 is Infinity as a double: `ab - ab` is NaN, the first failing field.
    expect(error({ inputs: { xT: x }, attrs: { a: 1e200, b: 1e200 } })).toEqual({
      kind: "eval",
      message: `${prefix}uniform field \`params.d\` (f32) is NaN${f32Rule}`,
    });
  });

  it("rejects non-finite attribute values before any field is written", () => {
    for (const scale of [Infinity, -Infinity, NaN]) {
      expect(error({ inputs: { xT: x }, attrs: { scale } })).toEqual({
        kind: "invalid_call",
        message: `Flags: attribute \`scale\` must be a finite number, got ${String(scale)}`,
      });
    }
  });

  it("types a 0/1 flag attribute as 0 | 1 and takes only those values", () => {
    expect(source).toContain('readonly "flag"?: 0 | 1 | undefined;');
    expect(words({ inputs: { xT: x }, attrs: { flag: 1 } }).slice(0, 3)).toEqual([4, 1, 0]);
    expect(error({ inputs: { xT: x }, attrs: { flag: true } })).toEqual({
      kind: "invalid_call",
      message: "Flags: attribute `flag` must be a finite number, got true",
    });
    expect(error({ inputs: { xT: x }, attrs: { flag: "true" } })).toEqual({
      kind: "invalid_call",
      message: 'Flags: attribute `flag` must be a finite number, got "true"',
    });
    expect(error({ inputs: { xT: x }, attrs: { flag: 2 } })).toEqual({
      kind: "invalid_call",
      message: "Flags: attribute `flag` is 2; allowed values: 0, 1",
    });
  });

  it("passes a bool derive entry as a u32 0 or 1", () => {
    expect(words({ inputs: { xT: x }, attrs: { scale: 2 } })[2]).toBe(0);
    expect(words({ inputs: { xT: x }, attrs: { scale: 2.5 } })[2]).toBe(1);
  });

  it("rejects a call, or a bag of one, given as an array", () => {
    const call = { inputs: { xT: x } };
    expect(error([])).toEqual({ kind: "invalid_call", message: "Flags: a call must be an object { inputs, outputs, attrs }, got []" });
    expect(error([call])).toEqual({
      kind: "invalid_call",
      message: "Flags: a call must be an object { inputs, outputs, attrs }, got [(object)]",
    });
    expect(error(new Proxy([call], {}))).toEqual({
      kind: "invalid_call",
      message: "Flags: a call must be an object { inputs, outputs, attrs }, got [(object)]",
    });
    expect(error({ inputs: [] })).toEqual({
      kind: "invalid_call",
      message: "Flags: call.inputs must be an object keyed by tensor id, got []",
    });
    expect(error({ inputs: [x] })).toEqual({
      kind: "invalid_call",
      message: "Flags: call.inputs must be an object keyed by tensor id, got [(object)]",
    });
    expect(error({ ...call, outputs: [] })).toEqual({
      kind: "invalid_call",
      message: "Flags: call.outputs must be an object keyed by tensor id, got []",
    });
    expect(error({ ...call, attrs: [] })).toEqual({
      kind: "invalid_call",
      message: "Flags: call.attrs must be an object keyed by attribute name, got []",
    });
    expect(error({ ...call, attrs: [2, 1] })).toEqual({
      kind: "invalid_call",
      message: "Flags: call.attrs must be an object keyed by attribute name, got [2, 1]",
    });
    // The same bags as objects plan; absent (undefined or null) bags are still allowed.
    expect("plan" in both({ ...call, outputs: {}, attrs: {} })).toBe(true);
    expect("plan" in both({ ...call, outputs: null, attrs: undefined })).toBe(true);
  });

  it("rejects a call with a key other than inputs, outputs and attrs (a misspelled bag would plan with the defaults)", () => {
    const call = { inputs: { xT: x } };
    expect(error({ ...call, attributes: { scale: 4 } })).toEqual({
      kind: "invalid_call",
      message: 'Flags: the call has an unknown key "attributes"; a call is an object { inputs, outputs, attrs }',
    });
    expect(error({ input: { xT: x } })).toEqual({
      kind: "invalid_call",
      message: 'Flags: the call has an unknown key "input"; a call is an object { inputs, outputs, attrs }',
    });
    // Keys starting with $ are comments; an inherited enumerable key (a polluted prototype) and a
    // non-enumerable own one are not the call's keys.
    expect(words({ ...call, $comment: "decode step", attrs: { scale: 4 } })[1]).toBe(words({ ...call, attrs: { scale: 4 } })[1]);
    const proto = Object.create({ attributes: { scale: 4 } }) as Record<string, unknown>;
    proto.inputs = call.inputs;
    expect("plan" in both(proto)).toBe(true);
    const hidden = { ...call };
    Object.defineProperty(hidden, "extra", { value: 1, enumerable: false });
    expect("plan" in both(hidden)).toBe(true);
  });
});

describe("a bool-valued uniform field", async () => {
  const bad = {
    ...spec,
    bindings: {
      ...spec.bindings,
      params: {
        struct: [
          { name: "big", type: "u32", value: "big" },
          { name: "both", type: "f32", value: "big and n > 2" },
        ],
      },
    },
  };
  const root = writeProject("uniform-bool", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "specs/Flags.json": JSON.stringify(bad, null, 2),
    "templates/flags.wgsl.jinja": template,
  });
  const result = await compile(loadConfig(root));

  it("is a type_mismatch whose hint writes it as a u32 0 or 1", () => {
    const found = result.diagnostics.filter((d) => d.code === "type_mismatch").map((d) => [d.message, d.hint]);
    const hint = (cond: string): string =>
      `WGSL's bool cannot be in a uniform buffer: make the field u32 with value \`1 if ${cond} else 0\` and test \`!= 0u\` in the template`;
    expect(found).toEqual([
      ["uniform field `big` (u32) must be an int, found bool", hint("big")],
      ["uniform field `both` (f32) must be a number, found bool", hint("(big and n > 2)")],
    ]);
  });
});

describe("a u32 or i32 field, or a dim axis, given a number that is not an integer", async () => {
  // An attribute of no fixed kind (its default is a float) reaches integer fields and an axis;
  // 1.5 is inside their ranges, so the error says it is not an integer, not that it is outside.
  const ints = {
    ...spec,
    attributes: { k: { default: 1.0 }, axis: { default: 0.0 } },
    attributeConstraints: {},
    derive: { n: "dim(shapes.xT, attrs.axis)" },
    bindings: {
      ...spec.bindings,
      params: {
        struct: [
          { name: "n", type: "u32", value: "n" },
          { name: "u", type: "u32", value: "attrs.k" },
          { name: "i", type: "i32", value: "0 - attrs.k" },
        ],
      },
    },
  };
  const root = writeProject("uniform-ints", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "specs/Flags.json": JSON.stringify(ints, null, 2),
    "templates/flags.wgsl.jinja": [
      "{{ env.wgsl.resourceDeclarations }}",
      "",
      "@compute @workgroup_size(1)",
      "fn main() {",
      "  y[0] = x[0] + f32(params.n + params.u) + f32(params.i);",
      "}",
      "",
    ].join("\n"),
  });
  const result = await compile(loadConfig(root));
  const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Flags")!.model;
  const plan = ((await importDispatcher(result.files.get("core/dispatcher.ts")!)).planners as Record<string, (c: unknown) => unknown>)
    .Flags!;
  const both = (call: unknown): Outcome => {
    const generated = outcome(() => plan(call));
    expect(generated).toEqual(outcome(() => interpretPlan(model, call)));
    return generated;
  };

  it("builds without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });

  it("plans integral values, negative ones as i32 two's complement", () => {
    const o = both({ inputs: { xT: x }, attrs: { k: 3 } });
    if (!("plan" in o)) throw new Error(`no plan: ${JSON.stringify(o)}`);
    expect((o.plan as { passes: { resources: number[][] }[] }).passes[0]!.resources[2]).toEqual([4, 3, 2 ** 32 - 3, 0]);
  });

  it("says a u32 or i32 field's value is not an integer", () => {
    expect(both({ inputs: { xT: x }, attrs: { k: 1.5 } })).toEqual({
      error: { kind: "eval", message: `${prefix}uniform field \`params.u\` (u32) is 1.5, not an integer in 0..4294967295` },
    });
    expect(both({ inputs: { xT: x }, attrs: { k: -1 } })).toEqual({
      error: { kind: "eval", message: `${prefix}uniform field \`params.u\` (u32) is -1, outside 0..4294967295` },
    });
  });

  it("says a dim axis is not an integer, not that it is out of range", () => {
    const o = both({ inputs: { xT: x }, attrs: { axis: 0.5 } });
    expect(o).toMatchObject({ error: { kind: "eval" } });
    expect((o as { error: { message: string } }).error.message).toContain("dim(shapes.xT, 0.5): the axis is not an integer");
  });
});
