/**
 * Tint validation through Dawn's null backend, and the static workgroup facts and limit checks,
 * cross-checked against Dawn where Dawn can tell.
 */
import * as fs from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WgslValidator } from "../../src/emit/validate-wgsl.js";
import { checkWorkgroupLimits, workgroupFacts } from "../../src/emit/wgsl-limits.js";

describe("WgslValidator", () => {
  let validator: WgslValidator;
  beforeAll(async () => {
    validator = await WgslValidator.create();
  });
  afterAll(() => validator?.dispose());

  const ok =
    "@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) {\n  x[g.x] = 1.0;\n}\n";

  test("a valid shader has no problems", async () => {
    expect(await validator.validate(ok, [])).toEqual([]);
  });

  test("a syntax error comes with its line and column", async () => {
    const bad = "const A: u32 = 1u;\n\n@compute @workgroup_size(1)\nfn main() {\n  let y = 1 +;\n}\n";
    const problems = await validator.validate(bad, []);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ line: 5, column: 14, severity: "error" });
    expect(problems[0].message).toMatch(/\+/);
  });

  test("f16 needs the shader-f16 feature", async () => {
    const f16 =
      "enable f16;\n@group(0) @binding(0) var<storage, read_write> x: array<f16>;\n@compute @workgroup_size(1)\nfn main() {\n  x[0] = 1.0h;\n}\n";
    const without = await validator.validate(f16, []);
    expect(without.length).toBeGreaterThan(0);
    expect(without[0].line).toBe(1);
    expect(await validator.validate(f16, ["shader-f16"])).toEqual([]);
    expect(await validator.validate(f16, ["shader-f16", "not-a-feature"])).toEqual([]);
  });

  test("concurrent validations on one or two devices keep their own results", async () => {
    const bad = "@compute @workgroup_size(1)\nfn main() {\n  let y: u32 = nope;\n}\n";
    const f16 = "enable f16;\n@compute @workgroup_size(1)\nfn main() {\n  let h = 1.0h;\n}\n";
    const results = await Promise.all([ok, bad, f16, ok, bad, f16].map((code, i) => validator.validate(code, i < 3 ? ["shader-f16"] : [])));
    expect(results.map((r) => r.map((p) => p.line))).toEqual([[], [3], [], [], [3], [1]]);
  });

  test("a module without entry point main fails as a pipeline, at line 0", async () => {
    const problems = await validator.validate("@compute @workgroup_size(1)\nfn other() {}\n", []);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ line: 0, column: 0, severity: "error" });
    expect(problems[0].message).toMatch(/main/);
    expect(problems[0].message).not.toMatch(/While/);
  });

  // The compiled validator (dist/, built by `npm test`'s tsc) runs Tint on worker threads, and
  // help() lets the calling thread take requests no worker has started: each request is validated
  // once, by one thread, with the same answer as in this thread.
  const compiled = new URL("../../dist/emit/validate-wgsl.js", import.meta.url);
  test.skipIf(!fs.existsSync(compiled))("on worker threads, with this thread's help, every request gets this thread's answer", async () => {
    const { WgslValidator: Compiled } = (await import(compiled.href)) as { WgslValidator: typeof WgslValidator };
    const threaded = await Compiled.create();
    try {
      const texts = Array.from({ length: 40 }, (_, i) =>
        i % 5 === 1
          ? `@compute @workgroup_size(${i + 1})\nfn main() {\n  let y: u32 = nope${i};\n}\n`
          : i % 5 === 2
            ? `enable f16;\n@compute @workgroup_size(${i + 1})\nfn main() {\n  let h = ${i}.0h;\n}\n`
            : ok.replace("1.0", `${i}.0`).replace("64", String(i + 1)),
      );
      const features = (i: number): string[] => (i % 3 === 0 ? [] : ["shader-f16"]);
      const facts = texts.map((t, i) => threaded.prefetch(t, features(i), true));
      await threaded.help(1);
      const got = await Promise.all(texts.map((t, i) => threaded.validate(t, features(i))));
      const want = await Promise.all(texts.map((t, i) => validator.validate(t, features(i))));
      expect(got).toEqual(want);
      expect(got.filter((p) => p.length > 0).length).toBeGreaterThanOrEqual(8);
      expect(await Promise.all(facts)).toEqual(texts.map((t) => workgroupFacts(t)));
    } finally {
      threaded.dispose();
    }
  });

  test("a workgroup beyond the null adapter's limits is left to the profile check", async () => {
    const big = "@compute @workgroup_size(1024)\nfn main() {}\n";
    expect(await validator.validate(big, [])).toEqual([]);
    expect(checkWorkgroupLimits(workgroupFacts(big), { maxComputeInvocationsPerWorkgroup: 256 })).toHaveLength(1);
  });

  test("workgroup storage is counted as Dawn counts it: each variable rounded up to 16 bytes", async () => {
    // 4095 f32 = 16380 bytes -> 16384, exactly the null adapter's limit; one more f32 adds 16.
    const fits = "var<workgroup> a: array<f32, 4095>;\n@compute @workgroup_size(1)\nfn main() {\n  a[0] = 1.0;\n}\n";
    const over = "var<workgroup> a: array<f32, 4095>;\nvar<workgroup> b: f32;\n@compute @workgroup_size(1)\nfn main() {\n  a[0] = b;\n}\n";
    expect(workgroupFacts(fits).workgroupStorageBytes).toBe(16384);
    expect(workgroupFacts(over).workgroupStorageBytes).toBe(16400);
    const device = await (await navigatorGpu()).requestDevice();
    try {
      const compile = (code: string) =>
        device.createComputePipelineAsync({ layout: "auto", compute: { module: device.createShaderModule({ code }), entryPoint: "main" } });
      await expect(compile(fits)).resolves.toBeDefined();
      await expect(compile(over)).rejects.toThrow(/storage/i);
    } finally {
      device.destroy();
    }
  });
});

/** Held for the whole file: Dawn tears its instance down when this object is collected. */
let nullGpu: GPU | undefined;

/** An adapter of Dawn's null backend with its default limits (16 KiB of workgroup storage). */
async function navigatorGpu(): Promise<GPUAdapter> {
  const { create, globals } = await import("webgpu");
  Object.assign(globalThis, globals);
  nullGpu ??= create(["backend=null"]);
  const adapter = await nullGpu.requestAdapter();
  if (!adapter) throw new Error("no null adapter");
  return adapter;
}

describe("workgroupFacts", () => {
  test("const-based sizes and counts", () => {
    const wgsl = [
      "const WG: u32 = 64u;",
      "const TILE = WG * 2;",
      "const ROWS: u32 = (TILE + 0x10u) / 3 - 1;", // (128 + 16) / 3 - 1 = 47
      "var<workgroup> a: array<f32, TILE>;", // 512
      "var<workgroup> b: array<u32, ROWS>;", // 188 -> 192
      "@compute @workgroup_size(WG, 2)",
      "fn main(@builtin(local_invocation_id) l: vec3<u32>) { a[0] = 1.0; }",
    ].join("\n");
    expect(workgroupFacts(wgsl)).toEqual({
      workgroupSize: [64, 2, 1],
      workgroupSizeLine: 6,
      workgroupStorageBytes: 704,
      largestWorkgroupVarLine: 4,
      unresolved: [],
    });
  });

  test("vectors of f16, vec3 padding, atomics, matrices", () => {
    const wgsl = [
      "enable f16;",
      "var<workgroup> kv: array<vec4<f16>, 10>;", // 80
      "var<workgroup> v3: array<vec3<f32>, 3>;", // stride 16 -> 48
      "var<workgroup> h3: array<vec3h, 5>;", // size 6, align 8 -> stride 8 -> 40 -> 48
      "var<workgroup> count: atomic<u32>;", // 4 -> 16
      "var<workgroup> m: mat3x3<f32>;", // 3 * 16 = 48
      "@compute @workgroup_size(8, 4, 2) fn main() {}",
    ].join("\n");
    expect(workgroupFacts(wgsl)).toEqual({
      workgroupSize: [8, 4, 2],
      workgroupSizeLine: 7,
      workgroupStorageBytes: 80 + 48 + 48 + 16 + 48,
      largestWorkgroupVarLine: 2,
      unresolved: [],
    });
  });

  test("structs with WGSL's size and alignment rules, @align and @size, aliases", () => {
    const wgsl = [
      "struct S { a: f16, b: vec3<f32>, c: u32 }", // a@0, b@16 (12), c@28 -> 32, align 16
      "struct T {",
      "  @align(16) x: f32,", // x@0
      "  @size(8) y: u32,", // y@4..12 -> 16
      "}",
      "alias Row = array<S, 4>;", // 128
      "var<workgroup> rows: Row;",
      "var<workgroup> t: array<T, 3>;", // 48
      "struct Nested { s: S, h: f16 }", // s@0 (32), h@32 (2) -> 34 -> 48
      "var<workgroup> n: Nested;",
      "@compute @workgroup_size(32) fn main() {}",
    ].join("\n");
    expect(workgroupFacts(wgsl)).toEqual({
      workgroupSize: [32, 1, 1],
      workgroupSizeLine: 11,
      workgroupStorageBytes: 128 + 48 + 48,
      largestWorkgroupVarLine: 7,
      unresolved: [],
    });
  });

  test("comments, other functions and private vars are ignored", () => {
    const wgsl = [
      "// var<workgroup> fake: array<f32, 100000>;",
      "/* outer /* inner */ var<workgroup> fake2: array<f32, 100000>; */",
      "var<private> p: array<f32, 1000>;",
      "fn helper() -> u32 { var<function> q: u32 = 1u; return q; }",
      "@compute @workgroup_size(4) fn main() {}",
      "const LATE: u32 = 1u < 2u;",
    ].join("\n");
    expect(workgroupFacts(wgsl)).toEqual({ workgroupSize: [4, 1, 1], workgroupSizeLine: 5, workgroupStorageBytes: 0, unresolved: [] });
  });

  test("what it cannot resolve is listed, not guessed", () => {
    const override = workgroupFacts("override WG: u32 = 64;\n@compute @workgroup_size(WG) fn main() {}\n");
    expect(override.workgroupSize).toBeUndefined();
    expect(override.unresolved).toEqual([expect.stringMatching(/WG is an override/)]);

    const fnCall = workgroupFacts("var<workgroup> a: array<f32, max(2, 3)>;\n@compute @workgroup_size(1) fn main() {}\n");
    expect(fnCall.workgroupStorageBytes).toBeUndefined();
    expect(fnCall.workgroupSize).toEqual([1, 1, 1]);
    expect(fnCall.unresolved).toEqual([expect.stringMatching(/^var<workgroup> a: /)]);

    expect(workgroupFacts("var<workgroup> a: Unknown;\n@compute @workgroup_size(1) fn main() {}").unresolved).toEqual([
      expect.stringMatching(/unknown type Unknown/),
    ]);
    expect(workgroupFacts("const A = B;\nconst B = A;\n@compute @workgroup_size(A) fn main() {}").unresolved).toEqual([
      expect.stringMatching(/itself/),
    ]);
    expect(workgroupFacts("@compute @workgroup_size(1.5) fn main() {}").unresolved).toEqual([expect.stringMatching(/not an integer/)]);
    expect(workgroupFacts("@compute @workgroup_size(1) fn other() {}").unresolved).toEqual([
      expect.stringMatching(/no `@compute fn main`/),
    ]);
    expect(workgroupFacts("@compute fn main() {}").unresolved).toEqual([expect.stringMatching(/no @workgroup_size/)]);
  });

  test("WGSL cut short (an unclosed bracket, a last `struct`) is read without throwing; Tint reports it", () => {
    for (const cut of ["fn f( {", "fn f(", "struct S", "@compute @workgroup_size(4) fn main() {", "var<workgroup"]) {
      expect(() => workgroupFacts(cut), cut).not.toThrow();
    }
    expect(workgroupFacts("const N = 4;\n@compute @workgroup_size(N) fn main() {}\nfn bad( {").workgroupSize).toEqual([4, 1, 1]);
  });

  test("the seed template's shape: workgroup size from a const", () => {
    const facts = workgroupFacts(
      "const WG: u32 = 64u;\n@compute @workgroup_size(WG, 1, 1)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n}\n",
    );
    expect(facts).toEqual({ workgroupSize: [64, 1, 1], workgroupSizeLine: 2, workgroupStorageBytes: 0, unresolved: [] });
  });
});

describe("checkWorkgroupLimits", () => {
  const limits = {
    maxComputeWorkgroupSizeX: 256,
    maxComputeWorkgroupSizeY: 256,
    maxComputeWorkgroupSizeZ: 64,
    maxComputeInvocationsPerWorkgroup: 256,
    maxComputeWorkgroupStorageSize: 16384,
  };

  test("within limits", () => {
    expect(checkWorkgroupLimits({ workgroupSize: [256, 1, 1], workgroupStorageBytes: 16384, unresolved: [] }, limits)).toEqual([]);
  });

  test("each limit reports its own problem", () => {
    const problems = checkWorkgroupLimits({ workgroupSize: [512, 1, 128], workgroupStorageBytes: 32768, unresolved: [] }, limits);
    expect(problems.map((p) => p.message)).toEqual([
      "@workgroup_size x is 512, more than maxComputeWorkgroupSizeX = 256",
      "@workgroup_size z is 128, more than maxComputeWorkgroupSizeZ = 64",
      "@workgroup_size(512, 1, 128) is 65536 invocations, more than maxComputeInvocationsPerWorkgroup = 256",
      "var<workgroup> declarations take 32768 bytes, more than maxComputeWorkgroupStorageSize = 16384",
    ]);
    expect(problems.map((p) => p.limit)).toEqual([
      "maxComputeWorkgroupSizeX",
      "maxComputeWorkgroupSizeZ",
      "maxComputeInvocationsPerWorkgroup",
      "maxComputeWorkgroupStorageSize",
    ]);
  });

  test("the product alone can exceed", () => {
    expect(checkWorkgroupLimits({ workgroupSize: [16, 32, 1], unresolved: [] }, limits)).toEqual([
      {
        message: "@workgroup_size(16, 32, 1) is 512 invocations, more than maxComputeInvocationsPerWorkgroup = 256",
        limit: "maxComputeInvocationsPerWorkgroup",
      },
    ]);
  });

  test("problems carry the WGSL line of @workgroup_size, or of the largest var<workgroup>", () => {
    const facts = workgroupFacts(
      "var<workgroup> small: array<f32, 4>;\nvar<workgroup> big: array<f32, 8192>;\n\n@compute\n@workgroup_size(512)\nfn main() {}\n",
    );
    expect(checkWorkgroupLimits(facts, limits).map((p) => [p.limit, p.line])).toEqual([
      ["maxComputeWorkgroupSizeX", 5],
      ["maxComputeInvocationsPerWorkgroup", 5],
      ["maxComputeWorkgroupStorageSize", 2],
    ]);
  });

  test("unknown facts and absent limits are not checked", () => {
    expect(checkWorkgroupLimits({ unresolved: ["x"] }, limits)).toEqual([]);
    expect(checkWorkgroupLimits({ workgroupSize: [4096, 1, 1], workgroupStorageBytes: 1 << 20, unresolved: [] }, {})).toEqual([]);
  });
});
