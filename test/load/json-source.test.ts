import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  appendPointer,
  parseJson,
  resolvePointer,
  splitPointer,
  toPlain,
  type JsonNode,
  type JsonString,
} from "../../src/core/json-source.js";
import { createLineMap } from "../../src/core/line-map.js";

function parseOk(text: string): JsonNode {
  const r = parseJson(text, "t.json");
  expect(r.diagnostics).toEqual([]);
  expect(r.root).toBeDefined();
  return r.root!;
}

/** Every node of a tree, depth first. */
function allNodes(root: JsonNode): JsonNode[] {
  const out: JsonNode[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    out.push(n);
    if (n.kind === "object") stack.push(...n.entries.map((e) => e.value));
    if (n.kind === "array") stack.push(...n.items);
  }
  return out;
}

describe("parseJson: spans and pointers", () => {
  it("gives every value and key its span and RFC 6901 pointer", () => {
    const text = '{ "a": [1, {"b~/c": "x"}], "d": true, "": null, "n": -1.5e3 }';
    const root = parseOk(text);
    expect(root.kind).toBe("object");
    if (root.kind !== "object") return;
    expect(root.entries.map((e) => e.key)).toEqual(["a", "d", "", "n"]);
    expect(text.slice(root.entries[0].keySpan.start, root.entries[0].keySpan.end)).toBe('"a"');
    const inner = resolvePointer(root, "/a/1/b~0~1c");
    expect(inner?.node).toMatchObject({ kind: "string", value: "x", pointer: "/a/1/b~0~1c" });
    expect(text.slice(inner!.entry!.keySpan.start, inner!.entry!.keySpan.end)).toBe('"b~/c"');
    expect(resolvePointer(root, "/")?.node).toMatchObject({ kind: "null", pointer: "/" });
    expect(resolvePointer(root, "/n")?.node).toMatchObject({ kind: "number", value: -1500, raw: "-1.5e3" });
    expect(resolvePointer(root, "/a/2")).toBeUndefined();
    expect(resolvePointer(root, "/a/01")).toBeUndefined();
    for (const n of allNodes(root)) {
      expect(JSON.parse(text.slice(n.span.start, n.span.end))).toEqual(toPlain(n));
      expect(resolvePointer(root, n.pointer)?.node).toBe(n);
    }
  });

  it("escapes and unescapes pointer tokens", () => {
    expect(appendPointer("/x", "a/b~c")).toBe("/x/a~1b~0c");
    expect(splitPointer("/x/a~1b~0c/~01")).toEqual(["x", "a/b~c", "~1"]);
    expect(splitPointer("")).toEqual([]);
  });

  it("maps each decoded character of an escaped string back to its source offset", () => {
    const text = '  "a\\nb\\u0041\\"c"';
    const s = parseOk(text) as JsonString;
    expect(s.value).toBe('a\nbA"c');
    expect(s.span).toEqual({ start: 2, end: text.length });
    expect(s.offsetMap).toEqual([3, 4, 6, 7, 13, 15, 16]);
    expect(text[s.offsetMap![s.value.length]]).toBe('"');
  });

  it("maps a surrogate pair escape to two code units at the same escape", () => {
    const text = '"\\ud83d\\ude00x"';
    const s = parseOk(text) as JsonString;
    expect(s.value).toBe("😀x");
    expect(s.offsetMap).toEqual([1, 7, 13, 14]);
  });

  it("keeps strings without escapes free of an offset map, raw unicode included", () => {
    const text = '["é😀 ok", "plain"]';
    const root = parseOk(text);
    if (root.kind !== "array") throw new Error("array expected");
    const s = root.items[0] as JsonString;
    expect(s.value).toBe("é😀 ok");
    expect(s.offsetMap).toBeUndefined();
    expect(text.slice(s.span.start + 1, s.span.end - 1)).toBe(s.value);
    expect(root.items[1].span).toEqual({ start: 11, end: 18 });
  });

  it("returns a frozen tree", () => {
    const root = parseOk('{"a": [1]}');
    expect(Object.isFrozen(root)).toBe(true);
    if (root.kind === "object") {
      expect(Object.isFrozen(root.entries)).toBe(true);
      expect(Object.isFrozen(root.entries[0].value)).toBe(true);
    }
  });

  it("accepts a leading byte order mark", () => {
    const root = parseOk("\uFEFF[1]");
    expect(root.span).toEqual({ start: 1, end: 4 });
  });

  it("round-trips arbitrary JSON through spans and toPlain", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(0, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        const r = parseJson(text, "p.json");
        expect(r.diagnostics).toEqual([]);
        expect(toPlain(r.root!)).toEqual(JSON.parse(text));
        for (const n of allNodes(r.root!)) {
          expect(JSON.parse(text.slice(n.span.start, n.span.end))).toEqual(toPlain(n));
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe("parseJson: syntax errors", () => {
  const cases: [text: string, where: string, message: RegExp, hint?: RegExp][] = [
    ['{\n  "a": 1,\n}', "2:9", /trailing comma before `}`/, /trailing comma/],
    ["[1, 2,]", "1:6", /trailing comma before `]`/],
    ["[1,\n ]", "1:3", /trailing comma before `]`/],
    ['{\n  // note\n  "a": 1\n}', "2:3", /comments are not allowed/],
    ["{'a': 1}", "1:2", /expected an object key \(a double-quoted string\), found `'`/, /double quotes/],
    ['{"a" 1}', "1:6", /expected `:` after the object key, found `1`/],
    ['{"a": 1 "b": 2}', "1:9", /expected `,` or `}` after an object member, found `"`/],
    ["[1 2]", "1:4", /expected `,` or `]` after an array element, found `2`/],
    ['{"a": "abc', "1:7", /unterminated string/],
    ['"ab\ncd"', "1:4", /a line break cannot appear inside a JSON string/],
    ['"a\\qb"', "1:3", /invalid escape `\\q`/],
    ['"\\u12G4"', "1:2", /invalid unicode escape/],
    ["[01]", "1:2", /invalid number `01`/, /leading zeros/],
    ["[1.]", "1:2", /invalid number `1.`/, /digit after the decimal point/],
    ["[-]", "1:2", /expected a digit after `-`/],
    ["[NaN]", "1:2", /expected a JSON value, found `NaN`/],
    ['{"a": tru}', "1:7", /expected a JSON value, found `tru`/],
    ["[1] [2]", "1:5", /expected the end of the document/],
    ["", "1:1", /expected a JSON value, found the end of the file/],
    ["[1e999]", "1:2", /too large/],
    ['{"a":\n  [1,\n   2', "3:5", /expected `,` or `]` after an array element, found the end of the file/],
  ];
  it.each(cases)("%j → json_syntax at %s", (text, where, message, hint) => {
    const r = parseJson(text, "bad.json");
    expect(r.root).toBeUndefined();
    expect(r.diagnostics).toHaveLength(1);
    const d = r.diagnostics[0];
    expect(d.code).toBe("json_syntax");
    expect(d.severity).toBe("error");
    expect(d.message).toMatch(message);
    if (hint !== undefined) expect(d.hint).toMatch(hint);
    expect(d.location?.file).toBe("bad.json");
    const pos = createLineMap(text).position(d.location!.span!.start);
    expect(`${pos.line}:${pos.column}`).toBe(where);
  });

  it("spans the whole offending token", () => {
    const text = "[falsey]";
    const d = parseJson(text, "x.json").diagnostics[0];
    expect(text.slice(d.location!.span!.start, d.location!.span!.end)).toBe("falsey");
  });
});

describe("parseJson: duplicate keys", () => {
  it("reports the duplicate with a note at the first and keeps the first member", () => {
    const text = '{"a": 1, "b": {"x": 1, "x": 2}, "a": 3}';
    const r = parseJson(text, "d.json");
    expect(r.diagnostics.map((d) => [d.code, d.location?.pointer])).toEqual([
      ["json_duplicate_key", "/b/x"],
      ["json_duplicate_key", "/a"],
    ]);
    const second = r.diagnostics[1];
    expect(second.location?.span).toEqual({ start: 32, end: 35 });
    expect(second.notes).toHaveLength(1);
    expect(second.notes[0].message).toMatch(/first defined here/);
    expect(second.notes[0].location?.span).toEqual({ start: 1, end: 4 });
    expect(toPlain(r.root!)).toEqual({ a: 1, b: { x: 1 } });
  });
});

describe("toPlain: keys that name JS internals stay inert", () => {
  it("makes __proto__ an own data property and never touches Object.prototype", () => {
    const text = '{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted2": 2}}, "a": {"__proto__": []}}';
    const plain = toPlain(parseOk(text)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(plain)).toBeNull();
    expect(Object.hasOwn(plain, "__proto__")).toBe(true);
    expect(Object.keys(plain)).toEqual(["__proto__", "constructor", "a"]);
    const proto = Object.getOwnPropertyDescriptor(plain, "__proto__")!;
    expect(proto.enumerable).toBe(true);
    expect(proto.value).toEqual({ polluted: 1 });
    const a = plain.a as Record<string, unknown>;
    expect(Object.getPrototypeOf(a)).toBeNull();
    expect(Array.isArray(Object.getOwnPropertyDescriptor(a, "__proto__")!.value)).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted2).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("polluted");
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain("polluted");
  });
});

describe("parseJson: limits", () => {
  it("reports 10,000-deep arrays as json_too_deep without overflowing the stack", () => {
    const text = "[".repeat(10_000) + "]".repeat(10_000);
    const r = parseJson(text, "deep.json");
    expect(r.root).toBeUndefined();
    expect(r.diagnostics.map((d) => d.code)).toEqual(["json_too_deep"]);
    expect(r.diagnostics[0].location?.span).toEqual({ start: 128, end: 129 });
  });

  it("reports 10,000-deep objects as json_too_deep", () => {
    const text = '{"a":'.repeat(10_000) + "1" + "}".repeat(10_000);
    expect(parseJson(text, "deep.json").diagnostics.map((d) => d.code)).toEqual(["json_too_deep"]);
  });

  it("accepts exactly the depth limit", () => {
    const ok = "[".repeat(128) + "]".repeat(128);
    expect(parseJson(ok, "x.json").diagnostics).toEqual([]);
    expect(parseJson(`[${ok}]`, "x.json").diagnostics.map((d) => d.code)).toEqual(["json_too_deep"]);
    expect(parseJson(`[${ok}]`, "x.json", { maxDepth: 200, maxBytes: 1000 }).diagnostics).toEqual([]);
  });

  it("rejects a file over the size limit before parsing, counting UTF-8 bytes", () => {
    const r = parseJson('"éé"', "big.json", { maxDepth: 8, maxBytes: 5 });
    expect(r.diagnostics.map((d) => d.code)).toEqual(["file_too_large"]);
    expect(parseJson('"éé"', "ok.json", { maxDepth: 8, maxBytes: 6 }).diagnostics).toEqual([]);
  });
});

describe("a UTF-16 file", () => {
  it("is named as UTF-16 with the fix, not as an unexpected U+FFFD", () => {
    const json = '{"a": 1}';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(json, "utf16le")]).toString("utf8");
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(json, "utf16le").swap16()]).toString("utf8");
    for (const [text, enc] of [
      [le, "UTF-16 little-endian"],
      [be, "UTF-16 big-endian"],
    ] as const) {
      const r = parseJson(text, "spec.json");
      expect(r.root).toBeUndefined();
      expect(r.diagnostics.map((d) => [d.code, d.message, d.hint])).toEqual([
        [
          "json_syntax",
          `the file is encoded as ${enc}, not UTF-8: kernelc reads JSON files as UTF-8`,
          "save the file as UTF-8 (without a byte order mark, or with the UTF-8 one)",
        ],
      ]);
    }
    // Two U+FFFD that are text, not a byte order mark, are parsed as before.
    expect(parseJson('"\uFFFD\uFFFDab"', "x.json").diagnostics).toEqual([]);
  });
});
