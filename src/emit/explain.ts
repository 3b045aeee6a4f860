/** The text of `kernelc explain`: every candidate on a profile and why; and, for a call, why its variant. */
import type { KernelModel } from "../plan/dispatch-model.js";
import type { KernelProfileBuild } from "../plan/enumerate.js";
import { interpretPlan, KernelCallError, selectVariant } from "../plan/interpret.js";
import { describeF16Storage, f16StorageFor } from "../plan/f16-storage.js";
import { resolveProfile, type Profile } from "../plan/profiles.js";
import type { Call } from "../model/plan.js";
import { instanceExplainText, type ExplainedCandidate } from "./explain-values.js";

const KEY_LIMITS = [
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxStorageBufferBindingSize",
  "maxBufferSize",
] as const;

function describeCombo(dtypes: Readonly<Record<string, string>>, tunables: Readonly<Record<string, number>>): string {
  const d = Object.entries(dtypes)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  const t = Object.entries(tunables)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  return [d, t].filter(Boolean).join("; ");
}

/**
 * Every candidate of one kernel on one profile, emitted or pruned, with the reason and instances;
 * with `explained` (explainCandidates), each built instance also shows the spec's `explain` values.
 */
export function explainReport(build: KernelProfileBuild, profile: Profile, explained?: readonly ExplainedCandidate[]): string {
  const k = build.kernel;
  const limits = resolveProfile(profile);
  const lines: string[] = [];
  lines.push(`${k.spec.name} on profile ${profile.name}`);
  lines.push(`  features: ${profile.features.length ? profile.features.join(", ") : "none"}`);
  lines.push(`  limits: ${KEY_LIMITS.map((l) => `${l}=${limits[l]}`).join(", ")}`);
  // Only for a kernel that binds f16 data on this profile (a built candidate says how it is stored).
  if (build.candidates.some((c) => c.f16Storage)) lines.push(`  f16 storage: ${describeF16Storage(f16StorageFor(profile.features))}`);
  if (build.noVariantReason) lines.push(`  NO VARIANT: ${build.noVariantReason}`);
  const groups = new Map<string, ExplainedCandidate[]>();
  for (const c of explained ?? build.candidates) {
    const key = describeCombo(c.dtypes, c.tunables);
    groups.set(key, [...(groups.get(key) ?? []), c]);
  }
  const byId = new Map(k.variants.map((v) => [v.id, v]));
  for (const [combo, cands] of groups) {
    const state = cands.some((c) => c.status === "emitted")
      ? "built"
      : cands.some((c) => c.status === "not-dispatched")
        ? "skipped: an earlier combination is built"
        : "no variant survives";
    lines.push("", `candidates for ${combo} (${state}):`);
    for (const c of cands) {
      const v = byId.get(c.variant)!;
      lines.push(
        `  ${c.status === "emitted" ? "EMITTED" : c.status === "pruned" ? "PRUNED " : "SKIPPED"} ${c.variant} (priority ${v.priority})`,
      );
      if (c.reason) lines.push(`      ${c.reason}`);
      if (c.f16Storage)
        lines.push(`      f16 tensors ${c.f16Storage === "packed" ? "packed in u32 pairs, computed in f32" : "native (array<f16>)"}`);
      for (const i of c.instances) {
        const shown = i.status === "built" ? instanceExplainText(c, i.name) : "";
        lines.push(`      instance ${i.name}: ${i.status}${i.reason ? ` — ${i.reason}` : ""}${shown ? `; ${shown}` : ""}`);
      }
    }
  }
  return lines.join("\n") + "\n";
}

/** For one call: the variant picked and why each higher one was rejected (text or data). */
export function explainCallReport(model: KernelModel, callJson: unknown, format: "text" | "json"): unknown {
  const call = callJson as Call;
  let picked: string | undefined;
  let rejected: { variant: string; reason: string }[] = [];
  let error: { kind: string; message: string } | undefined;
  let plan: unknown;
  try {
    const sel = selectVariant(model, call);
    rejected = [...sel.rejected];
    picked = sel.chosen?.vm.variant.id;
    plan = interpretPlan(model, call);
  } catch (err) {
    if (!(err instanceof KernelCallError)) throw err;
    error = { kind: err.kind, message: err.message };
  }
  if (format === "json")
    return {
      picked,
      rejected,
      error,
      plan: plan ? JSON.parse(JSON.stringify(plan)) : undefined,
    };
  const lines = [`call of ${model.kernel.spec.name} on profile ${model.profile}:`];
  for (const r of rejected) lines.push(`  rejected ${r.variant}: ${r.reason}`);
  if (picked) lines.push(`  picked ${picked}`);
  if (error) lines.push(`  error (${error.kind}): ${error.message}`);
  if (plan) {
    const p = plan as { passes: { id: string; shader: string; workgroups: readonly number[] }[]; scratch: { id: string; size: number }[] };
    for (const pass of p.passes) lines.push(`    pass ${pass.id}: shader ${pass.shader}, workgroups [${pass.workgroups.join(", ")}]`);
    for (const s of p.scratch) lines.push(`    scratch ${s.id}: ${s.size} bytes`);
  }
  return lines.join("\n") + "\n";
}
