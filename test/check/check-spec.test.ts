import { describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { checkSpecObject, found, type Found } from "./probe-spec.js";

/** A small spec with one pass whose shader is `probe.wgsl.jinja`. */
function base(): Record<string, any> {
  return {
    domain: "test",
    name: "Probe",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "T", rank: 2 } },
    outputs: {},
    typeConstraints: { T: ["float32"] },
    tunables: { WG: { default: 64 }, UNUSED: { default: 1 } },
    derive: {},
    variants: [{ id: "v", passes: [{ id: "p", name: "P", shader: "probe.wgsl.jinja", bindings: [], dispatch: { x: "1" } }] }],
  };
}

/** The diagnostics of `spec`, without the missing-shader error of the templates-less folder. */
function problems(spec: unknown, templatesDir?: string): Array<Found & { pointer?: string; notes: string[] }> {
  const r = checkSpecObject(spec, templatesDir);
  return r.diagnostics
    .filter((d) => d.code !== "shader_missing")
    .map((d) => ({
      ...found(d, r.text),
      pointer: d.location?.pointer,
      notes: d.notes.map((n) => `${n.message} @ ${n.location?.pointer}`),
    }));
}

describe("derive cycles", () => {
  it("a direct self-reference", () => {
    const s = base();
    s.derive = { a: "a + 1" };
    expect(problems(s)).toEqual([
      {
        code: "derive_cycle",
        message: "derive entries depend on each other in a cycle: a -> a",
        hint: "break the cycle: one of these entries must not read the others",
        at: '"a + 1"',
        pointer: "/derive/a",
        notes: [],
      },
    ]);
  });

  it("a cycle through three entries, reported once with a note for each other entry", () => {
    const s = base();
    s.derive = { a: "b + 1", b: "c * 2", c: "a - 1", d: "a" };
    expect(problems(s)).toEqual([
      {
        code: "derive_cycle",
        message: "derive entries depend on each other in a cycle: a -> b -> c -> a",
        hint: "break the cycle: one of these entries must not read the others",
        at: '"b + 1"',
        pointer: "/derive/a",
        notes: ["`b` is part of the cycle @ /derive/b", "`c` is part of the cycle @ /derive/c"],
      },
    ]);
  });

  it("a cycle created by a variant's override", () => {
    const s = base();
    s.derive = { a: "1", b: "a + 1" };
    s.variants[0].derive = { a: "b" };
    expect(problems(s)).toEqual([
      {
        code: "derive_cycle",
        message: "with this override, derive entries depend on each other in a cycle: a -> b -> a",
        hint: "an override must not read, directly or not, the entry it replaces",
        at: '"b"',
        pointer: "/variants/0/derive/a",
        notes: [],
      },
    ]);
  });

  it("a cycle created by a pass's override", () => {
    const s = base();
    s.derive = { a: "1", b: "a + 1" };
    s.variants[0].passes[0].derive = { a: "b * 2" };
    expect(problems(s).map((p) => [p.code, p.pointer, p.message])).toEqual([
      ["derive_cycle", "/variants/0/passes/0/derive/a", "with this override, derive entries depend on each other in a cycle: a -> b -> a"],
    ]);
  });

  it("an override that reads other entries without a cycle is fine", () => {
    const s = base();
    s.derive = { a: "1", b: "a + 1", c: "2" };
    s.variants[0].derive = { a: "c * 3", fresh: "a + b" };
    expect(problems(s)).toEqual([]);
  });
});

describe("overrides", () => {
  it.each([
    ["true", "bool", '"true"'],
    ["1.5", "float", '"1.5"'],
    ['"s"', "string", '"\\"s\\""'],
  ])("an override of an int entry with %s has a different type", (value, type, at) => {
    const s = base();
    s.derive = { a: "1" };
    s.variants[0].derive = { a: value };
    expect(problems(s)).toEqual([
      {
        code: "type_mismatch",
        message: `override of \`a\` has type ${type}, but the entry it replaces has type int`,
        hint: "an override must keep the type",
        at,
        pointer: "/variants/0/derive/a",
        notes: ["`a` is declared here @ /derive/a"],
      },
    ]);
  });

  it("an int may replace an int and a number (untyped attribute)", () => {
    const s = base();
    s.attributes = { n: {} };
    s.derive = { a: "1", b: "attrs.n" };
    s.variants[0].derive = { a: "2", b: "3" };
    expect(problems(s)).toEqual([]);
  });

  it("a pass's entries override the variant's and the top level's", () => {
    const s = base();
    s.derive = { a: "1" };
    s.variants[0].derive = { a: "2" };
    s.variants[0].passes[0].derive = { a: "false" };
    expect(problems(s).map((p) => [p.code, p.pointer, p.notes])).toEqual([
      ["type_mismatch", "/variants/0/passes/0/derive/a", ["`a` is declared here @ /variants/0/derive/a"]],
    ]);
  });
});

describe("unused derive entries and tunables", () => {
  const withTemplate = (body: string): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-unused-"));
    fs.writeFileSync(path.join(dir, "probe.wgsl.jinja"), body);
    return dir;
  };

  it("warns when every template exists and nothing reads an entry", () => {
    const s = base();
    s.derive = { used: "1", unused: "2", viaExpr: "3", reader: "viaExpr", viaBinding: '"f32"' };
    s.variants[0].passes[0].dispatch.x = "reader";
    s.variants[0].passes[0].bindings = [{ arg: "x", name: "xs", elementType: "$viaBinding" }];
    const dir = withTemplate("{{ used }} {{ tunables.WG }}\n");
    expect(problems(s, dir)).toEqual([
      {
        code: "unused_derive",
        message: "derive entry `unused` is never read by an expression, a binding or a template",
        hint: "remove it, or use it",
        at: '"unused"',
        pointer: "/derive/unused",
        notes: [],
      },
      {
        code: "unused_tunable",
        message: "tunable `UNUSED` is never read",
        hint: "remove it, or read it as `tunables.UNUSED`",
        at: '"UNUSED"',
        pointer: "/tunables/UNUSED",
        notes: [],
      },
    ]);
  });

  it("says nothing about unused entries while a template is missing", () => {
    const s = base();
    s.derive = { unused: "2" };
    const r = checkSpecObject(s);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["shader_missing"]);
  });

  it("unused warnings are warnings: the kernel still checks", () => {
    const s = base();
    s.derive = { unused: "2" };
    const r = checkSpecObject(s, withTemplate("{{ tunables.WG }} {{ tunables.UNUSED }}"));
    expect(r.diagnostics.map((d) => [d.code, d.severity])).toEqual([["unused_derive", "warning"]]);
    expect(r.kernel).toBeDefined();
  });
});

describe("conditions and positions", () => {
  it("a `when` that is not bool", () => {
    const s = base();
    s.when = ["dim(shapes.x, 0)"];
    expect(problems(s).map((p) => [p.code, p.message, p.at])).toEqual([
      ["condition_not_bool", "a `when` condition must be a bool, found int", "dim(shapes.x, 0)"],
    ]);
  });

  it("a dispatch size that is not an int", () => {
    const s = base();
    s.variants[0].passes[0].dispatch.y = "1.5";
    expect(problems(s).map((p) => [p.code, p.message, p.at])).toEqual([["type_mismatch", "dispatch y must be an int, found float", "1.5"]]);
  });

  it("an output shape that is not a shape", () => {
    const s = base();
    s.outputs = { y: { onnx: "Y", dtype: "T", shape: "dim(shapes.x, 0)" } };
    expect(problems(s).map((p) => [p.code, p.message])).toEqual([
      ["type_mismatch", "the shape of output `y` must be a shape (list<int>), found int"],
      [
        "output_unbound",
        'variant `v` never binds output `y`: no pass of the variant has a binding with `"arg": "y"`, so a call it plans leaves `y` unwritten',
      ],
    ]);
  });
});

describe("overrides are late-bound", () => {
  it("a kernel-level entry that reads an overridden name sees the override in that variant", async () => {
    const { deriveEnv } = await import("../../src/check/check-spec.js");
    const { evaluate } = await import("../../src/lang/evaluate.js");
    const s = base();
    s.derive = { wg: "64", bytes: "wg * 4" };
    s.variants.push({
      id: "big",
      derive: { wg: "128" },
      passes: [{ id: "p", name: "P", shader: "probe.wgsl.jinja", bindings: [], dispatch: { x: "bytes" } }],
    });
    s.variants[0].passes[0].dispatch.x = "bytes";
    const kernel = checkSpecObject(s).kernel!;
    const valueIn = (variantIndex: number, name: string) => {
      const env = deriveEnv(kernel, kernel.variants[variantIndex]);
      const derive = (n: string): unknown =>
        evaluate(env.get(n)!.expr.texpr, { leaf: () => 0, dim: () => 0, hasAttr: () => false, derive: derive as never });
      return derive(name);
    };
    expect(valueIn(0, "bytes")).toBe(256);
    expect(valueIn(1, "bytes")).toBe(512);
  });
});

describe("a float where an int belongs", () => {
  it("says how to get an int, in a uniform field and a dispatch size", () => {
    const s = base();
    s.derive = { stride: "1 if dim(shapes.x, 1) > 0 else 0.5" };
    s.variants[0].passes[0].bindings = [{ name: "params", struct: [{ name: "stride", type: "u32", value: "stride" }] }];
    s.variants[0].passes[0].dispatch = { x: "dim(shapes.x, 0) * 1.5" };
    const p = problems(s).filter((d) => d.code === "type_mismatch");
    expect(p.map((d) => [d.pointer, d.message])).toEqual([
      ["/variants/0/passes/0/bindings/0/struct/0/value", "uniform field `stride` (u32) must be an int, found float"],
      ["/variants/0/passes/0/dispatch/x", "dispatch x must be an int, found float"],
    ]);
    for (const d of p) expect(d.hint).toMatch(/^round it to an int with `floor\(…\)` or `ceilDiv\(a, b\)`; a float literal/);
  });
});

describe("a workgroup count known without a call", () => {
  it("is dispatch_out_of_range when negative (every call failed with an eval error)", () => {
    const s = base();
    s.derive = { nothing: "0 - 1" };
    s.variants[0].passes[0].dispatch = { x: "1", y: "nothing", z: "dim(shapes.x, 0) - 1" };
    const p = problems(s).filter((d) => d.code === "dispatch_out_of_range");
    expect(p.map((d) => [d.pointer, d.message, d.hint])).toEqual([
      [
        "/variants/0/passes/0/dispatch/y",
        "dispatch y is always -1, a negative workgroup count: every call would fail to plan",
        "give a count of 0 or more (0 skips the pass)",
      ],
    ]);
  });
});
