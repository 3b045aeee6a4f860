/// <reference types="@webgpu/types" />
/** loadBundle: picks the first profile of a bundle index the adapter can run, opens it, and reads shaders through the index. */
import { describe, expect, it } from "vitest";
import { loadBundle, type BundleIndex } from "../../src/runtime/bundle.js";
import { UnsupportedProfileError } from "../../src/runtime/device.js";
import type { Manifest } from "../../src/model/plan.js";

function manifest(profile: string, requiredLimits: Record<string, number>, requiredFeatures: string[]): Manifest {
  return {
    generatedBy: "test",
    profile,
    requiredLimits,
    requiredFeatures,
    shaders: {},
    pipelines: [{ shader: `${profile}-shader`, entryPoint: "main", bindings: ["read-only-storage", "storage"] }],
  };
}

interface Opened {
  readonly dispatchers: string[];
  readonly manifests: string[];
}

function index(opened: Opened): BundleIndex<{ readonly PROFILE: string }> {
  const entry = (name: string, requiredLimits: Record<string, number>, requiredFeatures: string[]) => ({
    name,
    requiredLimits,
    requiredFeatures,
    dispatcher: async () => {
      opened.dispatchers.push(name);
      return { PROFILE: name };
    },
    manifest: async () => {
      opened.manifests.push(name);
      return manifest(name, requiredLimits, requiredFeatures);
    },
  });
  return {
    generatedBy: "test",
    profiles: [
      entry("big", { maxComputeWorkgroupStorageSize: 32768 }, ["shader-f16"]),
      entry("small", { maxComputeWorkgroupStorageSize: 16384 }, []),
    ],
    shaders: {
      "big-shader": () => new URL("https://example.invalid/out/shaders/big-shader.wgsl"),
      "small-shader": () => new URL("https://example.invalid/out/shaders/small-shader.wgsl"),
    },
  };
}

/** A fake adapter and device that record what they are asked for. */
function fakeAdapter(storage: number, features: string[]) {
  const requested: GPUDeviceDescriptor[] = [];
  const modules: string[] = [];
  const device = {
    limits: { maxComputeWorkgroupsPerDimension: 65535 },
    pushErrorScope: () => {},
    popErrorScope: async () => null,
    createShaderModule: (d: { code: string }) => {
      modules.push(d.code);
      return { getCompilationInfo: async () => ({ messages: [] }) };
    },
    createBindGroupLayout: (d: unknown) => d,
    createPipelineLayout: (d: unknown) => d,
    createComputePipelineAsync: async (d: unknown) => d,
  };
  const adapter = {
    limits: { maxComputeWorkgroupStorageSize: storage },
    features: new Set(features),
    requestDevice: async (d: GPUDeviceDescriptor) => {
      requested.push(d);
      return device;
    },
  } as unknown as GPUAdapter;
  return { adapter, requested, modules };
}

describe("loadBundle", () => {
  it("opens the first profile the adapter can run, with a device that has the profile's limits and features", async () => {
    const opened: Opened = { dispatchers: [], manifests: [] };
    const { adapter, requested } = fakeAdapter(32768, ["shader-f16"]);
    const bundle = await loadBundle(adapter, index(opened));
    expect(bundle.profile).toBe("big");
    expect(bundle.dispatcher.PROFILE).toBe("big");
    expect(bundle.manifest.profile).toBe("big");
    expect(opened).toEqual({ dispatchers: ["big"], manifests: ["big"] });
    expect(requested).toHaveLength(1);
    expect(requested[0]!.requiredLimits).toEqual({ maxComputeWorkgroupStorageSize: 32768 });
    expect(requested[0]!.requiredFeatures).toEqual(["shader-f16"]);
  });

  it("falls back to a less demanding profile and imports only that one", async () => {
    const opened: Opened = { dispatchers: [], manifests: [] };
    const { adapter, requested } = fakeAdapter(32768, []);
    const bundle = await loadBundle(adapter, index(opened), { label: "mine" });
    expect(bundle.profile).toBe("small");
    expect(opened).toEqual({ dispatchers: ["small"], manifests: ["small"] });
    expect(requested[0]!.label).toBe("mine");
  });

  it("throws UnsupportedProfileError naming what the least demanding profile lacks", async () => {
    const { adapter, requested } = fakeAdapter(8192, []);
    const err = await loadBundle(adapter, index({ dispatchers: [], manifests: [] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedProfileError);
    const e = err as UnsupportedProfileError;
    expect(e.profile).toBe("small");
    expect(e.consideredProfiles).toEqual(["big", "small"]);
    expect(e.mismatch.limits).toEqual([{ name: "maxComputeWorkgroupStorageSize", asked: 16384, has: 8192 }]);
    expect(e.message).toContain('none of the profiles "big", "small" fits this adapter');
    expect(requested).toEqual([]);
  });

  it("reads shaders through the index's URLs with readText, and warms up the manifest's pipelines", async () => {
    const { adapter, modules } = fakeAdapter(32768, ["shader-f16"]);
    const read: string[] = [];
    const bundle = await loadBundle(adapter, index({ dispatchers: [], manifests: [] }), {
      warmUp: true,
      readText: async (url) => {
        read.push(url.href);
        return `// source of ${url.pathname}`;
      },
    });
    expect(read).toEqual(["https://example.invalid/out/shaders/big-shader.wgsl"]);
    expect(modules).toEqual(["// source of /out/shaders/big-shader.wgsl"]);
    expect(bundle.cache.size).toBe(1);
    await expect(bundle.cache.get({ shader: "nope", entryPoint: "main", bindings: [] })).rejects.toThrow(
      'the bundle index has no shader "nope"',
    );
  });
});
