/**
 * Differential test: for thousands of random calls, valid and invalid, the generated dispatcher
 * and the interpreter must agree exactly: the same plan (variant, shaders, bindings with byte
 * ranges, uniform bytes, workgroup counts, scratch sizes, output shapes) or the same error kind
 * and message.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { interpretPlan, KernelCallError } from "../../src/plan/interpret.js";
import type { KernelModel } from "../../src/plan/dispatch-model.js";
import type { Call, TensorDesc } from "../../src/model/plan.js";
import { importDispatcher, repoBuild } from "../support/project-build.js";
import { rng } from "../support/rng.js";
import { outcome } from "../support/plan-outcome.js";



/** A random PagedAttention call: mostly valid, near the configured instances, with random faults. */
function pagedCall(r: () => number): Call {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const [nh, kvh, hs] = pick([
    [32, 8, 128], [32, 32, 128], [28, 4, 128], [32, 32, 96], [8, 2, 64], [4, 4, 64], [6, 4, 128], [32, 0, 128],
  ] as const);
  const bs = pick([16, 32, 8]);
  const batch = 1 + Math.floor(r() * 5);
  const lens = Array.from({ length: batch }, () => Math.floor(r() * 4));
  const tokens = lens.reduce((a, b) => a + b, 0) + (r() < 0.05 ? 1 : 0);
  const maxBlocks = 1 + Math.floor(r() * 300);
  const packed = r() < 0.5;
  const slots = r() < 0.4;
  const f16 = (shape: number[]): TensorDesc => ({ shape, dtype: r() < 0.03 ? "float32" : "float16" });
  const i32 = (shape: number[]): TensorDesc => ({ shape, dtype: "int32" });
  const inputs: Record<string, TensorDesc | null> = {
    queryT: f16([tokens, packed ? (nh + 2 * kvh) * hs : nh * hs]),
    keyCacheT: f16([64, bs, kvh, r() < 0.03 ? hs + 1 : hs]),
    valueCacheT: f16([64, bs, kvh, hs]),
    cumulativeSequenceLengthT: i32([batch + 1]),
    pastSeqlensT: i32([r() < 0.03 ? batch + 1 : batch]),
    blockTableT: i32([batch, maxBlocks]),
  };
  if (!packed) {
    inputs.keyT = f16([tokens, kvh * hs]);
    inputs.valueT = f16([tokens, kvh * hs]);
    if (r() < 0.05) delete inputs.valueT;
  }
  if (slots) inputs.slotMappingT = i32([r() < 0.05 ? tokens + 1 : tokens]);
  if (r() < 0.03) inputs.queryT = f16([tokens]);
  if (r() < 0.02) delete inputs.blockTableT;
  if (r() < 0.02) inputs.bogusT = i32([1]);
  const attrs: Record<string, number | string> = { num_heads: nh, kv_num_heads: kvh };
  if (r() < 0.5) attrs.scale = pick([0, 0.125, 0.088388, 1.5]);
  if (r() < 0.03) attrs.is_causal = 0;
  if (r() < 0.02) attrs.num_heads = "32";
  if (r() < 0.02) delete attrs.kv_num_heads;
  if (r() < 0.02) attrs.num_heads = 32.5;
  const outputs: Record<string, TensorDesc | null> = { outputT: f16([tokens, r() < 0.03 ? nh * hs + 1 : nh * hs]) };
  return { inputs, outputs, attrs };
}

/** A random call for any kernel: random shapes of the declared ranks from a small pool of sizes. */
function genericCall(model: KernelModel, r: () => number): Call {
  const pool = [0, 1, 2, 3, 4, 8, 16, 32, 64, 128];
  const inputs: Record<string, TensorDesc | null> = {};
  const outputs: Record<string, TensorDesc | null> = {};
  const spec = model.kernel.spec;
  const dtypeOf = (param: string): string => spec.typeConstraints.find((t) => t.name === param)?.types[0] ?? param;
  for (const i of spec.inputs) {
    if (i.optional && r() < 0.4) continue;
    const rank = i.rank ?? 1 + Math.floor(r() * 3);
    inputs[i.name] = { shape: Array.from({ length: r() < 0.05 ? rank + 1 : rank }, () => pool[Math.floor(r() * pool.length)]), dtype: dtypeOf(i.dtype) };
  }
  for (const o of spec.outputs) {
    if (spec.inputs.some((i) => i.name === o.name)) continue;
    const rank = o.rank ?? 2;
    outputs[o.name] = { shape: Array.from({ length: rank }, () => pool[Math.floor(r() * pool.length)]), dtype: dtypeOf(o.dtype) };
  }
  const attrs: Record<string, number> = {};
  for (const a of spec.attributes) if (r() < 0.8) attrs[a.name] = Math.floor(r() * 5);
  return { inputs, outputs, attrs };
}

describe("generated dispatcher vs interpreter", () => {
  let result: Awaited<ReturnType<typeof repoBuild>>;
  beforeAll(async () => {
    result = await repoBuild();
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  }, 120_000);

  it("agree on thousands of random calls on every profile", async () => {
    const seed = Number(process.env.KERNELC_SEED ?? Date.now() % 1_000_000);
    console.log(`differential seed ${seed} (replay with KERNELC_SEED=${seed})`);
    const r = rng(seed);
    const tally = new Map<string, number>();
    let compared = 0;
    for (const p of result.profiles) {
      const mod = await importDispatcher(result.files.get(`${p.profile.name}/dispatcher.ts`)!);
      const planners = mod.planners as Record<string, (c: Call) => unknown>;
      for (const { model } of p.kernels) {
        const name = model.kernel.spec.name;
        const n = p.profile.name === "desktop-64k" || p.profile.name === "core" ? 1500 : 300;
        for (let i = 0; i < n; i++) {
          const call = name === "PagedAttention" && r() < 0.8 ? pagedCall(r) : genericCall(model, r);
          const want = outcome(() => interpretPlan(model, call));
          const got = outcome(() => planners[name](call));
          if (JSON.stringify(got) !== JSON.stringify(want)) {
            expect({ profile: p.profile.name, call, got }).toEqual({ profile: p.profile.name, call, got: want });
          }
          const key = "plan" in want ? `${name}/${p.profile.name}: plan ${(want.plan as { variant: string }).variant}` : `${name}: ${want.error.kind}`;
          tally.set(key, (tally.get(key) ?? 0) + 1);
          compared++;
        }
      }
    }
    console.log([...tally.entries()].sort().map(([k, v]) => `${k}: ${v}`).join("\n"));
    expect(compared).toBeGreaterThan(5000);
    // The random calls must exercise plans of every PagedAttention variant and every error kind.
    const kinds = [...tally.keys()].join("\n");
    for (const kind of ["invalid_call", "contract", "no_variant", "missing_shader"]) expect(kinds).toContain(`PagedAttention: ${kind}`);
    for (const v of ["separate_derived_splitk", "separate_derived", "separate_slot_splitk", "separate_slot", "packed_derived_splitk", "packed_derived", "packed_slot_splitk", "packed_slot"]) {
      expect(kinds).toContain(`plan ${v}\n`.trim());
    }
  }, 300_000);

  it("the interpreter's errors are KernelCallErrors with a kind", () => {
    expect(new KernelCallError("contract", "x").kind).toBe("contract");
  });
});
