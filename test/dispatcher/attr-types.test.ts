/**
 * Attribute reads in generated code carry the attribute's type: a derive entry whose value is an
 * attribute picked by a condition (`attrs.fill if has(attrs, "fill") else 0.0`) is memoized with
 * its spec type (number, string, list), and the dispatcher must still compile under a strict
 * consumer's flags, for an attribute without a default (read through `$attr`) and one with a
 * default (read as the validated field). The plans must match the interpreter's.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { Call } from "../../src/model/plan.js";
import { outcome } from "../support/plan-outcome.js";
import { importDispatcher } from "../support/project-build.js";
import { typeErrors } from "../support/strict-consumer.js";
import { writeProject } from "../support/temp-project.js";
import { onePassVariants, perElementShader } from "../support/one-pass.js";

const spec = {
  domain: "com.example",
  name: "Pick",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "float32", rank: 1, shape: "shapes.xT" } },
  attributes: { fill: {}, scale: { default: 1.5 }, mode: {}, perm: { default: [0, 1] } },
  attributeConstraints: { mode: { values: ["wrap", "clip"] } },
  derive: {
    n: "dim(shapes.xT, 0)",
    fillValue: 'attrs.fill if has(attrs, "fill") else 0.0',
    scaleOr: "attrs.scale if n > 3 else 2.0",
    modeName: 'attrs.mode if has(attrs, "mode") else "none"',
    permOr: "attrs.perm if n > 3 else [1, 0]",
  },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: {
      struct: [
        { name: "n", type: "u32", value: "n" },
        { name: "fill", type: "f32", value: "fillValue" },
        { name: "scale", type: "f32", value: "scaleOr" },
        { name: "wrap", type: "u32", value: '1 if modeName == "wrap" else 0' },
        { name: "p0", type: "u32", value: "dim(permOr, 0)" },
      ],
    },
  },
  variants: onePassVariants("Pick", "pick.wgsl.jinja"),
};

const template = perElementShader("y[gid.x] = x[gid.x] * params.scale + params.fill + f32(params.wrap + params.p0);");

describe("attributes picked by a condition in a derive entry", async () => {
  const root = writeProject("attr-types", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "specs/Pick.json": JSON.stringify(spec, null, 2),
    "templates/pick.wgsl.jinja": template,
  });
  const result = await compile(loadConfig(root));
  const source = result.files.get("core/dispatcher.ts");

  it("builds without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(source).toBeDefined();
  });

  it("the dispatcher compiles with zero errors under strict flags", () => {
    fs.writeFileSync(path.join(root, "package.json"), JSON.stringify({ type: "module" }));
    const file = path.join(root, "dispatcher.ts");
    fs.writeFileSync(file, source!);
    const errors = typeErrors([file]);
    expect(errors).toEqual([]);
  });

  it("plans as the interpreter does", async () => {
    const planners = (await importDispatcher(source!)).planners as Record<string, (c: Call) => unknown>;
    const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Pick")!.model;
    const calls: Call[] = [
      { inputs: { xT: { shape: [5], dtype: "float32" } }, attrs: {} },
      { inputs: { xT: { shape: [2], dtype: "float32" } }, attrs: { fill: 3, scale: 4, mode: "wrap", perm: [7, 8] } },
      { inputs: { xT: { shape: [9], dtype: "float32" } }, attrs: { fill: -1.25, mode: "clip", perm: [2] } },
    ];
    for (const call of calls) {
      const generated = outcome(() => planners.Pick!(call));
      expect(generated, JSON.stringify(call)).toEqual(outcome(() => interpretPlan(model, call)));
      expect(generated.error, JSON.stringify(call)).toBeUndefined();
    }
  });
});
