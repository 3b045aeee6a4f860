/**
 * Which templates print `env.wgsl.resourceDeclarations` as it stands (so that one render, filled in
 * afterwards, is the render with any declarations), and that the filled-in render is that render.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { declarationPrints } from "../../src/emit/declarations-print.js";
import { TemplateRenderer } from "../../src/emit/render.js";
import { TemplateDigests } from "../../src/emit/shader-cache.js";

const D = "{{ env.wgsl.resourceDeclarations }}";

describe("declarationPrints", () => {
  test.each([
    [`${D}\nfn main() {}`, true],
    [`{{- env.wgsl.resourceDeclarations -}}\n{{ env.wgsl.scalar.x }} {{ env.wgsl.storage.x }} {{ env.wgsl.f16Storage }}`, true],
    [`{% if a %}${D}{% else %}{% for i in range(2) %}${D}{% endfor %}{% endif %}`, true],
    [`{{ env.wgsl["resourceDeclarations"] }}`, true],
    ["no declarations at all", true],
    [`{% from "lib.jinja" import m %}${D}`, true],
    // What else could be done with the text: transform, test, measure, capture, pass on.
    ["{{ env.wgsl.resourceDeclarations | indent(2) }}", false],
    ["{{ env.wgsl.resourceDeclarations if a else '' }}", false],
    ["{% if env.wgsl.resourceDeclarations %}x{% endif %}", false],
    ["{% if 'load_' in env.wgsl.resourceDeclarations %}x{% endif %}", false],
    ["{{ env.wgsl.resourceDeclarations.length }}", false],
    ["{% set d = env.wgsl.resourceDeclarations %}{{ d }}", false],
    [`{% set d %}${D}{% endset %}{{ d | upper }}`, false],
    [`{% filter upper %}${D}{% endfilter %}`, false],
    [`{% macro m() %}${D}{% endmacro %}{{ m() | lower }}`, false],
    [`{% macro m() %}{{ caller() | upper }}{% endmacro %}{% call m() %}${D}{% endcall %}`, false],
    [`{% macro m() %}{% include "x.jinja" %}{% endmacro %}{{ m() }}`, false],
    ["{% for k, v in env.wgsl %}{{ v }}{% endfor %}", false],
    ["{{ env }}", false],
    ["{% set env = 1 %}", false],
    ["{% include name %}", false],
    ["{{ env.wgsl.other }}", false],
    ["{% if %}", false],
  ])("%s → %s", (src, asIs) => {
    expect(declarationPrints(src).asIs).toBe(asIs);
  });

  test("a template is as-is only when everything it includes or imports is", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "kernelc-decl-prints-"));
    writeFileSync(path.join(dir, "ok.jinja"), `{% include "part.jinja" %}`);
    writeFileSync(path.join(dir, "part.jinja"), D);
    writeFileSync(path.join(dir, "bad.jinja"), `{% from "lib.jinja" import m %}{{ m() }}`);
    writeFileSync(path.join(dir, "lib.jinja"), `{% macro m() %}{{ env.wgsl.resourceDeclarations | trim }}{% endmacro %}`);
    const digests = new TemplateDigests(dir);
    expect(digests.printsDeclarationsAsIs("ok.jinja")).toBe(true);
    expect(digests.printsDeclarationsAsIs("bad.jinja")).toBe(false);
    expect(digests.printsDeclarationsAsIs("missing.jinja")).toBe(false);
  });
});

describe("TemplateRenderer.renderOpen", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "kernelc-render-open-"));
  writeFileSync(path.join(dir, "t.jinja"), `// head\n{% for i in range(2) %}\n${D}\n{% endfor %}\nfn main() {}   \n\n\n`);
  const renderer = new TemplateRenderer(dir);
  const req = { templatesDir: dir, shader: "t.jinja", context: {} };

  test("filled in, it is the render with those declarations (text and line map), for any declarations", () => {
    const open = renderer.renderOpen(req)!;
    for (const declarations of ["", "var<storage> a: array<f32>;", "a\n\n\nb   \n"]) {
      const filled = open.fill(declarations)!;
      const direct = renderer.render({ ...req, declarations });
      expect(filled.wgsl).toBe(direct.wgsl);
      expect(filled.lineMap).toEqual(direct.lineMap);
    }
  });

  test("declarations past the render limits are left to render(), which reports them", () => {
    const open = renderer.renderOpen(req)!;
    expect(open.fill("x".repeat((1 << 20) + 1))).toBeUndefined();
    expect(open.fill("x".repeat(600_000))).toBeUndefined();
  });

  test("refresh(): an edited template is parsed again, an unedited one kept", () => {
    const r = new TemplateRenderer(dir);
    writeFileSync(path.join(dir, "e.jinja"), "first\n");
    expect(r.render({ ...req, shader: "e.jinja", declarations: "" }).wgsl).toBe("first\n");
    writeFileSync(path.join(dir, "e.jinja"), "second\n");
    // Parsed templates are kept until refresh() sees the edit.
    expect(r.render({ ...req, shader: "e.jinja", declarations: "" }).wgsl).toBe("first\n");
    r.refresh();
    expect(r.render({ ...req, shader: "e.jinja", declarations: "" }).wgsl).toBe("second\n");
  });
});
