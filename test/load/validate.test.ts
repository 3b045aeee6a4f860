import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseJson } from "../../src/core/json-source.js";
import { validateSpecTree } from "../../src/load/validate.js";
import type { Diagnostic } from "../../src/core/diagnostic.js";

const SEED = readFileSync(new URL("../../specs/PagedAttention.json", import.meta.url), "utf8");

type Spec = Record<string, any>;

/** Validates the seed after `edit` changed a copy of it; returns the diagnostics and the text. */
function validateEdited(edit: (spec: Spec) => void): { diags: Diagnostic[]; text: string } {
  const spec = JSON.parse(SEED) as Spec;
  edit(spec);
  const text = JSON.stringify(spec, null, 2);
  const parsed = parseJson(text, "edited.json");
  expect(parsed.diagnostics).toEqual([]);
  return { diags: validateSpecTree(parsed.root!, "edited.json"), text };
}

function spanText(text: string, d: Diagnostic): string {
  return text.slice(d.location!.span!.start, d.location!.span!.end);
}

/** Renames a key of an object keeping the member order. */
function renameKey(obj: Spec, from: string, to: string): void {
  const entries = Object.entries(obj);
  for (const k of Object.keys(obj)) delete obj[k];
  for (const [k, v] of entries) obj[k === from ? to : k] = v;
}

describe("validateSpecTree", () => {
  it("accepts the seed spec", () => {
    const parsed = parseJson(SEED, "specs/PagedAttention.json");
    expect(validateSpecTree(parsed.root!, "specs/PagedAttention.json")).toEqual([]);
  });

  it("refuses a tunable value that is not an integer (tunables.X is an int in expressions)", () => {
    const { diags, text } = validateEdited((s) => (s.tunables.WORKGROUP_SIZE = { default: 64.5 }));
    expect(diags.map((d) => [d.code, d.message, spanText(text, d)])).toEqual([
      ["schema_type", "field `default` of `/tunables/WORKGROUP_SIZE` must be an integer, found a number", "64.5"],
    ]);
    const listed = validateEdited((s) => (s.tunables.WORKGROUP_SIZE = { default: 64, values: [32, 16.5] }));
    expect(listed.diags.map((d) => [d.code, d.location?.pointer, spanText(listed.text, d)])).toEqual([
      ["schema_type", "/tunables/WORKGROUP_SIZE/values/1", "16.5"],
    ]);
  });

  it("refuses a tunable value beyond 2^53 - 1 (it was taken, rounded: 9007199254740993 became ...992)", () => {
    const { diags, text } = validateEdited((s) => (s.tunables.WORKGROUP_SIZE = { default: 1e308, values: [64, -1e300] }));
    expect(diags.map((d) => [d.code, d.message, spanText(text, d)])).toEqual([
      ["schema_value", "field `default` of `/tunables/WORKGROUP_SIZE` is 1e+308, but must be <= 9007199254740991", "1e+308"],
      ["schema_value", "item 1 of `/tunables/WORKGROUP_SIZE/values` is -1e+300, but must be >= -9007199254740991", "-1e+300"],
    ]);
    const raw = JSON.stringify({ ...JSON.parse(SEED), tunables: { WORKGROUP_SIZE: { default: 64 } } }).replace(
      '"default":64',
      '"default":9007199254740993',
    );
    const parsed = parseJson(raw, "raw.json");
    const d = validateSpecTree(parsed.root!, "raw.json").find((x) => x.location?.pointer === "/tunables/WORKGROUP_SIZE/default");
    expect(d?.code).toBe("schema_value");
    expect(raw.slice(d!.location!.span!.start, d!.location!.span!.end)).toBe("9007199254740993");
  });

  it("accepts a `$schema` key", () => {
    expect(validateEdited((s) => (s.$schema = "../schema/kernel-spec.schema.json")).diags).toEqual([]);
  });

  it("suggests `variants` for `varaints`, pointing at the key", () => {
    const { diags, text } = validateEdited((s) => renameKey(s, "variants", "varaints"));
    const unknown = diags.find((d) => d.code === "schema_unknown_field")!;
    expect(unknown.location?.pointer).toBe("/varaints");
    expect(spanText(text, unknown)).toBe('"varaints"');
    expect(unknown.hint).toBe("did you mean `variants`?");
    expect(unknown.message).toBe("unknown field `varaints` at the top level of the spec");
    const missing = diags.find((d) => d.code === "schema_missing_field")!;
    expect(missing.message).toMatch(/missing required field `variants`/);
    expect(diags).toHaveLength(2);
  });

  it("suggests `priority` for `prioirty` in a variant", () => {
    const { diags, text } = validateEdited((s) => renameKey(s.variants[2], "priority", "prioirty"));
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatchObject({
      code: "schema_unknown_field",
      message: "unknown field `prioirty` in `/variants/2`",
      hint: "did you mean `priority`?",
      location: { file: "edited.json", pointer: "/variants/2/prioirty" },
    });
    expect(spanText(text, diags[0])).toBe('"prioirty"');
  });

  it("lists the allowed fields when no name is close", () => {
    const { diags } = validateEdited((s) => (s.inputs.queryT.zzzzzzzz = 1));
    expect(diags).toHaveLength(1);
    expect(diags[0].code).toBe("schema_unknown_field");
    expect(diags[0].hint).toBe("the fields allowed here are `onnx`, `dtype`, `rank`, `optional` and `storage`");
  });

  it("reports a missing required field at the object's key", () => {
    const { diags, text } = validateEdited((s) => delete s.inputs.keyT.onnx);
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatchObject({ code: "schema_missing_field", location: { pointer: "/inputs/keyT" } });
    expect(diags[0].message).toBe("missing required field `onnx` in `/inputs/keyT`");
    expect(diags[0].hint).toMatch(/^add `onnx`: The ONNX name/);
    expect(spanText(text, diags[0])).toBe('"keyT"');
  });

  it("reports wrong JSON types with what was found", () => {
    const { diags, text } = validateEdited((s) => (s.inputs.queryT.rank = "2"));
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatchObject({ code: "schema_type", location: { pointer: "/inputs/queryT/rank" } });
    expect(diags[0].message).toBe("field `rank` of `/inputs/queryT` must be an integer, found a string");
    expect(spanText(text, diags[0])).toBe('"2"');
  });

  it("reports a dispatch size that is neither a string nor an integer as one error", () => {
    const { diags } = validateEdited((s) => (s.variants[0].passes[0].dispatch.z = [1]));
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatchObject({ code: "schema_type", location: { pointer: "/variants/0/passes/0/dispatch/z" } });
    expect(diags[0].message).toMatch(/must be a string or an integer, found an array/);
  });

  it("reports a negative dispatch integer as a value error of the integer shape", () => {
    const { diags } = validateEdited((s) => (s.variants[0].passes[0].dispatch.z = -1));
    expect(diags.map((d) => [d.code, d.location?.pointer])).toEqual([["schema_value", "/variants/0/passes/0/dispatch/z"]]);
    expect(diags[0].message).toMatch(/must be >= 0/);
  });

  it("reports a derive value of the wrong type once", () => {
    const { diags } = validateEdited((s) => (s.variants[0].passes[1].derive.splitK = null));
    expect(diags).toHaveLength(1);
    expect(diags[0].message).toBe("field `splitK` of `/variants/0/passes/1/derive` must be a string, a number or a boolean, found null");
  });

  it("suggests the closest enum value", () => {
    const { diags, text } = validateEdited((s) => (s.bindings.key_cache_main.buffer = "read-only-storag"));
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatchObject({ code: "schema_value", hint: 'did you mean `"read-only-storage"`?' });
    expect(diags[0].location?.pointer).toBe("/bindings/key_cache_main/buffer");
    expect(spanText(text, diags[0])).toBe('"read-only-storag"');
  });

  it("reports an unknown WebGPU feature", () => {
    const { diags } = validateEdited((s) => (s.variants[1].requires = { features: ["shader_f16"] }));
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatchObject({ code: "schema_value", hint: 'did you mean `"shader-f16"`?' });
    expect(diags[0].location?.pointer).toBe("/variants/1/requires/features/0");
  });

  it("reports an invalid derive name at its key", () => {
    const { diags, text } = validateEdited((s) => (s.derive["1bad"] = "2"));
    expect(diags).toHaveLength(1);
    expect(diags[0]).toMatchObject({ code: "schema_value", location: { pointer: "/derive/1bad" } });
    expect(diags[0].message).toMatch(/the name `1bad` in `\/derive` is not an identifier/);
    expect(spanText(text, diags[0])).toBe('"1bad"');
  });

  it("reports an invalid id pattern", () => {
    const { diags } = validateEdited((s) => (s.variants[0].id = "split-k"));
    expect(diags.map((d) => [d.code, d.location?.pointer])).toEqual([["schema_value", "/variants/0/id"]]);
    expect(diags[0].message).toMatch(/is "split-k", which is not an identifier/);
  });

  describe("bindings matching none of the binding shapes", () => {
    it("says which key field is missing", () => {
      const { diags, text } = validateEdited((s) => delete s.bindings.key.arg);
      expect(diags).toHaveLength(1);
      expect(diags[0]).toMatchObject({ code: "schema_missing_field", location: { pointer: "/bindings/key" } });
      expect(diags[0].message).toBe("field `key` of `/bindings` needs one of the fields `arg`, `scratch` or `struct`");
      expect(spanText(text, diags[0])).toBe('"key"');
    });

    it("says which key fields conflict, at the later key", () => {
      const { diags, text } = validateEdited((s) => (s.variants[0].passes[1].bindings[6].arg = "queryT"));
      expect(diags).toHaveLength(1);
      expect(diags[0].code).toBe("schema_other");
      expect(diags[0].message).toMatch(/sets both `scratch` and `arg`, which cannot be combined/);
      expect(diags[0].location?.pointer).toBe("/variants/0/passes/1/bindings/6/arg");
      expect(spanText(text, diags[0])).toBe('"arg"');
    });

    it("reports only the errors of the shape the binding resembles", () => {
      const { diags } = validateEdited((s) => {
        s.bindings.value.elementTyp = s.bindings.value.elementType;
        delete s.bindings.value.elementType;
        s.variants[0].passes[2].bindings[0].buffer = "read";
      });
      expect(diags.map((d) => [d.code, d.location?.pointer, d.hint])).toEqual([
        ["schema_unknown_field", "/bindings/value/elementTyp", "did you mean `elementType`?"],
        ["schema_value", "/variants/0/passes/2/bindings/0/buffer", expect.stringContaining("buffer binding type")],
      ]);
    });

    it("checks uniform struct fields", () => {
      const { diags } = validateEdited((s) => (s.bindings.params.struct[0].type = "u64"));
      expect(diags.map((d) => [d.code, d.location?.pointer])).toEqual([["schema_value", "/bindings/params/struct/0/type"]]);
    });

    it("rejects a pass binding that is neither an id nor an object", () => {
      const { diags } = validateEdited((s) => (s.variants[0].passes[0].bindings[0] = 3));
      expect(diags.map((d) => [d.code, d.location?.pointer])).toEqual([["schema_type", "/variants/0/passes/0/bindings/0"]]);
      expect(diags[0].message).toMatch(/must be a string or an object, found an integer/);
    });
  });

  it("reports limits and uniqueness", () => {
    const { diags } = validateEdited((s) => {
      s.variants[0].passes = [];
      s.typeConstraints.T = ["float16", "float16"];
    });
    expect(diags.map((d) => [d.code, d.location?.pointer])).toEqual([
      ["schema_value", "/typeConstraints/T/1"],
      ["schema_value", "/variants/0/passes"],
    ]);
    expect(diags[1].message).toMatch(/must have at least 1 item$/);
    const long = validateEdited((s) => {
      s.variants[0].passes[0].shader = "";
      s.name = "x".repeat(65);
    }).diags.map((d) => d.message);
    expect(long).toEqual([
      expect.stringMatching(/must have at most 64 characters$/),
      expect.stringMatching(/must have at least 1 character$/),
    ]);
  });

  it("reports forbidden keys once as json_forbidden_key", () => {
    const text = SEED.replace('"derive": {', '"derive": { "__proto__": "1", "constructor": "2",').replace(
      '"domain"',
      '"prototype": 1, "domain"',
    );
    const parsed = parseJson(text, "f.json");
    const diags = validateSpecTree(parsed.root!, "f.json");
    expect(diags.map((d) => [d.code, d.location?.pointer])).toEqual([
      ["json_forbidden_key", "/prototype"],
      ["json_forbidden_key", "/derive/__proto__"],
      ["json_forbidden_key", "/derive/constructor"],
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("gives diagnostics in document order", () => {
    const { diags } = validateEdited((s) => {
      s.variants[3].priority = "high";
      s.sinceVersion = 0;
      s.outputs.outputT.optional = "yes";
    });
    const starts = diags.map((d) => d.location!.span!.start);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(diags.map((d) => d.location?.pointer)).toEqual(["/sinceVersion", "/outputs/outputT/optional", "/variants/3/priority"]);
  });
});
