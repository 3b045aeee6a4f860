/**
 * A derive entry whose conditional has a dimension of a required tensor of declared rank in a
 * branch (`(0 if ranks.maskT == 1 else cols) if present.maskT else 0` with `cols` =
 * `dim(shapes.xT, 1)`, written for test/fixtures/softmax) gives a dispatcher that compiles under a
 * strict consumer's flags: the dimension is read as `shape[1]`, which noUncheckedIndexedAccess types
 * `number | undefined`, and the memo of the entry is a `number`.
 */
import * as fs from "node:fs";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { dispatcherTypeErrors } from "../support/strict-consumer.js";
import { writeProject } from "../support/temp-project.js";

const BRANCHES = [
  "(0 if ranks.maskT == 1 else cols) if present.maskT else 0",
  "cols if present.maskT else rows",
  "rows + cols if present.maskT else cols",
];

function project(value: string): string {
  const spec = {
    domain: "com.example",
    name: "Pick",
    sinceVersion: 1,
    inputs: { xT: { onnx: "x", dtype: "float32", rank: 2 }, maskT: { onnx: "mask", dtype: "float32", optional: true } },
    outputs: { yT: { onnx: "y", dtype: "float32", rank: 2, shape: "shapes.xT" } },
    derive: { rows: "dim(shapes.xT, 0)", cols: "dim(shapes.xT, 1)", picked: value },
    bindings: {
      x: { arg: "xT" },
      y: { arg: "yT" },
      params: { struct: [{ name: "picked", type: "u32", value: "picked" }] },
    },
    variants: [
      {
        id: "main",
        when: ["not present.maskT"],
        passes: [{ id: "main", name: "Pick", shader: "pick.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "rows" } }],
      },
    ],
  };
  const template = `{{ env.wgsl.resourceDeclarations }}

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
  y[wid.x] = x[wid.x] + f32(params.picked);
}
`;
  return writeProject("strict-dim-branches", {
    "specs/Pick.json": JSON.stringify(spec, null, 2),
    "templates/pick.wgsl.jinja": template,
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "package.json": JSON.stringify({ type: "module" }),
  });
}

describe("a dimension read in a branch of a conditional derive entry", () => {
  for (const value of BRANCHES) {
    it(`\`${value}\` gives a dispatcher that compiles under strict flags`, async () => {
      const dir = project(value);
      try {
        const result = await compile(loadConfig(dir));
        expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
        expect(dispatcherTypeErrors(dir, result.files.get("core/dispatcher.ts")!)).toEqual([]);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }, 120_000);
  }
});
