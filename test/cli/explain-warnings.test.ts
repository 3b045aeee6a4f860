/**
 * `kernelc explain` shows the compilation's warnings about the kernel it explains (those at its spec
 * file), as build and lint show them, in every format; another kernel's warnings are not shown.
 */
import * as fs from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { writeProject } from "../support/temp-project.js";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A kernel y = x * alpha named `name`; `extra` adds fields (an attribute nothing reads, say). */
function spec(name: string, extra: Record<string, unknown> = {}): string {
  const s = {
    domain: "test",
    name,
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "float32", rank: 1 } },
    outputs: { y: { onnx: "Y", dtype: "float32", rank: 1, shape: "shapes.x" } },
    attributes: { alpha: { default: 1.0 } },
    tunables: { WG: { default: 64 } },
    derive: { n: "dim(shapes.x, 0)", wg: "tunables.WG" },
    bindings: {
      x: { arg: "x" },
      y: { arg: "y" },
      params: {
        struct: [
          { name: "n", type: "u32", value: "n" },
          { name: "alpha", type: "f32", value: "attrs.alpha" },
        ],
      },
    },
    variants: [
      {
        id: "main",
        passes: [
          { id: "p", name: `${name}.Main`, shader: "scale.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "ceilDiv(n, wg)" } },
        ],
      },
    ],
  };
  const merged = { ...s, ...extra, attributes: { ...s.attributes, ...((extra.attributes as object | undefined) ?? {}) } };
  return JSON.stringify(merged, null, 2) + "\n";
}

const TEMPLATE = [
  "{{ env.wgsl.resourceDeclarations }}",
  "@compute @workgroup_size({{ wg }})",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  let i = gid.x;",
  "  if (i >= params.n) {",
  "    return;",
  "  }",
  "  y[i] = x[i] * params.alpha;",
  "}",
  "",
].join("\n");

/** Scale declares an attribute nothing reads; Clean has no warning. */
function project(): string {
  const dir = writeProject("explain-warn", {
    "specs/scale.json": spec("Scale", { attributes: { beta: {} } }),
    "specs/clean.json": spec("Clean"),
    "templates/scale.wgsl.jinja": TEMPLATE,
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }) + "\n",
  });
  made.push(dir);
  return dir;
}

const WARNING = "warning[unused_attribute]: attribute `beta` is never read, so the value a call gives it changes nothing";

describe("kernelc explain shows the kernel's warnings", () => {
  const dir = project();

  it("as lint and build print them: a frame at the spec, the hint and the summary, after the report", async () => {
    const r = await runCli(["explain", "Scale", "--profile", "core"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("EMITTED main");
    expect(r.stderr).toBe(
      [
        WARNING,
        "  --> specs/scale.json:24:5 (/attributes/beta)",
        "     |",
        '  24 |     "beta": {}',
        "     |     ^^^^^^",
        "  = hint: read it as `attrs.beta`; if the kernel supports one value only, list it in `attributeConstraints.beta.values` so that calls giving another are rejected; or remove it (calls that set it are then rejected)",
        "0 errors, 1 warning",
        "",
      ].join("\n"),
    );
    const lint = await runCli(["lint"], dir);
    expect(lint.code).toBe(0);
    expect(lint.stderr).toBe(r.stderr);
    const build = await runCli(["build"], dir);
    expect(build.code).toBe(0);
    expect(build.stderr).toContain(r.stderr);
  });

  it("and not another kernel's", async () => {
    const r = await runCli(["explain", "Clean", "--profile", "core"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("EMITTED main");
    expect(r.stderr).toBe("");
  });

  it("--format json: in the document's diagnostics", async () => {
    const r = await runCli(["explain", "Scale", "--profile", "core", "--format", "json"], dir);
    expect(r.code).toBe(0);
    const data = JSON.parse(r.stdout) as {
      candidates: unknown[];
      diagnostics: { code: string; severity: string; pointer: string; line: number }[];
    };
    expect(data.candidates.length).toBeGreaterThan(0);
    expect(data.diagnostics.map((d) => [d.code, d.severity, d.pointer, d.line])).toEqual([
      ["unused_attribute", "warning", "/attributes/beta", 24],
    ]);
    const clean = JSON.parse((await runCli(["explain", "Clean", "--profile", "core", "--format", "json"], dir)).stdout) as {
      diagnostics: unknown[];
    };
    expect(clean.diagnostics).toEqual([]);
  });

  it("--format github: an annotation", async () => {
    const r = await runCli(["explain", "Scale", "--profile", "core", "--format", "github"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^::warning file=specs\/scale\.json,line=24,.*unused_attribute/m);
  });

  it("with a call that fails, the warnings and then the call's error (exit 1)", async () => {
    fs.writeFileSync(
      `${dir}/call.json`,
      JSON.stringify({ inputs: { x: { shape: [8], dtype: "float32" } }, outputs: {}, attrs: { gamma: 1 } }),
    );
    const r = await runCli(["explain", "Scale", "--profile", "core", "--call", "call.json"], dir);
    expect(r.code).toBe(1);
    expect([...r.stderr.matchAll(/^(error|warning)\[([a-z_]+)\]/gm)].map((m) => m[2])).toEqual(["unused_attribute", "call_invalid"]);
    expect(r.stderr).toContain("1 error, 1 warning");
  });
});
