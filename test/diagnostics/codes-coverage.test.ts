/**
 * Static scan: every code of src/core/codes.ts must be emitted somewhere in src/ (as a string
 * literal outside codes.ts) and shown rendered by some test under test/ (the text renderer's
 * `error[code]` or `warning[code]` header in a golden file or a test's expected text). A code that
 * nothing emits is dead documentation; a code no test renders can silently stop being emitted.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { CODES } from "../../src/core/codes.js";

const root = path.resolve(__dirname, "../..");
const SELF = path.relative(root, __filename).split(path.sep).join("/");

/** Every file under `dir` (relative to the repository root, "/"-separated) whose name passes `keep`. */
function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(child);
      else if (e.isFile() && keep(e.name)) out.push(child);
    }
  };
  walk(dir);
  return out.sort();
}

/** The codes `text` mentions as string literals ("code" or 'code'). */
function literalCodes(text: string, codes: ReadonlySet<string>): Set<string> {
  const found = new Set<string>();
  for (const m of text.matchAll(/["'`]([a-z][a-z0-9_]*)["'`]/g)) if (codes.has(m[1])) found.add(m[1]);
  return found;
}

/** The codes whose rendered header (`error[code]:` / `warning[code]:`) `text` contains. */
function renderedCodes(text: string, codes: ReadonlySet<string>): Set<string> {
  const found = new Set<string>();
  // Also as a regular expression's source (`error\[code\]`, or `error\\[code\\]` in a string given
  // to new RegExp), as tests matching one line write it.
  for (const m of text.matchAll(/\b(?:error|warning)(?:\\{1,2})?\[([a-z][a-z0-9_]*)(?:\\{1,2})?\]/g)) if (codes.has(m[1])) found.add(m[1]);
  return found;
}

describe("diagnostic codes", () => {
  const codes = new Set(Object.keys(CODES));

  it("are each emitted in src/ and shown rendered by a test", () => {
    const emittedIn = new Map<string, string[]>();
    for (const file of filesUnder("src", (n) => n.endsWith(".ts"))) {
      if (file === "src/core/codes.ts") continue;
      for (const c of literalCodes(fs.readFileSync(path.join(root, file), "utf8"), codes))
        emittedIn.set(c, [...(emittedIn.get(c) ?? []), file]);
    }
    const testedIn = new Map<string, string[]>();
    for (const file of filesUnder("test", (n) => /\.(ts|txt)$/.test(n))) {
      if (file === SELF) continue;
      for (const c of renderedCodes(fs.readFileSync(path.join(root, file), "utf8"), codes))
        testedIn.set(c, [...(testedIn.get(c) ?? []), file]);
    }
    const problems: string[] = [];
    for (const c of codes) {
      const emitted = emittedIn.has(c);
      const tested = testedIn.has(c);
      if (emitted && tested) continue;
      const lacks = [
        ...(emitted
          ? []
          : [
              `is never emitted: no file of src/ other than src/core/codes.ts names "${c}" (emit it where it belongs, or remove it from src/core/codes.ts and docs/diagnostics.md)`,
            ]),
        ...(tested
          ? []
          : [
              `has no test showing it rendered: no file under test/ contains \`${CODES[c as keyof typeof CODES].severity}[${c}]:\` (add a case to test/diagnostics/rendered.test.ts with its golden test/diagnostics/golden/${c}.txt, or a lint corpus case under test/lint/corpus/)`,
            ]),
      ];
      problems.push(`${c} ${lacks.join("; and ")}`);
    }
    expect(problems, `codes of src/core/codes.ts lacking an emitter or a rendered test:\n${problems.join("\n")}\n`).toEqual([]);
  });

  it("the scan finds what it looks for (it is not vacuous)", () => {
    expect(literalCodes(`makeDiagnostic("json_syntax", "x"); report('usage')`, codes)).toEqual(new Set(["json_syntax", "usage"]));
    expect(literalCodes(`const json_syntax = 1; // unknown_name`, codes)).toEqual(new Set());
    expect(renderedCodes("exit: 1\nerror[json_syntax]: bad\nwarning[unused_derive]: x\nerror[not_a_code]: y", codes)).toEqual(
      new Set(["json_syntax", "unused_derive"]),
    );
    expect(renderedCodes(`expect(d.code).toBe("json_syntax")`, codes)).toEqual(new Set());
    expect(renderedCodes(String.raw`expect(r.stderr).toMatch(/^error\[usage\]: no kernel/m)`, codes)).toEqual(new Set(["usage"]));
    expect(renderedCodes(String.raw`new RegExp("error\\[usage\\]: no")`, codes)).toEqual(new Set(["usage"]));
    expect(filesUnder("src", (n) => n.endsWith(".ts"))).toContain("src/core/codes.ts");
    expect(filesUnder("test", (n) => n.endsWith(".txt")).some((f) => f.startsWith("test/lint/corpus/"))).toBe(true);
  });
});
