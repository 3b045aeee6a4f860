/**
 * A configured instance pins values that calls will have: kernelc rejects, at the config, values
 * no call can have (a negative or fractional dimension, an axis past the declared rank, a rank
 * other than the declared one, a number for `present.X`, an attribute value its constraint does
 * not allow), instead of rendering a shader with them (where a negative size failed in Tint, at
 * the template line, as `-4u`). Values of string attributes are strings.
 */
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { Call, Plan } from "../../src/model/plan.js";
import { outcome } from "../support/plan-outcome.js";
import { importDispatcher } from "../support/project-build.js";
import { writeProject } from "../support/temp-project.js";

const spec = {
  domain: "com.example",
  name: "Rows",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 2 }, biasT: { onnx: "bias", dtype: "float32", rank: 1, optional: true } },
  outputs: { yT: { onnx: "y", dtype: "float32", rank: 2, shape: "shapes.xT" } },
  attributes: { mode: { default: "clip" } },
  attributeConstraints: { mode: { values: ["clip", "wrap"] } },
  derive: { rows: "dim(shapes.xT, 0)", width: "dim(shapes.xT, 1)", hasBias: "present.biasT", wrap: 'attrs.mode == "wrap"' },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: { struct: [{ name: "rows", type: "u32", value: "rows" }] },
  },
  variants: [
    {
      id: "main",
      when: ["not present.biasT"],
      passes: [{ id: "main", name: "Rows", shader: "k.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "rows" } }],
    },
  ],
};

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "const WIDTH = {{ width }}u;",
  "@compute @workgroup_size(1)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  if (gid.x < params.rows) {",
  "    y[gid.x * WIDTH] = x[gid.x * WIDTH];",
  "  }",
  "}",
  "",
].join("\n");

async function build(values: Record<string, number | boolean | string>) {
  const root = writeProject("instance-values", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"], instances: { Rows: [{ name: "i", values }] } }),
    "specs/Rows.json": JSON.stringify(spec, null, 2),
    "templates/k.wgsl.jinja": template,
  });
  const result = await compile(loadConfig(root));
  return result.diagnostics.filter((d) => d.severity === "error").map((d) => `${d.code}: ${d.message} | ${d.hint ?? ""}`);
}

describe("instance values", () => {
  it("a value a call can have builds; an attribute value outside its constraint does not", async () => {
    expect(await build({ "dim(shapes.xT, 1)": 64, "attrs.mode": 0 })).toEqual([
      'instance_invalid: instance i of Rows: `attrs.mode`: attribute `mode` may only be "clip", "wrap", not 0 | pin one of the values its attributeConstraints allow',
    ]);
    expect(await build({ "dim(shapes.xT, 1)": 64, "dim(shapes.xT, -1)": 64, "ranks.xT": 2, "present.biasT": false })).toEqual([]);
  });

  it.each([
    [{ "dim(shapes.xT, 1)": -4 }, "`dim(shapes.xT, 1)`: a dimension is a non-negative integer, not -4"],
    [{ "dim(shapes.xT, 1)": 2.5 }, "`dim(shapes.xT, 1)`: a dimension is a non-negative integer, not 2.5"],
    [{ "dim(shapes.xT, 1)": true }, "`dim(shapes.xT, 1)`: a dimension is a non-negative integer, not true"],
    [{ "dim(shapes.xT, 1)": 8, "dim(shapes.xT, 2)": 8 }, "`dim(shapes.xT, 2)`: `xT` has rank 2, so it has no axis 2"],
    [{ "dim(shapes.xT, 1)": 8, "dim(shapes.xT, -3)": 8 }, "`dim(shapes.xT, -3)`: `xT` has rank 2, so it has no axis -3"],
    [{ "dim(shapes.xT, 1)": 8, "ranks.xT": 3 }, "`ranks.xT`: the spec declares rank 2, so no call has rank 3"],
    [{ "dim(shapes.xT, 1)": 8, "present.biasT": 1 }, "`present.biasT`: this leaf is true or false, not 1"],
  ])("rejects %j at the config", async (values, message) => {
    const errors = await build(values as Record<string, number | boolean>);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`instance_invalid: instance i of Rows: ${message}`);
  });
});

describe("an instance of a string attribute", () => {
  it("a template that reads a string attribute builds one shader per pinned string, and calls pick theirs", async () => {
    const root = writeProject("instance-string", {
      "kernelc.config.json": JSON.stringify({
        profiles: ["core"],
        instances: {
          Rows: [
            { name: "wrap", values: { "dim(shapes.xT, 1)": 8, "attrs.mode": "wrap" } },
            { name: "clip", values: { "dim(shapes.xT, 1)": 8, "attrs.mode": "clip" } },
          ],
        },
      }),
      "specs/Rows.json": JSON.stringify(spec, null, 2),
      "templates/k.wgsl.jinja": template.replace("const WIDTH", "// wrap: {{ wrap }}\nconst WIDTH"),
    });
    const result = await compile(loadConfig(root));
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const planners = (await importDispatcher(result.files.get("core/dispatcher.ts")!)).planners as Record<string, (c: Call) => Plan>;
    const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Rows")!.model;
    const call = (mode: string): Call => ({ inputs: { xT: { shape: [3, 8], dtype: "float32" } }, attrs: { mode } });
    const shaderOf = (mode: string): string => planners.Rows!(call(mode)).passes[0]!.shader;
    expect(shaderOf("wrap")).not.toBe(shaderOf("clip"));
    expect(result.files.get(`shaders/${shaderOf("wrap")}.wgsl`)).toContain("// wrap: true");
    expect(result.files.get(`shaders/${shaderOf("clip")}.wgsl`)).toContain("// wrap: false");
    for (const mode of ["wrap", "clip"])
      expect(outcome(() => planners.Rows!(call(mode)))).toEqual(outcome(() => interpretPlan(model, call(mode))));
  });

  it("a number for a string attribute is instance_invalid", async () => {
    expect(await build({ "dim(shapes.xT, 1)": 8, "attrs.mode": 2 })).toEqual([
      'instance_invalid: instance i of Rows: `attrs.mode`: attribute `mode` may only be "clip", "wrap", not 2 | pin one of the values its attributeConstraints allow',
    ]);
  });
});
