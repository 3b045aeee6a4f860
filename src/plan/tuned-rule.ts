/**
 * Per-call tuned choices. When `kernelc tune` finds that the fastest setting of some tunables
 * depends on the call (split counts by batch size, say), it records a rule instead of one pin: the
 * calls ordered by a key (a top-level derive entry of the kernel that the config's
 * `tune.<kernel>.by` names) and cut into ranges, each with its own values:
 *
 *   SPLIT_TARGET_WORKGROUPS = 1024 if key <= 64 else 4096
 *
 * The build folds such a rule into the kernel: every read of a ruled tunable becomes that
 * conditional expression over the key, so the generated dispatcher (and the interpreter, which
 * reads the same checked kernel) chooses the value per call, as plain code. Only tunables that
 * reach no shader text can be ruled: a tunable a template reads (directly or through derive
 * entries, element types included) changes the WGSL, which is built once per profile.
 */
import type { CheckedDerive, CheckedKernel, CheckedPass, CheckedVariant, CExpr } from "../model/checked.js";
import type { TExpr } from "../model/ir.js";
import { BOOL, INT } from "../model/types.js";
import { leavesOf, type LeafInfo, type LeafKey } from "../check/binding-time.js";
import { deriveEnv } from "../check/check-spec.js";

/** One range of a rule: calls whose key is at most `upTo` (the last range has none) get `pins`. */
export interface TunedCase {
  readonly upTo?: number;
  readonly pins: Readonly<Record<string, number>>;
}

/** A per-call rule: the key (a top-level derive entry) and its ranges, in increasing order. */
export interface TunedRule {
  readonly by: string;
  readonly cases: readonly TunedCase[];
}

/** Why a rule cannot be applied to a kernel, with a hint. */
export interface RuleProblem {
  readonly message: string;
  readonly hint: string;
}

const NOWHERE = { start: 0, end: 0 };

/** The tunables a rule sets (those of its first case; every case sets the same ones). */
export function ruleTunables(rule: TunedRule): string[] {
  return Object.keys(rule.cases[0]?.pins ?? {}).sort();
}

/** Checks a rule against a kernel; undefined when it can be applied. */
export function ruleProblem(k: CheckedKernel, rule: TunedRule): RuleProblem | undefined {
  const names = ruleTunables(rule);
  if (rule.cases.length < 2)
    return { message: "a per-call rule needs at least two ranges", hint: "re-run `kernelc tune`, or pin the tunables instead" };
  for (const [i, c] of rule.cases.entries()) {
    const keys = Object.keys(c.pins).sort();
    if (keys.join() !== names.join())
      return {
        message: `range ${i + 1} of the rule sets ${keys.join(", ")}, not ${names.join(", ")}`,
        hint: "every range sets the same tunables",
      };
    const last = i === rule.cases.length - 1;
    if (last !== (c.upTo === undefined))
      return { message: "every range but the last has an upper bound `upTo`, and the last has none", hint: "re-run `kernelc tune`" };
    const prev = i > 0 ? rule.cases[i - 1]!.upTo : undefined;
    if (c.upTo !== undefined && prev !== undefined && !(c.upTo > prev))
      return { message: `the ranges' bounds must increase (${prev}, then ${c.upTo})`, hint: "re-run `kernelc tune`" };
  }
  const declared = new Set(k.spec.tunables.map((t) => t.name));
  for (const n of names)
    if (!declared.has(n))
      return { message: `\`${n}\` is not a tunable of ${k.spec.name}`, hint: "re-run `kernelc tune` after renaming tunables" };
  const key = k.derive.get(rule.by);
  if (!key)
    return {
      message: `the rule's key \`${rule.by}\` is not a top-level derive entry of ${k.spec.name}`,
      hint: `name one of ${[...k.derive.keys()].slice(0, 6).join(", ")}, … in tune.${k.spec.name}.by`,
    };
  if (key.type.k !== "int" && key.type.k !== "number" && key.type.k !== "float")
    return { message: `the rule's key \`${rule.by}\` is a ${key.type.k}, not a number`, hint: "key the rule on a numeric derive entry" };
  for (const v of k.variants) {
    const shadows = v.derive.has(rule.by) ? v.id : v.passes.find((p) => p.derive.has(rule.by))?.id;
    if (shadows)
      return {
        message: `the rule's key \`${rule.by}\` is redefined by ${v.derive.has(rule.by) ? `variant ${v.id}` : `pass ${shadows} of variant ${v.id}`}`,
        hint: "key the rule on a derive entry no variant or pass redefines",
      };
  }
  const keyTunables = tunablesReached(k.derive, [rule.by]);
  const inKey = names.filter((n) => keyTunables.has(n));
  if (inKey.length)
    return {
      message: `the rule's key \`${rule.by}\` depends on ${inKey.join(", ")}, which the rule sets`,
      hint: "key the rule on call values",
    };
  const shaping = shaderShaping(k, names);
  if (shaping)
    return {
      message: `${shaping.names.join(", ")} shape${shaping.names.length === 1 ? "s" : ""} the shader of pass ${shaping.pass} (variant ${shaping.variant}), so it cannot change per call`,
      hint: `leave ${shaping.names.join(", ")} out of tune.${k.spec.name}.tunables when tuning with \`by\`, or pin it`,
    };
  return undefined;
}

/**
 * Which of `names` reach shader text (a template reads them, directly or through derive entries,
 * element types included): the first pass where some do, with those names; undefined when none do.
 */
function shaderShaping(k: CheckedKernel, names: readonly string[]): { names: string[]; pass: string; variant: string } | undefined {
  for (const v of k.variants)
    for (const p of v.passes) {
      const env = deriveEnv(k, v, p);
      const roots = [...(p.reads?.names ?? [])].filter((n) => env.has(n));
      for (const b of p.bindings) if (b.elementType && "derive" in b.elementType) roots.push(b.elementType.derive);
      const reached = tunablesReached(env, roots);
      for (const t of p.reads?.tunables ?? []) reached.add(t);
      const found = names.filter((n) => reached.has(n));
      if (found.length) return { names: found, pass: p.id, variant: v.id };
    }
  return undefined;
}

/** The subset of `names` that reach the shader text of some pass of the kernel (those a per-call rule cannot set). */
export function shaderTunables(k: CheckedKernel, names: readonly string[]): Set<string> {
  const out = new Set<string>();
  let rest = [...names];
  for (let found = shaderShaping(k, rest); found; found = shaderShaping(k, rest)) {
    for (const n of found.names) out.add(n);
    rest = rest.filter((n) => !out.has(n));
  }
  return out;
}

/** The tunables that the derive entries `roots` read, directly or through other entries. */
function tunablesReached(env: ReadonlyMap<string, CheckedDerive>, roots: readonly string[]): Set<string> {
  const found = new Set<string>();
  const memo = new Map<string, ReadonlyMap<LeafKey, LeafInfo>>();
  for (const name of roots) {
    const d = env.get(name);
    if (!d) continue;
    for (const info of leavesOf(d.expr.texpr, env, memo).values()) if (info.leaf.ns === "tunables") found.add(info.leaf.name);
  }
  return found;
}

/** `v1 if key <= t1 else (v2 if key <= t2 else v3)` for one tunable of a rule. */
export function ruleExpr(rule: TunedRule, tunable: string, keyType: TExpr["type"]): TExpr {
  const key: TExpr = { k: "derive", name: rule.by, type: keyType, span: NOWHERE };
  const values = new Set(rule.cases.map((c) => c.pins[tunable]));
  if (values.size === 1) return { k: "const", value: rule.cases[0]!.pins[tunable]!, type: INT, span: NOWHERE };
  let out: TExpr = { k: "const", value: rule.cases[rule.cases.length - 1]!.pins[tunable]!, type: INT, span: NOWHERE };
  for (let i = rule.cases.length - 2; i >= 0; i--) {
    const c = rule.cases[i]!;
    out = {
      k: "cond",
      cond: {
        k: "binary",
        op: "<=",
        left: key,
        right: { k: "const", value: c.upTo!, type: INT, span: NOWHERE },
        type: BOOL,
        span: NOWHERE,
      },
      then: { k: "const", value: c.pins[tunable]!, type: INT, span: NOWHERE },
      otherwise: out,
      type: INT,
      span: NOWHERE,
    };
  }
  return out;
}

/** The source text of a rule for one tunable, as explain shows it. */
export function ruleText(rule: TunedRule, tunable: string): string {
  if (new Set(rule.cases.map((c) => c.pins[tunable])).size === 1) return `${rule.cases[0]!.pins[tunable]} (in every range)`;
  const parts = rule.cases.map((c) =>
    c.upTo === undefined ? `${c.pins[tunable]}` : `${c.pins[tunable]} if ${rule.by} <= ${c.upTo} else `,
  );
  return parts.join("");
}

/**
 * The kernel with every read of the rule's tunables replaced by the rule's expression, and those
 * tunables no longer declared (so enumeration does not iterate their values). Call ruleProblem first.
 */
export function applyRule(k: CheckedKernel, rule: TunedRule): CheckedKernel {
  const names = new Set(ruleTunables(rule));
  const keyType = k.derive.get(rule.by)!.type;
  const replacement = new Map([...names].map((n) => [n, ruleExpr(rule, n, keyType)]));
  const sub = (x: TExpr): TExpr => {
    switch (x.k) {
      case "leaf":
        return x.leaf.ns === "tunables" && replacement.has(x.leaf.name) ? replacement.get(x.leaf.name)! : x;
      case "call":
        return { ...x, args: x.args.map(sub) };
      case "neg":
      case "not":
        return { ...x, operand: sub(x.operand) };
      case "binary":
        return { ...x, left: sub(x.left), right: sub(x.right) };
      case "cond":
        return { ...x, cond: sub(x.cond), then: sub(x.then), otherwise: sub(x.otherwise) };
      case "list":
        return { ...x, items: x.items.map(sub) };
      default:
        return x;
    }
  };
  const cexpr = (c: CExpr): CExpr => ({ ...c, texpr: sub(c.texpr) });
  const derives = (m: ReadonlyMap<string, CheckedDerive>): ReadonlyMap<string, CheckedDerive> =>
    new Map(
      [...m].map(([name, d]) => {
        const texpr = sub(d.expr.texpr);
        const reads = texpr === d.expr.texpr ? d.reads : new Set([...d.reads, rule.by]);
        return [name, { ...d, expr: { ...d.expr, texpr }, reads }];
      }),
    );
  const pass = (p: CheckedPass): CheckedPass => ({
    ...p,
    derive: derives(p.derive),
    bindings: p.bindings.map((b) => (b.fields ? { ...b, fields: b.fields.map((f) => ({ ...f, value: cexpr(f.value) })) } : b)),
    dispatch: [cexpr(p.dispatch[0]), cexpr(p.dispatch[1]), cexpr(p.dispatch[2])],
  });
  const variant = (v: CheckedVariant): CheckedVariant => ({
    ...v,
    when: v.when.map(cexpr),
    derive: derives(v.derive),
    intermediates: v.intermediates.map((i) => ({ ...i, shape: cexpr(i.shape) })),
    passes: v.passes.map(pass),
  });
  return {
    ...k,
    spec: { ...k.spec, tunables: k.spec.tunables.filter((t) => !names.has(t.name)) },
    derive: derives(k.derive),
    when: k.when.map(cexpr),
    outputShapes: new Map([...k.outputShapes].map(([id, c]) => [id, cexpr(c)])),
    variants: k.variants.map(variant),
  };
}

/** One measured candidate: its pins and its time on each call (in the order of the calls). */
export interface MeasuredCandidate {
  readonly pins: Readonly<Record<string, number>>;
  readonly ms: readonly number[];
}

/** A range the tuner found: the calls in it (indices), its winner, and its upper bound. */
export interface FoundRange {
  readonly calls: readonly number[];
  readonly winner: number;
  readonly upTo?: number;
}

/** The geometric mean of positive times (how the tuner scores a candidate over calls). */
export function geomean(xs: readonly number[]): number {
  return Math.exp(xs.reduce((a, x) => a + Math.log(Math.max(x, 1e-9)), 0) / xs.length);
}

/**
 * Cuts the calls, ordered by their key, into ranges with one winning candidate each. Calls are
 * added to the current range while one candidate stays within `tolerance` (e.g. 0.02 = 2%) of the
 * best time of every call in it; then a new range starts. Calls with equal keys always share a
 * range. A range's bound is the largest key in it (the last range has none). Returns one range when
 * one candidate serves every call within the tolerance.
 */
export function findRanges(keys: readonly number[], table: readonly MeasuredCandidate[], tolerance: number): FoundRange[] {
  const order = keys.map((_, i) => i).sort((a, b) => keys[a]! - keys[b]! || a - b);
  // Groups of calls with the same key.
  const groups: number[][] = [];
  for (const i of order) {
    const last = groups[groups.length - 1];
    if (last && keys[last[0]!] === keys[i]) last.push(i);
    else groups.push([i]);
  }
  const best = keys.map((_, c) => Math.min(...table.map((t) => t.ms[c]!)));
  /** The candidate with the best geomean among those within tolerance on every call of `calls`, or -1. */
  const winnerOf = (calls: readonly number[]): number => {
    let win = -1;
    let winScore = Infinity;
    for (const [i, t] of table.entries()) {
      if (!calls.every((c) => t.ms[c]! <= best[c]! * (1 + tolerance))) continue;
      const s = geomean(calls.map((c) => t.ms[c]!));
      if (s < winScore) [win, winScore] = [i, s];
    }
    return win;
  };
  const ranges: { calls: number[]; winner: number }[] = [];
  for (const g of groups) {
    const cur = ranges[ranges.length - 1];
    const joined = cur ? winnerOf([...cur.calls, ...g]) : -1;
    if (cur && joined >= 0) {
      cur.calls.push(...g);
      cur.winner = joined;
    } else {
      const own = winnerOf(g);
      // Calls of one key that no single candidate serves within tolerance: the best geomean.
      ranges.push({ calls: [...g], winner: own >= 0 ? own : bestGeomean(table, g) });
    }
  }
  // Neighbouring ranges with the same winner (possible after a fallback) are one range.
  const merged: { calls: number[]; winner: number }[] = [];
  for (const r of ranges) {
    const last = merged[merged.length - 1];
    if (last && samePins(table[last.winner]!.pins, table[r.winner]!.pins)) last.calls.push(...r.calls);
    else merged.push(r);
  }
  return merged.map((r, i) => ({
    calls: r.calls,
    winner: r.winner,
    ...(i < merged.length - 1 ? { upTo: Math.max(...r.calls.map((c) => keys[c]!)) } : {}),
  }));
}

function bestGeomean(table: readonly MeasuredCandidate[], calls: readonly number[]): number {
  let win = 0;
  let winScore = Infinity;
  for (const [i, t] of table.entries()) {
    const s = geomean(calls.map((c) => t.ms[c]!));
    if (s < winScore) [win, winScore] = [i, s];
  }
  return win;
}

function samePins(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const ka = Object.keys(a).sort();
  return ka.join() === Object.keys(b).sort().join() && ka.every((k) => a[k] === b[k]);
}
