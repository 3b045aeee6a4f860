import { describe, expect, it } from "vitest";
import { makeDiagnostic } from "../../src/core/codes.js";
import { dedupeDiagnostics, occurrenceText } from "../../src/core/dedupe.js";
import { LineMap } from "../../src/core/line-map.js";

const at = (start: number) => ({ file: "/t/a.wgsl.jinja", span: { start, end: start + 1 } });

describe("dedupeDiagnostics", () => {
  it("keeps one of exact duplicates, in first-seen order, without notes when no place is given", () => {
    const a = makeDiagnostic("template_error", "x is undefined", at(3));
    const b = makeDiagnostic("template_error", "y is undefined", at(1));
    expect(dedupeDiagnostics([a, b, { ...a }, b])).toEqual([a, b]);
  });

  it("tells apart the same message at another span, file, code or severity", () => {
    const a = makeDiagnostic("template_error", "m", at(3));
    const others = [
      makeDiagnostic("template_error", "m", at(4)),
      makeDiagnostic("template_error", "m", { file: "/t/b", span: { start: 3, end: 4 } }),
      makeDiagnostic("wgsl_invalid", "m", at(3)),
      makeDiagnostic("template_error", "m", at(3), { severity: "warning" }),
    ];
    expect(dedupeDiagnostics([a, ...others])).toHaveLength(5);
  });

  it("merges reports of one problem from several profiles and instances into one diagnostic naming them", () => {
    const d = makeDiagnostic("template_error", "`{{ nope }}` is undefined", at(3), { hint: "h", notes: [{ message: "first note" }] });
    const reports = ["desktop-64k", "core", "compat"].flatMap((profile) => [
      { diagnostic: d, where: { profile, variant: "split", pass: "main", instances: ["a", "b"] } },
      { diagnostic: { ...d, notes: [{ message: "another note" }] }, where: { profile, variant: "split", pass: "main", instances: ["c"] } },
    ]);
    const out = dedupeDiagnostics(reports);
    expect(out).toHaveLength(1);
    expect(out[0].message).toBe(d.message);
    expect(out[0].hint).toBe("h");
    expect(out[0].notes.map((n) => n.message)).toEqual([
      "in 3 profiles: desktop-64k, core, compat; variant `split`; pass `main`; 3 instances: a, b, c",
      "first note",
    ]);
  });

  it("names a single place in the singular", () => {
    expect(occurrenceText([{ profile: "core", instances: ["llama"] }])).toBe("in profile core; instance llama");
    expect(occurrenceText([{ variant: "a" }, { variant: "b" }, { variant: "a" }])).toBe("in 2 variants: `a`, `b`");
  });
});

describe("LineMap.spanAt", () => {
  const map = new LineMap("ab\r\ncdef\nx");
  it("spans a whole line without its break, or one character at a column", () => {
    expect(map.spanAt(2)).toEqual({ start: 4, end: 8 });
    expect(map.spanAt(2, 2)).toEqual({ start: 5, end: 6 });
    expect(map.spanAt(1, 9)).toEqual({ start: 2, end: 2 });
    expect(map.spanAt(3, 1)).toEqual({ start: 9, end: 10 });
  });
  it("is undefined outside the text or for an unknown (0) position", () => {
    expect(map.spanAt(0)).toBeUndefined();
    expect(map.spanAt(4)).toBeUndefined();
    expect(map.spanAt(1, 0)).toBeUndefined();
  });
});
