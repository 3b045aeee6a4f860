/**
 * A call whose tensors of one type parameter have different dtypes: the error names the tensor at
 * fault. A tensor whose dtype the parameter does not allow is named with the allowed types, whether
 * it is the first tensor of the parameter the call gives (the others then follow a dtype that was
 * never allowed) or a later one; when each dtype is allowed alone, the error names both tensors
 * and the one that set the parameter. The generated dispatcher agrees with the interpreter.
 */
import { describe, expect, it } from "vitest";
import { coreProject } from "../support/project-build.js";

/** z = a + b (+ c when given), all of type T (float16 or float32), c optional. */
const add = {
  domain: "com.example",
  name: "Add3",
  sinceVersion: 1,
  inputs: {
    aT: { onnx: "a", dtype: "T", rank: 1 },
    bT: { onnx: "b", dtype: "T", rank: 1 },
    cT: { onnx: "c", dtype: "T", rank: 1, optional: true },
  },
  outputs: { zT: { onnx: "z", dtype: "T", rank: 1, shape: "shapes.aT" } },
  typeConstraints: { T: ["float16", "float32"] },
  derive: { n: "dim(shapes.aT, 0)" },
  bindings: {
    a: { arg: "aT" },
    b: { arg: "bT" },
    z: { arg: "zT" },
    params: { struct: [{ name: "n", type: "u32", value: "n" }] },
  },
  variants: [
    {
      id: "main",
      passes: [
        { id: "main", name: "Add3", shader: "add.wgsl.jinja", bindings: ["a", "b", "z", "params"], dispatch: { x: "ceilDiv(n, 64)" } },
      ],
    },
  ],
};

const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(64)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  let i = gid.x;",
  "  if (i < params.n) {",
  "    store_z(i, load_a(i) + load_b(i));",
  "  }",
  "}",
  "",
].join("\n");

describe("a call whose tensors of one type parameter disagree", async () => {
  const { result, both } = await coreProject("mixed-call-dtypes", {
    "specs/Add3.json": JSON.stringify(add, null, 2),
    "templates/add.wgsl.jinja": template,
  });
  const t = (dtype: string) => ({ shape: [8], dtype });
  const message = (call: unknown): string => {
    const r = both("Add3", call) as { error?: { kind: string; message: string } };
    expect(r.error?.kind).toBe("invalid_call");
    return r.error!.message;
  };

  it("builds without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });

  it("names the first tensor when its dtype is not allowed, not the allowed one after it", () => {
    expect(message({ inputs: { aT: t("float64"), bT: t("float32") } })).toBe(
      "Add3: input `aT` has dtype float64, which T does not allow; allowed: float16, float32",
    );
  });

  it("names a later tensor when its dtype is not allowed", () => {
    expect(message({ inputs: { aT: t("float32"), bT: t("float64") } })).toBe(
      "Add3: input `bT` has dtype float64, which T does not allow; allowed: float16, float32",
    );
    expect(message({ inputs: { aT: t("float16"), bT: t("float16"), cT: t("int32") } })).toBe(
      "Add3: input `cT` has dtype int32, which T does not allow; allowed: float16, float32",
    );
    expect(message({ inputs: { aT: t("float16"), bT: t("float16") }, outputs: { zT: t("bf99") } })).toBe(
      "Add3: output `zT` has dtype bf99, which T does not allow; allowed: float16, float32",
    );
  });

  it("names a lone tensor whose dtype is not allowed", () => {
    expect(message({ inputs: { aT: t("bf99"), bT: t("bf99") } })).toBe(
      "Add3: input `aT` has dtype bf99, which T does not allow; allowed: float16, float32",
    );
  });

  it("names both tensors, and the one the others follow, when each dtype is allowed alone", () => {
    expect(message({ inputs: { aT: t("float32"), bT: t("float16") } })).toBe(
      "Add3: input `bT` has dtype float16, but `aT` makes T = float32: every tensor of T must have the dtype of the first one the call gives",
    );
    expect(message({ inputs: { aT: t("float16"), bT: t("float16"), cT: t("float32") } })).toBe(
      "Add3: input `cT` has dtype float32, but `aT` makes T = float16: every tensor of T must have the dtype of the first one the call gives",
    );
  });

  it("still plans a call whose tensors agree", () => {
    expect(both("Add3", { inputs: { aT: t("float16"), bT: t("float16") } })).toMatchObject({ plan: { outputShapes: { zT: [8] } } });
  });
});
