/**
 * Expressions Nunjucks' code generator turned into JavaScript that does not parse, or that parses
 * to something else: it writes a unary operator right before its operand's code (`- - 1` became
 * `--1`: "SyntaxError: Invalid left-hand side expression in prefix operation" without a line, and
 * `- - x` on a variable decremented it), `not` before a comparison (`not a == b` was
 * `(not a) == b`), `~` next to a sum (`"x" ~ n - 1` was NaN; Jinja joins first, an error: refused
 * unbracketed), `()` as `()`, a test's arguments
 * without commas, and its parser accepts trees its compiler fails on with a TypeError (`x[]`,
 * `{% set x.y = 1 %}`, `{{ m(1 = 2) }}`) or fails itself without a position (`{{ x not y }}`).
 * Each now renders as in Jinja, or is a template_error at its template line and column from lint
 * and from the build, never a JavaScript error.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { compile } from "../../src/api/compile.js";
import { templateReads, TemplateSyntaxError } from "../../src/check/template-reads.js";
import { RenderError, TemplateRenderer } from "../../src/emit/render.js";
import { loadConfig } from "../../src/plan/config.js";
import { cleanShaders, lintProject } from "../support/project-shaders.js";
import { axpbyProject } from "../support/axpby-project.js";

/** A templates folder with one file that each call rewrites, and a renderer for it (the build's). */
function scratch(): (src: string, context?: Record<string, unknown>) => string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-operators-"));
  fs.writeFileSync(path.join(root, "lib.jinja"), "{% macro helper(a) %}h{% endmacro %}\n");
  const renderer = new TemplateRenderer(root);
  return (src, context = {}) => {
    fs.writeFileSync(path.join(root, "t.jinja"), src);
    renderer.refresh();
    return renderer.render({ templatesDir: root, shader: "t.jinja", context, declarations: "" }).wgsl;
  };
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** JavaScript's words, or nunjucks' internal ones, that must never reach a template's author. */
const JS_ERROR =
  /SyntaxError|ReferenceError|TypeError|Cannot read|is not a function|assertType|compilePair|pushToken|charAt|left-hand side/;

describe("unary operators, `not` and `~` render as in Jinja", () => {
  const render = scratch();
  test.each([
    ["{{ - - 1 }}", "1"],
    ["{{ + + 1 }}", "1"],
    ["{{ - - - 1 }}", "-1"],
    ["{{ - + - 1 }}", "1"],
    ["{{ 2 - - - 1 }}", "1"],
    ["{{ 2 + + + 1 }}", "3"],
    ["{{ - -n }}", "4"],
    ["{{ n - - 1 }}", "5"],
    ["{% set x = 5 %}{{ - - x }},{{ + + x }},{{ x }}", "5,5,5"],
    ["{% for i in range(3) %}{{ + + i }}{{ - - i }}{% endfor %}", "001122"],
    ["{% macro m(a = - - 2) %}{{ a }}{% endmacro %}{{ m() }}", "2"],
    ["{{ - - 1 if not - - 0 else 2 }}", "1"],
    ["{{ not 1 == 2 }}", "true"],
    ["{{ not n > 3 }}", "false"],
    ["{% if not n + 1 %}zero{% else %}nonzero{% endif %}", "nonzero"],
    ['{{ "x" ~ (n - 1) }}', "x3"],
    ['{{ "x" ~ (n + 1) ~ "y" }}', "x5y"],
    ["{{ (-n) ** 2 }},{{ -(n ** 2) }}", "16,-16"],
    ["{{ n is divisibleby(2) }},{{ n is defined }},{{ n is not divisibleby(3) }}", "true,true,true"],
  ])("%s renders %s", (src, out) => {
    expect(render(src, { n: 4 })).toBe(`${out}\n`);
  });
});

const CONCAT_SUM =
  '`~` next to `+` or `-` without brackets: Jinja joins first (`"x" ~ n - 1` is `("x" ~ n) - 1`, an error): write `"x" ~ (n - 1)`';

/** [template line 2, message, 1-based column]: each a template_error from lint and from the build. */
const REFUSED: readonly (readonly [string, string, number])[] = [
  ["{{ () }}", "`()` is empty: put an expression inside the brackets, or write an empty list as `[]`", 4],
  [
    "{{ (n, 2) }}",
    "`(…, …)` with 2 items is a tuple, which kernelc templates do not have (Nunjucks would take its last item): write a list `[…, …]`",
    4,
  ],
  ["{{ n[] }}", "`[]` needs an index inside it, such as `x[0]`", 5],
  ["{{ * [1] }}", "a member access (`.name` or `[index]`) needs a value before it", 6],
  ["{{ ~ .a }}", "a member access (`.name` or `[index]`) needs a value before it", 6],
  ["{{ n is divisibleby(2, 3) }}", "the test `is divisibleby` takes one argument, in brackets: `x is divisibleby(4)`", 4],
  ["{{ n is divisibleby }}", "the test `is divisibleby` takes one argument, in brackets: `x is divisibleby(4)`", 4],
  ["{{ n is divisibleby(num=2) }}", "the test `is divisibleby` takes one argument, in brackets: `x is divisibleby(4)`", 4],
  ["{{ n is defined(1) }}", "the test `is defined` takes no argument: write `x is defined`", 4],
  ["{{ n is (2) }}", "`is` must be followed by the name of a test (`x is defined`, `n is divisibleby(4)`)", 4],
  ["{{ n is a.defined(2) }}", "`is` must be followed by the name of a test (`x is defined`, `n is divisibleby(4)`)", 4],
  ["{% set x.y = 1 %}", "a `{% set %}` target must be a name (ASCII letters, digits and `_`), not an expression", 9],
  ['{% set "x" = 1 %}', "a `{% set %}` target must be a name (ASCII letters, digits and `_`), not a string", 8],
  ["{% for k, 1 in n %}{% endfor %}", "a loop variable must be a name (ASCII letters, digits and `_`), not `1`", 11],
  ['{% macro "m"() %}{% endmacro %}', "a macro's name must be a name (ASCII letters, digits and `_`), not a string", 10],
  ["{% macro m(a - b) %}{% endmacro %}", "a macro parameter must be a name (ASCII letters, digits and `_`), not an expression", 12],
  ["{% macro m(1) %}{% endmacro %}", "a macro parameter must be a name (ASCII letters, digits and `_`), not `1`", 12],
  ['{% import "lib.jinja" as "l" %}', "the name after `as` must be a name (ASCII letters, digits and `_`), not a string", 26],
  ['{% from "lib.jinja" import helper as "h" %}', "the name after `as` must be a name (ASCII letters, digits and `_`), not a string", 38],
  ['{% from "lib.jinja" import "helper" %}', "an imported name must be a name (ASCII letters, digits and `_`), not a string", 28],
  ["{{ helper(1 = 2) }}", "the name before `=` must be a name (ASCII letters, digits and `_`), not `1`", 11],
  ['{{ helper("a" = 2) }}', "the name before `=` must be a name (ASCII letters, digits and `_`), not a string", 11],
  ['{% macro m("a" = 2) %}{% endmacro %}', "the name before `=` must be a name (ASCII letters, digits and `_`), not a string", 12],
  ["{{ {(1): 2} }}", 'a mapping\'s key must be a name or a string (`{"a": 1}`), not an expression', 5],
  ['{{ "x" ~ n - 1 }}', CONCAT_SUM, 4],
  ['{{ "x" ~ n + 1 ~ "y" }}', CONCAT_SUM, 4],
  ["{{ n ~ 1 + 2 }}", CONCAT_SUM, 4],
  ["{{ -n ** 2 }}", "`-a ** b` is `(-a) ** b` in Jinja but `-(a ** b)` in Python: write the brackets you mean", 4],
];

/** [template line 2, message, 1-based column]: syntax errors where nunjucks' parser failed with a JavaScript error or without a position. */
const UNPARSED: readonly (readonly [string, string, number])[] = [
  // The build reported this one without a line ("parseIf: expected elif, else, or endif, got end of file").
  ["{% if n %}", "`{% if … %}` is never closed: add `{% endif %}`", 1],
  ["{{ n not 1 }}", "`not` after a value must be followed by `in` (`x not in list`); to negate a value, put `not` before it (`not x`)", 10],
  [
    "{{ n | abs()[0] }}",
    "the expression here cannot be parsed: a part of it is missing or misplaced (an argument list or index after a filter's arguments, `{% call %}` without a macro call, `{% from %}` importing something that is not a name)",
    17,
  ],
  [
    "{% call n %}{% endcall %}",
    "the expression here cannot be parsed: a part of it is missing or misplaced (an argument list or index after a filter's arguments, `{% call %}` without a macro call, `{% from %}` importing something that is not a name)",
    24,
  ],
];

describe("expressions Nunjucks compiles to broken JavaScript are located template errors", () => {
  const render = scratch();
  test.each([...REFUSED.map(([s, m, c]) => [s, `the template is refused: ${m}`, c] as const), ...UNPARSED])(
    "%s: the build's renderer",
    (src, message, column) => {
      const err = thrown(() => render(`// line 1\n${src}\n`, { n: 4 }));
      expect(err).toBeInstanceOf(RenderError);
      const e = err as RenderError;
      expect([e.message, e.file, e.line, e.column]).toEqual([message, "t.jinja", 2, column]);
    },
  );

  test.each([...REFUSED.map(([s, m, c]) => [s, m, c, true] as const), ...UNPARSED.map(([s, m, c]) => [s, m, c, false] as const)])(
    "%s: lint",
    (src, message, column, refused) => {
      const err = thrown(() => templateReads(`// line 1\n${src}\n`));
      expect(err).toBeInstanceOf(TemplateSyntaxError);
      const e = err as TemplateSyntaxError;
      expect([e.message, e.line, e.column, e.refused]).toEqual([message, 2, column, refused]);
    },
  );

  test("a project: lint and build report the template, line and column, and the build writes nothing", async () => {
    const root = axpbyProject({ appendTemplate: "// ok: {{ - - 1 }}\n{% set pair_here = (1, - - 2) %}\n" });
    const lines = fs.readFileSync(path.join(root, "templates/axpby.wgsl.jinja"), "utf8").split("\n");
    const line = lines.findIndex((l) => l.startsWith("{% set pair_here")) + 1;
    const lint = lintProject(root);
    const built = await compile(loadConfig(root));
    expect(built.files.size).toBe(0);
    for (const d of [...lint.diagnostics, ...built.diagnostics]) {
      expect(d.code).toBe("template_error");
      expect(d.message).toContain("`(…, …)` with 2 items is a tuple");
      expect(d.message).not.toMatch(JS_ERROR);
      expect(d.location?.file).toBe(path.join(fs.realpathSync(root), "templates/axpby.wgsl.jinja"));
      const start = d.location!.span!.start;
      const text = lines.join("\n");
      expect(text.slice(0, start).split("\n").length).toBe(line);
      expect(text.slice(start, start + 3)).toBe("(1,");
    }
    expect(lint.diagnostics.length).toBe(1);
    expect(built.diagnostics.filter((d) => d.severity === "error").length).toBe(1);
  });

  test("`{{ - - 1 }}` in a project's template builds and prints 1", async () => {
    const root = axpbyProject({ appendTemplate: "// unary: {{ - - 1 }} {{ + + 2 }} {{ not 1 == 2 }}\n" });
    const shaders = await cleanShaders(root);
    for (const wgsl of shaders) expect(wgsl).toContain("// unary: 1 2 true\n");
  });
});

test("every expression of up to three tokens renders, or fails with a located template error, never a JavaScript one", () => {
  const render = scratch();
  const tokens = ["-", "+", "not", "n", "1", "(", ")", "[", "]", ",", ".", "~", "==", '"s"', "in", "is", "|abs", "range"];
  const skeletons = [
    "{{ E }}",
    "{{ n is divisibleby(E) }}",
    "{% set E = 1 %}",
    "{% macro m(E) %}{% endmacro %}",
    "{% for k, E in n %}{% endfor %}",
  ];
  const exprs: string[] = [];
  const grow = (prefix: string[]): void => {
    if (prefix.length > 0) exprs.push(prefix.join(" "));
    if (prefix.length < 3) for (const t of tokens) grow([...prefix, t]);
  };
  grow([]);
  let rendered = 0;
  for (const expr of exprs) {
    for (const skeleton of skeletons) {
      const src = `// line 1\n${skeleton.replace("E", expr)}\n`;
      const lintErr = thrown(() => templateReads(src));
      if (lintErr !== undefined) {
        expect(lintErr, src).toBeInstanceOf(TemplateSyntaxError);
        const e = lintErr as TemplateSyntaxError;
        expect([src, e.message], src).not.toEqual([src, expect.stringMatching(JS_ERROR)]);
        expect(e.line, src).toBe(2);
        // The build parses and checks with the same code before compiling (the lists above render those).
        continue;
      }
      const err = thrown(() => render(src, { n: 4 }));
      if (err === undefined) {
        rendered++;
        continue;
      }
      expect(err, src).toBeInstanceOf(RenderError);
      const e = err as RenderError;
      expect([src, e.message], src).not.toEqual([src, expect.stringMatching(JS_ERROR)]);
      expect(e.line, src).toBe(2);
    }
  }
  // Not all refused: `- - n`, `n ~ 1`, `not - 1` and the like render.
  expect(rendered).toBeGreaterThan(200);
});
