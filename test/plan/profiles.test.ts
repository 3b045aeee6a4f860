import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  COMPAT_DEFAULT_LIMITS,
  DEFAULT_PROFILES,
  FEATURE_NAMES,
  LIMIT_NAMES,
  type Profile,
  WEBGPU_DEFAULT_LIMITS,
  checkProfile,
  formatBytes,
  formatProfilesTable,
  mergeProfiles,
  profileSchema,
  profileShadows,
  requiredLimitsFor,
  resolveProfile,
} from "../../src/plan/profiles.js";
import { updatingGoldens } from "../support/golden.js";

const GiB = 1073741824;
const MiB = 1048576;

/** The nine rows of docs/device-profiles.md: name, workgroup storage, invocations, X, Y, Z, storage binding, buffer, features. */
const DOC_TABLE: readonly [string, number, number, number, number, number, number, number, string[]][] = [
  ["desktop-64k", 65536, 1024, 1024, 1024, 64, GiB, GiB, ["shader-f16", "subgroups"]],
  ["desktop-32k", 32768, 1024, 1024, 1024, 64, GiB, GiB, ["shader-f16", "subgroups"]],
  ["desktop-48k", 49152, 1024, 1024, 1024, 64, GiB, GiB, ["subgroups"]],
  ["mobile-1024-f16", 32768, 1024, 1024, 1024, 64, 128 * MiB, 256 * MiB, ["shader-f16"]],
  ["mobile-1024", 32768, 1024, 1024, 1024, 64, 128 * MiB, 256 * MiB, []],
  ["mobile-256-f16", 32768, 256, 256, 256, 64, 128 * MiB, 256 * MiB, ["shader-f16"]],
  ["mobile-256", 32768, 256, 256, 256, 64, 128 * MiB, 256 * MiB, []],
  ["core", 16384, 256, 256, 256, 64, 128 * MiB, 256 * MiB, []],
  ["compat", 16384, 128, 128, 128, 64, 128 * MiB, 256 * MiB, []],
];

describe("WebGPU limits table", () => {
  it("has every GPUSupportedLimits member with the spec default", () => {
    expect(LIMIT_NAMES).toHaveLength(35);
    expect(WEBGPU_DEFAULT_LIMITS).toMatchObject({
      maxTextureDimension1D: 8192,
      maxTextureDimension2D: 8192,
      maxTextureDimension3D: 2048,
      maxTextureArrayLayers: 256,
      maxBindGroups: 4,
      maxBindGroupsPlusVertexBuffers: 24,
      maxBindingsPerBindGroup: 1000,
      maxDynamicUniformBuffersPerPipelineLayout: 8,
      maxDynamicStorageBuffersPerPipelineLayout: 4,
      maxSampledTexturesPerShaderStage: 16,
      maxSamplersPerShaderStage: 16,
      maxStorageBuffersPerShaderStage: 8,
      maxStorageTexturesPerShaderStage: 4,
      maxUniformBuffersPerShaderStage: 12,
      maxUniformBufferBindingSize: 65536,
      maxStorageBufferBindingSize: 134217728,
      minUniformBufferOffsetAlignment: 256,
      minStorageBufferOffsetAlignment: 256,
      maxVertexBuffers: 8,
      maxBufferSize: 268435456,
      maxVertexAttributes: 16,
      maxVertexBufferArrayStride: 2048,
      maxInterStageShaderVariables: 16,
      maxColorAttachments: 8,
      maxColorAttachmentBytesPerSample: 32,
      maxComputeWorkgroupStorageSize: 16384,
      maxComputeInvocationsPerWorkgroup: 256,
      maxComputeWorkgroupSizeX: 256,
      maxComputeWorkgroupSizeY: 256,
      maxComputeWorkgroupSizeZ: 64,
      maxComputeWorkgroupsPerDimension: 65535,
    });
  });

  it("has the compatibility-mode defaults where they differ", () => {
    const differing = LIMIT_NAMES.filter((n) => COMPAT_DEFAULT_LIMITS[n] !== WEBGPU_DEFAULT_LIMITS[n]);
    expect(Object.fromEntries(differing.map((n) => [n, COMPAT_DEFAULT_LIMITS[n]]))).toEqual({
      maxTextureDimension1D: 4096,
      maxTextureDimension2D: 4096,
      maxTextureDimension3D: 1024,
      maxStorageBuffersInVertexStage: 0,
      maxStorageBuffersInFragmentStage: 4,
      maxStorageTexturesInVertexStage: 0,
      maxUniformBufferBindingSize: 16384,
      maxInterStageShaderVariables: 15,
      maxColorAttachments: 4,
      maxComputeInvocationsPerWorkgroup: 128,
      maxComputeWorkgroupSizeX: 128,
      maxComputeWorkgroupSizeY: 128,
    });
  });
});

describe("DEFAULT_PROFILES", () => {
  it("are the nine profiles of the doc, in order, with the doc's key limits", () => {
    expect(DEFAULT_PROFILES.map((p) => p.name)).toEqual(DOC_TABLE.map((r) => r[0]));
    for (const [i, [name, storage, inv, x, y, z, binding, buffer, features]] of DOC_TABLE.entries()) {
      const p = DEFAULT_PROFILES[i];
      const l = resolveProfile(p);
      expect({ name: p.name, storage: l.maxComputeWorkgroupStorageSize, inv: l.maxComputeInvocationsPerWorkgroup }).toEqual({
        name,
        storage,
        inv,
      });
      expect([l.maxComputeWorkgroupSizeX, l.maxComputeWorkgroupSizeY, l.maxComputeWorkgroupSizeZ]).toEqual([x, y, z]);
      expect([l.maxStorageBufferBindingSize, l.maxBufferSize]).toEqual([binding, buffer]);
      expect([...p.features]).toEqual(features);
      expect(l.maxStorageBuffersPerShaderStage).toBe(8);
      expect(l.maxBindGroups).toBe(4);
      expect(l.maxComputeWorkgroupsPerDimension).toBe(65535);
      expect(p.typicalDevices.length).toBeGreaterThan(0);
    }
  });

  it("leave unnamed limits at the spec defaults", () => {
    const l = resolveProfile(DEFAULT_PROFILES[0]);
    expect(l.maxUniformBufferBindingSize).toBe(65536);
    expect(l.maxTextureDimension2D).toBe(8192);
    expect(l.minStorageBufferOffsetAlignment).toBe(256);
    expect(resolveProfile(DEFAULT_PROFILES[7])).toEqual(WEBGPU_DEFAULT_LIMITS);
  });

  it("compat takes the compatibility-mode defaults", () => {
    const compat = DEFAULT_PROFILES[8];
    expect(compat.compatibilityMode).toBe(true);
    const l = resolveProfile(compat);
    expect(l).toEqual(COMPAT_DEFAULT_LIMITS);
    expect(l.maxUniformBufferBindingSize).toBe(16384);
  });

  it("pass the profile checks and the schema, and none shadows a later one", () => {
    for (const p of DEFAULT_PROFILES) {
      expect(checkProfile(p)).toEqual([]);
      expect(profileSchema.safeParse(p).success).toBe(true);
    }
    for (let j = 1; j < DEFAULT_PROFILES.length; j++) {
      for (let i = 0; i < j; i++) expect(profileShadows(DEFAULT_PROFILES[i], DEFAULT_PROFILES[j])).toBe(false);
    }
  });

  it("request only limits above the core defaults", () => {
    expect(requiredLimitsFor(DEFAULT_PROFILES[0])).toEqual({
      maxComputeWorkgroupStorageSize: 65536,
      maxComputeInvocationsPerWorkgroup: 1024,
      maxComputeWorkgroupSizeX: 1024,
      maxComputeWorkgroupSizeY: 1024,
      maxStorageBufferBindingSize: GiB,
      maxBufferSize: GiB,
    });
    expect(requiredLimitsFor(DEFAULT_PROFILES[7])).toEqual({});
    expect(requiredLimitsFor(DEFAULT_PROFILES[8])).toEqual({});
  });
});

describe("profileSchema", () => {
  it("accepts a minimal profile", () => {
    expect(profileSchema.safeParse({ name: "x" }).success).toBe(true);
  });

  it.each([
    ["unknown limit", { name: "x", limits: { maxComputeWorkgroupStorageSiz: 1 } }, ["limits"]],
    ["unknown feature", { name: "x", features: ["shader-f32"] }, ["features", 0]],
    ["duplicate feature", { name: "x", features: ["subgroups", "subgroups"] }, ["features", 1]],
    ["negative limit", { name: "x", limits: { maxBufferSize: -1 } }, ["limits", "maxBufferSize"]],
    ["fractional limit", { name: "x", limits: { maxBufferSize: 1.5 } }, ["limits", "maxBufferSize"]],
    [
      "alignment not a power of two",
      { name: "x", limits: { minStorageBufferOffsetAlignment: 48 } },
      ["limits", "minStorageBufferOffsetAlignment"],
    ],
    ["bad name", { name: "Desktop 64k" }, ["name"]],
    ["unknown field", { name: "x", feature: [] }, []],
  ])("rejects %s", (_what, input, path) => {
    const r = profileSchema.safeParse(input);
    expect(r.success).toBe(false);
    expect(r.error!.issues[0].path).toEqual(path);
  });

  it("knows shader-f16, subgroups and timestamp-query", () => {
    for (const f of ["shader-f16", "subgroups", "timestamp-query"]) expect(FEATURE_NAMES).toContain(f);
  });
});

describe("checkProfile", () => {
  const base: Profile = { name: "t", description: "", typicalDevices: "", compatibilityMode: false, limits: {}, features: [] };

  it("flags a limit worse than its baseline", () => {
    const problems = checkProfile({ ...base, limits: { maxComputeInvocationsPerWorkgroup: 128 } });
    expect(problems.map((p) => p.path)).toEqual([["limits", "maxComputeInvocationsPerWorkgroup"]]);
    expect(checkProfile({ ...base, compatibilityMode: true, limits: { maxComputeInvocationsPerWorkgroup: 128 } })).toEqual([]);
    expect(checkProfile({ ...base, limits: { minUniformBufferOffsetAlignment: 512 } })).toHaveLength(1);
  });

  it("flags a binding size above the buffer size", () => {
    const problems = checkProfile({ ...base, limits: { maxStorageBufferBindingSize: GiB } });
    expect(problems.map((p) => p.path)).toEqual([["limits", "maxStorageBufferBindingSize"]]);
    expect(problems[0].message).toContain("exceeds maxBufferSize");
  });

  it("flags compatibility mode with core-features-and-limits", () => {
    expect(checkProfile({ ...base, compatibilityMode: true, features: ["core-features-and-limits"] })).toHaveLength(1);
  });
});

describe("mergeProfiles", () => {
  it("merges an override's limits onto the same-named default, in place", () => {
    const merged = mergeProfiles(DEFAULT_PROFILES, [
      { name: "desktop-48k", limits: { maxStorageBufferBindingSize: 2147483644, maxBufferSize: 4 * GiB } },
    ]);
    expect(merged.map((p) => p.name)).toEqual(DEFAULT_PROFILES.map((p) => p.name));
    const p = merged[2];
    const l = resolveProfile(p);
    expect(l.maxStorageBufferBindingSize).toBe(2147483644);
    expect(l.maxBufferSize).toBe(4 * GiB);
    expect(l.maxComputeWorkgroupStorageSize).toBe(49152);
    expect(l.maxComputeInvocationsPerWorkgroup).toBe(1024);
    expect(p.features).toEqual(["subgroups"]);
    expect(p.typicalDevices).toBe(DEFAULT_PROFILES[2].typicalDevices);
  });

  it("replaces features and other given fields, and leaves the defaults untouched", () => {
    const merged = mergeProfiles(DEFAULT_PROFILES, [
      { name: "desktop-48k", features: ["shader-f16", "subgroups"], description: "f16 on NVIDIA" },
    ]);
    expect(merged[2].features).toEqual(["shader-f16", "subgroups"]);
    expect(merged[2].description).toBe("f16 on NVIDIA");
    expect(DEFAULT_PROFILES[2].features).toEqual(["subgroups"]);
  });

  it("appends new names after the defaults with defaults filled in", () => {
    const merged = mergeProfiles(DEFAULT_PROFILES, [
      { name: "tiny", compatibilityMode: true },
      { name: "big", limits: { maxComputeWorkgroupStorageSize: 65536 }, features: ["subgroups"] },
    ]);
    expect(merged.map((p) => p.name).slice(9)).toEqual(["tiny", "big"]);
    expect(resolveProfile(merged[9])).toEqual(COMPAT_DEFAULT_LIMITS);
    expect(merged[10]).toEqual({
      name: "big",
      description: "",
      typicalDevices: "",
      compatibilityMode: false,
      limits: { maxComputeWorkgroupStorageSize: 65536 },
      features: ["subgroups"],
    });
  });
});

describe("profileShadows", () => {
  it("is true when every adapter fitting the later profile fits the earlier one", () => {
    const [, , , , , , mobile256, core, compat] = DEFAULT_PROFILES;
    expect(profileShadows(core, mobile256)).toBe(true);
    expect(profileShadows(mobile256, core)).toBe(false);
    expect(profileShadows(compat, core)).toBe(true);
    expect(profileShadows(DEFAULT_PROFILES[1], DEFAULT_PROFILES[0])).toBe(true);
  });
});

describe("formatProfilesTable", () => {
  it("formats byte sizes", () => {
    expect([GiB, 128 * MiB, 16384, 2147483644].map(formatBytes)).toEqual(["1 GiB", "128 MiB", "16 KiB", "2147483644 B"]);
  });

  it("matches the golden table of the nine defaults", () => {
    const golden = fileURLToPath(new URL("./golden/profiles-table.txt", import.meta.url));
    const actual = formatProfilesTable(DEFAULT_PROFILES);
    if (updatingGoldens()) writeFileSync(golden, actual);
    expect(actual).toBe(readFileSync(golden, "utf8"));
  });
});
