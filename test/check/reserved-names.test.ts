/**
 * A derive entry may not take a name it would hide: a namespace (`"tunables": "5"` made every
 * `tunables.WG` read the entry: "an int value has no member `WG`"), a builtin function, a word of
 * the expression language, or a name templates are given (`env`, `DISPATCH_FOLD_WIDTH`, Nunjucks'
 * `range`, …, which silently replaced the entry in templates). Each is `reserved_name` at the
 * entry's key, at every level (kernel, variant, pass).
 */
import { describe, expect, it } from "vitest";
import { renderText } from "../../src/core/render-diagnostics.js";
import { checkSpecObject, found, probeSpec } from "./probe-spec.js";

const reserved = (r: ReturnType<typeof checkSpecObject>) =>
  r.diagnostics.filter((d) => d.code === "reserved_name").map((d) => found(d, r.text));

describe("reserved derive names", () => {
  it("are errors at the entry's key, with what the name would hide", () => {
    const s = probeSpec();
    s.derive = { ...s.derive, tunables: "5", dim: "2", range: "3", env: "4", and: "1", wg: "tunables.WG" };
    const r = checkSpecObject(s);
    expect(reserved(r)).toEqual([
      {
        code: "reserved_name",
        message: "derive entry `tunables` would hide the namespace `tunables` in expressions and templates",
        hint: "rename the entry (e.g. `tunablesValue`)",
        at: '"tunables"',
      },
      {
        code: "reserved_name",
        message: "derive entry `dim` would hide the builtin function `dim` in expressions and templates",
        hint: "rename the entry (e.g. `dimValue`)",
        at: '"dim"',
      },
      {
        code: "reserved_name",
        message: "derive entry `range` would hide `range`, which kernelc or Nunjucks gives templates, in expressions and templates",
        hint: "rename the entry (e.g. `rangeValue`)",
        at: '"range"',
      },
      {
        code: "reserved_name",
        message: "derive entry `env` would hide `env`, which kernelc or Nunjucks gives templates, in expressions and templates",
        hint: "rename the entry (e.g. `envValue`)",
        at: '"env"',
      },
      {
        code: "reserved_name",
        message: "derive entry `and` would hide the expression word `and` in expressions and templates",
        hint: "rename the entry (e.g. `andValue`)",
        at: '"and"',
      },
    ]);
    expect(renderText(r.diagnostics.filter((d) => d.code === "reserved_name").slice(0, 1), () => r.text)).toMatch(
      /^error\[reserved_name\]: derive entry `tunables` would hide the namespace `tunables`/,
    );
  });

  it("are errors in a variant's and a pass's derive too; other names are not", () => {
    const s = probeSpec();
    s.variants[0].derive = { device: "1", deviceCount: "2" };
    s.variants[0].passes[0].derive = { DISPATCH_FOLD_WIDTH: "3", shapesSeen: "4" };
    const r = checkSpecObject(s);
    expect(reserved(r).map((f) => f.at)).toEqual(['"device"', '"DISPATCH_FOLD_WIDTH"']);
    expect(r.diagnostics.filter((d) => d.code === "reserved_name").map((d) => d.location?.pointer)).toEqual([
      "/variants/0/derive/device",
      "/variants/0/passes/0/derive/DISPATCH_FOLD_WIDTH",
    ]);
  });
});

describe("words of the expression language as derive names", () => {
  it("are reserved_name at the entry, not a syntax error wherever the entry is read", () => {
    const s = probeSpec();
    s.derive = { ...s.derive, in: "2", None: "3", is: "4", True: "5", uses: "in + None + is + True" };
    const r = checkSpecObject(s);
    expect(reserved(r).map((f) => f.at)).toEqual(['"in"', '"None"', '"is"', '"True"']);
    expect(r.diagnostics.filter((d) => d.code === "reserved_name").map((d) => d.message)).toContain(
      "derive entry `in` would hide the expression word `in` in expressions and templates",
    );
  });
});

/**
 * A binding's variable name and a uniform field's name are pasted into WGSL. A WGSL keyword,
 * reserved word or predeclared type there was an eval_error of the build at the pass, naming no
 * field and not reported by lint without rendering; now it is reserved_name where the name is written.
 */
describe("WGSL names of bindings and uniform fields", () => {
  const spec = () => {
    const s = probeSpec();
    s.bindings = {
      let: { arg: "x", elementType: "f32" },
      xb: { arg: "x", name: "f32", elementType: "f32" },
      ok: { arg: "x", name: "values", elementType: "f32" },
      params: {
        struct: [
          { name: "n", type: "u32", value: "1" },
          { name: "__n", type: "u32", value: "2" },
          { name: "self", type: "u32", value: "3" },
        ],
      },
    };
    s.variants[0].passes[0].bindings = ["let", "xb", "ok", "params", { arg: "x", name: "fn", elementType: "f32" }];
    return s;
  };

  it("are reserved_name where the name is written, the binding's key when it defaults to it", () => {
    const r = checkSpecObject(spec());
    const found = r.diagnostics.filter((d) => d.code === "reserved_name");
    expect(found.map((d) => [d.location?.pointer, d.message])).toEqual([
      ["/bindings/let", "binding name `let` is a WGSL keyword, which cannot name a WGSL variable"],
      ["/bindings/xb/name", "binding name `f32` is a WGSL predeclared type, which cannot name a WGSL variable"],
      [
        "/bindings/params/struct/1/name",
        "uniform field name `__n` is a name WGSL reserves (it starts with `__`), which cannot name a WGSL struct member",
      ],
      ["/bindings/params/struct/2/name", "uniform field name `self` is a WGSL reserved word, which cannot name a WGSL struct member"],
      ["/variants/0/passes/0/bindings/4/name", "binding name `fn` is a WGSL keyword, which cannot name a WGSL variable"],
    ]);
    expect(found[0]!.hint).toBe("give the binding another `name` (e.g. `letBuf`), and use it in the template");
    expect(found[2]!.hint).toBe("rename the field (e.g. `nValue`), and use the new name in the template");
  });
});

/**
 * A uniform binding's struct type is named after it, first letter upper-cased (`params` →
 * `Params`). A binding named `Params` (its struct would be `Params` too), `nULL` (struct `NULL`,
 * reserved) or a pass binding `params` beside another named `Params` was an eval_error of the build
 * at the pass ("uniform struct name Params collides with a binding name"), once per variant.
 */
describe("WGSL struct names of uniform bindings", () => {
  const spec = () => {
    const s = probeSpec();
    s.bindings = {
      Params: { struct: [{ name: "n", type: "u32", value: "1" }] },
      upper: { struct: [{ name: "n", type: "u32", value: "1" }], name: "nULL" },
      params: { struct: [{ name: "n", type: "u32", value: "1" }] },
      other: { arg: "x", name: "Params", elementType: "f32" },
    };
    s.variants[0].passes[0].bindings = ["Params", "upper"];
    s.variants[0].passes.push({ ...s.variants[0].passes[0], id: "q", bindings: ["params", "other"] });
    return s;
  };

  it("are errors at the binding's name from lint, with a hint", () => {
    const r = checkSpecObject(spec());
    const found = r.diagnostics.filter((d) => d.code === "reserved_name" || d.code === "duplicate_binding_name");
    expect(found.map((d) => [d.code, d.location?.pointer, d.message])).toEqual([
      [
        "reserved_name",
        "/bindings/Params",
        "uniform binding name `Params` is also the name of its WGSL struct type (the binding's name with its first letter upper-cased), so the two would collide",
      ],
      [
        "reserved_name",
        "/bindings/upper/name",
        "uniform binding name `nULL` gives its WGSL struct type the name `NULL` (its first letter upper-cased), which is a WGSL reserved word",
      ],
      [
        "duplicate_binding_name",
        "/variants/0/passes/1/bindings/0",
        "pass `q` binds uniform `params`, whose WGSL struct type `Params` has the name of another of its bindings",
      ],
    ]);
    expect(found[0]!.hint).toBe("start the binding's name with a lower-case letter (e.g. `params`), and use it in the template");
  });
});
