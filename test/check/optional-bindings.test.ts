/**
 * binding_optional_unguarded: a pass that binds an optional input must sit in a variant whose
 * `when` conditions (or the kernel's) are false whenever the input is absent; otherwise every call
 * without the input that reaches the variant fails at plan time. The check evaluates the
 * conditions with `present.<id>` false and everything else unknown, splitting on the tests of
 * `a if test else b` expressions (SparseAttention's `rotaryOk` requires the rotary caches only
 * when `usesRotary`, which its rotary variants require).
 */
import { describe, expect, it } from "vitest";
import { renderText } from "../../src/core/render-diagnostics.js";
import { checkSpecObject, found } from "./probe-spec.js";

/** A spec with an optional input `bias`, bound by the one pass of variant `v` when bound is true. */
function spec(opts: { when?: string[]; kernelWhen?: string[]; derive?: Record<string, string>; passes?: number }): Record<string, unknown> {
  const pass = (i: number) => ({ id: `p${i}`, name: "P", shader: "probe.wgsl.jinja", bindings: ["xb", "bb", "yb"], dispatch: { x: "1" } });
  return {
    domain: "test",
    name: "Probe",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "float32", rank: 1 }, bias: { onnx: "B", dtype: "float32", rank: 1, optional: true } },
    outputs: { y: { onnx: "Y", dtype: "float32", shape: "shapes.x" } },
    attributes: { mode: { default: 0 } },
    derive: { n: "dim(shapes.x, 0)", ...(opts.derive ?? {}) },
    ...(opts.kernelWhen ? { when: opts.kernelWhen } : {}),
    bindings: { xb: { arg: "x" }, bb: { arg: "bias" }, yb: { arg: "y" } },
    variants: [
      {
        id: "v",
        ...(opts.when ? { when: opts.when } : {}),
        passes: Array.from({ length: opts.passes ?? 1 }, (_, i) => pass(i)),
      },
    ],
  };
}

const warnings = (s: Record<string, unknown>) => checkSpecObject(s).diagnostics.filter((d) => d.code === "binding_optional_unguarded");

describe("binding_optional_unguarded", () => {
  it("warns once per variant, at the first pass that binds the input, with what fails and how to fix it", () => {
    const s = spec({ when: ["n > 0"], passes: 2 });
    const r = checkSpecObject(s);
    const w = r.diagnostics.filter((d) => d.code === "binding_optional_unguarded");
    expect(w).toHaveLength(1);
    expect(w[0]!.severity).toBe("warning");
    const f = found(w[0]!, r.text);
    expect(f.message).toBe(
      'pass `p0` of variant `v` binds optional input `bias` (binding `bb`), but no `when` condition of the variant or the kernel requires it: a call without `bias` that reaches this variant fails at plan time ("binding `bb` needs tensor `bias`, which the call omits")',
    );
    expect(f.hint).toMatch(/add `"present\.bias"` to the variant's `when`/);
    expect(w[0]!.location?.pointer).toBe("/variants/0/passes/0");
    expect(r.kernel).toBeDefined();
    // As lint prints it: the header, then the pass in the spec.
    const text = renderText(w, (file) => (file === "probe.json" ? r.text : undefined));
    expect(text).toMatch(/^warning\[binding_optional_unguarded\]: pass `p0` of variant `v` binds optional input `bias`/);
    expect(text).toMatch(/--> probe\.json:\d+:\d+ \(\/variants\/0\/passes\/0\)/);
  });

  it("is quiet when a condition requires the input: directly, through derive entries, in an and, at kernel level", () => {
    expect(warnings(spec({ when: ["present.bias"] }))).toEqual([]);
    expect(warnings(spec({ when: ["n > 0 and present.bias"] }))).toEqual([]);
    expect(warnings(spec({ when: ["ok"], derive: { has: "present.bias", ok: "n > 0 and has" } }))).toEqual([]);
    expect(warnings(spec({ kernelWhen: ["present.bias and n > 0"] }))).toEqual([]);
    expect(warnings(spec({ when: ["not (not present.bias or n == 0)"] }))).toEqual([]);
  });

  it("splits on conditional tests: required where the variant's own condition selects the branch", () => {
    const derive = { rot: "attrs.mode == 1", ok: "(present.bias and n > 0) if rot else not present.bias" };
    // The variant needs rot; the kernel-level ok then needs bias.
    expect(warnings(spec({ kernelWhen: ["ok"], when: ["rot"], derive }))).toEqual([]);
    // Without rot in the variant, a call with mode 0 and no bias reaches it.
    expect(warnings(spec({ kernelWhen: ["ok"], when: ["n > 0"], derive }))).toHaveLength(1);
  });

  it("warns where the conditions do not require the input", () => {
    expect(warnings(spec({}))).toHaveLength(1);
    expect(warnings(spec({ when: ["present.bias or n > 0"] }))).toHaveLength(1);
    expect(warnings(spec({ when: ["not present.bias"] }))).toHaveLength(1);
    expect(warnings(spec({ when: ["n > 1 if present.bias else n > 0"] }))).toHaveLength(1);
  });
});

describe("binding_optional_unguarded for optional outputs", () => {
  /** A spec whose variant `v` binds optional output `extra` in its one pass. */
  const withOutput = (opts: { when?: string[]; optional?: boolean; inPlace?: boolean }): Record<string, unknown> => {
    const s = spec({ when: ["present.bias"], ...(opts.when ? { when: opts.when } : {}) }) as Record<string, any>;
    if (opts.inPlace) {
      // An id that is both an input and an output is an input: guarded by the input's rules.
      s.outputs.bias = { onnx: "B_out", dtype: "float32", rank: 1, optional: true, shape: "shapes.bias" };
      return s;
    }
    s.outputs.extra = { onnx: "E", dtype: "float32", rank: 1, shape: "shapes.x", optional: opts.optional ?? true };
    s.bindings.eb = { arg: "extra" };
    s.variants[0].passes[0].bindings.push("eb");
    return s;
  };

  it("warns at a pass that binds an optional output the conditions do not require, as for an input", () => {
    const s = withOutput({});
    const r = checkSpecObject(s);
    const w = r.diagnostics.filter((d) => d.code === "binding_optional_unguarded");
    expect(w.map((d) => found(d, r.text))).toEqual([
      {
        code: "binding_optional_unguarded",
        message:
          'pass `p0` of variant `v` binds optional output `extra` (binding `eb`), but no `when` condition of the variant or the kernel requires it: a call without `extra` that reaches this variant fails at plan time ("binding `eb` needs tensor `extra`, which the call omits")',
        hint: 'add `"present.extra"` to the variant\'s `when` (and a variant without this binding for calls that omit it), or make `extra` a required output',
        at: expect.any(String),
      },
    ]);
    expect(w[0]!.location?.pointer).toBe("/variants/0/passes/0");
  });

  it("is quiet for a guarded optional output, a required one and an in-place tensor", () => {
    expect(warnings(withOutput({ when: ["present.bias and present.extra"] }))).toEqual([]);
    expect(warnings(withOutput({ optional: false }))).toEqual([]);
    expect(warnings(withOutput({ inPlace: true }))).toEqual([]);
  });
});

describe("output_unbound", () => {
  /** Outputs maxT, argT (required) and sumT (optional); each variant binds what `binds` lists. */
  const multi = (variants: { id: string; when?: string[]; binds: string[] }[]): Record<string, unknown> => ({
    domain: "test",
    name: "Probe",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "float32", rank: 2 } },
    outputs: {
      maxT: { onnx: "max", dtype: "float32", shape: "[rows]" },
      argT: { onnx: "argmax", dtype: "int32", shape: "[rows]" },
      sumT: { onnx: "sum", dtype: "float32", shape: "[rows]", optional: true },
    },
    derive: { rows: "dim(shapes.x, 0)" },
    bindings: { xb: { arg: "x" }, maxb: { arg: "maxT" }, argb: { arg: "argT" }, sumb: { arg: "sumT" } },
    variants: variants.map((v) => ({
      id: v.id,
      ...(v.when ? { when: v.when } : {}),
      passes: [{ id: "p", name: "P", shader: "probe.wgsl.jinja", bindings: ["xb", ...v.binds], dispatch: { x: "rows" } }],
    })),
  });
  const unbound = (s: Record<string, unknown>) => {
    const r = checkSpecObject(s);
    return { r, w: r.diagnostics.filter((d) => d.code === "output_unbound") };
  };

  it("warns at a variant that never binds a required output, with what happens and the fix", () => {
    const { r, w } = unbound(multi([{ id: "v", when: ["present.sumT"], binds: ["maxb", "sumb"] }]));
    expect(w.map((d) => [found(d, r.text).message, found(d, r.text).hint, d.location?.pointer, d.severity])).toEqual([
      [
        'variant `v` never binds output `argT`: no pass of the variant has a binding with `"arg": "argT"`, so a call it plans leaves `argT` unwritten',
        'bind `argT` in a pass of the variant that writes it (a binding `{ "arg": "argT" }` listed in the pass\'s `bindings`)',
        "/variants/0",
        "warning",
      ],
    ]);
    const text = renderText(w, (file) => (file === "probe.json" ? r.text : undefined));
    expect(text).toMatch(/^warning\[output_unbound\]: variant `v` never binds output `argT`/);
    expect(text).toMatch(/--> probe\.json:\d+:\d+ \(\/variants\/0\)/);
  });

  it("warns at a variant that leaves an optional output unbound but may be picked for a call that gives it", () => {
    const { r, w } = unbound(multi([{ id: "v", binds: ["maxb", "argb"] }]));
    expect(w.map((d) => found(d, r.text).hint)).toEqual([
      'bind `sumT` in a pass of the variant that writes it, or add `"not present.sumT"` to the variant\'s `when` so that calls giving it pick another variant',
    ]);
  });

  it("is quiet when every output is bound, or an unbound optional one is excluded by the conditions", () => {
    const s = multi([
      { id: "withSum", when: ["present.sumT"], binds: ["maxb", "argb", "sumb"] },
      { id: "plain", when: ["not present.sumT"], binds: ["maxb", "argb"] },
      { id: "viaDerive", when: ["noSum and rows > 0"], binds: ["maxb", "argb"] },
    ]);
    (s.derive as Record<string, string>).noSum = "not present.sumT";
    expect(unbound(s).w).toEqual([]);
  });

  it("is not reported for a spec with errors (a misspelt tensor in a binding would echo as an unbound output)", () => {
    const s = multi([{ id: "v", when: ["present.sumT"], binds: ["maxb", "argb", "sumb"] }]);
    (s.bindings as Record<string, unknown>).argb = { arg: "argTT" };
    const { r, w } = unbound(s);
    expect(r.diagnostics.map((d) => d.code)).toContain("unknown_tensor");
    expect(w).toEqual([]);
  });
});
