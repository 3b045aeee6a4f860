/**
 * Enumeration and pruning. For one kernel on one profile: every dtype assignment of the type
 * constraints × tunable combination × variant is a candidate. Build-time facts (dtypes,
 * tunables, limits, features) are folded into the conditions by partial evaluation; a candidate
 * whose conditions are false whatever the call is pruned, with the condition and values that
 * killed it. For the survivors, the specialization key of each pass — the run-time leaves its
 * template's values depend on — is computed, and the configured instances are expanded into the
 * distinct keys to build.
 */
import { deriveEnv } from "../check/check-spec.js";
import { type CExpr, type CheckedDerive, type CheckedKernel, type CheckedPass, type CheckedVariant } from "../model/checked.js";
import { leavesOf, type LeafInfo, type LeafKey } from "../check/binding-time.js";
import { isRunTimeLeaf, leafText, type TExpr, type Value } from "../model/ir.js";
import { UNKNOWN, evaluate, type PValue } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import { DeriveEnv, sharedDerives, StaticLeaves, type StaticFacts } from "./env.js";
import { candidateLimitError, checkCandidateCount, DEFAULT_MAX_CANDIDATES } from "../check/candidate-limit.js";
import { explainFalse, formatReason, showValue } from "./explain-false.js";
import { f16StorageFor, variantBindsF16, type F16Storage } from "./f16-storage.js";

/** A configured instance after its leaf names were checked: canonical leaf key → value. */
export interface ParsedInstance {
  readonly name: string;
  readonly values: ReadonlyMap<LeafKey, Value>;
}

export type CandidateStatus = "emitted" | "pruned" | "not-dispatched";

/** One enumerated candidate and what became of it (for `kernelc explain`). */
export interface Candidate {
  readonly dtypes: Readonly<Record<string, string>>;
  readonly tunables: Readonly<Record<string, number>>;
  readonly variant: string;
  readonly status: CandidateStatus;
  readonly reason?: string;
  /** For a variant that binds f16 data and is built: how the profile stores it. */
  readonly f16Storage?: F16Storage;
  /**
   * Per instance: whether this variant was built for it, and why not: "pruned" when it cannot
   * serve the instance, "skipped" when its tunable combination is not the one built.
   */
  readonly instances: readonly { readonly name: string; readonly status: "built" | "pruned" | "skipped"; readonly reason?: string }[];
}

/** One shader to build: a pass rendered for one specialization key. */
export interface ShaderRequest {
  /** The key's values, in the order of the pass's keyLeaves; null is a wildcard (a leaf the shader does not depend on for this instance). */
  readonly key: readonly (Value | null)[];
  /** The leaves pinned for rendering (the instance's values plus the key's booleans). */
  readonly pinned: ReadonlyMap<LeafKey, Value>;
  readonly instances: readonly string[];
}

export interface PassBuild {
  readonly pass: CheckedPass;
  /** The run-time leaves the template's values depend on, sorted by key. */
  readonly keyLeaves: readonly LeafInfo[];
  readonly requests: readonly ShaderRequest[];
}

export interface VariantBuild {
  readonly variant: CheckedVariant;
  readonly passes: readonly PassBuild[];
}

export interface AssignmentBuild {
  readonly facts: StaticFacts;
  /** Surviving variants in selection order: priority descending, then spec order. */
  readonly variants: readonly VariantBuild[];
}

export interface KernelProfileBuild {
  readonly kernel: CheckedKernel;
  readonly assignments: readonly AssignmentBuild[];
  readonly candidates: readonly Candidate[];
  /** Problems found while expanding instances (a template reading a value no instance gives, …). */
  readonly problems: readonly string[];
  /** Why no variant survives on this profile, when none does. */
  readonly noVariantReason?: string;
}

export interface ProfileFacts {
  readonly name: string;
  readonly limits: Readonly<Record<string, number>>;
  readonly features: ReadonlySet<string>;
}

function cartesian<T>(lists: readonly (readonly T[])[]): T[][] {
  let out: T[][] = [[]];
  for (const l of lists) out = out.flatMap((prefix) => l.map((x) => [...prefix, x]));
  return out;
}

/** Partially evaluates a condition: true, false, or UNKNOWN; an evaluation error counts as UNKNOWN. */
function partial(c: CExpr, env: DeriveEnv): PValue {
  try {
    return evaluate(c.texpr, env);
  } catch (err) {
    if (err instanceof EvalError) return UNKNOWN;
    throw err;
  }
}

/** The first condition that is definitely false, explained. */
function firstFalse(conds: readonly CExpr[], env: DeriveEnv, kernel: CheckedKernel, derives = kernel.derive): string | undefined {
  for (const c of conds) {
    if (partial(c, env) === false) {
      const r = explainFalse(c, env, derives);
      return `condition \`${c.source.text}\` can never hold: ${formatReason(r)}`;
    }
  }
  return undefined;
}

/** Selection order of variants: priority descending, then spec order. */
export function selectionOrder(variants: readonly CheckedVariant[]): CheckedVariant[] {
  return [...variants].sort((a, b) => b.priority - a.priority || a.order - b.order);
}

/** The run-time leaves a pass's template depends on: through the derive values it reads and its `$` element types. */
export function passKeyLeaves(kernel: CheckedKernel, variant: CheckedVariant, pass: CheckedPass): LeafInfo[] {
  const env = deriveEnv(kernel, variant, pass);
  const leaves = new Map<LeafKey, LeafInfo>();
  const memo = new Map();
  const add = (name: string): void => {
    const d = env.get(name);
    if (!d) return;
    for (const [k, v] of leavesOf(d.expr.texpr, env, memo)) if (v.runTime) leaves.set(k, v);
  };
  for (const n of pass.reads?.names ?? []) add(n);
  for (const b of pass.bindings) if (b.elementType && "derive" in b.elementType) add(b.elementType.derive);
  return [...leaves.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

function isBoolLeaf(l: LeafInfo): boolean {
  return l.leaf.ns === "present" || l.key.startsWith("has(");
}

/**
 * The run-time leaves that validating a call fixes, given the dtype assignment: a required tensor
 * is present, has its declared rank, and has the dtype its type parameter is assigned (a call of
 * another dtype is an invalid_call before any condition is read). The generated dispatcher folds
 * the same leaves; pruning with them drops a variant whose `when` says
 * `tensorDtypes.xT == "int32"` from the other assignments, instead of building (and validating)
 * its shaders for dtypes it can never be called with.
 */
function callFixedLeaves(kernel: CheckedKernel, dtypes: Readonly<Record<string, string>>): Map<LeafKey, Value> {
  const fixed = new Map<LeafKey, Value>();
  const inputIds = new Set(kernel.spec.inputs.map((i) => i.name));
  const tensors = [...kernel.spec.inputs, ...kernel.spec.outputs.filter((o) => !inputIds.has(o.name))];
  for (const t of tensors) {
    if (t.optional) continue;
    fixed.set(`present.${t.name}`, true);
    if (t.rank !== undefined) fixed.set(`ranks.${t.name}`, t.rank);
    if (Object.hasOwn(dtypes, t.dtype)) fixed.set(`tensorDtypes.${t.name}`, dtypes[t.dtype]!);
  }
  return fixed;
}

/** The key of a run-time leaf expression (`ranks.bT`, `attrs.mode`, `dim(shapes.xT, 1)`, `has(attrs, "k")`), or undefined. */
function runLeafKey(e: TExpr): LeafKey | undefined {
  if (e.k === "leaf") return isRunTimeLeaf(e.leaf) ? leafText(e.leaf) : undefined;
  if (e.k === "hasAttr") return `has(attrs, ${JSON.stringify(e.name)})`;
  if (e.k === "call" && e.fn === "dim" && e.args[0].k === "leaf" && e.args[0].leaf.ns === "shapes" && e.args[1].k === "const")
    return typeof e.args[1].value === "number" ? `dim(shapes.${e.args[0].leaf.name}, ${e.args[1].value})` : undefined;
  return undefined;
}

/**
 * The run-time leaves that conditions fix by themselves: a conjunct `leaf == constant` (either
 * way round), a bool leaf (`present.biasT`) or its `not`, through derive entries and `and`. Every
 * call a variant plans meets its conditions and the kernel's, so a template of the variant that
 * reads such a leaf (BiasAdd's `mode` from `ranks.bT`, in a variant for `ranks.bT == 0`) has its
 * value without an instance. A leaf given two values is left out (the conditions can never hold;
 * pruning says so).
 */
function impliedLeaves(groups: readonly (readonly [readonly TExpr[], ReadonlyMap<string, CheckedDerive>])[]): Map<LeafKey, Value> {
  const found = new Map<LeafKey, Value>();
  const clash = new Set<LeafKey>();
  const seen = new Set<string>();
  const put = (key: LeafKey, value: Value): void => {
    const had = found.get(key);
    if (had !== undefined && JSON.stringify(had) !== JSON.stringify(value)) clash.add(key);
    else found.set(key, value);
  };
  let env: ReadonlyMap<string, CheckedDerive> = new Map();
  const visit = (e: TExpr, truth: boolean): void => {
    if (e.k === "derive") {
      const d = env.get(e.name);
      if (!d || seen.has(`${e.name}:${truth}`)) return;
      seen.add(`${e.name}:${truth}`);
      visit(d.expr.texpr, truth);
      return;
    }
    if (e.k === "not") return visit(e.operand, !truth);
    if (e.k === "binary" && e.op === "and" && truth) {
      visit(e.left, true);
      visit(e.right, true);
      return;
    }
    if (e.k === "binary" && e.op === "==" && truth) {
      const [leaf, other] = runLeafKey(e.left) !== undefined ? [e.left, e.right] : [e.right, e.left];
      const key = runLeafKey(leaf);
      if (key !== undefined && other.k === "const" && (typeof other.value !== "object" || other.value === null)) put(key, other.value);
      return;
    }
    const key = runLeafKey(e);
    if (key !== undefined && e.type.k === "bool") put(key, truth);
  };
  for (const [conds, derives] of groups) {
    env = derives;
    seen.clear();
    for (const c of conds) visit(c, true);
  }
  for (const k of clash) found.delete(k);
  return found;
}

/** The name of the one instance a kernel without configured instances is built for (nothing pinned). */
export const IMPLICIT_INSTANCE = "(no instance)";

/** Enumerates, prunes and expands one kernel on one profile. */
export function enumerateKernel(
  kernel: CheckedKernel,
  profile: ProfileFacts,
  pinnedTunables: Readonly<Record<string, number>>,
  instances: readonly ParsedInstance[],
  maxCandidates = DEFAULT_MAX_CANDIDATES,
): KernelProfileBuild {
  const spec = kernel.spec;
  checkCandidateCount(kernel, profile.name, pinnedTunables, maxCandidates);
  const assignments = cartesian(spec.typeConstraints.map((tc) => tc.types.map((t) => [tc.name, t] as const))).map(
    (pairs) => Object.fromEntries(pairs) as Record<string, string>,
  );
  const tunableChoices = spec.tunables.map((t) => {
    const pin = Object.prototype.hasOwnProperty.call(pinnedTunables, t.name) ? pinnedTunables[t.name] : undefined;
    if (pin !== undefined) return [[t.name, pin] as const];
    const vals = [t.default, ...(t.values ?? []).filter((v) => v !== t.default)];
    return vals.map((v) => [t.name, v] as const);
  });
  const combos = cartesian(tunableChoices).map((pairs) => Object.fromEntries(pairs) as Record<string, number>);
  const candidates: Candidate[] = [];
  const builds: AssignmentBuild[] = [];
  const problems: string[] = [];
  const ordered = selectionOrder(kernel.variants);
  const missingFeatures = new Set<string>();
  const kernelReasons: string[] = [];

  for (const dtypes of assignments) {
    let chosen: AssignmentBuild | undefined;
    const fixed = callFixedLeaves(kernel, dtypes);
    for (const tunables of combos) {
      const facts: StaticFacts = { dtypes, tunables, limits: profile.limits, features: profile.features };
      const topEnv = new DeriveEnv(kernel.derive, new StaticLeaves(facts, fixed));
      const kernelDead = firstFalse(kernel.when, topEnv, kernel);
      const survivors: VariantBuild[] = [];
      // The kernel's conditions with an instance's values pinned, shared by the variants of these facts.
      const kernelDeadPinned = new Map<string, string | undefined>();
      for (const v of ordered) {
        const record = (status: CandidateStatus, reason?: string, inst: Candidate["instances"] = [], f16Storage?: F16Storage): void => {
          candidates.push({ dtypes, tunables, variant: v.id, status, reason, ...(f16Storage ? { f16Storage } : {}), instances: inst });
        };
        if (kernelDead) {
          kernelReasons.push(kernelDead);
          record("pruned", `kernel ${kernelDead}`);
          continue;
        }
        const lacking = v.features.filter((f) => !profile.features.has(f));
        if (lacking.length) {
          for (const f of lacking) missingFeatures.add(f);
          record(
            "pruned",
            `requires feature${lacking.length > 1 ? "s" : ""} ${lacking.map((f) => `\`${f}\``).join(", ")}, which profile ${profile.name} does not have`,
          );
          continue;
        }
        const derives = deriveEnv(kernel, v);
        const venv = new DeriveEnv(derives, new StaticLeaves(facts, fixed));
        const dead = firstFalse(v.when, venv, kernel, derives);
        if (dead) {
          record("pruned", dead);
          continue;
        }
        if (chosen) {
          // Tunable combinations are an ordered fallback: only the first one where a variant survives is built.
          const skipped = instances.map((i) => ({ name: i.name, status: "skipped" as const }));
          record(
            "not-dispatched",
            `not built: ${describeTunables(chosen.facts.tunables)} comes earlier in the order of tunable values and a variant survives there`,
            skipped,
          );
          continue;
        }
        const expanded = expandInstances(kernel, v, facts, instances, problems, profile.name, maxCandidates, kernelDeadPinned);
        survivors.push(expanded.build);
        const storage = variantBindsF16(kernel, v, facts) ? f16StorageFor(profile.features) : undefined;
        record("emitted", undefined, expanded.report, storage);
      }
      if (!chosen && survivors.length > 0) {
        chosen = { facts, variants: survivors };
        builds.push(chosen);
      }
    }
  }
  let noVariantReason: string | undefined;
  if (builds.length === 0) {
    // Worded without the profile's name, so that the same reason on several profiles is reported once.
    if (missingFeatures.size)
      noVariantReason = `every variant needs ${[...missingFeatures].map((f) => `\`${f}\``).join(", ")}, which the profile lacks`;
    else if (kernelReasons.length) noVariantReason = `the kernel's ${kernelReasons[0]}`;
    else noVariantReason = "every variant's conditions are false on the profile";
  }
  return { kernel, assignments: builds, candidates, problems, noVariantReason };
}

/** Expands the instances for one surviving variant into shader requests per pass. */
function expandInstances(
  kernel: CheckedKernel,
  v: CheckedVariant,
  facts: StaticFacts,
  instances: readonly ParsedInstance[],
  problems: string[],
  profileName: string,
  maxCandidates: number,
  /** The first false kernel condition under `facts` by the pinned leaves (their sorted entries), kept across the variants. */
  kernelDead: Map<string, string | undefined>,
): { build: VariantBuild; report: Candidate["instances"] } {
  const passKeys = v.passes.map((p) => passKeyLeaves(kernel, v, p));
  const union = new Map<LeafKey, LeafInfo>();
  for (const ks of passKeys) for (const l of ks) union.set(l.key, l);
  const requests = v.passes.map(() => new Map<string, { key: (Value | null)[]; pinned: Map<LeafKey, Value>; instances: string[] }>());
  const report: { name: string; status: "built" | "pruned"; reason?: string }[] = [];
  const derives = deriveEnv(kernel, v);
  const passDerives = v.passes.map((p) => deriveEnv(kernel, v, p));
  // The leaves each entry of each derive table reads, for sharing values between the combinations
  // of an instance's unfixed booleans: an entry that reads none of them has one value for all.
  // (Computed for the entries evaluated, once per table.)
  const tables = [kernel.derive, derives, ...passDerives];
  const reads = tables.map((table) => {
    const memo = new Map<string, ReadonlyMap<LeafKey, LeafInfo>>();
    const byName = new Map<string, ReadonlyMap<LeafKey, LeafInfo>>();
    return (name: string): ReadonlyMap<LeafKey, LeafInfo> => {
      let keys = byName.get(name);
      if (keys === undefined) byName.set(name, (keys = leavesOf(table.get(name)!.expr.texpr, table, memo)));
      return keys;
    };
  });
  // What every valid call of this assignment has (a required tensor's presence, rank and dtype):
  // known for every instance, so a template may read a value computed from it (`isInt` of
  // `tensorDtypes.xT == "int32"`) without an instance pinning it.
  const fixed = callFixedLeaves(kernel, facts.dtypes);
  // What the variant's and the kernel's conditions fix for every call the variant plans; an
  // instance's own value comes first (one that contradicts the conditions prunes the variant).
  const implied = impliedLeaves([
    [kernel.when.map((c) => c.texpr), kernel.derive],
    [v.when.map((c) => c.texpr), derives],
  ]);
  for (const inst of instances) {
    const free = [...union.values()].filter((l) => !inst.values.has(l.key) && !fixed.has(l.key) && !implied.has(l.key) && isBoolLeaf(l));
    const [topShared, variantShared, ...passShared] = reads.map((readsOf, i) =>
      sharedDerives((name) => tables[i].has(name) && !free.some((l) => readsOf(name).has(l.key))),
    );
    if (2 ** free.length > maxCandidates)
      throw candidateLimitError(
        kernel,
        `on profile ${profileName}`,
        maxCandidates,
        free.map((l) => ({ what: `\`${l.key}\` (true or false, not fixed by instance \`${inst.name}\`)`, count: 2 })),
        `the combinations of run-time booleans the templates of variant \`${v.id}\` depend on`,
      );
    let built = false;
    const reasons: string[] = [];
    for (const bits of cartesian(free.map(() => [false, true]))) {
      const pinned = new Map<LeafKey, Value>([...implied, ...inst.values, ...fixed]);
      free.forEach((l, i) => pinned.set(l.key, bits[i]));
      const combo = free.length ? `with ${free.map((l, i) => `${l.key}=${bits[i]}`).join(", ")}: ` : "";
      const leaves = new StaticLeaves(facts, pinned);
      // The kernel's conditions read leaves, not the variant: the same pinned values give the same answer.
      const pinKey = JSON.stringify([...pinned].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      if (!kernelDead.has(pinKey)) kernelDead.set(pinKey, firstFalse(kernel.when, new DeriveEnv(kernel.derive, leaves, topShared), kernel));
      const venv = new DeriveEnv(derives, leaves, variantShared);
      const dead = kernelDead.get(pinKey) ?? firstFalse(v.when, venv, kernel, derives);
      if (dead) {
        reasons.push(combo + dead);
        continue;
      }
      // Every value the templates read must be known from the instance. A key leaf the instance
      // does not give is a wildcard in the shader's key, sound only when nothing read needs it.
      const unknownReads: string[] = [];
      v.passes.forEach((p, pi) => {
        const penv = new DeriveEnv(passDerives[pi], leaves, passShared[pi]);
        const names = [...(p.reads?.names ?? [])].filter((n) => penv.has(n));
        for (const b of p.bindings) if (b.elementType && "derive" in b.elementType) names.push(b.elementType.derive);
        for (const n of names) {
          let val: PValue;
          let failure: string | undefined;
          try {
            val = penv.derive(n);
          } catch (err) {
            if (!(err instanceof EvalError)) throw err;
            // The template may not use the value in this combination; it is not built, and the reason says why.
            val = UNKNOWN;
            failure = err.message;
          }
          if (val === UNKNOWN) {
            const needs = passKeys[v.passes.indexOf(p)].filter((l) => !pinned.has(l.key)).map((l) => `\`${l.key}\``);
            const why =
              failure !== undefined ? `; evaluating it fails: ${failure}` : needs.length ? `; it depends on ${needs.join(", ")}` : "";
            unknownReads.push(`\`${n}\` (template of pass \`${p.id}\`${why})`);
          }
        }
      });
      if (unknownReads.length) {
        reasons.push(
          `${combo}${inst.name === IMPLICIT_INSTANCE ? "a build without instances" : `instance \`${inst.name}\``} does not fix ${[...new Set(unknownReads)].join(", ")}, which the templates of variant \`${v.id}\` read`,
        );
        continue;
      }
      built = true;
      v.passes.forEach((p, i) => {
        const key = passKeys[i].map((l) => (pinned.has(l.key) ? pinned.get(l.key)! : null));
        const k = JSON.stringify(key);
        const entry = requests[i].get(k);
        if (entry) {
          if (!entry.instances.includes(inst.name)) entry.instances.push(inst.name);
        } else {
          requests[i].set(k, { key, pinned, instances: [inst.name] });
        }
      });
    }
    const unfixed = reasons.find((r) => r.includes("does not fix"));
    if (!built && unfixed) problems.push(unfixed);
    report.push(built ? { name: inst.name, status: "built" } : { name: inst.name, status: "pruned", reason: reasons.join("; ") });
  }
  return {
    build: {
      variant: v,
      passes: v.passes.map((p, i) => ({
        pass: p,
        keyLeaves: passKeys[i],
        requests: [...requests[i].entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r),
      })),
    },
    report,
  };
}

/** "WG=256, SPLITS=4" (or "the defaults" when there are no tunables). */
function describeTunables(tunables: Readonly<Record<string, number>>): string {
  const parts = Object.entries(tunables).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(", ") : "the defaults";
}

/** Describes a key as `leaf=value, …` for messages. */
export function describeKey(leaves: readonly LeafInfo[], key: readonly Value[]): string {
  return leaves.map((l, i) => `${l.key}=${showValue(key[i])}`).join(", ");
}
