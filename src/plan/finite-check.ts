/**
 * Non-finite values that appear only once a profile's build-time facts are known: with
 * `tunables.WG * 1e300 * 1e300` a condition is finite as written (lint cannot tell) but infinite
 * for every tunable value. The dispatcher folds build-time values into constants and cannot emit
 * infinity or NaN, so each built assignment is checked first and such a sub-expression is a
 * located `non_finite_value`, not an internal error. Likewise a uniform field whose value is known
 * on the profile and does not fit its type is `uniform_out_of_range` here, not a plan error of every call.
 */
import { deriveEnv, nonFiniteDiagnostic, nonFiniteNodes, tryEvaluate, uniformFits, uniformRangeDiagnostic } from "../check/check-spec.js";
import type { Diagnostic } from "../core/diagnostic.js";
import type { CExpr, CheckedDerive, CheckedKernel } from "../model/checked.js";
import type { AssignmentBuild } from "./enumerate.js";
import { DeriveEnv, StaticLeaves } from "./env.js";

/** The non_finite_value diagnostics of one built assignment of a kernel on a profile (each sub-expression once). */
export function buildTimeNonFinite(kernel: CheckedKernel, assignment: AssignmentBuild, profile: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  const facts = assignment.facts;
  const leaves = new StaticLeaves(facts);
  const tunables = Object.entries(facts.tunables).map(([k, v]) => `${k}=${v}`);
  const dtypes = Object.entries(facts.dtypes).map(([k, v]) => `${k}=${v}`);
  const context = ` on profile ${profile}${tunables.length || dtypes.length ? ` (${[...dtypes, ...tunables].join(", ")})` : ""}`;
  const check = (exprs: Iterable<CExpr>, env: DeriveEnv): void => {
    for (const c of exprs) {
      for (const { node, value } of nonFiniteNodes(c.texpr, env)) {
        const key = `${c.source.where.pointer}:${node.span.start}:${node.span.end}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push(nonFiniteDiagnostic(kernel.spec.file, c.source, node, value, context));
      }
    }
  };
  const top = new DeriveEnv(kernel.derive, leaves);
  check(
    [...kernel.derive.values()].map((d) => d.expr),
    top,
  );
  check(kernel.when, top);
  check(kernel.outputShapes.values(), top);
  for (const { variant: v } of assignment.variants) {
    const venv = deriveEnv(kernel, v);
    const ve = new DeriveEnv(venv, leaves);
    // An entry that neither is overridden here nor reads one (directly or not) has the value it has
    // in the enclosing environment, checked there already: only the others are evaluated again.
    check(
      changedEntries(venv, v.derive.keys()).map((d) => d.expr),
      ve,
    );
    check(v.when, ve);
    check(
      v.intermediates.map((i) => i.shape),
      ve,
    );
    for (const p of v.passes) {
      const penv = deriveEnv(kernel, v, p);
      const pe = new DeriveEnv(penv, leaves);
      check(
        changedEntries(penv, p.derive.keys()).map((d) => d.expr),
        pe,
      );
      check(p.dispatch, pe);
      check(
        p.bindings.flatMap((b) => (b.fields ?? []).map((f) => f.value)),
        pe,
      );
      // A uniform field known on this profile (from device limits, tunables, dtypes) must fit its type.
      for (const b of p.bindings)
        for (const f of b.fields ?? []) {
          const key = `range:${f.value.source.where.pointer}`;
          if (seen.has(key)) continue;
          const v = tryEvaluate(f.value.texpr, pe);
          if (typeof v !== "number" || !Number.isFinite(v) || uniformFits(f.type, v)) continue;
          seen.add(key);
          out.push(uniformRangeDiagnostic(kernel.spec.file, f.value.source, b.id, f, v, context));
        }
    }
  }
  return out;
}

/** The entries of `env` that are among `overridden` or read one of them, directly or through other entries. */
function changedEntries(env: ReadonlyMap<string, CheckedDerive>, overridden: Iterable<string>): CheckedDerive[] {
  const changed = new Set(overridden);
  for (let grew = changed.size > 0; grew;) {
    grew = false;
    for (const d of env.values()) {
      if (changed.has(d.name)) continue;
      for (const r of d.reads) {
        if (changed.has(r)) {
          changed.add(d.name);
          grew = true;
          break;
        }
      }
    }
  }
  return [...env.values()].filter((d) => changed.has(d.name));
}
