/**
 * Declared but unused: the attributes, derive entries, tunables and intermediates of a checked
 * kernel that nothing the kernel runs reads. A derive entry is used when some place the build or
 * the dispatcher evaluates reads it, directly or through other entries that are used: a `when`
 * condition, an output shape, an intermediate's shape, a binding (a uniform field, a `$name`
 * element type), a dispatch size, a pass's template, the spec's `explain` list, or a per-call tune
 * rule's key. Each is read in the derive environment it is evaluated in (the kernel's for its
 * conditions and output shapes, a variant's for its conditions and intermediates, a pass's for the
 * rest), so an entry read only by unused entries is unused; one that every reader overrides is a
 * default, and counts as used.
 *
 * Why silence wins: the warnings are given only when every template's reads are known. A template
 * that includes one by an expression hides what it reads (no warning of the kernel), and one that
 * uses `tunables` other than as `tunables.X` may read any tunable (no tunable warning).
 */
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import type { CExpr, CheckedDerive, CheckedKernel, CheckedPass, CheckedVariant } from "../model/checked.js";
import { subExpressions, type TExpr } from "../model/ir.js";
import { whereLocation } from "./locate.js";

/** What an expression reads: derive entries, attributes (`attrs.x`, `has(attrs, "x")`) and tunables. */
interface Reads {
  readonly derives: Set<string>;
  readonly attrs: Set<string>;
  readonly tunables: Set<string>;
}

/** Adds what `e` reads to `into`. */
function readsOf(e: TExpr, into: Reads): void {
  const stack: TExpr[] = [e];
  while (stack.length > 0) {
    const x = stack.pop()!;
    if (x.k === "derive") into.derives.add(x.name);
    else if (x.k === "hasAttr") into.attrs.add(x.name);
    else if (x.k === "leaf" && x.leaf.ns === "attrs") into.attrs.add(x.leaf.name);
    else if (x.k === "leaf" && x.leaf.ns === "tunables") into.tunables.add(x.leaf.name);
    stack.push(...subExpressions(x));
  }
}

/** Where a derive entry is written: the kernel's `derive`, a variant's, or a pass's. */
interface Owner {
  readonly variant?: CheckedVariant;
  readonly pass?: CheckedPass;
}

/** One derive environment the kernel is evaluated in (the kernel's, a variant's or a pass's), with the names read in it. */
interface Scope extends Owner {
  readonly reached: Set<string>;
}

const ownerText = (o: Owner): string =>
  o.pass ? `pass \`${o.pass.id}\` of variant \`${o.variant!.id}\`` : o.variant ? `variant \`${o.variant.id}\`` : "the kernel";

const quoted = (names: Iterable<string>): string => [...new Set(names)].map((n) => `\`${n}\``).join(", ");

/** Whether an entry written at `reader` can read one written at `entry` (a pass's entries are seen only in that pass, a variant's in that variant). */
function canSee(reader: Owner, entry: Owner): boolean {
  if (entry.pass) return reader.pass ? reader.pass === entry.pass : reader.variant ? reader.variant === entry.variant : true;
  if (entry.variant) return reader.variant ? reader.variant === entry.variant : true;
  return true;
}

/**
 * The unused_attribute, unused_derive, unused_tunable and unused_intermediate warnings of a kernel
 * whose check found no error and read every template. `envOf` gives the merged derive environment
 * of a variant or pass (check-spec's deriveEnv); `tuneKeys` are the top-level derive entries that
 * per-call tune rules key on (the config's `tune.<kernel>.by`, kernelc.tune.json's rules).
 */
export function unusedWarnings(
  kernel: CheckedKernel,
  file: string,
  envOf: (v: CheckedVariant, p?: CheckedPass) => ReadonlyMap<string, CheckedDerive>,
  tuneKeys: ReadonlySet<string> = new Set(),
): Diagnostic[] {
  const passes = kernel.variants.flatMap((v) => v.passes);
  if (passes.some((p) => !p.reads || p.reads.unknownIncludes)) return [];
  const spec = kernel.spec;
  const explained = spec.explain.map((e) => e.name);

  const memo = new Map<CheckedDerive, Reads>();
  const entryReads = (d: CheckedDerive): Reads => {
    let r = memo.get(d);
    if (!r) {
      r = { derives: new Set(d.reads), attrs: new Set(), tunables: new Set() };
      readsOf(d.expr.texpr, r);
      memo.set(d, r);
    }
    return r;
  };

  const used = new Set<CheckedDerive>();
  const attrs = new Set<string>();
  const tunables = new Set<string>();
  const scopes: Scope[] = [];
  /** Marks what `exprs` and the entries `names` read in `env`, and everything those entries read in turn. */
  const visit = (owner: Owner, env: ReadonlyMap<string, CheckedDerive>, exprs: readonly CExpr[], names: Iterable<string>): void => {
    const scope: Scope = { ...owner, reached: new Set() };
    scopes.push(scope);
    const direct: Reads = { derives: new Set(names), attrs, tunables };
    for (const e of exprs) readsOf(e.texpr, direct);
    const work = [...direct.derives];
    while (work.length > 0) {
      const name = work.pop()!;
      if (scope.reached.has(name)) continue;
      scope.reached.add(name);
      const d = env.get(name);
      if (!d) continue;
      used.add(d);
      const r = entryReads(d);
      r.attrs.forEach((a) => attrs.add(a));
      r.tunables.forEach((t) => tunables.add(t));
      work.push(...r.derives);
    }
  };

  visit({}, kernel.derive, [...kernel.when, ...kernel.outputShapes.values()], [...tuneKeys, ...explained]);
  for (const v of kernel.variants) {
    visit({ variant: v }, envOf(v), [...v.when, ...v.intermediates.map((i) => i.shape)], explained);
    for (const p of v.passes) {
      const names = [...explained, ...p.reads!.names];
      const exprs: CExpr[] = [...p.dispatch];
      for (const b of p.bindings) {
        for (const f of b.fields ?? []) exprs.push(f.value);
        if (b.elementType && "derive" in b.elementType) names.push(b.elementType.derive);
      }
      p.reads!.tunables.forEach((t) => tunables.add(t));
      visit({ variant: v, pass: p }, envOf(v, p), exprs, names);
    }
  }

  // Every derive entry, with where it is written.
  const entries: { d: CheckedDerive; owner: Owner }[] = [...kernel.derive.values()].map((d) => ({ d, owner: {} }));
  for (const v of kernel.variants) {
    for (const d of v.derive.values()) entries.push({ d, owner: { variant: v } });
    for (const p of v.passes) for (const d of p.derive.values()) entries.push({ d, owner: { variant: v, pass: p } });
  }
  // A default that each variant or pass reading its name overrides (`"lanes": 1` at the top, `4` and
  // `2` in the variants) is never evaluated, but it is how specs write a default: it counts as used,
  // and so does what it reads (in its own environment), until nothing changes.
  for (let grew = true; grew;) {
    grew = false;
    for (const { d, owner } of entries) {
      if (used.has(d) || owner.pass) continue;
      const overridden = scopes.some((s) => s.reached.has(d.name) && (!owner.variant || s.variant === owner.variant));
      if (!overridden) continue;
      visit(owner, owner.variant ? envOf(owner.variant) : kernel.derive, [], [d.name]);
      grew = true;
    }
  }
  const unusedEntries = entries.filter((e) => !used.has(e.d));
  /** The unused entries that read what `reads` picks out (for "read only by …"). */
  const readers = (pick: (r: Reads) => boolean, self?: { d: CheckedDerive; owner: Owner }): string[] =>
    unusedEntries.filter((e) => e.d !== self?.d && (!self || canSee(e.owner, self.owner)) && pick(entryReads(e.d))).map((e) => e.d.name);
  const readOnlyBy = (names: readonly string[]): string =>
    new Set(names).size === 1
      ? `is read only by derive entry ${quoted(names)}, which nothing uses`
      : `is read only by derive entries ${quoted(names)}, which nothing uses`;

  const out: Diagnostic[] = [];
  for (const entry of unusedEntries) {
    const { d, owner } = entry;
    const what = `derive entry \`${d.name}\`${owner.variant ? ` of ${ownerText(owner)}` : ""}`;
    const by = readers((r) => r.derives.has(d.name), entry);
    let message: string;
    let hint: string;
    if (by.length > 0) {
      message = `${what} ${readOnlyBy(by)}`;
      hint = `remove it together with ${quoted(by)}, or use it`;
    } else {
      message = `${what} is never read by an expression, a binding or a template`;
      hint = "remove it, or use it";
    }
    out.push(makeDiagnostic("unused_derive", message, whereLocation(file, d.keyWhere), { hint }));
  }

  if (!passes.some((p) => p.reads!.anyTunable)) {
    for (const t of spec.tunables) {
      if (tunables.has(t.name)) continue;
      const by = readers((r) => r.tunables.has(t.name));
      out.push(
        makeDiagnostic(
          "unused_tunable",
          by.length > 0 ? `tunable \`${t.name}\` ${readOnlyBy(by)}` : `tunable \`${t.name}\` is never read`,
          whereLocation(file, t.keyWhere),
          { hint: `remove it, or read it as \`tunables.${t.name}\`` },
        ),
      );
    }
  }

  for (const a of spec.attributes) {
    if (attrs.has(a.name)) continue;
    // A kernel that supports one value of the attribute need not read it: the constraint rejects the others.
    const values = spec.attributeConstraints.find((c) => c.name === a.name)?.values;
    if (values && values.length === 1) continue;
    const by = readers((r) => r.attrs.has(a.name));
    out.push(
      makeDiagnostic(
        "unused_attribute",
        `attribute \`${a.name}\` ${by.length > 0 ? readOnlyBy(by) : "is never read"}, so the value a call gives it changes nothing`,
        whereLocation(file, a.keyWhere),
        {
          hint: `read it as \`attrs.${a.name}\`; if the kernel supports one value only, list it in \`attributeConstraints.${a.name}.values\` so that calls giving another are rejected; or remove it (calls that set it are then rejected)`,
        },
      ),
    );
  }

  for (const v of kernel.variants) {
    const bound = new Set(v.passes.flatMap((p) => p.bindings.filter((b) => b.kind === "scratch").map((b) => b.ref)));
    v.intermediates.forEach((im, i) => {
      if (bound.has(im.id)) return;
      out.push(
        makeDiagnostic(
          "unused_intermediate",
          `intermediate \`${im.id}\` of variant \`${v.id}\` is bound by no pass, yet every call of the variant allocates its scratch buffer`,
          whereLocation(file, spec.variants[v.order]!.intermediates[i]!.where),
          { hint: `bind it in a pass of the variant (\`{ "scratch": "${im.id}", "name": … }\`), or remove it` },
        ),
      );
    });
  }
  return out;
}
