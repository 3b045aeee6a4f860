/**
 * Differential test: for thousands of calls, valid and invalid, the generated dispatcher and the
 * interpreter must agree exactly: the same plan (variant, shaders, bindings with byte ranges,
 * uniform words, workgroup counts, scratch sizes, output shapes) or the same error kind and
 * message. Calls come from fixed seeds, from one random round (its seed printed, replay with
 * KERNELC_SEED), and from fixed calls at the edges of the kernels' conditions. The test fails if
 * any variant built for a profile was planned fewer than MIN_PLANS times, so a generator that
 * stops reaching a variant cannot pass silently.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { interpretPlan, KernelCallError } from "../../src/plan/interpret.js";
import type { Call } from "../../src/model/plan.js";
import { importDispatcher, repoBuild } from "../support/project-build.js";
import { rng } from "../support/rng.js";
import { outcome, type Outcome } from "../support/plan-outcome.js";
import { genericCall, pagedCall, pagedEdges, sparseCall, sparseEdges } from "./calls.js";

/** Plans each variant built for a profile must get over all rounds. */
const MIN_PLANS = 3;

const FIXED_SEEDS = [1, 2, 3];

describe("generated dispatcher vs interpreter", () => {
  let result: Awaited<ReturnType<typeof repoBuild>>;
  beforeAll(async () => {
    result = await repoBuild();
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  }, 120_000);

  it("agree on thousands of calls on every profile, and plan every built variant", async () => {
    const random = Number(process.env.KERNELC_SEED ?? Date.now() % 1_000_000);
    console.log(`differential: fixed seeds ${FIXED_SEEDS.join(", ")} and random seed ${random} (replay with KERNELC_SEED=${random})`);
    const plans = new Map<string, number>();
    const errors = new Map<string, number>();
    let compared = 0;
    let omittedOutputPlans = 0;
    let outputMismatches = 0;
    const check = (
      profile: string,
      name: string,
      planner: (c: Call) => unknown,
      model: Parameters<typeof interpretPlan>[0],
      call: Call,
    ): void => {
      const want: Outcome = outcome(() => interpretPlan(model, call));
      const got = outcome(() => planner(call));
      if (JSON.stringify(got) !== JSON.stringify(want)) expect({ profile, call, got }).toEqual({ profile, call, got: want });
      compared++;
      if ("plan" in want) {
        const key = `${name} / ${profile} / ${(want.plan as { variant: string }).variant}`;
        plans.set(key, (plans.get(key) ?? 0) + 1);
        const shapes = (want.plan as { outputShapes: Record<string, unknown> }).outputShapes;
        if (!Object.hasOwn(call.outputs ?? {}, "outputT") && Object.hasOwn(shapes, "outputT")) omittedOutputPlans++;
      } else {
        const key = `${name}: ${want.error.kind}`;
        errors.set(key, (errors.get(key) ?? 0) + 1);
        if (/: output `outputT` has shape \[.*\], expected \[.*\]/.test(want.error.message)) outputMismatches++;
      }
    };
    for (const p of result.profiles) {
      const mod = await importDispatcher(result.files.get(`${p.profile.name}/dispatcher.ts`)!);
      const planners = mod.planners as Record<string, (c: Call) => unknown>;
      for (const { model } of p.kernels) {
        const name = model.kernel.spec.name;
        const planner = planners[name]!;
        const edges = name === "PagedAttention" ? pagedEdges() : name === "SparseAttention" ? sparseEdges() : [];
        for (const call of edges) check(p.profile.name, name, planner, model, call);
        const builds = model.assignments.some((a) => a.variants.length > 0);
        const n = builds ? 500 : 100;
        for (const seed of [...FIXED_SEEDS, random]) {
          const r = rng(seed * 7919 + name.length);
          for (let i = 0; i < n; i++) {
            const u = r();
            const call =
              name === "PagedAttention" && u < 0.85
                ? pagedCall(r)
                : name === "SparseAttention" && u < 0.85
                  ? sparseCall(r)
                  : genericCall(model, r);
            check(p.profile.name, name, planner, model, call);
          }
        }
      }
    }
    const lines = [...plans.entries(), ...errors.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}: ${v}`);
    console.log(`${compared} calls compared\n${lines.join("\n")}`);
    expect(compared).toBeGreaterThan(10_000);
    // Every variant built for a profile is planned at least MIN_PLANS times (exact names, no substrings).
    const missing: string[] = [];
    for (const p of result.profiles) {
      for (const { model } of p.kernels) {
        const built = new Set(model.assignments.flatMap((a) => a.variants.map((v) => v.variant.id)));
        for (const v of built) {
          const key = `${model.kernel.spec.name} / ${p.profile.name} / ${v}`;
          if ((plans.get(key) ?? 0) < MIN_PLANS) missing.push(`${key}: ${plans.get(key) ?? 0} plans`);
        }
      }
    }
    expect(missing).toEqual([]);
    for (const name of ["PagedAttention", "SparseAttention"]) {
      for (const kind of ["invalid_call", "contract", "no_variant", "missing_shader", "eval"]) {
        expect(errors.get(`${name}: ${kind}`) ?? 0, `${name}: ${kind}`).toBeGreaterThan(0);
      }
    }
    expect(omittedOutputPlans).toBeGreaterThan(0);
    expect(outputMismatches).toBeGreaterThan(0);
  }, 600_000);

  it("the interpreter's errors are KernelCallErrors with a kind", () => {
    expect(new KernelCallError("contract", "x").kind).toBe("contract");
  });
});
