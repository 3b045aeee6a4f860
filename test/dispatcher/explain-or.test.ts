/**
 * The explanation of a false `or` condition shows the values that decided it: the operands of its
 * disjuncts, each once (`ranks.aT == 1 or ranks.aT == 2` is false with `ranks.aT = 3`), where it
 * listed only the disjuncts' values (`ranks.aT == 1 = false, ranks.aT == 2 = false`). The generated
 * dispatcher and the interpreter say the same.
 */
import { describe, expect, it } from "vitest";
import type { Call } from "../../src/model/plan.js";
import { coreProject } from "../support/project-build.js";

const spec = {
  domain: "com.example",
  name: "Ors",
  sinceVersion: 1,
  inputs: { aT: { onnx: "A", dtype: "float32" }, bT: { onnx: "B", dtype: "float32", optional: true } },
  outputs: { yT: { onnx: "Y", dtype: "float32", shape: "shapes.aT" } },
  attributes: { mode: { default: 0 } },
  derive: { n: "dim(shapes.aT, 0)", small: "n < 4" },
  bindings: { a: { arg: "aT" }, y: { arg: "yT" } },
  variants: [
    {
      id: "low_rank",
      when: ["ranks.aT == 1 or ranks.aT == 2"],
      passes: [{ id: "main", name: "Ors", shader: "o.wgsl.jinja", bindings: ["a", "y"], dispatch: { x: "1" } }],
    },
    {
      id: "mixed",
      when: ["small or (attrs.mode == 2 or not present.bT)"],
      passes: [{ id: "main", name: "Ors", shader: "o.wgsl.jinja", bindings: ["a", "y"], dispatch: { x: "1" } }],
    },
  ],
};

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(1)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  y[gid.x] = a[gid.x];",
  "}",
  "",
].join("\n");

describe("explanations of a false or", async () => {
  const { result, both } = await coreProject("explain-or", {
    "specs/Ors.json": JSON.stringify(spec, null, 2),
    "templates/o.wgsl.jinja": template,
  });

  it("show the disjuncts' operands, once each, in the dispatcher and the interpreter alike", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const call: Call = {
      inputs: { aT: { shape: [6, 2, 2], dtype: "float32" }, bT: { shape: [6], dtype: "float32" } },
      attrs: { mode: 1 },
    };
    const generated = both("Ors", call);
    expect("error" in generated && generated.error.kind).toBe("no_variant");
    const message = "error" in generated ? generated.error.message : "";
    expect(message).toContain("low_rank: `ranks.aT == 1 or ranks.aT == 2` is false (ranks.aT = 3)");
    expect(message).toContain(
      "mixed: `small or (attrs.mode == 2 or not present.bT)` is false (small = false, attrs.mode = 1, present.bT = true)",
    );
  });
});
