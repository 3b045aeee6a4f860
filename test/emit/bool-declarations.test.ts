/**
 * The declarations and helpers of bool bindings (docs/templates.md#bool-tensors): a bool tensor is
 * bound as u32 words of 4 elements, `array<u32>` when read-only and `array<atomic<u32>>` when
 * read-write; its helpers (len_, load_, load4_, and store_, store4_ when writable) are exact text,
 * Tint accepts every one of them with and without shader-f16, a shader gets only those it calls, and
 * any element type but u32 is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WgslValidator } from "../../src/emit/validate-wgsl.js";
import { declareResources, type DeclBinding } from "../../src/emit/wgsl-declarations.js";

const BINDINGS: DeclBinding[] = [
  { binding: 0, name: "mask", type: "read-only-storage", elementType: "u32", bool: true },
  { binding: 1, name: "flags", type: "storage", elementType: "u32", bool: true },
  { binding: 2, name: "words", type: "read-only-storage", elementType: "u32" },
  { binding: 3, name: "params", type: "uniform", fields: [{ name: "n", type: "u32" }] },
];

describe("bool bindings", () => {
  let validator: WgslValidator;
  beforeAll(async () => {
    validator = await WgslValidator.create();
  }, 60_000);
  afterAll(() => validator?.dispose());

  it("are declared as u32 words, atomic when writable, beside an ordinary u32 binding", () => {
    const d = declareResources(BINDINGS, "packed");
    expect(d.text).toBe(
      [
        "@group(0) @binding(0) var<storage, read> mask: array<u32>;",
        "@group(0) @binding(1) var<storage, read_write> flags: array<atomic<u32>>;",
        "@group(0) @binding(2) var<storage, read> words: array<u32>;",
        "struct Params {",
        "  n: u32,",
        "}",
        "@group(0) @binding(3) var<uniform> params: Params;",
      ].join("\n"),
    );
    expect(d.storage.get("mask")).toMatchObject({ storage: "bool", scalar: "bool", access: "read" });
    expect(d.storage.get("flags")).toMatchObject({ storage: "bool", scalar: "bool", access: "read_write" });
    expect(d.storage.get("words")).toMatchObject({ storage: "native", scalar: "u32" });
    // The same in native form: the f16 form changes nothing for bool.
    expect(declareResources(BINDINGS, "native").text).toBe(d.text);
  });

  it("have exactly these helpers", () => {
    const d = declareResources(BINDINGS, "packed");
    const boolHelpers = [...d.helpers.keys()].filter((n) => /_(mask|flags)$/.test(n));
    expect(boolHelpers).toEqual([
      "len_mask",
      "load_mask",
      "load4_mask",
      "len_flags",
      "load_flags",
      "load4_flags",
      "store_flags",
      "store4_flags",
    ]);
    expect(d.helpers.get("load_mask")).toBe(
      "fn load_mask(i: u32) -> bool {\n  return ((mask[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu) != 0u;\n}",
    );
    expect(d.helpers.get("len_flags")).toBe("fn len_flags() -> u32 {\n  return arrayLength(&flags) * 4u;\n}");
    expect(d.helpers.get("load4_flags")).toBe(
      "fn load4_flags(i: u32) -> vec4<bool> {\n  return ((vec4<u32>(atomicLoad(&flags[i >> 2u])) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu)) != vec4<u32>(0u);\n}",
    );
    expect(d.helpers.get("store_flags")).toBe(
      [
        "fn store_flags(i: u32, v: bool) {",
        "  // Changes only element i's byte, atomically: other invocations may write the word's other bytes.",
        "  atomicAnd(&flags[i >> 2u], ~(0xffu << ((i & 3u) * 8u)));",
        "  if (v) {",
        "    atomicOr(&flags[i >> 2u], 1u << ((i & 3u) * 8u));",
        "  }",
        "}",
      ].join("\n"),
    );
    expect(d.helpers.get("store4_flags")).toContain(
      "atomicStore(&flags[i >> 2u], dot(select(vec4<u32>(0u), vec4<u32>(1u, 0x100u, 0x10000u, 0x1000000u), v), vec4<u32>(1u)));",
    );
    // No bool helper for a read-only binding's stores, and no raw or 2-element helpers.
    expect(d.helpers.has("store_mask")).toBe(false);
    expect(d.helpers.has("load2_mask")).toBe(false);
  });

  it("are declared with only the helpers a shader calls", () => {
    const d = declareResources(BINDINGS, "packed");
    const text = d.withHelpers(new Set(["load_mask"]));
    expect(text).toContain("fn load_mask");
    expect(text).not.toMatch(/fn (len|load4|store|store4)_(mask|flags)\b/);
    expect(d.withHelpers(new Set())).toBe(d.text);
  });

  for (const features of [[], ["shader-f16"]]) {
    it(`compile with Tint, every helper called (features: ${features.join(", ") || "none"})`, async () => {
      const d = declareResources(BINDINGS, features.length ? "native" : "packed");
      const wgsl = [
        d.withHelpers(new Set(d.helpers.keys())),
        "",
        "@compute @workgroup_size(64)",
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
        "  let i = gid.x;",
        "  if (i >= params.n || i >= len_mask() || i >= len_flags()) {",
        "    return;",
        "  }",
        "  store_flags(i, load_mask(i) != load_flags(i));",
        "  if (i % 4u == 0u) {",
        "    store4_flags(i, load4_mask(i) & load4_flags(i));",
        "  }",
        "}",
        "",
      ].join("\n");
      expect(await validator.validate(wgsl, features)).toEqual([]);
    });
  }

  it("refuse any element type but u32", () => {
    for (const elementType of ["i32", "f32", "vec4<u32>", "f16"]) {
      expect(() => declareResources([{ binding: 0, name: "mask", type: "read-only-storage", elementType, bool: true }], "packed")).toThrow(
        `binding mask: a bool tensor is 1 byte per element, bound as u32 words of 4 elements, so its binding's element type must be \`u32\`, not \`${elementType}\``,
      );
    }
  });
});
