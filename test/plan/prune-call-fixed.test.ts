/**
 * Pruning knows what validating a call fixes: a required tensor is present, has its declared rank,
 * and has its type parameter's assigned dtype. So a variant for int32 data
 * (`"when": ["tensorDtypes.xT == \"int32\""]`, its template using integer-only WGSL such as `^`)
 * is pruned from the float32 assignment instead of being rendered for it, where Tint rejects it
 * (before: two wgsl_invalid errors for a shader no call could ever run). The plans do not change:
 * the generated dispatcher and the interpreter pick the same variant for every call.
 */
import { describe, expect, it } from "vitest";
import { explainReport } from "../../src/emit/explain.js";
import type { Call } from "../../src/model/plan.js";
import { coreProject } from "../support/project-build.js";

const spec = {
  domain: "com.example",
  name: "Flip",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "T", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" } },
  typeConstraints: { T: ["float32", "int32"] },
  derive: { n: "dim(shapes.xT, 0)" },
  bindings: { x: { arg: "xT" }, y: { arg: "yT" }, params: { struct: [{ name: "n", type: "u32", value: "n" }] } },
  variants: [
    {
      id: "bits",
      priority: 2,
      when: ['tensorDtypes.xT == "int32"'],
      passes: [{ id: "main", name: "Flip.Bits", shader: "bits.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "n" } }],
    },
    {
      id: "matrix",
      priority: 1,
      when: ["ranks.xT == 2", "present.xT"],
      passes: [{ id: "main", name: "Flip.Matrix", shader: "neg.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "n" } }],
    },
    {
      id: "neg",
      passes: [{ id: "main", name: "Flip.Neg", shader: "neg.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "n" } }],
    },
  ],
};

const body = (op: string): string =>
  [
    "{{ env.wgsl.resourceDeclarations }}",
    "",
    "@compute @workgroup_size(1)",
    "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
    "  if (gid.x < params.n) {",
    `    y[gid.x] = ${op};`,
    "  }",
    "}",
    "",
  ].join("\n");

describe("pruning with the leaves a valid call fixes", async () => {
  const project = await coreProject("prune-fixed", {
    "specs/Flip.json": JSON.stringify(spec, null, 2),
    // `^` of a float does not compile: only the int32 assignment may render this template.
    "templates/bits.wgsl.jinja": body("x[gid.x] ^ -1"),
    "templates/neg.wgsl.jinja": body("-x[gid.x]"),
  });
  const entry = project.result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Flip")!;

  it("builds without rendering the int32 variant for float32", () => {
    expect(project.result.diagnostics.filter((d) => d.severity === "error").map((d) => d.message)).toEqual([]);
  });

  it("explains the pruned candidates with the fixed leaf's value", () => {
    const text = explainReport(entry.build, project.result.profiles[0]!.profile);
    const f32 = text.slice(text.indexOf("candidates for T=float32"), text.indexOf("candidates for T=int32"));
    expect(f32).toContain(
      '  PRUNED  bits (priority 2)\n      condition `tensorDtypes.xT == "int32"` can never hold: `tensorDtypes.xT == "int32"` is false (tensorDtypes.xT = "float32")\n',
    );
    // ranks.xT is declared 1: the matrix variant can never run, whatever the dtype.
    expect(text.match(/PRUNED {2}matrix/g)).toHaveLength(2);
    expect(text.slice(text.indexOf("candidates for T=int32"))).toMatch(/EMITTED bits \(priority 2\)/);
  });

  it("plans as before: int32 calls take the bits variant, float32 calls the neg one, in generated code and interpreter alike", () => {
    const call = (dtype: string): Call => ({ inputs: { xT: { shape: [5], dtype } } });
    const variant = (o: ReturnType<typeof project.both>) => ("plan" in o ? (o.plan as { variant: string }).variant : o.error);
    expect(variant(project.both("Flip", call("int32")))).toBe("bits");
    expect(variant(project.both("Flip", call("float32")))).toBe("neg");
  });
});
