/**
 * An output the planner fills (left out of the call, its shape computed) takes its dtype from its
 * type parameter, which another tensor of the call fixes. When none does and the parameter allows
 * several types (a cast: float32 in, `T` of float16 or float32 out), the call is an invalid_call
 * saying so, never planned with the first allowed type as a silent guess. A parameter of one type,
 * or one a given tensor fixes, still plans; the generated dispatcher agrees with the interpreter.
 */
import { describe, expect, it } from "vitest";
import { coreProject } from "../support/project-build.js";

const cast = (name: string, types: string[]) => ({
  domain: "com.example",
  name,
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" } },
  typeConstraints: { T: types },
  derive: { n: "dim(shapes.xT, 0)" },
  bindings: { x: { arg: "xT" }, y: { arg: "yT" }, params: { struct: [{ name: "n", type: "u32", value: "n" }] } },
  variants: [
    {
      id: "main",
      passes: [{ id: "main", name, shader: "c.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "ceilDiv(n, 128)" } }],
    },
  ],
});

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(64)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  let i = gid.x * 2u;",
  "  if (i + 1u < params.n) {",
  "    store2_y(i, vec2<{{ env.wgsl.scalar.y }}>(load2_x(i)));",
  "  } else if (i < params.n) {",
  "    store_y(i, {{ env.wgsl.scalar.y }}(load_x(i)));",
  "  }",
  "}",
  "",
].join("\n");

describe("a left-out output whose type parameter no tensor fixes", async () => {
  const { result, both } = await coreProject("unfixed-output-dtype", {
    "specs/CastTo.json": JSON.stringify(cast("CastTo", ["float16", "float32"]), null, 2),
    "specs/CastOne.json": JSON.stringify(cast("CastOne", ["float16"]), null, 2),
    "templates/c.wgsl.jinja": template,
  });
  const x = { shape: [5], dtype: "float32" };

  it("builds without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });

  it("is an invalid_call when the parameter allows several types", () => {
    expect(both("CastTo", { inputs: { xT: x } })).toEqual({
      error: {
        kind: "invalid_call",
        message:
          "CastTo: output `yT` is left out of the call and no tensor of the call fixes its dtype T (float16 or float32): give the output with its dtype",
      },
    });
  });

  it("plans with the output's dtype when the call gives it", () => {
    for (const [dtype, bytes] of [
      ["float16", 12],
      ["float32", 20],
    ] as const) {
      expect(both("CastTo", { inputs: { xT: x }, outputs: { yT: { shape: [5], dtype } } })).toMatchObject({
        plan: { outputShapes: { yT: [5] }, passes: [{ resources: [20, bytes, [5, 0, 0, 0]] }] },
      });
    }
  });

  it("plans a left-out output whose parameter allows one type", () => {
    expect(both("CastOne", { inputs: { xT: x } })).toMatchObject({
      plan: { outputShapes: { yT: [5] }, passes: [{ resources: [20, 12, [5, 0, 0, 0]] }] },
    });
  });
});
