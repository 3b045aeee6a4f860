/**
 * Diagnostics the lint corpus (test/lint/corpus) cannot show: those of a build, `build --check`,
 * the config file, the command line, and lint's warnings. Each is triggered in a small temporary
 * project and compared, as the CLI prints it in text format (message, location, code frame where
 * the diagnostic has a span, hint, notes, summary), with golden/<code>.txt.
 * codes-coverage.test.ts fails when a code of src/core/codes.ts is shown by neither.
 *
 * `UPDATE_GOLDEN=1 npx vitest run test/diagnostics` rewrites the goldens (never under CI=true).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { golden } from "../support/golden.js";
import { runCli } from "../support/cli.js";

const GOLDEN_DIR = path.resolve(__dirname, "golden");
const made: string[] = [];

afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The kernel every case starts from: y = x * alpha, one f32 variant, one pass. */
function baseSpec(): { [key: string]: Json } {
  return {
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
    },
    bindings: {
      x: { arg: "x", elementType: "f32" },
      y: { arg: "y", elementType: "f32" },
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
        passes: [{ id: "p", name: "Scale.Main", shader: "scale.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "groups" } }],
      },
    ],
  };
}

/** A template that renders valid WGSL for the base spec; `body` replaces the kernel's statements. */
function template(opts: { body?: string; header?: string; workgroup?: string } = {}): string {
  return [
    "{{ env.wgsl.resourceDeclarations }}",
    opts.header ?? "",
    `@compute @workgroup_size(${opts.workgroup ?? "{{ wg }}"})`,
    "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
    "  let i = gid.x;",
    "  if (i >= params.n) {",
    "    return;",
    "  }",
    opts.body ?? "  y[i] = x[i] * params.alpha;",
    "}",
    "",
  ].join("\n");
}

interface Project {
  readonly spec?: { [key: string]: Json };
  readonly template?: string;
  readonly config?: { [key: string]: Json };
}

/** Writes a project (specs/scale.json, templates/scale.wgsl.jinja, kernelc.config.json) to a fresh temp folder. */
function writeProject(p: Project): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-diag-"));
  made.push(dir);
  fs.mkdirSync(path.join(dir, "specs"));
  fs.mkdirSync(path.join(dir, "templates"));
  fs.writeFileSync(path.join(dir, "specs", "scale.json"), JSON.stringify(p.spec ?? baseSpec(), null, 2) + "\n");
  fs.writeFileSync(path.join(dir, "templates", "scale.wgsl.jinja"), p.template ?? template());
  fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify({ profiles: ["core"], ...p.config }, null, 2) + "\n");
  return dir;
}

const cli = runCli;

/** The codes of the diagnostics in a text rendering, in order. */
function codesIn(text: string): string[] {
  return [...text.matchAll(/^(?:error|warning)\[([a-z_0-9]+)\]/gm)].map((m) => m[1]);
}

/** Asserts the rendering against golden/<name>.txt (first line `exit: N`; the temporary project folder shown as <project>). */
function expectGolden(name: string, r: { code: number; stderr: string }, dir?: string): void {
  const actual = `exit: ${r.code}\n${dir ? r.stderr.split(dir).join("<project>") : r.stderr}`;
  const file = path.join(GOLDEN_DIR, `${name}.txt`);
  const expected = golden(file, actual);
  expect(expected, `${path.relative(process.cwd(), file)} is missing; run UPDATE_GOLDEN=1 npx vitest run test/diagnostics`).toBeDefined();
  expect(actual).toBe(expected);
}

/** A code frame as the text renderer draws it: gutter, source line, carets. */
const FRAME = /^ {2}\s*\d+ \| .*\n {2}\s* \| [ \t]*\^+/m;

describe("build diagnostics, rendered as text", () => {
  it("wgsl_invalid: Tint's message at the template line, with a frame and the generated line", async () => {
    const dir = writeProject({ template: template({ body: "  let bad: u32 = x[i];\n  y[i] = x[i] * params.alpha;" }) });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["wgsl_invalid"]);
    expect(r.stderr).toMatch(/^error\[wgsl_invalid\]: Tint rejects the .*WGSL.*: cannot initialize 'let' of type 'u32'/m);
    expect(r.stderr).toContain("  --> templates/scale.wgsl.jinja:9:");
    expect(r.stderr).toMatch(FRAME);
    expect(r.stderr).toMatch(/= note: .*generated WGSL line \d+(, column \d+)?: let bad: u32 = x\[i\];/);
    expect(fs.existsSync(path.join(dir, "out")), "a failed build writes nothing").toBe(false);
    expectGolden("wgsl_invalid", r);
  });

  it("wgsl_invalid: an accessor helper of a misspelt binding or of one the pass does not bind says which, and how to fix it", async () => {
    // A typo in the binding name of a helper: Tint only says the function is unknown.
    const typo = writeProject({ template: template({ body: "  store_y(i, load_xx(i) * params.alpha);" }) });
    const r = await cli(["build"], typo);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toContain("wgsl_invalid");
    expect(r.stderr).toMatch(/unresolved call target 'load_xx'/);
    expect(r.stderr).toContain(
      "= hint: pass `p` binds no storage binding named `xx`, so there is no helper `load_xx` (did you mean `load_x`?); helpers are named after the WGSL names of the pass's bindings: `x`, `y`",
    );
    expectGolden("wgsl_invalid_helper", r);

    // A binding the spec declares and the pass does not list.
    const spec = baseSpec();
    (spec.inputs as { [key: string]: Json }).b = { onnx: "B", dtype: "T", rank: 1 };
    (spec.bindings as { [key: string]: Json }).bias = { arg: "b", name: "bias" };
    const unbound = writeProject({ spec, template: template({ body: "  store_y(i, load_x(i) * params.alpha + load_bias(i));" }) });
    const u = await cli(["build"], unbound);
    expect(u.code).toBe(1);
    expect(u.stderr).toContain(
      '= hint: `load_bias` is a helper of binding `bias`, which pass `p` does not bind: add `"bias"` to the pass\'s `bindings` (its storage bindings: `x`, `y`)',
    );

    // A template without the declarations: the pass's bindings are unknown to Tint.
    const bare = template({ body: "  store_y(i, load_x(i) * params.alpha);" }).replace("{{ env.wgsl.resourceDeclarations }}", "");
    const noDecls = await cli(["build"], writeProject({ template: bare }));
    expect(noDecls.code).toBe(1);
    expect(noDecls.stderr).toContain(
      "= hint: the shader declares none of the pass's bindings: output `{{ env.wgsl.resourceDeclarations }}` at the top of scale.wgsl.jinja",
    );

    // A helper the binding does not have: no store helper for a read-only input.
    const readOnly = writeProject({ template: template({ body: "  store_x(i, 0.0);\n  y[i] = x[i] * params.alpha;" }) });
    const o = await cli(["build"], readOnly);
    expect(o.code).toBe(1);
    expect(o.stderr).toMatch(/= hint: binding `x` of pass `p` has no helper `store_x`: store helpers exist only for read-write bindings/);
  });

  it("f16_unavailable: a template that names f16 on a profile without shader-f16 (f16 data packed in u32 pairs)", async () => {
    const spec = baseSpec();
    spec.typeConstraints = { T: ["float16"] };
    spec.bindings = {
      ...(spec.bindings as { [key: string]: Json }),
      x: { arg: "x", elementType: "f16" },
      y: { arg: "y", elementType: "f16" },
    };
    // Reads and writes through the helpers (valid in both forms), but computes in f16 by name.
    const dir = writeProject({ spec, template: template({ body: "  let h = f16(params.alpha);\n  store_y(i, load_x(i) * f32(h));" }) });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["f16_unavailable"]);
    expect(r.stderr).toContain("  --> templates/scale.wgsl.jinja:9:");
    expect(r.stderr).toMatch(/= hint: without shader-f16, f16 bindings are stored as u32 pairs/);
    expect(fs.existsSync(path.join(dir, "out")), "a failed build writes nothing").toBe(false);
    expectGolden("f16_unavailable", r);
  });

  it("wgsl_limit_exceeded: too many invocations and too much workgroup memory for the profile", async () => {
    // core allows 256 invocations and 16 KiB of workgroup memory; Tint (with the null adapter's
    // larger limits) accepts both, so only kernelc's own check can catch them.
    const dir = writeProject({
      template: template({
        workgroup: "512",
        header: "var<workgroup> tile: array<f32, 5000>;",
        body: "  tile[i % 5000u] = x[i];\n  y[i] = tile[i % 5000u] * params.alpha;",
      }),
    });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr).length).toBeGreaterThanOrEqual(2);
    expect(codesIn(r.stderr).every((c) => c === "wgsl_limit_exceeded")).toBe(true);
    expect(r.stderr).toContain("512");
    expect(r.stderr).toContain("maxComputeInvocationsPerWorkgroup");
    expect(r.stderr).toContain("20000");
    expect(r.stderr).toContain("maxComputeWorkgroupStorageSize");
    expect(r.stderr).toContain("  --> templates/scale.wgsl.jinja");
    expectGolden("wgsl_limit_exceeded", r);

    // Within the limits, the same shader builds: the check is not a blanket refusal.
    const ok = writeProject({
      template: template({
        workgroup: "256",
        header: "var<workgroup> tile: array<f32, 4096>;",
        body: "  tile[i % 4096u] = x[i];\n  y[i] = tile[i % 4096u] * params.alpha;",
      }),
    });
    const built = await cli(["build"], ok);
    expect(built.stderr).not.toContain("wgsl_limit_exceeded");
    expect(built.code).toBe(0);
  });

  it("bool_element_type: a bool tensor's binding that declares another element type than u32, in the spec or through a derive entry", async () => {
    // A literal element type: the check reports it at the element type, before anything renders.
    const spec = baseSpec();
    (spec.inputs as { [key: string]: Json }).mask = { onnx: "mask", dtype: "bool", rank: 1 };
    (spec.bindings as { [key: string]: Json }).mask = { arg: "mask", elementType: "i32" };
    const passes = (spec.variants as { passes: { bindings: Json[] }[] }[])[0]!.passes;
    passes[0]!.bindings = ["x", "mask", "y", "params"];
    const body = "  y[i] = select(0.0, x[i], load_mask(i)) * params.alpha;";
    const dir = writeProject({ spec, template: template({ body }) });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["bool_element_type"]);
    expect(r.stderr).toMatch(/^error\[bool_element_type\]: binding `mask` holds bool tensor `mask`: .* must be `u32`, not `i32`$/m);
    expect(r.stderr).toMatch(/= hint: set `"elementType": "u32"`/);
    expect(r.stderr).toMatch(FRAME);
    expectGolden("bool_element_type", r);

    // Through a derive entry of a type parameter that may be bool: known only when the shader is rendered.
    const generic = baseSpec();
    generic.typeConstraints = { T: ["float32"], M: ["bool", "int32"] };
    (generic.inputs as { [key: string]: Json }).mask = { onnx: "mask", dtype: "M", rank: 1 };
    // i32 suits M = int32 but not M = bool.
    (generic.derive as { [key: string]: Json }).maskElem = '"i32"';
    (generic.bindings as { [key: string]: Json }).mask = { arg: "mask", elementType: "$maskElem" };
    (generic.variants as { passes: { bindings: Json[] }[] }[])[0]!.passes[0]!.bindings = ["x", "mask", "y", "params"];
    const genericDir = writeProject({ spec: generic, template: template({ body: "  y[i] = x[i] * params.alpha + f32(mask[i]);" }) });
    const g = await cli(["build"], genericDir);
    expect(g.code).toBe(1);
    expect(codesIn(g.stderr)).toEqual(["bool_element_type"]);
    expect(g.stderr).toMatch(
      /^error\[bool_element_type\]: binding `mask` of pass `p` holds bool tensor `mask` \(M = bool\): .* must be `u32`, not `i32`$/m,
    );
    expectGolden("bool_element_type_derive", g);
  });

  it("element_type_mismatch: a tensor binding whose element type's scalar is not the tensor's, in the spec or through a derive entry", async () => {
    // An f32 view of a float16 tensor would read each pair of halves as one float (a new user's
    // RMSNorm did this and built cleanly): the check reports it at the element type.
    const spec = baseSpec();
    spec.typeConstraints = { T: ["float16"] };
    const dir = writeProject({ spec, template: template({ body: "  y[i] = x[i] * params.alpha;" }) });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["element_type_mismatch", "element_type_mismatch"]);
    expect(r.stderr).toMatch(
      /^error\[element_type_mismatch\]: binding `x` holds `x` of type T \(float16\): its float16 elements are f16 values, and an element type of `f32` would read their bytes as f32$/m,
    );
    expect(r.stderr).toMatch(/= hint: leave `elementType` out .* or give one of f16, vec2<f16>, vec3<f16>, vec4<f16>; for every type of T/);
    expect(r.stderr).toMatch(FRAME);
    expectGolden("element_type_mismatch", r);

    // Through a derive entry: f32 suits T = float32 but not T = float16, known when the shader is rendered.
    const generic = baseSpec();
    generic.typeConstraints = { T: ["float32", "float16"] };
    (generic.derive as { [key: string]: Json }).elem = '"f32"';
    const bindings = generic.bindings as { [key: string]: { [key: string]: Json } };
    bindings.x.elementType = "$elem";
    bindings.y.elementType = "$elem";
    const genericDir = writeProject({ spec: generic, template: template({ body: "  y[i] = x[i] * params.alpha;" }) });
    const g = await cli(["build"], genericDir);
    expect(g.code).toBe(1);
    expect(codesIn(g.stderr)).toEqual(["element_type_mismatch"]);
    expect(g.stderr).toMatch(
      /^error\[element_type_mismatch\]: binding `x` of pass `p` holds tensor `x` \(T = float16\): .* of `f32` would read their bytes as f32$/m,
    );
    expectGolden("element_type_mismatch_derive", g);

    // The scalar of a vector element type counts, and a matching one builds.
    bindings.x.elementType = "vec4<f32>";
    generic.typeConstraints = { T: ["float32"] };
    const okDir = writeProject({ spec: generic, template: template({ body: "  y[i] = x[i].x * params.alpha;" }) });
    const ok = await cli(["build"], okDir);
    expect(ok.stderr).not.toContain("element_type_mismatch");
    expect(ok.code).toBe(0);
  });

  it("eval_error: a value computed for the build cannot be used (an element type WGSL does not have)", async () => {
    // The checker accepts any string expression as an element type; only its value at build time
    // (here "f64" for WG = 64) shows it is not one WGSL can bind.
    const spec = baseSpec();
    (spec.derive as { [key: string]: Json }).elem = '"f64" if tunables.WG > 32 else "f32"';
    (spec.bindings as { [key: string]: { [key: string]: Json } }).x.elementType = "$elem";
    const dir = writeProject({ spec, template: template({ body: "  y[i] = f32(x[i]) * params.alpha;" }) });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["eval_error"]);
    expect(r.stderr).toMatch(
      /^error\[eval_error\]: cannot declare the bindings of .*pass `p`.*: element type "f64" of binding x is not one of /m,
    );
    expect(r.stderr).toMatch(/^ {2}--> specs\/scale\.json:\d+:\d+ \(\/variants\/0\/passes\/0\)$/m);
    expect(r.stderr).toMatch(FRAME);
    expectGolden("eval_error", r);
  });

  it("a template value whose evaluation fails is reported with the failure, not as a missing instance", async () => {
    const spec = baseSpec();
    spec.tunables = { WG: { default: 64 }, SPLIT: { default: 1 } };
    (spec.derive as { [key: string]: Json }).perSplit = "tunables.WG // (tunables.SPLIT - 1)";
    const dir = writeProject({ spec, template: template({ body: "  // {{ perSplit }} per split\n  y[i] = x[i] * params.alpha;" }) });
    const r = await cli(["build"], dir);
    expect(r.stderr).toContain("`perSplit` (template of pass `p`; evaluating it fails: in `perSplit`: integer division by zero (64 / 0))");
  });

  it("no_variant_for_profile: every variant needs a feature the profile lacks (a warning)", async () => {
    const spec = baseSpec();
    (spec.variants as { [key: string]: Json }[])[0].requires = { features: ["shader-f16"] };
    const dir = writeProject({ spec });
    const r = await cli(["build"], dir);
    expect(codesIn(r.stderr)).toEqual(["no_variant_for_profile"]);
    expect(r.stderr).toMatch(
      /^warning\[no_variant_for_profile\]: kernel Scale has no variant on (profile core|a profile): every variant needs `shader-f16`, which (profile core|the profile) lacks$/m,
    );
    expect(r.stderr).toMatch(/^ {2}--> specs\/scale\.json(:\d+:\d+)? \(\/variants\)$/m);
    expect(r.code).toBe(0);
    expectGolden("no_variant_for_profile", r);
  });

  it("no_instances: a template reads a run-time value and the config lists no instance (a warning)", async () => {
    const dir = writeProject({ template: template({ body: "  // n = {{ n }}\n  y[i] = x[i] * params.alpha;" }) });
    const r = await cli(["build"], dir);
    expect(codesIn(r.stderr)).toEqual(["no_instances"]);
    expect(r.stderr).toMatch(
      /^warning\[no_instances\]: kernel Scale has templates that read per-model values, but kernelc\.config\.json lists no instances for it/m,
    );
    expect(r.stderr).toContain("= hint: add instances under instances.Scale");
    expect(r.code).toBe(0);
    expectGolden("no_instances", r);

    // With an instance pinning the value, the warning goes away and the shader is built.
    const pinned = writeProject({
      template: template({ body: "  // n = {{ n }}\n  y[i] = x[i] * params.alpha;" }),
      config: { instances: { Scale: [{ name: "n1024", values: { "dim(shapes.x, 0)": 1024 } }] } },
    });
    const ok = await cli(["build"], pinned);
    expect(ok.stderr).not.toContain("no_instances");
    expect(ok.code).toBe(0);
  });

  it("instance_invalid: instance leaves that are not leaves of the kernel, and a kernel no spec defines", async () => {
    const dir = writeProject({
      config: {
        instances: {
          Scale: [
            { name: "typo", values: { "attrs.alpa": 2 } },
            { name: "not-a-leaf", values: { "shapes.z": 3 } },
            { name: "syntax", values: { "dim(shapes.x,": 3 } },
          ],
          Nope: [{ name: "a", values: { "attrs.alpha": 1 } }],
        },
      },
    });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["instance_invalid", "instance_invalid", "instance_invalid", "instance_invalid"]);
    expect(r.stderr).toContain("instance typo of Scale: `attrs.alpa`: `alpa` is not an attribute of Scale");
    expect(r.stderr).toContain("= hint: did you mean `alpha`?");
    expect(r.stderr).toContain("instance not-a-leaf of Scale: `shapes.z`: not a run-time leaf");
    expect(r.stderr).toContain("the config lists instances for kernel `Nope`, which no spec defines");
    // Every one says how to fix it.
    expect(
      r.stderr
        .split("\n\n")
        .filter((block) => block.includes("error["))
        .every((block) => block.includes("= hint: ")),
    ).toBe(true);
    expect(r.stderr).toContain("  --> kernelc.config.json (/instances/Scale/0/values/attrs.alpa)");
    expectGolden("instance_invalid", r);
  });

  it("out_stale: build --check against a missing or edited out/", async () => {
    const dir = writeProject({});
    const missing = await cli(["build", "--check"], dir);
    expect(missing.code).toBe(1);
    expect(codesIn(missing.stderr)).toEqual(["out_stale"]);
    expect(missing.stderr).toMatch(/^error\[out_stale\]: out\/ does not exist: nothing was built there yet$/m);
    expect(missing.stderr).toContain("= hint: run `npx kernelc build` and commit the result");

    expect((await cli(["build"], dir)).code).toBe(0);
    expect(await cli(["build", "--check"], dir)).toMatchObject({ code: 0, stdout: "" });
    fs.appendFileSync(path.join(dir, "out", "profiles.json"), " ");
    const edited = await cli(["build", "--check"], dir);
    expect(edited.code).toBe(1);
    expectGolden("out_stale", edited);
  });
});

describe("config, command-line and lint diagnostics, rendered as text", () => {
  it("config_invalid: an unknown field of kernelc.config.json, with a frame and a did-you-mean", async () => {
    const dir = writeProject({ config: { profile: ["core"] } });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["config_invalid"]);
    expect(r.stderr).toMatch(/^ {2}--> kernelc\.config\.json:\d+:\d+ \(\/profile\)$/m);
    expect(r.stderr).toMatch(FRAME);
    expect(r.stderr).toContain("did you mean");
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
    expectGolden("config_invalid", r);
  });

  it("profile_invalid: a defined profile with a limit WebGPU does not have", async () => {
    const dir = writeProject({
      config: { defineProfiles: [{ name: "tiny", limits: { maxComputeInvocationsPerWorkgroupp: 64 } }], profiles: ["tiny"] },
    });
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["profile_invalid"]);
    expect(r.stderr).toMatch(FRAME);
    expectGolden("profile_invalid", r);
  });

  it("unknown_profile: a profile name in the config and on the command line", async () => {
    const inConfig = writeProject({ config: { profiles: ["cor"] } });
    const r = await cli(["build"], inConfig);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["unknown_profile"]);
    expect(r.stderr).toMatch(FRAME);
    expect(r.stderr).toContain("did you mean `core`?");
    expectGolden("unknown_profile", r);

    const onCommandLine = await cli(["build", "--profile", "nope"], writeProject({}));
    expect(onCommandLine.code).toBe(1);
    expect(onCommandLine.stderr).toMatch(/^error\[unknown_profile\]: unknown profile `nope`\n {2}= hint: known profiles: desktop-64k, /m);
  });

  it("usage: explain of a kernel that does not exist", async () => {
    const r = await cli(["explain", "Scal", "--profile", "core"], writeProject({}));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(codesIn(r.stderr)).toEqual(["usage"]);
    expectGolden("usage", r);
  });

  it("file_unreadable: lint of a path that does not exist", async () => {
    const dir = writeProject({});
    const r = await cli(["lint", "specs/missing.json"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["file_unreadable"]);
    expectGolden("file_unreadable", r, dir);
  });

  it("no_specs: lint of a specs folder that holds no spec file", async () => {
    const dir = writeProject({});
    fs.rmSync(path.join(dir, "specs", "scale.json"));
    const r = await cli(["lint"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["no_specs"]);
    expectGolden("no_specs", r, dir);
  });

  it("call_invalid: explain --call of a call of the wrong rank, at its JSON pointer with a frame", async () => {
    const dir = writeProject({});
    const call = { inputs: { x: { shape: [64, 2], dtype: "float32" } }, outputs: { y: { shape: [64], dtype: "float32" } } };
    fs.writeFileSync(path.join(dir, "call.json"), JSON.stringify(call, null, 2) + "\n");
    const r = await cli(["explain", "Scale", "--profile", "core", "--call", "call.json"], dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("error (invalid_call): Scale: input `x` must have rank 1, got 2\n");
    expect(codesIn(r.stderr)).toEqual(["call_invalid"]);
    expect(r.stderr).toMatch(FRAME);
    expectGolden("call_invalid", r, dir);
  });

  it("call_rejected: explain --call of a call no variant accepts, with a note per variant", async () => {
    const spec = baseSpec();
    const variants = spec.variants as { [key: string]: Json }[];
    variants[0]!.when = ["n % 4 == 0"];
    const dir = writeProject({ spec });
    const call = { inputs: { x: { shape: [6], dtype: "float32" } }, outputs: { y: { shape: [6], dtype: "float32" } } };
    fs.writeFileSync(path.join(dir, "call.json"), JSON.stringify(call, null, 2) + "\n");
    const r = await cli(["explain", "Scale", "--profile", "core", "--call", "call.json"], dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("  rejected main: `n % 4 == 0` is false (n % 4 = 2)\n");
    expect(codesIn(r.stderr)).toEqual(["call_rejected"]);
    expectGolden("call_rejected", r, dir);
  });

  it("not_callable, unused_derive, unused_tunable: lint with a frame at each", async () => {
    const spec = baseSpec();
    spec.tunables = { WG: { default: 64 }, UNUSED: { default: 2 } };
    (spec.derive as { [key: string]: Json }).spare = "n * 2";
    const warned = await cli(["lint"], writeProject({ spec }));
    expect(warned.code).toBe(0);
    expect(codesIn(warned.stderr)).toEqual(["unused_tunable", "unused_derive"]);
    expect(warned.stderr.match(new RegExp(FRAME.source, "gm"))).toHaveLength(2);
    expectGolden("unused_derive+unused_tunable", warned);

    const broken = baseSpec();
    (broken.derive as { [key: string]: Json }).groups = "ceilDiv(n, wg)(2)";
    const r = await cli(["lint"], writeProject({ spec: broken }));
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["not_callable"]);
    expect(r.stderr).toMatch(FRAME);
    expectGolden("not_callable", r);
  });

  it("unused_attribute, unused_intermediate: lint with a frame at each", async () => {
    const spec = baseSpec();
    spec.attributes = { alpha: { default: 1 }, beta: {} };
    const variants = spec.variants as { [key: string]: Json }[];
    variants[0]!.intermediates = [{ id: "acc", dtype: "float32", shape: "[n]" }];
    const warned = await cli(["lint"], writeProject({ spec }));
    expect(warned.code).toBe(0);
    expect(codesIn(warned.stderr)).toEqual(["unused_attribute", "unused_intermediate"]);
    expect(warned.stderr.match(new RegExp(FRAME.source, "gm"))).toHaveLength(2);
    expectGolden("unused_attribute+unused_intermediate", warned);
  });

  it("unknown_derive: the spec's `explain` list names no derive entry (with a did-you-mean)", async () => {
    const spec = baseSpec();
    spec.explain = ["wg", "grups"];
    const r = await cli(["lint"], writeProject({ spec }));
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["unknown_derive"]);
    expect(r.stderr).toMatch(FRAME);
    expect(r.stderr).toContain("did you mean `groups`?");
    expectGolden("unknown_derive", r);

    // A listed name counts as a use: a derive entry only `explain` names is not reported unused.
    const listed = baseSpec();
    (listed.derive as { [key: string]: Json }).spare = "n * 2";
    listed.explain = ["spare"];
    const ok = await cli(["lint"], writeProject({ spec: listed }));
    expect(ok.code).toBe(0);
    expect(codesIn(ok.stderr)).toEqual([]);
  });

  it("tune_unavailable: the measurement cache's folder is a file (refused before any GPU is opened)", async () => {
    const dir = writeProject({});
    fs.writeFileSync(path.join(dir, ".kernelc-cache"), "not a folder\n");
    const r = await cli(["tune", "--profile", "core"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["tune_unavailable"]);
    expect(fs.readFileSync(path.join(dir, ".kernelc-cache"), "utf8")).toBe("not a folder\n");
    expect(fs.existsSync(path.join(dir, "kernelc.tune.json"))).toBe(false);
    expectGolden("tune_unavailable", r);
  });
  it("out_unsafe and out_not_ours: an output folder kernelc must not replace", async () => {
    const unsafe = writeProject({});
    const r = await cli(["build", "--out", "."], unsafe);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toEqual(["out_unsafe"]);
    expectGolden("out_unsafe", r, fs.realpathSync(unsafe));

    const foreign = writeProject({});
    fs.mkdirSync(path.join(foreign, "out"));
    fs.writeFileSync(path.join(foreign, "out", "notes.txt"), "mine\n");
    const n = await cli(["build"], foreign);
    expect(n.code).toBe(1);
    expect(codesIn(n.stderr)).toEqual(["out_not_ours"]);
    expect(fs.readFileSync(path.join(foreign, "out", "notes.txt"), "utf8")).toBe("mine\n");
    expectGolden("out_not_ours", n, fs.realpathSync(foreign));
  });
  it("binding_unused and non_finite_value: a binding the shader never uses, a constant that overflows", async () => {
    const unused = await cli(["build"], writeProject({ template: template({ body: "  y[i] = params.alpha;" }) }));
    expect(codesIn(unused.stderr)).toContain("binding_unused");
    expectGolden("binding_unused", unused);
    // A binding read only after a keyword (`return x[i]`, in a helper function) is used.
    const helper = template({ header: "fn read_x(i: u32) -> f32 {\n  return x[i];\n}", body: "  y[i] = read_x(i) * params.alpha;" });
    const used = await cli(["build"], writeProject({ template: helper }));
    expect(used.code).toBe(0);
    expect(codesIn(used.stderr)).not.toContain("binding_unused");

    const spec = baseSpec();
    (spec.derive as { [key: string]: Json }).huge = "1e300 * 1e300";
    const r = await cli(["lint"], writeProject({ spec }));
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toContain("non_finite_value");
    expect(r.stderr).toMatch(FRAME);
    expectGolden("non_finite_value", r);
  });
  it("uniform_out_of_range: a uniform field known on a profile (from a device limit) that does not fit u32 stops the build, out/ untouched", async () => {
    const spec = baseSpec();
    const params = (spec.bindings as { [key: string]: { struct: { [key: string]: Json }[] } }).params;
    params.struct.push({ name: "cap", type: "u32", value: "device.limits.maxStorageBufferBindingSize * 64" });
    const dir = writeProject({ spec, template: template({ body: "  y[i] = x[i] * params.alpha + f32(params.cap);" }) });
    // Lint cannot know the limit: clean.
    expect((await cli(["lint", "--no-render"], dir)).code).toBe(0);
    const r = await cli(["build"], dir);
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toContain("uniform_out_of_range");
    expect(r.stderr).toMatch(/^error\[uniform_out_of_range\]: uniform field `params\.cap` \(u32\) is always \d+ on profile [\w-]+/m);
    expect(r.stderr).toMatch(/^ {2}--> specs\/scale\.json:\d+:\d+ \(\/bindings\/params\/struct\/2\/value\)$/m);
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
    expectGolden("uniform_out_of_range", r);
  });

  it("too_many_candidates, wgsl_value_invalid, template_limit_exceeded: the safety caps, rendered", async () => {
    const many = baseSpec();
    const values = Array.from({ length: 64 }, (_, i) => i + 1);
    for (const t of ["A", "B", "C", "D", "E"]) (many.tunables as { [key: string]: Json })[t] = { default: 1, values };
    const caps = await cli(["build"], writeProject({ spec: many }));
    expect(caps.code).toBe(1);
    expect(codesIn(caps.stderr)).toContain("too_many_candidates");
    expectGolden("too_many_candidates", caps);

    const printed = baseSpec();
    (printed.derive as { [key: string]: Json }).label = '"a b;\\nfn evil() {}"';
    const value = await cli(["lint"], writeProject({ spec: printed, template: template({ header: "// {{ label }}" }) }));
    expect(value.code).toBe(1);
    expect(codesIn(value.stderr)).toContain("wgsl_value_invalid");
    expect(value.stderr).toMatch(FRAME);
    expectGolden("wgsl_value_invalid", value);

    const wide = baseSpec();
    (wide.derive as { [key: string]: Json }).width = "1000000000";
    const loop = await cli(
      ["build"],
      writeProject({ spec: wide, template: template({ header: "{% for i in range(width) %}// {{ i }}\n{% endfor %}" }) }),
    );
    expect(loop.code).toBe(1);
    expect(codesIn(loop.stderr)).toContain("template_limit_exceeded");
    expectGolden("template_limit_exceeded", loop);
  });
  it("derive_too_deep: a derive chain nested past the cap", async () => {
    const deep = baseSpec();
    const derive = deep.derive as { [key: string]: Json };
    derive.d0 = "n";
    for (let i = 1; i <= 700; i++) derive[`d${i}`] = `d${i - 1} + 1`;
    derive.groups = "ceilDiv(d700, wg)";
    const r = await cli(["lint", "--no-render"], writeProject({ spec: deep }));
    expect(r.code).toBe(1);
    expect(codesIn(r.stderr)).toContain("derive_too_deep");
    expectGolden("derive_too_deep", r);
  });
});
