/**
 * Float attributes and lists of numbers keep their types from the spec to the plan:
 * - a default written as a float (`1.0`, `[1.0, 1.0]`) makes the attribute a float (list<float>),
 *   so `attrs.alpha / 2` with alpha = 1 is 0.5, not the floor division of two ints (0);
 * - `dim` of a list<float> is a float (the element), so `dim(attrs.scales, 0) / 2` divides as
 *   floats do;
 * - an int-list attribute (default `[1, 2]`) takes integers only: a call giving `[0.5]` is an
 *   invalid_call, in the generated dispatcher and in the interpreter alike (before, the generated
 *   code floor-divided 0.5 / 2 to 0 while the interpreter gave 0.25).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { makeCheckContext } from "../../src/api/lint.js";
import { checkKernel } from "../../src/check/check-spec.js";
import { loadSpecFile } from "../../src/load/load-spec.js";
import type { Call } from "../../src/model/plan.js";
import { showType } from "../../src/model/types.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import { emptyTemplatesDir } from "../check/probe-spec.js";
import { outcome } from "../support/plan-outcome.js";
import { importDispatcher } from "../support/project-build.js";
import { typeErrors } from "../support/strict-consumer.js";
import { writeProject } from "../support/temp-project.js";

// Written as text: JSON.stringify would print 1.0 as 1, and the text is what tells a float default.
const specText = `{
  "domain": "com.example",
  "name": "Scales",
  "sinceVersion": 1,
  "inputs": { "xT": { "onnx": "x", "dtype": "float32", "rank": 1 } },
  "outputs": { "yT": { "onnx": "y", "dtype": "float32", "rank": 1, "shape": "shapes.xT" } },
  "attributes": {
    "alpha": { "default": 1.0 },
    "eps": { "default": 1e-5 },
    "count": { "default": 1 },
    "scales": { "default": [1.0, 1.0] },
    "axes": { "default": [0, 1] }
  },
  "derive": {
    "n": "dim(shapes.xT, 0)",
    "halfAlpha": "attrs.alpha / 2",
    "halfScale": "dim(attrs.scales, 0) / 2",
    "halfAxis": "dim(attrs.axes, 0) / 2",
    "halfCount": "attrs.count / 2"
  },
  "bindings": {
    "x": { "arg": "xT" },
    "y": { "arg": "yT" },
    "params": {
      "struct": [
        { "name": "n", "type": "u32", "value": "n" },
        { "name": "halfAlpha", "type": "f32", "value": "halfAlpha" },
        { "name": "halfScale", "type": "f32", "value": "halfScale" },
        { "name": "halfAxis", "type": "f32", "value": "halfAxis" },
        { "name": "halfCount", "type": "f32", "value": "halfCount" },
        { "name": "eps", "type": "f32", "value": "attrs.eps" }
      ]
    }
  },
  "variants": [
    { "id": "main", "passes": [{ "id": "main", "name": "Scales", "shader": "scales.wgsl.jinja", "bindings": ["x", "y", "params"], "dispatch": { "x": "n" } }] }
  ]
}
`;

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(1)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  if (gid.x < params.n) {",
  "    y[gid.x] = x[gid.x] * params.halfAlpha + params.halfScale + params.halfAxis + params.halfCount + params.eps;",
  "  }",
  "}",
  "",
].join("\n");

describe("attribute types from defaults as written", () => {
  const loaded = loadSpecFile("specs/Scales.json", specText);
  const checked = checkKernel(loaded.spec!, makeCheckContext(emptyTemplatesDir()));

  it("a default written as a float makes a float or a list<float>; an integral one stays a number or a shape", () => {
    expect(checked.diagnostics.filter((d) => d.severity === "error" && d.code !== "shader_missing")).toEqual([]);
    const attrs = checked.kernel!.attrTypes;
    expect(Object.fromEntries([...attrs].map(([k, t]) => [k, showType(t)]))).toEqual({
      alpha: "float",
      eps: "float",
      count: "number",
      scales: "list<float>",
      axes: "shape (list<int>)",
    });
  });

  it("dim of a list<float> is a float, of a shape an int", () => {
    const derive = checked.kernel!.derive;
    expect(Object.fromEntries(["halfAlpha", "halfScale", "halfAxis"].map((n) => [n, showType(derive.get(n)!.type)]))).toEqual({
      halfAlpha: "float",
      halfScale: "float",
      halfAxis: "int",
    });
  });
});

describe("float and int-list attributes in plans", async () => {
  const root = writeProject("float-attrs", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "specs/Scales.json": specText,
    "templates/scales.wgsl.jinja": template,
  });
  const result = await compile(loadConfig(root));
  const source = result.files.get("core/dispatcher.ts");
  const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Scales")!.model;
  const planners = (await importDispatcher(source!)).planners as Record<string, (c: Call) => unknown>;
  const f32 = (word: number): number => new Float32Array(new Uint32Array([word]).buffer)[0]!;
  /** The f32 fields of the plan's uniform after `n`, or the error, from the generated code; asserts the interpreter agrees. */
  const plan = (attrs: Call["attrs"]): number[] | { kind: string; message: string } => {
    const call: Call = { inputs: { xT: { shape: [8], dtype: "float32" } }, attrs };
    const generated = outcome(() => planners.Scales!(call));
    expect(generated, JSON.stringify(call)).toEqual(outcome(() => interpretPlan(model, call)));
    if ("error" in generated) return generated.error;
    const words = (generated.plan as { passes: { resources: unknown[] }[] }).passes[0]!.resources[2] as number[];
    return words.slice(1, 6).map(f32);
  };

  it("builds, and the dispatcher compiles under the strict consumer's flags", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    fs.writeFileSync(path.join(root, "package.json"), JSON.stringify({ type: "module" }));
    const file = path.join(root, "dispatcher.ts");
    fs.writeFileSync(file, source!);
    expect(typeErrors([file])).toEqual([]);
  });

  it("divides a float attribute and an element of a list<float> as floats, whatever value the call gives", () => {
    // halfAlpha, halfScale, halfAxis, halfCount, eps
    expect(plan({})).toEqual([0.5, 0.5, 0, 0, Math.fround(1e-5)]);
    expect(plan({ alpha: 3, scales: [5, 2], axes: [7], count: 3 })).toEqual([1.5, 2.5, 3, 1, Math.fround(1e-5)]);
    expect(plan({ alpha: 0.5, scales: [0.25] })).toEqual([0.25, 0.125, 0, 0, Math.fround(1e-5)]);
  });

  it("refuses a fractional element of an int-list attribute, in the generated code as in the interpreter", () => {
    expect(plan({ axes: [0.5] })).toEqual({
      kind: "invalid_call",
      message: "Scales: attribute `axes` must be a list of integers, got [0.5]",
    });
    expect(plan({ axes: [1, 2.5] })).toEqual({
      kind: "invalid_call",
      message: "Scales: attribute `axes` must be a list of integers, got [1, 2.5]",
    });
    expect(plan({ scales: [0.5, "x" as unknown as number] })).toEqual({
      kind: "invalid_call",
      message: 'Scales: attribute `scales` must be a list of numbers, got [0.5, "x"]',
    });
  });
});
