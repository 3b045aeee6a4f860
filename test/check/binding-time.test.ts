import { describe, expect, it } from "vitest";
import * as path from "node:path";
import { classifyDerives } from "../../src/check/binding-time.js";
import { deriveEnv } from "../../src/check/check-spec.js";
import { lintPaths, makeCheckContext } from "../../src/api/lint.js";
import { checkSpecObject } from "./probe-spec.js";

const root = path.resolve(__dirname, "../..");
const seed = lintPaths([path.join(root, "specs/PagedAttention.json")], makeCheckContext(path.join(root, "templates")));
const kernel = seed.kernels[0];

describe("binding times of the seed's derive entries", () => {
  const times = classifyDerives(kernel.derive);

  it.each([
    ["tokenCount", "run", ["dim(shapes.queryT, 0)"]],
    ["headSize", "run", ["dim(shapes.keyCacheT, 3)"]],
    ["batchSize", "run", ["dim(shapes.cumulativeSequenceLengthT, 0)"]],
    ["qPerKv", "run", ["attrs.num_heads", "attrs.kv_num_heads"]],
    ["headVec", "run", ["dim(shapes.keyCacheT, 3)"]],
    ["packedQkv", "run", ["present.keyT"]],
    ["hasSlotMapping", "run", ["present.slotMappingT"]],
    ["numHeads", "run", ["attrs.num_heads"]],
    // device limits and tunables are build-time, but the head size and qPerKv make it run-time
    [
      "pagedAttnWgBudget",
      "run",
      ["device.limits.maxComputeWorkgroupStorageSize", "dim(shapes.keyCacheT, 3)", "attrs.num_heads", "attrs.kv_num_heads"],
    ],
    [
      "pagedAttnWg",
      "run",
      [
        "tunables.WORKGROUP_SIZE",
        "device.limits.maxComputeWorkgroupStorageSize",
        "dim(shapes.keyCacheT, 3)",
        "attrs.num_heads",
        "attrs.kv_num_heads",
      ],
    ],
    ["pagedSplitWg", "run", ["dim(shapes.keyCacheT, 3)"]],
    ["cacheVec", "run", ["dim(shapes.keyCacheT, 3)", "dtypes.T"]],
    ["aScalar", "build", ["dtypes.T"]],
    ["outVec", "build", ["dtypes.T"]],
  ])("%s is %s", (name, time, leaves) => {
    const t = times.get(name)!;
    expect(t.time).toBe(time);
    expect([...t.leaves.keys()].sort()).toEqual([...leaves].sort());
  });

  it("cacheShapeOk depends on whole shapes (sameShape) and on single dimensions", () => {
    const keys = [...times.get("cacheShapeOk")!.leaves.keys()];
    expect(keys).toContain("shapes.keyCacheT");
    expect(keys).toContain("dim(shapes.keyCacheT, 2)");
  });

  it("a pass's overrides change the binding time of what reads them", () => {
    const variant = kernel.variants.find((v) => v.id === "separate_derived_splitk")!;
    const pass = variant.passes.find((p) => p.id === "split_attention")!;
    const env = classifyDerives(deriveEnv(kernel, variant, pass));
    expect(env.get("splitK")!.time).toBe("const");
    expect(env.get("attnWorkgroup")!.time).toBe("run");
    expect([...env.get("attnWorkgroup")!.leaves.keys()]).toEqual(["dim(shapes.keyCacheT, 3)"]);
  });
});

describe("binding times from leaf kinds", () => {
  const spec = {
    domain: "test",
    name: "Times",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "T" } },
    outputs: {},
    attributes: { n: {} },
    typeConstraints: { T: ["float32"] },
    tunables: { WG: { default: 64 } },
    derive: {
      lit: "3 * 4",
      litList: "[1, 2]",
      tun: "tunables.WG * 2",
      lim: "device.limits.maxBufferSize",
      feat: 'has(device.features, "shader-f16")',
      dt: "dtypes.T",
      viaConst: "lit + 1",
      viaBuild: "tun + lim",
      shape: "shapes.x",
      rank: "ranks.x",
      pres: "present.x",
      tdt: "tensorDtypes.x",
      attr: "attrs.n",
      hasAttr: 'has(attrs, "n")',
      mixed: "tun + ranks.x",
      guarded: "1 if pres else 2",
    },
    variants: [{ id: "v", passes: [{ id: "p", name: "P", shader: "t.wgsl.jinja", bindings: [], dispatch: { x: "1" } }] }],
  };
  const times = classifyDerives(checkSpecObject(spec).kernel!.derive);

  it.each([
    ["lit", "const"],
    ["litList", "const"],
    ["viaConst", "const"],
    ["tun", "build"],
    ["lim", "build"],
    ["feat", "build"],
    ["dt", "build"],
    ["viaBuild", "build"],
    ["shape", "run"],
    ["rank", "run"],
    ["pres", "run"],
    ["tdt", "run"],
    ["attr", "run"],
    ["hasAttr", "run"],
    ["mixed", "run"],
    ["guarded", "run"],
  ])("%s is %s", (name, time) => {
    expect(times.get(name)!.time).toBe(time);
  });
});
