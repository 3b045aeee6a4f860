/**
 * A computed output shape that is not a list of non-negative integers of the declared rank is an
 * eval error that says where the bad value came from: the spec's shape expression, and the
 * attributes and dimensions it reads (directly or through derive entries, in the order it reads
 * them), with the call's values; one the call has no value for (a dimension of an absent optional
 * tensor) is left out. The generated dispatcher and the interpreter give the same message, and the
 * spec text in it (a string literal holding quotes, a backquote, `${` and a comment terminator)
 * stays a string in the generated code.
 */
import { describe, expect, it } from "vitest";
import type { Outcome } from "../support/plan-outcome.js";
import { coreProject } from "../support/project-build.js";
import { onePassVariants, perElementShader } from "../support/one-pass.js";

const shape = '[dim(shapes.xT, 0), width if attrs.tag != "*/ `${globalThis.kernelcPwned = 1}\\" \\n" else dim(shapes.bT, 0)]';

const spec = {
  domain: "com.example",
  name: "Shapey",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 1 }, bT: { onnx: "b", dtype: "float32", rank: 1, optional: true } },
  outputs: { yT: { onnx: "y", dtype: "float32", rank: 2, shape } },
  attributes: { k: { default: 1 }, h: { default: 2 }, tag: { default: "a" } },
  derive: { n: "dim(shapes.xT, 0)", heads: "attrs.h", width: "attrs.k * heads" },
  bindings: {
    x: { arg: "xT" },
    y: { arg: "yT" },
    params: { struct: [{ name: "n", type: "u32", value: "n" }] },
  },
  variants: onePassVariants("Shapey", "s.wgsl.jinja"),
};

const template = perElementShader("y[gid.x] = x[gid.x];");

describe("an output shape that is not a list of non-negative integers", async () => {
  const { result, both: plan } = await coreProject("output-shape-reads", {
    "specs/Shapey.json": JSON.stringify(spec, null, 2),
    "templates/s.wgsl.jinja": template,
  });
  const both = (call: unknown): Outcome => plan("Shapey", call);
  const x = { shape: [8], dtype: "float32" };
  const fails = (shown: string, reads: string) => ({
    error: {
      kind: "eval",
      message: `Shapey: the shape of output \`yT\`, \`${shape}\`, is ${shown} (${reads}); the spec declares rank 2 and dimensions must be non-negative integers`,
    },
  });

  it("builds without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });

  it("plans a valid shape", () => {
    expect(both({ inputs: { xT: x }, attrs: { k: 3 } })).toMatchObject({ plan: { outputShapes: { yT: [8, 6] } } });
  });

  it("names the expression and the values it read", () => {
    expect(both({ inputs: { xT: x }, attrs: { k: -4, h: 3 } })).toEqual(
      fails("[8, -12]", 'dim(shapes.xT, 0) = 8, attrs.tag = "a", attrs.k = -4, attrs.h = 3'),
    );
    expect(both({ inputs: { xT: x, bT: { shape: [5], dtype: "float32" } }, attrs: { k: 1, h: 0.5, tag: "b" } })).toEqual(
      fails("[8, 0.5]", 'dim(shapes.xT, 0) = 8, attrs.tag = "b", attrs.k = 1, attrs.h = 0.5, dim(shapes.bT, 0) = 5'),
    );
    expect((globalThis as Record<string, unknown>).kernelcPwned).toBeUndefined();
  });
});
