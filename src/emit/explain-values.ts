/**
 * The values of the derive entries a spec lists under `explain` (e.g. PagedAttention's
 * `pagedDesign`), per built shader: what `kernelc explain` prints for every built candidate and
 * what each profile's manifest records per shader. A value is evaluated in the environment of the
 * shader's pass (kernel, variant and pass derive entries) with the candidate's build-time facts and
 * only the shader's specialization key pinned, so that it holds for every instance the shader
 * serves; a value that depends on anything else (or fails to evaluate) is left out. A name is
 * shown for the shaders whose template reads it, or, when no template of the variant reads it,
 * for each of the variant's shaders that fixes it.
 */
import { deriveEnv } from "../check/check-spec.js";
import type { LeafInfo, LeafKey } from "../check/binding-time.js";
import { UNKNOWN } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import type { CheckedKernel, CheckedPass, CheckedVariant } from "../model/checked.js";
import type { Value } from "../model/ir.js";
import type { KernelModel } from "../plan/dispatch-model.js";
import type { Candidate, KernelProfileBuild } from "../plan/enumerate.js";
import { DeriveEnv, StaticLeaves, type StaticFacts } from "../plan/env.js";

/** The explained values of one built shader of a candidate. */
export interface ShaderExplain {
  readonly pass: string;
  readonly shader: string;
  /** The configured instances the shader is built for. */
  readonly instances: readonly string[];
  /** Name → value, in the order of the spec's `explain` list; names whose value the shader does not fix are absent. */
  readonly values: Readonly<Record<string, Value>>;
}

/** A candidate with, when it was built and the spec lists `explain` names, their values per built shader. */
export type ExplainedCandidate = Candidate & { readonly explain?: readonly ShaderExplain[] };

/** The `explain` values of the shader of `pass` specialized for `key` (values in the order of `keyLeaves`; null is a wildcard). */
export function shaderExplainValues(
  kernel: CheckedKernel,
  variant: CheckedVariant,
  pass: CheckedPass,
  facts: StaticFacts,
  keyLeaves: readonly LeafInfo[],
  key: readonly (Value | null)[],
): Record<string, Value> {
  const out: Record<string, Value> = {};
  if (kernel.spec.explain.length === 0) return out;
  const pinned = new Map<LeafKey, Value>();
  keyLeaves.forEach((l, i) => {
    const v = key[i];
    if (v !== null && v !== undefined) pinned.set(l.key, v);
  });
  const env = new DeriveEnv(deriveEnv(kernel, variant, pass), new StaticLeaves(facts, pinned));
  for (const { name } of kernel.spec.explain) {
    if (!env.has(name)) continue;
    // A value belongs to the shaders whose template reads it; one that no template of the variant reads, to all of them.
    const reads = (p: CheckedPass): boolean => p.reads?.names.has(name) ?? false;
    if (!reads(pass) && variant.passes.some(reads)) continue;
    try {
      const v = env.derive(name);
      if (v !== UNKNOWN) out[name] = v as Value;
    } catch (err) {
      if (!(err instanceof EvalError)) throw err;
    }
  }
  return out;
}

/**
 * Every candidate of a build, the built ones with their shaders' `explain` values. `model` is the
 * build's dispatch model (its assignments, variants and passes parallel the build's).
 */
export function explainCandidates(build: KernelProfileBuild, model: KernelModel): ExplainedCandidate[] {
  const kernel = build.kernel;
  if (kernel.spec.explain.length === 0) return [...build.candidates];
  const same = (a: Readonly<Record<string, string | number>>, b: Readonly<Record<string, string | number>>): boolean =>
    Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);
  return build.candidates.map((c): ExplainedCandidate => {
    if (c.status !== "emitted") return c;
    const ai = build.assignments.findIndex((a) => same(a.facts.dtypes, c.dtypes) && same(a.facts.tunables, c.tunables));
    const vi = ai < 0 ? -1 : build.assignments[ai].variants.findIndex((v) => v.variant.id === c.variant);
    if (vi < 0) return c;
    const facts = build.assignments[ai].facts;
    const vb = build.assignments[ai].variants[vi];
    const vm = model.assignments[ai]?.variants[vi];
    const explain: ShaderExplain[] = [];
    vb.passes.forEach((pb, pi) => {
      for (const r of pb.requests) {
        const shader = vm?.passes[pi]?.shaders.get(JSON.stringify(r.key));
        if (shader === undefined) continue;
        const values = shaderExplainValues(kernel, vb.variant, pb.pass, facts, pb.keyLeaves, r.key);
        if (Object.keys(values).length) explain.push({ pass: pb.pass.id, shader, instances: [...r.instances], values });
      }
    });
    return { ...c, explain };
  });
}

/**
 * What an explained candidate's shaders fix for one instance, as text: `pagedDesign="row" (pass
 * attend)`, one value per name and value, naming the passes whose shaders have it; "" for none.
 */
export function instanceExplainText(c: ExplainedCandidate, instance: string): string {
  const passes = new Map<string, string[]>();
  for (const e of c.explain ?? []) {
    if (!e.instances.includes(instance)) continue;
    for (const [name, v] of Object.entries(e.values)) {
      const k = `${name}=${JSON.stringify(v)}`;
      const list = passes.get(k) ?? [];
      if (!list.includes(e.pass)) list.push(e.pass);
      passes.set(k, list);
    }
  }
  return [...passes].map(([k, ps]) => `${k} (pass${ps.length > 1 ? "es" : ""} ${ps.join(", ")})`).join(", ");
}
