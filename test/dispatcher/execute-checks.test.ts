/**
 * executePlan refuses a hand-built plan whose byte ranges are not non-negative safe integers (NaN,
 * negative, fractional, past 2^53), whose resources are not one per binding or not of their
 * binding's form (a byte size or a range for a tensor or scratch buffer, words for a uniform), or
 * whose bindings do not say what they bind (a plan from an older kernelc), naming the pass and
 * binding, before it touches the device. The device here is a recorder: any call on it would show
 * up in `touched`.
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
    scratch: { tmp: scratchSize },
    outputShapes: {},
    passes: [
      {
        id: "main",
        name: "main",
        shader: "s",
        entryPoint: "main",
        x: 1,
        y: 1,
        z: 1,
        bindings: [
          { binding: 0, name: "x", type: "read-only-storage", kind: "input", tensor: "xT" },
          { binding: 1, name: "y", type: "storage", kind: "output", tensor: "yT" },
          { binding: 2, name: "t", type: "storage", kind: "scratch", scratch: "tmp" },
          { binding: 3, name: "params", type: "uniform", kind: "uniform" },
        ],
        resources: [16, { offset, size }, scratchSize, [1, 2, 3, 4]],
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
        `K pass "main": 4 bindings but ${count} resources; give one per binding (resources[i] for bindings[i])`,
      );
      expect(touched).toEqual([]);
    }
  });

  it("refuses a tensor or scratch resource that is neither a byte size nor a range, before touching the device", async () => {
    const base = plan(0, 16);
    const pass = base.passes[0]!;
    for (const [at, what] of [
      [1, 'tensor "yT"'],
      [2, 'scratch "tmp"'],
    ] as const) {
      for (const [hole, shown] of [
        [undefined, "undefined"],
        [null, "null"],
        ["16", "a string"],
        [[16], "an array"],
      ] as const) {
        const { device, cache, touched } = recorder();
        const resources = pass.resources.map((r, i) => (i === at ? hole : r));
        const bad = { ...base, passes: [{ ...pass, resources }] } as unknown as Plan;
        const err = await executePlan(device, cache, bad, {}).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PlanExecutionError);
        expect((err as Error).message).toBe(
          `K pass "main": binding ${at} "${pass.bindings[at]!.name}": ${what} needs a byte size or a range { offset, size }, not ${shown} (resources[${at}])`,
        );
        expect(touched).toEqual([]);
      }
    }
  });

  it("refuses a uniform resource that is not its words, before touching the device", async () => {
    const base = plan(0, 16);
    const pass = base.passes[0]!;
    for (const [hole, shown] of [
      [undefined, "undefined"],
      [16, "a number"],
      [{ kind: "uniform", words: [1, 2, 3, 4] }, "an object"],
    ] as const) {
      const { device, cache, touched } = recorder();
      const resources = pass.resources.map((r, i) => (i === 3 ? hole : r));
      const bad = { ...base, passes: [{ ...pass, resources }] } as unknown as Plan;
      const err = await executePlan(device, cache, bad, {}).catch((e: unknown) => e);
      expect((err as Error).message).toBe(
        `K pass "main": binding 3 "params": a uniform binding's resource is its words, an array of u32 numbers, not ${shown} (resources[3])`,
      );
      expect(touched).toEqual([]);
    }
  });

  it("refuses a binding that does not say what it binds (a plan from an older kernelc), before touching the device", async () => {
    const base = plan(0, 16);
    const pass = base.passes[0]!;
    const { device, cache, touched } = recorder();
    const old = {
      ...base,
      passes: [
        {
          ...pass,
          bindings: [{ binding: 0, name: "x", type: "read-only-storage" }],
          resources: [{ kind: "input", tensor: "xT", offset: 0, size: 16 }],
        },
      ],
    } as unknown as Plan;
    const err = await executePlan(device, cache, old, {}).catch((e: unknown) => e);
    expect((err as Error).message).toBe(
      'K pass "main": binding 0 "x": kind is undefined, not input, output, scratch or uniform (a plan from an older kernelc? rebuild out/)',
    );
    expect(touched).toEqual([]);
  });

  it("takes a byte size as the range from byte 0", async () => {
    const { device, cache, touched } = recorder();
    const base = plan(0, 16);
    const pass = base.passes[0]!;
    const sized = { ...base, passes: [{ ...pass, resources: [16, 16, 16, [0, 0, 0, 0]] }] };
    await executePlan(device, cache, sized, {}).catch(() => undefined);
    expect(touched.length).toBeGreaterThan(0);
  });

  it("lets a well-formed plan through to the device", async () => {
    const { device, cache, touched } = recorder();
    await executePlan(device, cache, plan(0, 16), {}).catch(() => undefined);
    expect(touched.length).toBeGreaterThan(0);
  });
});
