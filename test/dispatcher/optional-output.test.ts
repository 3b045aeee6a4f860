/**
 * An optional output with a declared shape: a call may leave it out (it stays absent, the plan has
 * no shape for it) or give it (its shape is checked). The generated dispatcher must plan both as
 * the interpreter does, without reading the absent output's shape.
 */
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { Call } from "../../src/model/plan.js";
import { outcome } from "../support/plan-outcome.js";
import { importDispatcher } from "../support/project-build.js";
import { writeProject } from "../support/temp-project.js";

const spec = {
  domain: "com.example",
  name: "Norms",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 2 } },
  outputs: {
    yT: { onnx: "y", dtype: "float32", rank: 2, shape: "shapes.xT" },
    normsT: { onnx: "norms", dtype: "float32", rank: 1, optional: true, shape: "[rows]" },
  },
  derive: { rows: "dim(shapes.xT, 0)" },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    norms: { arg: "normsT", elementType: "f32" },
    params: { struct: [{ name: "rows", type: "u32", value: "rows" }] },
  },
  variants: [
    {
      id: "with_norms",
      priority: 1,
      when: ["present.normsT"],
      passes: [{ id: "main", name: "Norms", shader: "k.wgsl.jinja", bindings: ["x", "y", "norms", "params"], dispatch: { x: "rows" } }],
    },
    {
      id: "plain",
      when: ["not present.normsT"],
      passes: [{ id: "main", name: "Copy", shader: "k.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "rows" } }],
    },
  ],
};

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(1)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  if (gid.x < params.rows) {",
  "    y[gid.x] = x[gid.x];",
  "  }",
  "}",
  "",
].join("\n");

describe("an optional output with a declared shape", async () => {
  const root = writeProject("optional-output", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "specs/Norms.json": JSON.stringify(spec, null, 2),
    "templates/k.wgsl.jinja": template,
  });
  const result = await compile(loadConfig(root));

  it("plans calls that leave it out, give it, or give it with a wrong shape as the interpreter does", async () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const planners = (await importDispatcher(result.files.get("core/dispatcher.ts")!)).planners as Record<string, (c: Call) => unknown>;
    const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Norms")!.model;
    const x = { shape: [3, 4], dtype: "float32" };
    const calls: [Call, string][] = [
      [{ inputs: { xT: x } }, "plain"],
      [{ inputs: { xT: x }, outputs: { yT: { shape: [3, 4], dtype: "float32" } } }, "plain"],
      [{ inputs: { xT: x }, outputs: { normsT: { shape: [3], dtype: "float32" } } }, "with_norms"],
      [{ inputs: { xT: x }, outputs: { normsT: { shape: [4], dtype: "float32" } } }, "error"],
    ];
    for (const [call, want] of calls) {
      const generated = outcome(() => planners.Norms!(call));
      expect(generated, JSON.stringify(call)).toEqual(outcome(() => interpretPlan(model, call)));
      if (want === "error") expect(generated.error?.message).toMatch(/output `normsT` has shape \[4\], expected \[3\]/);
      else expect((generated.plan as { variant: string }).variant).toBe(want);
    }
  });
});
