/**
 * On a profile without shader-f16, an f16 binding is declared `array<u32>` (packed pairs), exactly
 * as a u32 binding is; only its helpers differ (`load_x` unpacks and returns f32). A kernel whose
 * type parameter allows both float16 and uint32 (Clip, Max, Where of ONNX) renders the same
 * template for both with the same render context when the template reads neither `dtypes` nor
 * the storage form. The render cache keyed a render by the declarations' text alone, so the two
 * assignments shared whichever shader was rendered first: the float16 calls ran the uint32 shader
 * (raw words compared as integers) or the uint32 calls the packed-f16 one.
 */
import { describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { PipelineCache } from "../../src/runtime/pipeline-cache.js";
import { executePlan } from "../../src/runtime/execute.js";
import { f16ToF32, f32ToF16 } from "../../src/runtime/f16.js";
import { getGpuDevice, poisonBuffer, readBuffer, uploadBuffer, createBuffer, expectNoUncapturedErrors } from "../support/gpu.js";
import { importDispatcher } from "../support/project-build.js";
import { writeProject } from "../support/temp-project.js";

function spec(types: readonly string[]): object {
  return {
    domain: "",
    name: "Clip",
    sinceVersion: 13,
    inputs: {
      inputT: { onnx: "input", dtype: "T", rank: 1 },
      minT: { onnx: "min", dtype: "T", rank: 0 },
    },
    outputs: { outputT: { onnx: "output", dtype: "T", rank: 1, shape: "shapes.inputT" } },
    typeConstraints: { T: types },
    derive: { n: "dim(shapes.inputT, 0)" },
    bindings: {
      x: { arg: "inputT" },
      lo: { arg: "minT" },
      y: { arg: "outputT" },
      params: { struct: [{ name: "n", type: "u32", value: "n" }] },
    },
    variants: [
      {
        id: "lower",
        passes: [
          {
            id: "main",
            name: "Clip.Lower",
            shader: "clip.wgsl.jinja",
            bindings: ["x", "lo", "y", "params"],
            dispatch: { x: "ceilDiv(n, 2)" },
          },
        ],
      },
    ],
  };
}

// Each invocation owns elements 2k and 2k + 1 (one word of packed f16), as docs/f16.md asks.
const template = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size(1)",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  let i = gid.x * 2u;",
  "  for (var j = i; j < min(i + 2u, params.n); j++) {",
  "    store_y(j, max(load_x(j), load_lo(0u)));",
  "  }",
  "}",
  "",
].join("\n");

async function build(types: readonly string[]): Promise<CompileResult> {
  const root = writeProject("packed-f16-key", {
    "kernelc.config.json": JSON.stringify({ profiles: ["core"] }),
    "specs/Clip.json": JSON.stringify(spec(types), null, 2),
    "templates/clip.wgsl.jinja": template,
  });
  const result = await compile(loadConfig(root));
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return result;
}

/** The shader text each dtype of T runs on the core profile (no shader-f16: f16 is packed). */
async function shadersByDtype(types: readonly string[]): Promise<Record<string, string>> {
  const result = await build(types);
  const kernels = JSON.parse(result.files.get("core/kernels.json")!) as {
    kernels: Record<string, { variants: { dtypes: Record<string, string>; passes: { shaders: Record<string, string> }[] }[] }>;
  };
  const out: Record<string, string> = {};
  for (const v of kernels.kernels.Clip!.variants) {
    const id = Object.values(v.passes[0]!.shaders)[0]!;
    out[v.dtypes.T!] = result.files.get(`shaders/${id}.wgsl`)!;
  }
  return out;
}

describe("packed f16 and u32 bindings render different shaders", () => {
  it.each([[["float16", "uint32"]], [["uint32", "float16"]], [["float32", "float16", "int32", "uint32"]]])(
    "T in %j: float16 unpacks, uint32 reads words",
    async (types) => {
      const shaders = await shadersByDtype(types);
      const f16 = shaders.float16!;
      const u32 = shaders.uint32!;
      expect(f16).toContain("fn load_x(i: u32) -> f32 {\n  return unpack2x16float(x[i >> 1u])[i & 1u];\n}");
      expect(f16).toContain("pack2x16float");
      expect(u32).toContain("fn load_x(i: u32) -> u32 {\n  return x[i];\n}");
      expect(u32).not.toContain("unpack2x16float");
      // Both declare their tensors as arrays of u32 words.
      expect(f16).toContain("var<storage, read> x: array<u32>;");
      expect(u32).toContain("var<storage, read> x: array<u32>;");
    },
  );
});

// On lavapipe, with a device without shader-f16 (the core profile's packed form).
const device = await getGpuDevice({ requiredFeatures: [] });

describe.runIf(device)("on the GPU (lavapipe, packed f16)", () => {
  it("float16 and uint32 calls of one kernel each compute max(x, min) of their own values", async () => {
    const result = await build(["float16", "uint32"]);
    const planners = (await importDispatcher(result.files.get("core/dispatcher.ts")!)).planners as Record<string, (c: unknown) => any>;
    const cache = new PipelineCache(device!, (id) => result.files.get(`shaders/${id}.wgsl`)!);
    const n = 7;
    const values = [5, 1, 7, 2, 6, 3, 4];
    for (const dtype of ["float16", "uint32"] as const) {
      const f16 = dtype === "float16";
      const x = f16 ? Uint16Array.from(values, (v) => f32ToF16(v)) : Uint32Array.from(values);
      const lo = f16 ? Uint16Array.from([f32ToF16(3.5), 0]) : Uint32Array.from([4]);
      const bytes = f16 ? 2 * n : 4 * n;
      const out = createBuffer(device!, Math.ceil(bytes / 4) * 4);
      poisonBuffer(device!, out);
      const plan = planners.Clip!({ inputs: { inputT: { shape: [n], dtype }, minT: { shape: [], dtype } } });
      await executePlan(device!, cache, plan, {
        inputT: uploadBuffer(device!, f16 ? Uint16Array.from([...x, 0]) : x),
        minT: uploadBuffer(device!, lo),
        outputT: out,
      });
      const raw = await readBuffer(device!, out);
      const got = f16 ? Array.from(new Uint16Array(raw).slice(0, n), (h) => f16ToF32(h)) : Array.from(new Uint32Array(raw).slice(0, n));
      expect(got, dtype).toEqual(values.map((v) => Math.max(v, f16 ? 3.5 : 4)));
    }
    await expectNoUncapturedErrors(device!);
  });
});
