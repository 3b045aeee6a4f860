/**
 * Reads of an optional tensor in a variant that no call giving it reaches. A variant whose `when`
 * excludes the tensor (`not present.maskT`) plans only calls without it, so a uniform field, a
 * dispatch size or an intermediate shape of the variant that reads `shapes.maskT`, `ranks.maskT`,
 * `tensorDtypes.maskT` or `dim(shapes.maskT, k)` wherever it is evaluated (directly, or through
 * derive entries outside a guarded branch) fails for every call the variant plans ("ranks.maskT:
 * tensor `maskT` is absent in this call"): an `expr_always_fails` error at the read, from lint and
 * the build, instead of a plan error of every call.
 */
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import { evaluate, UNKNOWN, type EvalEnv, type PValue } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import type { CExpr, CheckedDerive, CheckedKernel, CheckedPass, CheckedVariant } from "../model/checked.js";
import { alwaysFailingNodes } from "./always-fails.js";
import { exprLocation } from "./locate.js";
import { excludesPresent } from "./optional-bindings.js";

/** A pass's (or, without one, a variant's) derive environment. */
export type PartEnv = (variant: CheckedVariant, pass?: CheckedPass) => ReadonlyMap<string, CheckedDerive>;

/** An environment where the tensors of `absent` are absent and every other leaf unknown; derive entries that fail are unknown. */
function absentEnv(absent: ReadonlySet<string>, derives: ReadonlyMap<string, CheckedDerive>): EvalEnv {
  const memo = new Map<string, PValue>();
  const busy = new Set<string>();
  const env: EvalEnv = {
    leaf: (l) => {
      if (!absent.has(l.name)) return UNKNOWN;
      if (l.ns === "present") return false;
      if (l.ns === "shapes" || l.ns === "ranks" || l.ns === "tensorDtypes")
        throw new EvalError(`${l.ns}.${l.name}: tensor \`${l.name}\` is absent in this call`);
      return UNKNOWN;
    },
    dim: (tensor, axis) => {
      if (absent.has(tensor)) throw new EvalError(`dim(shapes.${tensor}, ${axis}): tensor \`${tensor}\` is absent in this call`);
      return UNKNOWN;
    },
    hasAttr: () => UNKNOWN,
    derive: (name) => {
      const known = memo.get(name);
      if (known !== undefined) return known;
      const d = derives.get(name);
      if (!d || busy.has(name)) return UNKNOWN;
      busy.add(name);
      let v: PValue = UNKNOWN;
      try {
        v = evaluate(d.expr.texpr, env);
      } catch (err) {
        if (!(err instanceof EvalError)) throw err;
      } finally {
        busy.delete(name);
      }
      memo.set(name, v);
      return v;
    },
  };
  return env;
}

/**
 * `expr_always_fails` errors: in each variant, the reads of an optional input or output its
 * conditions exclude, in what every call it plans evaluates (intermediate shapes, dispatch sizes,
 * uniform fields) and in the derive entries those read unguarded. Each read once.
 */
export function absentTensorReadErrors(kernel: CheckedKernel, file: string, envOf: PartEnv): Diagnostic[] {
  const inputIds = new Set(kernel.spec.inputs.map((i) => i.name));
  const optional = [
    ...kernel.spec.inputs.filter((i) => i.optional),
    ...kernel.spec.outputs.filter((o) => o.optional && !inputIds.has(o.name)),
  ].map((t) => t.name);
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  for (const variant of kernel.variants) {
    const absent = new Set(optional.filter((id) => excludesPresent(kernel, variant, id, envOf)));
    if (absent.size === 0) continue;
    const parts: [readonly CExpr[], ReadonlyMap<string, CheckedDerive>, string][] = [
      [variant.intermediates.map((i) => i.shape), envOf(variant), `an intermediate shape of variant \`${variant.id}\``],
      ...variant.passes.map((p): [readonly CExpr[], ReadonlyMap<string, CheckedDerive>, string] => [
        [...p.dispatch, ...p.bindings.flatMap((b) => (b.fields ?? []).map((f) => f.value))],
        envOf(variant, p),
        `pass \`${p.id}\` of variant \`${variant.id}\``,
      ]),
    ];
    for (const [roots, derives, where] of parts) {
      const env = absentEnv(absent, derives);
      const queue = [...roots];
      const walked = new Set<CExpr>();
      while (queue.length > 0) {
        const c = queue.pop()!;
        if (walked.has(c)) continue;
        walked.add(c);
        const scan = alwaysFailingNodes(c.texpr, env);
        for (const f of scan.failing) {
          if (f.guard || f.node.k !== "leaf" || !absent.has(f.node.leaf.name)) continue;
          const key = `${c.source.where.pointer}:${f.node.span.start}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const id = f.node.leaf.name;
          const read = c.source.text.slice(f.node.span.start, f.node.span.end);
          out.push(
            makeDiagnostic(
              "expr_always_fails",
              `\`${read}\` reads optional ${inputIds.has(id) ? "input" : "output"} \`${id}\`, which no call of variant \`${variant.id}\` gives (its \`when\` conditions exclude it), and ${where} evaluates it: every call the variant plans would fail ("${f.reason}")`,
              exprLocation(file, c.source, f.node.span),
              {
                hint: `guard the read with \`present.${id}\` (\`… if present.${id} else …\`), or override the derive entry in the variant's \`derive\``,
              },
            ),
          );
        }
        for (const n of scan.unguardedReads) {
          const d = derives.get(n);
          if (d) queue.push(d.expr);
        }
      }
    }
  }
  return out;
}
