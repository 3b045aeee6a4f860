/**
 * Template expressions compute what Jinja computes, or fail with a located template_error: never a
 * different value. Nunjucks (which renders kernelc's templates) differed from Jinja where shader
 * constants are computed: `3 < 2 < 1` was true, `7 * 3 // 2` was 7, `-7 % 2` was -1, `[] or 3` was
 * `[]`, `"1" == 1` was true, `2 ** 60` printed a rounded number, `6 / 2` printed 3 (Jinja 3.0), the
 * `int` of 1e21 was 1, `round` rounded halves up, `[1, 2)` was a list. Every expected value below
 * is what Jinja 3.1 renders for the same template and context (booleans print as WGSL's `true` and
 * `false`, kernelc's one deliberate difference); every refusal is of a template Jinja renders
 * differently from Python's reading, fails on, or renders as a float kernelc does not print.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { compile } from "../../src/api/compile.js";
import { templateReads, TemplateSyntaxError } from "../../src/check/template-reads.js";
import { RenderError, TemplateRenderer } from "../../src/emit/render.js";
import { formatNumber } from "../../src/emit/template-jinja.js";
import { loadConfig } from "../../src/plan/config.js";
import { cleanShaders } from "../support/project-shaders.js";
import { axpbyProject } from "../support/axpby-project.js";

const CONTEXT = { n: 4, m: -7, xs: [1, 2], e: [], s: "ab", d: { a: 1 }, h: 0.5, big: 2 ** 52 };

/** A templates folder with one file that each call rewrites, and the build's renderer for it. */
function scratch(): (src: string) => string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-jinja-"));
  const renderer = new TemplateRenderer(root);
  return (src) => {
    fs.writeFileSync(path.join(root, "t.jinja"), src);
    renderer.refresh();
    return renderer.render({ templatesDir: root, shader: "t.jinja", context: CONTEXT, declarations: "" }).wgsl;
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

describe("expressions render as in Jinja", () => {
  const render = scratch();
  test.each([
    // Comparison chains: `a < b < c` is `a < b and b < c`, each operand computed once.
    ["{{ 3 < 2 < 1 }}", "false"],
    ["{{ 1 < 2 < 3 }}", "true"],
    ["{{ 1 < n <= 4 != 5 }}", "true"],
    ["{{ 2 > 1 > 0 > -1 == -1 }}", "true"],
    // One level for `+ -` and one for `* / // %`, each left to right.
    ["{{ 7 * 3 // 2 }}", "10"],
    ["{{ 4 * 3 % 5 }}", "2"],
    ["{{ 20 // 3 * 3 }}", "18"],
    ["{{ 2 * 7 / 4 }}", "3.5"],
    ["{{ 8 - 2 + 1 }}", "7"],
    ["{{ 2 * n // 3 % 2 }}", "0"],
    // Floor division and modulo round toward minus infinity.
    ["{{ -7 // 2 }},{{ -7 % 2 }},{{ 7 // -2 }},{{ 7 % -2 }},{{ -7 // -2 }},{{ -7 % -2 }}", "-4,1,-4,-1,3,-1"],
    ["{{ m // 2 }},{{ m % 3 }},{{ m % 7 }}", "-4,2,0"],
    ["{{ (7.5 // 2) | int }},{{ -7.5 % 2 }},{{ h % 0.3 }}", "3,0.5,0.2"],
    // `/` is a float: printed when it is not an integer, made an int with `| int`.
    ["{{ 7 / 2 }},{{ 1 / 3 }},{{ (7 / 2) | int }},{{ (6 / 2) | int }},{{ (-7 / 2) | int }}", "3.5,0.3333333333333333,3,3,-3"],
    ["{{ (6 / 4 + 0.5) | int }}", "2"],
    // `**`, exact up to 2^53.
    [
      "{{ 2 ** 10 }},{{ 2 ** -1 }},{{ 2 ** 52 }},{{ (2) ** 3 }},{{ 4 ** 0.5 | int }},{{ (4 ** 0.5) | int }}",
      "1024,0.5,4503599627370496,8,1,2",
    ],
    ["{{ big + (big - 1) }},{{ -big - (big - 1) }}", "9007199254740991,-9007199254740991"],
    // Filters on negatives and floats.
    ['{{ -3.7 | int }},{{ 3.7 | int }},{{ "42" | int }},{{ "4.9" | int }},{{ "x" | int }},{{ "x" | int(7) }}', "-3,3,42,4,0,7"],
    ["{{ 3.5 | round | int }},{{ 2.5 | round | int }},{{ -2.5 | round | int }},{{ 2.6 | round | int }},{{ n | round }}", "4,2,-2,3,4"],
    ['{{ 2.1 | round(method="ceil") | int }},{{ -2.1 | round(0, "floor") | int }}', "3,-3"],
    ["{{ -4 | abs }},{{ m | abs }},{{ -0.5 | abs }},{{ h | float }},{{ 0.1 + 0.2 }}", "4,7,0.5,0.5,0.30000000000000004"],
    ["{{ 0.00001 * 1 }},{{ h / 100000 }},{{ 1.5 | string }}", "1e-05,5e-06,1.5"],
    // Truth values: empty lists, mappings and strings are false; `and`/`or` return an operand.
    ['{{ [] or 3 }},{{ 0 or "z" }},{{ 1 and 2 }},{{ e or s }},{{ (e and 1) | length }}', "3,z,2,ab,0"],
    [
      "{% if e %}y{% else %}n{% endif %},{% if d %}y{% else %}n{% endif %},{{ 1 if [] else 2 }},{{ not e }},{{ not {} }}",
      "n,y,2,true,true",
    ],
    ['{{ e | default(5, true) }},{{ 0 | default(5) }},{{ "" | default("x", true) }},{{ 0 | d(boolean=true, default_value=2) }}', "5,0,x,2"],
    ['{{ xs | sum(start=10) }},{{ xs | join(d="+") }}', "13,1+2"],
    ["{{ [] is falsy }},{{ [0] is truthy }}", "true,true"],
    // Equality and `in` by value; a mapping's keys only.
    ['{{ "1" == 1 }},{{ 1 == true }},{{ [1, 2] == xs }},{{ {"a": 1} == d }},{{ [[1]] == [[1]] }}', "false,true,true,true,true"],
    [
      '{{ "a" in s }},{{ 2 in xs }},{{ "a" in d }},{{ "toString" in d }},{{ [1] in [[1]] }},{{ 3 not in xs }}',
      "true,true,true,false,true,true",
    ],
    // Strings and lists repeat and join.
    ['{{ "ab" * 3 }},{{ 2 * s }},{{ "x" * -1 }},{{ (xs + [3]) | join("-") }},{{ (xs * 2) | length }}', "ababab,abab,,1-2-3,4"],
    ['{{ "x" ~ h ~ n ~ 0.00001 }},{{ [h, 1, "a"] | join(",") }},{{ range(3) | sum }},{{ [h, h, h] | sum }}', "x0.541e-05,0.5,1,a,3,1.5"],
    // Tests on negatives and booleans; `range` down.
    [
      "{{ m is odd }},{{ -4 is even }},{{ 10 is divisibleby(-5) }},{{ true is number }},{{ n is ge(3) }},{{ -n is even }}",
      "true,true,true,true,true,true",
    ],
    ['{{ range(10, 0, -3) | join(",") }};{{ range(0, -5, -2) | join(",") }};{{ range(3, 3) | length }}', "10,7,4,1;0,-2,-4;0"],
    ["{{ xs[-1] }},{{ xs[-2] }}", "2,1"],
    // Strings index as Python's (by code point, negative from the end, undefined past either end) and slice as Python's.
    [
      '{{ s[0] }},{{ s[-1] }},{{ "abc"[1] }},{{ s[0] == "a" }},{{ s[2] is defined }},{{ s[-3] is defined }},{{ "a😀b"[-2] }}',
      "a,b,b,true,false,false,😀",
    ],
    [
      '{{ s[1:] }},{{ "abcdef"[1:5:2] }},{{ "abcdef"[-2:] }},{{ "abcdef"[:-2] }},{{ "abcdef"[::-1] }},{{ "abcdef"[5:1:-2] }},{{ "abcdef"[-100:100] }},{{ "abcdef"[10:] }}.',
      "b,bd,ef,abcd,fedcba,fd,abcdef,.",
    ],
    [
      '{{ xs[1:] | join("-") }},{{ (xs + [3, 4])[::-2] | join("-") }},{{ xs[none:1] | join }},{{ xs[5:] | length }},{{ "a😀b"[1:] }},{{ s[:] }},{{ xs[-1:][0] }}',
      "2,4-2,1,0,😀b,ab,2",
    ],
    // A string's characters are code points in loops and in the filters that count or pick them (nunjucks split 😀 in two).
    [
      '{% for c in "a😀b" %}[{{ c }}]{% endfor %},{{ "a😀b" | length }},{{ "a😀b" | reverse }},{{ "😀b" | first }},{{ "a😀" | last }},{{ "a😀" | list | length }}',
      "[a][😀][b],3,b😀a,😀,😀,2",
    ],
    // `round(p)` of a float: Python's round() of its exact binary value (2.675 is 2.67499…), halves to even (0.125).
    [
      "{{ 2.675 | round(2) }},{{ 0.125 | round(2) }},{{ 0.375 | round(2) }},{{ -2.675 | round(2) }},{{ (h / 3) | round(5) }},{{ 1.15 | round(1) }},{{ 2.999 | round(2) | int }},{{ n | round(3) }},{{ 2.5 | round(2) }}",
      "2.67,0.12,0.38,-2.67,0.16667,1.1,3,4,2.5",
    ],
    [
      '{{ 42.55 | round(1, "floor") }},{{ 123.456 | round(1, "ceil") }},{{ -(1 / 3) | round(5, "floor") }},{{ n | round(2, "ceil") | int }},{{ 0.1 | round(15) }}',
      "42.5,123.5,-0.33334,4,0.1",
    ],
    ["{{ 1 + true }},{{ (1 < 2) == true }},{{ -0 }}", "2,true,0"],
  ])("%s renders %s", (src, out) => {
    expect(render(src)).toBe(`${out}\n`);
  });
});

describe("what Jinja computes differently from kernelc's numbers, or fails on, is a located template_error", () => {
  const render = scratch();
  test.each([
    [
      "{{ 6 / 2 }}",
      "`6 / 2` is the float 3.0 in Jinja, which prints with `.0`: for an integer apply `| int` (`(a / b) | int`), or divide with `//`",
    ],
    ["{{ 2.5 | round }}", "`2.5 | round` is the float 2.0 in Jinja, which prints with `.0`"],
    ["{{ h * 4 }}", "`0.5 * 4` is the float 2.0 in Jinja, which prints with `.0`"],
    ["{{ 3 | float }}", "`3 | float` is the float 3.0 in Jinja"],
    ['{{ "x" ~ 6 / 2 }}', "`6 / 2` is the float 3.0 in Jinja, which `~` would join as text ending in `.0`"],
    ["{{ [h, h] | sum }}", "`0.5 + 0.5` is the float 1.0 in Jinja, which prints with `.0`"],
    ["{{ big + big - 1 }}", "4503599627370496 + 4503599627370496 is outside ±9007199254740991 (2^53 - 1)"],
    ,
    ["{{ range(6 / 2) | length }}", "`6 / 2` is the float 3.0 in Jinja, which range() does not take (a TypeError)"],
    ["{{ xs[2 / 2] }}", "`2 / 2` is the float 1.0 in Jinja, which is not an index (a TypeError)"],
    ["{{ 7.5 // 2 }}", "`7.5 // 2` is the float 3.0 in Jinja"],
    ["{{ [6 / 2] | join }}", "`6 / 2` is the float 3.0 in Jinja, which `join` would write with `.0`"],
    [
      "{{ 2 ** 53 }}",
      "2 ** 53 is outside ±9007199254740991 (2^53 - 1): Jinja computes it exactly, kernelc templates only within that range (compute it in the spec instead)",
    ],
    ["{{ big * 4 }}", "4503599627370496 * 4 is outside ±9007199254740991 (2^53 - 1)"],
    ["{{ -big - big - 1 }}", "-4503599627370496 - 4503599627370496 is outside ±9007199254740991"],
    ['{{ "1e300" | int }}', '"1e300" | int is outside ±9007199254740991'],
    ["{{ n // 0 }}", "4 // 0 divides by zero (an error in Jinja)"],
    ["{{ n % 0 }}", "4 % 0 divides by zero (an error in Jinja)"],
    ["{{ n / 0 }}", "4 / 0 divides by zero (an error in Jinja)"],
    ["{{ 0 ** -1 }}", "0 ** -1 divides by zero (an error in Jinja)"],
    ["{{ (-8) ** (1 / 3) }}", "raises a negative number to a fractional power: Jinja gives a complex number"],
    ['{{ "a" - 1 }}', '`-` cannot take the string "a" and the integer 1 (Jinja fails here)'],
    ['{{ "a" + 1 }}', '`+` cannot take the string "a" and the integer 1 (Jinja fails here)'],
    ["{{ n + undefinedName }}", "`+` cannot take the integer 4 and an undefined value (Jinja fails here)"],
    ['{{ -"a" }}', 'unary `-` cannot take the string "a" (Jinja fails here)'],
    ['{{ "a" < 1 }}', '`<` cannot order the string "a" and the integer 1 (Jinja fails here)'],
    ["{{ xs < [3] }}", "`<` cannot order a list and a list"],
    ["{{ 1 in s }}", "`in` a string needs a string to look for, not the integer 1 (Jinja fails here)"],
    ["{{ 1 in n }}", "`in` needs a list, a string or a mapping on its right, not the integer 4 (Jinja fails here)"],
    ['{{ "x" ~ none }}', "`~` joins none, which Jinja writes as `None`"],
    ["{{ range(2.5) | length }}", "range() takes integers (as in Jinja), got 2.5: round it with `| int`"],
    ["{{ 1.005 | round(2) }}", "`1.005 | round(2)` is the float 1.0 in Jinja, which prints with `.0`"],
    ["{{ 2.5 | round(16) }}", "`round` takes a precision of 0 to 15 digits, not 16"],
    [
      "{{ s.length }}",
      'a string has no members in kernelc templates (`.length` or `["length"]` is undefined or a method in Jinja): use a filter (`s | length`, `s | upper`) or an integer index (`[0]`, `[-1]`)',
    ],
    ['{{ s["upper"] }}', "a string has no members in kernelc templates"],
    [
      "{{ xs.length }}",
      'a list has no members in kernelc templates (`.length` or `["length"]` is undefined or a method in Jinja): use a filter (`xs | length`, `xs | first`)',
    ],
    ['{{ xs["0"] }}', "a list has no members in kernelc templates"],
    ["{{ n[1:] }}", "`[a:b]` slices a list or a string, not the integer 4"],
    [
      "{{ s[1.5:] }}",
      "a slice's start must be an integer or left out, not the float 1.5 (Jinja gives an undefined value): convert it with `| int`",
    ],
    ['{{ xs[:"1"] }}', 'a slice\'s stop must be an integer or left out, not the string "1"'],
    ["{{ s[undefinedName:] }}", "a slice's start must be an integer or left out, not an undefined value"],
    ["{{ s[::0] }}", "a slice's step must not be 0 (an error in Jinja): leave it out for 1, or give -1 to reverse"],
    ["{{ s[(6 / 2):] }}", "`6 / 2` is the float 3.0 in Jinja, which is not a slice index (a TypeError)"],
    ['{{ n | round(0, "up") }}', '`round`\'s method is "common", "ceil" or "floor", not "up"'],
    ["{{ n | int(0, 16) }}", "the filter `int` takes at most 1 (default)"],
    ["{{ n | abs(base=2) }}", "the filter `abs` has no argument `base`"],
    ["{{ s | join }}", 'the filter `join` joins a list, not the string "ab"'],
    ['{{ ["a"] | sum }}', '`+` cannot take the integer 0 and the string "a"'],
  ])("%s", (src, message) => {
    const err = thrown(() => render(`// line 1\n  {{ 1 }}{{ n }} {{ n }}\n${src}\n`));
    expect(err).toBeInstanceOf(RenderError);
    const e = err as RenderError;
    expect(e.message).toContain(message);
    // At the statement, or at the call (`range(…)`) where one is.
    expect([e.file, e.line]).toEqual(["t.jinja", 3]);
    expect(e.column).toBeGreaterThanOrEqual(1);
  });
});

/** [template line 2, message, 1-based column, refused (a construct) rather than unparsed]: from lint and from the build. */
const PARSE_ERRORS: readonly (readonly [string, string, number, boolean])[] = [
  ["{{ 2 ** 3 ** 2 }}", "`a ** b ** c` is `(a ** b) ** c` in Jinja but `a ** (b ** c)` in Python: write the brackets you mean", 4, true],
  ["{{ -2 ** 2 }}", "`-a ** b` is `(-a) ** b` in Jinja but `-(a ** b)` in Python: write the brackets you mean", 4, true],
  [
    "{{ n + 1 is even }}",
    "`is` after an operator without brackets: Jinja tests the value right before `is` (`n + 1 is even` is `n + (1 is even)`): write `(n + 1) is even`",
    4,
    true,
  ],
  [
    "{{ n == 4 in xs }}",
    "`in` chained with another comparison: Jinja reads `a == b in c` as `a == b and b in c`: write `and` or brackets",
    6,
    true,
  ],
  [
    "{{ n in xs in [true] }}",
    "`in` chained with another comparison: Jinja reads `a == b in c` as `a == b and b in c`: write `and` or brackets",
    4,
    true,
  ],
  ["{{ n === 4 }}", "`===` is not a Jinja operator: write `==`", 6, true],
  ["{{ n !== 4 }}", "`!==` is not a Jinja operator: write `!=`", 6, true],
  ["{{ [1, 2) }}", "`[` at line 2, column 4 is closed by `)`: close it with `]`", 9, false],
  ["{{ (1] }}", "`(` at line 2, column 4 is closed by `]`: close it with `)`", 6, false],
  ['{{ {"a": 1] }}', "`{` at line 2, column 4 is closed by `]`: close it with `}`", 11, false],
  ["{{ xs[0) }}", "`[` at line 2, column 6 is closed by `)`: close it with `]`", 8, false],
  ["{{ 2.0 }}", "`2.0` is a float in Jinja, which prints as `2.0`; kernelc templates keep integers integers: write `2`", 4, false],
  ["{{ [1:2] }}", "a slice `a:b` is written only inside the brackets after a list or a string (`xs[1:]`, `s[:-1]`)", 5, true],
  ["{{ s[1:2:3:4] }}", "a slice has at most three parts, `start:stop:step`", 11, false],
  [
    "{{ 9007199254740993 }}",
    "`9007199254740993` is outside ±9007199254740991 (2^53 - 1), beyond which kernelc templates cannot compute integers exactly: compute it in the spec",
    4,
    false,
  ],
];

describe("constructs Jinja and Python, or Jinja and Nunjucks, read differently are located template errors", () => {
  const render = scratch();
  test.each(PARSE_ERRORS)("%s: the build's renderer", (src, message, column, refused) => {
    const err = thrown(() => render(`// line 1\n${src}\n`));
    expect(err).toBeInstanceOf(RenderError);
    const e = err as RenderError;
    expect([e.message, e.file, e.line, e.column]).toEqual([
      refused ? `the template is refused: ${message}` : message,
      "t.jinja",
      2,
      column,
    ]);
  });

  test.each(PARSE_ERRORS)("%s: lint", (src, message, column, refused) => {
    const err = thrown(() => templateReads(`// line 1\n${src}\n`));
    expect(err).toBeInstanceOf(TemplateSyntaxError);
    const e = err as TemplateSyntaxError;
    expect([e.message, e.line, e.column, e.refused]).toEqual([message, 2, column, refused]);
  });

  test("the bracketed forms render", () => {
    expect(render("{{ (2 ** 3) ** 2 }},{{ 2 ** (3 ** 2) }},{{ (-2) ** 2 }},{{ -(2 ** 2) }},{{ (n + 1) is even }},{{ [1, 2][1] }}")).toBe(
      "64,512,4,-4,false,2\n",
    );
  });
});

describe("`{% switch %}` compares its cases by Jinja's `==`", () => {
  const render = scratch();
  // Nunjucks compiled the tag to a JavaScript switch (`===`): `6 / 2` matched no `case 3`, `[1, 2]` no `case [1, 2]`.
  test.each([
    ["{% switch 6 / 2 %}{% case 3 %}three{% default %}other{% endswitch %}", "three"],
    ["{% switch h * 2 %}{% case 1 %}one{% endswitch %}", "one"],
    ['{% switch "1" %}{% case 1 %}one{% default %}other{% endswitch %}', "other"],
    ['{% switch n %}{% case "4" %}text{% case 4 %}four{% endswitch %}', "four"],
    ["{% switch xs %}{% case [2, 1] %}no{% case [1, 2] %}list{% endswitch %}", "list"],
    ['{% switch d %}{% case {"a": 1} %}map{% endswitch %}', "map"],
    ["{% switch true %}{% case 1 %}one{% endswitch %}", "one"],
    // An empty case runs the next case's body (or the default's, after the last case), as nunjucks' did.
    ["{% switch n %}{% case 3 %}{% case 4 %}3or4{% case 5 %}five{% endswitch %}", "3or4"],
    ["{% switch n %}{% case 5 %}five{% case 4 %}{% default %}dflt{% endswitch %}", "dflt"],
    ["{% switch n %}{% case 5 %}five{% case 6 %}{% endswitch %}.", "."],
    // The value is computed once; the cases in order, until one matches.
    ["{% switch n %}{% case 4 %}{% case n + undefinedName %}{% endswitch %}.", "."],
  ])("%s renders %s", (src, out) => {
    expect(render(src)).toBe(`${out}\n`);
  });

  test("a case that cannot be compared is a located template_error", () => {
    const err = thrown(() => render("// line 1\n{% switch n %}{% case 5 %}five{% case n + undefinedName %}x{% endswitch %}\n"));
    expect(err).toBeInstanceOf(RenderError);
    const e = err as RenderError;
    expect(e.message).toContain("`+` cannot take the integer 4 and an undefined value (Jinja fails here)");
    expect([e.file, e.line]).toEqual(["t.jinja", 2]);
  });
});

test("formatNumber writes Python's text of a number", () => {
  expect([0.1, 1e-4, 1e-5, 1.5e-7, 123.25, -2.5e-10, 42, -0].map(formatNumber)).toEqual([
    "0.1",
    "0.0001",
    "1e-05",
    "1.5e-07",
    "123.25",
    "-2.5e-10",
    "42",
    "0",
  ]);
});

describe("in a project", () => {
  test("Jinja's arithmetic reaches the shader, and a float it would print is a template_error at the template's line", async () => {
    const ok = axpbyProject({ appendTemplate: "// jinja: {{ 7 * 3 // 2 }} {{ -7 % 2 }} {{ 3 < 2 < 1 }} {{ [] or 3 }}\n" });
    const shaders = await cleanShaders(ok);
    for (const wgsl of shaders) expect(wgsl).toContain("// jinja: 10 1 false 3\n");

    const bad = axpbyProject({ appendTemplate: "// half: {{ 6 / 2 }}u\n" });
    const failed = await compile(loadConfig(bad));
    expect(failed.files.size).toBe(0);
    const errors = failed.diagnostics.filter((d) => d.severity === "error");
    expect(errors.length).toBeGreaterThan(0);
    const text = fs.readFileSync(path.join(bad, "templates/axpby.wgsl.jinja"), "utf8");
    const line = text.split("\n").findIndex((l) => l.startsWith("// half:")) + 1;
    for (const d of errors) {
      expect(d.code).toBe("template_error");
      expect(d.message).toContain("`6 / 2` is the float 3.0 in Jinja");
      expect(d.location?.file).toBe(path.join(fs.realpathSync(bad), "templates/axpby.wgsl.jinja"));
      expect(text.slice(0, d.location!.span!.start).split("\n").length).toBe(line);
    }
  });
});
