import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { discoverSpecFiles, loadSpecFile, loadSpecPath } from "../../src/load/load-spec.js";
import type { ExprSource, KernelSpec } from "../../src/model/spec.js";

const SEED_PATH = new URL("../../specs/PagedAttention.json", import.meta.url);
const SEED = readFileSync(SEED_PATH, "utf8");

function loadSeed(): KernelSpec {
  const r = loadSpecFile("specs/PagedAttention.json", SEED);
  expect(r.diagnostics).toEqual([]);
  return r.spec!;
}

/** Every ExprSource of a spec. */
function allExprs(spec: KernelSpec): ExprSource[] {
  const out: ExprSource[] = [];
  out.push(...spec.outputs.flatMap((o) => (o.shape ? [o.shape] : [])));
  out.push(...spec.derive.map((d) => d.expr), ...spec.when);
  const bindingExprs = (fields: readonly { value: ExprSource }[] | undefined) => (fields ?? []).map((f) => f.value);
  out.push(...spec.bindings.flatMap((b) => bindingExprs(b.fields)));
  for (const v of spec.variants) {
    out.push(...v.when, ...v.derive.map((d) => d.expr), ...v.intermediates.map((i) => i.shape));
    for (const p of v.passes) {
      out.push(...p.derive.map((d) => d.expr), p.dispatch.x, p.dispatch.y, p.dispatch.z);
      for (const b of p.bindings) if (b.kind === "inline") out.push(...bindingExprs(b.binding.fields));
    }
  }
  return out;
}

describe("loadSpecFile on the seed", () => {
  const spec = loadSeed();

  it("has the seed's counts", () => {
    expect(spec.domain).toBe("com.microsoft");
    expect(spec.name).toBe("PagedAttention");
    expect(spec.sinceVersion).toBe(1);
    expect(spec.inputs).toHaveLength(9);
    expect(spec.outputs).toHaveLength(3);
    expect(spec.attributes.map((a) => a.name)).toEqual(["is_causal", "kv_num_heads", "num_heads", "scale"]);
    expect(spec.attributeConstraints).toHaveLength(3);
    expect(spec.typeConstraints.map((t) => [t.name, t.types])).toEqual([
      ["T", ["float16"]],
      ["S", ["int32"]],
    ]);
    expect(spec.tunables).toHaveLength(8);
    expect(spec.tunables.map((t) => t.name)).toContain("ROW_LOAD_AHEAD");
    expect(spec.derive).toHaveLength(Object.keys(JSON.parse(SEED).derive).length);
    expect(spec.when.map((w) => w.text)).toEqual(["pagedContractOk", "dispatchFits"]);
    expect(spec.bindings).toHaveLength(14);
    expect(spec.variants).toHaveLength(8);
    expect(spec.variants.map((v) => v.passes.length)).toEqual([3, 2, 3, 2, 3, 2, 3, 2]);
    expect(spec.variants.map((v) => v.priority)).toEqual([10, 0, 10, 0, 10, 0, 10, 0]);
    // f16 data needs no feature: without shader-f16 it is stored packed (docs/f16.md).
    expect(spec.variants.every((v) => v.features.length === 0)).toBe(true);
    expect(spec.variants[0].intermediates.map((i) => [i.id, i.dtype])).toEqual([
      ["partialOut", "float32"],
      ["partialStats", "float32"],
    ]);
    expect(spec.variants[1].intermediates).toEqual([]);
    expect(spec.source).toBe(SEED);
    expect(spec.file).toBe("specs/PagedAttention.json");
  });

  it("applies defaults", () => {
    const byName = new Map(spec.inputs.map((i) => [i.name, i]));
    expect(byName.get("queryT")).toMatchObject({ onnx: "query", dtype: "T", rank: 2, optional: false });
    expect(byName.get("slotMappingT")).toMatchObject({ optional: true, storage: "int32" });
    expect(spec.attributes[0].default).toBe(1);
    expect(spec.attributes[1].default).toBeUndefined();
    expect(spec.attributeConstraints.map((c) => [c.name, c.values, c.required])).toEqual([
      ["is_causal", [1], false],
      ["kv_num_heads", undefined, true],
      ["num_heads", undefined, true],
    ]);
    expect(spec.tunables[0]).toMatchObject({ name: "WORKGROUP_SIZE", default: 64, values: undefined });
  });

  it("models bindings: names default to the id, struct fields, element types", () => {
    const b = new Map(spec.bindings.map((x) => [x.id, x]));
    expect(b.get("key")).toMatchObject({ kind: "arg", ref: "keyT", name: "key", elementType: "$aScalar" });
    expect(b.get("key_cache_main")).toMatchObject({ name: "key_cache", buffer: "read-only-storage", elementType: "$cacheVec" });
    const params = b.get("params_main")!;
    expect(params.kind).toBe("uniform");
    expect(params.name).toBe("params");
    expect(params.fields?.map((f) => [f.name, f.type, f.value.text])).toEqual([
      ["batchSize", "u32", "batchSize"],
      ["scale", "f32", 'attrs.scale if has(attrs, "scale") else 0'],
    ]);
    expect(SEED.slice(b.get("key")!.refWhere!.span.start, b.get("key")!.refWhere!.span.end)).toBe('"keyT"');
    expect(b.get("key")!.where.pointer).toBe("/bindings/key");
  });

  it("models pass bindings as references or inline bindings named by their WGSL name", () => {
    const pass = spec.variants[0].passes[1];
    expect(pass.bindings.map((b) => (b.kind === "ref" ? b.id : `inline:${b.binding.id}`))).toEqual([
      "query",
      "key_cache_main",
      "value_cache_main",
      "cumulative_sequence_length",
      "past_seqlens",
      "block_table",
      "inline:partial_out",
      "inline:partial_stats",
      "params_main",
    ]);
    const inline = pass.bindings[6];
    if (inline.kind !== "inline") throw new Error("inline expected");
    expect(inline.binding).toMatchObject({ kind: "scratch", ref: "partialOut", name: "partial_out", elementType: "vec4<f32>" });
    expect(inline.binding.where.pointer).toBe("/variants/0/passes/1/bindings/6");
    const ref = pass.bindings[0];
    if (ref.kind !== "ref") throw new Error("ref expected");
    expect(SEED.slice(ref.where.span.start, ref.where.span.end)).toBe('"query"');
  });

  it("turns JSON literals in expression positions into expressions", () => {
    const scatter = spec.variants[0].passes[0];
    expect(scatter.dispatch.z.text).toBe("1");
    expect(scatter.dispatch.z.where.pointer).toBe("/variants/0/passes/0/dispatch/z");
    expect(SEED[scatter.dispatch.z.textStart]).toBe("1");
    const split = spec.variants[0].passes[1];
    expect(split.derive.map((d) => [d.name, d.expr.text])).toEqual([["splitK", "true"]]);
    expect(SEED.slice(split.derive[0].expr.textStart, split.derive[0].expr.textStart + 4)).toBe("true");
  });

  it("defaults a missing dispatch size to 1 located at the dispatch object", () => {
    const main = spec.variants[1].passes[1];
    expect(main.dispatch.x.text).toBe("tokenCount");
    expect(main.dispatch.z.text).toBe("1");
    expect(main.dispatch.z.where.pointer).toBe("/variants/1/passes/1/dispatch");
  });

  it("locates every expression: text at textStart, or through offsetMap when escaped", () => {
    const exprs = allExprs(spec);
    expect(exprs.length).toBeGreaterThan(100);
    let escaped = 0;
    for (const e of exprs) {
      if (e.where.pointer.endsWith("/dispatch")) {
        expect(e.text).toBe("1");
        continue;
      }
      const raw = SEED.slice(e.where.span.start, e.where.span.end);
      if (raw.startsWith('"')) {
        expect(JSON.parse(raw)).toBe(e.text);
        expect(e.textStart).toBe(e.where.span.start + 1);
      }
      if (e.offsetMap === undefined) {
        expect(SEED.slice(e.textStart, e.textStart + e.text.length)).toBe(e.text);
      } else {
        escaped++;
        expect(e.offsetMap).toHaveLength(e.text.length + 1);
        expect(e.offsetMap[e.text.length]).toBe(e.where.span.end - 1);
        [...e.text].forEach((ch, i) => {
          const at = SEED[e.offsetMap![i]];
          expect(at === ch || at === "\\").toBe(true);
        });
      }
    }
    const cacheVec = spec.derive.find((d) => d.name === "cacheVec")!.expr;
    expect(cacheVec.text.startsWith('("vec4<f16>"')).toBe(true);
    expect(SEED.slice(cacheVec.offsetMap![1], cacheVec.offsetMap![1] + 2)).toBe('\\"');
    expect(cacheVec.offsetMap![2]).toBe(cacheVec.offsetMap![1] + 2);
    expect(escaped).toBeGreaterThanOrEqual(6);
  });

  it("records where each named entry and its key sit", () => {
    const headSize = spec.derive.find((d) => d.name === "headSize")!;
    expect(SEED.slice(headSize.keyWhere.span.start, headSize.keyWhere.span.end)).toBe('"headSize"');
    expect(headSize.where.pointer).toBe("/derive/headSize");
    const shader = spec.variants[0].passes[2].shaderWhere;
    expect(SEED.slice(shader.span.start, shader.span.end)).toBe('"attn-flash-decode-splitk-merge.wgsl.jinja"');
  });
});

describe("loadSpecFile on broken specs", () => {
  it("returns no spec and the JSON error for malformed JSON", () => {
    const r = loadSpecFile("x.json", SEED.replace('"sinceVersion": 1,', '"sinceVersion": 1,,'));
    expect(r.spec).toBeUndefined();
    expect(r.diagnostics.map((d) => d.code)).toEqual(["json_syntax"]);
  });

  it("reports duplicate keys and schema errors together", () => {
    const r = loadSpecFile("x.json", SEED.replace('"sinceVersion": 1,', '"sinceVersion": 1, "name": "X", "varaints": [],'));
    expect(r.spec).toBeUndefined();
    expect(r.diagnostics.map((d) => d.code)).toEqual(["json_duplicate_key", "schema_unknown_field"]);
  });

  it("requires a name on inline bindings", () => {
    const spec = JSON.parse(SEED);
    delete spec.variants[0].passes[2].bindings[2].name;
    const r = loadSpecFile("x.json", JSON.stringify(spec, null, 2));
    expect(r.spec).toBeUndefined();
    expect(r.diagnostics.map((d) => [d.code, d.location?.pointer])).toEqual([["schema_missing_field", "/variants/0/passes/2/bindings/2"]]);
  });

  it("keeps tunable candidate values", () => {
    const spec = JSON.parse(SEED);
    spec.tunables.WORKGROUP_SIZE.values = [32, 64, 128];
    const r = loadSpecFile("x.json", JSON.stringify(spec));
    expect(r.diagnostics).toEqual([]);
    expect(r.spec!.tunables[0].values).toEqual([32, 64, 128]);
  });
});

describe("loadSpecPath and discoverSpecFiles", () => {
  const root = mkdtempSync(join(tmpdir(), "kernelc-load-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const specs = join(root, "specs");
  mkdirSync(specs);
  mkdirSync(join(specs, "nested.json"));
  writeFileSync(join(specs, "b.json"), "{}");
  writeFileSync(join(specs, "a.json"), SEED);
  writeFileSync(join(specs, "notes.txt"), "x");
  writeFileSync(join(root, "outside.json"), "{}");
  symlinkSync(join(root, "outside.json"), join(specs, "escape.json"));
  symlinkSync(join(specs, "b.json"), join(specs, "c.json"));
  symlinkSync(join(root, "missing.json"), join(specs, "dangling.json"));

  it("expands folders to their *.json files sorted by name, not following symlinks out", () => {
    const r = discoverSpecFiles([specs, join(specs, "b.json"), join(root, "outside.json")]);
    expect(r.diagnostics).toEqual([]);
    expect(r.files).toEqual([join(specs, "a.json"), join(specs, "b.json"), join(specs, "c.json"), join(root, "outside.json")]);
  });

  it("reports a path that does not exist", () => {
    const r = discoverSpecFiles([join(root, "nope")]);
    expect(r.files).toEqual([]);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["file_unreadable"]);
    expect(r.diagnostics[0].message).toMatch(/does not exist/);
  });

  it("loads a file from disk and reports unreadable ones", () => {
    expect(loadSpecPath(join(specs, "a.json")).diagnostics).toEqual([]);
    expect(loadSpecPath(join(root, "nope.json")).diagnostics.map((d) => d.code)).toEqual(["file_unreadable"]);
    const b = loadSpecPath(join(specs, "b.json"));
    expect(b.spec).toBeUndefined();
    expect(b.diagnostics.every((d) => d.code === "schema_missing_field")).toBe(true);
  });
});

describe("a tensor or scratch binding's buffer", () => {
  it("is a storage buffer: `uniform` is a schema_value at the field (it was an eval_error at every pass that binds it)", () => {
    for (const binding of [
      { arg: "x", buffer: "uniform" },
      { scratch: "t", buffer: "uniform" },
    ]) {
      const spec = {
        domain: "test",
        name: "Probe",
        sinceVersion: 1,
        inputs: { x: { onnx: "X", dtype: "float32" } },
        outputs: {},
        bindings: { b: binding },
        variants: [{ id: "v", passes: [{ id: "p", name: "P", shader: "p.wgsl.jinja", bindings: ["b"], dispatch: { x: "1" } }] }],
      };
      const r = loadSpecFile("probe.json", JSON.stringify(spec, null, 2));
      expect(r.diagnostics.map((d) => [d.code, d.location?.pointer, d.message])).toEqual([
        [
          "schema_value",
          "/bindings/b/buffer",
          'field `buffer` of `/bindings/b` is "uniform", which is not allowed: expected `"storage"` or `"read-only-storage"`',
        ],
      ]);
      expect(r.diagnostics[0]!.hint).toBe("The storage buffer binding type (a uniform buffer is a `struct` binding).");
    }
  });
});
