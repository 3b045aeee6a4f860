/**
 * PagedAttention's row design checks its workgroup memory against the profile's
 * maxComputeWorkgroupStorageSize (specs/PagedAttention.json `pagedRowStorageBytes` in `pagedRowOk`):
 * a W < 32 build keeps 32 / W streams' accumulators in workgroup memory, so on a profile with
 * subgroups but 16 KB of workgroup storage the 8-lane build with 8 query heads per KV head must
 * choose another design instead of failing at pipeline creation. The derive value is checked
 * against the workgroup memory of the WGSL the build renders (src/emit/wgsl-limits.ts
 * workgroupFacts: each variable rounded up to 16 bytes, as WebGPU counts them), for every row
 * width and head grouping.
 */
import { describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { loadConfig, type LoadedConfig } from "../../src/plan/config.js";
import { workgroupFacts } from "../../src/emit/wgsl-limits.js";
import { repoRoot } from "../support/project-build.js";

const loaded = loadConfig(repoRoot);
const desktop = loaded.allProfiles.find((p) => p.name === "desktop-32k")!;

/** desktop-32k (subgroups, f16) with `storage` bytes of workgroup memory, as profile `name`. */
function withStorage(name: string, storage: number): LoadedConfig {
  const profile = { ...desktop, name, limits: { ...desktop.limits, maxComputeWorkgroupStorageSize: storage } };
  return { ...loaded, allProfiles: [...loaded.allProfiles, profile], profiles: [profile] };
}

async function build(profile: string, storage: number, qPerKv: number, lanes: number): Promise<CompileResult> {
  const base = withStorage(profile, storage);
  const instance = {
    name: `g${qPerKv}`,
    values: {
      "attrs.num_heads": 8 * qPerKv,
      "attrs.kv_num_heads": 8,
      "dim(shapes.keyCacheT, 3)": 128,
      "dim(shapes.keyCacheT, 1)": 16,
    },
  };
  const config = {
    ...base.config,
    instances: { PagedAttention: [instance] },
    tunables: { [profile]: { PagedAttention: { ROW_SUBGROUP_SIZE: lanes } } },
  };
  const res = await compile({ ...base, config }, { profiles: [profile] });
  const errors = res.diagnostics.filter((d) => d.severity === "error");
  expect(errors.map((d) => d.message)).toEqual([]);
  return res;
}

interface Explained {
  kernels: Record<string, { explain?: Record<string, Record<string, unknown>> }>;
}

/**
 * The attention shaders of a build: id → pagedDesign, the WGSL, and the row design's
 * pagedRowStorageBytes, which its template writes in a comment (undefined for other designs).
 */
function attentionShaders(res: CompileResult, profile: string): { design: unknown; bytes?: number; wgsl: string }[] {
  const manifest = JSON.parse(res.files.get(`${profile}/kernels.json`)!) as Explained;
  const explain = manifest.kernels.PagedAttention?.explain ?? {};
  return Object.entries(explain)
    .filter(([, e]) => e.pagedDesign !== undefined)
    .map(([id, e]) => {
      const wgsl = res.files.get(`shaders/${id}.wgsl`)!;
      const bytes = /workgroup memory, with the fallback's: (\d+) bytes/.exec(wgsl)?.[1];
      return { design: e.pagedDesign, wgsl, ...(bytes === undefined ? {} : { bytes: Number(bytes) }) };
    });
}

/** WebGPU's count of a shader's workgroup memory (each variable rounded up to 16 bytes), as the build checks it. */
function workgroupBytes(wgsl: string): number {
  const facts = workgroupFacts(wgsl);
  expect(facts.unresolved).toEqual([]);
  return facts.workgroupStorageBytes!;
}

describe("PagedAttention's row design and the profile's workgroup storage", () => {
  it.each([
    [1, 32],
    [4, 32],
    [7, 32],
    [8, 32],
    [2, 16],
    [4, 16],
    [8, 16],
    [3, 8],
    [4, 8],
  ])("pagedRowStorageBytes is the rendered shader's workgroup memory (G = %i, W = %i)", async (g, w) => {
    const res = await build("sg-64k", 65536, g, w);
    const rows = attentionShaders(res, "sg-64k").filter((s) => s.design === "row");
    expect(rows.length).toBeGreaterThan(0);
    for (const s of rows) expect(s.bytes).toBe(workgroupBytes(s.wgsl));
  });

  it("a 16 KB profile builds the 16-lane row design for 8 heads per KV head but not the 8-lane one", async () => {
    const w16 = attentionShaders(await build("sg-16k", 16384, 8, 16), "sg-16k");
    expect(w16.length).toBeGreaterThan(0);
    for (const s of w16) {
      expect(s.design).toBe("row");
      expect(workgroupBytes(s.wgsl)).toBeLessThanOrEqual(16384);
    }
    const w8 = attentionShaders(await build("sg-16k", 16384, 8, 8), "sg-16k");
    expect(w8.length).toBeGreaterThan(0);
    for (const s of w8) {
      expect(s.design).not.toBe("row");
      expect(workgroupBytes(s.wgsl)).toBeLessThanOrEqual(16384);
    }
    // The same 8-lane build fits 32 KB: the row design again.
    for (const s of attentionShaders(await build("sg-32k", 32768, 8, 8), "sg-32k")) expect(s.design).toBe("row");
  });
});
