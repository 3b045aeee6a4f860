/**
 * The generated dispatcher compiles under the strict consumer's flags for the plainest kernel a
 * new user writes: no uniform, a constant dispatch, only required tensors bound. Its pass method
 * had nothing that could fail, so it never read its message-prefix parameter `pp`, and
 * noUnusedParameters rejected the module ("'pp' is declared but its value is never read").
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { coreProject } from "../support/project-build.js";
import { typeErrors } from "../support/strict-consumer.js";

const spec = {
  domain: "com.example",
  name: "First",
  sinceVersion: 1,
  inputs: { a: { onnx: "A", dtype: "float32" } },
  outputs: { b: { onnx: "B", dtype: "float32" } },
  variants: [
    {
      id: "v",
      passes: [
        {
          id: "p",
          name: "First",
          shader: "first.wgsl.jinja",
          bindings: [
            { arg: "a", name: "a" },
            { arg: "b", name: "b" },
          ],
          dispatch: { x: 1 },
        },
      ],
    },
  ],
};

const template = ["{{ env.wgsl.resourceDeclarations }}", "", "@compute @workgroup_size(1)", "fn main() {", "  b[0] = a[0];", "}", ""].join(
  "\n",
);

describe("a kernel whose pass cannot fail", async () => {
  const project = await coreProject("strict-minimal", {
    "specs/First.json": JSON.stringify(spec, null, 2),
    "templates/first.wgsl.jinja": template,
  });

  it("generates a dispatcher with zero errors under strict flags", () => {
    expect(project.result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    fs.writeFileSync(path.join(project.root, "package.json"), JSON.stringify({ type: "module" }));
    const file = path.join(project.root, "dispatcher.ts");
    fs.writeFileSync(file, project.source!);
    expect(typeErrors([file])).toEqual([]);
  });

  it("plans the call as the interpreter does", () => {
    const call = { inputs: { a: { shape: [3], dtype: "float32" } }, outputs: { b: { shape: [3], dtype: "float32" } } };
    const outcome = project.both("First", call);
    expect("plan" in outcome && (outcome.plan as { passes: { resources: unknown[] }[] }).passes[0]!.resources).toEqual([12, 12]);
  });
});
