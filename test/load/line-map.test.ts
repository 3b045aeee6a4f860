import { describe, expect, it } from "vitest";
import { createLineMap } from "../../src/core/line-map.js";

describe("LineMap", () => {
  const text = "ab\ncd\r\nef\rgh\n";
  const map = createLineMap(text);

  it.each([
    [0, 1, 1],
    [2, 1, 3],
    [3, 2, 1],
    [5, 2, 3],
    [7, 3, 1],
    [10, 4, 1],
    [13, 5, 1],
  ])("offset %i is %i:%i", (offset, line, column) => {
    expect(map.position(offset)).toMatchObject({ line, column });
  });

  it("gives each line's text without its line break", () => {
    expect(map.lineCount).toBe(5);
    expect([1, 2, 3, 4, 5].map((l) => map.lineText(l))).toEqual(["ab", "cd", "ef", "gh", ""]);
    expect(map.lineStart(3)).toBe(7);
    expect(map.lineEnd(2)).toBe(5);
    expect(() => map.lineText(6)).toThrow(RangeError);
  });

  it("counts columns in code points and also reports UTF-16 columns", () => {
    const m = createLineMap('{"😀": 1}');
    const offset = '{"😀": '.length;
    expect(m.position(offset)).toEqual({ line: 1, column: 7, utf16Column: 8 });
  });

  it("clamps offsets outside the text", () => {
    expect(map.position(-5)).toMatchObject({ line: 1, column: 1 });
    expect(map.position(1000)).toMatchObject({ line: 5, column: 1 });
  });
});
