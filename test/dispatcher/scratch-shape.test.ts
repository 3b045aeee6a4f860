/**
 * An intermediate's shape is checked per call as an output's is: every dimension a non-negative
 * integer. A negative or fractional dimension (from an attribute, or a difference that goes below
 * zero) is an eval error naming the intermediate and the dimension, never a negative or silently
 * rounded scratch size. Both shape forms the generated dispatcher writes (a list literal, multiplied
 * in place, and a shape-valued derive entry) are checked, and it agrees with the interpreter.
 */
import { describe, expect, it } from "vitest";
import type { Outcome } from "../support/plan-outcome.js";
import { coreProject } from "../support/project-build.js";
import { perElementShader } from "../support/one-pass.js";

const pass = (shader: string) => ({
  id: "main",
  name: "Scratchy",
  shader,
  bindings: ["x", "tmp", "y", "params"],
  dispatch: { x: "n" },
});

const spec = {
  domain: "com.example",
  name: "Scratchy",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "float32", rank: 1, shape: "shapes.xT" } },
  attributes: { a: { default: 1.0 }, form: { default: 0 } },
  attributeConstraints: { form: { values: [0, 1] } },
  derive: { n: "dim(shapes.xT, 0)", tmpShape: "[n - attrs.a, 2]" },
  bindings: {
    x: { arg: "xT" },
    y: { arg: "yT" },
    tmp: { scratch: "tmp" },
    params: { struct: [{ name: "n", type: "u32", value: "n" }] },
  },
  variants: [
    {
      id: "literal",
      when: ["attrs.form == 0"],
      intermediates: [{ id: "tmp", dtype: "float32", shape: "[n - attrs.a, 2]" }],
      passes: [pass("s.wgsl.jinja")],
    },
    {
      id: "derived",
      when: ["attrs.form == 1"],
      intermediates: [{ id: "tmp", dtype: "float32", shape: "tmpShape" }],
      passes: [pass("s.wgsl.jinja")],
    },
  ],
};

const template = perElementShader("tmp[gid.x] = x[gid.x];", "y[gid.x] = tmp[gid.x];");

describe("an intermediate's shape with a negative or fractional dimension", async () => {
  const { result, both: plan } = await coreProject("scratch-shape", {
    "specs/Scratchy.json": JSON.stringify(spec, null, 2),
    "templates/s.wgsl.jinja": template,
  });
  const both = (call: unknown): Outcome => plan("Scratchy", call);
  const call = (a: number, form: number) => ({ inputs: { xT: { shape: [8], dtype: "float32" } }, attrs: { a, form } });

  it("builds without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });

  it.each([
    [0, "literal"],
    [1, "derived"],
  ])("form %i (%s): plans a valid shape and refuses a negative or fractional dimension", (form, variant) => {
    expect(both(call(3, form))).toMatchObject({ plan: { variant, scratch: { tmp: 5 * 2 * 4 } } });
    expect(both(call(8, form))).toMatchObject({ plan: { variant, scratch: { tmp: 0 } } });
    for (const [a, shown] of [
      [10, "-2"],
      [0.5, "7.5"],
    ] as const) {
      expect(both(call(a, form))).toEqual({
        error: {
          kind: "eval",
          message: `Scratchy: variant \`${variant}\`: the shape of intermediate \`tmp\` has the dimension ${shown}; dimensions must be non-negative integers`,
        },
      });
    }
  });
});
