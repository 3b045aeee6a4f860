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
