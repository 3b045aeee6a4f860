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

describe("templates may read values computed from what a valid call fixes, without instances", async () => {
  const keyed = {
    ...spec,
    name: "Flip2",
    derive: { n: "dim(shapes.xT, 0)", isInt: 'tensorDtypes.xT == "int32"', hasX: "present.xT" },
    variants: [
      {
        id: "one",
        passes: [{ id: "main", name: "Flip2", shader: "flip2.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "n" } }],
      },
    ],
  };
  const template = body("{% if isInt and hasX %}x[gid.x] ^ -1{% else %}-x[gid.x]{% endif %}");
  const project = await coreProject("fixed-key", {
    "specs/Flip2.json": JSON.stringify(keyed, null, 2),
    "templates/flip2.wgsl.jinja": template,
  });

  it("builds one shader per assignment (no no_instances warning), keyed by the dtype", () => {
    expect(project.result.diagnostics.map((d) => d.code)).toEqual([]);
    const kernels = JSON.parse(project.result.files.get("core/kernels.json")!) as {
      kernels: Record<
        string,
        { variants: { dtypes: Record<string, string>; passes: { key: string[]; shaders: Record<string, string> }[] }[] }
      >;
    };
    const byDtype = kernels.kernels.Flip2!.variants.map((v) => [v.dtypes.T, v.passes[0]!.key, Object.keys(v.passes[0]!.shaders)]);
    expect(byDtype).toEqual([
      ["float32", ["present.xT", "tensorDtypes.xT"], ['[true,"float32"]']],
      ["int32", ["present.xT", "tensorDtypes.xT"], ['[true,"int32"]']],
    ]);
  });

  it("each dtype's call runs its own shader, in generated code and interpreter alike", () => {
    const shaderOf = (dtype: string): string => {
      const o = project.both("Flip2", { inputs: { xT: { shape: [4], dtype } } });
      return "plan" in o ? (o.plan as { passes: { shader: string }[] }).passes[0]!.shader : JSON.stringify(o.error);
    };
    const int = project.result.files.get(`shaders/${shaderOf("int32")}.wgsl`)!;
    const float = project.result.files.get(`shaders/${shaderOf("float32")}.wgsl`)!;
    expect(int).toContain("y[gid.x] = x[gid.x] ^ -1;");
    expect(float).toContain("y[gid.x] = -x[gid.x];");
  });
});

describe("templates may read leaves their variant's conditions fix, without instances", async () => {
  // BiasAdd: b broadcast over a [rows, cols] by rank; the template's `mode` comes from ranks.bT,
  // which each variant's `when` fixes (0, 1, 2). It was `no_instances`: nothing was built.
  const bias = {
    domain: "com.example",
    name: "BiasAdd",
    sinceVersion: 1,
    inputs: { aT: { onnx: "A", dtype: "float32", rank: 2 }, bT: { onnx: "B", dtype: "float32" } },
    outputs: { cT: { onnx: "C", dtype: "float32", rank: 2, shape: "shapes.aT" } },
    derive: {
      n: "dim(shapes.aT, 0) * dim(shapes.aT, 1)",
      mode: "0 if ranks.bT == 0 else (1 if ranks.bT == 1 else 2)",
      isRow: "ranks.bT == 1",
    },
    bindings: {
      a: { arg: "aT" },
      b: { arg: "bT" },
      c: { arg: "cT", name: "y" },
      params: { struct: [{ name: "n", type: "u32", value: "n" }] },
    },
    variants: [
      { id: "scalar", priority: 2, when: ["ranks.bT == 0"], passes: [pass("BiasAdd.Scalar")] },
      { id: "row", priority: 1, when: ["isRow and dim(shapes.bT, 0) == dim(shapes.aT, 1)"], passes: [pass("BiasAdd.Row")] },
      { id: "full", when: ["2 == ranks.bT", "sameShape(shapes.aT, shapes.bT)"], passes: [pass("BiasAdd.Full")] },
    ],
  };
  function pass(name: string): object {
    return { id: "main", name, shader: "bias.wgsl.jinja", bindings: ["a", "b", "c", "params"], dispatch: { x: "n" } };
  }
  const template = body("a[gid.x] + b[{% if mode == 0 %}0u{% elif mode == 1 %}gid.x % 5u{% else %}gid.x{% endif %}]");
  const project = await coreProject("implied-key", {
    "specs/BiasAdd.json": JSON.stringify(bias, null, 2),
    "templates/bias.wgsl.jinja": template,
  });

  it("builds each variant's shader with its rank (no no_instances warning)", () => {
    expect(project.result.diagnostics.map((d) => d.code)).toEqual([]);
    const kernels = JSON.parse(project.result.files.get("core/kernels.json")!) as {
      kernels: Record<string, { variants: { id: string; passes: { key: string[]; shaders: Record<string, string> }[] }[] }>;
    };
    expect(kernels.kernels.BiasAdd!.variants.map((v) => [v.id, v.passes[0]!.key, Object.keys(v.passes[0]!.shaders)])).toEqual([
      ["scalar", ["ranks.bT"], ["[0]"]],
      ["row", ["ranks.bT"], ["[1]"]],
      ["full", ["ranks.bT"], ["[2]"]],
    ]);
  });

  it("each call runs the shader of its variant, in generated code and interpreter alike", () => {
    const run = (shape: number[]): [string, string] => {
      const o = project.both("BiasAdd", { inputs: { aT: { shape: [3, 5], dtype: "float32" }, bT: { shape, dtype: "float32" } } });
      if (!("plan" in o)) return ["error", JSON.stringify(o.error)];
      const plan = o.plan as { variant: string; passes: { shader: string }[] };
      const text = project.result.files.get(`shaders/${plan.passes[0]!.shader}.wgsl`)!;
      return [plan.variant, text.match(/y\[gid\.x\] = (.*);/)![1]!];
    };
    expect([run([]), run([5]), run([3, 5])]).toEqual([
      ["scalar", "a[gid.x] + b[0u]"],
      ["row", "a[gid.x] + b[gid.x % 5u]"],
      ["full", "a[gid.x] + b[gid.x]"],
    ]);
  });
});
