/**
 * `kernelc lint` renders every variant's templates for the configured profiles and validates the
 * WGSL with Tint: template errors, Tint errors, workgroup limits and unused bindings are found by
 * lint (not first by build), each reported once with where it occurs.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { writeProject } from "../support/temp-project.js";

const run = runCli;

const SPEC = {
  domain: "com.example",
  name: "Scale",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "T", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" } },
  attributes: { alpha: { default: 1.0 } },
  typeConstraints: { T: ["float32"] },
  tunables: { WG: { default: 64 } },
  derive: { n: "dim(shapes.xT, 0)", groups: "ceilDiv(n, tunables.WG)", wide: "n > 4096" },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: {
      struct: [
        { name: "n", type: "u32", value: "n" },
        { name: "alpha", type: "f32", value: "attrs.alpha" },
      ],
    },
  },
  variants: [
    {
      id: "wide",
      priority: 1,
      when: ["wide"],
      passes: [{ id: "main", name: "Scale", shader: "scale.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "groups" } }],
    },
    {
      id: "narrow",
      passes: [{ id: "main", name: "Scale", shader: "scale.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "groups" } }],
    },
  ],
};

const TEMPLATE = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "const WG = {{ tunables.WG }}u;",
  "",
  "@compute @workgroup_size(WG)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  let i = gid.x;",
  "  if (i >= params.n) {",
  "    return;",
  "  }",
  "  y[i] = x[i] * params.alpha;",
  "}",
  "",
].join("\n");

/** A project with one kernel (two variants, one template) built for three profiles. */
function project(edit: { template?: (t: string) => string; spec?: (s: typeof SPEC) => unknown; config?: unknown } = {}): string {
  const spec = edit.spec ? edit.spec(structuredClone(SPEC)) : SPEC;
  return writeProject("lint-render", {
    "specs/Scale.json": JSON.stringify(spec, null, 2) + "\n",
    "templates/scale.wgsl.jinja": edit.template ? edit.template(TEMPLATE) : TEMPLATE,
    "kernelc.config.json": JSON.stringify(edit.config ?? { profiles: ["desktop-64k", "core", "compat"] }, null, 2) + "\n",
  });
}

describe("kernelc lint renders and validates the templates", () => {
  it("a clean project: says how many shaders it rendered and validated, for how many profiles", async () => {
    const r = await run(["lint"], project());
    expect(r).toEqual({ code: 0, stdout: "", stderr: "1 spec checked, 1 shader rendered and validated for 3 profiles, no problems\n" });
  });

  it("finds a template error that --no-render (the old lint) does not, and build also reports, once with where it occurs", async () => {
    const dir = project({ template: (t) => t.replace("  let i = gid.x;", "  let i = gid.x + {{ nope }};") });
    const spec = await run(["lint", "--no-render"], dir);
    expect(spec).toEqual({ code: 0, stdout: "", stderr: "1 spec checked, no problems\n" });
    const r = await run(["lint"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      [
        "error[template_error]: template scale.wgsl.jinja failed to render: `{{ nope }}` is undefined: every variable and member a template outputs must be in the render context (derive values, tunables, dtypes, device, DISPATCH_FOLD_WIDTH, env)",
        "  --> templates/scale.wgsl.jinja:7:19",
        "    |",
        "  7 |   let i = gid.x + {{ nope }};",
        "    |                   ^",
        "  = note: in 3 profiles: desktop-64k, core, compat; 2 variants: `wide`, `narrow`; pass `main`",
        "1 error, 0 warnings",
        "",
      ].join("\n"),
    );
    const build = await run(["build"], dir);
    expect(build.code).toBe(1);
    expect(build.stderr.match(/^error\[template_error\]/gm)).toHaveLength(1);
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
  });

  it("a misspelt include or import gets a did-you-mean naming the closest template", async () => {
    const dir = project({ template: (t) => t.replace("const WG", '{% include "lib/scale-helpr.wgsl.jinja" %}\nconst WG') });
    fs.mkdirSync(path.join(dir, "templates/lib"));
    fs.writeFileSync(path.join(dir, "templates/lib/scale-helper.wgsl.jinja"), "// helper\n");
    const r = await run(["lint"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error\[template_error\]: template scale\.wgsl\.jinja failed to render: template not found: lib\/scale-helpr\.wgsl\.jinja \(looked in .*\)$/m,
    );
    expect(r.stderr).toContain(
      [
        "  --> templates/scale.wgsl.jinja:3:4",
        "    |",
        '  3 | {% include "lib/scale-helpr.wgsl.jinja" %}',
        "    |    ^",
        "  = hint: did you mean `lib/scale-helper.wgsl.jinja`? name a file inside the templates folder by its path relative to that folder (not to the including template), with `/` between folders, e.g. `lib/constants.wgsl.jinja`",
      ].join("\n"),
    );
    // A bare name of a template in a folder (written relative to the including template) is found too.
    const bare = project({ template: (t) => t.replace("const WG", '{% from "scale-helper.wgsl.jinja" import x %}\nconst WG') });
    fs.mkdirSync(path.join(bare, "templates/lib"));
    fs.writeFileSync(path.join(bare, "templates/lib/scale-helper.wgsl.jinja"), "{% macro x() %}{% endmacro %}\n");
    expect((await run(["lint"], bare)).stderr).toContain("  = hint: did you mean `lib/scale-helper.wgsl.jinja`? name a file");
  });

  it("--profile renders for the named profiles only", async () => {
    const dir = project({ template: (t) => t.replace("  let i = gid.x;", "  let i = gid.x + {{ nope }};") });
    const r = await run(["lint", "--profile", "core"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("  = note: in profile core; 2 variants: `wide`, `narrow`; pass `main`\n");
    const unknown = await run(["lint", "--profile", "nosuch"], dir);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error\[unknown_profile\]: unknown profile `nosuch`/m);
  });

  it("an undefined variable read on every profile and instance is one diagnostic naming them all", async () => {
    const instances = ["a", "b", "c"].map((name, i) => ({ name, values: { "dim(shapes.xT, 0)": 1024 * (i + 1) } }));
    const dir = project({
      template: (t) => t.replace("const WG", "const N = {{ n }}u;\nconst M = {{ missing }}u;\nconst WG"),
      config: { profiles: ["desktop-64k", "desktop-32k", "core", "compat"], instances: { Scale: instances } },
    });
    const r = await run(["lint", "--format", "json"], dir);
    expect(r.code).toBe(1);
    const rows = JSON.parse(r.stdout) as { code: string; line: number; notes: { message: string }[] }[];
    expect(rows.map((d) => d.code)).toEqual(["template_error"]);
    expect(rows[0].line).toBe(4);
    expect(rows[0].notes[0].message).toBe(
      "in 4 profiles: desktop-64k, desktop-32k, core, compat; variant `narrow`; pass `main`; 3 instances: a, b, c",
    );
  });

  it("wgsl_invalid: at the template line and Tint's column, the whole token underlined, without Tint's candidate list", async () => {
    const dir = project({ template: (t) => t.replace("  y[i] = x[i] * params.alpha;", "  y[i] = max(x[i], 2i) * params.alpha;") });
    const r = await run(["lint"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      [
        "error[wgsl_invalid]: Tint rejects the rendered WGSL: no matching call to 'max(f32, i32)' (none of Tint's 2 candidates takes these argument types)",
        "  --> templates/scale.wgsl.jinja:11:10",
        "     |",
        "  11 |   y[i] = max(x[i], 2i) * params.alpha;",
        "     |          ^^^^^^^^^^^^^",
        "  = hint: fix the template so that the WGSL it renders is valid; the note shows the generated line",
        "  = note: in 3 profiles: desktop-64k, core, compat; 2 variants: `wide`, `narrow`; pass `main`",
        "  = note: generated WGSL line 17, column 10: y[i] = max(x[i], 2i) * params.alpha;",
        "1 error, 0 warnings",
        "",
      ].join("\n"),
    );
  });

  it("a block the template never closes is reported where it opens, with the end tag to add", async () => {
    const dir = project({ template: (t) => t.replace("  let i = gid.x;", "  {% if true %}\n  let i = gid.x;") });
    const r = await run(["lint"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      [
        "error[template_error]: template syntax error: `{% if … %}` is never closed: add `{% endif %}`",
        "  --> templates/scale.wgsl.jinja:7:3",
        "    |",
        "  7 |   {% if true %}",
      ].join("\n"),
    );
    const open = project({ template: (t) => t + "const X = {{ n\n" });
    expect((await run(["lint"], open)).stderr).toMatch(
      /^error\[template_error\]: template syntax error: `\{\{` is never closed: the file ends before its `\}\}`\n {2}--> templates\/scale\.wgsl\.jinja:13:11$/m,
    );
  });

  it("wgsl_invalid for WGSL cut short (an unclosed `(` at the end): Tint's error, exit 1, no internal error", async () => {
    const dir = project({ template: (t) => t + "fn bad( {\n" });
    for (const command of ["lint", "build"]) {
      const r = await run([command], dir);
      expect(r.code, command).toBe(1);
      expect(r.stderr, command).toMatch(/^error\[wgsl_invalid\]: Tint rejects the rendered WGSL/m);
      expect(r.stderr, command).not.toContain("internal error");
    }
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
  });

  it("wgsl_invalid after a substitution: Tint's column still found on the template line", async () => {
    const dir = project({
      template: (t) => t.replace("  y[i] = x[i] * params.alpha;", "  y[i] = x[i] * params.alpha + {{ tunables.WG }}u;"),
    });
    const r = await run(["lint", "--format", "json"], dir);
    const rows = JSON.parse(r.stdout) as { code: string; message: string; line: number; column: number }[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ code: "wgsl_invalid", line: 11, column: 10 });
    expect(rows[0].message).not.toContain("\n");
  });

  it("wgsl_limit_exceeded: at the template line of @workgroup_size, once per profile, with a hint naming the tunable", async () => {
    const dir = project({ spec: (s) => ({ ...s, tunables: { WG: { default: 512 } } }) });
    const r = await run(["lint"], dir);
    expect(r.code).toBe(1);
    const blocks = r.stderr.split("\n\n");
    expect(blocks).toHaveLength(2);
    expect(blocks[0]).toBe(
      [
        "error[wgsl_limit_exceeded]: the rendered WGSL exceeds the profile's limits: @workgroup_size x is 512, more than maxComputeWorkgroupSizeX = 256; @workgroup_size(512, 1, 1) is 512 invocations, more than maxComputeInvocationsPerWorkgroup = 256",
        "  --> templates/scale.wgsl.jinja:5:1",
        "    |",
        "  5 | @compute @workgroup_size(WG)",
        "    | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "  = hint: guard variant `wide`, `narrow` with a `when` condition such as `tunables.WG <= device.limits.maxComputeInvocationsPerWorkgroup`, so that on such profiles the next of the tunable's `values` is tried (give it smaller `values`), or pin a smaller value for the profile in kernelc.config.json (`tunables.<profile>.Scale.WG`); the template reads tunable WG",
        "  = note: in profile core; 2 variants: `wide`, `narrow`; pass `main`",
        "  = note: generated WGSL line 11: @compute @workgroup_size(WG)",
      ].join("\n"),
    );
    expect(blocks[1]).toMatch(/more than maxComputeInvocationsPerWorkgroup = 128\n[^]*= note: in profile compat;/);
  });

  it("binding_unused: a binding the shader declares and never uses, and bindings it never declares", async () => {
    const unused = await run(["lint", "--format", "json"], project({ template: (t) => t.replace("x[i] * params.alpha", "params.alpha") }));
    expect(unused.code).toBe(0);
    const rows = JSON.parse(unused.stdout) as { code: string; severity: string; message: string; pointer: string; line: number }[];
    expect(rows).toEqual([
      expect.objectContaining({
        code: "binding_unused",
        severity: "warning",
        pointer: "/bindings/x",
        line: 41,
        message:
          "binding `x` of pass `main` is declared but never used by the shader its template renders (every call still binds a buffer to it)",
      }),
    ]);
    const undeclared = await run(
      ["lint", "--format", "json"],
      project({
        template: (t) =>
          t
            .replace(
              "{{ env.wgsl.resourceDeclarations }}",
              "@group(0) @binding(0) var<storage, read> x: array<f32>;\n@group(0) @binding(1) var<storage, read_write> y: array<f32>;\nstruct P { n: u32, alpha: f32 }\n@group(0) @binding(2) var<uniform> parms: P;",
            )
            .replace(/params\./g, "parms."),
      }),
    );
    const rows2 = JSON.parse(undeclared.stdout) as { code: string; message: string }[];
    expect(rows2.map((d) => d.message)).toEqual(["binding `params` of pass `main` is never declared by the shader its template renders"]);
  });

  it("with the renders and verdicts an earlier lint kept in .kernelc-cache/, every result is the same, template lines included (and with --no-cache)", async () => {
    const projects = [
      project({ template: (t) => t.replace("  y[i] = x[i] * params.alpha;", "  y[i] = max(x[i], 2i) * params.alpha;") }),
      project({ spec: (s) => ({ ...s, tunables: { WG: { default: 512 } } }) }),
      project({ template: (t) => t.replace("x[i] * params.alpha", "params.alpha") }),
    ];
    for (const dir of projects) {
      for (const format of ["text", "json"]) {
        const first = await run(["lint", "--format", format], dir);
        expect(fs.existsSync(path.join(dir, ".kernelc-cache", "renders.json"))).toBe(true);
        expect(await run(["lint", "--format", format], dir)).toEqual(first);
        expect(await run(["lint", "--format", format, "--no-cache"], dir)).toEqual(first);
      }
    }
  });

  it("linting one spec file: the config's instances of other kernels are not an error", async () => {
    const root = path.resolve(__dirname, "../..");
    const r = await run(["lint", "specs/PagedAttention.json", "--profile", "core", "--format", "json"], root);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as { code: string; file: string }[];
    // core has no shader-f16: PagedAttention's f16 data is packed in u32 pairs there, so every variant builds.
    expect(rows.map((d) => [d.code, d.file])).toEqual([]);
  });

  it("the seed specs lint clean with rendering: warnings only, each reported once", async () => {
    const root = path.resolve(__dirname, "../..");
    const r = await run(["lint", "--format", "json"], root);
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as { code: string; severity: string; message: string; file: string }[];
    expect(rows.every((d) => d.severity === "warning")).toBe(true);
    const keys = rows.map((d) => `${d.code} ${d.file} ${d.message}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
