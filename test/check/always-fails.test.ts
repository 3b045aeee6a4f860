/**
 * expr_always_fails: a sub-expression whose value is an error on every input (a division by a
 * constant 0, an overflow of constants, an axis outside a declared rank) is an error at that
 * sub-expression; one that only some calls evaluate (a branch of `… if … else …`, the right side
 * of `and`/`or`) is a warning; one that no call evaluates (a branch a constant condition excludes)
 * is nothing. Lint reports it, the build stops on it, and the build also finds the ones that fail
 * only with a profile's values (tunables), where a call would evaluate them.
 */
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { lintProject } from "../support/project-shaders.js";
import { axpbyProject } from "../support/axpby-project.js";
import { checkSpecObject, probeSpec } from "./probe-spec.js";

/** The expr_always_fails diagnostics of the derive entry `probe` = `expr`: severity, the text pointed at, the message. */
function failures(expr: string, derive: Record<string, string | number> = {}): [string, string | undefined, string][] {
  const spec = probeSpec();
  Object.assign(spec.derive, derive);
  spec.derive.probe = expr;
  const r = checkSpecObject(spec);
  return r.diagnostics
    .filter((d) => d.code === "expr_always_fails" && d.location?.pointer === "/derive/probe")
    .map((d) => {
      const s = d.location?.span;
      return [d.severity, s && r.text.slice(s.start, s.end), d.message];
    });
}

describe("lint: sub-expressions that fail on every evaluation", () => {
  it.each([
    ["ceilDiv(1, 0)", "ceilDiv(1, 0)", "ceilDiv(1, 0): division by zero"],
    ["rows + ceilDiv(1, 0)", "ceilDiv(1, 0)", "ceilDiv(1, 0): division by zero"],
    ["7 // (2 - 2) + 1", "7 // (2 - 2)", "integer division by zero (7 / 0)"],
    ["5 % 0", "5 % 0", "modulo by zero (5 % 0)"],
    ["1.5 / 0", "1.5 / 0", "division by zero (1.5 / 0)"],
    ["rows % 0", "rows % 0", "modulo by zero: the divisor is 0 whatever the call"],
    ["ceilDiv(rows, 0)", "ceilDiv(rows, 0)", "division by zero: the divisor is 0 whatever the call"],
    ["attrs.alpha / -0", "attrs.alpha / -0", "division by zero: the divisor is 0 whatever the call"],
    ["9007199254740991 + 1", "9007199254740991 + 1", "integer overflow: 9007199254740992 is outside ±(2^53 - 1)"],
    ["floor(1e300)", "floor(1e300)", "integer overflow: 1e+300 is outside ±(2^53 - 1)"],
    ["dim([1, 2], 5)", "dim([1, 2], 5)", "dim(shape, 5): axis out of range for rank 2"],
    ["dim(shapes.x, 2)", "dim(shapes.x, 2)", "dim(shapes.x, 2): axis out of range for rank 2"],
    ["dim(shapes.x, -3)", "dim(shapes.x, -3)", "dim(shapes.x, -3): axis out of range for rank 2"],
    ["pow2ceil(9007199254740991)", "pow2ceil(9007199254740991)", "pow2ceil(9007199254740991): result exceeds 2^53"],
    ["(1 // 0 == 1) if true else false", "1 // 0", "integer division by zero (1 / 0)"],
    ["true and 1 // 0 == 1", "1 // 0", "integer division by zero (1 / 0)"],
    ["false or 1 // 0 == 1", "1 // 0", "integer division by zero (1 / 0)"],
  ])("`%s` is an error at `%s`", (expr, at, reason) => {
    expect(failures(expr)).toEqual([
      ["error", at, `\`${at}\` fails whenever it is evaluated (${reason}): every call that evaluates it would fail to plan`],
    ]);
  });

  it("a divisor that is 0 through constant derive entries; the entry that fails is reported, not its readers", () => {
    expect(failures("rows // zero", { zero: "1 - 1" })).toEqual([
      [
        "error",
        "rows // zero",
        "`rows // zero` fails whenever it is evaluated (division by zero: the divisor is 0 whatever the call): every call that evaluates it would fail to plan",
      ],
    ]);
    expect(failures("bad + 1", { bad: "ceilDiv(1, 0)" })).toEqual([]);
  });

  it.each([
    ["rows if rows > 2 else ceilDiv(1, 0)", "ceilDiv(1, 0)", "`rows > 2` does not hold"],
    ["ceilDiv(rows, 0) if rows > 2 else rows", "ceilDiv(rows, 0)", "`rows > 2` holds"],
    ["rows > 2 and rows % 0 == 1", "rows % 0", "`rows > 2` holds"],
    ["rows > 2 or rows % 0 == 1", "rows % 0", "`rows > 2` does not hold"],
    ["flag and (rows if rows > 2 else 1 // 0) > 0", "1 // 0", "`rows > 2` does not hold"],
    // The checker does not solve conditions: one that no call meets still guards a branch.
    ["1 // 0 if rows < 0 and rows > 0 else rows", "1 // 0", "`rows < 0 and rows > 0` holds"],
  ])("`%s`: a branch only some calls evaluate is a warning at `%s`", (expr, at, when) => {
    const [[severity, text, message]] = failures(expr);
    expect([severity, text]).toEqual(["warning", at]);
    expect(message).toContain(`; it is evaluated when ${when}, and those calls would fail to plan`);
  });

  it("both branches failing is an error at each: the conditional fails wherever it is evaluated", () => {
    expect(failures("ceilDiv(1, 0) if rows > 2 else 5 % 0").map(([s, at]) => [s, at])).toEqual([
      ["error", "ceilDiv(1, 0)"],
      ["error", "5 % 0"],
    ]);
  });

  it.each([
    "rows if true else ceilDiv(1, 0)",
    "ceilDiv(1, 0) if false else rows",
    "false and 1 // 0 == 1",
    "true or 1 // 0 == 1",
    "rows // max(rows, 1)",
    "ceilDiv(rows, tunables.WG)",
    "rows % attrs.axis",
    "dim(shapes.x, 1) + dim(shapes.x, -2)",
    "dim(shapes.bias, 3)",
  ])("`%s` is not reported (never evaluated, or may have a value)", (expr) => {
    expect(failures(expr)).toEqual([]);
  });
});

describe("build", () => {
  function lint(root: string) {
    return lintProject(root);
  }

  it("stops on an error lint reports, with the same location; a warning alone builds", async () => {
    const bad = axpbyProject({ spec: (s) => s.when.push("ceilDiv(1, 0) > 0") });
    const built = await compile(loadConfig(bad));
    expect(built.diagnostics.map((d) => [d.code, d.severity, d.location?.pointer])).toEqual([["expr_always_fails", "error", "/when/1"]]);
    expect(built.files.size).toBe(0);
    const guarded = axpbyProject({ spec: (s) => s.when.push("n > 0 or n // 0 > 0") });
    expect(lint(guarded).diagnostics.map((d) => [d.code, d.severity])).toEqual([["expr_always_fails", "warning"]]);
    const ok = await compile(loadConfig(guarded));
    expect(ok.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(ok.files.size).toBeGreaterThan(0);
  });

  it("reports what fails only with the profile's values, where calls evaluate it, not in entries nothing reads there", async () => {
    const root = axpbyProject({
      spec: (s) => {
        s.derive.perGroup = "n // (wg - 256)";
        s.derive.unread = "n // (wg - 256)";
        s.when.push("perGroup >= 0", "(n // (wg - 256) > 0) if n > 3 else true");
      },
    });
    expect(lint(root).diagnostics.filter((d) => d.code === "expr_always_fails")).toEqual([]);
    const built = await compile(loadConfig(root));
    const errors = built.diagnostics.filter((d) => d.severity === "error");
    expect(errors.map((d) => [d.code, d.location?.pointer])).toEqual([
      ["expr_always_fails", "/derive/perGroup"],
      ["expr_always_fails", "/derive/perGroup"],
    ]);
    expect(errors.map((d) => d.message).sort()).toEqual(
      ["float16", "float32"].map(
        (t) =>
          `\`n // (wg - 256)\` fails whenever it is evaluated on profile core (T=${t}, WG=256) (division by zero: the divisor is 0 whatever the call): every call that evaluates it would fail to plan`,
      ),
    );
  });
});
