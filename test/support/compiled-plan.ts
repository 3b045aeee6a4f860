/**
 * Plans calls with the real compiler: builds this repository's specs and templates in memory for
 * one profile, with instances taken from the calls themselves, and loads the generated dispatcher.
 * GPU tests use it so that what they run is exactly what `kernelc build` ships.
 */
import { compile, type CompileResult } from "../../src/api/compile.js";
import { passKeyLeaves } from "../../src/plan/enumerate.js";
import { CallLeaves, type StaticFacts } from "../../src/plan/env.js";
import type { CheckedKernel } from "../../src/model/checked.js";
import { loadConfig, type LoadedConfig } from "../../src/plan/config.js";
import type { Call, Plan } from "../../src/model/plan.js";
import { EvalError } from "../../src/lang/ops.js";
import { importDispatcher, repoRoot } from "./project-build.js";

export interface CompiledPlanner {
  /** The generated dispatcher's plan for a call (throws its KernelCallError as it would for a user). */
  plan(call: Call): Plan;
  /** WGSL by shader id, as written to out/shaders. */
  readonly shaders: Readonly<Record<string, string>>;
  readonly build: CompileResult;
}

function withConfig(
  loaded: LoadedConfig,
  instances: Record<string, CallInstance[]>,
  profile: string,
  kernel: string,
  tunables?: Record<string, number>,
): LoadedConfig {
  const pins = tunables
    ? { ...loaded.config.tunables, [profile]: { ...(loaded.config.tunables[profile] ?? {}), [kernel]: tunables } }
    : loaded.config.tunables;
  // KERNELC_TEST_TEMPLATES=<folder, relative to the repository> runs the GPU tests on another
  // templates folder (a kernel experiment) instead of the configured one.
  const templates = process.env.KERNELC_TEST_TEMPLATES;
  return { ...loaded, config: { ...loaded.config, instances, tunables: pins, ...(templates ? { templates } : {}) } };
}

/** A configured instance: leaf key → value. */
export interface CallInstance {
  readonly name: string;
  readonly values: Record<string, number | boolean>;
}

/**
 * One instance per call (named `${prefix}-${i}`): the value of every run-time leaf the kernel's
 * templates depend on, as the call gives it; leaves the call cannot give are left out.
 */
export function instancesForCalls(kernel: CheckedKernel, facts: StaticFacts, calls: readonly Call[], prefix: string): CallInstance[] {
  const leaves = new Map<string, ReturnType<typeof passKeyLeaves>[number]>();
  for (const v of kernel.variants) for (const p of v.passes) for (const l of passKeyLeaves(kernel, v, p)) leaves.set(l.key, l);
  return calls.map((call, i) => {
    const env = new CallLeaves(kernel, call, facts);
    const values: Record<string, number | boolean> = {};
    for (const l of leaves.values()) {
      try {
        const v =
          l.axis !== undefined ? env.dim(l.leaf.name, l.axis) : l.key.startsWith("has(") ? env.hasAttr(l.leaf.name) : env.leaf(l.leaf);
        if (typeof v === "number" || typeof v === "boolean") values[l.key] = v;
      } catch (err) {
        if (!(err instanceof EvalError)) throw err;
      }
    }
    return { name: `${prefix}-${i}`, values };
  });
}

/** Builds `kernel` for `profile` with one instance per distinct key of `calls`, and returns its planner. */
export async function compileForCalls(
  kernel: string,
  calls: readonly Call[],
  profile: string,
  tunables?: Record<string, number>,
): Promise<CompiledPlanner> {
  const loaded = loadConfig(repoRoot);
  // First build with no instances: it yields the key leaves of every pass.
  const probe = await compile(withConfig(loaded, {}, profile, kernel, tunables), { profiles: [profile] });
  if (probe.diagnostics.some((d) => d.severity === "error")) throw new Error(probe.diagnostics.map((d) => d.message).join("\n"));
  const model = probe.profiles[0].kernels.find((k) => k.model.kernel.spec.name === kernel)!.model;
  const facts = model.assignments[0]?.facts ?? { dtypes: {}, tunables: {}, limits: {}, features: new Set<string>() };
  const instances = instancesForCalls(model.kernel, facts, calls, "call");
  const build = await compile(withConfig(loaded, { [kernel]: instances }, profile, kernel, tunables), { profiles: [profile] });
  const errors = build.diagnostics.filter((d) => d.severity === "error");
  if (errors.length) throw new Error(errors.map((d) => `${d.code}: ${d.message}`).join("\n"));
  const mod = await importDispatcher(build.files.get(`${profile}/dispatcher.ts`)!);
  const planners = mod.planners as Record<string, (c: Call) => Plan>;
  const shaders: Record<string, string> = {};
  for (const [rel, text] of build.files) if (rel.startsWith("shaders/")) shaders[rel.slice(8, -5)] = text;
  return { plan: (call) => planners[kernel](call), shaders, build };
}

/**
 * A derive value a build recorded for one of its shaders (the explain table of the profile's
 * kernels.json), e.g. which design a template rendered: `explained(c, "desktop-32k", "PagedAttention", id, "pagedDesign")`.
 */
export function explained(compiled: CompiledPlanner, profile: string, kernel: string, shaderId: string, name: string): unknown {
  const manifest = JSON.parse(compiled.build.files.get(`${profile}/kernels.json`)!) as {
    kernels: Record<string, { explain?: Record<string, Record<string, unknown>> }>;
  };
  return manifest.kernels[kernel]?.explain?.[shaderId]?.[name];
}
