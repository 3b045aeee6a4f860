/**
 * The one dedupe of diagnostics. The compiler reports some problems once per profile, variant,
 * pass or instance it was working on (an undefined template variable fails every render of that
 * template); each such report carries where it arose. Reports of the same problem (same code,
 * severity, message and location) become one diagnostic with a note naming every place it occurs:
 * "in 8 profiles: …; dtypes T=float16; variant `split`; pass `main`; 5 instances: …" (dtypes only
 * for a kernel with several dtype assignments).
 */
import type { Diagnostic } from "./diagnostic.js";

/** Where one report arose; each field is a dimension of the build (absent: not applicable). */
export interface Occurrence {
  readonly profile?: string;
  /** The dtype assignment, as `T=float16, S=int32` (only for a kernel that has several). */
  readonly dtypes?: string;
  readonly variant?: string;
  readonly pass?: string;
  readonly instances?: readonly string[];
}

/** A diagnostic and where it arose, before reports of the same problem are merged. */
export interface Report {
  readonly diagnostic: Diagnostic;
  readonly where?: Occurrence;
}

/** The identity of a problem: reports with the same key are one diagnostic (hint and notes of the first are kept). */
function problemKey(d: Diagnostic): string {
  const l = d.location;
  return JSON.stringify([d.code, d.severity, d.message, l?.file ?? null, l?.span?.start ?? null, l?.span?.end ?? null, l?.pointer ?? null]);
}

/**
 * Merges reports of the same problem into one diagnostic, in the order problems were first
 * reported. A problem reported with a `where` gets a note listing each dimension's distinct values.
 */
export function dedupeDiagnostics(items: readonly (Diagnostic | Report)[]): Diagnostic[] {
  const groups = new Map<string, { first: Diagnostic; wheres: Occurrence[] }>();
  for (const item of items) {
    const report: Report = "diagnostic" in item ? item : { diagnostic: item };
    const key = problemKey(report.diagnostic);
    let group = groups.get(key);
    if (!group) {
      group = { first: report.diagnostic, wheres: [] };
      groups.set(key, group);
    }
    if (report.where) group.wheres.push(report.where);
  }
  return [...groups.values()].map(({ first, wheres }) =>
    wheres.length === 0 ? first : { ...first, notes: [{ message: occurrenceText(wheres) }, ...first.notes] },
  );
}

const DIMENSIONS = [
  { key: "profile", one: "profile", many: "profiles", quote: false },
  { key: "dtypes", one: "dtypes", many: "dtype assignments", quote: false },
  { key: "variant", one: "variant", many: "variants", quote: true },
  { key: "pass", one: "pass", many: "passes", quote: true },
  { key: "instances", one: "instance", many: "instances", quote: false },
] as const;

/** "in 8 profiles: a, b, …; dtypes T=float16; variant `v`; pass `p`; 2 instances: x, y" for the places one problem arose. */
export function occurrenceText(wheres: readonly Occurrence[]): string {
  const parts: string[] = [];
  for (const dim of DIMENSIONS) {
    const values: string[] = [];
    for (const w of wheres) {
      const v = w[dim.key];
      for (const x of v === undefined ? [] : typeof v === "string" ? [v] : v) if (!values.includes(x)) values.push(x);
    }
    if (values.length === 0) continue;
    const shown = values.map((x) => (dim.quote ? `\`${x}\`` : x)).join(", ");
    parts.push(values.length === 1 ? `${dim.one} ${shown}` : `${values.length} ${dim.many}: ${shown}`);
  }
  return `in ${parts.join("; ")}`;
}
