/**
 * Diagnostics quote untrusted text (config values, spec strings, file names): rendered for a
 * terminal, a log or GitHub, no control character, escape sequence or bidirectional override of
 * that text reaches the output as it is; each is shown as one visible character.
 */
import { describe, expect, it } from "vitest";
import { makeDiagnostic } from "../../src/core/codes.js";
import { renderGithub, renderJson, renderText, visible } from "../../src/core/render-diagnostics.js";

const HOSTILE = "a\u001b[31mred\u0007\rover\u009b2J\u202eevil\u007f";
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe("rendered diagnostics show untrusted text, never act on it", () => {
  it("visible: one character for one, tab and newline kept", () => {
    expect(visible("x\u001by\rz\u0007\u007f\u0085\u2066\tq\nw")).toBe("x\u241by\u240dz\u2407\u2421\ufffd\ufffd\tq\nw");
    expect(visible("gén ëré/out")).toBe("gén ëré/out");
  });

  it("text: message, hint, note and file name", () => {
    const file = `specs/${HOSTILE}.json`;
    const d = makeDiagnostic(
      "unknown_profile",
      `profile "${HOSTILE}" is not known`,
      { file, pointer: "/profiles/0" },
      {
        hint: `did you mean ${HOSTILE}?`,
        notes: [{ message: HOSTILE }],
      },
    );
    const text = renderText([d], () => undefined);
    expect(text).not.toMatch(RAW);
    expect(text).toContain("a\u241b[31mred\u2407\u240dover\ufffd2J\ufffdevil\u2421");
    expect(text.split("\n")[0]).toMatch(/^error\[unknown_profile\]: profile "a␛\[31mred/);
  });

  it("text: a code frame of a line holding a control character keeps the caret under the span", () => {
    const source = `{"out": "x\u001b", "y": 1}`;
    const start = source.indexOf('"y"');
    const d = makeDiagnostic("config_invalid", "bad y", { file: "c.json", span: { start, end: start + 3 } });
    const lines = renderText([d], () => source).split("\n");
    const code = lines.find((l) => l.startsWith("  1 | "))!;
    const marks = lines[lines.indexOf(code) + 1]!;
    expect(code).not.toMatch(RAW);
    expect(marks.indexOf("^")).toBe(code.indexOf('"y"'));
  });

  it("github: message and file name", () => {
    const d = makeDiagnostic("unknown_profile", HOSTILE, { file: `specs/${HOSTILE}.json` }, { hint: HOSTILE });
    const line = renderGithub([d], () => undefined);
    expect(line.trimEnd()).not.toMatch(RAW);
    expect(line.trimEnd().split("\n")).toHaveLength(1);
  });

  it("a name of 100000 characters is shown cut, in text and GitHub output; JSON keeps it whole (it was printed whole, twice)", () => {
    const name = "a".repeat(50_000) + "\u{1F600}" + "b".repeat(50_000);
    const d = makeDiagnostic(
      "schema_value",
      `the name \`${name}\` is too long`,
      { file: "specs/K.json", pointer: `/derive/${name}` },
      { hint: `rename \`${name}\``, notes: [{ message: name }] },
    );
    const text = renderText([d], () => undefined);
    const github = renderGithub([d], () => undefined);
    for (const out of [text, github]) {
      expect(out.length).toBeLessThan(6000);
      expect(out).toMatch(/…\[\d+ characters\]…/);
      expect(out).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    }
    expect(text).toMatch(/^error\[schema_value\]: the name `a+…\[\d+ characters\]…b+` is too long$/m);
    expect(JSON.stringify(renderJson([d], () => undefined))).toContain(name);
  });
});
