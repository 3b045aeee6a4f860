/**
 * The cap on candidates: enumeration builds every dtype assignment × tunable combination ×
 * variant of a kernel on a profile, and for each surviving variant and instance every
 * combination of the run-time booleans its templates depend on. A spec with five tunables of 64
 * values would mean a billion candidates; the count is checked before anything is enumerated,
 * and past the configured cap (kernelc.config.json `maxCandidates`) the build stops with a
 * diagnostic that names each factor and the product.
 */
import { makeDiagnostic } from "../core/codes.js";
import { UserError } from "../core/diagnostic.js";
import type { CheckedKernel } from "../model/checked.js";
import type { Where } from "../model/spec.js";

/** The cap when the config does not set `maxCandidates`. */
export const DEFAULT_MAX_CANDIDATES = 4096;

/** One factor of a candidate count. */
export interface CandidateFactor {
  readonly what: string;
  readonly count: number;
  /** Where the spec declares it (the diagnostic points at the largest declared factor). */
  readonly where?: Where;
}

/** The factors of a kernel's candidate count on a profile: each type constraint's types, each unpinned tunable's values, the variants. */
export function candidateFactors(kernel: CheckedKernel, pinnedTunables: Readonly<Record<string, number>>): CandidateFactor[] {
  const spec = kernel.spec;
  const factors: CandidateFactor[] = [];
  for (const tc of spec.typeConstraints)
    factors.push({
      what: `type constraint \`${tc.name}\` (${tc.types.length} type${tc.types.length === 1 ? "" : "s"})`,
      count: tc.types.length,
      where: tc.keyWhere,
    });
  for (const t of spec.tunables) {
    if (Object.hasOwn(pinnedTunables, t.name)) continue;
    const count = new Set([t.default, ...(t.values ?? [])]).size;
    factors.push({ what: `tunable \`${t.name}\` (${count} value${count === 1 ? "" : "s"})`, count, where: t.keyWhere });
  }
  factors.push({ what: `${kernel.variants.length} variant${kernel.variants.length === 1 ? "" : "s"}`, count: kernel.variants.length });
  return factors;
}

/** The error for a count past the cap (`scope`: "on profile core", …): a UserError whose one diagnostic names each factor and the product. */
export function candidateLimitError(
  kernel: CheckedKernel,
  scope: string,
  max: number,
  factors: readonly CandidateFactor[],
  what = "its candidates",
): UserError {
  const product = factors.reduce((p, f) => p * f.count, 1);
  const shown = factors.filter((f) => f.count > 1);
  const formula = `${shown.map((f) => String(f.count)).join(" × ")} = ${product.toLocaleString("en-US")}`;
  const largest = factors.filter((f) => f.where !== undefined).sort((a, b) => b.count - a.count)[0];
  return new UserError([
    makeDiagnostic(
      "too_many_candidates",
      `kernel ${kernel.spec.name} has too many candidates ${scope}: ${what} number ${formula}, more than the limit of ${max.toLocaleString("en-US")} (${shown.map((f) => f.what).join(", ")})`,
      largest?.where
        ? { file: kernel.spec.file, span: largest.where.span, pointer: largest.where.pointer }
        : { file: kernel.spec.file, pointer: "/variants" },
      {
        hint: "pin tunables per profile in kernelc.config.json (tunables), give them fewer values, or raise maxCandidates in kernelc.config.json",
      },
    ),
  ]);
}

/** Throws candidateLimitError when a kernel's candidates on a profile number more than `max`. */
export function checkCandidateCount(
  kernel: CheckedKernel,
  profile: string,
  pinnedTunables: Readonly<Record<string, number>>,
  max: number,
): void {
  const factors = candidateFactors(kernel, pinnedTunables);
  if (factors.reduce((p, f) => p * f.count, 1) > max) throw candidateLimitError(kernel, `on profile ${profile}`, max, factors);
}
