/**
 * executePlan refuses a hand-built plan whose byte ranges are not non-negative safe integers (NaN,
 * negative, fractional, past 2^53), naming the pass and binding, before it touches the device.
 * The device here is a recorder: any call on it would show up in `touched`.
 */
import { describe, expect, it } from "vitest";
import { executePlan, PlanExecutionError } from "../../src/runtime/execute.js";
import type { PipelineCache } from "../../src/runtime/pipeline-cache.js";
import type { Plan } from "../../src/model/plan.js";

function recorder(): { device: GPUDevice; cache: PipelineCache; touched: string[] } {
  const touched: string[] = [];
  const limits = { maxComputeWorkgroupsPerDimension: 65535, minStorageBufferOffsetAlignment: 256, minUniformBufferOffsetAlignment: 256 };
  const device = new Proxy(
    { limits },
    {
      get(target, key) {
        if (key === "limits") return target.limits;
        touched.push(String(key));
        return () => undefined;
      },
    },
  ) as unknown as GPUDevice;
  const cache = new Proxy(
    {},
    {
      get(_t, key) {
        touched.push(`cache.${String(key)}`);
        return () => undefined;
      },
    },
  ) as unknown as PipelineCache;
  return { device, cache, touched };
}

function plan(offset: number, size: number, scratchSize = 16): Plan {
  return {
    kernel: "K",
    variant: "v",
    scratch: [{ id: "tmp", size: scratchSize }],
    outputShapes: {},
    passes: [
      {
        id: "main",
        name: "main",
        shader: "s",
        entryPoint: "main",
        workgroups: [1, 1, 1],
        bindings: [
          { binding: 0, name: "x", type: "read-only-storage" },
          { binding: 1, name: "y", type: "storage" },
        ],
        resources: [
          { kind: "input", tensor: "xT", offset: 0, size: 16 },
          { kind: "output", tensor: "yT", offset, size },
        ],
      },
    ],
  };
}

describe("executePlan on hand-built plans", () => {
  const bad: [string, number, number, string][] = [
    ["NaN size", 0, NaN, 'K pass "main": binding 1 "y": tensor "yT" size NaN is not a non-negative integer'],
    ["negative offset", -256, 16, 'K pass "main": binding 1 "y": tensor "yT" offset -256 is not a non-negative integer'],
    ["fractional size", 0, 16.5, 'K pass "main": binding 1 "y": tensor "yT" size 16.5 is not a non-negative integer'],
    ["NaN offset", NaN, 16, 'K pass "main": binding 1 "y": tensor "yT" offset NaN is not a non-negative integer'],
    ["size past 2^53", 0, 2 ** 53 + 2, 'K pass "main": binding 1 "y": tensor "yT" size 9007199254740994 is not a non-negative integer'],
    ["infinite size", 0, Infinity, 'K pass "main": binding 1 "y": tensor "yT" size Infinity is not a non-negative integer'],
  ];
  for (const [what, offset, size, message] of bad) {
    it(`refuses a ${what}, naming the pass and binding, before touching the device`, async () => {
      const { device, cache, touched } = recorder();
      const err = await executePlan(device, cache, plan(offset, size), {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PlanExecutionError);
      expect((err as Error).message).toBe(message);
      expect(touched).toEqual([]);
    });
  }

  it("refuses a scratch size that is NaN or negative", async () => {
    for (const size of [NaN, -4, 0.5]) {
      const { device, cache, touched } = recorder();
      const err = await executePlan(device, cache, plan(0, 16, size), {}).catch((e: unknown) => e);
      expect((err as Error).message).toBe(`K: scratch "tmp" has size ${size}; a size must be a non-negative integer`);
      expect(touched).toEqual([]);
    }
  });

  it("refuses a pass whose resources are not one per binding, before touching the device", async () => {
    const base = plan(0, 16);
    const pass = base.passes[0]!;
    for (const [resources, count] of [
      [pass.resources.slice(0, 1), "1"],
      [undefined, "no"],
    ] as const) {
      const { device, cache, touched } = recorder();
      const bad = { ...base, passes: [{ ...pass, resources }] } as unknown as Plan;
      const err = await executePlan(device, cache, bad, {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PlanExecutionError);
      expect((err as Error).message).toBe(
        `K pass "main": 2 bindings but ${count} resources; give one per binding (resources[i] for bindings[i])`,
      );
      expect(touched).toEqual([]);
    }
  });

  it("refuses a hole or a non-object among a pass's resources, before touching the device", async () => {
    const base = plan(0, 16);
    const pass = base.passes[0]!;
    for (const hole of [undefined, null, 7]) {
      const { device, cache, touched } = recorder();
      const resources = [pass.resources[0], hole];
      const bad = { ...base, passes: [{ ...pass, resources }] } as unknown as Plan;
      const err = await executePlan(device, cache, bad, {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PlanExecutionError);
      expect((err as Error).message).toBe(
        `K pass "main": binding ${pass.bindings[1]!.binding} (${pass.bindings[1]!.name}) has no resource (resources[1] is ${String(hole)})`,
      );
      expect(touched).toEqual([]);
    }
  });

  it("lets a well-formed plan through to the device", async () => {
    const { device, cache, touched } = recorder();
    await executePlan(device, cache, plan(0, 16), {}).catch(() => undefined);
    expect(touched.length).toBeGreaterThan(0);
  });
});
