/**
 * Byte sizes of bool tensors: 1 byte per element, bound rounded up to a multiple of 4 (WebGPU binds
 * storage in whole words; docs/templates.md#bool-tensors). The generated dispatcher and the
 * interpreter must plan the same ranges for bool inputs, bool outputs and bool intermediates of
 * every length around a word, and a bool tensor passed where the spec wants float32 (or the
 * reverse) is refused alike. Kernels: test/fixtures/bool, and a two-pass kernel whose mask is a
 * rank-2 bool intermediate.
 */
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { KernelModel } from "../../src/plan/dispatch-model.js";
import type { Call, Plan } from "../../src/model/plan.js";
import { outcome } from "../support/plan-outcome.js";
import { importDispatcher } from "../support/project-build.js";
import { writeProject } from "../support/temp-project.js";

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/bool");
const LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 4097];
const roundUp4 = (n: number): number => Math.ceil(n / 4) * 4;

/** y = x where mask, else 0; the mask is computed into a bool intermediate of shape [rows, cols] by a first pass. */
const maskedSpec = {
  domain: "com.example",
  name: "PositivePart",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "float32", rank: 2 } },
  outputs: { yT: { onnx: "y", dtype: "float32", rank: 2, shape: "shapes.xT" } },
  derive: { n: "dim(shapes.xT, 0) * dim(shapes.xT, 1)", groups: "ceilDiv(n, 64)" },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    mask: { scratch: "maskT", elementType: "u32" },
    params: { struct: [{ name: "n", type: "u32", value: "n" }] },
  },
  variants: [
    {
      id: "two_pass",
      intermediates: [{ id: "maskT", dtype: "bool", shape: "shapes.xT" }],
      passes: [
        { id: "mask", name: "Mask", shader: "mask.wgsl.jinja", bindings: ["x", "mask", "params"], dispatch: { x: "groups" } },
        { id: "apply", name: "Apply", shader: "apply.wgsl.jinja", bindings: ["x", "mask", "y", "params"], dispatch: { x: "groups" } },
      ],
    },
  ],
};

const kernelTemplate = (body: string): string =>
  [
    "{{ env.wgsl.resourceDeclarations }}",
    "",
    "@compute @workgroup_size(64)",
    "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
    "  let i = gid.x;",
    "  if (i >= params.n) {",
    "    return;",
    "  }",
    `  ${body}`,
    "}",
    "",
  ].join("\n");

async function planners(result: CompileResult): Promise<Record<string, (c: Call) => Plan>> {
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return (await importDispatcher(result.files.get("core/dispatcher.ts")!)).planners as Record<string, (c: Call) => Plan>;
}

function modelOf(result: CompileResult, kernel: string): KernelModel {
  return result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === kernel)!.model;
}

/** The byte sizes the plan binds for a tensor id, each once (every binding of it alike: one). */
function tensorSizes(plan: Plan, tensor: string): number[] {
  return [
    ...new Set(
      plan.passes.flatMap((p) =>
        p.resources.filter((_, i) => ((b) => b.kind !== "uniform" && b.kind !== "scratch" && b.tensor === tensor)(p.bindings[i]!)),
      ),
    ),
  ] as number[];
}

describe("bool tensors are 1 byte per element, bound rounded up to 4 bytes", async () => {
  const fixture = await compile(loadConfig(FIXTURE), { profiles: ["core"] });
  const masked = await compile(
    loadConfig(
      writeProject("bool-sizes", {
        "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
        "specs/PositivePart.json": JSON.stringify(maskedSpec, null, 2),
        "templates/mask.wgsl.jinja": kernelTemplate("store_mask(i, load_x(i) > 0.0);"),
        "templates/apply.wgsl.jinja": kernelTemplate("store_y(i, select(0.0, load_x(i), load_mask(i)));"),
      }),
    ),
  );

  it("bool inputs and outputs of the fixture kernels, in the dispatcher as in the interpreter", async () => {
    const plan = await planners(fixture);
    const f32 = (n: number) => ({ shape: [n], dtype: "float32" });
    const bool = (n: number) => ({ shape: [n], dtype: "bool" });
    for (const n of LENGTHS) {
      const cases: [string, Call, string, number][] = [
        ["Where", { inputs: { condT: bool(n), xT: f32(n), yT: f32(n) } }, "condT", roundUp4(n)],
        ["Where", { inputs: { condT: bool(n), xT: f32(n), yT: f32(n) } }, "outT", 4 * n],
        ["Greater", { inputs: { aT: f32(n), bT: f32(n) }, attrs: { perWord: 0 } }, "outT", roundUp4(n)],
        ["Greater", { inputs: { aT: f32(n), bT: f32(n) }, outputs: { outT: bool(n) }, attrs: { perWord: 1 } }, "outT", roundUp4(n)],
        ["Not", { inputs: { xT: bool(n) }, attrs: { perWord: 1 } }, "xT", roundUp4(n)],
        ["Not", { inputs: { xT: bool(n) }, attrs: { perWord: 0 } }, "yT", roundUp4(n)],
      ];
      for (const [kernel, call, tensor, size] of cases) {
        const generated = outcome(() => plan[kernel]!(call));
        expect(generated, `${kernel} ${JSON.stringify(call)}`).toEqual(outcome(() => interpretPlan(modelOf(fixture, kernel), call)));
        expect("plan" in generated && tensorSizes(generated.plan as Plan, tensor), `${kernel} n=${n} ${tensor}`).toEqual([size]);
      }
    }
  });

  it("a bool output the call leaves out is planned with its computed shape", async () => {
    const plan = (await planners(fixture)).Greater!({
      inputs: { aT: { shape: [5], dtype: "float32" }, bT: { shape: [5], dtype: "float32" } },
    });
    expect(plan.outputShapes).toEqual({ outT: [5] });
    expect(tensorSizes(plan, "outT")).toEqual([8]);
  });

  it("a bool intermediate of shape [rows, cols]: a scratch buffer of rows * cols bytes rounded up to 4", async () => {
    const plan = await planners(masked);
    for (const [rows, cols] of [
      [1, 1],
      [3, 5],
      [2, 2],
      [7, 9],
      [1, 4097],
    ]) {
      const call: Call = { inputs: { xT: { shape: [rows, cols], dtype: "float32" } } };
      const generated = outcome(() => plan.PositivePart!(call));
      expect(generated).toEqual(outcome(() => interpretPlan(modelOf(masked, "PositivePart"), call)));
      const p = (generated as { plan: Plan }).plan;
      expect(p.scratch).toEqual({ maskT: roundUp4(rows * cols) });
      for (const pass of p.passes) {
        const i = pass.bindings.findIndex((b) => b.kind === "scratch");
        expect(pass.bindings[i]).toMatchObject({ kind: "scratch", scratch: "maskT" });
        expect(pass.resources[i]).toBe(roundUp4(rows * cols));
      }
    }
  });

  it("the intermediate's shader binds it as atomic u32 words with the bool helpers it calls, and only those", () => {
    const shaders = [...masked.files].filter(([rel]) => rel.startsWith("shaders/")).map(([, text]) => text);
    const maskPass = shaders.find((s) => s.includes("fn store_mask"))!;
    const applyPass = shaders.find((s) => s.includes("fn load_mask"))!;
    expect(maskPass).toContain("var<storage, read_write> mask: array<atomic<u32>>;");
    expect(maskPass).not.toContain("fn load_mask");
    expect(applyPass).toContain(
      "fn load_mask(i: u32) -> bool {\n  return ((atomicLoad(&mask[i >> 2u]) >> ((i & 3u) * 8u)) & 0xffu) != 0u;\n}",
    );
    expect(applyPass).not.toContain("fn store_mask");
  });

  it("a float32 tensor where the spec wants bool, and a bool where it wants float32, are refused alike", async () => {
    const plan = await planners(fixture);
    const calls: [string, Call][] = [
      [
        "Where",
        { inputs: { condT: { shape: [3], dtype: "float32" }, xT: { shape: [3], dtype: "float32" }, yT: { shape: [3], dtype: "float32" } } },
      ],
      ["Greater", { inputs: { aT: { shape: [3], dtype: "bool" }, bT: { shape: [3], dtype: "float32" } } }],
      ["Not", { inputs: { xT: { shape: [3], dtype: "bool" } }, outputs: { yT: { shape: [3], dtype: "float32" } } }],
    ];
    for (const [kernel, call] of calls) {
      const generated = outcome(() => plan[kernel]!(call));
      expect(generated).toEqual(outcome(() => interpretPlan(modelOf(fixture, kernel), call)));
      expect("error" in generated && generated.error.kind).toBe("invalid_call");
    }
  });
});
