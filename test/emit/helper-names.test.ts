/**
 * Accessor helpers of bindings whose names are those of the helpers' own parameters and locals
 * (`i`, `v`, `bits`, `word`, `j`, `h`, `shift`): a parameter named like the binding would hide the
 * binding inside the helper (`fn store_v(i: u32, v: f32) { v[i] = v; }` does not compile), so there
 * the parameter is renamed. Every helper of every element form, read-only and read-write, packed and
 * native, is compiled by Tint; a binding with another name keeps the helpers' usual text.
 */
import * as fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WgslValidator } from "../../src/emit/validate-wgsl.js";
import { declareResources, type DeclBinding } from "../../src/emit/wgsl-declarations.js";
import { build, removeHostileProjects } from "../support/hostile-names.js";

const LOCALS = ["i", "v", "bits", "word", "j", "h", "shift"];
const ELEMENTS = ["f16", "vec2<f16>", "vec3<f16>", "vec4<f16>", "f32", "vec4<f32>", "u32", "i32", "vec2<u32>"];

/** One read-only and one read-write binding of each element type (and of bool), named `name_<slot>`. */
function bindings(name: string): DeclBinding[] {
  const forms: { elementType: string; bool?: boolean }[] = [
    ...ELEMENTS.map((elementType) => ({ elementType })),
    { elementType: "u32", bool: true },
  ];
  return forms.flatMap((f, k) =>
    (["read-only-storage", "storage"] as const).map((type, t): DeclBinding => {
      const slot = 2 * k + t;
      return { binding: slot, name: `${name}_${slot}`, type, elementType: f.elementType, ...(f.bool ? { bool: true } : {}) };
    }),
  );
}

describe("helpers of a binding named like a helper parameter", () => {
  let validator: WgslValidator;
  beforeAll(async () => {
    validator = await WgslValidator.create();
  }, 60_000);
  afterAll(() => validator?.dispose());

  for (const name of LOCALS) {
    for (const form of ["packed", "native"] as const) {
      it(`compile with Tint for bindings named ${name}, ${form} f16`, async () => {
        // Each element form in turn named exactly `name` (the others suffixed), so every helper kind meets the collision.
        const all = bindings(name);
        const errors: string[] = [];
        for (let k = 0; k < all.length; k++) {
          const set = all.map((b, m) => ({ ...b, name: m === k ? name : `${name}_${m}` }));
          const d = declareResources(set, form);
          const text = d.withHelpers(new Set(d.helpers.keys()));
          for (const h of d.helpers.keys()) expect(text).toContain(`fn ${h}(`);
          const wgsl = [text, "", "@compute @workgroup_size(1)", "fn main() {", "}", ""].join("\n");
          const found = await validator.validate(wgsl, form === "native" ? ["shader-f16"] : []);
          if (found.length > 0)
            errors.push(`${set[k]!.elementType}${set[k]!.bool ? " (bool)" : ""} ${set[k]!.type}: ${JSON.stringify(found)}`);
        }
        expect(errors).toEqual([]);
      });
    }
  }

  it("rename only the colliding name, and only for that binding", () => {
    const plain = declareResources([{ binding: 0, name: "x", type: "storage", elementType: "f32" }], "native");
    expect(plain.helpers.get("store_x")).toBe("fn store_x(i: u32, v: f32) {\n  x[i] = v;\n}");
    const v = declareResources([{ binding: 0, name: "v", type: "storage", elementType: "f32" }], "native");
    expect(v.helpers.get("store_v")).toBe("fn store_v(i: u32, v_: f32) {\n  v[i] = v_;\n}");
    expect(v.helpers.get("load_v")).toBe("fn load_v(i: u32) -> f32 {\n  return v[i];\n}");
    const i = declareResources([{ binding: 0, name: "i", type: "read-only-storage", elementType: "u32", bool: true }], "native");
    expect(i.helpers.get("load_i")).toBe("fn load_i(i_: u32) -> bool {\n  return ((i[i_ >> 2u] >> ((i_ & 3u) * 8u)) & 0xffu) != 0u;\n}");
  });
});

/**
 * A helper whose name is taken — by a binding (`load_xb` beside a binding `xb`) or by a helper of
 * another binding (`store_raw2_` + `x` and `store_` + `raw2_x`) — is left out. A template calling it
 * was Tint's "cannot use 'var load_xb' as call target" with the advice to fix the template; it is a
 * template_error at the call, naming the helper, its binding and the binding to rename.
 */
describe("a helper whose name is taken", () => {
  afterAll(removeHostileProjects);

  it("is withheld with whose it is and the binding to rename", () => {
    const byBinding = declareResources(
      [
        { binding: 0, name: "x", type: "read-only-storage", elementType: "f32" },
        { binding: 1, name: "load_x", type: "storage", elementType: "f32" },
      ],
      "native",
    );
    expect(byBinding.helpers.has("load_x")).toBe(false);
    expect(byBinding.helpers.has("load_load_x")).toBe(true);
    expect(byBinding.withheld).toEqual(
      new Map([
        [
          "load_x",
          {
            why: "the accessor helper of binding `x`, but the pass's binding (or uniform struct type) `load_x` has that name",
            rename: "load_x",
          },
        ],
      ]),
    );
    const byHelper = declareResources(
      [
        { binding: 0, name: "x", type: "storage", elementType: "f16" },
        { binding: 1, name: "raw2_x", type: "storage", elementType: "f32" },
      ],
      "native",
    );
    expect(byHelper.helpers.has("store_raw2_x")).toBe(false);
    expect(byHelper.withheld.get("store_raw2_x")).toEqual({
      why: "the accessor helper of both bindings `x` and `raw2_x`",
      rename: "raw2_x",
    });
  });

  it("called by the template, is a template_error at the call that says which binding to rename", async () => {
    const b = await build({ place: "wgslName", name: "load_xb" }, "ts");
    const errors = b.result.diagnostics.filter((d) => d.severity === "error");
    expect(errors.map((d) => [d.code, d.message, d.hint])).toEqual([
      [
        "template_error",
        "template k.wgsl.jinja failed to render: the template calls `load_xb`, which kernelc does not declare: it is the accessor helper of binding `xb`, but the pass's binding (or uniform struct type) `load_xb` has that name",
        "rename binding `load_xb` (its `name` in the spec, and where the template uses it), so that the helper `load_xb` is declared",
      ],
    ]);
    const template = fs.readFileSync(errors[0]!.location!.file!, "utf8");
    const span = errors[0]!.location!.span!;
    expect(template.slice(span.start, span.end)).toMatch(/^\s*store_load_xb\(i, load_xb\(i\)/);
  });

  it("not called, leaves the build as it was", async () => {
    const b = await build({ place: "binding", name: "load_yv" }, "ts");
    expect(b.result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });
});
