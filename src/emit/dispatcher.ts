/**
 * Generates a profile's dispatcher module: per kernel a typed plan function with every
 * build-time value, and every value the call's validation fixes, folded to a constant, as plain
 * TypeScript (comparisons, integer-checked arithmetic written in place, and a few helper calls) —
 * no expression interpreter. Spec text never becomes code: names become numbered identifiers, and
 * every string from the spec is emitted through JSON.stringify.
 *
 * Layout of the generated code, per kernel: the plan function validates the call (straight-line
 * checks of the known tensors and attributes) and constructs the class of the call's dtype
 * assignment, whose fields are the call's tensors and attributes and one memo per derive entry
 * (read as `this.mN ?? this.dN()`). Its `plan()` checks the kernel's conditions, then each
 * variant's in selection order, and runs the first variant's plan method: shader ids, scratch
 * sizes, bindings (uniform bytes written field by field), workgroup counts, output shapes, in the
 * interpreter's order. Why a variant was rejected is only worked out when none fits.
 */
import { deriveEnv } from "../check/check-spec.js";
import { type CExpr, type CheckedBinding, type CheckedDerive, type CheckedKernel, type CheckedVariant } from "../model/checked.js";
import { leavesOf, type LeafInfo, type LeafKey } from "../check/binding-time.js";
import { leafText, type Leaf, type TExpr, type Value } from "../model/ir.js";
import type { Type } from "../model/types.js";
import { UNKNOWN, evaluate } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import { DeriveEnv, StaticLeaves, type StaticFacts } from "../plan/env.js";
import { nodeText, operandsOf } from "../plan/explain-false.js";
import { ELEMENT_BYTES, type AssignmentModel, type KernelModel, type VariantModel } from "../plan/dispatch-model.js";
import { DISPATCHER_PRELUDE } from "./dispatcher-prelude.js";

/** A JS string literal. */
const q = (s: string): string => JSON.stringify(s);

/**
 * Text safe inside a generated comment (block or line): no line breaks or other control characters,
 * and no `*` followed by `/`, so spec text in a comment can never end it early.
 */
export function commentText(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, "?").replace(/\*\//g, "*\\/");
}

/** A literal of a language value. */
function lit(v: Value): string {
  if (typeof v === "number") {
    if (Number.isNaN(v) || !Number.isFinite(v)) throw new Error(`cannot emit non-finite number ${v}`);
    if (Object.is(v, -0)) return "(-0)";
    return v < 0 ? `(${String(v)})` : String(v);
  }
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "string") return q(v);
  return `[${v.map((x) => lit(x)).join(", ")}]`;
}

function tsType(t: Type): string {
  switch (t.k) {
    case "int":
    case "float":
    case "number":
      return "number";
    case "bool":
      return "boolean";
    case "string":
    case "dtype":
      return "string";
    case "list":
      return "readonly number[]";
    default:
      return "V";
  }
}

/** A tensor id as the generated code holds it: its field, and what validation guarantees about it. */
interface TensorSlot {
  readonly index: number;
  /** Present in every valid call. */
  readonly required: boolean;
  /** A type parameter or an ONNX type: a present tensor has it. */
  readonly dtype: string;
  /** The declared rank: a present tensor has it. */
  readonly rank?: number;
}

/** A kernel's call as the generated code holds it after validation: tensor and attribute fields. */
interface ValidatedCall {
  readonly tensors: ReadonlyMap<string, TensorSlot>;
  readonly attrIndex: ReadonlyMap<string, number>;
  /** Attributes with a value in every valid call: those with a default, and required ones. */
  readonly definedAttrs: ReadonlySet<string>;
}

/**
 * The run-time leaves whose values validation fixes, for calls of one dtype assignment: a required
 * tensor is present and has its declared rank and the assignment's dtype, and an attribute with
 * a value is given (`has`). None of these can fail to evaluate, so folding them changes no error.
 */
function validatedLeaves(k: CheckedKernel, facts: StaticFacts, call: ValidatedCall): Map<LeafKey, Value> {
  const pins = new Map<LeafKey, Value>();
  for (const [id, slot] of call.tensors) {
    if (!slot.required) continue;
    pins.set(`present.${id}`, true);
    if (slot.rank !== undefined) pins.set(`ranks.${id}`, slot.rank);
    const param = k.spec.typeConstraints.some((tc) => tc.name === slot.dtype);
    pins.set(`tensorDtypes.${id}`, param ? facts.dtypes[slot.dtype] : slot.dtype);
  }
  for (const name of call.definedAttrs) pins.set(`has(attrs, ${JSON.stringify(name)})`, true);
  return pins;
}

/** Generated code for an expression: `value` when it folded to a constant, `read` when it is a plain read that cannot fail. */
interface Code {
  readonly code: string;
  readonly value?: Value;
  readonly read?: boolean;
}

/** A derive environment of the generated code: top-level, a variant's, or a pass's. */
interface GenEnv {
  readonly index: number;
  readonly parent?: GenEnv;
  readonly derives: ReadonlyMap<string, CheckedDerive>;
  /** Names defined by this environment's own table. */
  readonly own: ReadonlySet<string>;
}

/** Emits one assignment's context class and plan function. */
class AssignmentGen {
  private readonly methods: string[] = [];
  /** Memo fields: declared (no class-field initializers) and set in the constructor, which V8 runs as plain stores. */
  private readonly fields: { name: string; type: string }[] = [];
  /** (env index, derive name) -> its memo field and method, its constant (or error), or its inlined read. */
  private readonly fnCache = new Map<string, { memo: string; method: string } | { value: Value } | { error: string } | { read: string }>();
  private fnCount = 0;
  private condCount = 0;
  private readonly envs: GenEnv[] = [];
  readonly top: GenEnv;

  /** Build-time leaves, plus the run-time leaves that validation fixes for every call reaching this class. */
  private readonly statics: StaticLeaves;
  private readonly pinned: ReadonlyMap<LeafKey, Value>;

  constructor(
    private readonly k: CheckedKernel,
    facts: StaticFacts,
    private readonly valid: ValidatedCall,
  ) {
    this.pinned = validatedLeaves(k, facts, valid);
    this.statics = new StaticLeaves(facts, this.pinned);
    this.top = this.env(undefined, k.derive, new Set(k.derive.keys()));
  }

  /** Temporaries of the method whose body is being generated: operands and results of checked arithmetic. */
  private temps: string[] = [];

  private temp(): string {
    const t = `n${this.temps.length}`;
    this.temps.push(t);
    return t;
  }

  /**
   * Generates a method body in its own scope of temporaries (generating it may generate other
   * methods first); returns the body and the declaration line of its temporaries ("" if none).
   */
  scoped<T>(body: () => T): { body: T; temps: string } {
    const outer = this.temps;
    this.temps = [];
    try {
      const result = body();
      return { body: result, temps: this.temps.length ? `    let ${this.temps.map((t) => `${t}: number`).join(", ")};\n` : "" };
    } finally {
      this.temps = outer;
    }
  }

  /** Whether every leaf is known when the code is generated (so the expression folds exactly). */
  private known(leaves: ReadonlyMap<LeafKey, LeafInfo>): boolean {
    for (const l of leaves.values()) if (l.runTime && !this.pinned.has(l.key)) return false;
    return true;
  }

  env(parent: GenEnv | undefined, derives: ReadonlyMap<string, CheckedDerive>, own: ReadonlySet<string>): GenEnv {
    const e: GenEnv = { index: this.envs.length, parent, derives, own };
    this.envs.push(e);
    return e;
  }

  /** Whether `name` in env `e` means the same computation as in its parent. */
  private sameAsParent(e: GenEnv, name: string, seen = new Set<string>()): boolean {
    if (!e.parent || e.own.has(name)) return false;
    if (seen.has(name)) return true;
    seen.add(name);
    const d = e.derives.get(name);
    if (!d) return true;
    for (const r of d.reads) if (!this.sameAsParent(e, r, seen)) return false;
    return true;
  }

  /** The code that reads derive `name` in env `e`. */
  private deriveRef(e: GenEnv, name: string): Code {
    let owner = e;
    while (owner.parent && this.sameAsParent(owner, name)) owner = owner.parent;
    const key = `${owner.index}:${name}`;
    let f = this.fnCache.get(key);
    if (!f) {
      const d = owner.derives.get(name)!;
      const leaves = leavesOf(d.expr.texpr, owner.derives);
      if (this.known(leaves)) {
        try {
          const v = new DeriveEnv(owner.derives, this.statics).derive(name);
          f = v === UNKNOWN ? undefined : { value: v as Value };
        } catch (err) {
          if (!(err instanceof EvalError)) throw err;
          f = { error: err.message };
        }
      }
      if (!f) {
        const { body, temps } = this.scoped(() => this.expr(d.expr.texpr, owner, d.expr));
        if (body.read) {
          // A plain read (a field, a dimension of a guaranteed tensor) is cheaper than a memo: inline it.
          f = { read: body.code };
        } else {
          const id = this.fnCount++;
          const t = tsType(d.type);
          this.field(`m${id}`, t);
          this.methods.push(
            `  /** ${owner.index === 0 ? "derive" : `derive (env ${owner.index})`} ${commentText(q(name))}: computes m${id} (read as this.m${id} ?? this.d${id}()) */\n  d${id}(): ${t} {\n${temps}    try {\n      return (this.m${id} = ${body.code});\n    } catch (e) {\n      throw $wrap(e, ${q(name)});\n    }\n  }`,
          );
          f = { memo: `m${id}`, method: `d${id}` };
        }
      }
      this.fnCache.set(key, f);
    }
    if ("value" in f) return { code: lit(f.value), value: f.value };
    if ("error" in f) return { code: `$err(${q(f.error)})` };
    if ("read" in f) return { code: f.read, read: true };
    // The memo is checked where the value is read, so a derive already computed costs no call.
    return { code: `(this.${f.memo} ?? this.${f.method}())` };
  }

  private tensor(id: string): string {
    return `this.t${this.valid.tensors.get(id)!.index}`;
  }

  private attr(name: string): string {
    return `this.a${this.valid.attrIndex.get(name)}`;
  }

  /**
   * Code for a leaf read (run-time leaves) or its constant (build-time and validated leaves). A
   * tensor validation guarantees is read without the absence check, an attribute that always has
   * a value without the missing-value check.
   */
  private leaf(l: Leaf): Code {
    const st = this.statics.leaf(l);
    if (st !== UNKNOWN) return { code: lit(st as Value), value: st as Value };
    if (l.ns === "attrs") {
      const a = this.attr(l.name);
      return this.valid.definedAttrs.has(l.name) ? { code: a, read: true } : { code: `$attr(${a}, ${q(l.name)})` };
    }
    const t = this.tensor(l.name);
    if (l.ns === "present") return { code: `(${t} !== null)`, read: true };
    const required = this.valid.tensors.get(l.name)!.required;
    const desc = required ? `${t}!` : `$need(${t}, ${q(`${l.ns}.${l.name}`)}, ${q(l.name)})`;
    switch (l.ns) {
      case "shapes":
        return { code: `${desc}.shape`, read: required };
      case "ranks":
        return { code: `${desc}.shape.length`, read: required };
      case "tensorDtypes":
        return { code: `${desc}.dtype`, read: required };
      default:
        throw new Error(`unfoldable build-time leaf ${leafText(l)}`);
    }
  }

  /** Code for an expression in env `e`. */
  expr(x: TExpr, e: GenEnv, src: CExpr): Code {
    // Closed sub-expressions (no run-time leaf) fold to constants, or to the error they raise.
    if (x.k !== "const" && x.k !== "derive") {
      const leaves = leavesOf(x, e.derives);
      if (this.known(leaves)) {
        try {
          const v = evaluate(x, new DeriveEnv(e.derives, this.statics));
          if (v !== UNKNOWN) return { code: lit(v as Value), value: v as Value };
        } catch (err) {
          if (!(err instanceof EvalError)) throw err;
          return { code: `$err(${q(err.message)})` };
        }
      }
    }
    const num = (y: TExpr): string => `(${this.expr(y, e, src).code} as number)`;
    switch (x.k) {
      case "const":
        return { code: lit(x.value), value: x.value };
      case "leaf":
        return this.leaf(x.leaf);
      case "hasAttr":
        return { code: `(${this.attr(x.name)} !== undefined)` };
      case "derive":
        return this.deriveRef(e, x.name);
      case "list":
        return { code: `[${x.items.map((i) => `${num(i)}`).join(", ")}]` };
      case "neg":
        return { code: `$neg(${num(x.operand)})` };
      case "not":
        return { code: `!(${this.expr(x.operand, e, src).code})` };
      case "cond": {
        const c = this.expr(x.cond, e, src);
        if (c.value === true) return this.expr(x.then, e, src);
        if (c.value === false) return this.expr(x.otherwise, e, src);
        return { code: `(${c.code} ? ${this.expr(x.then, e, src).code} : ${this.expr(x.otherwise, e, src).code})` };
      }
      case "call":
        return this.call(x, e, src);
      case "binary": {
        if (x.op === "and" || x.op === "or") {
          const l = this.expr(x.left, e, src);
          const short = x.op === "or";
          if (l.value === short) return { code: lit(short), value: short };
          if (l.value === !short) return this.expr(x.right, e, src);
          const r = this.expr(x.right, e, src);
          // `b and true`, `b or false`: the left side decides (and raises any error) on its own.
          if (r.value === !short && x.left.type.k === "bool") return { code: l.code };
          return { code: `(${l.code} ${short ? "||" : "&&"} ${r.code})` };
        }
        const lt = x.left.type.k;
        const rt = x.right.type.k;
        const mode = lt === "float" || rt === "float" ? "F" : lt === "int" && rt === "int" ? "I" : "N";
        if ((x.op === "+" || x.op === "-" || x.op === "*") && mode !== "F") return { code: this.checked(x.op, mode, x.left, x.right, e, src) };
        const L = this.expr(x.left, e, src).code;
        const right = this.expr(x.right, e, src);
        const R = right.code;
        switch (x.op) {
          case "==":
            return { code: lt === "list" || rt === "list" ? `$eq(${L}, ${R})` : `(${L} === ${R})` };
          case "!=":
            return { code: lt === "list" || rt === "list" ? `!$eq(${L}, ${R})` : `(${L} !== ${R})` };
          case "<":
          case "<=":
          case ">":
          case ">=":
            return { code: `((${L} as number) ${x.op} (${R} as number))` };
        }
        const a = `(${L} as number)`;
        const b = `(${R} as number)`;
        const divisor = right.value;
        if (mode === "I" && typeof divisor === "number" && divisor !== 0) {
          // By a constant other than zero: no zero check, so the integer division or modulo is written in place.
          const r = this.temp();
          if (x.op === "%") return { code: `(${r} = ${a} % ${b}, ${r} ${divisor < 0 ? ">" : "<"} 0 ? ${r} + ${b} : ${r} === 0 ? 0 : ${r})` };
          return { code: this.safe(r, `Math.floor(${a} / ${b})`) };
        }
        const table: Record<string, Record<string, string>> = {
          "+": { F: `(${a} + ${b})` },
          "-": { F: `(${a} - ${b})` },
          "*": { F: `(${a} * ${b})` },
          "/": { F: `$divF(${a}, ${b})`, I: `$fdivI(${a}, ${b})`, N: `$divN(${a}, ${b})` },
          "//": { F: `$fdivF(${a}, ${b})`, I: `$fdivI(${a}, ${b})`, N: `$fdivN(${a}, ${b})` },
          "%": { F: `$modF(${a}, ${b})`, I: `$modI(${a}, ${b})`, N: `$modN(${a}, ${b})` },
        };
        return { code: table[x.op][mode] };
      }
    }
  }

  /**
   * Integer-checked `+`, `-`, `*` in place, without a helper call: the result must be a safe
   * integer when both operands are integers (always, for int-typed ones; "N" mode checks at run
   * time, and only when the result is not safe). Operands that are not plain reads go through
   * temporaries, so each is evaluated once.
   */
  private checked(op: "+" | "-" | "*", mode: "I" | "N", left: TExpr, right: TExpr, e: GenEnv, src: CExpr): string {
    const operand = (y: TExpr): { set: string; use: string } => {
      const c = this.expr(y, e, src);
      if (c.value !== undefined || c.read || mode === "I") return { set: "", use: `(${c.code} as number)` };
      const t = this.temp();
      return { set: `${t} = (${c.code} as number), `, use: t };
    };
    const a = operand(left);
    const b = operand(right);
    const r = this.temp();
    const safe = `Number.isSafeInteger(${r})${mode === "N" ? ` || !$isI(${a.use}, ${b.use})` : ""}`;
    return `(${a.set}${b.set}${r} = ${a.use} ${op} ${b.use}, ${safe} ? ${r} : $overflow(${r}))`;
  }

  /** `value` through temporary `t`, failing with the integer-overflow error unless it is a safe integer (as $chk). */
  private safe(t: string, value: string): string {
    return `(${t} = ${value}, Number.isSafeInteger(${t}) ? ${t} : $overflow(${t}))`;
  }

  private call(x: Extract<TExpr, { k: "call" }>, e: GenEnv, src: CExpr): Code {
    const dim = this.dimRead(x, e, src);
    return dim === undefined ? { code: this.callCode(x, e, src) } : { code: dim, read: true };
  }

  /** `dim(shapes.X, k)` as a plain read, when it is one (see guaranteedDim). */
  private dimRead(x: Extract<TExpr, { k: "call" }>, e: GenEnv, src: CExpr): string | undefined {
    const target = x.args[0];
    if (x.fn !== "dim" || target.k !== "leaf" || target.leaf.ns !== "shapes") return undefined;
    return this.guaranteedDim(target.leaf.name, this.expr(x.args[1], e, src).value);
  }

  /** A dimension of a guaranteed tensor at a constant axis within its validated rank: read directly, it cannot fail. */
  private guaranteedDim(tensor: string, axis: Value | undefined): string | undefined {
    const slot = this.valid.tensors.get(tensor)!;
    if (!slot.required || slot.rank === undefined || typeof axis !== "number" || !Number.isInteger(axis) || axis < -slot.rank || axis >= slot.rank) return undefined;
    return `${this.tensor(tensor)}!.shape[${axis < 0 ? axis + slot.rank : axis}]`;
  }

  private callCode(x: Extract<TExpr, { k: "call" }>, e: GenEnv, src: CExpr): string {
    const arg = (i: number): string => this.expr(x.args[i], e, src).code;
    const n = (i: number): string => `(${arg(i)} as number)`;
    switch (x.fn) {
      case "dim": {
        const target = x.args[0];
        if (target.k === "leaf" && target.leaf.ns === "shapes") {
          // Same order as the interpreter: the axis first, then the tensor.
          const name = target.leaf.name;
          return `$dimT(${this.tensor(name)}, ${n(1)}, ${q(name)})`;
        }
        return `$dimS(${arg(0)} as readonly number[], ${n(1)}, "shape")`;
      }
      case "min":
      case "max":
        return `Math.${x.fn}(${x.args.map((_, i) => n(i)).join(", ")})`;
      case "floor":
        return `$chk(Math.floor(${n(0)}))`;
      case "ceilDiv": {
        const divisor = this.expr(x.args[1], e, src).value;
        // By a constant other than zero, in place (as for the division operators).
        if (typeof divisor === "number" && divisor !== 0) return this.safe(this.temp(), `-Math.floor(-${n(0)} / ${n(1)})`);
        return `$ceilDiv(${n(0)}, ${n(1)})`;
      }
      case "pow2ceil":
        return `$pow2ceil(${n(0)})`;
      case "sameShape":
        return `$same(${arg(0)} as readonly number[], ${arg(1)} as readonly number[])`;
      case "f16Ok":
        return `(${arg(0)} === "float16")`;
    }
  }

  /** Code reading a pass's shader-key leaf: a plain read, or code that throws an EvalFailure when the leaf has no value. */
  keyLeaf(l: LeafInfo): Code {
    if (l.axis !== undefined) {
      const read = this.guaranteedDim(l.leaf.name, l.axis);
      if (read !== undefined) return { code: read, read: true };
      return { code: `$dimS($need(${this.tensor(l.leaf.name)}, ${q(`dim(shapes.${l.leaf.name}, ${l.axis})`)}, ${q(l.leaf.name)}).shape, ${l.axis}, ${q(`shapes.${l.leaf.name}`)})` };
    }
    if (l.key.startsWith("has(")) return this.pinned.has(l.key) ? { code: "true", value: true } : { code: `(${this.attr(l.leaf.name)} !== undefined)`, read: true };
    return this.leaf(l.leaf);
  }

  /** Code (a string expression) explaining why condition `src` is not true, mirroring explainFalse. */
  explain(src: CExpr, e: GenEnv): string {
    return this.explainNode(src.texpr, src, e, "[]", 0);
  }

  /** The env that owns derive `name` as seen from `e` (the outermost one computing the same thing). */
  private ownerOf(e: GenEnv, name: string): GenEnv {
    let owner = e;
    while (owner.parent && this.sameAsParent(owner, name)) owner = owner.parent;
    return owner;
  }

  private readonly explainers = new Map<string, string>();

  /** Code explaining why `node` is not true; `pathCode` is the code of the derive path so far (a string[]). */
  private explainNode(node: TExpr, cur: CExpr, e: GenEnv, pathCode: string, depth: number): string {
    if (depth > 200) throw new Error("explanation too deep");
    if (node.k === "binary" && node.op === "and") {
      const L = this.expr(node.left, e, cur).code;
      return `((l: unknown) => l === false || $isFail(l) ? ${this.explainNode(node.left, cur, e, pathCode, depth + 1)} : ${this.explainNode(node.right, cur, e, pathCode, depth + 1)})($try(() => ${L}))`;
    }
    if (node.k === "cond") {
      const C = this.expr(node.cond, e, cur).code;
      return `((c: unknown) => c === true ? ${this.explainNode(node.then, cur, e, pathCode, depth + 1)} : c === false ? ${this.explainNode(node.otherwise, cur, e, pathCode, depth + 1)} : ${this.explainNode(node.cond, cur, e, pathCode, depth + 1)})($try(() => ${C}))`;
    }
    if (node.k === "derive") {
      const d = e.derives.get(node.name);
      if (d && d.type.k === "bool") {
        // One explanation method per boolean derive entry and owning env, shared by every condition.
        const owner = this.ownerOf(e, node.name);
        const key = `${owner.index}:${node.name}`;
        let method = this.explainers.get(key);
        if (!method) {
          method = `x${this.explainers.size}`;
          this.explainers.set(key, method);
          const od = owner.derives.get(node.name)!;
          const { body, temps } = this.scoped(() => this.explainNode(od.expr.texpr, od.expr, owner, "path", depth + 1));
          this.methods.push(`  /** why ${commentText(q(node.name))} is not true */\n  ${method}(path: readonly string[]): string {\n${temps}    return ${body};\n  }`);
        }
        return `this.${method}([...${pathCode}, ${q(node.name)}])`;
      }
    }
    const operands = operandsOf(node).filter((o) => o.k !== "const");
    const head = `\`${nodeText(cur, node)}\` is false`;
    if (operands.length === 0) return `$where(${pathCode}) + ${q(head)}`;
    const parts = operands.map((o) => {
      const text = o.k === "leaf" ? leafText(o.leaf) : nodeText(cur, o);
      return `${q(`${text} = `)} + $showT($try(() => ${this.expr(o, e, cur).code}))`;
    });
    return `$where(${pathCode}) + ${q(head + " (")} + ${parts.join(` + ", " + `)} + ")"`;
  }

  /**
   * A method telling whether a condition holds, and one explaining why it does not. The
   * explanation is only built when a message needs it: for a failed contract condition at once,
   * for a rejected variant only when no variant fits (derives are pure, so it is the same then).
   */
  condMethod(c: CExpr, e: GenEnv): { holds: string; why: string } {
    const id = this.condCount++;
    const holds = this.scoped(() => this.expr(c.texpr, e, c).code);
    const why = this.scoped(() => ({ value: this.expr(c.texpr, e, c).code, explanation: this.explain(c, e) }));
    this.methods.push(
      `  /** when ${commentText(q(c.source.text))} */\n  c${id}(): boolean {\n${holds.temps}    try {\n      return (${holds.body}) === true;\n    } catch (e) {\n      return $unheld(e);\n    }\n  }`,
      `  /** why ${commentText(q(c.source.text))} does not hold */\n  w${id}(): string {\n${why.temps}    try {\n      (${why.body.value});\n    } catch (e) {\n      return $condFail(e, ${q(c.source.text)});\n    }\n    return ${why.body.explanation};\n  }`,
    );
    return { holds: `this.c${id}()`, why: `this.w${id}()` };
  }

  /** Declares a memo field. */
  field(name: string, type: string): void {
    this.fields.push({ name, type });
  }

  /** Emits a method and returns its name. */
  method(name: string, body: string): string {
    this.methods.push(`  ${name} {\n${body}\n  }`);
    return name;
  }

  classText(className: string, tensorCount: number, attrCount: number): string {
    const tensors = [...Array(tensorCount).keys()].map((i) => `t${i}`);
    const attrs = [...Array(attrCount).keys()].map((i) => `a${i}`);
    const decls = [
      ...tensors.map((t) => `  declare readonly ${t}: TensorDesc | null;`),
      ...attrs.map((a) => `  declare readonly ${a}: unknown;`),
      ...this.fields.map((f) => `  private declare ${f.name}: ${f.type} | undefined;`),
    ];
    const params = [...tensors.map((t) => `${t}: TensorDesc | null`), ...attrs.map((a) => `${a}: unknown`)];
    const body = [...tensors, ...attrs].map((x) => `    this.${x} = ${x};`).concat(this.fields.map((f) => `    this.${f.name} = undefined;`));
    return [`class ${className} {`, ...decls, `  constructor(${params.join(", ")}) {`, ...body, `  }`, ...this.methods, `}`].join("\n");
  }
}


/** What generating one assignment's class shares: the kernel model, the facts, the generator, message constants. */
interface AssignmentContext {
  readonly model: KernelModel;
  readonly facts: StaticFacts;
  readonly g: AssignmentGen;
  readonly valid: ValidatedCall;
  /** The module constant holding a message prefix (strings repeated across error paths are pooled). */
  readonly sc: (text: string) => string;
}

/** Generates the plan function of one kernel (its validation, assignment switch and classes). */
function generateKernel(model: KernelModel, kIndex: number, consts: string[]): { code: string; fn: string } {
  const k = model.kernel;
  const spec = k.spec;
  const name = spec.name;
  const tensorIds: string[] = [];
  for (const i of spec.inputs) tensorIds.push(i.name);
  for (const o of spec.outputs) if (!tensorIds.includes(o.name)) tensorIds.push(o.name);
  const tensorIndex = new Map(tensorIds.map((t, i) => [t, i]));
  // An id that is an input reads the call's input; validation rejects a call without a required one.
  const tensors = new Map<string, TensorSlot>(
    tensorIds.map((id, index) => {
      const io = spec.inputs.find((i) => i.name === id) ?? spec.outputs.find((o) => o.name === id)!;
      return [id, { index, required: !io.optional, dtype: io.dtype, rank: io.rank }];
    }),
  );
  const attrIndex = new Map(spec.attributes.map((a, i) => [a.name, i]));
  const required = new Set(spec.attributeConstraints.filter((c) => c.required).map((c) => c.name));
  const call: ValidatedCall = { tensors, attrIndex, definedAttrs: new Set(spec.attributes.filter((a) => a.default !== undefined || required.has(a.name)).map((a) => a.name)) };
  const paramIndex = new Map(spec.typeConstraints.map((t, i) => [t.name, i]));
  const inputIds = spec.inputs.map((i) => i.name);
  const outputIds = spec.outputs.map((o) => o.name);
  const out: string[] = [];
  const fn = `plan${kIndex}`;
  const classes: string[] = [];
  const assignmentCalls: string[] = [];

  model.assignments.forEach((a, ai) => {
    const cls = `K${kIndex}A${ai}`;
    classes.push(generateAssignment(model, a, cls, call, consts));
    const test = Object.keys(a.facts.dtypes)
      .map((p) => `dt${paramIndex.get(p)} === ${q(a.facts.dtypes[p])}`)
      .join(" && ");
    const args = [...tensorIds.map((_, i) => `t${i}`), ...spec.attributes.map((_, i) => `a${i}`)].join(", ");
    assignmentCalls.push(`  if (${test || "true"}) return new ${cls}(${args}).plan();`);
  });

  // Validation: the same checks, order and messages as validateCall.
  const v: string[] = [];
  const fail = (msg: string): string => `$fail("invalid_call", ${msg})`;
  v.push(`  const ins = call.inputs as Bag | undefined | null;`, `  const outs = call.outputs as Bag | undefined | null;`, `  const attrs = call.attrs as Bag | undefined | null;`);
  // Tensors and attributes are the bags' own enumerable properties: one pass over each bag's keys
  // (for-in skipping inherited keys visits what Object.keys lists, in its order, without the array).
  tensorIds.forEach((_, i) => v.push(`  let t${i}: TensorDesc | null = null;`));
  const aliased = spec.outputs.filter((o) => inputIds.includes(o.name)).map((o) => o.name);
  aliased.forEach((id) => v.push(`  let u${tensorIndex.get(id)}: TensorDesc | null = null;`));
  spec.attributes.forEach((_, i) => v.push(`  let g${i}: unknown = undefined;`));
  const keyLoop = (bag: string, ids: readonly string[], local: (id: string) => string, what: string, all: readonly string[]): void => {
    v.push(`  if (${bag} !== undefined && ${bag} !== null) {`, `    for (const key in ${bag}) {`, `      if (!$hasOwn.call(${bag}, key)) continue;`, `      switch (key) {`);
    for (const id of ids) v.push(`        case ${q(id)}:`, `          ${local(id)} = ${what === "attribute" ? `${bag}[key]` : `$td(${bag}[key])`};`, `          break;`);
    v.push(`        default:`, `          ${fail(`${q(`${name}: unknown ${what} \``)} + key + ${q(`\`; ${what}s are ${all.join(", ")}`)}`)};`, `      }`, `    }`, `  }`);
  };
  keyLoop("ins", inputIds, (id) => `t${tensorIndex.get(id)}`, "input", inputIds);
  keyLoop("outs", outputIds, (id) => (inputIds.includes(id) ? `u${tensorIndex.get(id)}` : `t${tensorIndex.get(id)}`), "output", outputIds);
  const attrNames = spec.attributes.map((x) => x.name);
  keyLoop("attrs", attrNames, (id) => `g${attrIndex.get(id)}`, "attribute", attrNames);
  spec.typeConstraints.forEach((_, i) => v.push(`  let dt${i}: string | undefined = undefined;`, `  let by${i} = "";`));
  const params = new Set(spec.typeConstraints.map((t) => t.name));
  const visit = (id: string, dtype: string, rank: number | undefined, optional: boolean, what: string, bag: string): void => {
    const t = `o${what === "input" ? "i" : "o"}${tensorIndex.get(id)}`;
    const sameAsLocal = bag === "ins" || !inputIds.includes(id);
    v.push(`  {`, `    const ${t} = ${sameAsLocal ? `t${tensorIndex.get(id)}` : `u${tensorIndex.get(id)}`};`);
    v.push(`    if (${t} === null) {`);
    if (!optional) v.push(`      ${fail(q(`${name}: required ${what} \`${id}\` is missing`))};`);
    v.push(`    } else {`);
    // With a declared rank the usual case (that many dimensions) is checked in place.
    const dims = rank === undefined ? `$dimsOk(${t}.shape)` : `Array.isArray(${t}.shape) && (${t}.shape.length === ${rank} ? ${[...Array(rank).keys()].map((d) => `Number.isSafeInteger(${t}.shape[${d}]) && ${t}.shape[${d}] >= 0`).join(" && ") || "true"} : $dimsOk(${t}.shape))`;
    v.push(`      if (!(${dims})) ${fail(`${q(`${name}: ${what} \`${id}\` has shape `)} + $show(${t}.shape) + "; dimensions must be non-negative integers"`)};`);
    if (params.has(dtype)) {
      v.push(
        `      const prev = dt${paramIndex.get(dtype)};`,
        `      if (prev === undefined) { dt${paramIndex.get(dtype)} = ${t}.dtype; by${paramIndex.get(dtype)} = ${q(id)}; }`,
        `      else if (prev !== ${t}.dtype) ${fail(`${q(`${name}: ${what} \`${id}\` has dtype `)} + ${t}.dtype + ", but \\u0060" + by${paramIndex.get(dtype)} + ${q(`\` makes ${dtype} = `)} + prev`)};`,
      );
    } else {
      v.push(`      if (${t}.dtype !== ${q(dtype)}) ${fail(`${q(`${name}: ${what} \`${id}\` must have dtype ${dtype}, got `)} + ${t}.dtype`)};`);
    }
    if (rank !== undefined) v.push(`      if (${t}.shape.length !== ${rank}) ${fail(`${q(`${name}: ${what} \`${id}\` must have rank ${rank}, got `)} + ${t}.shape.length`)};`);
    v.push(`    }`, `  }`);
  };
  for (const i of spec.inputs) visit(i.name, i.dtype, i.rank, i.optional, "input", "ins");
  for (const o of spec.outputs) visit(o.name, o.dtype, o.rank, o.optional || inputIds.includes(o.name), "output", "outs");
  for (const tc of spec.typeConstraints) {
    v.push(
      `  {`,
      `    const b = dt${paramIndex.get(tc.name)};`,
      `    if (b === undefined) dt${paramIndex.get(tc.name)} = ${q(tc.types[0])};`,
      `    else if (${tc.types.map((t) => `b !== ${q(t)}`).join(" && ")}) ${fail(`${q(`${name}: ${tc.name} = `)} + b + ${q(` is not allowed; allowed: ${tc.types.join(", ")}`)}`)};`,
      `  }`,
    );
  }
  spec.attributes.forEach((a, i) => {
    const t = k.attrTypes.get(a.name)!;
    const check =
      t.k === "string" ? `typeof g${i} === "string"` : t.k === "list" ? `Array.isArray(g${i}) && g${i}.every((x: unknown) => typeof x === "number" && Number.isFinite(x))` : `typeof g${i} === "number" && Number.isFinite(g${i})${t.k === "int" ? ` && Number.isInteger(g${i})` : ""}`;
    const want = t.k === "string" ? "a string" : t.k === "list" ? "a list of numbers" : t.k === "int" ? "an integer" : "a finite number";
    v.push(`  if (g${i} !== undefined && !(${check})) ${fail(`${q(`${name}: attribute \`${a.name}\` must be ${want}, got `)} + $show(g${i})`)};`);
  });
  spec.attributes.forEach((a, i) => {
    v.push(`  const a${i}: unknown = g${i} !== undefined ? g${i} : ${a.default === undefined ? "undefined" : lit(a.default as Value)};`);
  });
  for (const c of spec.attributeConstraints) {
    const i = attrIndex.get(c.name);
    if (i === undefined) continue;
    v.push(`  if (a${i} === undefined) {`);
    if (c.required) v.push(`    ${fail(q(`${name}: attribute \`${c.name}\` is required`))};`);
    v.push(`  }`);
    if (c.values) {
      v.push(`  else if (${c.values.length ? c.values.map((x) => `a${i} !== ${lit(x as Value)}`).join(" && ") : "true"}) ${fail(`${q(`${name}: attribute \`${c.name}\` is `)} + $show(a${i}) + ${q(`; allowed values: ${c.values.map((x) => (typeof x === "string" ? JSON.stringify(x) : String(x))).join(", ")}`)}`)};`);
    }
  }
  const desc = spec.typeConstraints.map((tc) => `${q(`${tc.name}=`)} + dt${paramIndex.get(tc.name)}`).join(` + ", " + `);
  out.push(
    ...classes,
    "",
    `/** Plans a call of ${commentText(`${name} (${spec.domain})`)} on profile ${commentText(model.profile)}. Throws KernelCallError when the call cannot run. */`,
    `export function ${fn}(call: Call): Plan {`,
    ...v,
    ...assignmentCalls,
    `  return $fail("no_variant", ${q(`${name}: nothing was built for `)} + ${desc || q("this call")} + ${q(` on profile ${model.profile}`)});`,
    `}`,
  );
  return { code: out.join("\n"), fn };
}

/** The body of a variant's plan method: mirrors interpret.ts buildPlan (same order of evaluation, so the same first error). */
function planBody(cx: AssignmentContext, vm: VariantModel, vi: number, venv: GenEnv): string[] {
  const { g, sc, valid: { tensors } } = cx;
  const k = cx.model.kernel;
  const name = k.spec.name;
  const v = vm.variant;
  const prefix = `${name}: variant \`${v.id}\``;
  const maxWg = cx.facts.limits.maxComputeWorkgroupsPerDimension ?? 65535;
  const body: string[] = [];
  const passEnvs = vm.passes.map((pm) => g.env(venv, deriveEnv(k, v, pm.pass), new Set(pm.pass.derive.keys())));
  // Shader ids first. The entries are tried in order and key leaves read lazily, as the interpreter
  // does: each leaf once per call, into a local, by a method that turns a failure into an "eval" error.
  vm.passes.forEach((pm, pi) => {
    const pprefix = `${prefix}: pass \`${pm.pass.id}\``;
    const reads = pm.keyLeaves.map((l, i) => {
      const leaf = g.keyLeaf(l);
      if (leaf.read || leaf.value !== undefined) return { value: leaf.code, shown: `$show(${leaf.code})` };
      const read = `k${vi}_${pi}_${i}`;
      g.method(`${read}(): unknown`, `    try {\n      return ${leaf.code};\n    } catch (e) {\n      return $evalFail(e, ${sc(pprefix)}, ${q(`shader key ${l.key}`)});\n    }`);
      g.method(`${read}s(): string`, `    try {\n      return $show(${leaf.code});\n    } catch (e) {\n      if (e instanceof EvalFailure) return "error: " + e.message;\n      throw e;\n    }`);
      body.push(`    let k${pi}_${i}: unknown = undefined;`);
      return { value: `(k${pi}_${i} ??= this.${read}())`, shown: `this.${read}s()` };
    });
    body.push(`    let s${pi}: string | undefined = undefined;`);
    const entries = [...pm.shaders.entries()].map(([key, id]) => ({ key: JSON.parse(key) as (Value | null)[], id }));
    entries.forEach((e, ei) => {
      const tests = e.key.flatMap((kv, i) => (kv === null ? [] : [Array.isArray(kv) ? `$eq(${reads[i].value}, ${lit(kv)})` : `${reads[i].value} === ${lit(kv)}`]));
      body.push(`    ${ei ? "else " : ""}if (${tests.length ? tests.join(" && ") : "true"}) s${pi} = ${q(e.id)};`);
    });
    const keyDesc = reads.length ? reads.map((r, i) => `${q(`${pm.keyLeaves[i].key}=`)} + ${r.shown}`).join(` + ", " + `) : q("");
    body.push(`    if (s${pi} === undefined) $fail("missing_shader", ${q(`${prefix}: no shader was built for pass \`${pm.pass.id}\` with `)} + ${keyDesc} + ${q(` on profile ${cx.model.profile}; ${cx.model.instancesHint}`)});`);
  });
  let tmpCount = 0;
  /**
   * Emits `let rN = code;` guarded so an evaluation failure becomes an "eval" KernelCallError, and
   * returns rN; a constant or a plain read cannot fail and is returned as it is.
   */
  const guarded = (x: Code, pfx: string, what: string): string => {
    if (x.value !== undefined || x.read) return x.code;
    const t = `r${tmpCount++}`;
    body.push(`    let ${t}: unknown = undefined;`, `    try {`, `      ${t} = ${x.code};`, `    } catch (e) {`, `      $evalFail(e, ${sc(pfx)}, ${q(what)});`, `    }`);
    return t;
  };
  // Scratch sizes: a literal list shape multiplies its items in place (the same product, no array).
  v.intermediates.forEach((im, ii) => {
    const x = im.shape.texpr;
    const bytes = ELEMENT_BYTES[im.dtype];
    if (x.k === "list") {
      const items = x.items.map((item) => guarded(g.expr(item, venv, im.shape), prefix, `the shape of intermediate \`${im.id}\``));
      body.push(`    const x${ii} = $round4(${[...items.map((t) => `(${t} as number)`), String(bytes)].join(" * ")});`);
    } else {
      const shape = guarded(g.expr(x, venv, im.shape), prefix, `the shape of intermediate \`${im.id}\``);
      body.push(`    const x${ii} = $round4($product(${shape} as readonly number[]) * ${bytes});`);
    }
  });
  // Binding resources: a tensor's or a scratch buffer's is one object per call, made at its first binding.
  const resources = new Map<string, string>();
  const resourceOf = (b: CheckedBinding, pprefix: string): string => {
    const key = `${b.kind}:${b.ref}`;
    const known = resources.get(key);
    if (known) return known;
    const r = `q${resources.size}`;
    resources.set(key, r);
    if (b.kind === "scratch") {
      const si = scratchIndex.get(b.ref!);
      body.push(`    const ${r}: BindingResource = { kind: "scratch", scratch: ${q(b.ref!)}, offset: 0, size: ${si === undefined ? "0" : `x${si}`} };`);
      return r;
    }
    const slot = tensors.get(b.ref!)!;
    const t = `this.t${slot.index}`;
    if (!slot.required) body.push(`    if (${t} === null) $fail("eval", ${q(`${pprefix}: binding \`${b.name}\` needs tensor \`${b.ref}\`, which the call omits`)});`);
    // Validation fixed the tensor's dtype (the assignment's, for a type parameter), so its element size is known.
    const dtype = k.spec.typeConstraints.some((tc) => tc.name === slot.dtype) ? cx.facts.dtypes[slot.dtype] : slot.dtype;
    const bytes = Object.prototype.hasOwnProperty.call(ELEMENT_BYTES, dtype) ? ELEMENT_BYTES[dtype] : undefined;
    if (bytes === undefined) {
      body.push(`    const ${r}: BindingResource = $fail("eval", ${q(`${pprefix}: tensor \`${b.ref}\` has dtype ${dtype}, which cannot be bound`)});`);
    } else {
      // The element count: the dimensions multiplied in order (as $product does), unrolled for a validated rank.
      const count = slot.rank === undefined ? `$product(${t}!.shape)` : [...Array(slot.rank).keys()].map((i) => `${t}!.shape[${i}]`).join(" * ") || "1";
      body.push(`    const ${r}: BindingResource = { kind: ${q(b.refIsInput ? "input" : "output")}, tensor: ${q(b.ref!)}, offset: 0, size: $round4(${count} * ${bytes}) };`);
    }
    return r;
  };
  const scratchIndex = new Map(v.intermediates.map((im, ii) => [im.id, ii]));
  const passes = vm.passes.map((pm, pi) => {
    const penv = passEnvs[pi];
    const pprefix = `${prefix}: pass \`${pm.pass.id}\``;
    // One statement per binding, in order, so the first failing binding is the one reported.
    const bindings = pm.bindings.map((b, bi) => {
      let res: string;
      if (b.kind === "uniform") {
        // All fields are evaluated, then each is range-checked and written (4 bytes, little-endian).
        const fields = b.fields ?? [];
        const vals = fields.map((f) => guarded(g.expr(f.value.texpr, penv, f.value), pprefix, `uniform field \`${b.name}.${f.name}\``));
        const u = `u${pi}_${bi}`;
        body.push(`    const ${u} = new Uint8Array(${Math.max(16, Math.ceil((fields.length * 4) / 16) * 16)});`);
        fields.forEach((f, fi) => {
          body.push(f.type === "f32" ? `    $f32(${u}, ${fi * 4}, ${vals[fi]});` : `    $${f.type}(${u}, ${fi * 4}, ${vals[fi]}, ${sc(pprefix)}, ${q(`${b.name}.${f.name}`)});`);
        });
        res = `{ kind: "uniform", bytes: ${u} }`;
      } else {
        res = resourceOf(b, pprefix);
      }
      return `{ binding: ${bi}, name: ${q(b.name)}, type: ${q(b.buffer)}, resource: ${res} }`;
    });
    const wg = pm.pass.dispatch.map((d, i) => {
      const x = g.expr(d.texpr, penv, d);
      if (typeof x.value === "number" && Number.isInteger(x.value) && x.value >= 0 && x.value <= maxWg) return lit(x.value);
      const w = `w${pi}${"xyz"[i]}`;
      body.push(
        `    const ${w}: unknown = ${guarded(x, pprefix, `dispatch ${"xyz"[i]}`)};`,
        `    if (!(typeof ${w} === "number" && Number.isInteger(${w}) && ${w} >= 0 && ${w} <= ${maxWg})) $badWorkgroups(${w}, ${maxWg}, ${sc(pprefix)}, ${q("xyz"[i])});`,
      );
      return w;
    });
    return `{ id: ${q(pm.pass.id)}, name: ${q(pm.pass.name)}, shader: s${pi}, entryPoint: "main", bindings: [${bindings.join(", ")}], workgroups: [${wg.join(", ")}] }`;
  });
  // Output shapes, in spec order; an optional output's only when its tensor is present (a literal when all are).
  const shaped = k.spec.outputs.filter((o) => k.outputShapes.has(o.name));
  const absentable = (o: (typeof shaped)[number]): boolean => o.optional && !tensors.get(o.name)!.required;
  const shapeOf = (o: (typeof shaped)[number]): string => {
    const se = k.outputShapes.get(o.name)!;
    return `${guarded(g.expr(se.texpr, g.top, se), name, `the shape of output \`${o.name}\``)} as readonly number[]`;
  };
  let outputShapes = "shapes";
  if (shaped.some(absentable)) {
    body.push(`    const shapes: Record<string, readonly number[]> = {};`);
    for (const o of shaped) {
      if (absentable(o)) body.push(`    if (this.t${tensors.get(o.name)!.index} !== null) {`);
      body.push(`    shapes[${q(o.name)}] = ${shapeOf(o)};`);
      if (absentable(o)) body.push(`    }`);
    }
  } else {
    outputShapes = `{ ${shaped.map((o) => `${q(o.name)}: ${shapeOf(o)}`).join(", ")} }`;
  }
  const scratch = v.intermediates.map((im, ii) => `{ id: ${q(im.id)}, size: x${ii} }`);
  body.push(`    return { kernel: ${q(name)}, variant: ${q(v.id)}, passes: [${passes.join(", ")}], scratch: [${scratch.join(", ")}], outputShapes: ${outputShapes} };`);
  return body;
}

function generateAssignment(model: KernelModel, a: AssignmentModel, cls: string, call: ValidatedCall, consts: string[]): string {
  const { tensors, attrIndex } = call;
  const k = model.kernel;
  const name = k.spec.name;
  const g = new AssignmentGen(k, a.facts, call);
  const lines: string[] = [];
  for (const c of k.when) {
    const cond = g.condMethod(c, g.top);
    lines.push(`    if (!${cond.holds}) $fail("contract", ${q(`${name}: condition \`${c.source.text}\` failed: `)} + ${cond.why});`);
  }
  // Strings repeated across error paths (message prefixes) become module constants.
  const pool = new Map<string, string>();
  const sc = (text: string): string => {
    let n = pool.get(text);
    if (!n) {
      n = `${cls}S${pool.size}`;
      pool.set(text, n);
      consts.push(`const ${n} = ${q(text)};`);
    }
    return n;
  };
  const cx: AssignmentContext = { model, facts: a.facts, g, valid: call, sc };
  // Variants in selection order; one without conditions always fits, and the ones after it never run.
  const rejected: string[] = [];
  const unconditional = a.variants.some((vm, vi) => {
    const v: CheckedVariant = vm.variant;
    const venv = g.env(g.top, deriveEnv(k, v), new Set(v.derive.keys()));
    const conds = v.when.map((c) => g.condMethod(c, venv));
    const plan = g.scoped(() => planBody(cx, vm, vi, venv));
    const planMethod = g.method(`p${vi}(): Plan`, plan.temps + plan.body.join("\n"));
    const planCall = `this.${planMethod.replace(/\(\): Plan$/, "()")}`;
    if (conds.length === 0) {
      lines.push(`    return ${planCall};`);
      return true;
    }
    lines.push(`    if (${conds.map((c) => c.holds).join(" && ")}) return ${planCall};`);
    // Why the variant was rejected (only asked when no variant fits): its first condition that does not hold.
    const reason = g.method(
      `r${vi}(): string`,
      [...conds.slice(0, -1).map((c) => `    if (!${c.holds}) return ${c.why};`), `    return ${conds[conds.length - 1].why};`].join("\n"),
    );
    rejected.push(`${q(`${v.id}: `)} + this.${reason.replace(/\(\): string$/, "()")}`);
    return false;
  });
  if (!unconditional) {
    const pruned = model.prunedVariants.length ? `; not built for profile ${model.profile}: ${model.prunedVariants.join(", ")}` : "";
    lines.push(`    return $fail("no_variant", ${q(`${name}: no variant fits this call on profile ${model.profile}: `)} + ${rejected.length ? rejected.join(` + "; " + `) : `""`}${pruned ? ` + ${q(pruned)}` : ""});`);
  }
  g.method("plan(): Plan", lines.join("\n"));
  return g.classText(cls, tensors.size, attrIndex.size);
}


/** Generates the complete dispatcher module of one profile. */
export function generateDispatcher(models: readonly KernelModel[], header: string, profile: string): string {
  const parts: string[] = [header, "", DISPATCHER_PRELUDE, `/** The profile this module was built for. */`, `export const PROFILE = ${q(profile)};`, ""];
  const fns: string[] = [];
  models.forEach((m, i) => {
    const consts: string[] = [];
    const g = generateKernel(m, i, consts);
    parts.push(...consts, "", g.code, "");
    fns.push(`  ${q(m.kernel.spec.name)}: ${g.fn},`);
  });
  parts.push(`/** Plan functions by kernel name. */`, `export const planners: Readonly<Record<string, (call: Call) => Plan>> = {`, ...fns, `};`, "");
  return parts.join("\n");
}
