/**
 * A tensor or scratch binding without `elementType` gets its tensor's element type, as
 * docs/spec-format.md says: the WGSL scalar of a fixed ONNX dtype, of the type parameter's type per
 * dtype assignment (f16 native or packed per profile), `u32` words for bool. The build is the same,
 * byte for byte, as that of the spec with those element types written out. (It was a
 * `schema_missing_field` error: "binding `x` has no `elementType`".)
 */
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { writeProject } from "../support/temp-project.js";

function spec(explicit: boolean): object {
  const elem = (t: string): object => (explicit ? { elementType: t } : {});
  return {
    domain: "com.example",
    name: "Mix",
    sinceVersion: 1,
    inputs: {
      xT: { onnx: "x", dtype: "T", rank: 1 },
      wT: { onnx: "w", dtype: "float32", rank: 1 },
      idxT: { onnx: "idx", dtype: "int32", rank: 1 },
    },
    outputs: {
      yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" },
      maskT: { onnx: "mask", dtype: "bool", rank: 1, shape: "shapes.xT" },
    },
    typeConstraints: { T: ["float32", "float16"] },
    derive: { n: "dim(shapes.xT, 0)", ...(explicit ? { scalar: "dtypes.T" } : {}) },
    bindings: {
      x: { arg: "xT", ...elem("$scalar") },
      w: { arg: "wT", ...elem("f32") },
      idx: { arg: "idxT", ...elem("i32") },
      y: { arg: "yT", ...elem("$scalar") },
      mask: { arg: "maskT", ...elem("u32") },
      params: { struct: [{ name: "n", type: "u32", value: "n" }] },
    },
    variants: [
      {
        id: "v",
        intermediates: [{ id: "tmp", dtype: "float32", shape: "[n]" }],
        passes: [
          {
            id: "main",
            name: "Mix",
            shader: "mix.wgsl.jinja",
            bindings: ["x", "w", "idx", "y", "mask", { scratch: "tmp", name: "tmp", ...elem("f32") }, "params"],
            dispatch: { x: "n" },
          },
        ],
      },
    ],
  };
}

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(1)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  let i = gid.x;",
  "  if (i >= params.n) {",
  "    return;",
  "  }",
  "  let v = f32(load_x(i)) * w[i] + f32(idx[i]);",
  "  tmp[i] = v;",
  "  store_y(i, {{ env.wgsl.scalar.y }}(tmp[i]));",
  "  store_mask(i, v > 0.0);",
  "}",
  "",
].join("\n");

async function build(explicit: boolean): Promise<Awaited<ReturnType<typeof compile>>> {
  const root = writeProject("default-element-type", {
    "kernelc.config.json": JSON.stringify({ profiles: ["mobile-1024-f16", "core"] }),
    "specs/Mix.json": JSON.stringify(spec(explicit), null, 2),
    "templates/mix.wgsl.jinja": template,
  });
  return compile(loadConfig(root));
}

describe("a binding without elementType", async () => {
  const implicit = await build(false);
  const explicit = await build(true);

  it("builds without diagnostics", () => {
    expect(implicit.diagnostics).toEqual([]);
    expect(explicit.diagnostics).toEqual([]);
  });

  it("declares the tensor's element type: fixed dtypes, the type parameter's per profile, bool as u32 words, the intermediate's", () => {
    const shaders = [...implicit.files].filter(([f]) => f.startsWith("shaders/")).map(([, text]) => text);
    const decl = (name: string): string[] => [
      ...new Set(shaders.map((s) => new RegExp(`var<storage, [a-z_]+> ${name}: (array<.*>);`).exec(s)?.[1] ?? "none")),
    ];
    expect(shaders).toHaveLength(3); // f32 (shared), f16 native, f16 packed
    expect(decl("w")).toEqual(["array<f32>"]);
    expect(decl("idx")).toEqual(["array<i32>"]);
    expect(decl("tmp")).toEqual(["array<f32>"]);
    expect(decl("mask")).toEqual(["array<atomic<u32>>"]);
    expect(decl("x").sort()).toEqual(["array<f16>", "array<f32>", "array<u32>"]);
  });

  it("is the build of the spec with the element types written out, byte for byte", () => {
    expect([...implicit.files.keys()]).toEqual([...explicit.files.keys()]);
    for (const [file, text] of implicit.files) expect(text, file).toBe(explicit.files.get(file));
  });
});
