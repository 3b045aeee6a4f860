/**
 * The template sandbox against a corpus of known Nunjucks server-side template injection escapes
 * (constructor chains from range/cycler/joiner and from strings and arrays, `caller`, `__proto__`
 * chains, `{% set %}` tricks, names built at run time, filters such as attr/dump/safe, member
 * calls, regex literals, extends): each renders nothing, executes nothing (a global sentinel
 * function is never called) and fails with a located error. Then the render limits: huge ranges,
 * nested loops, recursive macros and includes, doubling strings and oversized output each fail
 * fast with a template_limit_exceeded at the template line. Also through `compile()`: a spec value
 * that drives `range()` and a hostile template in a project both end as diagnostics.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type nunjucks from "nunjucks";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { compile } from "../../src/api/compile.js";
import { templateReads, TemplateSyntaxError } from "../../src/check/template-reads.js";
import { unclosedConstruct } from "../../src/check/template-scan.js";
import { RenderError, TemplateRenderer } from "../../src/emit/render.js";
import { SandboxEnvironment } from "../../src/emit/template-sandbox.js";
import { loadConfig } from "../../src/plan/config.js";
import { lintProject } from "../support/project-shaders.js";
import { axpbyProject } from "../support/axpby-project.js";

const SENTINEL = "kernelcSandboxSentinel";
const CALL = `return globalThis.${SENTINEL}()`;
/**
 * A name that is not an identifier: Nunjucks' lexer reads `x"^…^"` as one name, and its compiler
 * pastes names between double quotes into the code it generates, so the quote ends the string and
 * `Function\`…\`\`\`` (the body spelled with \x escapes: whitespace, `.` and parentheses end a name)
 * would build and call a function.
 */
const QUOTED_NAME = 'x"^Function`return\\x20globalThis\\x2e' + SENTINEL + '\\x28\\x29```^"';

/** A string where Nunjucks pastes a name between double quotes: the quote ends them and the sentinel is called. */
const STRING_NAME = `"x\\"+globalThis.${SENTINEL}()+\\""`;
/** Arguments that, written one after another, read `f["constructor"]["constructor"]("…")()`. */
const PASTED_CALL = `["constr" ~ "uctor"], ["constr" ~ "uctor"], ("${CALL}"), ()`;

let calls = 0;
beforeEach(() => {
  calls = 0;
  (globalThis as Record<string, unknown>)[SENTINEL] = () => {
    calls++;
    return { pid: 1, mainModule: null };
  };
});
afterEach(() => {
  delete (globalThis as Record<string, unknown>)[SENTINEL];
});

function setup(files: Record<string, string>): (shader: string, context?: Record<string, unknown>) => string {
  const root = mkdtempSync(path.join(tmpdir(), "kernelc-sandbox-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  const renderer = new TemplateRenderer(root);
  return (shader, context = {}) => renderer.render({ templatesDir: root, shader, context, declarations: "// decls" }).wgsl;
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

/** Known escapes: [name, template]. Every one must fail without calling the sentinel. */
const CORPUS: readonly (readonly [string, string])[] = [
  ["range.constructor", `{{ range.constructor("${CALL}")() }}`],
  ["range.constructor, bracket", `{{ range["constructor"]("${CALL}")() }}`],
  ["cycler.constructor", `{{ cycler.constructor("${CALL}")() }}`],
  ["joiner.constructor", `{{ joiner.constructor("${CALL}")() }}`],
  ["string constructor chain", `{{ "".constructor.constructor("${CALL}")() }}`],
  ["string constructor, brackets", `{{ ""["constructor"]["constructor"]("${CALL}")() }}`],
  ["array constructor chain", `{{ [].constructor.constructor("${CALL}")() }}`],
  ["number constructor via a variable", `{% set n = 1 %}{{ n.constructor.constructor("${CALL}")() }}`],
  ["name built at run time", `{% set k = "constr" ~ "uctor" %}{{ range[k][k]("${CALL}")() }}`],
  ["name built at run time, via set", `{% set k = "constr" ~ "uctor" %}{% set f = range[k] %}{{ f("${CALL}")() }}`],
  ["name from a data value", `{{ range[names.c][names.c]("${CALL}")() }}`],
  ["__proto__ chain", `{{ dtypes.__proto__.constructor.constructor("${CALL}")() }}`],
  ["__proto__ built at run time", `{% set p = "__pro" ~ "to__" %}{{ dtypes[p] }}`],
  ["prototype", `{{ range.prototype }}`],
  ["__defineGetter__", `{{ dtypes.__defineGetter__ }}`],
  ["caller.constructor", `{% macro m() %}{{ caller.constructor("${CALL}")() }}{% endmacro %}{% call m() %}x{% endcall %}`],
  [
    "caller built at run time",
    `{% set k = "constr" ~ "uctor" %}{% macro m() %}{{ caller[k][k]("${CALL}")() }}{% endmacro %}{% call m() %}x{% endcall %}`,
  ],
  ["macro constructor, dynamic", `{% macro m() %}{% endmacro %}{% set k = "constr" ~ "uctor" %}{{ m[k]("${CALL}")() }}`],
  ["set a function then reach its constructor", `{% set f = range %}{% set k = "constr" ~ "uctor" %}{{ f[k]("${CALL}")() }}`],
  ["set __proto__", `{% set __proto__ = dtypes %}{{ x }}`],
  ["dict with __proto__ key", `{% set o = {"__proto__": dtypes} %}{{ o.T }}`],
  ["calling the result of a call", `{{ range(1)(2) }}`],
  ["member call on an array", `{{ range(3).pop() }}`],
  ["Function.call through a namespace-style call", `{% set f = range %}{{ f.call(null, 3) }}`],
  ["apply on a macro", `{% macro m() %}x{% endmacro %}{{ m.apply(null, []) }}`],
  ["calling a data value", `{{ dtypes.T() }}`],
  ["calling a string", `{% set s = "x" %}{{ s() }}`],
  ["attr filter", `{{ range | attr("constructor") }}`],
  ["dump filter", `{{ range | dump }}`],
  ["safe filter", `{{ "x" | safe }}`],
  ["select with a test name", `{{ [range] | select("callable") | list }}`],
  ["groupby constructor", `{{ [range] | groupby("constructor") }}`],
  ["a test outside the list", `{% if range is callable %}x{% endif %}`],
  ["regex literal", `{{ r/x/.constructor }}`],
  ["regex in replace", `{{ "a" | replace(r/a/g, "b") }}`],
  ["extends", `{% extends "other.jinja" %}`],
  ["block", `{% block b %}x{% endblock %}`],
  ["joiner global", `{{ joiner()() }}`],
  ["cycler global", `{{ cycler(1, 2).next() }}`],
  ["lipsum global", `{{ lipsum() }}`],
  ["import namespace constructor", `{% import "lib.jinja" as lib %}{% set k = "constr" ~ "uctor" %}{{ lib[k][k]("${CALL}")() }}`],
  ["from-import constructor", `{% from "lib.jinja" import constructor %}{{ constructor("${CALL}")() }}`],
  ["loop object constructor", `{% for i in [1] %}{% set k = "constr" ~ "uctor" %}{{ loop[k][k]("${CALL}")() }}{% endfor %}`],
  ["keyword argument named __proto__", `{% macro m(a) %}{{ a }}{% endmacro %}{{ m(__proto__=1) }}`],
  ["join by attribute", `{{ [range] | join(",", "constructor") }}`],
  ["sum by attribute", `{{ [range] | sum("constructor", "") }}`],
  ["sort by attribute, keyword", `{{ [range] | sort(attribute="constructor") | first }}`],
  // Strings and lists are indexed and sliced as Python's: no member of them is reachable.
  ["a slice's constructor, built at run time", `{% set k = "constr" ~ "uctor" %}{{ "abc"[1:][k][k]("${CALL}")() }}`],
  ["a list slice's constructor", `{{ [1, 2][::-1]["constructor"]["constructor"]("${CALL}")() }}`],
  ["a string's character's constructor", `{% set k = "constr" ~ "uctor" %}{{ "abc"[0][k][k]("${CALL}")() }}`],
  ["a string's method, built at run time", `{% set k = "to" ~ "String" %}{{ "abc"[k] }}`],
  ["a slice bound that calls", `{{ "abc"[range.constructor("${CALL}")():] }}`],
  ["a slice as a set target", `{% set x[1:] = 1 %}`],
  ["a switch on a constructor", `{% switch range.constructor("${CALL}")() %}{% case 1 %}x{% endswitch %}`],
  ["inside a set block", `{% set s %}{{ range.constructor("${CALL}")() }}{% endset %}{{ s }}`],
  ["a name with a quote, printed", `{{ ${QUOTED_NAME} }}`],
  ["a name with a quote, in a condition", `{% if ${QUOTED_NAME} %}x{% endif %}`],
  ["a name with a quote, as a set target", `{% set ${QUOTED_NAME} = 1 %}`],
  ["a name with a quote, as a loop variable", `{% for ${QUOTED_NAME} in [1] %}x{% endfor %}`],
  ["a name with a quote, as a macro parameter", `{% macro m(${QUOTED_NAME}) %}x{% endmacro %}{{ m(1) }}`],
  ["a name with a quote, as a keyword argument", `{% macro m(a) %}x{% endmacro %}{{ m(${QUOTED_NAME}=1) }}`],
  ["a name with a quote, imported", `{% from "lib.jinja" import ${QUOTED_NAME} %}`],
  ["a namespace member with a quote, called", `{% import "lib.jinja" as lib %}{{ lib["\\\\\"^0^\""]() }}`],
  // Nunjucks' parser takes a string where its compiler pastes a name, unescaped: `"` ends the
  // compiler's quotes and the rest runs.
  ["a string as a set target", `{% set ${STRING_NAME} = 1 %}`],
  ["a string as a macro's name", `{% macro ${STRING_NAME}() %}x{% endmacro %}`],
  ["a string as a macro parameter", `{% macro m(${STRING_NAME}=1) %}x{% endmacro %}`],
  ["a string as a call block parameter", `{% macro m() %}{{ caller() }}{% endmacro %}{% call(${STRING_NAME}=1) m() %}x{% endcall %}`],
  ["a string as a loop variable", `{% for k, ${STRING_NAME} in {"a": 1} %}x{% endfor %}`],
  ["a string as an import's name", `{% import "lib.jinja" as ${STRING_NAME} %}`],
  ["a string as a from-import's alias", `{% from "lib.jinja" import helper as ${STRING_NAME} %}`],
  // Nunjucks wrote a test's arguments one after another without commas: `f["constructor"]…(…)()`.
  ["test arguments pasted together", `{{ 1 is divisibleby(range, ${PASTED_CALL}) }}`],
  ["test arguments pasted together, test named by a member", `{{ 1 is lib.x(range, ${PASTED_CALL}) }}`],
];

describe("the SSTI corpus renders nothing and executes nothing", () => {
  const render = setup({
    "lib.jinja": "{% macro helper() %}h{% endmacro %}\n",
    "other.jinja": "other\n",
    ...Object.fromEntries(CORPUS.map(([, src], i) => [`c${i}.jinja`, `// line 1\n${src}\n`])),
  });

  test.each(CORPUS.map(([name], i) => [name, i] as const))("%s", (_name, i) => {
    const err = renderError(() => render(`c${i}.jinja`, { dtypes: { T: "f16" }, names: { c: "constructor" }, x: 1 }));
    expect(calls).toBe(0);
    expect(err.file).toBe(`c${i}.jinja`);
    expect(err.line).toBe(2);
    expect(err.limit).toBe(false);
    expect(err.message).not.toMatch(/\n\s+at /);
  });

  test("lint refuses the static escapes, before anything renders", () => {
    const stat = CORPUS.filter(([name]) => !/run time|data value|dynamic|call on|calling|through|apply|global|by attribute/.test(name));
    expect(stat.length).toBeGreaterThan(20);
    const root = axpbyProject({ templates: Object.fromEntries(stat.map(([, src], i) => [`s${i}.jinja`, `// line 1\n${src}\n`])) });
    for (let i = 0; i < stat.length; i++) {
      expect(() => templateReads(readFileSync(path.join(root, "templates", `s${i}.jinja`), "utf8")), stat[i][0]).toThrow(
        TemplateSyntaxError,
      );
    }
    const res = lintProject(root);
    expect(res.diagnostics).toEqual([]);
    const bad = axpbyProject({ appendTemplate: `{{ range.constructor("${CALL}")() }}\n` });
    const lint = lintProject(bad);
    expect(lint.diagnostics.map((d) => [d.code, d.message])).toEqual([
      ["template_error", expect.stringMatching(/^template refused: the member `constructor` is not allowed/)],
    ]);
    expect(calls).toBe(0);
  });

  test("a build of a project with an escape reports template_error and calls nothing", async () => {
    for (const src of [
      `{{ range.constructor("${CALL}")() }}`,
      `{% set k = "constr" ~ "uctor" %}{{ range[k][k]("${CALL}")() }}`,
      `{{ ${QUOTED_NAME} }}`,
    ]) {
      const res = await compile(loadConfig(axpbyProject({ appendTemplate: `// ${src}\n` })));
      expect(calls).toBe(0);
      expect(res.files.size).toBe(0);
      const d = res.diagnostics.find((x) => x.code === "template_error");
      expect(d?.location?.file).toMatch(/axpby\.wgsl\.jinja$/);
      expect(d?.location?.span).toBeDefined();
    }
  });
});

test("the sandbox's compiler refuses a quoted name even from a loader that skips the checks", () => {
  const loader = { getSource: (name: string) => ({ src: `{{ ${QUOTED_NAME} }}`, path: name, noCache: true }) };
  const env = new SandboxEnvironment(loader as unknown as nunjucks.ILoader, { autoescape: false, throwOnUndefined: true, dev: true });
  expect(() => env.renderSandboxed("raw.jinja", {})).toThrow(/is not an identifier/);
  expect(calls).toBe(0);
});

describe("what templates may still do", () => {
  const render = setup({
    "ok.jinja": [
      '{% import "lib.jinja" as lib %}',
      '{% from "lib.jinja" import twice %}',
      "{% macro wrap() %}[{{ caller() }}]{% endmacro %}",
      "{% for i in range(1, 7, 2) %}{{ i }}{% if not loop.last %},{% endif %}{% endfor %}",
      "{{ lib.twice(3) }} {{ twice(4) }} {% call wrap() %}in{% endcall %}",
      "{{ dims | join('x') }} {{ dims | length }} {{ dims[1] }} {{ (7 / 2) | int }} {{ 'abc' | upper }}",
      "{% if T is defined and n is number and n is divisibleby(4) %}ok{% endif %} {{ toString }}",
      '{% include "inc.jinja" %}',
    ].join("\n"),
    "lib.jinja": "{% macro twice(x) %}{{ x * 2 }}{% endmacro %}\n",
    "inc.jinja": "inc {{ n }}\n",
  });

  test("macros, imports, call blocks, range, loop, filters, tests, includes, Object.prototype names as data", () => {
    expect(render("ok.jinja", { dims: [2, 3], T: "f32", n: 8, toString: "plain" })).toBe("1,3,56 8 [in]2x3 2 3 3 ABC\nok plain\ninc 8\n");
  });
});

describe("where a limit or refusal after an import or inside an imported macro happened", () => {
  const render = setup({
    "lib.jinja":
      "// lib\n{% macro big() %}\n{% for i in range(300000) %}{% endfor %}\n{% endmacro %}\n{% macro m() %}{{ range.apply }}{% endmacro %}\n",
    "main.jinja": '{% import "lib.jinja" as l %}\n// main\n// main\n{{ l.big() }}\n',
    "from.jinja": '{% from "lib.jinja" import big %}\n{{ big() }}\n',
    "after.jinja": '{% import "lib.jinja" as l %}\n{% macro ok() %}x{% endmacro %}\n{{ ok() }}{% for i in range(300000) %}{% endfor %}\n',
    "refused.jinja": '{% import "lib.jinja" as l %}\n{% set k = "constr" ~ "uctor" %}\n{{ range[k] }}\n',
  });

  test.each([
    ["main.jinja", "lib.jinja", 3],
    ["from.jinja", "lib.jinja", 3],
    ["after.jinja", "after.jinja", 3],
  ])("%s: reported in %s at line %i (the importing template was named, with the imported one's line)", (shader, file, line) => {
    const err = renderError(() => render(shader));
    expect(err.limit).toBe(true);
    expect([err.file, err.line]).toEqual([file, line]);
  });

  test("a refusal after an import is at its own line (it was at the imported template's last line)", () => {
    const err = renderError(() => render("refused.jinja"));
    expect([err.file, err.line, err.limit]).toEqual(["refused.jinja", 3, false]);
  });
});

describe("render limits", () => {
  const render = setup({
    "range.jinja": "// a\n{% for i in range(width) %}x{% endfor %}\n",
    "nested.jinja": "// a\n{% for i in range(1000) %}\n{% for j in range(1000) %}{% endfor %}\n{% endfor %}\n",
    "recurse.jinja": "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}\n{{ r(0) }}\n",
    "self.jinja": '// a\n{% include "self.jinja" %}\n',
    "self-import.jinja": '{% import "self-import.jinja" as me %}\nx\n',
    "double.jinja": '{% set s = "x" %}\n{% for i in range(40) %}\n{% set s = s ~ s %}\n{% endfor %}\n{{ s | length }}\n',
    "double-arg.jinja": '{% macro d(s, n) %}{% if n > 0 %}{{ d(s ~ s, n - 1) }}{% endif %}{% endmacro %}\n{{ d("x", 60) }}\n',
    "printed.jinja": "{% for i in range(50000) %}{{ big }}{% endfor %}\n",
    "printed-macro.jinja":
      "{% macro m() %}{% for i in range(900) %}{{ big }}{% endfor %}{% endmacro %}\n{% for j in range(10) %}{% set x = m() %}{% endfor %}\n",
    "text.jinja": "// a\n{% for i in range(90000) %}\n{% if i >= 0 %}\n01234567890123456789\n{% endif %}\n{% endfor %}\n",
    "filter.jinja": '{% set s = "x" %}\n{{ s | center(5000000) }}\n',
    "filter-big.jinja": '{% set s = "x" %}\n{{ s | center(500000000) }}\n{{ s | indent(500000000) }}\n',
    "indent.jinja": "// a\n{{ s | indent(500000000, true) }}\n",
    "replace.jinja": '// a\n{{ s | replace("", s) }}\n',
    "join.jinja": "// a\n{{ range(1000) | join(s) }}\n",
    "small.jinja": "{% for i in range(width) %}{{ i }}{% endfor %}\n",
    "slice.jinja": "// a\n{{ [1, 2, 3] | slice(n) | length }}\n",
    "batch.jinja": '// a\n{{ [1] | batch(n, "x") | length }}\n',
    "object.jinja": "// a\n{{ tunables }}\n",
    "list.jinja": "// a\n{{ dims }}\n",
    "list-items.jinja": "{{ dims[0] }}{% for v in dims %},{{ v }}{% endfor %}\n",
    "object-concat.jinja": '// a\n{{ dtypes ~ "x" }}\n',
    "object-string.jinja": "// a\n{{ tunables | string }}\n",
    "callable-range.jinja": "// a\n{{ range }}\n",
    "callable-range-string.jinja": "// a\n{{ range | string }}\n",
    "callable-macro.jinja": "{% macro m() %}x{% endmacro %}\n{{ m }}\n",
    "callable-concat.jinja": '{% macro m() %}x{% endmacro %}\n{{ m ~ "" }}\n',
    "callable-join.jinja": '// a\n{{ [range] | join(",") }}\n',
    "callable-replace.jinja": '// a\n{{ range | replace("a", "b") }}\n',
    "callable-upper.jinja": "// a\n{{ range | upper }}\n",
    "callable-set.jinja": "// a\n{% set f = range %}{{ f }}\n",
    "callable-caller.jinja": "// a\n{% macro w() %}{{ caller }}{% endmacro %}{% call w() %}x{% endcall %}\n",
    "callable-imported.jinja": '{% import "callable-lib.jinja" as l %}\n{{ l.m }}\n',
    "namespace.jinja": '{% import "callable-lib.jinja" as l %}\n{{ l }}\n',
    "callable-lib.jinja": "{% macro m() %}x{% endmacro %}\n",
    "list-string.jinja": "// a\n{{ dims | string }}\n",
    "range-step.jinja": "// a\n{% for i in range(a, b, c) %}{{ i }},{% endfor %}\n",
  });

  test.each([
    ["range.jinja", { width: 1e9 }, 2, /range\(1000000000\) with 1000000000 items/],
    ["range.jinja", { width: 2 ** 53 - 1 }, 2, /steps/],
    ["nested.jinja", {}, 3, /steps/],
    ["recurse.jinja", {}, 1, /nest more than 64 deep/],
    ["self.jinja", {}, 2, /nest|deep/],
    ["self-import.jinja", {}, 1, /deep/],
    ["double.jinja", {}, 3, /characters long/],
    ["double-arg.jinja", {}, 1, /characters long/],
    ["printed.jinja", { big: "y".repeat(100) }, 1, /the output reaches \d+ characters/],
    ["printed-macro.jinja", { big: "y".repeat(1000) }, 1, /add up to more than 4194304/],
    ["filter.jinja", {}, 2, /center/],
    ["filter-big.jinja", {}, 2, /the filter `center` would make a string of about 500000000 characters/],
    ["indent.jinja", { s: "a\nb" }, 2, /the filter `indent` would make/],
    ["replace.jinja", { s: "x".repeat(2000) }, 2, /the filter `replace` would make/],
    ["join.jinja", { s: "x".repeat(2000) }, 2, /the filter `join` would make/],
    // slice(n) makes n lists and batch(n, fill) pads to n items whatever the input: a billion ran out of memory.
    ["slice.jinja", { n: 1e9 }, 2, /the filter `slice` making 1000000000 items takes the render past 200000 steps/],
    ["slice.jinja", { n: Infinity }, 2, /the filter `slice` with Infinity items/],
    ["batch.jinja", { n: 1e9 }, 2, /the filter `batch` making 1000000000 items takes the render past 200000 steps/],
  ] as const)("%s fails fast with a located limit error", (shader, context, line, message) => {
    const err = renderError(() => render(shader, context));
    expect(err.limit).toBe(true);
    expect(err.file).toBe(shader);
    expect(err.line).toBe(line);
    expect(err.message).toMatch(message);
  });

  test("oversized output without a printed value is a limit error too, at the loop", () => {
    const err = renderError(() => render("text.jinja"));
    expect(err.limit).toBe(true);
    expect(err.line).toBe(3);
    expect(err.message).toMatch(/the output reaches \d+ characters, more than the limit of 1048576/);
  });

  test("slice and batch inside the limits are unaffected", () => {
    expect(render("slice.jinja", { n: 2 })).toBe("// a\n2\n");
    expect(render("batch.jinja", { n: 3 })).toBe("// a\n1\n");
  });

  test("printing a mapping of the render context says so, at the line (not JavaScript's words)", () => {
    for (const shader of ["object.jinja", "object-concat.jinja", "object-string.jinja"]) {
      const err = renderError(() => render(shader, { tunables: { WG: 64 }, dtypes: { T: "f32" } }));
      expect(err.line).toBe(2);
      expect(err.message).toMatch(
        /^`\{\{ .* \}\}` turns a mapping \(an object such as `tunables`.*print one of its members, such as `tunables.NAME`$/,
      );
      expect(err.message).not.toMatch(/primitive|toString/);
    }
  });

  test("printing a list says so at the line and how to print its items; its items print", () => {
    const err = renderError(() => render("list.jinja", { dims: [2, 3] }));
    expect(err.file).toBe("list.jinja");
    expect(err.line).toBe(2);
    expect(err.message).toMatch(/^`\{\{ dims \}\}` prints a list, which would print as its items joined by commas/);
    expect(err.message).toContain("{{ dims[0] }}");
    expect(err.message).toContain("{% for v in dims %}");
    expect(render("list-items.jinja", { dims: [2, 3] })).toBe("2,2,3\n");
  });

  test.each([
    "callable-range.jinja",
    "callable-range-string.jinja",
    "callable-macro.jinja",
    "callable-concat.jinja",
    "callable-join.jinja",
    "callable-replace.jinja",
    "callable-upper.jinja",
    "callable-set.jinja",
    "callable-caller.jinja",
    "callable-imported.jinja",
  ])("printing a macro or range() itself (%s) is a template_error at its line saying how to fix it, never JavaScript source", (shader) => {
    const err = renderError(() => render(shader, {}));
    expect(err.limit).toBe(false);
    expect(err.line).toBe(2);
    expect(err.message).toMatch(/prints a macro or `range` itself \(a function\), which would print JavaScript source, not WGSL: call it/);
    expect(err.message).not.toMatch(/=>|macroArgs|toUpperCase|primitive/);
  });

  test("printing an imported namespace or a list through `string` says so at the line", () => {
    const ns = renderError(() => render("namespace.jinja", {}));
    expect(ns.line).toBe(2);
    expect(ns.message).toMatch(/^`\{\{ l \}\}` turns a mapping/);
    const list = renderError(() => render("list-string.jinja", { dims: [2, 3] }));
    expect(list.line).toBe(2);
    expect(list.message).toMatch(/^`\{\{ dims \| string \}\}` prints a list, which would print as its items joined by commas/);
    // The advice names the list without the filter that printed it (`dims | string[0]` is no index).
    expect(list.message).toContain("print one item (`{{ dims[0] }}`) or each in a loop (`{% for v in dims %}");
  });

  test("range() with a step of 0 is a template_error; a negative step counts down as in Jinja and Python", () => {
    const err = renderError(() => render("range-step.jinja", { a: 0, b: 10, c: 0 }));
    expect([err.line, err.limit]).toEqual([2, false]);
    expect(err.message).toMatch(/range\(0, 10, 0\): the step must not be 0/);
    expect(render("range-step.jinja", { a: 10, b: 0, c: -3 })).toBe("// a\n10,7,4,1,\n");
    expect(render("range-step.jinja", { a: 0, b: 10, c: -3 })).toBe("// a\n");
    expect(render("range-step.jinja", { a: 0, b: 5, c: 2 })).toBe("// a\n0,2,4,\n");
  });

  test("range() refuses non-numbers", () => {
    expect(renderError(() => render("range.jinja", { width: "9" })).message).toMatch(
      /range\(\) takes integers \(as in Jinja\), got the string "9"/,
    );
  });

  test("a render inside the limits is unaffected", () => {
    expect(render("small.jinja", { width: 5 })).toBe("01234\n");
  });

  test("each render of one renderer counts its own steps: renders just inside the limit succeed one after another, also after one that failed", () => {
    // range(w) counts w steps and the loop over it w more: 2 * 99,999 is just inside 200,000.
    const width = 99_999;
    for (let i = 0; i < 3; i++) expect(render("small.jinja", { width })).toHaveLength(488_886);
    expect(renderError(() => render("nested.jinja")).limit).toBe(true);
    expect(renderError(() => render("recurse.jinja")).limit).toBe(true);
    expect(render("small.jinja", { width })).toHaveLength(488_886);
    expect(render("small.jinja", { width: 5 })).toBe("01234\n");
  });

  test("a spec value that drives range() fails the build fast with a diagnostic", async () => {
    const root = axpbyProject({
      spec: (s) => {
        s.derive.width = "1000000000";
      },
      appendTemplate: "{% for i in range(width) %}\n// {{ i }}\n{% endfor %}\n",
    });
    const res = await compile(loadConfig(root));
    expect(res.files.size).toBe(0);
    const d = res.diagnostics.find((x) => x.code === "template_limit_exceeded");
    expect(d?.message).toMatch(/range\(1000000000\)/);
    expect(d?.location?.file).toMatch(/axpby\.wgsl\.jinja$/);
    expect(d?.location?.span).toBeDefined();
  });
});

describe("unclosedConstruct: where a syntax error at the end of the file starts", () => {
  const table: [string, string | undefined, number, number][] = [
    ["a\n{% if x %}\nb\n", "`{% if … %}` is never closed: add `{% endif %}`", 2, 1],
    ["{% for i in r %}{% if x %}{% endif %}", "`{% for … %}` is never closed: add `{% endfor %}`", 1, 1],
    ["{% if x %}{% endif %}\n  {% macro m() %}", "`{% macro … %}` is never closed: add `{% endmacro %}`", 2, 3],
    ["{% set a = '%}' %}{% set b %}x", "`{% set … %}` is never closed: add `{% endset %}`", 1, 19],
    ["x {{ y", "`{{` is never closed: the file ends before its `}}`", 1, 3],
    ["{# a\nb", "the comment `{#` is never closed: the file ends before its `#}`", 1, 1],
    ["{% raw %}{% if %}{% endraw %}{%- if x -%}", "`{% if … %}` is never closed: add `{% endif %}`", 1, 30],
    ["{% if x %}{% endif %}", undefined, 0, 0],
  ];
  test.each(table)("%j", (src, message, line, column) => {
    const found = unclosedConstruct(src);
    expect(found).toEqual(message === undefined ? undefined : { message, line, column });
    if (message !== undefined) expect(() => templateReads(src)).toThrow(message);
  });
});
