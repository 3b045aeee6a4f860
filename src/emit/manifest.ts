/**
 * The per-profile manifest (what the runtime reads to create pipelines and pick shaders), the
 * per-profile kernels.json (what tools read: each kernel's variants) and the bundle's profiles.json.
 */
import { generatedAs } from "../core/generated-mark.js";
import type { Value } from "../model/ir.js";
import type { PipelineDesc } from "../model/plan.js";
import type { KernelModel } from "../plan/dispatch-model.js";
import { requiredLimitsFor, type Profile } from "../plan/profiles.js";
import { shaderExplainValues } from "./explain-values.js";

/** The two files of one profile's description, as JSON values. */
export interface ProfileDescription {
  /** manifest.json: what the runtime reads (required limits and features, shaders, pipelines). */
  readonly manifest: unknown;
  /** kernels.json: what tools and tests read (every kernel's variants, passes, shader keys and ids). */
  readonly kernels: unknown;
}

/**
 * The manifest of one profile (required limits and features, shaders, pipelines) and its kernels
 * file (every kernel's variants). They are two files so that an app that loads the manifest at run
 * time does not load the variants' descriptions, which only tools read.
 */
export function manifestFor(profile: Profile, models: readonly KernelModel[], specFiles: readonly string[]): ProfileDescription {
  const shaders: Record<string, string> = {};
  const pipelines = new Map<string, PipelineDesc>();
  const kernels: Record<string, unknown> = {};
  for (const m of models) {
    const variants: unknown[] = [];
    const explained = new ExplainTable();
    for (const a of m.assignments) {
      for (const vm of a.variants) {
        variants.push({
          id: vm.variant.id,
          dtypes: a.facts.dtypes,
          tunables: a.facts.tunables,
          requiredFeatures: vm.variant.features,
          passes: vm.passes.map((pm) => {
            for (const [key, id] of pm.shaders) {
              shaders[id] = `../shaders/${id}.wgsl`;
              const types = pm.bindings.map((b) => b.buffer);
              pipelines.set(`${id}|main|${types.join(",")}`, { shader: id, entryPoint: "main", bindings: types });
              const values = shaderExplainValues(m.kernel, vm.variant, pm.pass, a.facts, pm.keyLeaves, JSON.parse(key) as (Value | null)[]);
              for (const [name, v] of Object.entries(values)) explained.add(id, name, v);
            }
            return {
              id: pm.pass.id,
              name: pm.pass.name,
              template: pm.pass.shader,
              key: pm.keyLeaves.map((l) => l.key),
              shaders: Object.fromEntries([...pm.shaders.entries()].sort(([x], [y]) => (x < y ? -1 : 1))),
            };
          }),
        });
      }
    }
    kernels[m.kernel.spec.name] = {
      domain: m.kernel.spec.domain,
      sinceVersion: m.kernel.spec.sinceVersion,
      variants,
      notBuilt: m.prunedVariants,
      ...explained.entry(),
    };
  }
  const from = `from ${specFiles.join(", ")}; do not edit`;
  return {
    manifest: {
      generatedBy: `${generatedAs(`${profile.name}/manifest.json`)} ${from}`,
      profile: profile.name,
      requiredLimits: requiredLimitsFor(profile),
      requiredFeatures: [...profile.features].sort(),
      shaders,
      pipelines: [...pipelines.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, p]) => p),
    },
    kernels: { generatedBy: `${generatedAs(`${profile.name}/kernels.json`)} ${from}`, profile: profile.name, kernels },
  };
}

/**
 * The values of the spec's `explain` derive entries per shader id of one kernel (a tool's view,
 * e.g. which attention design a shader renders; the runtime does not read them). Kept once per
 * shader, not per variant using it; a name whose value differs between two uses of one shader
 * (the text does not depend on it) is left out for that shader.
 */
class ExplainTable {
  private readonly values = new Map<string, Map<string, Value | undefined>>();

  add(shader: string, name: string, value: Value): void {
    const row = this.values.get(shader) ?? new Map<string, Value | undefined>();
    this.values.set(shader, row);
    if (!row.has(name)) row.set(name, value);
    else if (JSON.stringify(row.get(name)) !== JSON.stringify(value)) row.set(name, undefined);
  }

  /** `{ explain: { shader id: { name: value } } }`, or nothing when no shader has a value. */
  entry(): { explain?: Record<string, Record<string, Value>> } {
    const out: Record<string, Record<string, Value>> = {};
    for (const [shader, row] of [...this.values].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const kept = [...row].filter((e): e is [string, Value] => e[1] !== undefined);
      if (kept.length) out[shader] = Object.fromEntries(kept);
    }
    return Object.keys(out).length ? { explain: out } : {};
  }
}

/** profiles.json: the built profiles in run-time selection order, with their manifests. */
export function profilesIndex(profiles: readonly Pick<Profile, "name">[]): unknown {
  return {
    generatedBy: `${generatedAs("profiles.json")} from the profiles this build wrote (kernelc build); do not edit`,
    note: "Profiles in run-time selection order: take the first whose limits and features the adapter has.",
    profiles: profiles.map((p) => ({ name: p.name, manifest: `${p.name}/manifest.json` })),
  };
}
