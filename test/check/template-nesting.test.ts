/**
 * Templates nested thousands of levels deep (20,000 `{% if %}`s, `((((…))))`, a 20,000-term sum):
 * Nunjucks' parser and compiler recurse once per level, so such a template used to end in
 * "template syntax error: Maximum call stack size exceeded" with no line. Each is now a
 * template_limit_exceeded naming the template (its path inside templates/), the line where it
 * passes MAX_TEMPLATE_NESTING and how to fix it, from lint and from the build, without a stack.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { compile } from "../../src/api/compile.js";
import { parseTemplate } from "../../src/check/template-safety.js";
import { MAX_TEMPLATE_NESTING, sourceNestingProblem, TEMPLATE_NESTING_HINT, TemplateTooDeep } from "../../src/check/template-scan.js";
import type { Diagnostic } from "../../src/core/diagnostic.js";
import { renderText } from "../../src/core/render-diagnostics.js";
import { loadConfig } from "../../src/plan/config.js";
import { lintProject } from "../support/project-shaders.js";
import { axpbyProject } from "../support/axpby-project.js";

const DEEP_IFS = "{% if true %}\n".repeat(20000) + "x\n" + "{% endif %}".repeat(20000);

function lint(root: string) {
  return lintProject(root);
}

/** The diagnostic's code, message, hint, file relative to the templates folder, and line. */
function shown(d: Diagnostic, root: string): [string, string, string | undefined, string, number | undefined] {
  const file = d.location!.file;
  const text = fs.readFileSync(file, "utf8");
  const line = d.location?.span ? text.slice(0, d.location.span.start).split("\n").length : undefined;
  return [d.code, d.message, d.hint, path.relative(path.join(root, "templates"), file).split(path.sep).join("/"), line];
}

describe("a template nested 20,000 levels deep", () => {
  test("20,000 nested `{% if %}`s in the pass's template: lint and build name the template, the line and the fix", async () => {
    const root = axpbyProject({ appendTemplate: "// x\n" + DEEP_IFS });
    // The 257th `{% if %}` (one per line after "// x") is the first past 512 levels.
    const at = fs.readFileSync(path.join(root, "templates/axpby.wgsl.jinja"), "utf8").split("\n").indexOf("// x") + 1 + 257;
    const expected = [
      "template_limit_exceeded",
      `template \`axpby.wgsl.jinja\` nests more than ${MAX_TEMPLATE_NESTING} levels deep at this line (257 blocks inside each other): Nunjucks cannot compile deeper templates`,
      TEMPLATE_NESTING_HINT,
      "axpby.wgsl.jinja",
      at,
    ];
    const l = lint(root);
    expect(l.diagnostics.map((d) => shown(d, root))).toEqual([expected]);
    const text = renderText(l.diagnostics, (f) => fs.readFileSync(f, "utf8"));
    expect(text).not.toMatch(/Maximum call stack|\n\s+at /);
    expect(text).toContain(`axpby.wgsl.jinja:${at}:1\n`);
    const built = await compile(loadConfig(root));
    expect(built.diagnostics.map((d) => shown(d, root))).toEqual([expected]);
  });

  test("in an included template, and as 20,000 nested `{% for %}`s: the included file is named", () => {
    const fors = "{% for i in range(1) %}".repeat(20000) + "x" + "{% endfor %}".repeat(20000);
    const root = axpbyProject({ appendTemplate: '{% include "lib/deep.wgsl" %}\n', templates: { "lib/deep.wgsl": fors } });
    const [d] = lint(root).diagnostics;
    const [code, message, , file, line] = shown(d, root);
    expect([code, file, line]).toEqual(["template_limit_exceeded", "lib/deep.wgsl", 1]);
    expect(message).toMatch(/^template `lib\/deep\.wgsl` nests more than 512 levels deep at this line \(256 blocks, 1 brackets/);
  });

  test("brackets, unary operators and long operator chains; found by the build when the include is computed", async () => {
    const parens = "{{ " + "(".repeat(20000) + "1" + ")".repeat(20000) + " }}";
    const root = axpbyProject({
      appendTemplate: '{% include "lib/" ~ "deep.wgsl" %}\n',
      templates: { "lib/deep.wgsl": "// a\n" + parens },
    });
    expect(lint(root).diagnostics).toEqual([]); // lint does not follow a computed include
    const built = await compile(loadConfig(root));
    expect(built.diagnostics.map((d) => shown(d, root))).toEqual([
      [
        "template_limit_exceeded",
        "template lib/deep.wgsl failed to render: the template nests more than 512 levels deep at this line (0 blocks, 513 brackets and 0 unary operators inside each other): Nunjucks cannot compile deeper templates",
        TEMPLATE_NESTING_HINT,
        "lib/deep.wgsl",
        2,
      ],
    ]);
    for (const [src, found] of [
      ["{{ " + "not ".repeat(20000) + "1 }}", "0 blocks, 0 brackets and 513 unary operators"],
      ["{{ " + "- ".repeat(20000) + "1 }}", "0 blocks, 0 brackets and 513 unary operators"],
      ["{{ " + "1 + ".repeat(20000) + "1 }}", "an expression or blocks nested inside each other"],
      ["{{ 1" + " | abs".repeat(20000) + " }}", "an expression or blocks nested inside each other"],
      ["{{ " + "1 < ".repeat(20000) + "1 }}", "an expression or blocks nested inside each other"],
    ]) {
      let err: unknown;
      try {
        parseTemplate(`x\n${src}`);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TemplateTooDeep);
      expect((err as TemplateTooDeep).line).toBe(2);
      expect((err as TemplateTooDeep).message).toContain(found);
    }
  });

  test("within the limit, and brackets inside strings or comments, parse and build", async () => {
    expect(
      sourceNestingProblem(
        "{% if true %}".repeat(200) + "{{ " + "(".repeat(100) + "1" + ")".repeat(100) + " }}" + "{% endif %}".repeat(200),
      ),
    ).toBeUndefined();
    expect(
      sourceNestingProblem(`{{ "${"(".repeat(5000)}" }}{# ${"{% if x %}".repeat(5000)} #}{% raw %}${"{{ (".repeat(5000)}{% endraw %}`),
    ).toBeUndefined();
    expect(sourceNestingProblem("{{ a - -b - - -c }}{% set y = -1 %}{{ x not in [1, -2] }}")).toBeUndefined();
    const root = axpbyProject({ appendTemplate: "{% if true %}\n".repeat(200) + "// deep\n" + "{% endif %}\n".repeat(200) });
    expect(lint(root).diagnostics).toEqual([]);
    const built = await compile(loadConfig(root));
    expect(built.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });
});
