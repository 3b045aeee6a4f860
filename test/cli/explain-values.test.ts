/**
 * The spec's `explain` list: `kernelc explain` (text and --format json) and the API's explain()
 * show the listed derive entries' values per built shader, and each profile's manifest records
 * them per shader of a pass.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { explain } from "../../src/api/index.js";
import type { KernelsFile } from "../../src/model/plan.js";
import { runCli } from "../support/cli.js";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * y += x with two passes: `scale` reads `design` (vec4 when the instance's length is a multiple
 * of 4), `clear` does not; `wg` is read by both templates.
 */
function project(explainList: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-explain-values-"));
  made.push(dir);
  fs.mkdirSync(path.join(dir, "specs"));
  fs.mkdirSync(path.join(dir, "templates"));
  const spec = {
    domain: "test",
    name: "Scale",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "T", rank: 1 } },
    outputs: { y: { onnx: "Y", dtype: "T", rank: 1, shape: "shapes.x" } },
    attributes: { alpha: { default: 1 } },
    typeConstraints: { T: ["float32"] },
    tunables: { WG: { default: 64 } },
    derive: {
      n: "dim(shapes.x, 0)",
      wg: "tunables.WG",
      groups: "ceilDiv(n, wg)",
      design: '"vec4" if n % 4 == 0 else "scalar"',
    },
    explain: explainList,
    bindings: {
      x: { arg: "x", elementType: "f32" },
      y: { arg: "y", elementType: "f32" },
      params: { struct: [{ name: "n", type: "u32", value: "n" }] },
    },
    variants: [
      {
        id: "main",
        passes: [
          { id: "clear", name: "Scale.Clear", shader: "clear.wgsl.jinja", bindings: ["y", "params"], dispatch: { x: "groups" } },
          { id: "scale", name: "Scale.Main", shader: "scale.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "groups" } },
        ],
      },
    ],
  };
  const body = (stmt: string): string =>
    [
      "{{ env.wgsl.resourceDeclarations }}",
      "@compute @workgroup_size({{ wg }})",
      "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
      "  let i = gid.x;",
      "  if (i >= params.n) {",
      "    return;",
      "  }",
      stmt,
      "}",
      "",
    ].join("\n");
  fs.writeFileSync(path.join(dir, "specs", "scale.json"), JSON.stringify(spec, null, 2) + "\n");
  fs.writeFileSync(path.join(dir, "templates", "clear.wgsl.jinja"), body("  y[i] = 0.0;"));
  fs.writeFileSync(path.join(dir, "templates", "scale.wgsl.jinja"), body("  // design: {{ design }}\n  y[i] = y[i] + x[i];"));
  const config = {
    profiles: ["core"],
    instances: {
      Scale: [
        { name: "n1024", values: { "dim(shapes.x, 0)": 1024 } },
        { name: "n4096", values: { "dim(shapes.x, 0)": 4096 } },
        { name: "n1002", values: { "dim(shapes.x, 0)": 1002 } },
      ],
    },
  };
  fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify(config, null, 2) + "\n");
  return dir;
}

const cli = runCli;

interface ShaderExplainJson {
  pass: string;
  shader: string;
  instances: string[];
  values: Record<string, unknown>;
}

describe("the spec's explain list", () => {
  it("kernelc explain prints each built instance's values, naming the passes whose template reads them", async () => {
    const r = await cli(["explain", "Scale", "--profile", "core"], project(["design", "wg"]));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      [
        "  EMITTED main (priority 0)",
        '      instance n1024: built; wg=64 (passes clear, scale), design="vec4" (pass scale)',
        '      instance n4096: built; wg=64 (passes clear, scale), design="vec4" (pass scale)',
        '      instance n1002: built; wg=64 (passes clear, scale), design="scalar" (pass scale)',
      ].join("\n"),
    );
  });

  it("without an explain list the report is unchanged", async () => {
    const r = await cli(["explain", "Scale", "--profile", "core"], project([]));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("      instance n1002: built\n");
  });

  it("--format json and the API give the values per built shader, the same shader ids as the manifest", async () => {
    const dir = project(["design"]);
    const r = await cli(["explain", "Scale", "--profile", "core", "--format", "json"], dir);
    expect(r.code, r.stderr).toBe(0);
    const data = JSON.parse(r.stdout) as { candidates: { status: string; explain?: ShaderExplainJson[] }[] };
    const emitted = data.candidates.filter((c) => c.status === "emitted");
    expect(emitted).toHaveLength(1);
    const shown = emitted[0].explain ?? [];
    // One shader of pass `scale` per instance (n is part of its key); `clear` does not read `design`.
    expect(shown.map((e) => [e.pass, e.instances, e.values]).sort((a, b) => (String(a[1]) < String(b[1]) ? -1 : 1))).toEqual([
      ["scale", ["n1002"], { design: "scalar" }],
      ["scale", ["n1024"], { design: "vec4" }],
      ["scale", ["n4096"], { design: "vec4" }],
    ]);

    const api = await explain("Scale", { cwd: dir, profile: "core" });
    expect(api.ok).toBe(true);
    expect(api.candidates.find((c) => c.status === "emitted")?.explain).toEqual(shown);
    expect(api.text).toContain('instance n1002: built; design="scalar" (pass scale)');

    const built = await cli(["build"], dir);
    expect(built.code, built.stderr).toBe(0);
    const described = JSON.parse(fs.readFileSync(path.join(dir, "out", "core", "kernels.json"), "utf8")) as KernelsFile;
    const kernel = described.kernels.Scale as {
      variants: { passes: { id: string; shaders: Record<string, string> }[] }[];
      explain?: Record<string, Record<string, unknown>>;
    };
    // Once per shader of the kernel: those of pass `scale`, not those of `clear` (it does not read `design`).
    const [clear, scale] = kernel.variants[0].passes;
    expect(kernel.explain).toEqual(Object.fromEntries(shown.map((e) => [e.shader, e.values])));
    expect(Object.keys(kernel.explain ?? {}).sort()).toEqual([...new Set(Object.values(scale.shaders))].sort());
    for (const id of Object.values(clear.shaders)) expect(kernel.explain).not.toHaveProperty(id);
  });
});
