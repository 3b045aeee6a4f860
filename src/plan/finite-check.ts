/**
 * Non-finite values that appear only once a profile's build-time facts are known: with
 * `tunables.WG * 1e300 * 1e300` a condition is finite as written (lint cannot tell) but infinite
 * for every tunable value. The dispatcher folds build-time values into constants and cannot emit
 * infinity or NaN, so each built assignment is checked first and such a sub-expression is a
 * located `non_finite_value`, not an internal error. Likewise a uniform field whose value is known
 * on the profile and does not fit its type is `uniform_out_of_range` here, not a plan error of every call.
 */
import { alwaysFailingNodes, alwaysFailsDiagnostic, derivesNeverThrow } from "../check/always-fails.js";
import {
  deriveEnv,
  dispatchFits,
  dispatchRangeDiagnostic,
  nonFiniteDiagnostic,
  nonFiniteNodes,
  tryEvaluate,
  uniformFits,
  uniformRangeDiagnostic,
} from "../check/check-spec.js";
import type { Diagnostic } from "../core/diagnostic.js";
import type { CExpr, CheckedDerive, CheckedKernel } from "../model/checked.js";
import type { AssignmentBuild } from "./enumerate.js";
import { DeriveEnv, StaticLeaves } from "./env.js";

/**
 * One derive environment of the walk for failing sub-expressions: `owner(name)` names the
 * environment whose value of entry `name` this one shares (an entry neither overridden here nor
 * reading an override has the value it has in the enclosing environment).
 */
interface FailScope {
  readonly env: DeriveEnv;
  readonly derives: ReadonlyMap<string, CheckedDerive>;
  readonly owner: (name: string) => string;
}

/**
 * The non_finite_value, uniform_out_of_range and expr_always_fails diagnostics of one built
 * assignment of a kernel on a profile (each sub-expression once).
 */
export function buildTimeConstantProblems(kernel: CheckedKernel, assignment: AssignmentBuild, profile: string): Diagnostic[] {
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
  // Sub-expressions that fail whenever they are evaluated with this assignment's values: in what
  // every call reaching a kernel, variant or pass evaluates (conditions, shapes, dispatch sizes,
  // uniform fields) and in the derive entries those read unguarded. An entry read only under a
  // condition, or only where this assignment never goes, may fail harmlessly; guarded failures
  // are lint's warnings, not repeated here.
  const walked = new Set<string>();
  const failing = (roots: Iterable<CExpr>, scope: FailScope, name: string): void => {
    const safe = derivesNeverThrow(scope.env);
    const queue = [...roots].map((c) => ({ c, key: `${name}:${c.source.where.pointer}` }));
    while (queue.length > 0) {
      const { c, key } = queue.pop()!;
      if (walked.has(key)) continue;
      walked.add(key);
      const scan = alwaysFailingNodes(c.texpr, safe);
      for (const f of scan.failing) {
        const at = `fails:${c.source.where.pointer}:${f.node.span.start}:${f.node.span.end}`;
        if (f.guard || seen.has(at)) continue;
        seen.add(at);
        out.push(alwaysFailsDiagnostic(kernel.spec.file, c.source, f, context));
      }
      for (const n of scan.unguardedReads) {
        const d = scope.derives.get(n);
        if (d) queue.push({ c: d.expr, key: `${scope.owner(n)}:${d.expr.source.where.pointer}` });
      }
    }
  };
  const top = new DeriveEnv(kernel.derive, leaves);
  const topScope: FailScope = { env: top, derives: kernel.derive, owner: () => "kernel" };
  check(
    [...kernel.derive.values()].map((d) => d.expr),
    top,
  );
  check(kernel.when, top);
  check(kernel.outputShapes.values(), top);
  failing([...kernel.when, ...kernel.outputShapes.values()], topScope, "kernel");
  assignment.variants.forEach(({ variant: v }, vi) => {
    const venv = deriveEnv(kernel, v);
    const ve = new DeriveEnv(venv, leaves);
    // An entry that neither is overridden here nor reads one (directly or not) has the value it has
    // in the enclosing environment, checked there already: only the others are evaluated again.
    const vChanged = changedEntries(venv, v.derive.keys());
    const vName = `variant ${vi}`;
    const vOwned = new Set(vChanged.map((d) => d.name));
    const vOwner = (n: string): string => (vOwned.has(n) ? vName : "kernel");
    check(
      vChanged.map((d) => d.expr),
      ve,
    );
    check(v.when, ve);
    check(
      v.intermediates.map((i) => i.shape),
      ve,
    );
    failing([...v.when, ...v.intermediates.map((i) => i.shape)], { env: ve, derives: venv, owner: vOwner }, vName);
    v.passes.forEach((p, pi) => {
      const penv = deriveEnv(kernel, v, p);
      const pe = new DeriveEnv(penv, leaves);
      const pChanged = changedEntries(penv, p.derive.keys());
      const pName = `${vName} pass ${pi}`;
      check(
        pChanged.map((d) => d.expr),
        pe,
      );
      check(p.dispatch, pe);
      const fields = p.bindings.flatMap((b) => (b.fields ?? []).map((f) => f.value));
      check(fields, pe);
      const pOwned = new Set(pChanged.map((d) => d.name));
      const pOwner = (n: string): string => (pOwned.has(n) ? pName : vOwner(n));
      failing([...p.dispatch, ...fields], { env: pe, derives: penv, owner: pOwner }, pName);
      // A workgroup count known on this profile must be one the profile can dispatch.
      const maxWg = facts.limits.maxComputeWorkgroupsPerDimension ?? 65535;
      p.dispatch.forEach((d, i) => {
        const key = `dispatch:${d.source.where.pointer}`;
        if (seen.has(key)) return;
        const v = tryEvaluate(d.texpr, pe);
        if (typeof v !== "number" || !Number.isFinite(v) || dispatchFits(v, maxWg)) return;
        seen.add(key);
        out.push(dispatchRangeDiagnostic(kernel.spec.file, d.source, "xyz"[i]!, v, maxWg, context));
      });
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
    });
  });
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
