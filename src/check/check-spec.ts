/**
 * The check phase for one kernel spec: parses every expression, resolves and types it, checks
 * the references between the spec's parts (derive entries, bindings, intermediates, shaders),
 * finds cycles and unused entries, and classifies every derive entry's binding time.
 * Returns a new immutable CheckedKernel; the loaded spec is left alone.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic, type Code } from "../core/codes.js";
import type { Diagnostic, DiagnosticNote } from "../core/diagnostic.js";
import { didYouMean } from "../core/did-you-mean.js";
import { LineMap } from "../core/line-map.js";
import type { BindingSpec, DeriveEntry, ExprSource, KernelSpec, PassSpec, VariantSpec, Where } from "../model/spec.js";
import { ExprSyntaxError } from "../lang/errors.js";
import { parseExpression } from "../lang/parser.js";
import { KEYWORDS } from "../lang/lexer.js";
import type { Expr } from "../model/ast.js";
import { ONNX_TO_WGSL } from "../lang/ops.js";
import { BOOL_ELEMENT_HINT, boolElementTypeProblem } from "./bool-binding.js";
import { elementTypeHint, elementTypeProblem } from "./element-type.js";
import { isFunctionName } from "./builtins.js";
import { checkExpr, NAMESPACES, type ExprProblem, type Scope, type TensorInfo } from "./check-expr.js";
import type { TExpr } from "../model/ir.js";
import { evaluate, UNKNOWN, type EvalEnv, type PValue } from "../lang/evaluate.js";
import { EvalError, dim as dimOf } from "../lang/ops.js";
import { alwaysFailingNodes, alwaysFailsDiagnostic } from "./always-fails.js";
import { exprLocation, whereLocation } from "./locate.js";
import { optionalBindingWarnings, unboundOutputWarnings } from "./optional-bindings.js";
import { absentTensorReadErrors } from "./absent-reads.js";
import { templateReads, TemplateSyntaxError } from "./template-reads.js";
import { TEMPLATE_NESTING_HINT } from "./template-scan.js";
import { templateGuess, templateSegmentsProblem } from "./template-path.js";
import { unusedWarnings } from "./unused.js";
import { isWgslWord, valueStringLiterals } from "./template-values.js";
import { deepestChain, deriveNesting, exprNames, MAX_DERIVE_NESTING } from "./derive-depth.js";
import { uniformStructName, wgslNameProblem } from "./wgsl-names.js";
import { candidateFactors, candidateLimitError, DEFAULT_MAX_CANDIDATES } from "./candidate-limit.js";
import type {
  BufferType,
  CExpr,
  CheckedBinding,
  CheckedDerive,
  CheckedField,
  CheckedIntermediate,
  CheckedKernel,
  CheckedPass,
  CheckedVariant,
  CheckResult,
  TemplateReads,
} from "../model/checked.js";
import { FLOAT, INT, NUMBER, STRING, ERROR, sameType, showType, isNumeric, type Type } from "../model/types.js";
import { InputFileError, MAX_INPUT_BYTES, readInputFile } from "../core/read-file.js";

/** What the checker needs from outside the spec. */
export interface CheckContext {
  /** Absolute path of the templates folder. */
  readonly templatesDir: string;
  readonly limitNames: ReadonlySet<string>;
  readonly featureNames: ReadonlySet<string>;
  /** Parsed template reads by real path, shared by every spec checked with this context. */
  readonly templateReadsCache?: Map<string, { readonly stamp: string; readonly reads: TemplateReads }>;
  /** What templates read, kept between processes by their exact text (kernelc lint's .kernelc-cache/). */
  readonly templateReadsStore?: TemplateReadsStore;
  /** Checks kept across compilations (kernelc watch), by spec file: see KeptCheck. */
  readonly keptChecks?: Map<string, KeptCheck>;
  /**
   * Per kernel name, the top-level derive entries that per-call tune rules key on (the config's
   * `tune.<kernel>.by`, kernelc.tune.json's rules): `kernelc tune` and the dispatcher read them.
   */
  readonly tuneKeys?: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * The check of one spec kept for the next compilation (kernelc watch): taken again while the spec's
 * text is the same and each of its shader templates resolves to the same file with the same reads
 * (a template edit that changes no read, the usual edit, leaves the checked kernel as it was). Kept
 * only when every template resolved: the other outcomes depend on more of the templates folder.
 */
export interface KeptCheck {
  readonly source: string;
  readonly templatesDir: string;
  /** The kernel's tune keys the check was made with (sorted, joined by commas). */
  readonly tuneKeys: string;
  readonly result: CheckResult;
  /** Each shader path the check resolved (relative to the templates folder), with its file and reads. */
  readonly shaders: ReadonlyMap<string, { readonly path: string; readonly reads: TemplateReads }>;
}

/**
 * What templates read (templateReads), kept by the exact text of the template: a template with a
 * kept entry is not parsed again. Only templates that parse and pass the sandbox's checks are kept.
 */
export interface TemplateReadsStore {
  get(text: string): TemplateReads | undefined;
  set(text: string, reads: TemplateReads): void;
}

/** deriveEnv's tables, by kernel, variant and pass (NO_PART where there is none). */
const derivedEnvs = new WeakMap<object, WeakMap<object, WeakMap<object, ReadonlyMap<string, CheckedDerive>>>>();
const NO_PART = {};

/**
 * The merged derive environment of a pass: top-level, then the variant's, then the pass's entries.
 * Made once per kernel, variant and pass (enumeration asks for it thousands of times) and shared:
 * it is read-only, like the checked kernel it is made from.
 */
export function deriveEnv(kernel: CheckedKernel, variant?: CheckedVariant, pass?: CheckedPass): ReadonlyMap<string, CheckedDerive> {
  let byVariant = derivedEnvs.get(kernel);
  if (!byVariant) derivedEnvs.set(kernel, (byVariant = new WeakMap()));
  let byPass = byVariant.get(variant ?? NO_PART);
  if (!byPass) byVariant.set(variant ?? NO_PART, (byPass = new WeakMap()));
  let env = byPass.get(pass ?? NO_PART);
  if (!env) {
    const made = new Map(kernel.derive);
    if (variant) for (const [k, v] of variant.derive) made.set(k, v);
    if (pass) for (const [k, v] of pass.derive) made.set(k, v);
    byPass.set(pass ?? NO_PART, (env = made));
  }
  return env;
}

const WGSL_SCALARS = ["f16", "f32", "i32", "u32"];
/** For a WGSL scalar name written where an ONNX type belongs (`f16`): which ONNX type to write. */
function wgslNameHint(t: string): string | undefined {
  const onnx = Object.keys(ONNX_TO_WGSL).find((o) => o !== "float" && o !== "bool" && ONNX_TO_WGSL[o] === t);
  return onnx === undefined ? undefined : `\`${t}\` is the WGSL type; dtypes are ONNX type names: write \`${onnx}\``;
}

/** How to fix a name that is not an ONNX element type kernelc supports. */
function onnxTypeHint(t: string): string {
  return wgslNameHint(t) ?? didYouMean(t, Object.keys(ONNX_TO_WGSL)) ?? `use one of ${Object.keys(ONNX_TO_WGSL).join(", ")}`;
}

const WGSL_ELEMENT = new Set([...WGSL_SCALARS, ...["vec2", "vec3", "vec4"].flatMap((v) => WGSL_SCALARS.map((s) => `${v}<${s}>`))]);

/** Names the template context or the Nunjucks sandbox provides beside the derive values (docs/templates.md). */
const TEMPLATE_NAMES = new Set(["env", "DISPATCH_FOLD_WIDTH", "range", "cycler", "joiner", "loop", "caller"]);
/** Words of the expression language. */
/** The words of the expression language (`in`, `is`, `none`, `True`, … too: an entry named `in` failed to parse everywhere it was read). */
const EXPR_WORDS: ReadonlySet<string> = KEYWORDS;

/**
 * What a derive entry's name would hide, or undefined: a namespace (`tunables.WG` would read the
 * entry), a builtin function, a word of the language, or a name templates are given.
 */
function reservedDeriveName(name: string): string | undefined {
  if ((NAMESPACES as readonly string[]).includes(name)) return `the namespace \`${name}\``;
  if (isFunctionName(name)) return `the builtin function \`${name}\``;
  if (EXPR_WORDS.has(name)) return `the expression word \`${name}\``;
  if (TEMPLATE_NAMES.has(name)) return `\`${name}\`, which kernelc or Nunjucks gives templates,`;
  return undefined;
}

/**
 * Infers an attribute's type from its default or its allowed values. A default written as a float
 * (`1.0`, `[1.0, 2.0]`; defaultFloat) makes a float or a list<float>, so that `attrs.alpha / 2`
 * divides as floats do whatever value a call gives.
 */
function attrType(def: unknown, values: readonly unknown[] | undefined, defaultFloat = false): Type {
  const sample = def !== undefined ? [def] : (values ?? []);
  if (sample.length === 0) return NUMBER;
  if (sample.every((v) => typeof v === "string")) return STRING;
  if (sample.every((v) => Array.isArray(v)))
    return { k: "list", elem: !defaultFloat && (sample as number[][]).flat().every(Number.isInteger) ? INT : FLOAT };
  if (sample.every((v) => typeof v === "number")) return defaultFloat ? FLOAT : NUMBER;
  return NUMBER;
}

class SpecChecker {
  readonly diags: Diagnostic[] = [];
  private readonly file: string;
  private readonly parsed = new Map<ExprSource, Expr | null>();
  private templatesKnown = true;
  private readonly templateCache = new Map<string, { path?: string; reads?: TemplateReads }>();
  private readonly baseScope: Omit<Scope, "deriveType" | "deriveNames">;

  /** Whether every pass's template was found and read (what an unread one reads is unknown). */
  get templatesRead(): boolean {
    return this.templatesKnown;
  }

  constructor(
    private readonly spec: KernelSpec,
    private readonly ctx: CheckContext,
  ) {
    this.file = spec.file;
    const tensors = new Map<string, TensorInfo>();
    for (const i of spec.inputs) tensors.set(i.name, { pointer: i.where.pointer, optional: i.optional });
    for (const o of spec.outputs) if (!tensors.has(o.name)) tensors.set(o.name, { pointer: o.where.pointer, optional: o.optional });
    const constraints = new Map(spec.attributeConstraints.map((c) => [c.name, c]));
    const attrs = new Map<string, { type: Type; pointer: string }>();
    for (const a of spec.attributes)
      attrs.set(a.name, { type: attrType(a.default, constraints.get(a.name)?.values, a.defaultFloat), pointer: a.where.pointer });
    this.baseScope = {
      tensors,
      attrs,
      tunables: new Set(spec.tunables.map((t) => t.name)),
      typeParams: new Set(spec.typeConstraints.map((t) => t.name)),
      limits: ctx.limitNames,
      features: ctx.featureNames,
    };
  }

  private report(code: Code, message: string, where: Where | undefined, hint?: string, notes: DiagnosticNote[] = []): void {
    this.diags.push(makeDiagnostic(code, message, where ? whereLocation(this.file, where) : { file: this.file }, { hint, notes }));
  }

  private parse(src: ExprSource): Expr | null {
    if (this.parsed.has(src)) return this.parsed.get(src)!;
    let e: Expr | null = null;
    try {
      e = parseExpression(src.text);
    } catch (err) {
      if (!(err instanceof ExprSyntaxError)) throw err;
      this.diags.push(makeDiagnostic(err.code, err.message, exprLocation(this.file, src, err.span), { hint: err.hint }));
    }
    this.parsed.set(src, e);
    return e;
  }

  private problemToDiag(src: ExprSource, p: ExprProblem): void {
    const notes = p.notePointer ? [{ message: p.notePointer.message, location: { file: this.file, pointer: p.notePointer.pointer } }] : [];
    this.diags.push(makeDiagnostic(p.code, p.message, exprLocation(this.file, src, p.span), { hint: p.hint, notes }));
  }

  /** A derive table with lazy, cycle-detecting type inference. */
  private makeTable(entries: readonly DeriveEntry[], parent: ReadonlyMap<string, CheckedDerive> | undefined): Map<string, CheckedDerive> {
    const defs = new Map<string, DeriveEntry>();
    for (const e of entries) {
      defs.set(e.name, e);
      const reserved = reservedDeriveName(e.name);
      if (reserved)
        this.report(
          "reserved_name",
          `derive entry \`${e.name}\` would hide ${reserved} in expressions and templates`,
          e.keyWhere,
          `rename the entry (e.g. \`${e.name}Value\`)`,
        );
    }
    const out = new Map<string, CheckedDerive>();
    const inProgress: string[] = [];
    const scope = (): Scope => ({
      ...this.baseScope,
      deriveType: (name) => typeOf(name),
      deriveNames: () => new Set([...defs.keys(), ...(parent?.keys() ?? [])]),
    });
    const typeOf = (name: string): Type | "cycle" | undefined => {
      if (!defs.has(name)) return parent?.get(name)?.type;
      const done = out.get(name);
      if (done) return done.type;
      const at = inProgress.indexOf(name);
      if (at >= 0) {
        const cycle = [...inProgress.slice(at), name];
        const d = defs.get(name)!;
        if (!this.cyclesReported.has(cycle.slice(0, -1).sort().join(","))) {
          this.cyclesReported.add(cycle.slice(0, -1).sort().join(","));
          this.report(
            "derive_cycle",
            `derive entries depend on each other in a cycle: ${cycle.join(" -> ")}`,
            d.expr.where,
            "break the cycle: one of these entries must not read the others",
            cycle
              .slice(0, -1)
              .filter((n) => n !== name)
              .map((n) => ({ message: `\`${n}\` is part of the cycle`, location: whereLocation(this.file, defs.get(n)!.keyWhere) })),
          );
        }
        return "cycle";
      }
      inProgress.push(name);
      const d = defs.get(name)!;
      const ast = this.parse(d.expr);
      let checked: CheckedDerive;
      if (!ast) {
        checked = {
          name,
          expr: { source: d.expr, texpr: { k: "const", value: 0, type: ERROR, span: { start: 0, end: 0 } } },
          type: ERROR,
          reads: new Set(),
          keyWhere: d.keyWhere,
        };
      } else {
        const r = checkExpr(ast, scope());
        for (const p of r.problems) this.problemToDiag(d.expr, p);
        checked = { name, expr: { source: d.expr, texpr: r.texpr }, type: r.texpr.type, reads: r.derives, keyWhere: d.keyWhere };
        this.checkConstants(d.expr, r.texpr, (n) => (defs.has(n) ? out.get(n) : parent?.get(n)), out);
      }
      inProgress.pop();
      if (!out.has(name)) out.set(name, checked);
      return out.get(name)!.type;
    };
    // Type every entry after the entries it reads, walking the references without recursion: when
    // an entry is typed, what it reads is typed already or on the walk's path (`inProgress`, a
    // cycle), so typeOf never descends a chain, however long.
    const refsOf = (name: string): string[] => {
      const ast = this.parse(defs.get(name)!.expr);
      return ast ? exprNames(ast).filter((n) => defs.has(n)) : [];
    };
    for (const e of entries) {
      if (out.has(e.name)) continue;
      const walk: { name: string; refs: string[]; i: number }[] = [{ name: e.name, refs: refsOf(e.name), i: 0 }];
      const onPath = new Set([e.name]);
      while (walk.length > 0) {
        const top = walk[walk.length - 1];
        if (top.i < top.refs.length) {
          const r = top.refs[top.i++];
          if (!out.has(r) && !onPath.has(r)) {
            walk.push({ name: r, refs: refsOf(r), i: 0 });
            onPath.add(r);
          }
          continue;
        }
        walk.pop();
        onPath.delete(top.name);
        inProgress.length = 0;
        for (const w of walk) inProgress.push(w.name);
        typeOf(top.name);
      }
      inProgress.length = 0;
    }
    const result = new Map<string, CheckedDerive>();
    for (const e of entries) result.set(e.name, out.get(e.name)!);
    return result;
  }

  private readonly cyclesReported = new Set<string>();

  /** Checks an expression in the scope of a merged derive environment. */
  private checkIn(src: ExprSource, env: ReadonlyMap<string, CheckedDerive>): CExpr {
    const ast = this.parse(src);
    if (!ast) return { source: src, texpr: { k: "const", value: 0, type: ERROR, span: { start: 0, end: src.text.length } } };
    const scope: Scope = { ...this.baseScope, deriveType: (n) => env.get(n)?.type, deriveNames: () => env.keys() };
    const r = checkExpr(ast, scope);
    for (const p of r.problems) this.problemToDiag(src, p);
    this.checkConstants(src, r.texpr, (n) => env.get(n), env);
    return { source: src, texpr: r.texpr };
  }

  /** Values of derive entries known without any leaf (constants), per derive environment: for checkConstants. */
  private readonly constants = new Map<object, Map<string, PValue>>();

  /** The declared rank of each tensor that declares one (a call's tensor has it, or the call is rejected before any evaluation). */
  private get declaredRanks(): ReadonlyMap<string, number> {
    this.ranks ??= new Map(
      [...this.spec.outputs, ...this.spec.inputs].flatMap((t) => (t.rank === undefined ? [] : [[t.name, t.rank] as const])),
    );
    return this.ranks;
  }
  private ranks?: Map<string, number>;

  /**
   * Reports the innermost sub-expressions whose value is known without any leaf (constants and
   * derive entries that are constants) and is infinite or NaN, such as `1e300 * 1e300`: kernelc
   * cannot emit such a value, and no condition or size should rest on one. Also those that fail
   * whenever they are evaluated, such as `ceilDiv(n, 0)` (see always-fails.ts).
   */
  private checkConstants(src: ExprSource, e: TExpr, lookup: (name: string) => CheckedDerive | undefined, envKey: object): void {
    if (this.nestingReported.size > 0 || hasErrorType(e)) return;
    const env = this.constEnv(lookup, envKey);
    for (const { node, value } of nonFiniteNodes(e, env)) this.diags.push(nonFiniteDiagnostic(this.file, src, node, value));
    for (const f of alwaysFailingNodes(e, env).failing) this.diags.push(alwaysFailsDiagnostic(this.file, src, f));
  }

  /** The partial-evaluation environment of a derive environment: leaves unknown, constant derive entries known (memoized per `envKey`). */
  private constEnv(lookup: (name: string) => CheckedDerive | undefined, envKey: object): EvalEnv {
    let memo = this.constants.get(envKey);
    if (!memo) {
      memo = new Map();
      this.constants.set(envKey, memo);
    }
    const known = memo;
    const env: EvalEnv = {
      leaf: () => UNKNOWN,
      // A call gives a tensor of its declared rank (or the plan fails first): an axis outside it always fails.
      dim: (tensor, axis) => {
        const rank = this.declaredRanks.get(tensor);
        if (rank !== undefined) dimOf(new Array<number>(rank).fill(0), axis, `shapes.${tensor}`);
        return UNKNOWN;
      },
      hasAttr: () => UNKNOWN,
      derive: (name) => {
        if (known.has(name)) return known.get(name)!;
        const d = lookup(name);
        known.set(name, UNKNOWN);
        if (!d || hasErrorType(d.expr.texpr)) return UNKNOWN;
        const v = tryEvaluate(d.expr.texpr, env);
        known.set(name, v);
        return v;
      },
    };
    return env;
  }

  /**
   * A uniform field whose value is known without any call (a constant, or derive entries that are
   * constants) must fit its type; otherwise every call would fail to plan.
   */
  private checkFieldRange(
    f: { readonly name: string; readonly type: string },
    value: CExpr,
    env: ReadonlyMap<string, CheckedDerive>,
    struct: string,
  ): void {
    if (this.nestingReported.size > 0 || hasErrorType(value.texpr)) return;
    const v = tryEvaluate(
      value.texpr,
      this.constEnv((n) => env.get(n), env),
    );
    // Unknown until a call, or not finite (reported as non_finite_value).
    if (typeof v === "number" && Number.isFinite(v) && !uniformFits(f.type, v))
      this.diags.push(uniformRangeDiagnostic(this.file, value.source, struct, f, v));
  }

  /**
   * A shape expression whose length is fixed by its form (a list literal, `shapes.X` of a tensor
   * with a declared rank, a conditional of such) must have the declared rank: any other would fail
   * every call.
   */
  private expectRank(c: CExpr, rank: number | undefined, what: string): void {
    if (rank === undefined || c.texpr.type.k === "error") return;
    const tensors = [...this.spec.inputs, ...this.spec.outputs];
    const rankOf = (e: TExpr): number | undefined => {
      if (e.k === "list") return e.items.length;
      if (e.k === "const") return Array.isArray(e.value) ? e.value.length : undefined;
      if (e.k === "leaf" && e.leaf.ns === "shapes") {
        const name = e.leaf.name;
        return tensors.find((t) => t.name === name)?.rank;
      }
      if (e.k === "cond") {
        const a = rankOf(e.then);
        return a !== undefined && a === rankOf(e.otherwise) ? a : undefined;
      }
      return undefined;
    };
    const has = rankOf(c.texpr);
    if (has === undefined || has === rank) return;
    this.diags.push(
      makeDiagnostic(
        "type_mismatch",
        `the shape of ${what} has ${has} dimension${has === 1 ? "" : "s"}, but the output declares rank ${rank}: every call would fail to plan`,
        exprLocation(this.file, c.source, c.texpr.span),
        { hint: `give a shape of ${rank} dimension${rank === 1 ? "" : "s"}, or change \`rank\`` },
      ),
    );
  }

  private expectType(c: CExpr, want: "bool" | "int" | "shape" | "number", what: string, hint?: string): void {
    const t = c.texpr.type;
    if (t.k === "error") return;
    const ok =
      want === "bool"
        ? t.k === "bool"
        : want === "int"
          ? t.k === "int" || t.k === "number"
          : want === "number"
            ? isNumeric(t)
            : t.k === "list" && (t.elem.k === "int" || t.elem.k === "number");
    if (!ok) {
      const code: Code = want === "bool" ? "condition_not_bool" : "type_mismatch";
      // A float where an int belongs: say how to get an int (a float operand makes a whole sum a float).
      const floatHint =
        want === "int" && t.k === "float"
          ? `round it to an int with \`floor(…)\` or \`ceilDiv(a, b)\`; a float literal (\`0.5\`, \`1.0\`) or a float attribute makes the whole expression a float, and \`/\` of two ints is already an int`
          : undefined;
      this.diags.push(
        makeDiagnostic(
          code,
          `${what} must be ${want === "shape" ? "a shape (list<int>)" : `a${want === "int" ? "n" : ""} ${want}`}, found ${showType(t)}`,
          exprLocation(this.file, c.source, c.texpr.span),
          { hint: hint ?? floatHint },
        ),
      );
    }
  }

  /** Checks the merged environment for cycles created by overrides (an iterative depth-first walk). */
  private checkOverrideCycles(env: ReadonlyMap<string, CheckedDerive>, own: ReadonlyMap<string, CheckedDerive>): void {
    const state = new Map<string, 1 | 2>();
    for (const start of own.keys()) {
      if (state.get(start) === 2) continue;
      const walk: { name: string; reads: string[]; i: number }[] = [{ name: start, reads: [...(env.get(start)?.reads ?? [])], i: 0 }];
      state.set(start, 1);
      while (walk.length > 0) {
        const top = walk[walk.length - 1];
        if (top.i >= top.reads.length) {
          walk.pop();
          state.set(top.name, 2);
          continue;
        }
        const n = top.reads[top.i++];
        if (!env.has(n)) continue;
        const s = state.get(n);
        if (s === 2) continue;
        if (s === 1) {
          const path = walk.map((w) => w.name);
          const cycle = [...path.slice(path.indexOf(n)), n];
          const key = cycle.slice(0, -1).sort().join(",");
          if (!this.cyclesReported.has(key)) {
            this.cyclesReported.add(key);
            const culprit = cycle.find((c) => own.has(c)) ?? n;
            this.report(
              "derive_cycle",
              `with this override, derive entries depend on each other in a cycle: ${cycle.join(" -> ")}`,
              env.get(culprit)!.expr.source.where,
              "an override must not read, directly or not, the entry it replaces",
            );
          }
          continue;
        }
        state.set(n, 1);
        walk.push({ name: n, reads: [...(env.get(n)?.reads ?? [])], i: 0 });
      }
    }
  }

  /** Reports the entry of `env` that nests deepest when that is past MAX_DERIVE_NESTING (once per entry). */
  private checkNesting(env: ReadonlyMap<string, CheckedDerive>): void {
    const nesting = deriveNesting(env);
    let worst: string | undefined;
    for (const [name, n] of nesting)
      if (n.levels > MAX_DERIVE_NESTING && (worst === undefined || n.levels > nesting.get(worst)!.levels)) worst = name;
    if (worst === undefined || this.nestingReported.has(worst)) return;
    this.nestingReported.add(worst);
    const chain = deepestChain(worst, nesting);
    const shown = chain.length > 6 ? [...chain.slice(0, 3), "…", ...chain.slice(-2)] : chain;
    this.report(
      "derive_too_deep",
      `evaluating \`${worst}\` nests ${nesting.get(worst)!.levels} levels deep through a chain of ${chain.length} derive entries (${shown.map((c) => (c === "…" ? c : `\`${c}\``)).join(" -> ")}); the limit is ${MAX_DERIVE_NESTING} levels`,
      env.get(worst)!.expr.source.where,
      "shorten the chain: compute the value in fewer entries, or with fewer nested sub-expressions (each sub-expression and each entry read counts one level)",
    );
  }

  private readonly nestingReported = new Set<string>();

  private checkOverrides(table: ReadonlyMap<string, CheckedDerive>, parent: ReadonlyMap<string, CheckedDerive>): void {
    for (const [name, d] of table) {
      const orig = parent.get(name);
      if (
        orig &&
        orig.type.k !== "error" &&
        d.type.k !== "error" &&
        !sameType(orig.type, d.type) &&
        !(isNumeric(orig.type) && isNumeric(d.type) && orig.type.k !== "float" && d.type.k !== "float")
      ) {
        this.report(
          "type_mismatch",
          `override of \`${name}\` has type ${showType(d.type)}, but the entry it replaces has type ${showType(orig.type)}`,
          d.expr.source.where,
          "an override must keep the type",
          [{ message: `\`${name}\` is declared here`, location: whereLocation(this.file, orig.keyWhere) }],
        );
      }
    }
  }

  /** The shader paths this check resolved, with their files and reads; undefined when one did not resolve. */
  resolvedShaders(): Map<string, { path: string; reads: TemplateReads }> | undefined {
    const out = new Map<string, { path: string; reads: TemplateReads }>();
    for (const [rel, r] of this.templateCache) {
      if (!r.path || !r.reads) return undefined;
      out.set(rel, { path: r.path, reads: r.reads });
    }
    return out;
  }

  /** Resolves the shader path `rel` of one of the spec's passes afresh, as the check does; undefined when it does not resolve cleanly. */
  resolveAgain(rel: string): { path: string; reads: TemplateReads } | undefined {
    const pass = this.spec.variants.flatMap((v) => v.passes).find((p) => p.shader === rel);
    if (!pass) return undefined;
    const r = this.resolveShaderUncached(pass);
    return r.path && r.reads && this.diags.length === 0 ? { path: r.path, reads: r.reads } : undefined;
  }

  private resolveShader(p: PassSpec): { path?: string; reads?: TemplateReads } {
    const cached = this.templateCache.get(p.shader);
    if (cached) {
      if (!cached.path) this.templatesKnown = false;
      return cached;
    }
    const result = this.resolveShaderUncached(p);
    this.templateCache.set(p.shader, result);
    if (!result.reads) this.templatesKnown = false;
    return result;
  }

  private resolveShaderUncached(p: PassSpec): { path?: string; reads?: TemplateReads } {
    const rel = p.shader;
    const unsafe = (why: string): { path?: string } => {
      this.report(
        "shader_unsafe_path",
        `shader path \`${rel}\` ${why}`,
        p.shaderWhere,
        "name a file inside the templates folder with a relative path, e.g. `my-kernel.wgsl.jinja`",
      );
      return {};
    };
    if (rel.includes("\0")) return unsafe("contains a NUL character");
    if (path.isAbsolute(rel) || /^[A-Za-z]:/.test(rel) || rel.startsWith("\\")) return unsafe("is absolute");
    if (rel.includes("\\")) return unsafe("contains a backslash");
    const segments = templateSegmentsProblem(rel);
    if (segments !== undefined) return unsafe(segments);
    const full = path.resolve(this.ctx.templatesDir, rel);
    let real: string;
    try {
      real = fs.realpathSync(full);
    } catch {
      const hint = templateGuess(this.ctx.templatesDir, rel);
      this.report(
        "shader_missing",
        `shader template \`${rel}\` of pass \`${p.id}\` does not exist in ${path.basename(this.ctx.templatesDir)}/`,
        p.shaderWhere,
        hint ?? `create ${path.join(path.basename(this.ctx.templatesDir), rel)} or fix the name`,
      );
      return {};
    }
    let realRoot: string;
    try {
      realRoot = fs.realpathSync(this.ctx.templatesDir);
    } catch {
      realRoot = this.ctx.templatesDir;
    }
    if (!real.startsWith(realRoot + path.sep)) return unsafe("resolves, through a symbolic link, outside the templates folder");
    let text: string;
    try {
      text = readInputFile(real, MAX_INPUT_BYTES);
    } catch (err) {
      if (!(err instanceof InputFileError)) throw err;
      if (err.reason === "not_file") return unsafe("is not a regular file");
      this.report(
        "file_too_large",
        `shader template \`${rel}\` of pass \`${p.id}\` is ${err.size} bytes, more than the limit of ${MAX_INPUT_BYTES} bytes for a template`,
        p.shaderWhere,
        "templates are small: check that the pass names the right file, or split the template",
      );
      return {};
    }
    try {
      return { path: real, reads: this.readsWithIncludes(real, text, realRoot) };
    } catch (err) {
      if (err instanceof TemplateSyntaxError) {
        const errFile = err.file ?? real;
        const span = new LineMap(errFile === real ? text : readInputFile(errFile, MAX_INPUT_BYTES)).spanAt(err.line, err.column);
        const what = err.tooDeep
          ? `template \`${path.relative(realRoot, errFile).split(path.sep).join("/")}\` ${err.message}`
          : err.refused
            ? `template refused: ${err.message}`
            : `template syntax error: ${err.message}`;
        const hint = err.tooDeep
          ? TEMPLATE_NESTING_HINT
          : err.refused
            ? 'templates are data: they print values, branch, loop and call their own macros (see docs/templates.md, "The template sandbox")'
            : "fix the template's Nunjucks syntax";
        this.diags.push(
          makeDiagnostic(
            err.tooDeep ? "template_limit_exceeded" : "template_error",
            what,
            { file: errFile, span },
            { hint, notes: [{ message: `used by pass \`${p.id}\``, location: whereLocation(this.file, p.shaderWhere) }] },
          ),
        );
        return { path: real };
      }
      throw err;
    }
  }

  /** One template's own reads, cached across specs by path, size and modification time. */
  private fileReads(real: string, text?: string): TemplateReads {
    const st = fs.statSync(real);
    const stamp = `${st.size}:${st.mtimeMs}`;
    const hit = this.ctx.templateReadsCache?.get(real);
    if (hit && hit.stamp === stamp) return hit.reads;
    const source = text ?? readInputFile(real, MAX_INPUT_BYTES);
    let reads = this.ctx.templateReadsStore?.get(source);
    if (!reads) {
      reads = templateReads(source);
      this.ctx.templateReadsStore?.set(source, reads);
    }
    this.ctx.templateReadsCache?.set(real, { stamp, reads });
    return reads;
  }

  /**
   * A template's reads together with those of the templates it includes or imports (names are
   * relative to the templates folder, as the renderer resolves them); names that would leave the
   * folder are skipped here, the renderer refuses them.
   */
  private readsWithIncludes(real: string, text: string, root: string): TemplateReads {
    const names = new Set<string>();
    const tunables = new Set<string>();
    const dtypes = new Set<string>();
    const includes: string[] = [];
    let anyTunable = false;
    let unknownIncludes = false;
    const seen = new Set<string>();
    const visit = (file: string, body?: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      let r: TemplateReads;
      try {
        r = this.fileReads(file, body);
      } catch (err) {
        if (err instanceof TemplateSyntaxError && err.file === undefined && file !== real)
          throw new TemplateSyntaxError(err.message, err.line, err.column, err.refused, file, err.tooDeep);
        throw err;
      }
      r.names.forEach((n) => names.add(n));
      r.tunables.forEach((n) => tunables.add(n));
      r.dtypes.forEach((n) => dtypes.add(n));
      anyTunable ||= r.anyTunable;
      unknownIncludes ||= r.unknownIncludes;
      for (const inc of r.includes) {
        includes.push(inc);
        // What a template the renderer refuses or cannot read would read is unknown (the render reports it).
        if (path.isAbsolute(inc) || inc.includes("\\") || templateSegmentsProblem(inc) !== undefined) {
          unknownIncludes = true;
          continue;
        }
        let incReal: string;
        try {
          incReal = fs.realpathSync(path.resolve(root, inc));
        } catch {
          unknownIncludes = true;
          continue;
        }
        // A file the renderer would not load (not a regular file, too large) is reported by the renderer.
        const st = incReal.startsWith(root + path.sep) ? fs.statSync(incReal) : undefined;
        if (st?.isFile() && st.size <= MAX_INPUT_BYTES) visit(incReal);
        else unknownIncludes = true;
      }
    };
    visit(real, text);
    return { names, tunables, dtypes, includes, anyTunable, unknownIncludes };
  }

  /** String literals that can become a value the template reads must be WGSL identifiers or type names: the template may print them. */
  private checkPrintedStrings(names: Iterable<string>, env: ReadonlyMap<string, CheckedDerive>, p: PassSpec): void {
    for (const { derive, literal } of valueStringLiterals(names, env)) {
      const text = String(literal.value);
      if (isWgslWord(text)) continue;
      const key = `${derive.expr.source.textStart}:${literal.span.start}`;
      if (this.printedReported.has(key)) continue;
      this.printedReported.add(key);
      this.diags.push(
        makeDiagnostic(
          "wgsl_value_invalid",
          `${JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text)} can become the value of \`${derive.name}\`, which template \`${p.shader}\` reads, but it is not a WGSL identifier or type name`,
          exprLocation(this.file, derive.expr.source, literal.span),
          {
            hint: "a template may print it into WGSL: use an identifier such as `f16` or a type such as `vec4<f32>`; keep WGSL code in the template",
          },
        ),
      );
    }
  }

  private readonly printedReported = new Set<string>();

  /**
   * A binding's variable name and its uniform fields' names are pasted into WGSL: a keyword,
   * reserved word or predeclared type (`let`, `fn`, `f32`, `self`), `_` or a `__` name would make
   * every shader of the pass fail to declare its bindings. Reported where the name is written (the
   * binding's key when the name defaults to it).
   */
  private checkWgslNames(b: BindingSpec): void {
    const problem = wgslNameProblem(b.name);
    if (problem)
      this.report(
        "reserved_name",
        `binding name \`${b.name}\` is ${problem}, which cannot name a WGSL variable`,
        b.nameWhere,
        `give the binding another \`name\` (e.g. \`${b.name.replace(/^_+/, "")}Buf\`), and use it in the template`,
      );
    const struct = uniformStructName(b.name);
    if (!problem && b.kind === "uniform" && (struct === b.name || wgslNameProblem(struct)))
      this.report(
        "reserved_name",
        struct === b.name
          ? `uniform binding name \`${b.name}\` is also the name of its WGSL struct type (the binding's name with its first letter upper-cased), so the two would collide`
          : `uniform binding name \`${b.name}\` gives its WGSL struct type the name \`${struct}\` (its first letter upper-cased), which is ${wgslNameProblem(struct)}`,
        b.nameWhere,
        "start the binding's name with a lower-case letter (e.g. `params`), and use it in the template",
      );
    for (const f of b.fields ?? []) {
      const fieldProblem = wgslNameProblem(f.name);
      if (fieldProblem)
        this.report(
          "reserved_name",
          `uniform field name \`${f.name}\` is ${fieldProblem}, which cannot name a WGSL struct member`,
          f.nameWhere,
          `rename the field (e.g. \`${f.name.replace(/^_+/, "")}Value\`), and use the new name in the template`,
        );
    }
  }

  private checkBinding(
    b: BindingSpec,
    env: ReadonlyMap<string, CheckedDerive>,
    intermediates: ReadonlyMap<string, string> | undefined,
  ): CheckedBinding {
    const spec = this.spec;
    let refIsInput: boolean | undefined;
    let buffer: BufferType;
    if (b.kind === "arg") {
      const isIn = spec.inputs.some((i) => i.name === b.ref);
      const isOut = spec.outputs.some((o) => o.name === b.ref);
      if (!isIn && !isOut) {
        this.report(
          "unknown_tensor",
          `binding \`${b.id}\` names \`${b.ref}\`, which is not an input or output`,
          b.refWhere ?? b.where,
          didYouMean(b.ref ?? "", [...spec.inputs.map((i) => i.name), ...spec.outputs.map((o) => o.name)]),
        );
      }
      refIsInput = isIn;
      buffer = b.buffer ?? (isOut ? "storage" : "read-only-storage");
    } else if (b.kind === "scratch") {
      if (intermediates && !intermediates.has(b.ref ?? "")) {
        this.report(
          "unknown_intermediate",
          `binding \`${b.id}\` names intermediate \`${b.ref}\`, which this variant does not declare`,
          b.refWhere ?? b.where,
          didYouMean(b.ref ?? "", intermediates.keys()) ?? "declare it under the variant's `intermediates`",
        );
      }
      buffer = b.buffer ?? "storage";
    } else {
      buffer = b.buffer ?? "uniform";
      if (buffer !== "uniform")
        this.report(
          "schema_value",
          `binding \`${b.id}\` is a uniform struct but has buffer \`${buffer}\``,
          b.where,
          "remove `buffer` or set it to `uniform`",
        );
    }
    let elementType: CheckedBinding["elementType"];
    if (b.elementType !== undefined) {
      if (b.elementType.startsWith("$")) {
        const name = b.elementType.slice(1);
        const d = env.get(name);
        if (!d)
          this.report(
            "bad_derive_ref",
            `\`${b.elementType}\` names no derive entry`,
            b.elementTypeWhere ?? b.where,
            didYouMean(name, env.keys()) ?? "a `$name` element type must name a derive entry whose value is a WGSL type",
          );
        else if (d.type.k !== "string" && d.type.k !== "error")
          this.report(
            "bad_derive_ref",
            `\`${b.elementType}\` names a derive entry of type ${showType(d.type)}; an element type must be a string`,
            b.elementTypeWhere ?? b.where,
            undefined,
            [{ message: `\`${name}\` is declared here`, location: whereLocation(this.file, d.keyWhere) }],
          );
        elementType = { derive: name };
      } else {
        if (!WGSL_ELEMENT.has(b.elementType.replace(/\s+/g, ""))) {
          this.report(
            "bad_wgsl_type",
            `\`${b.elementType}\` is not a WGSL element type kernelc can bind`,
            b.elementTypeWhere ?? b.where,
            didYouMean(b.elementType, WGSL_ELEMENT) ?? `use one of ${[...WGSL_ELEMENT].join(", ")}, or \`$name\` of a derive entry`,
          );
        }
        elementType = { literal: b.elementType.replace(/\s+/g, "") };
        this.checkBoolElementType(b, elementType.literal);
        if (WGSL_ELEMENT.has(elementType.literal)) this.checkElementTypeScalar(b, elementType.literal, intermediates);
      }
    } else if (b.kind !== "uniform") {
      // No element type: the tensor's (or intermediate's) element type, a scalar array.
      const dtype =
        b.kind === "arg" ? [...spec.inputs, ...spec.outputs].find((t) => t.name === b.ref)?.dtype : intermediates?.get(b.ref ?? "");
      if (dtype !== undefined && spec.typeConstraints.some((t) => t.name === dtype)) elementType = { typeParam: dtype };
      else if (dtype !== undefined && Object.prototype.hasOwnProperty.call(ONNX_TO_WGSL, dtype))
        elementType = { literal: ONNX_TO_WGSL[dtype]! };
      // Otherwise the tensor, intermediate or dtype is unknown: reported where it is named.
    }
    const fields = b.fields?.map((f): CheckedField => {
      const value = this.checkIn(f.value, env);
      // WGSL's bool is not host-shareable: a flag goes into a uniform as a u32 0 or 1.
      const cond = /^[\w.]+$/.test(value.source.text) ? value.source.text : `(${value.source.text})`;
      const hint =
        value.texpr.type.k === "bool"
          ? `WGSL's bool cannot be in a uniform buffer: make the field u32 with value \`1 if ${cond} else 0\` and test \`!= 0u\` in the template`
          : undefined;
      this.expectType(value, f.type === "f32" ? "number" : "int", `uniform field \`${f.name}\` (${f.type})`, hint);
      this.checkFieldRange(f, value, env, b.id);
      return { name: f.name, type: f.type, value };
    });
    if (fields) {
      const seen = new Set<string>();
      for (const f of b.fields ?? []) {
        if (seen.has(f.name)) this.report("duplicate_id", `uniform struct \`${b.id}\` has two fields named \`${f.name}\``, f.where);
        seen.add(f.name);
      }
    }
    return { id: b.id, name: b.name, kind: b.kind, ref: b.ref, refIsInput, buffer, elementType, fields, where: b.where };
  }

  /**
   * A tensor binding whose tensor is (or, through a type parameter, may be) bool must declare u32:
   * bool tensors are bound as u32 words of 4 elements. An element type given as `$name` is checked
   * when the shader is rendered, where its value is known.
   */
  private checkBoolElementType(b: BindingSpec, literal: string): void {
    if (b.kind !== "arg") return;
    const tensor = [...this.spec.inputs, ...this.spec.outputs].find((t) => t.name === b.ref);
    if (!tensor) return;
    const param = this.spec.typeConstraints.find((t) => t.name === tensor.dtype);
    const mayBeBool = param ? param.types.includes("bool") : tensor.dtype === "bool";
    const problem = mayBeBool ? boolElementTypeProblem(literal) : undefined;
    if (!problem) return;
    this.report(
      "bool_element_type",
      `binding \`${b.id}\` holds ${param ? `\`${tensor.name}\` of type ${param.name}, which may be bool` : `bool tensor \`${tensor.name}\``}: ${problem}`,
      b.elementTypeWhere ?? b.where,
      BOOL_ELEMENT_HINT,
    );
  }

  /**
   * A tensor or scratch binding's literal element type has the scalar of the tensor's dtype (for a
   * type parameter, of at least one of its types: the others are checked when the shader is
   * rendered, for the assignments a variant that binds it is built for).
   */
  private checkElementTypeScalar(b: BindingSpec, literal: string, intermediates: ReadonlyMap<string, string> | undefined): void {
    let types: readonly string[];
    let what: string;
    let param: string | undefined;
    if (b.kind === "arg") {
      const tensor = [...this.spec.inputs, ...this.spec.outputs].find((t) => t.name === b.ref);
      if (!tensor) return;
      const tc = this.spec.typeConstraints.find((t) => t.name === tensor.dtype);
      types = tc ? tc.types : [tensor.dtype];
      param = tc?.name;
      what = tc ? `\`${tensor.name}\` of type ${tc.name} (${tc.types.join(" or ")})` : `${tensor.dtype} tensor \`${tensor.name}\``;
    } else if (b.kind === "scratch") {
      const dtype = intermediates?.get(b.ref ?? "");
      if (dtype === undefined) return;
      types = [dtype];
      what = `${dtype} intermediate \`${b.ref}\``;
    } else return;
    const problems = types.map((t) => elementTypeProblem(t, literal));
    if (problems.some((p) => p === undefined)) return;
    this.report(
      "element_type_mismatch",
      `binding \`${b.id}\` holds ${what}: ${problems[0]}`,
      b.elementTypeWhere ?? b.where,
      elementTypeHint(types[0]!, param),
    );
  }

  /** The spec's `explain` list names derive entries (top-level, or of a variant or pass); showing one is a use of it. */
  private checkExplainList(variants: readonly CheckedVariant[]): void {
    const known = new Set(this.spec.derive.map((d) => d.name));
    for (const v of variants) {
      for (const name of v.derive.keys()) known.add(name);
      for (const p of v.passes) for (const name of p.derive.keys()) known.add(name);
    }
    for (const e of this.spec.explain) {
      if (!known.has(e.name))
        this.report(
          "unknown_derive",
          `\`explain\` names \`${e.name}\`, which is not a derive entry of the spec`,
          e.where,
          didYouMean(e.name, known) ?? "list names of entries under `derive` (of the kernel, a variant or a pass)",
        );
    }
  }

  run(): CheckedKernel {
    const spec = this.spec;
    // Top-level derive entries.
    const top = this.makeTable(spec.derive, undefined);
    this.checkNesting(top);
    const when = spec.when.map((w) => {
      const c = this.checkIn(w, top);
      this.expectType(c, "bool", "a `when` condition");
      return c;
    });
    const outputShapes = new Map<string, CExpr>();
    for (const o of spec.outputs) {
      if (!o.shape) continue;
      const c = this.checkIn(o.shape, top);
      this.expectType(c, "shape", `the shape of output \`${o.name}\``);
      this.expectRank(c, o.rank, `output \`${o.name}\``);
      outputShapes.set(o.name, c);
    }
    // Type constraints name ONNX types kernelc knows.
    for (const tc of spec.typeConstraints) {
      for (const [n, t] of tc.types.entries()) {
        if (!Object.prototype.hasOwnProperty.call(ONNX_TO_WGSL, t))
          this.report(
            "bad_type_constraint",
            `type constraint \`${tc.name}\` names \`${t}\`, which is not an ONNX element type kernelc supports`,
            tc.typesWhere?.[n] ?? tc.where,
            onnxTypeHint(t),
          );
      }
    }
    for (const i of [...spec.inputs, ...spec.outputs]) {
      if (!spec.typeConstraints.some((t) => t.name === i.dtype) && !Object.prototype.hasOwnProperty.call(ONNX_TO_WGSL, i.dtype)) {
        this.report(
          "unknown_type_param",
          `tensor \`${i.name}\` has dtype \`${i.dtype}\`, which is neither a type constraint nor an ONNX element type kernelc supports`,
          i.dtypeWhere ?? i.where,
          wgslNameHint(i.dtype) ??
            didYouMean(i.dtype, [...spec.typeConstraints.map((t) => t.name), ...Object.keys(ONNX_TO_WGSL)]) ??
            `declare it under \`typeConstraints\`, or use one of ${Object.keys(ONNX_TO_WGSL).join(", ")}`,
        );
      }
    }
    for (const i of spec.inputs) {
      if (i.storage !== undefined && !Object.prototype.hasOwnProperty.call(ONNX_TO_WGSL, i.storage))
        this.report(
          "bad_type_constraint",
          `input \`${i.name}\` has storage \`${i.storage}\`, which is not an ONNX element type kernelc supports`,
          i.storageWhere ?? i.where,
          onnxTypeHint(i.storage),
        );
    }
    for (const c of spec.attributeConstraints) {
      const a = spec.attributes.find((x) => x.name === c.name);
      if (!a)
        this.report(
          "unknown_attribute",
          `attribute constraint names \`${c.name}\`, which is not a declared attribute`,
          c.keyWhere,
          didYouMean(
            c.name,
            spec.attributes.map((x) => x.name),
          ) ?? "declare it under `attributes`",
        );
      // A call that leaves the attribute unset gets the default, which is then checked against
      // `values` like a value the call gives: a default outside them rejects every such call.
      else if (a.default !== undefined && c.values && !c.values.some((x) => x === a.default)) {
        const shown = (v: unknown): string => JSON.stringify(v);
        this.report(
          "schema_value",
          `attribute \`${a.name}\` has the default ${shown(a.default)}, which its constraint's \`values\` (${c.values.map(shown).join(", ")}) do not allow, so every call that leaves \`${a.name}\` unset would be rejected`,
          a.defaultWhere ?? a.where,
          `make the default one of the allowed values, or add ${shown(a.default)} to \`attributeConstraints.${a.name}.values\``,
          [{ message: "the allowed values are here", location: whereLocation(this.file, c.valuesWhere ?? c.where) }],
        );
      }
      // A call that omits the attribute gets its default, so `required` could never reject one.
      if (a && c.required && a.default !== undefined)
        this.report(
          "schema_value",
          `attribute \`${a.name}\` is required and has the default ${JSON.stringify(a.default)}: a call that omits it would get the default, so \`required\` could never reject one`,
          a.defaultWhere ?? a.where,
          `remove the default (the node must then set \`${a.name}\`), or remove \`"required": true\` (a call may then omit it)`,
          [{ message: "it is required here", location: whereLocation(this.file, c.where) }],
        );
    }
    // Top-level bindings, checked once in the top-level environment for their field values.
    const topBindings = new Map(spec.bindings.map((b) => [b.id, b]));
    for (const b of spec.bindings) this.checkWgslNames(b);
    // Variants.
    const seenVariants = new Map<string, Where>();
    const variants: CheckedVariant[] = [];
    spec.variants.forEach((v, order) => {
      const prev = seenVariants.get(v.id);
      if (prev)
        this.report("duplicate_id", `two variants have the id \`${v.id}\``, v.where, "give each variant a unique id", [
          { message: "the first is here", location: whereLocation(this.file, prev) },
        ]);
      seenVariants.set(v.id, v.where);
      variants.push(this.checkVariant(v, order, top, topBindings));
    });
    this.checkExplainList(variants);
    const kernel: CheckedKernel = {
      spec,
      attrTypes: new Map([...this.baseScope.attrs].map(([k, v]) => [k, v.type])),
      derive: top,
      when,
      outputShapes,
      variants,
    };
    // Lint cannot see the config's pins or cap: past the default cap, a warning says the build will need them.
    const factors = candidateFactors(kernel, {});
    if (factors.reduce((p, f) => p * f.count, 1) > DEFAULT_MAX_CANDIDATES) {
      const d = candidateLimitError(kernel, "with no tunable pinned", DEFAULT_MAX_CANDIDATES, factors).diagnostics[0];
      this.diags.push({
        ...d,
        severity: "warning",
        message: `${d.message}; the build fails unless kernelc.config.json pins tunables or raises maxCandidates`,
      });
    }
    return kernel;
  }

  private checkVariant(
    v: VariantSpec,
    order: number,
    top: Map<string, CheckedDerive>,
    topBindings: ReadonlyMap<string, BindingSpec>,
  ): CheckedVariant {
    const vTable = this.makeTable(v.derive, top);
    this.checkOverrides(vTable, top);
    const vEnv = new Map(top);
    for (const [k, d] of vTable) vEnv.set(k, d);
    this.checkOverrideCycles(vEnv, vTable);
    if (vTable.size > 0) this.checkNesting(vEnv);
    const when = v.when.map((w) => {
      const c = this.checkIn(w, vEnv);
      this.expectType(c, "bool", "a `when` condition");
      return c;
    });
    for (const f of v.features) {
      if (!this.ctx.featureNames.has(f))
        this.report(
          "schema_value",
          `variant \`${v.id}\` requires \`${f}\`, which is not a WebGPU feature`,
          v.where,
          didYouMean(f, this.ctx.featureNames),
        );
    }
    const interIds = new Map<string, string>();
    const intermediates = v.intermediates.map((i): CheckedIntermediate => {
      if (interIds.has(i.id)) this.report("duplicate_id", `variant \`${v.id}\` declares intermediate \`${i.id}\` twice`, i.where);
      else interIds.set(i.id, i.dtype);
      if (!Object.prototype.hasOwnProperty.call(ONNX_TO_WGSL, i.dtype)) {
        const param = this.spec.typeConstraints.find((tc) => tc.name === i.dtype);
        this.report(
          "bad_type_constraint",
          param
            ? `intermediate \`${i.id}\` has dtype \`${i.dtype}\`, a type parameter: an intermediate's dtype is an ONNX element type`
            : `intermediate \`${i.id}\` has dtype \`${i.dtype}\`, which kernelc does not support`,
          i.where,
          param
            ? `name an ONNX type (\`${i.dtype}\` takes ${param.types.map((t) => `\`${t}\``).join(", ")}), or give each type of \`${i.dtype}\` its own variant with \`when\` on \`dtypes.${i.dtype}\``
            : didYouMean(i.dtype, Object.keys(ONNX_TO_WGSL)),
        );
      }
      const shape = this.checkIn(i.shape, vEnv);
      this.expectType(shape, "shape", `the shape of intermediate \`${i.id}\``);
      return { id: i.id, dtype: i.dtype, shape };
    });
    const passIds = new Map<string, Where>();
    const passes = v.passes.map((p) => {
      const prev = passIds.get(p.id);
      if (prev)
        this.report("duplicate_id", `variant \`${v.id}\` has two passes with the id \`${p.id}\``, p.where, undefined, [
          { message: "the first is here", location: whereLocation(this.file, prev) },
        ]);
      passIds.set(p.id, p.where);
      return this.checkPass(p, vEnv, topBindings, interIds);
    });
    return { id: v.id, priority: v.priority, order, when, features: v.features, derive: vTable, intermediates, passes, where: v.where };
  }

  private checkPass(
    p: PassSpec,
    vEnv: Map<string, CheckedDerive>,
    topBindings: ReadonlyMap<string, BindingSpec>,
    interIds: ReadonlyMap<string, string>,
  ): CheckedPass {
    const pTable = this.makeTable(p.derive, vEnv);
    this.checkOverrides(pTable, vEnv);
    const env = new Map(vEnv);
    for (const [k, d] of pTable) env.set(k, d);
    this.checkOverrideCycles(env, pTable);
    if (pTable.size > 0) this.checkNesting(env);
    const bindings: CheckedBinding[] = [];
    const names = new Map<string, Where>();
    const structs: { b: BindingSpec; where: Where }[] = [];
    for (const ref of p.bindings) {
      let b: BindingSpec | undefined;
      if (ref.kind === "ref") {
        b = topBindings.get(ref.id);
        if (!b) {
          this.report(
            "unknown_binding",
            `pass \`${p.id}\` names binding \`${ref.id}\`, which is not declared under \`bindings\``,
            ref.where,
            didYouMean(ref.id, topBindings.keys()) ?? "declare it under the top-level `bindings`, or write the binding inline",
          );
          continue;
        }
      } else {
        b = ref.binding;
        this.checkWgslNames(b);
      }
      const where = ref.kind === "ref" ? ref.where : ref.binding.where;
      const prev = names.get(b.name);
      if (prev)
        this.report(
          "duplicate_binding_name",
          `pass \`${p.id}\` binds two resources named \`${b.name}\``,
          where,
          "each binding of a pass needs its own WGSL name (`name`)",
          [{ message: "the first is here", location: whereLocation(this.file, prev) }],
        );
      names.set(b.name, where);
      if (b.kind === "uniform") structs.push({ b, where });
      bindings.push(this.checkBinding(b, env, interIds));
    }
    for (const { b, where } of structs) {
      const struct = uniformStructName(b.name);
      const other = names.get(struct);
      if (other && struct !== b.name)
        this.report(
          "duplicate_binding_name",
          `pass \`${p.id}\` binds uniform \`${b.name}\`, whose WGSL struct type \`${struct}\` has the name of another of its bindings`,
          where,
          `rename the other binding (its \`name\`), or this one: kernelc names a uniform's struct type after it, first letter upper-cased`,
          [{ message: `the binding named \`${struct}\` is here`, location: whereLocation(this.file, other) }],
        );
    }
    const dispatch = [p.dispatch.x, p.dispatch.y, p.dispatch.z].map((d, i) => {
      const c = this.checkIn(d, env);
      this.expectType(c, "int", `dispatch ${"xyz"[i]}`);
      if (this.nestingReported.size === 0 && !hasErrorType(c.texpr) && c.texpr.type.k !== "float") {
        // A count known without a call and below 0 fails every call (the profile's maximum is the build's to check).
        const v = tryEvaluate(
          c.texpr,
          this.constEnv((n) => env.get(n), env),
        );
        if (typeof v === "number" && Number.isFinite(v) && !dispatchFits(v, Infinity))
          this.diags.push(dispatchRangeDiagnostic(this.file, c.source, "xyz"[i]!, v, Infinity));
      }
      return c;
    }) as unknown as [CExpr, CExpr, CExpr];
    const shader = this.resolveShader(p);
    if (shader.reads) this.checkPrintedStrings(shader.reads.names, env, p);
    return {
      id: p.id,
      name: p.name,
      shader: p.shader,
      shaderPath: shader.path,
      reads: shader.reads,
      derive: pTable,
      bindings,
      dispatch,
      where: p.where,
    };
  }
}

/** Whether an expression has a node whose type is an error (already reported): such trees are not evaluated. */
function hasErrorType(e: TExpr): boolean {
  const stack: TExpr[] = [e];
  while (stack.length > 0) {
    const x = stack.pop()!;
    if (x.type.k === "error") return true;
    if (x.k === "call") stack.push(...x.args);
    else if (x.k === "list") stack.push(...x.items);
    else if (x.k === "neg" || x.k === "not") stack.push(x.operand);
    else if (x.k === "binary") stack.push(x.left, x.right);
    else if (x.k === "cond") stack.push(x.cond, x.then, x.otherwise);
  }
  return false;
}

/**
 * Whether a finite `value` fits a uniform field of `type`: u32 an integer in 0..4294967295, i32 an
 * integer in -2147483648..2147483647, f32 any number whose nearest f32 is finite.
 */
export function uniformFits(type: string, value: number): boolean {
  if (type === "f32") return Number.isFinite(Math.fround(value));
  const [lo, hi] = type === "u32" ? [0, 4294967295] : [-2147483648, 2147483647];
  return Number.isInteger(value) && value >= lo && value <= hi;
}

/** Whether a workgroup count is one a dispatch can have: an integer in 0..max. */
export function dispatchFits(value: number, max: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= max;
}

/** The dispatch_out_of_range diagnostic of a workgroup count known without a call (`context` as for uniformRangeDiagnostic; `max` Infinity at lint). */
export function dispatchRangeDiagnostic(file: string, src: ExprSource, axis: string, value: number, max: number, context = ""): Diagnostic {
  const range = value < 0 ? "a negative workgroup count" : `outside 0..${max} (maxComputeWorkgroupsPerDimension)`;
  return makeDiagnostic(
    "dispatch_out_of_range",
    `dispatch ${axis} is always ${value}${context}, ${range}: every call would fail to plan`,
    whereLocation(file, src.where),
    {
      hint:
        value < 0
          ? "give a count of 0 or more (0 skips the pass)"
          : "dispatch fewer, larger workgroups (a bigger tunable workgroup or more work per invocation), or fold the count into y",
    },
  );
}

/** The uniform_out_of_range diagnostic of a field whose value is known (`context` says for which build values, when not a constant). */
export function uniformRangeDiagnostic(
  file: string,
  src: ExprSource,
  struct: string,
  field: { readonly name: string; readonly type: string },
  value: number,
  context = "",
): Diagnostic {
  const range =
    field.type === "f32"
      ? "a finite f32 (magnitude below about 3.4028235e+38)"
      : field.type === "u32"
        ? "0..4294967295"
        : "-2147483648..2147483647";
  return makeDiagnostic(
    "uniform_out_of_range",
    `uniform field \`${struct}.${field.name}\` (${field.type}) is always ${value}${context}, outside ${range}: every call would fail to plan`,
    whereLocation(file, src.where),
    {
      hint:
        field.type === "f32"
          ? "use a smaller value, or compute it in the shader from smaller factors"
          : `give a value in ${range}${field.type === "u32" && value < 0 ? ", or make the field i32 if it may be negative" : ""}`,
    },
  );
}

/** Partial evaluation of a constant part: its value, or UNKNOWN when it depends on a leaf or fails (division by zero is reported where it is evaluated). */
export function tryEvaluate(e: TExpr, env: EvalEnv): PValue {
  try {
    return evaluate(e, env);
  } catch (err) {
    if (err instanceof EvalError) return UNKNOWN;
    throw err;
  }
}

/**
 * The innermost sub-expressions of `e` whose value in `env` (a partial evaluation: UNKNOWN leaves
 * stay unknown) is an infinite or NaN number. A derive reference is not descended into: the entry
 * is checked where it is written.
 */
export function nonFiniteNodes(e: TExpr, env: EvalEnv): { node: TExpr; value: number }[] {
  const found: { node: TExpr; value: number }[] = [];
  const visit = (x: TExpr): boolean => {
    if (x.k === "derive" || x.k === "leaf" || x.k === "hasAttr") return false;
    const children =
      x.k === "call"
        ? x.args
        : x.k === "list"
          ? x.items
          : x.k === "neg" || x.k === "not"
            ? [x.operand]
            : x.k === "binary"
              ? [x.left, x.right]
              : x.k === "cond"
                ? [x.cond, x.then, x.otherwise]
                : [];
    let bad = false;
    for (const c of children) bad = visit(c) || bad;
    if (bad) return true;
    const v = tryEvaluate(x, env);
    if (typeof v !== "number" || Number.isFinite(v)) return false;
    found.push({ node: x, value: v });
    return true;
  };
  visit(e);
  return found;
}

/** The non_finite_value diagnostic for a sub-expression of `src`; `context` says for which build values, when not a constant. */
export function nonFiniteDiagnostic(file: string, src: ExprSource, node: TExpr, value: number, context = ""): Diagnostic {
  return makeDiagnostic(
    "non_finite_value",
    `\`${src.text.slice(node.span.start, node.span.end)}\` evaluates to ${value}${context}: kernelc works with finite numbers only`,
    exprLocation(file, src, node.span),
    {
      hint: 'use a finite value (the largest float kernelc emits is about 1.8e308); for a "no limit" sentinel, use a large finite number',
    },
  );
}

/** Runs the check phase on one loaded spec (or takes the kept check of the same spec, see KeptCheck). */
export function checkKernel(spec: KernelSpec, ctx: CheckContext): CheckResult {
  const keys = ctx.tuneKeys?.get(spec.name) ?? new Set<string>();
  const tuneKeys = [...keys].sort().join(",");
  const kept = ctx.keptChecks?.get(spec.file);
  if (
    kept &&
    kept.source === spec.source &&
    kept.templatesDir === ctx.templatesDir &&
    kept.tuneKeys === tuneKeys &&
    sameShaders(spec, ctx, kept.shaders)
  )
    return kept.result;
  const c = new SpecChecker(spec, ctx);
  const kernel = c.run();
  const envOf = (v: CheckedVariant, p?: CheckedPass): ReadonlyMap<string, CheckedDerive> => deriveEnv(kernel, v, p);
  // What is unused is known only when every template was read and every expression checked (a
  // broken expression's reads are unknown, so what it reads would be reported as unused).
  const unused = c.templatesRead && !c.diags.some((d) => d.severity === "error") ? unusedWarnings(kernel, spec.file, envOf, keys) : [];
  // An output left unbound is often the echo of an error (a binding naming a misspelt tensor, a
  // pass naming a misspelt binding): it is not reported beside such an error.
  const clean = !c.diags.some((d) => d.code === "unknown_tensor" || d.code === "unknown_binding");
  const warnings = [
    ...unused,
    ...optionalBindingWarnings(kernel, spec.file, envOf),
    ...absentTensorReadErrors(kernel, spec.file, envOf),
    ...(clean ? unboundOutputWarnings(kernel, spec.file, envOf) : []),
  ];
  const result = { kernel, diagnostics: [...c.diags, ...warnings] };
  const shaders = c.resolvedShaders();
  if (shaders) ctx.keptChecks?.set(spec.file, { source: spec.source, templatesDir: ctx.templatesDir, tuneKeys, result, shaders });
  else ctx.keptChecks?.delete(spec.file);
  return result;
}

/** Whether each shader path resolves as it did for a kept check: the same file, and reads equal in content and order. */
function sameShaders(spec: KernelSpec, ctx: CheckContext, shaders: KeptCheck["shaders"]): boolean {
  const list = (xs: Iterable<string>): string => JSON.stringify([...xs]);
  const sameReads = (a: TemplateReads, b: TemplateReads): boolean =>
    list(a.names) === list(b.names) &&
    list(a.tunables) === list(b.tunables) &&
    list(a.dtypes) === list(b.dtypes) &&
    list(a.includes) === list(b.includes) &&
    a.anyTunable === b.anyTunable &&
    a.unknownIncludes === b.unknownIncludes;
  for (const [rel, was] of shaders) {
    const now = new SpecChecker(spec, ctx).resolveAgain(rel);
    if (!now || now.path !== was.path || !sameReads(now.reads, was.reads)) return false;
  }
  return true;
}
