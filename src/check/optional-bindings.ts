/**
 * Optional inputs and outputs that a pass binds without its variant requiring them. A plan binds every
 * binding of every pass of the variant it picks, so a call that omits an optional input reaching a
 * variant that binds it fails at plan time (`binding … needs tensor …, which the call omits`). The
 * spec says when a variant applies in its `when` conditions: a variant that binds an optional input
 * should have a condition that is false whenever the input is absent (`present.<id>`, or an `and`
 * of it with anything). This is checked by a three-valued evaluation of the kernel's and the
 * variant's conditions with `present.<id>` false and every other leaf unknown.
 */
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import type { CheckedDerive, CheckedKernel, CheckedVariant } from "../model/checked.js";
import { exprStructure, subExpressions, type TExpr } from "../model/ir.js";
import { whereLocation } from "./locate.js";

/** A truth value that may be unknown. */
type Truth = boolean | undefined;

/** What an evaluation knows: one tensor's presence, the derive entries, and truths assumed for some tests. */
interface Known {
  /** The tensor whose `present.<id>` is known. */
  readonly tensor: string;
  /** Its `present.<id>`: false when asking what an absent input implies, true for a present output. */
  readonly present: boolean;
  readonly env: ReadonlyMap<string, CheckedDerive>;
  /** Assumed truths of `cond` tests, by exprStructure. */
  readonly assume: ReadonlyMap<string, boolean>;
}

/**
 * The truth of a boolean expression when `present.<tensor>` is known, the assumed tests have their
 * assumed truth and every other leaf is unknown; derive entries are read through the environment
 * (each at most once on a path: a cycle, reported elsewhere, is unknown).
 */
function truthOf(e: TExpr, known: Known, seen: Set<string> = new Set()): Truth {
  if (known.assume.size > 0) {
    const assumed = known.assume.get(exprStructure(e));
    if (assumed !== undefined) return assumed;
  }
  switch (e.k) {
    case "const":
      return typeof e.value === "boolean" ? e.value : undefined;
    case "leaf":
      return e.leaf.ns === "present" && e.leaf.name === known.tensor ? known.present : undefined;
    case "derive": {
      const d = known.env.get(e.name);
      if (!d || seen.has(e.name)) return undefined;
      seen.add(e.name);
      const t = truthOf(d.expr.texpr, known, seen);
      seen.delete(e.name);
      return t;
    }
    case "not": {
      const t = truthOf(e.operand, known, seen);
      return t === undefined ? undefined : !t;
    }
    case "binary": {
      if (e.op !== "and" && e.op !== "or") return undefined;
      const l = truthOf(e.left, known, seen);
      const r = truthOf(e.right, known, seen);
      if (e.op === "and") return l === false || r === false ? false : l === true && r === true ? true : undefined;
      return l === true || r === true ? true : l === false && r === false ? false : undefined;
    }
    case "cond": {
      const c = truthOf(e.cond, known, seen);
      const a = truthOf(e.then, known, seen);
      const b = truthOf(e.otherwise, known, seen);
      if (c !== undefined) return c ? a : b;
      return a === b ? a : undefined;
    }
    default:
      return undefined;
  }
}

/** The tests of the `a if test else b` expressions that `roots` reach (through derive entries), by key. */
function condTests(roots: readonly TExpr[], env: ReadonlyMap<string, CheckedDerive>): Map<string, TExpr> {
  const tests = new Map<string, TExpr>();
  const seen = new Set<string>();
  const visit = (e: TExpr): void => {
    switch (e.k) {
      case "derive": {
        const d = env.get(e.name);
        if (d && !seen.has(e.name)) {
          seen.add(e.name);
          visit(d.expr.texpr);
        }
        return;
      }
      case "cond":
        tests.set(exprStructure(e.cond), e.cond);
        subExpressions(e).forEach(visit);
        return;
      default:
        subExpressions(e).forEach(visit);
        return;
    }
  };
  roots.forEach(visit);
  return tests;
}

/** At most this many conditional tests are split on (2^n evaluations); with more, a variant counts as guarded. */
const MAX_SPLIT_TESTS = 8;

/** A variant's derive environment (the kernel's entries, then the variant's). */
export type VariantEnv = (variant: CheckedVariant) => ReadonlyMap<string, CheckedDerive>;

/**
 * Whether, whenever tensor `id` is absent (present = false; or present, for present = true), some
 * condition of the kernel or the variant is false: in every case of the conditional tests the
 * conditions reach (each test true or false), one condition evaluates to false. Tests that are not
 * independent can only make this say "not excluded" where it is; more tests than MAX_SPLIT_TESTS
 * count as excluded (no warning).
 */
function excludes(kernel: CheckedKernel, variant: CheckedVariant, id: string, present: boolean, envOf: VariantEnv): boolean {
  const env = envOf(variant);
  const conditions = [...kernel.when, ...variant.when].map((c) => c.texpr);
  // Tests the tensor's presence already decides (`present.<id>` itself) are not split on.
  const unassumed: Known = { tensor: id, present, env, assume: new Map() };
  const tests = [...condTests(conditions, env)].filter(([, e]) => truthOf(e, unassumed) === undefined).map(([k]) => k);
  if (tests.length > MAX_SPLIT_TESTS) return true;
  for (let mask = 0; mask < 1 << tests.length; mask++) {
    const assume = new Map(tests.map((t, i) => [t, ((mask >> i) & 1) === 1]));
    const known: Known = { tensor: id, present, env, assume };
    if (!conditions.some((c) => truthOf(c, known) === false)) return false;
  }
  return true;
}

/** Whether the variant's or kernel's conditions are false whenever tensor `id` is present: no call the variant plans gives it. */
export function excludesPresent(kernel: CheckedKernel, variant: CheckedVariant, id: string, envOf: VariantEnv): boolean {
  return excludes(kernel, variant, id, true, envOf);
}

/** Whether the variant's or kernel's conditions are false whenever tensor `id` is absent: the variant requires it. */
function requires(kernel: CheckedKernel, variant: CheckedVariant, id: string, envOf: VariantEnv): boolean {
  return excludes(kernel, variant, id, false, envOf);
}

/**
 * `binding_optional_unguarded` warnings: each (variant, optional input or output) once, at the first
 * pass that binds it. An optional output fails the same way as an input: a call that leaves it out
 * has no buffer for the binding. An id that is both an input and an output is an input.
 */
export function optionalBindingWarnings(kernel: CheckedKernel, file: string, envOf: VariantEnv): Diagnostic[] {
  const inputIds = new Set(kernel.spec.inputs.map((i) => i.name));
  const optional = new Map<string, "input" | "output">();
  for (const i of kernel.spec.inputs) if (i.optional) optional.set(i.name, "input");
  for (const o of kernel.spec.outputs) if (o.optional && !inputIds.has(o.name)) optional.set(o.name, "output");
  const out: Diagnostic[] = [];
  for (const variant of kernel.variants) {
    const reported = new Set<string>();
    for (const pass of variant.passes) {
      for (const b of pass.bindings) {
        const id = b.ref;
        if (b.kind !== "arg" || id === undefined || reported.has(id)) continue;
        const what = optional.get(id);
        if (what === undefined || (what === "input") !== (b.refIsInput === true)) continue;
        reported.add(id);
        if (requires(kernel, variant, id, envOf)) continue;
        out.push(
          makeDiagnostic(
            "binding_optional_unguarded",
            `pass \`${pass.id}\` of variant \`${variant.id}\` binds optional ${what} \`${id}\` (binding \`${b.name}\`), but no \`when\` condition of the variant or the kernel requires it: a call without \`${id}\` that reaches this variant fails at plan time ("binding \`${b.name}\` needs tensor \`${id}\`, which the call omits")`,
            whereLocation(file, pass.where),
            {
              hint: `add \`"present.${id}"\` to the variant's \`when\` (and a variant without this binding for calls that omit it), or make \`${id}\` a required ${what}`,
            },
          ),
        );
      }
    }
  }
  return out;
}

/**
 * `output_unbound` warnings: a variant none of whose passes binds an output, so a call it plans
 * leaves that output's buffer as it was. An output that is also an input (in place) is bound as
 * the input. An optional output may be left unbound by a variant whose conditions are false
 * whenever the call gives it (`not present.<id>`). Each (variant, output) once, at the variant.
 */
export function unboundOutputWarnings(kernel: CheckedKernel, file: string, envOf: VariantEnv): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const variant of kernel.variants) {
    const bound = new Set<string>();
    for (const pass of variant.passes) for (const b of pass.bindings) if (b.kind === "arg" && b.ref !== undefined) bound.add(b.ref);
    for (const o of kernel.spec.outputs) {
      if (bound.has(o.name)) continue;
      if (o.optional && excludesPresent(kernel, variant, o.name, envOf)) continue;
      out.push(
        makeDiagnostic(
          "output_unbound",
          `variant \`${variant.id}\` never binds output \`${o.name}\`: no pass of the variant has a binding with \`"arg": "${o.name}"\`, so a call it plans leaves \`${o.name}\` unwritten`,
          whereLocation(file, variant.where),
          {
            hint: o.optional
              ? `bind \`${o.name}\` in a pass of the variant that writes it, or add \`"not present.${o.name}"\` to the variant's \`when\` so that calls giving it pick another variant`
              : `bind \`${o.name}\` in a pass of the variant that writes it (a binding \`{ "arg": "${o.name}" }\` listed in the pass's \`bindings\`)`,
          },
        ),
      );
    }
  }
  return out;
}
