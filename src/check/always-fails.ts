/**
 * Sub-expressions that fail every time they are evaluated: `ceilDiv(1, 0)`, `n % 0` (a divisor
 * that is 0 whatever the call), `9007199254740991 + 1`, `dim([1, 2], 5)`, `dim(shapes.x, 3)` of
 * a tensor of declared rank 2. Such a value is an error on every input, so every call that
 * evaluates it would be rejected at plan time; lint and the build report it at the sub-expression.
 *
 * Why a walk and not one evaluation: the partial evaluator already fails only for failures that
 * happen on every input (an unknown condition makes both branches "guarded"), but it stops at the
 * first failure and says nothing about the branches it guards. The walk follows the evaluator's
 * order: a sub-expression evaluated whenever its expression is (`error`), one evaluated only on
 * some calls, inside `… if c else …` or after `and`/`or` whose left side is not known (`warning`:
 * such a branch may be meant to reject those calls), and one never evaluated (a branch a known
 * condition excludes: nothing).
 */
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import { evaluate, UNKNOWN, type EvalEnv, type PValue } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import type { TExpr } from "../model/ir.js";
import { subExpressions } from "../model/ir.js";
import type { ExprSource } from "../model/spec.js";
import { exprLocation } from "./locate.js";

/** The condition under which a guarded sub-expression is evaluated: `cond` holds (or not). */
export interface Guard {
  readonly cond: TExpr;
  readonly holds: boolean;
}

/** A sub-expression that fails whenever it is evaluated. */
export interface AlwaysFailing {
  readonly node: TExpr;
  /** Why it fails (the evaluator's message, or that the divisor is always 0). */
  readonly reason: string;
  /** The divisor of a division or modulo (or ceilDiv) that is 0 whenever it is evaluated. */
  readonly zeroDivisor?: TExpr;
  /** Undefined when the node is evaluated whenever its expression is; else the innermost guard. */
  readonly guard?: Guard;
}

/** What one walk found: the failing sub-expressions, and the derive entries read unguarded. */
export interface AlwaysFailingScan {
  readonly failing: readonly AlwaysFailing[];
  /** Derive entries the expression reads wherever it is evaluated (not in a guarded branch). */
  readonly unguardedReads: ReadonlySet<string>;
}

function tryValue(e: TExpr, env: EvalEnv): PValue {
  try {
    return evaluate(e, env);
  } catch (err) {
    if (err instanceof EvalError) return UNKNOWN;
    throw err;
  }
}

/** The divisor of a node that divides: `/`, `//`, `%` and ceilDiv. */
function divisorOf(x: TExpr): TExpr | undefined {
  if (x.k === "binary" && (x.op === "/" || x.op === "//" || x.op === "%")) return x.right;
  if (x.k === "call" && x.fn === "ceilDiv") return x.args[1];
  return undefined;
}

/**
 * The innermost sub-expressions of `e` that fail whenever they are evaluated in `env` (a partial
 * evaluation: UNKNOWN leaves stay unknown). `env.derive` must answer UNKNOWN, not throw, for an
 * entry that fails: a derive reference is not descended into, the entry is checked where it is
 * written.
 */
export function alwaysFailingNodes(e: TExpr, env: EvalEnv): AlwaysFailingScan {
  const failing: AlwaysFailing[] = [];
  const unguardedReads = new Set<string>();
  /** Walks `x`, evaluated under `guard`; true when it fails whenever it is evaluated. */
  const visit = (x: TExpr, guard: Guard | undefined): boolean => {
    switch (x.k) {
      case "const":
      case "hasAttr":
        return false;
      // A leaf fails only where the environment knows its tensor is absent (absent-reads.ts); it
      // is evaluated below like any node without failing children.
      case "derive":
        if (!guard) unguardedReads.add(x.name);
        return false;
      case "cond": {
        if (visit(x.cond, guard)) return true;
        const c = tryValue(x.cond, env);
        if (c === true) return visit(x.then, guard);
        if (c === false) return visit(x.otherwise, guard);
        const start = failing.length;
        const [onTrue, onFalse]: Guard[] = [
          { cond: x.cond, holds: true },
          { cond: x.cond, holds: false },
        ];
        const a = visit(x.then, onTrue);
        const b = visit(x.otherwise, onFalse);
        // Both branches fail: so does the conditional, wherever it is evaluated.
        if (a && b)
          for (let i = start; i < failing.length; i++)
            if (failing[i].guard === onTrue || failing[i].guard === onFalse) failing[i] = { ...failing[i], guard };
        return a && b;
      }
      case "binary":
        if (x.op === "and" || x.op === "or") {
          if (visit(x.left, guard)) return true;
          const short = x.op === "or";
          const l = tryValue(x.left, env);
          if (l === short) return false;
          if (l === !short) return visit(x.right, guard);
          visit(x.right, { cond: x.left, holds: !short });
          return false;
        }
    }
    let childFails = false;
    for (const c of subExpressions(x)) childFails = visit(c, guard) || childFails;
    if (childFails) return true;
    let reason: string | undefined;
    try {
      evaluate(x, env);
    } catch (err) {
      if (!(err instanceof EvalError)) throw err;
      reason = err.message;
    }
    const divisor = divisorOf(x);
    const zeroDivisor = divisor && tryValue(divisor, env) === 0 ? divisor : undefined;
    if (reason === undefined && zeroDivisor)
      reason = `${x.k === "binary" && x.op === "%" ? "modulo" : "division"} by zero: the divisor is 0 whatever the call`;
    if (reason === undefined) return false;
    failing.push({ node: x, reason, zeroDivisor, guard });
    return true;
  };
  visit(e, undefined);
  return { failing, unguardedReads };
}

/** An environment like `env` whose failing derive entries are UNKNOWN (for alwaysFailingNodes). */
export function derivesNeverThrow(env: EvalEnv): EvalEnv {
  return {
    leaf: (leaf) => env.leaf(leaf),
    dim: (tensor, axis) => env.dim(tensor, axis),
    hasAttr: (name) => env.hasAttr(name),
    derive: (name) => {
      try {
        return env.derive(name);
      } catch (err) {
        if (err instanceof EvalError) return UNKNOWN;
        throw err;
      }
    },
  };
}

/**
 * The expr_always_fails diagnostic of a sub-expression of `src`: an error, or a warning when it is
 * guarded; `context` says for which build values, when not for every build.
 */
export function alwaysFailsDiagnostic(file: string, src: ExprSource, f: AlwaysFailing, context = ""): Diagnostic {
  const text = (e: TExpr): string => src.text.slice(e.span.start, e.span.end);
  const what = `\`${text(f.node)}\` fails whenever it is evaluated${context} (${f.reason})`;
  const fix = !f.zeroDivisor
    ? "fix its constant operands so that it has a value"
    : f.zeroDivisor.k === "const"
      ? "divide by a value that is not 0"
      : `\`${text(f.zeroDivisor)}\` is 0 whatever the call: divide by a value that is not 0`;
  if (!f.guard)
    return makeDiagnostic(
      "expr_always_fails",
      `${what}: every call that evaluates it would fail to plan`,
      exprLocation(file, src, f.node.span),
      {
        hint: `${fix}; to reject calls on purpose, use a \`when\` condition (the caller is told which one failed)`,
      },
    );
  return makeDiagnostic(
    "expr_always_fails",
    `${what}; it is evaluated when \`${text(f.guard.cond)}\` ${f.guard.holds ? "holds" : "does not hold"}, and those calls would fail to plan`,
    exprLocation(file, src, f.node.span),
    {
      severity: "warning",
      hint: `${fix}; if the branch is meant to reject those calls, a \`when\` condition does it and tells the caller which condition failed`,
    },
  );
}
