/**
 * A shader problem of a kernel with several dtype assignments names the assignments it arose in:
 * a float-only construct (`exp`) in a template that T ∈ {float32, int32} renders fails Tint for
 * int32 only, and the note says so ("in profile core; dtypes T=int32; variant …"), where it named
 * the profile, variant and pass alone and left the author to guess which dtype broke.
 */
import { describe, expect, it } from "vitest";
import { renderText } from "../../src/core/render-diagnostics.js";
import { coreProject } from "../support/project-build.js";

const spec = (types: readonly string[]) => ({
  domain: "com.example",
  name: "Exp",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "T", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" } },
  typeConstraints: { T: types },
  derive: { n: "dim(shapes.xT, 0)" },
  bindings: { x: { arg: "xT" }, y: { arg: "yT" }, params: { struct: [{ name: "n", type: "u32", value: "n" }] } },
  variants: [
    { id: "main", passes: [{ id: "main", name: "Exp", shader: "exp.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "n" } }] },
  ],
});

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(1)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  if (gid.x < params.n) {",
  "    y[gid.x] = exp(x[gid.x]);",
  "  }",
  "}",
  "",
].join("\n");

async function notes(types: readonly string[]): Promise<string[]> {
  const project = await coreProject("dtypes-note", {
    "specs/Exp.json": JSON.stringify(spec(types), null, 2),
    "templates/exp.wgsl.jinja": template,
  });
  const errors = project.result.diagnostics.filter((d) => d.code === "wgsl_invalid");
  expect(errors).toHaveLength(1);
  expect(renderText(errors, () => undefined)).toMatch(
    /^error\[wgsl_invalid\]: Tint rejects the rendered WGSL: no matching call to 'exp\(i32\)'/,
  );
  return errors[0]!.notes.map((n) => n.message);
}

describe("the note of a shader problem names the dtype assignment", () => {
  it("names T=int32, the one assignment that fails", async () => {
    expect((await notes(["float32", "int32"]))[0]).toBe("in profile core; dtypes T=int32; variant `main`; pass `main`");
  });

  it("says nothing of dtypes for a kernel with one assignment", async () => {
    expect((await notes(["int32"]))[0]).toBe("in profile core; variant `main`; pass `main`");
  });
});
