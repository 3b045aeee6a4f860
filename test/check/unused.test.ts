/**
 * Declared but unused (src/check/unused.ts): attributes, derive entries (of the kernel, a variant or
 * a pass), tunables and intermediates nothing the kernel uses reads; and no warning for what is read
 * only by a template (through `set`, macros, loops, includes), by a chain of used entries, by a
 * condition, a binding, a dispatch size, the `explain` list or a per-call tune key, nor where the
 * templates' reads are not known precisely (`tunables[k]`, an include by an expression).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkKernel } from "../../src/check/check-spec.js";
import { templateReads } from "../../src/check/template-reads.js";
import { lintPaths, makeCheckContext, tuneKeysOf } from "../../src/api/lint.js";
import { loadConfig } from "../../src/plan/config.js";
import { loadSpecFile } from "../../src/load/load-spec.js";
import { checkSpecObject, found } from "./probe-spec.js";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A templates folder holding `files` (the pass's shader is `probe.wgsl.jinja`). */
function templates(files: Readonly<Record<string, string>>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-unused-"));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** A spec with one attribute, one tunable, one intermediate and a derive entry the template reads. */
function base(): Record<string, any> {
  return {
    domain: "test",
    name: "Probe",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "float32", rank: 1 } },
    outputs: { y: { onnx: "Y", dtype: "float32", rank: 1, shape: "shapes.x" } },
    attributes: { alpha: { default: 1.0 } },
    tunables: { WG: { default: 64 } },
    derive: { n: "dim(shapes.x, 0)", wg: "tunables.WG" },
    bindings: {
      x: { arg: "x" },
      y: { arg: "y" },
      params: { struct: [{ name: "alpha", type: "f32", value: "attrs.alpha" }] },
    },
    variants: [
      {
        id: "v",
        intermediates: [{ id: "tmp", dtype: "float32", shape: "[n]" }],
        passes: [
          {
            id: "p",
            name: "P",
            shader: "probe.wgsl.jinja",
            bindings: ["x", "y", "params", { scratch: "tmp", name: "tmp" }],
            dispatch: { x: "ceilDiv(n, wg)" },
          },
        ],
      },
    ],
  };
}

const TEMPLATE = "{{ env.wgsl.resourceDeclarations }}\n@compute @workgroup_size({{ wg }})\nfn main() {}\n";

/** The unused_* warnings of `spec` checked against `files` (the shader is `probe.wgsl.jinja`): code, message, hint, pointer, text pointed at. */
function unused(spec: unknown, files: Readonly<Record<string, string>> = { "probe.wgsl.jinja": TEMPLATE }, tuneKeys?: string[]) {
  const text = JSON.stringify(spec, null, 2);
  const loaded = loadSpecFile("probe.json", text);
  if (!loaded.spec) throw new Error(loaded.diagnostics.map((d) => d.message).join("; "));
  const ctx = makeCheckContext(
    templates(files),
    undefined,
    undefined,
    undefined,
    tuneKeys ? new Map([["Probe", new Set(tuneKeys)]]) : undefined,
  );
  const r = checkKernel(loaded.spec, ctx);
  const errors = r.diagnostics.filter((d) => d.severity === "error");
  if (errors.length) throw new Error(`the test spec has errors: ${errors.map((d) => d.message).join("; ")}`);
  return r.diagnostics
    .filter((d) => d.code.startsWith("unused_"))
    .map((d) => ({ ...found(d, text), severity: d.severity, pointer: d.location?.pointer }));
}

const codesAndPointers = (xs: ReturnType<typeof unused>): string[][] => xs.map((x) => [x.code, x.pointer!]);

describe("the base spec uses everything it declares", () => {
  it("gives no unused warning", () => {
    expect(unused(base())).toEqual([]);
  });
});

describe("unused_attribute", () => {
  it("an attribute nothing reads, at its key, with how to fix it", () => {
    const s = base();
    s.attributes.beta = { default: 0 };
    expect(unused(s)).toEqual([
      {
        code: "unused_attribute",
        severity: "warning",
        message: "attribute `beta` is never read, so the value a call gives it changes nothing",
        hint: "read it as `attrs.beta`; if the kernel supports one value only, list it in `attributeConstraints.beta.values` so that calls giving another are rejected; or remove it (calls that set it are then rejected)",
        at: '"beta"',
        pointer: "/attributes/beta",
      },
    ]);
  });

  it("an attribute read only by a derive entry nothing uses", () => {
    const s = base();
    s.attributes.beta = {};
    s.derive.spare = "attrs.beta * 2";
    expect(unused(s).map((x) => [x.code, x.message])).toEqual([
      ["unused_derive", "derive entry `spare` is never read by an expression, a binding or a template"],
      [
        "unused_attribute",
        "attribute `beta` is read only by derive entry `spare`, which nothing uses, so the value a call gives it changes nothing",
      ],
    ]);
  });

  it("a constraint with one allowed value says the kernel supports only it: no warning", () => {
    const s = base();
    s.attributes.causal = { default: 1 };
    s.attributeConstraints = { causal: { values: [1] } };
    expect(unused(s)).toEqual([]);
    s.attributeConstraints = { causal: { values: [0, 1] } };
    expect(codesAndPointers(unused(s))).toEqual([["unused_attribute", "/attributes/causal"]]);
  });

  it.each([
    ["the kernel's `when`", (s: Record<string, any>) => (s.when = ["attrs.beta > 0"])],
    ["a variant's `when`", (s: Record<string, any>) => (s.variants[0].when = ['has(attrs, "beta")'])],
    ["an output shape", (s: Record<string, any>) => (s.outputs.y.shape = "[attrs.beta]")],
    ["an intermediate's shape", (s: Record<string, any>) => (s.variants[0].intermediates[0].shape = "[n * attrs.beta]")],
    ["a uniform field", (s: Record<string, any>) => s.bindings.params.struct.push({ name: "beta", type: "i32", value: "attrs.beta" })],
    ["a dispatch size", (s: Record<string, any>) => (s.variants[0].passes[0].dispatch.y = "attrs.beta")],
    [
      "a chain of derive entries a template reads",
      (s: Record<string, any>) => ((s.derive.wg = "tunables.WG + k1 - k1"), (s.derive.k1 = "k2"), (s.derive.k2 = "attrs.beta")),
    ],
  ])("an attribute read only by %s is used", (_what, edit) => {
    const s = base();
    s.attributes.beta = { default: 1 };
    edit(s);
    expect(unused(s)).toEqual([]);
  });
});

describe("unused_derive", () => {
  it("an entry read only by a template, through set, a macro, a loop, an include or an import with context, is used", () => {
    const s = base();
    Object.assign(s.derive, { viaSet: "1", viaMacro: "2", viaLoop: "3", viaInclude: "4", viaImport: "5", viaFilter: "6" });
    const files = {
      "probe.wgsl.jinja": [
        '{% from "lib/m.jinja" import fromLib with context %}',
        "{{ env.wgsl.resourceDeclarations }}",
        "{% set k = viaSet %}",
        "{% macro m(a) %}{{ a + viaMacro }}{% endmacro %}",
        "{% for i in range(viaLoop) %}const c{{ i }} = {{ m(i) }};{% endfor %}",
        '{% include "part.jinja" %}',
        "{{ fromLib() }}",
        "{{ [viaFilter, 1] | sum }}",
        "@compute @workgroup_size({{ wg }})",
        "fn main() {}",
        "",
      ].join("\n"),
      "part.jinja": "// {{ viaInclude }}\n",
      "lib/m.jinja": "{% macro fromLib() %}// {{ viaImport }}{% endmacro %}\n",
    };
    expect(unused(s, files)).toEqual([]);
  });

  it("an entry read only by a condition, a `$name` element type or the `explain` list is used", () => {
    const s = base();
    Object.assign(s.derive, { cond: "n > 0", elem: '"f32"', shown: "n * 2" });
    s.when = ["cond"];
    s.bindings.x.elementType = "$elem";
    s.explain = ["shown"];
    expect(unused(s)).toEqual([]);
  });

  it("an entry a per-call tune rule keys on is used", () => {
    const s = base();
    s.derive.tokens = "n * 4";
    expect(codesAndPointers(unused(s))).toEqual([["unused_derive", "/derive/tokens"]]);
    expect(unused(s, undefined, ["tokens"])).toEqual([]);
  });

  it("a chain that nothing uses: the head is never read, the rest is read only by unused entries", () => {
    const s = base();
    Object.assign(s.derive, { head: "mid + 1", mid: "tail * 2", tail: "tunables.WG" });
    expect(unused(s).map((x) => [x.pointer, x.message, x.hint])).toEqual([
      ["/derive/head", "derive entry `head` is never read by an expression, a binding or a template", "remove it, or use it"],
      [
        "/derive/mid",
        "derive entry `mid` is read only by derive entry `head`, which nothing uses",
        "remove it together with `head`, or use it",
      ],
      [
        "/derive/tail",
        "derive entry `tail` is read only by derive entry `mid`, which nothing uses",
        "remove it together with `mid`, or use it",
      ],
    ]);
  });

  it("entries of a variant and of a pass are checked in their own environment", () => {
    const s = base();
    s.variants[0].derive = { vSpare: "1" };
    s.variants[0].passes[0].derive = { pSpare: "2" };
    expect(unused(s).map((x) => [x.pointer, x.message])).toEqual([
      ["/variants/0/derive/vSpare", "derive entry `vSpare` of variant `v` is never read by an expression, a binding or a template"],
      [
        "/variants/0/passes/0/derive/pSpare",
        "derive entry `pSpare` of pass `p` of variant `v` is never read by an expression, a binding or a template",
      ],
    ]);
  });

  it("a default that every variant or pass reading it overrides counts as used, and so does what it reads", () => {
    const s = base();
    s.tunables.LANES = { default: 1 };
    s.attributes.beta = { default: 1 };
    Object.assign(s.derive, { lanes: "tunables.LANES + laneBase", laneBase: "attrs.beta", size: "64" });
    s.derive.wg = "max(size, tunables.WG) * lanes";
    // Every variant overrides `lanes` (as test/fixtures/axpby does); the pass overrides `size`.
    s.variants[0].derive = { lanes: "4" };
    s.variants[0].passes[0].derive = { size: "128" };
    expect(unused(s)).toEqual([]);
  });

  it("a pass's entry is not taken as read because another pass reads its name", () => {
    const s = base();
    const pass = s.variants[0].passes[0];
    s.variants[0].passes = [
      { ...pass, derive: { layout: "1" } },
      { ...pass, id: "q", shader: "other.wgsl.jinja", derive: { layout: "2" } },
    ];
    const files = { "probe.wgsl.jinja": TEMPLATE, "other.wgsl.jinja": TEMPLATE.replace("fn main", "// {{ layout }}\nfn main") };
    expect(codesAndPointers(unused(s, files))).toEqual([["unused_derive", "/variants/0/passes/0/derive/layout"]]);
  });
});

describe("unused_tunable", () => {
  it("a tunable nothing reads, and one read only by an unused entry", () => {
    const s = base();
    s.tunables.SPARE = { default: 1 };
    s.tunables.VIA = { default: 2 };
    s.derive.spare = "tunables.VIA";
    expect(unused(s).map((x) => [x.code, x.pointer, x.message])).toEqual([
      ["unused_derive", "/derive/spare", "derive entry `spare` is never read by an expression, a binding or a template"],
      ["unused_tunable", "/tunables/SPARE", "tunable `SPARE` is never read"],
      ["unused_tunable", "/tunables/VIA", "tunable `VIA` is read only by derive entry `spare`, which nothing uses"],
    ]);
  });

  it('a tunable read only by a template (`tunables.X`, `tunables["X"]`) or a condition is used', () => {
    const s = base();
    s.tunables.A = { default: 1 };
    s.tunables.B = { default: 2 };
    s.tunables.C = { default: 3, values: [4] };
    s.variants[0].when = ["tunables.C <= device.limits.maxComputeInvocationsPerWorkgroup"];
    const files = { "probe.wgsl.jinja": TEMPLATE.replace("fn main", '// {{ tunables.A }} {{ tunables["B"] }}\nfn main') };
    expect(unused(s, files)).toEqual([]);
  });

  it.each([
    ["a subscript by a variable", '{% set k = "SPARE" %}// {{ tunables[k] }}'],
    ["a loop over tunables", "{% for name, v in tunables %}// {{ v }}{% endfor %}"],
    ["tunables as a macro argument", "{% macro m(t) %}// {{ t.SPARE }}{% endmacro %}{{ m(tunables) }}"],
    ["tunables in a variable", "{% set t = tunables %}// {{ t.SPARE }}"],
  ])("a template that reads tunables through %s may read any: no unused_tunable", (_what, line) => {
    const s = base();
    s.tunables.SPARE = { default: 1 };
    const files = { "probe.wgsl.jinja": TEMPLATE.replace("fn main", `${line}\nfn main`) };
    expect(unused(s, files)).toEqual([]);
    // The other warnings stay.
    s.derive.spare = "1";
    expect(codesAndPointers(unused(s, files))).toEqual([["unused_derive", "/derive/spare"]]);
  });
});

describe("reads a template hides", () => {
  it("an include by an expression hides what it reads: no unused warning for the kernel", () => {
    const s = base();
    s.derive.spare = "1";
    s.tunables.SPARE = { default: 1 };
    s.attributes.beta = {};
    const files = {
      "probe.wgsl.jinja": TEMPLATE.replace("fn main", '{% set part = "part" %}{% include part ~ ".jinja" %}\nfn main'),
      "part.jinja": "// {{ spare }} {{ tunables.SPARE }}\n",
    };
    expect(unused(s, files)).toEqual([]);
  });

  it("templateReads tells what it cannot name", () => {
    const flags = (src: string): [boolean, boolean] => {
      const r = templateReads(src);
      return [r.anyTunable, r.unknownIncludes];
    };
    expect(flags('{{ tunables.A }}{{ tunables["B"] }}{% include "x.jinja" %}')).toEqual([false, false]);
    expect(flags("{{ tunables[k] }}")).toEqual([true, false]);
    expect(flags("{% for k, v in tunables %}{% endfor %}")).toEqual([true, false]);
    expect(flags("{% include name %}")).toEqual([false, true]);
    expect(flags('{% from "lib/" ~ name import m %}')).toEqual([false, true]);
  });
});

describe("unused_intermediate", () => {
  it("an intermediate no pass of its variant binds, at the intermediate", () => {
    const s = base();
    s.variants[0].intermediates.push({ id: "junk", dtype: "float32", shape: "[4]" });
    expect(unused(s)).toEqual([
      {
        code: "unused_intermediate",
        severity: "warning",
        message: "intermediate `junk` of variant `v` is bound by no pass, yet every call of the variant allocates its scratch buffer",
        hint: 'bind it in a pass of the variant (`{ "scratch": "junk", "name": … }`), or remove it',
        at: expect.stringMatching(/^\{\s+"id": "junk"/),
        pointer: "/variants/0/intermediates/1",
      },
    ]);
  });
});

describe("when the reads are not all known", () => {
  it("no unused warning beside an error, or while a template is missing", () => {
    const s = base();
    s.attributes.beta = {};
    s.derive.spare = "1";
    s.derive.broken = "nope + 1";
    const r = checkSpecObject(s, templates({ "probe.wgsl.jinja": TEMPLATE }));
    expect(r.diagnostics.map((d) => d.code)).toEqual(["unknown_name"]);
    delete s.derive.broken;
    expect(checkSpecObject(s).diagnostics.map((d) => d.code)).toEqual(["shader_missing"]);
  });
});

describe("the shipped specs", () => {
  const root = path.resolve(__dirname, "../..");
  const loaded = loadConfig(root);

  it("give no unused warning, with or without the config's tune keys", () => {
    for (const keys of [undefined, tuneKeysOf(loaded)]) {
      const r = lintPaths(
        [path.join(root, "specs")],
        makeCheckContext(path.join(root, "templates"), undefined, undefined, undefined, keys),
      );
      expect(r.diagnostics.filter((d) => d.code.startsWith("unused_"))).toEqual([]);
      expect(r.kernels.length).toBeGreaterThanOrEqual(2);
    }
  });

  it("are analysed: an attribute, a derive entry, a tunable and an intermediate added to each are reported, nothing else", () => {
    const specs = fs.readdirSync(path.join(root, "specs")).filter((n) => n.endsWith(".json"));
    for (const name of specs) {
      const spec = JSON.parse(fs.readFileSync(path.join(root, "specs", name), "utf8")) as Record<string, any>;
      spec.attributes.spare_attr = {};
      spec.derive.spareDerive = "1";
      spec.tunables.SPARE_TUNABLE = { default: 1 };
      spec.variants[0].intermediates = [...(spec.variants[0].intermediates ?? []), { id: "spareScratch", dtype: "float32", shape: "[1]" }];
      const text = JSON.stringify(spec, null, 2);
      const r = checkKernel(
        loadSpecFile(name, text).spec!,
        makeCheckContext(path.join(root, "templates"), undefined, undefined, undefined, tuneKeysOf(loaded)),
      );
      expect(
        r.diagnostics.map((d) => [d.code, d.location?.pointer]),
        name,
      ).toEqual([
        ["unused_derive", "/derive/spareDerive"],
        ["unused_tunable", "/tunables/SPARE_TUNABLE"],
        ["unused_attribute", "/attributes/spare_attr"],
        ["unused_intermediate", `/variants/0/intermediates/${spec.variants[0].intermediates.length - 1}`],
      ]);
    }
  });
});
