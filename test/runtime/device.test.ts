/// <reference types="@webgpu/types" />
import { describe, expect, it } from "vitest";
import {
  UnsupportedProfileError,
  adapterFits,
  chooseProfile,
  compareWithAdapter,
  isMinimumLimit,
  requestBundleDevice,
  type AdapterCapabilities,
} from "../../src/runtime/device.js";
import type { Manifest } from "../../src/model/plan.js";

function manifest(profile: string, requiredLimits: Record<string, number>, requiredFeatures: string[] = []): Manifest {
  return { generatedBy: "test", profile, requiredLimits, requiredFeatures, shaders: {}, pipelines: [] };
}

/** A fake adapter whose limits are getters on a prototype, as in real GPUSupportedLimits objects. */
function fakeAdapter(limits: Record<string, number>, features: string[]): AdapterCapabilities {
  class Limits {}
  for (const [name, value] of Object.entries(limits)) {
    Object.defineProperty(Limits.prototype, name, { get: () => value, enumerable: true });
  }
  return { limits: new Limits(), features: new Set(features) };
}

const BIG = manifest(
  "big",
  {
    maxComputeWorkgroupStorageSize: 49152,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxStorageBufferBindingSize: 2147483644,
    minStorageBufferOffsetAlignment: 256,
  },
  ["shader-f16", "subgroups"],
);
const MID = manifest(
  "mid",
  {
    maxComputeWorkgroupStorageSize: 32768,
    maxComputeInvocationsPerWorkgroup: 256,
    maxStorageBufferBindingSize: 134217728,
    minStorageBufferOffsetAlignment: 256,
  },
  ["shader-f16"],
);
const BASE = manifest("base", {
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  minStorageBufferOffsetAlignment: 256,
});

const H200 = fakeAdapter(
  {
    maxComputeWorkgroupStorageSize: 49152,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxStorageBufferBindingSize: 2147483644,
    minStorageBufferOffsetAlignment: 16,
  },
  ["shader-f16", "subgroups", "timestamp-query"],
);
const LAVAPIPE = fakeAdapter(
  {
    maxComputeWorkgroupStorageSize: 32768,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxStorageBufferBindingSize: 134217728,
    minStorageBufferOffsetAlignment: 16,
  },
  ["shader-f16", "subgroups"],
);
const NO_F16 = fakeAdapter(
  {
    maxComputeWorkgroupStorageSize: 49152,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxStorageBufferBindingSize: 2147483644,
    minStorageBufferOffsetAlignment: 16,
  },
  ["subgroups"],
);
const COARSE_ALIGNMENT = fakeAdapter(
  {
    maxComputeWorkgroupStorageSize: 65536,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxStorageBufferBindingSize: 2147483644,
    minStorageBufferOffsetAlignment: 512,
  },
  ["shader-f16", "subgroups"],
);

describe("isMinimumLimit", () => {
  it.each([
    ["minStorageBufferOffsetAlignment", true],
    ["minUniformBufferOffsetAlignment", true],
    ["maxStorageBufferBindingSize", false],
    ["maxComputeWorkgroupSizeX", false],
  ])("%s -> %s", (name, expected) => {
    expect(isMinimumLimit(name)).toBe(expected);
  });
});

describe("compareWithAdapter", () => {
  it("finds nothing missing when every limit and feature is there", () => {
    expect(compareWithAdapter(H200, BIG)).toEqual({ limits: [], features: [] });
  });

  it("names each short max limit with asked and has, and each missing feature", () => {
    expect(compareWithAdapter(LAVAPIPE, BIG)).toEqual({
      limits: [
        { name: "maxComputeWorkgroupStorageSize", asked: 49152, has: 32768 },
        { name: "maxStorageBufferBindingSize", asked: 2147483644, has: 134217728 },
      ],
      features: [],
    });
    expect(compareWithAdapter(NO_F16, MID).features).toEqual(["shader-f16"]);
  });

  it("reverses the comparison for min* alignment limits", () => {
    expect(compareWithAdapter(COARSE_ALIGNMENT, BIG).limits).toEqual([{ name: "minStorageBufferOffsetAlignment", asked: 256, has: 512 }]);
    expect(adapterFits(H200, manifest("fine", { minStorageBufferOffsetAlignment: 16 }))).toBe(true);
    expect(adapterFits(H200, manifest("finer", { minStorageBufferOffsetAlignment: 8 }))).toBe(false);
  });

  it("reports a limit the adapter does not know with has undefined", () => {
    expect(compareWithAdapter(H200, manifest("x", { maxFancyThing: 1 })).limits).toEqual([
      { name: "maxFancyThing", asked: 1, has: undefined },
    ]);
  });

  it("counts an equal value as a fit", () => {
    expect(adapterFits(LAVAPIPE, MID)).toBe(true);
  });
});

describe("chooseProfile", () => {
  const all = [BIG, MID, BASE];

  it.each([
    ["H200", H200, "big"],
    ["lavapipe", LAVAPIPE, "mid"],
    ["an adapter without shader-f16", NO_F16, "base"],
    ["an adapter with a coarse storage offset alignment", COARSE_ALIGNMENT, undefined],
  ])("picks the first fitting profile for %s", (_label, adapter, expected) => {
    expect(chooseProfile(adapter, all)?.profile).toBe(expected);
  });

  it("follows the caller's order", () => {
    expect(chooseProfile(H200, [BASE, BIG])?.profile).toBe("base");
    expect(chooseProfile(H200, [])).toBeUndefined();
  });
});

/** A fake GPUAdapter that records the descriptor requestDevice receives. */
function recordingAdapter(caps: AdapterCapabilities): { adapter: GPUAdapter; requests: GPUDeviceDescriptor[] } {
  const requests: GPUDeviceDescriptor[] = [];
  const adapter = {
    ...caps,
    requestDevice: async (descriptor: GPUDeviceDescriptor) => {
      requests.push(descriptor);
      return { label: descriptor.label } as unknown as GPUDevice;
    },
  } as unknown as GPUAdapter;
  return { adapter, requests };
}

describe("requestBundleDevice", () => {
  it("requests the manifest's limits and features", async () => {
    const { adapter, requests } = recordingAdapter(H200);
    await requestBundleDevice(adapter, BIG);
    expect(requests).toHaveLength(1);
    expect(requests[0].requiredLimits).toEqual(BIG.requiredLimits);
    expect(requests[0].requiredFeatures).toEqual(["shader-f16", "subgroups"]);
  });

  it("throws a typed error naming what is missing and which profile fits, without requesting", async () => {
    const { adapter, requests } = recordingAdapter(LAVAPIPE);
    const error = await requestBundleDevice(adapter, BIG, { profiles: [BIG, MID, BASE] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedProfileError);
    const e = error as UnsupportedProfileError;
    expect(e.profile).toBe("big");
    expect(e.fittingProfile).toBe("mid");
    expect(e.mismatch.limits.map((l) => l.name)).toEqual(["maxComputeWorkgroupStorageSize", "maxStorageBufferBindingSize"]);
    expect(e.message).toBe(
      [
        'this adapter cannot run the bundle profile "big":',
        "  limit maxComputeWorkgroupStorageSize: the profile needs at least 49152, the adapter has 32768",
        "  limit maxStorageBufferBindingSize: the profile needs at least 2147483644, the adapter has 134217728",
        'use the profile "mid" instead: this adapter can run it',
      ].join("\n"),
    );
    expect(requests).toHaveLength(0);
  });

  it("says when no profile fits, naming missing features and alignments", async () => {
    const { adapter } = recordingAdapter(COARSE_ALIGNMENT);
    const withF16 = manifest("needs-f16-and-fine-alignment", { minStorageBufferOffsetAlignment: 256 }, ["shader-f16", "subgroups-f16"]);
    await expect(requestBundleDevice(adapter, withF16, { profiles: [withF16, BIG] })).rejects.toThrow(
      [
        'this adapter cannot run the bundle profile "needs-f16-and-fine-alignment":',
        "  limit minStorageBufferOffsetAlignment: the profile needs at most 256, the adapter has 512",
        '  feature "subgroups-f16": the adapter does not offer it',
        'none of the profiles "needs-f16-and-fine-alignment", "big" fits this adapter',
      ].join("\n"),
    );
  });
});
