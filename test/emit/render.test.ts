/**
 * Template rendering: resource declarations, golden renders of the seed template, the loader's
 * confinement to templates/, errors with template lines, the prototype-free context, the tidy,
 * and the WGSL-line → template-line map (checked against Tint's reported lines).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { instrumentTemplate, RenderError, TemplateRenderer, tidyText } from "../../src/emit/render.js";
import { WgslValidator } from "../../src/emit/validate-wgsl.js";
import { type DeclBinding, declareResources, resourceDeclarations, uniformSize } from "../../src/emit/wgsl-declarations.js";
import { renderWithDeclarations } from "../../src/emit/shader.js";
import { TemplateDigests } from "../../src/emit/shader-cache.js";
import { f16StorageFor } from "../../src/plan/f16-storage.js";
import { updatingGoldens } from "../support/golden.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TEMPLATES = path.resolve(HERE, "../../templates");
const GOLDEN = path.join(HERE, "golden");

describe("resourceDeclarations", () => {
  const params: DeclBinding = {
    binding: 2,
    name: "params",
    type: "uniform",
    fields: [
      { name: "seqLen", type: "u32" },
      { name: "scale", type: "f32" },
    ],
  };

  test("storage, read-only storage and uniform bindings, with enable f16", () => {
    const text = resourceDeclarations(
      [
        { binding: 0, name: "q", type: "read-only-storage", elementType: "vec4<f16>" },
        { binding: 1, name: "out", type: "storage", elementType: "f32" },
        params,
      ],
      true,
    );
    expect(text).toBe(
      [
        "enable f16;",
        "",
        "@group(0) @binding(0) var<storage, read> q: array<vec4<f16>>;",
        "@group(0) @binding(1) var<storage, read_write> out: array<f32>;",
        "struct Params {",
        "  seqLen: u32,",
        "  scale: f32,",
        "}",
        "@group(0) @binding(2) var<uniform> params: Params;",
      ].join("\n"),
    );
  });

  test("without f16 there is no enable line", () => {
    expect(resourceDeclarations([{ binding: 0, name: "x", type: "read-only-storage", elementType: "i32" }], false)).toBe(
      "@group(0) @binding(0) var<storage, read> x: array<i32>;",
    );
  });

  test.each([
    ["a;b", "f32"],
    ["fn", "f32"],
    ["struct", "f32"],
    ["__x", "f32"],
    ["_", "f32"],
    ["1a", "f32"],
    ["f32", "f32"],
    ["vec4", "f32"],
    ["", "f32"],
    ["ok", "f32>; fn evil"],
    ["ok", "f64"],
    ["ok", "vec4< f32>"],
    ["ok", "vec5<f32>"],
    ["ok", "f16"],
  ])("rejects name %j with element type %j", (name, elementType) => {
    expect(() => resourceDeclarations([{ binding: 0, name, type: "storage", elementType }], false)).toThrow(Error);
  });

  test("rejects bad uniforms and duplicate names or binding numbers", () => {
    expect(() => resourceDeclarations([{ binding: 0, name: "params", type: "uniform", fields: [] }], false)).toThrow(/no fields/);
    expect(() =>
      resourceDeclarations([{ binding: 0, name: "params", type: "uniform", fields: [{ name: "a", type: "f64" as "f32" }] }], false),
    ).toThrow(/only u32/);
    expect(() =>
      resourceDeclarations([{ binding: 0, name: "params", type: "uniform", fields: [{ name: "a}", type: "u32" }] }], false),
    ).toThrow(/identifier/);
    const a: DeclBinding = { binding: 0, name: "a", type: "storage", elementType: "u32" };
    expect(() => resourceDeclarations([a, { ...a, binding: 1 }], false)).toThrow(/two bindings are named/);
    expect(() => resourceDeclarations([a, { ...a, name: "b" }], false)).toThrow(/@binding\(0\)/);
    expect(() => resourceDeclarations([{ ...a, binding: -1 }], false)).toThrow(/non-negative/);
    expect(() => resourceDeclarations([{ ...a, type: "texture" as "storage" }], false)).toThrow(/buffer type/);
  });

  test("uniformSize rounds 4-byte fields up to 16", () => {
    const f = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `f${i}`, type: "u32" as const }));
    expect([1, 2, 4, 5, 8, 9].map((n) => uniformSize(f(n)))).toEqual([16, 16, 16, 32, 32, 48]);
  });
});

interface GoldenInput {
  shader: string;
  features: string[];
  bindings: DeclBinding[];
  context: Record<string, unknown>;
}

function goldenCases(): { name: string; input: GoldenInput; expectedPath: string }[] {
  return readdirSync(GOLDEN, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => ({
      name: d.name,
      input: JSON.parse(readFileSync(path.join(GOLDEN, d.name, "input.json"), "utf8")) as GoldenInput,
      expectedPath: path.join(GOLDEN, d.name, "_expected.wgsl"),
    }));
}

describe("golden renders of templates/", () => {
  const renderer = new TemplateRenderer(TEMPLATES);
  let validator: WgslValidator;
  beforeAll(async () => {
    validator = await WgslValidator.create();
  });
  afterAll(() => validator?.dispose());

  test.each(goldenCases())("$name", async ({ input, expectedPath }) => {
    const form = f16StorageFor(input.features);
    const { wgsl, lineMap } = renderWithDeclarations(
      renderer,
      TEMPLATES,
      input.shader,
      input.context,
      declareResources(input.bindings, form),
      form,
    ).rendered;
    if (updatingGoldens()) writeFileSync(expectedPath, wgsl);
    expect(wgsl).toBe(readFileSync(expectedPath, "utf8"));
    // Rendered once and filled in (the seed templates print the declarations as they stand): the same text and line map.
    expect(new TemplateDigests(TEMPLATES).printsDeclarationsAsIs(input.shader)).toBe(true);
    const once = renderWithDeclarations(
      renderer,
      TEMPLATES,
      input.shader,
      input.context,
      declareResources(input.bindings, form),
      form,
      true,
    ).rendered;
    expect(once.wgsl).toBe(wgsl);
    expect(once.lineMap).toEqual(lineMap);
    expect(await validator.validate(wgsl, input.features)).toEqual([]);
    // Every output line maps to a template line (of the template or a file it imports) whose
    // text, for plain text lines, is that line.
    const templateLines = (file: string): string[] => readFileSync(path.join(TEMPLATES, file), "utf8").split("\n");
    const wgslLines = wgsl.split("\n").slice(0, -1);
    expect(lineMap).toHaveLength(wgslLines.length);
    wgslLines.forEach((line, i) => {
      const src = templateLines(lineMap[i].file)[lineMap[i].line - 1];
      expect(src, `output line ${i + 1}`).toBeDefined();
      if (!src.includes("{{") && !src.includes("{%") && line !== "") expect(src.trimEnd()).toBe(line);
    });
  });

  test("the two cases differ where the template branches", () => {
    const cases = Object.fromEntries(goldenCases().map((c) => [c.name, readFileSync(c.expectedPath, "utf8")]));
    expect(cases["sparse-kv-append-packed-rotary"]).toContain("const PACKED_K_OFFSET: u32 = 4096u;");
    expect(cases["sparse-kv-append-packed-rotary"]).toContain(
      "fn rotary_slot(d: u32) -> u32 {\n  return select(d - ROTARY_HALF, d, d < ROTARY_HALF);",
    );
    expect(cases["sparse-kv-append-separate"]).toContain("const KV_HIDDEN: u32 = 1024u;");
    expect(cases["sparse-kv-append-separate"]).not.toContain("ROTARY");
    expect(cases["sparse-kv-append-separate"]).toContain("store_raw2_present_value(dst, raw2_value(v_base + d));");
  });
});

/** A fresh templates folder with the given files; returns its path. */
function templatesWith(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "kernelc-tpl-"));
  const root = path.join(dir, "templates");
  mkdirSync(root);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  return root;
}

const created: string[] = [];
afterAll(() => {
  for (const dir of created) rmSync(path.dirname(dir), { recursive: true, force: true });
});

function setup(files: Record<string, string>): {
  root: string;
  render: (shader: string, context?: Record<string, unknown>) => ReturnType<TemplateRenderer["render"]>;
} {
  const root = templatesWith(files);
  created.push(root);
  const renderer = new TemplateRenderer(root);
  return { root, render: (shader, context = {}) => renderer.render({ templatesDir: root, shader, context, declarations: "// decls" }) };
}

function renderError(fn: () => unknown): RenderError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RenderError) return err;
    throw new Error(`expected a RenderError, got ${String(err)}`);
  }
  throw new Error("expected a RenderError, nothing was thrown");
}

describe("loader confinement", () => {
  const { root, render } = setup({
    "up.jinja": 'a\n{% include "../outside.txt" %}\n',
    "abs.jinja": '{% include "/etc/passwd" %}\n',
    "link.jinja": '{% include "sub/evil.jinja" %}\n',
    "import-up.jinja": '{% import "../outside.txt" as m %}\n',
    "from-up.jinja": '{% from "sub/../../outside.txt" import x %}\n',
    "backslash.jinja": '{% include "sub\\\\in.jinja" %}\n',
    "inside-link.jinja": '{% include "sub/ok-link.jinja" %}\n',
    "down-up.jinja": '{% include "sub/../sub/in.jinja" %}\n',
    "import-down-up.jinja": '{% from "lib/../sub/./in.jinja" import x %}\n',
    "dot.jinja": '{% include "./sub/in.jinja" %}\n',
    "typo.jinja": '{% include "sub/inn.jinja" %}\n',
    "bare.jinja": '{% from "in.jinja" import x %}\n',
    "sub/in.jinja": "inner {{ DISPATCH_FOLD_WIDTH }}\n",
  });
  const outside = path.join(path.dirname(root), "outside.txt");
  writeFileSync(outside, "SECRET\n");
  symlinkSync(outside, path.join(root, "sub", "evil.jinja"));
  symlinkSync(path.join(root, "sub", "in.jinja"), path.join(root, "sub", "ok-link.jinja"));

  test.each(["up.jinja", "abs.jinja", "link.jinja", "import-up.jinja", "from-up.jinja", "backslash.jinja"])(
    "%s cannot read outside templates/",
    (shader) => {
      const err = renderError(() => render(shader));
      expect(err.message).not.toContain("SECRET");
      expect(err.message).toMatch(/cannot load template/);
      expect(err.hint).toMatch(/^name a file inside the templates folder by its path relative to that folder/);
      expect(err.file).toBe(shader);
      expect(err.message).not.toMatch(/\n\s+at /);
    },
  );

  test("a path with `..` that goes up out of templates/ is refused as leaving it", () => {
    for (const shader of ["up.jinja", "import-up.jinja", "from-up.jinja"])
      expect(renderError(() => render(shader)).message).toMatch(/: the path leaves the templates folder through `\.\.`$/);
  });

  test("a path with `..` or `.` that stays inside templates/ is refused for the segments, with the path to write", () => {
    expect(renderError(() => render("down-up.jinja")).message).toBe(
      'cannot load template "sub/../sub/in.jinja": the path has `..` segments, which a template path may not have (it is taken as written, not normalized): write `sub/in.jinja`',
    );
    expect(renderError(() => render("import-down-up.jinja")).message).toBe(
      'cannot load template "lib/../sub/./in.jinja": the path has `..` segments, which a template path may not have (it is taken as written, not normalized): write `sub/in.jinja`',
    );
    expect(renderError(() => render("dot.jinja")).message).toBe(
      'cannot load template "./sub/in.jinja": the path has `.` or empty segments, which a template path may not have (it is taken as written, not normalized): write `sub/in.jinja`',
    );
  });

  test("a symlink to a file inside templates/ is fine", () => {
    expect(render("inside-link.jinja").wgsl).toBe("inner 65535\n");
  });

  test("the requested shader path itself is checked", () => {
    expect(renderError(() => render("../outside.txt")).message).toMatch(/`\.\.`/);
    expect(renderError(() => render("/etc/passwd")).message).toMatch(/absolute/);
    expect(renderError(() => render("sub/evil.jinja")).message).toMatch(/outside the templates folder/);
  });

  test("a misspelt include or import names the closest template in the hint", () => {
    for (const shader of ["typo.jinja", "bare.jinja"]) {
      const err = renderError(() => render(shader));
      expect(err.message).toMatch(/^template not found: /);
      expect(err.hint).toMatch(
        /^did you mean `sub\/in\.jinja`\? name a file inside the templates folder by its path relative to that folder/,
      );
    }
  });

  test("a missing template is a RenderError", () => {
    const err = renderError(() => render("nope.jinja"));
    expect(err.message).toMatch(/template not found/);
    expect(err.hint).toMatch(/relative to that folder \(not to the including template\)/);
  });
});

describe("render errors", () => {
  const { render } = setup({
    "undef.jinja": "// line 1\nconst A: u32 = {{ a }}u;\nconst B: u32 = {{ missing }}u;\n",
    "member.jinja": "x\n\ny {{ tunables.NOPE }}\n",
    "syntax.jinja": "a\nb\n{% if %}\n{% endif %}\n",
    "inc.jinja": 'top\n{% include "undef.jinja" %}\n',
    "imp.jinja": '{% from "lib.jinja" import m %}\nq\n{{ m() }}\n{{ x + 1 }}\n',
    "lib.jinja": "z\n{% macro m() %}\nw\nw2 {{ zz }}\n{% endmacro %}\n",
  });

  test("an undefined variable names the template line and the expression", () => {
    const err = renderError(() => render("undef.jinja", { a: 1 }));
    expect(err).toMatchObject({ file: "undef.jinja", line: 3 });
    expect(err.column).toBeGreaterThan(0);
    expect(err.message).toContain("`{{ missing }}` is undefined");
  });

  test("an undefined member of tunables", () => {
    const err = renderError(() => render("member.jinja", { tunables: { WG: 64 } }));
    expect(err).toMatchObject({ file: "member.jinja", line: 3 });
    expect(err.message).toContain("{{ tunables.NOPE }}");
  });

  test("an undefined name or member says which part is missing, with a did-you-mean among what is there", () => {
    const member = renderError(() => render("member.jinja", { tunables: { WG: 64, NOPES: 1 } }));
    expect(member.hint).toBe("`tunables` has no `NOPE` (did you mean `NOPES`?); it has 2 names: `WG`, `NOPES`");
    // A bare name: the context holds only the derive values the template reads, so no guess.
    expect(renderError(() => render("undef.jinja", { a: 1, misssing: 2 })).hint).toBeUndefined();
  });

  test("a syntax error", () => {
    const err = renderError(() => render("syntax.jinja"));
    expect(err).toMatchObject({ file: "syntax.jinja", line: 3 });
    expect(err.message).toMatch(/unexpected token/);
    expect(err.message).not.toContain("syntax.jinja");
  });

  test("an undefined value in a macro imported from another file points into that file", () => {
    const err = renderError(() => render("imp.jinja"));
    expect(err).toMatchObject({ file: "lib.jinja", line: 4, column: 4 });
    expect(err.message).toContain("`{{ zz }}` is undefined");
  });

  test("an error in an included template points into that template", () => {
    const err = renderError(() => render("inc.jinja", { a: 1 }));
    expect(err).toMatchObject({ file: "undef.jinja", line: 3 });
  });
});

describe("context and Jinja features", () => {
  const { render } = setup({
    "proto.jinja": "{{ constructor }}\n",
    "proto-member.jinja": "{{ dtypes.constructor }}\n",
    "proto-test.jinja":
      "{% if toString is defined or valueOf is defined or dtypes.hasOwnProperty is defined %}leak{% else %}clean{% endif %}\n",
    "seed-features.jinja": [
      '{% macro idx(workgroupSize, name="i", bound="params.count") %}',
      '{% set wgTerm = workgroupSize ~ "u" if workgroupSize is number else workgroupSize %}',
      "  let {{ name }} = gid.x * {{ DISPATCH_FOLD_WIDTH }}u * {{ wgTerm }}; // {{ bound }}{% endmacro %}",
      "{{ idx(64) }}",
      '{{ idx("WG", "j") }}',
      "{{ env.wgsl.resourceDeclarations }}",
      "{{ dtypes.T }} {{ tunables.WG }} {{ flag }}",
      "",
    ].join("\n"),
  });

  test("`constructor` is refused; other Object.prototype names are plain names, not found unless handed in", () => {
    expect(renderError(() => render("proto.jinja")).message).toMatch(/`constructor` is not allowed/);
    expect(renderError(() => render("proto-member.jinja", { dtypes: { T: "f16" } })).message).toMatch(/`constructor` is not allowed/);
    expect(render("proto-test.jinja", { dtypes: { T: "f16" } }).wgsl).toBe("clean\n");
    expect(render("proto-test.jinja", { dtypes: { T: "f16", hasOwnProperty: "x" } }).wgsl).toBe("leak\n");
  });

  test("macros with defaults, ~, `is number`, DISPATCH_FOLD_WIDTH, env, nested objects", () => {
    const out = render("seed-features.jinja", { dtypes: { T: "f16" }, tunables: { WG: 128 }, flag: true }).wgsl;
    expect(out).toBe(
      [
        "  let i = gid.x * 65535u * 64u; // params.count",
        "  let j = gid.x * 65535u * WG; // params.count",
        "// decls",
        "f16 128 true",
        "",
      ].join("\n"),
    );
  });

  test("the caller's context object is not modified", () => {
    const ctx = { dtypes: { T: "f16" }, tunables: { WG: 1 }, flag: false };
    render("seed-features.jinja", ctx);
    expect(ctx).toEqual({ dtypes: { T: "f16" }, tunables: { WG: 1 }, flag: false });
  });
});

describe("tidy", () => {
  test.each([
    ["a  \n\n\n\nb\t\n\n", "a\n\nb\n"],
    ["\n\n  \nx\n", "x\n"],
    ["x", "x\n"],
    ["", "\n"],
    ["a\r\n\r\n\r\nb", "a\n\nb\n"],
  ])("%j -> %j", (raw, tidy) => {
    expect(tidyText(raw)).toBe(tidy);
  });
});

describe("line map", () => {
  let validator: WgslValidator;
  beforeAll(async () => {
    validator = await WgslValidator.create();
  });
  afterAll(() => validator?.dispose());

  const lib = [
    "{% macro helper() %}", // 1
    "fn helper_fn() -> u32 {", // 2
    "  return 1u + true;", // 3: the error inside an imported macro
    "}", // 4
    "{% endmacro %}", // 5
    "",
  ].join("\n");
  const main = [
    "{{ env.wgsl.resourceDeclarations }}", // 1
    '{% from "lib.wgsl.jinja" import helper %}', // 2
    "", // 3
    "const N: u32 = {{ n }}u;", // 4
    "{# a comment", // 5
    "   spanning {{ lines }} #}", // 6
    "{% if withHelper %}", // 7
    "{{ helper() }}", // 8
    "{% endif %}", // 9
    "@compute @workgroup_size(1)", // 10
    "fn main() {", // 11
    "{% for i in range(2) %}", // 12
    "  let v{{ i }} = N;", // 13
    "{% endfor %}", // 14
    "  let bad: u32 = undefined_thing;", // 15: the error in the main template
    "}", // 16
    "",
  ].join("\n");
  const { root, render } = setup({ "main.wgsl.jinja": main, "lib.wgsl.jinja": lib });

  test("Tint's error lines map back to the template line, across an imported macro", async () => {
    const rendered = render("main.wgsl.jinja", { n: 4, withHelper: false });
    const problems = await validator.validate(rendered.wgsl, []);
    expect(problems).toHaveLength(1);
    const wgslLine = problems[0].line;
    expect(rendered.wgsl.split("\n")[wgslLine - 1]).toContain("undefined_thing");
    expect(rendered.lineMap[wgslLine - 1]).toEqual({ file: "main.wgsl.jinja", line: 15 });
    expect(rendered.mapPosition(wgslLine, problems[0].column)).toEqual({ file: "main.wgsl.jinja", line: 15 });

    const withHelper = render("main.wgsl.jinja", { n: 4, withHelper: true });
    const p2 = (await validator.validate(withHelper.wgsl, [])).find((p) => withHelper.wgsl.split("\n")[p.line - 1].includes("1u + true"));
    expect(p2).toBeDefined();
    expect(withHelper.lineMap[p2!.line - 1]).toEqual({ file: "lib.wgsl.jinja", line: 3 });
    expect(withHelper.lineMap).toEqual([
      { file: "main.wgsl.jinja", line: 1 }, // // decls
      { file: "main.wgsl.jinja", line: 1 }, // (blank)
      { file: "main.wgsl.jinja", line: 4 },
      { file: "main.wgsl.jinja", line: 4 }, // (blank: the comment's newline)
      { file: "lib.wgsl.jinja", line: 2 },
      { file: "lib.wgsl.jinja", line: 3 },
      { file: "lib.wgsl.jinja", line: 4 },
      { file: "lib.wgsl.jinja", line: 4 }, // (blank: the macro's last newline and line 8's)
      { file: "main.wgsl.jinja", line: 10 },
      { file: "main.wgsl.jinja", line: 11 },
      { file: "main.wgsl.jinja", line: 13 },
      { file: "main.wgsl.jinja", line: 13 },
      { file: "main.wgsl.jinja", line: 15 },
      { file: "main.wgsl.jinja", line: 16 },
    ]);
    expect(existsSync(path.join(root, "main.wgsl.jinja"))).toBe(true);
  });

  test("a column picks the template line within a line that mixes two", () => {
    const { render: r } = setup({
      "mix.jinja": "{% macro ty() %}\nvec4<f32>{% endmacro %}\nvar<private> x: {{ ty() }};\n",
    });
    const out = r("mix.jinja");
    expect(out.wgsl).toBe("var<private> x: vec4<f32>;\n");
    expect(out.mapPosition(1, 1)).toEqual({ file: "mix.jinja", line: 3 });
    expect(out.mapPosition(1, 17)).toEqual({ file: "mix.jinja", line: 2 });
    expect(out.lineMap).toEqual([{ file: "mix.jinja", line: 3 }]);
  });

  test("when markers change what the template computes, lines are matched by text", () => {
    const { render: r } = setup({
      "capture.jinja": [
        "{% set body %}",
        "abc",
        "{% endset %}",
        "const A: u32 = 1u;",
        "{% if body == 'abc\\n' %}",
        "const OK: u32 = 2u;",
        "{% endif %}",
        "const C: u32 = 3u;",
        "",
      ].join("\n"),
    });
    const out = r("capture.jinja");
    expect(out.wgsl).toBe("const A: u32 = 1u;\nconst OK: u32 = 2u;\nconst C: u32 = 3u;\n");
    expect(out.lineMap.map((l) => l.line)).toEqual([4, 4, 8]);
  });

  test("a line that starts with tags or a comment and then writes is traced to itself, not to the line before", () => {
    const { render: r } = setup({
      "tags.jinja": [
        "const A: u32 = 1u;", // 1
        "{% set b = 2 %}const B: u32 = {{ b }}u;", // 2
        "{% if true %}const C: u32 = 3u;", // 3
        "{% endif %}", // 4
        "{# note #}{% for i in range(1) -%}  const D: u32 = 4u;", // 5
        "{% endfor %}", // 6
        "{% if true %}", // 7
        "const E: u32 = 5u;", // 8
        "{% endif %}", // 9
        "",
      ].join("\n"),
    });
    const out = r("tags.jinja");
    expect(out.wgsl).toBe("const A: u32 = 1u;\nconst B: u32 = 2u;\nconst C: u32 = 3u;\nconst D: u32 = 4u;\nconst E: u32 = 5u;\n");
    expect(out.lineMap.map((l) => l.line)).toEqual([1, 2, 3, 5, 8]);
  });

  test("instrumentation marks text and output lines only", () => {
    const src = ["a", "  {{ b }}", "{% if c %}", "{# x", "y #}", "{{- d }}", "{{ 'e", "f' }}", "g"].join("\n");
    const marked = instrumentTemplate(src, 7)
      .split("\n")
      .map((l, i) => (l.includes("\u2063") ? i + 1 : 0))
      .filter((n) => n > 0);
    expect(marked).toEqual([1, 2, 7, 9]);
    expect(instrumentTemplate(src, 7).split("\n")[1]).toBe("  \u20637:2\u2063{{ b }}");
  });
});
