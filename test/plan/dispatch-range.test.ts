/**
 * A workgroup count known once a profile's tunables are (`tunables.WG * 1000`) and past the
 * profile's maxComputeWorkgroupsPerDimension fails every call with an eval error; the build reports
 * it as dispatch_out_of_range at the count, per built combination, and builds nothing.
 */
import * as fs from "node:fs";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { writeProject } from "../support/temp-project.js";

function project(z: string): string {
  const spec = {
    domain: "com.example",
    name: "Wide",
    sinceVersion: 1,
    inputs: { xT: { onnx: "x", dtype: "float32", rank: 1 } },
    outputs: { yT: { onnx: "y", dtype: "float32", rank: 1, shape: "shapes.xT" } },
    tunables: { WG: { default: 64 } },
    bindings: { x: { arg: "xT" }, y: { arg: "yT" } },
    variants: [
      {
        id: "main",
        passes: [{ id: "main", name: "Wide", shader: "wide.wgsl.jinja", bindings: ["x", "y"], dispatch: { x: "dim(shapes.xT, 0)", z } }],
      },
    ],
  };
  const template = `{{ env.wgsl.resourceDeclarations }}

@compute @workgroup_size({{ tunables.WG }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  y[gid.x] = x[gid.x];
}
`;
  return writeProject("dispatch-range", {
    "specs/Wide.json": JSON.stringify(spec, null, 2),
    "templates/wide.wgsl.jinja": template,
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
  });
}

describe("a workgroup count known on a profile", () => {
  it("past maxComputeWorkgroupsPerDimension is dispatch_out_of_range at the count", async () => {
    const dir = project("tunables.WG * 1100");
    try {
      const result = await compile(loadConfig(dir));
      const errors = result.diagnostics.filter((d) => d.severity === "error");
      expect(errors.map((d) => [d.code, d.location?.pointer, d.message])).toEqual([
        [
          "dispatch_out_of_range",
          "/variants/0/passes/0/dispatch/z",
          "dispatch z is always 70400 on profile core (WG=64), outside 0..65535 (maxComputeWorkgroupsPerDimension): every call would fail to plan",
        ],
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("within it builds", async () => {
    const dir = project("tunables.WG * 1000");
    try {
      const result = await compile(loadConfig(dir));
      expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
