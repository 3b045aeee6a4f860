/**
 * A variant whose `when` excludes an optional tensor (`not present.mask`) plans only calls without
 * it: a uniform field, dispatch size or intermediate shape of the variant that reads the tensor's
 * shape, rank or dtype outside a branch that checks `present.mask` fails for every call the variant
 * plans. Lint said nothing (test/fixtures/softmax's first `maskStride` was
 * `0 if ranks.maskT == 1 else cols`, read by the mask-less variants' uniform); it is an
 * `expr_always_fails` error at the read.
 */
import { describe, expect, it } from "vitest";
import { checkSpecObject, found } from "./probe-spec.js";

/** Variant `plain` (no mask) and `masked` share a uniform field whose value is `stride`. */
function spec(stride: string, opts: { dispatch?: string; plainWhen?: string[]; shape?: string } = {}): Record<string, unknown> {
  const pass = (bindings: string[]) => ({
    id: "p",
    name: "P",
    shader: "probe.wgsl.jinja",
    bindings,
    dispatch: { x: opts.dispatch ?? "n" },
  });
  return {
    domain: "test",
    name: "Probe",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "float32", rank: 2 }, mask: { onnx: "M", dtype: "float32", optional: true } },
    outputs: { y: { onnx: "Y", dtype: "float32", shape: "shapes.x" } },
    derive: { n: "dim(shapes.x, 1)", stride },
    bindings: {
      xb: { arg: "x" },
      mb: { arg: "mask" },
      yb: { arg: "y" },
      params: { struct: [{ name: "stride", type: "u32", value: "stride" }] },
    },
    variants: [
      {
        id: "plain",
        when: opts.plainWhen ?? ["not present.mask"],
        ...(opts.shape ? { intermediates: [{ id: "t", dtype: "float32", shape: opts.shape }] } : {}),
        passes: [
          {
            ...pass(["xb", "yb", "params"]),
            ...(opts.shape ? { bindings: ["xb", "yb", "params", { scratch: "t", name: "t" }] } : {}),
          },
        ],
      },
      { id: "masked", when: ["present.mask"], passes: [pass(["xb", "mb", "yb", "params"])] },
    ],
  };
}

const errors = (s: Record<string, unknown>) => checkSpecObject(s).diagnostics.filter((d) => d.code === "expr_always_fails");

describe("reads of an optional tensor a variant excludes", () => {
  it("are an error at the read, through derive entries, naming the variant and the pass", () => {
    const s = spec("0 if ranks.mask == 1 else n");
    const r = checkSpecObject(s);
    const e = r.diagnostics.filter((d) => d.code === "expr_always_fails");
    expect(e).toHaveLength(1);
    expect(e[0]!.severity).toBe("error");
    const f = found(e[0]!, r.text);
    expect(f.at).toBe("ranks.mask");
    expect(f.message).toBe(
      '`ranks.mask` reads optional input `mask`, which no call of variant `plain` gives (its `when` conditions exclude it), and pass `p` of variant `plain` evaluates it: every call the variant plans would fail ("ranks.mask: tensor `mask` is absent in this call")',
    );
    expect(f.hint).toMatch(/guard the read with `present\.mask`/);
    expect(e[0]!.location?.pointer).toBe("/derive/stride");
  });

  it("finds dim, shapes and tensorDtypes reads in dispatch sizes and intermediate shapes", () => {
    expect(errors(spec("0", { dispatch: "dim(shapes.mask, 0)" })).map((d) => d.location?.pointer)).toEqual([
      "/variants/0/passes/0/dispatch/x",
    ]);
    expect(errors(spec("0", { shape: "[dim(shapes.mask, -1)]" })).map((d) => d.location?.pointer)).toEqual([
      "/variants/0/intermediates/0/shape",
    ]);
    expect(errors(spec('1 if tensorDtypes.mask == "float32" else 0'))).toHaveLength(1);
    expect(errors(spec("1 if sameShape(shapes.mask, shapes.x) else 0"))).toHaveLength(1);
  });

  it("is quiet where the read is guarded by presence or the variant may get the tensor", () => {
    expect(errors(spec("(0 if ranks.mask == 1 else n) if present.mask else 0"))).toEqual([]);
    expect(errors(spec("0 if not present.mask else ranks.mask"))).toEqual([]);
    expect(errors(spec("1 if present.mask and ranks.mask == 1 else 0"))).toEqual([]);
    // Without `not present.mask`, calls with the mask may reach `plain`: not every call fails.
    expect(errors(spec("0 if ranks.mask == 1 else n", { plainWhen: ["n > 0"] }))).toEqual([]);
  });
});
