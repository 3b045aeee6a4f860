/**
 * Expressions of a kernel as generated TypeScript: one context per dtype assignment (an object
 * literal, typed by an interface) whose fields are the call's tensors and attributes and one memo
 * per derive entry (`mN`, null until method `dN` sets it; read as `this.mN ?? this.dN()`, or in
 * explanations as `this.dN()`). The methods are written with `this` and emitted as module functions
 * taking the context as `o` (methodsAsFunctions).
 * Every build-time value, and every value the call's validation fixes, is folded to a constant;
 * integer-checked arithmetic is written in place; conditions get a method telling whether they
 * hold and one explaining why not (mirroring plan/explain-false.ts).
 */
import { type CExpr, type CheckedDerive, type CheckedKernel } from "../model/checked.js";
import { attrAndDimLeaves, leavesOf, type LeafInfo, type LeafKey } from "../check/binding-time.js";
import { leafText, type Leaf, type TExpr, type Value } from "../model/ir.js";
import type { Type } from "../model/types.js";
import { UNKNOWN, evaluate } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import { DeriveEnv, StaticLeaves, type StaticFacts } from "../plan/env.js";
import { nodeText, operandsOf, showValue } from "../plan/explain-false.js";
import { comment, str as q, ty } from "./code-writer.js";

/** The prelude helpers that can throw an evaluation failure (EvalFailure) themselves. */
const CAN_FAIL = /\$(?:err|overflow|chk|addN|subN|mulN|fdivI|modI|modF|divF|fdivF|divN|fdivN|modN|dimS|dimT|ceilDiv|pow2ceil|need|attr)\(/;

/** Whether generated code can throw while it runs: it calls a failing helper or a derive entry's method. */
function mayFail(code: string): boolean {
  const bare = code.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return CAN_FAIL.test(bare) || /\bthis\.d\d+\(/.test(bare);
}

/** `as number` and `as readonly number[]` casts, type-only (dropped from JavaScript output). */
const AS_NUMBER = ty(" as number");
const AS_SHAPE = ty(" as readonly number[]");

/** Text safe inside a generated comment (see code-writer's `comment`). */
export const commentText = comment;

/** The declaration line of a method's temporaries, "" when it has none. */
function declareTemps(names: readonly string[]): string {
  return names.length ? `    let ${names.map((t) => `${t}${ty(": number")}`).join(", ")};\n` : "";
}

/** A literal of a language value. */
export function lit(v: Value): string {
  if (typeof v === "number") {
    if (Number.isNaN(v) || !Number.isFinite(v)) throw new Error(`cannot emit non-finite number ${v}`);
    if (Object.is(v, -0)) return "(-0)";
    return v < 0 ? `(${String(v)})` : String(v);
  }
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "string") return q(v);
  return `[${v.map((x) => lit(x)).join(", ")}]`;
}

/** The TypeScript type of a language type. */
export function tsType(t: Type): string {
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
export interface TensorSlot {
  readonly index: number;
  /** Present in every valid call. */
  readonly required: boolean;
  /** A type parameter or an ONNX type: a present tensor has it. */
  readonly dtype: string;
  /** The declared rank: a present tensor has it. */
  readonly rank?: number | undefined;
  /** An output the call may leave out: plan() sets it to its computed shape then. */
  readonly filled?: boolean;
}

/** A kernel's call as the generated code holds it after validation: tensor and attribute fields. */
export interface ValidatedCall {
  readonly tensors: ReadonlyMap<string, TensorSlot>;
  readonly attrIndex: ReadonlyMap<string, number>;
  /** In-place outputs (ids that are also inputs): the field index of the outputs bag's description. */
  readonly aliasIndex: ReadonlyMap<string, number>;
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
export interface Code {
  readonly code: string;
  readonly value?: Value;
  readonly read?: boolean;
  /**
   * The code's TypeScript type is not its spec type: an attribute read (`unknown`, or `V` through
   * `$attr`), possibly through a conditional or an inlined derive read. A typed slot (a derive's
   * memo) takes it with a type-only cast.
   */
  readonly untyped?: boolean;
  /** For a chain of `and` (or of `or`) over booleans: the operator and its operands' code. */
  readonly chain?: { readonly op: string; readonly items: readonly string[] };
}

/** A derive environment of the generated code: top-level, a variant's, or a pass's. */
export interface GenEnv {
  readonly index: number;
  readonly parent?: GenEnv;
  readonly derives: ReadonlyMap<string, CheckedDerive>;
  /** Names defined by this environment's own table. */
  readonly own: ReadonlySet<string>;
}

/** Emits one assignment's context class and plan function. */
export class AssignmentGen {
  private readonly methods: string[] = [];
  /**
   * Memo fields: null in the context literal (contextLiteral; `m12: null` is shorter minified than
   * `m12: void 0`, and no memo holds null, so `??` and `??=` read it as unset), set by the functions
   * that compute them.
   */
  private readonly fields: { name: string; type: string }[] = [];
  /** (env index, derive name) -> its memo field and method, its constant (or error), or its inlined read. */
  private readonly fnCache = new Map<
    string,
    { memo: string; method: string } | { value: Value } | { error: string } | { read: string; untyped?: boolean }
  >();
  private fnCount = 0;
  private condCount = 0;
  private readonly envs: GenEnv[] = [];
  readonly top: GenEnv;

  /** Build-time leaves, plus the run-time leaves that validation fixes for every call reaching this class. */
  private readonly statics: StaticLeaves;
  private readonly pinned: ReadonlyMap<LeafKey, Value>;

  /**
   * `konst(code, type)`: the module constant holding a value (equal ones pooled); the explanations'
   * lists of gaps (`["", " <= ", ""]`) are such constants.
   */
  constructor(
    private readonly k: CheckedKernel,
    facts: StaticFacts,
    readonly valid: ValidatedCall,
    private readonly konst: (code: string, type: string) => string,
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
  scoped<T>(body: () => T): { body: T; temps: string; names: readonly string[] } {
    const outer = this.temps;
    this.temps = [];
    try {
      const result = body();
      return { body: result, temps: declareTemps(this.temps), names: this.temps };
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
          f = { read: body.code, ...(body.untyped ? { untyped: true } : {}) };
        } else {
          const id = this.fnCount++;
          const t = tsType(d.type);
          this.field(`m${id}`, t);
          const value = body.untyped ? `(${body.code}${ty(` as ${t}`)})` : body.code;
          this.methods.push(
            `  /** ${owner.index === 0 ? "derive" : `derive (env ${owner.index})`} ${commentText(q(name))}: memo m${id} */\n  d${id}()${ty(`: ${t}`)} {\n${temps}${
              // Only code that can fail by itself needs the wrap: a failure of another derive entry it
              // reads already names that entry, and $wrap leaves such a message as it is.
              CAN_FAIL.test(body.code.replace(/"(?:[^"\\]|\\.)*"/g, '""'))
                ? `    try {\n      return (this.m${id} ??= ${value});\n    } catch (e) {\n      throw $wrap(e, ${q(name)});\n    }`
                : `    return (this.m${id} ??= ${value});`
            }\n  }`,
          );
          f = { memo: `m${id}`, method: `d${id}` };
        }
      }
      this.fnCache.set(key, f);
    }
    if ("value" in f) return { code: lit(f.value), value: f.value };
    if ("error" in f) return { code: `$err(${q(f.error)})` };
    if ("read" in f) return { code: f.read, read: true, ...(f.untyped ? { untyped: true } : {}) };
    // The method sets the memo only when it is unset. Code that runs for every call checks the
    // memo where it reads it (a derive already computed costs no call); explanations, which run only
    // for a call that fails, call the method (shorter code).
    return { code: this.cold ? `this.${f.method}()` : `(this.${f.memo} ?? this.${f.method}())` };
  }

  /** Whether the code being generated runs only for a failing call (an explanation): derive reads are then calls. */
  private cold = false;

  /** Runs `f` generating cold code (see `cold`). */
  private coldly<T>(f: () => T): T {
    const was = this.cold;
    this.cold = true;
    try {
      return f();
    } finally {
      this.cold = was;
    }
  }

  /** Shape fields (`sN`: a required tensor's shape, set when the context is made) that the class's code reads. */
  private readonly shapeFields = new Set<number>();

  /**
   * The shape of a required tensor: a field of the context (validation made the tensor
   * present), except for an output plan() fills in, whose description plan() sets.
   */
  shapeOf(id: string): string {
    const slot = this.valid.tensors.get(id)!;
    if (slot.filled) return `${this.tensor(id)}${ty("!")}.shape`;
    this.shapeFields.add(slot.index);
    return `this.s${slot.index}`;
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
      return this.valid.definedAttrs.has(l.name)
        ? { code: a, read: true, untyped: true }
        : { code: `$attr(${a}, ${q(l.name)})`, untyped: true };
    }
    const t = this.tensor(l.name);
    if (l.ns === "present") return { code: `(${t} !== null)`, read: true };
    const required = this.valid.tensors.get(l.name)!.required;
    const desc = required ? `${t}${ty("!")}` : `$need(${t}, ${q(`${l.ns}.${l.name}`)}, ${q(l.name)})`;
    switch (l.ns) {
      case "shapes":
        return { code: required ? this.shapeOf(l.name) : `${desc}.shape`, read: required };
      case "ranks":
        return { code: required ? `${this.shapeOf(l.name)}.length` : `${desc}.shape.length`, read: required };
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
    const num = (y: TExpr): string => `(${this.expr(y, e, src).code}${AS_NUMBER})`;
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
        const a = this.expr(x.then, e, src);
        const b = this.expr(x.otherwise, e, src);
        return { code: `(${c.code} ? ${a.code} : ${b.code})`, ...(a.untyped || b.untyped ? { untyped: true } : {}) };
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
          // A boolean operand the chain already has (`a and b and a`: a limit checked twice) is dropped:
          // generated expressions are pure, so it has the value it had (and raised no error) before.
          const bools = x.left.type.k === "bool" && x.right.type.k === "bool";
          const chain = bools ? (l.chain?.op === x.op ? l.chain.items : [l.code]) : [];
          if (bools && chain.includes(r.code)) return l;
          return {
            code: `(${l.code} ${short ? "||" : "&&"} ${r.code})`,
            ...(bools ? { chain: { op: x.op, items: [...chain, r.code] } } : {}),
          };
        }
        const lt = x.left.type.k;
        const rt = x.right.type.k;
        const mode = lt === "float" || rt === "float" ? "F" : lt === "int" && rt === "int" ? "I" : "N";
        if ((x.op === "+" || x.op === "-" || x.op === "*") && mode !== "F")
          return { code: this.checked(x.op, mode, x.left, x.right, e, src) };
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
            return { code: `((${L}${AS_NUMBER}) ${x.op} (${R}${AS_NUMBER}))` };
        }
        const a = `(${L}${AS_NUMBER})`;
        const b = `(${R}${AS_NUMBER})`;
        const divisor = right.value;
        if (mode === "I" && typeof divisor === "number" && divisor !== 0) {
          // By a constant other than zero: no zero check, so the integer division or modulo is written in place.
          if (x.op === "%") {
            const r = this.temp();
            return { code: `(${r} = ${a} % ${b}, ${r} ${divisor < 0 ? ">" : "<"} 0 ? ${r} + ${b} : ${r} === 0 ? 0 : ${r})` };
          }
          return { code: this.safe(`$floor(${a} / ${b})`) };
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
   * Integer-checked `+`, `-`, `*`: the result must be a safe integer when both operands are
   * integers (always, for int-typed ones: `$chk(a op b)`; "N" mode checks at run time through a
   * helper, which evaluates each operand once).
   */
  private checked(op: "+" | "-" | "*", mode: "I" | "N", left: TExpr, right: TExpr, e: GenEnv, src: CExpr): string {
    const a = `${this.expr(left, e, src).code}${AS_NUMBER}`;
    const b = `${this.expr(right, e, src).code}${AS_NUMBER}`;
    if (mode === "I") return `$chk((${a}) ${op} (${b}))`;
    return `${{ "+": "$addN", "-": "$subN", "*": "$mulN" }[op]}(${a}, ${b})`;
  }

  /** `value`, failing with the integer-overflow error unless it is a safe integer. */
  private safe(value: string): string {
    return `$chk(${value})`;
  }

  private call(x: Extract<TExpr, { k: "call" }>, e: GenEnv, src: CExpr): Code {
    const dim = this.dimRead(x, e, src);
    // `shape[k]` is `number | undefined` under noUncheckedIndexedAccess: untyped, so that a memo
    // whose value is a conditional with it in a branch casts the value to its type.
    return dim === undefined ? { code: this.callCode(x, e, src) } : { code: dim, read: true, untyped: true };
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
    if (
      !slot.required ||
      slot.rank === undefined ||
      typeof axis !== "number" ||
      !Number.isInteger(axis) ||
      axis < -slot.rank ||
      axis >= slot.rank
    )
      return undefined;
    return `${this.shapeOf(tensor)}[${axis < 0 ? axis + slot.rank : axis}]`;
  }

  private callCode(x: Extract<TExpr, { k: "call" }>, e: GenEnv, src: CExpr): string {
    const arg = (i: number): string => this.expr(x.args[i], e, src).code;
    const n = (i: number): string => `(${arg(i)}${AS_NUMBER})`;
    switch (x.fn) {
      case "dim": {
        const target = x.args[0];
        if (target.k === "leaf" && target.leaf.ns === "shapes") {
          // Same order as the interpreter: the axis first, then the tensor.
          const name = target.leaf.name;
          return `$dimT(${this.tensor(name)}, ${n(1)}, ${q(name)})`;
        }
        return `$dimS(${arg(0)}${AS_SHAPE}, ${n(1)}, "shape")`;
      }
      case "min":
      case "max":
        return `$${x.fn}(${x.args.map((_, i) => n(i)).join(", ")})`;
      case "floor":
        return `$chk($floor(${n(0)}))`;
      case "ceilDiv": {
        const divisor = this.expr(x.args[1], e, src).value;
        // By a constant other than zero, in place (as for the division operators).
        if (typeof divisor === "number" && divisor !== 0) return this.safe(`-$floor(-${n(0)} / ${n(1)})`);
        return `$ceilDiv(${n(0)}, ${n(1)})`;
      }
      case "pow2ceil":
        return `$pow2ceil(${n(0)})`;
      case "sameShape":
        return `$same(${arg(0)}${AS_SHAPE}, ${arg(1)}${AS_SHAPE})`;
      case "f16Ok":
        return `(${arg(0)} === "float16")`;
    }
  }

  /** Code reading a pass's shader-key leaf: a plain read, or code that throws an EvalFailure when the leaf has no value. */
  keyLeaf(l: LeafInfo): Code {
    if (l.axis !== undefined) {
      const read = this.guaranteedDim(l.leaf.name, l.axis);
      if (read !== undefined) return { code: read, read: true };
      return {
        code: `$dimS($need(${this.tensor(l.leaf.name)}, ${q(`dim(shapes.${l.leaf.name}, ${l.axis})`)}, ${q(l.leaf.name)}).shape, ${l.axis}, ${q(`shapes.${l.leaf.name}`)})`,
      };
    }
    if (l.key.startsWith("has("))
      return this.pinned.has(l.key) ? { code: "true", value: true } : { code: `(${this.attr(l.leaf.name)} !== undefined)`, read: true };
    return this.leaf(l.leaf);
  }

  /**
   * Code of a list holding, for each attribute and dimension `src` reads in env `e` (as the
   * interpreter's readValues names them), its text and a function computing its value.
   */
  reads(src: CExpr, e: GenEnv): string {
    return `[${attrAndDimLeaves(src.texpr, e.derives)
      .map((l) => `${q(l.key)}, () => ${this.keyLeaf(l).code}`)
      .join(", ")}]`;
  }

  /** Code (a string expression) explaining why condition `src` is not true, mirroring explainFalse. */
  explain(src: CExpr, e: GenEnv): string {
    return this.coldly(() => this.explainNode(src.texpr, src, e, "[]", 0));
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
      // `c0 and c1 and … and cn`: explanationFalse explains the first conjunct that is false or
      // fails (the last when all before it hold), so the chain is explained as a flat list.
      const conjuncts: TExpr[] = [];
      let x: TExpr = node;
      while (x.k === "binary" && x.op === "and") {
        conjuncts.unshift(x.right);
        x = x.left;
      }
      conjuncts.unshift(x);
      // A conjunct folded to true is never the first false one: it is left out (the last stays).
      const last = conjuncts.length - 1;
      const live = conjuncts.flatMap((c, i) => {
        if (i === last) return [{ c, code: "" }];
        const code = this.expr(c, e, cur);
        return code.value === true ? [] : [{ c, code: code.code }];
      });
      if (live.length === 1) return this.explainNode(live[0]!.c, cur, e, pathCode, depth + 1);
      // Each conjunct's test and explanation, then the last one's explanation: $and calls the
      // explanation of the first conjunct whose test is false or fails.
      const parts = live.flatMap((l, i) => {
        const why = `() => ${this.explainNode(l.c, cur, e, pathCode, depth + 1)}`;
        return i < live.length - 1 ? [`() => ${l.code}`, why] : [why];
      });
      return `$and([${parts.join(", ")}])`;
    }
    if (node.k === "cond") {
      const C = this.expr(node.cond, e, cur).code;
      return `((c${ty(": unknown")}) => c === true ? ${this.explainNode(node.then, cur, e, pathCode, depth + 1)} : c === false ? ${this.explainNode(node.otherwise, cur, e, pathCode, depth + 1)} : ${this.explainNode(node.cond, cur, e, pathCode, depth + 1)})($try(() => ${C}))`;
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
          this.methods.push(
            `  /** why ${commentText(q(node.name))} is not true */\n  ${method}(path${ty(": readonly string[]")})${ty(": string")} {\n${temps}    return ${body};\n  }`,
          );
        }
        return `this.${method}([...${pathCode}, ${q(node.name)}])`;
      }
    }
    const operands = operandsOf(node).filter((o) => o.k !== "const");
    const head = `\`${nodeText(cur, node)}\` is false`;
    if (operands.length === 0) return `$where(${pathCode}) + ${q(head)}`;
    // The condition's text is written as the gaps between its operands' texts when they occur in
    // it in order (each name is then spelled once in the module), else as one gap.
    const texts = operands.map((o) => (o.k === "leaf" ? leafText(o.leaf) : nodeText(cur, o)));
    const whole = nodeText(cur, node);
    let gaps: string[] = [];
    for (let at = 0, i = 0; i <= texts.length; i++) {
      const next = i < texts.length ? whole.indexOf(texts[i]!, at) : whole.length;
      if (next < 0) {
        gaps = [whole];
        break;
      }
      gaps.push(whole.slice(at, next));
      at = next + (texts[i]?.length ?? 0);
    }
    const parts = operands.map((o, i) => {
      const c = this.expr(o, e, cur);
      return `${q(texts[i]!)}, ${c.value !== undefined ? q(showValue(c.value)) : `() => ${c.code}`}`;
    });
    return `$why(${pathCode}, ${this.konst(`[${gaps.map((x) => q(x)).join(", ")}]`, "readonly string[]")}, [${parts.join(", ")}])`;
  }

  /**
   * A method telling whether a condition holds, and one explaining why it does not. The
   * explanation is only built when a message needs it: for a failed contract condition at once,
   * for a rejected variant only when no variant fits (derives are pure, so it is the same then).
   */
  condMethod(c: CExpr, e: GenEnv): { holds: string; why: string } {
    const holds = this.scoped(() => this.expr(c.texpr, e, c).code);
    const why = this.coldly(() =>
      this.scoped(() => {
        const value = this.expr(c.texpr, e, c).code;
        return { value, valueTemps: this.temps.length, explanation: this.explain(c, e) };
      }),
    );
    // A condition several variants share (same text, same code in their envs) gets one pair of methods.
    const key = JSON.stringify([c.source.text, holds, why]);
    const known = this.condMethods.get(key);
    if (known) return known;
    const id = this.condCount++;
    const names = { holds: `this.c${id}()`, why: `this.w${id}()` };
    // A condition that cannot fail to evaluate (no failing helper, no derive entry read) needs no try/catch.
    const failing = mayFail(holds.body) || mayFail(why.body.value);
    this.condMethods.set(key, names);
    this.methods.push(
      failing
        ? `  /** when ${commentText(q(c.source.text))} */\n  c${id}()${ty(": boolean")} {\n${holds.temps}    try {\n      return (${holds.body}) === true;\n    } catch (e) {\n      return $unheld(e);\n    }\n  }`
        : `  /** when ${commentText(q(c.source.text))} */\n  c${id}()${ty(": boolean")} {\n${holds.temps}    return (${holds.body}) === true;\n  }`,
      failing
        ? `  /** why ${commentText(q(c.source.text))} does not hold */\n  w${id}()${ty(": string")} {\n${why.temps}    return $condWhy(() => ${why.body.value}, ${q(c.source.text)}, () => ${why.body.explanation});\n  }`
        : // Without the value's test, its temporaries would be declared and never read (noUnusedLocals).
          `  /** why ${commentText(q(c.source.text))} does not hold */\n  w${id}()${ty(": string")} {\n${declareTemps(why.names.slice(why.body.valueTemps))}    return ${why.body.explanation};\n  }`,
    );
    return names;
  }

  private readonly condMethods = new Map<string, { holds: string; why: string }>();

  /** Declares a memo field. */
  field(name: string, type: string): void {
    this.fields.push({ name, type });
  }

  private readonly sharedMethods = new Set<string>();

  /** Emits method `name` (its signature and body from `text`) once per class; returns the name. */
  shared(name: string, text: () => string): string {
    if (!this.sharedMethods.has(name)) {
      this.sharedMethods.add(name);
      this.methods.push(`  ${name}${text()}`);
    }
    return name;
  }

  /** Emits a method and returns its name. */
  method(name: string, body: string): string {
    this.methods.push(`  ${name} {\n${body}\n  }`);
    return name;
  }

  /**
   * The context's type and functions: tensor fields (a filled output's is set by plan(), the others
   * only when the context is made), the outputs bag's descriptions of in-place outputs, attributes,
   * memo fields. The type is an interface (it leaves nothing in the JavaScript); the context is the
   * object literal contextLiteral() gives.
   */
  classText(className: string): string {
    const { tensors, aliases, attrs, shapes } = this.contextFields();
    const decls = [
      ...tensors.map((t) => `  ${t.filled ? "" : "readonly "}t${t.index}: TensorSnap | null;`),
      ...aliases.map((u) => `  readonly ${u}: TensorSnap | null;`),
      ...attrs.map((a) => `  readonly ${a}: unknown;`),
      ...shapes.map((i) => `  readonly s${i}: readonly number[];`),
      ...this.fields.map((f) => `  ${f.name}: ${f.type} | null;`),
    ].map((d) => ty(d));
    const fns = methodsAsFunctions(className, this.methods);
    return [ty(`interface ${className} {`), ...decls, ty(`}`), ...fns].join("\n");
  }

  /**
   * The expression making a call's context: one object literal of every field (the validated
   * tensors, aliases and attributes, which plan0's locals of the same names hold, the required
   * tensors' shapes, and the memo fields, null), so every context of the class has one shape
   * and V8 makes it from the literal's boilerplate in place, with no constructor call.
   */
  contextLiteral(): string {
    const { tensors, aliases, attrs, shapes } = this.contextFields();
    const parts = [
      ...tensors.map((t) => `t${t.index}`),
      ...aliases,
      ...attrs,
      ...shapes.map((i) => `s${i}: t${i}${ty("!")}.shape`),
      ...this.fields.map((f) => `${f.name}: null`),
    ];
    return `{ ${parts.join(", ")} }`;
  }

  private contextFields(): { tensors: TensorSlot[]; aliases: string[]; attrs: string[]; shapes: number[] } {
    const call = this.valid;
    return {
      tensors: [...call.tensors.values()].sort((a, b) => a.index - b.index),
      aliases: [...call.aliasIndex.values()].sort((a, b) => a - b).map((i) => `u${i}`),
      attrs: [...call.attrIndex.values()].sort((a, b) => a - b).map((i) => `a${i}`),
      shapes: [...this.shapeFields].sort((a, b) => a - b),
    };
  }
}

/** The module function that a method `name` of class `cls` becomes (see methodsAsFunctions). */
export function classFunction(cls: string, name: string): string {
  return `${cls}_${name}`;
}

/**
 * The class's methods as module functions taking the instance as their first parameter `o`:
 * `this.f` becomes `o.f` and `this.m(…)` becomes `Cls_m(o, …)`. A minifier renames a module
 * function and a parameter (not a property or method name), so the minified module is smaller, and
 * V8 runs the calls as it runs method calls. String literals and comments are copied as they are.
 */
function methodsAsFunctions(cls: string, methods: readonly string[]): string[] {
  const split = methods.map((m) => {
    const lines = m.split("\n");
    let at = 0;
    while (lines[at]!.startsWith("  /**")) at++;
    const head = /^ {2}([A-Za-z_$][A-Za-z0-9_$]*)\(/.exec(lines[at]!);
    if (!head) throw new Error(`internal error: not a method: ${JSON.stringify(lines[at])}`);
    return { docs: lines.slice(0, at), name: head[1]!, lines: lines.slice(at) };
  });
  const names = new Set(split.map((m) => m.name));
  const self = ty(`: ${cls}`);
  return split.map(({ docs, name, lines }) => {
    const sig = lines[0]!.slice(2 + name.length + 1);
    const body = replaceThis(lines.slice(1).join("\n"), cls, names);
    // A function that reads nothing of the instance names its parameter `_o` (noUnusedParameters).
    const first = `function ${classFunction(cls, name)}(${body.used ? "o" : "_o"}${self}${sig.startsWith(")") ? "" : ", "}${sig}`;
    return [...docs, first, ...body.text.split("\n")].map((l) => (l.startsWith("  ") ? l.slice(2) : l)).join("\n");
  });
}

/**
 * `text` with `this.m(` (m a method) made `Cls_m(o, ` and any other `this.x` made `o.x`, outside
 * string literals and comments; `used` tells whether it had any.
 */
function replaceThis(text: string, cls: string, methods: ReadonlySet<string>): { text: string; used: boolean } {
  let out = "";
  let used = false;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "/" && (text[i + 1] === "*" || text[i + 1] === "/")) {
      const e = text[i + 1] === "*" ? text.indexOf("*/", i + 2) + 2 : text.indexOf("\n", i);
      const end = e <= 1 ? n : e;
      out += text.slice(i, end);
      i = end;
    } else if (c === "t" && text.startsWith("this.", i) && !/[A-Za-z0-9_$.]/.test(text[i - 1] ?? " ")) {
      used = true;
      const name = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(text.slice(i + 5))![0];
      const after = i + 5 + name.length;
      if (methods.has(name)) {
        if (text[after] !== "(") throw new Error(`internal error: method ${name} used without a call`);
        out += `${classFunction(cls, name)}(o${text[after + 1] === ")" ? "" : ", "}`;
        i = after + 1;
      } else {
        out += `o.${name}`;
        i = after;
      }
    } else {
      const m = /^[A-Za-z0-9_$]+/.exec(text.slice(i, i + 64));
      const step = m ? m[0].length : 1;
      out += text.slice(i, i + step);
      i += step;
    }
  }
  return { text: out, used };
}
