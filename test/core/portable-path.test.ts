/** Which path parts Windows cannot create (core/portable-path.ts), as one-line tables, and the portable names the hints suggest. */
import { describe, expect, it } from "vitest";
import { nonPortablePart, portableSuggestion } from "../../src/core/portable-path.js";

describe("nonPortablePart", () => {
  const bad: [string, string][] = [
    ["CON", "CON"],
    ["con", "con"],
    ["gen/Nul", "Nul"],
    ["PRN.txt", "PRN.txt"],
    ["aux.tar.gz", "aux.tar.gz"],
    ["AUX .js", "AUX .js"],
    ["COM1", "COM1"],
    ["x/com9/y", "com9"],
    ["LPT5", "LPT5"],
    ["lpt\u00b3", "lpt\u00b3"],
    ["com\u00b9.log", "com\u00b9.log"],
    ["out.", "out."],
    ["out..", "out.."],
    ["gen/out /x", "out "],
    ["a\\b./c", "b."],
    ["a:b", "a:b"],
    ["C:/out", "C:"],
    ["a<b", "a<b"],
    ["a>b", "a>b"],
    ['a"b', 'a"b'],
    ["a|b", "a|b"],
    ["a?b", "a?b"],
    ["a*", "a*"],
  ];
  for (const [p, part] of bad) it(`${JSON.stringify(p)} → ${JSON.stringify(part)}`, () => expect(nonPortablePart(p)?.part).toBe(part));

  const good = [
    "out",
    "gen/out",
    "./out",
    "../proj/out",
    "a/./b/../c",
    "console",
    "nullable",
    "com10",
    "lpt",
    "comx",
    "aux-out",
    "gen.d/x",
    ".hidden",
    "out/",
    "a b/c",
    "gén/ëré",
  ];
  for (const p of good) it(`${JSON.stringify(p)} is portable`, () => expect(nonPortablePart(p)).toBeUndefined());

  it("says why, for each kind", () => {
    expect(nonPortablePart("gen/CON")?.why).toMatch(/^"CON" is a name Windows reserves for a device \(CON, PRN, AUX, NUL, COM0-9, LPT0-9/);
    expect(nonPortablePart("nul.txt")?.why).toMatch(/^"nul\.txt" is \(by its base "nul"\) a name Windows reserves/);
    expect(nonPortablePart("out.")?.why).toMatch(/^"out\." ends with a dot, which Windows drops from a name/);
    expect(nonPortablePart("out ")?.why).toMatch(/^"out " ends with a space/);
    expect(nonPortablePart("a?b")?.why).toMatch(/^"a\?b" holds \?, which Windows does not allow in a name \(nor any of < > : " \| \? \*\)/);
  });
});

describe("portableSuggestion", () => {
  const rows: [string, string][] = [
    ["CON", "CON-out"],
    ["gen/nul.txt", "gen/nul-out.txt"],
    ["AUX .js", "AUX-out.js"],
    ["out.", "out"],
    ["out. .", "out"],
    ["...", "out"],
    ["gen/out /x", "gen/out/x"],
    ["a:b?c", "a-b-c"],
    ["a\\com1\\b", "a\\com1-out\\b"],
    ["ok/fine", "ok/fine"],
  ];
  for (const [p, want] of rows)
    it(`${JSON.stringify(p)} → ${JSON.stringify(want)}`, () => {
      expect(portableSuggestion(p)).toBe(want);
      expect(nonPortablePart(portableSuggestion(p))).toBeUndefined();
    });
});
