/**
 * Type-checks one expression AST against a scope and resolves every name, producing the typed IR.
 * Names resolve only inside the language's namespaces: a member lookup is a lookup in a table
 * built from the spec, never a property access on a JavaScript object.
 */
import type { Span } from "../core/diagnostic.js";
import type { Code } from "../core/codes.js";
import { didYouMean } from "../core/did-you-mean.js";
import type { Expr } from "../model/ast.js";
import { BUILTINS, HAS_DOC, isFunctionName } from "./builtins.js";
import type { BuiltinName, Leaf, TExpr } from "../model/ir.js";
import {
  BOOL,
  DTYPE,
  ERROR,
  FLOAT,
  INT,
  STRING,
  SHAPE,
  comparable,
  isNumeric,
  numericJoin,
  showType,
  unify,
  type Type,
} from "../model/types.js";

/** A problem found in one expression; the caller places it in the spec file. */
export interface ExprProblem {
  readonly code: Code;
  readonly message: string;
  readonly span: Span;
  readonly hint?: string;
  /** A note pointing at a declaration elsewhere in the spec (pointer into the spec). */
  readonly notePointer?: { readonly message: string; readonly pointer: string };
}

export interface TensorInfo {
  readonly pointer: string;
  readonly optional: boolean;
}

/** What an expression can see. Tables, not objects: lookups never reach a prototype. */
export interface Scope {
  readonly tensors: ReadonlyMap<string, TensorInfo>;
  readonly attrs: ReadonlyMap<string, { readonly type: Type; readonly pointer: string }>;
  readonly tunables: ReadonlySet<string>;
  readonly typeParams: ReadonlySet<string>;
  readonly limits: ReadonlySet<string>;
  readonly features: ReadonlySet<string>;
  /** The type of a derive entry visible here, "cycle" while it is being checked, or undefined when none. */
  readonly deriveType: (name: string) => Type | "cycle" | undefined;
  readonly deriveNames: () => Iterable<string>;
}

/** Names that would reach JavaScript's object machinery if looked up naively. */
const FORBIDDEN_MEMBERS = new Set([
  "constructor",
  "__proto__",
  "prototype",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
  "hasOwnProperty",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "toString",
  "toLocaleString",
  "valueOf",
]);

export const NAMESPACES = ["shapes", "ranks", "present", "tensorDtypes", "attrs", "tunables", "dtypes", "device"] as const;
type NamespaceName = (typeof NAMESPACES)[number] | "device.limits" | "device.features";

/** A partially resolved name: a namespace (only valid before `.` or as has()'s first argument) or a value. */
type Resolved = { readonly ns: NamespaceName; readonly span: Span } | { readonly value: TExpr };

const LEAF_TYPES: Record<string, Type> = {
  shapes: SHAPE,
  ranks: INT,
  present: BOOL,
  tensorDtypes: DTYPE,
  tunables: INT,
  dtypes: STRING,
  limits: INT,
};

class ExprChecker {
  readonly problems: ExprProblem[] = [];
  /** Derive entries this expression reads directly. */
  readonly derives = new Set<string>();

  constructor(private readonly scope: Scope) {}

  /** How to fix a read of an undeclared attribute: a did-you-mean, else the declared attributes. */
  private unknownAttributeHint(name: string): string {
    const names = [...this.scope.attrs.keys()];
    const declared = names.length === 0 ? "the spec declares none" : `declared: ${names.join(", ")}`;
    return didYouMean(name, names) ?? `declare it under \`attributes\` (${declared})`;
  }

  private problem(code: Code, message: string, span: Span, hint?: string, notePointer?: ExprProblem["notePointer"]): TExpr {
    this.problems.push({ code, message, span, hint, notePointer });
    return { k: "const", value: 0, type: ERROR, span };
  }

  check(e: Expr): TExpr {
    switch (e.kind) {
      case "number":
        return { k: "const", value: e.value, type: e.isInt ? INT : FLOAT, span: e.span };
      case "string":
        return { k: "const", value: e.value, type: STRING, span: e.span };
      case "bool":
        return { k: "const", value: e.value, type: BOOL, span: e.span };
      case "name":
      case "member": {
        const r = this.resolve(e);
        if ("value" in r) return r.value;
        return this.problem(
          "type_mismatch",
          `\`${r.ns}\` is a namespace, not a value`,
          r.span,
          `name one of its members, e.g. \`${r.ns}.${this.exampleMember(r.ns)}\``,
        );
      }
      case "call":
        return this.checkCall(e);
      case "unary": {
        const operand = this.check(e.operand);
        if (e.op === "not") {
          if (operand.type.k !== "bool" && operand.type.k !== "error") {
            return this.problem(
              "type_mismatch",
              `\`not\` needs a bool, found ${showType(operand.type)}`,
              e.operand.span,
              "compare explicitly, e.g. `x == 0`",
            );
          }
          return { k: "not", operand, type: BOOL, span: e.span };
        }
        if (!isNumeric(operand.type))
          return this.problem("type_mismatch", `unary \`${e.op}\` needs a number, found ${showType(operand.type)}`, e.operand.span);
        return e.op === "-" ? { k: "neg", operand, type: operand.type, span: e.span } : operand;
      }
      case "binary":
        return this.checkBinary(e);
      case "cond": {
        const cond = this.check(e.cond);
        const then = this.check(e.then);
        const otherwise = this.check(e.otherwise);
        if (cond.type.k !== "bool" && cond.type.k !== "error") {
          this.problem("type_mismatch", `the condition after \`if\` must be a bool, found ${showType(cond.type)}`, e.cond.span);
        }
        const t = unify(then.type, otherwise.type);
        if (!t) {
          return this.problem(
            "type_mismatch",
            `the branches of the conditional have different types: ${showType(then.type)} and ${showType(otherwise.type)}`,
            e.span,
            "make both branches the same type",
          );
        }
        return { k: "cond", cond, then, otherwise, type: t, span: e.span };
      }
      case "list": {
        const items = e.items.map((i) => this.check(i));
        let elem: Type = items.length === 0 ? INT : items[0].type;
        for (let i = 1; i < items.length; i++) {
          const u = unify(elem, items[i].type);
          if (!u)
            return this.problem(
              "type_mismatch",
              `list items have different types: ${showType(elem)} and ${showType(items[i].type)}`,
              e.items[i].span,
            );
          elem = u;
        }
        return { k: "list", items, type: { k: "list", elem }, span: e.span };
      }
    }
  }

  private exampleMember(ns: NamespaceName): string {
    const first = <T>(it: Iterable<T>): T | undefined => {
      for (const x of it) return x;
      return undefined;
    };
    switch (ns) {
      case "shapes":
      case "ranks":
      case "present":
      case "tensorDtypes":
        return first(this.scope.tensors.keys()) ?? "x";
      case "attrs":
        return first(this.scope.attrs.keys()) ?? "x";
      case "tunables":
        return first(this.scope.tunables) ?? "x";
      case "dtypes":
        return first(this.scope.typeParams) ?? "T";
      case "device":
        return "limits.maxBufferSize";
      case "device.limits":
        return "maxBufferSize";
      case "device.features":
        return "shader-f16";
    }
  }

  /** Resolves a name or member chain to a namespace or a value. */
  private resolve(e: Expr): Resolved {
    if (e.kind === "name") {
      const dt = this.scope.deriveType(e.name);
      if (dt !== undefined) {
        this.derives.add(e.name);
        if (dt === "cycle") return { value: { k: "derive", name: e.name, type: ERROR, span: e.span } };
        return { value: { k: "derive", name: e.name, type: dt, span: e.span } };
      }
      if ((NAMESPACES as readonly string[]).includes(e.name)) return { ns: e.name as NamespaceName, span: e.span };
      if (isFunctionName(e.name)) {
        return { value: this.problem("not_callable", `\`${e.name}\` is a function; call it`, e.span, `write \`${e.name}(…)\``) };
      }
      const hint = didYouMean(e.name, [...this.scope.deriveNames(), ...NAMESPACES]);
      return {
        value: this.problem(
          "unknown_name",
          `unknown name \`${e.name}\`: it is not a derive entry or a namespace`,
          e.span,
          hint ?? `declare it under \`derive\`, or use a namespace: ${NAMESPACES.join(", ")}`,
        ),
      };
    }
    if (e.kind !== "member") return { value: this.check(e) };
    const base = this.resolve(e.object);
    const prop = e.property;
    const pspan = e.propertySpan;
    if ("value" in base) {
      if (base.value.type.k === "error") return base;
      return {
        value: this.problem(
          "unknown_member",
          `${/^[aeiou]/.test(showType(base.value.type)) ? "an" : "a"} ${showType(base.value.type)} value has no member \`${prop}\``,
          pspan,
          "only namespaces (shapes, attrs, device.limits, …) have members",
        ),
      };
    }
    if (FORBIDDEN_MEMBERS.has(prop) && !this.declares(base.ns, prop)) {
      return {
        value: this.problem(
          "forbidden_member",
          `\`${prop}\` is not a member of \`${base.ns}\``,
          pspan,
          base.ns === "device.limits"
            ? "members of `device.limits` are the WebGPU limit names (GPUSupportedLimits), such as `maxComputeWorkgroupStorageSize`"
            : `members of \`${base.ns}\` are only the names the spec declares`,
        ),
      };
    }
    const leaf = (ns: Leaf["ns"], type: Type): Resolved => ({ value: { k: "leaf", leaf: { ns, name: prop } as Leaf, type, span: e.span } });
    switch (base.ns) {
      case "shapes":
      case "ranks":
      case "present":
      case "tensorDtypes": {
        if (!this.scope.tensors.has(prop)) {
          const hint = didYouMean(prop, this.scope.tensors.keys());
          return {
            value: this.problem(
              "unknown_tensor",
              `\`${prop}\` is not an input or output of this kernel`,
              pspan,
              hint ?? `declared tensors: ${[...this.scope.tensors.keys()].join(", ")}`,
            ),
          };
        }
        return leaf(base.ns, LEAF_TYPES[base.ns]);
      }
      case "attrs": {
        const a = this.scope.attrs.get(prop);
        if (!a) {
          return {
            value: this.problem("unknown_attribute", `\`${prop}\` is not a declared attribute`, pspan, this.unknownAttributeHint(prop)),
          };
        }
        return leaf("attrs", a.type);
      }
      case "tunables":
        if (!this.scope.tunables.has(prop)) {
          const hint = didYouMean(prop, this.scope.tunables);
          return {
            value: this.problem("unknown_tunable", `\`${prop}\` is not a declared tunable`, pspan, hint ?? "declare it under `tunables`"),
          };
        }
        return leaf("tunables", INT);
      case "dtypes":
        if (!this.scope.typeParams.has(prop)) {
          const hint = didYouMean(prop, this.scope.typeParams);
          return {
            value: this.problem(
              "unknown_type_param",
              `\`${prop}\` is not a type constraint of this kernel`,
              pspan,
              hint ?? "declare it under `typeConstraints`",
            ),
          };
        }
        return leaf("dtypes", STRING);
      case "device":
        if (prop === "limits") return { ns: "device.limits", span: e.span };
        if (prop === "features") return { ns: "device.features", span: e.span };
        return {
          value: this.problem(
            "unknown_member",
            `\`device\` has no member \`${prop}\``,
            pspan,
            didYouMean(prop, ["limits", "features"]) ?? 'use `device.limits.NAME` or `has(device.features, "NAME")`',
          ),
        };
      case "device.limits":
        if (!this.scope.limits.has(prop)) {
          const hint = didYouMean(prop, this.scope.limits);
          return {
            value: this.problem(
              "unknown_limit",
              `\`${prop}\` is not a WebGPU limit`,
              pspan,
              hint ?? "see GPUSupportedLimits in the WebGPU spec",
            ),
          };
        }
        return leaf("limits", INT);
      case "device.features":
        return {
          value: this.problem(
            "type_mismatch",
            '`device.features` members are not identifiers; test a feature with `has(device.features, "name")`',
            e.span,
          ),
        };
    }
  }

  /** Whether the spec declares `prop` in a namespace (tables, so `toString` is a plain name there). */
  private declares(ns: NamespaceName, prop: string): boolean {
    switch (ns) {
      case "shapes":
      case "ranks":
      case "present":
      case "tensorDtypes":
        return this.scope.tensors.has(prop);
      case "attrs":
        return this.scope.attrs.has(prop);
      case "tunables":
        return this.scope.tunables.has(prop);
      case "dtypes":
        return this.scope.typeParams.has(prop);
      default:
        return false;
    }
  }

  private checkCall(e: Extract<Expr, { kind: "call" }>): TExpr {
    if (e.callee.kind !== "name") {
      return this.problem("not_callable", "only builtin functions can be called", e.callee.span);
    }
    const name = e.callee.name;
    if (name === "has") return this.checkHas(e);
    if (!Object.prototype.hasOwnProperty.call(BUILTINS, name)) {
      if (this.scope.deriveType(name) !== undefined)
        return this.problem("not_callable", `\`${name}\` is a derive entry, not a function`, e.callee.span);
      const hint = didYouMean(name, [...Object.keys(BUILTINS), "has"]);
      return this.problem(
        "unknown_function",
        `unknown function \`${name}\``,
        e.callee.span,
        hint ?? `builtins: ${[...Object.keys(BUILTINS), "has"].join(", ")}`,
      );
    }
    const info = BUILTINS[name as BuiltinName];
    const args = e.args.map((a) => this.check(a));
    if (args.length < info.minArgs || args.length > info.maxArgs) {
      const want = info.minArgs === info.maxArgs ? `${info.minArgs}` : `${info.minArgs} to ${info.maxArgs}`;
      return this.problem(
        "wrong_arity",
        `\`${name}\` takes ${want} argument${want === "1" ? "" : "s"}, got ${args.length}`,
        e.span,
        info.signature,
      );
    }
    const t = info.typeOf(args.map((a) => a.type));
    if ("error" in t) return this.problem("type_mismatch", t.error, e.args[t.arg].span, info.signature);
    return { k: "call", fn: name as BuiltinName, args, type: t, span: e.span };
  }

  private checkHas(e: Extract<Expr, { kind: "call" }>): TExpr {
    if (e.args.length !== 2) return this.problem("wrong_arity", `\`has\` takes 2 arguments, got ${e.args.length}`, e.span, HAS_DOC);
    const [nsArg, keyArg] = e.args;
    if (keyArg.kind !== "string")
      return this.problem("type_mismatch", "the second argument of `has` must be a string literal", keyArg.span, HAS_DOC);
    const ns = this.resolve(nsArg);
    const key = keyArg.value;
    if ("value" in ns)
      return ns.value.type.k === "error"
        ? ns.value
        : this.problem("type_mismatch", "the first argument of `has` must be `attrs`, `present` or `device.features`", nsArg.span, HAS_DOC);
    if (ns.ns === "attrs") {
      if (!this.scope.attrs.has(key))
        return this.problem("unknown_attribute", `\`${key}\` is not a declared attribute`, keyArg.span, this.unknownAttributeHint(key));
      return { k: "hasAttr", name: key, type: BOOL, span: e.span };
    }
    if (ns.ns === "present") {
      if (!this.scope.tensors.has(key))
        return this.problem(
          "unknown_tensor",
          `\`${key}\` is not an input or output of this kernel`,
          keyArg.span,
          didYouMean(key, this.scope.tensors.keys()),
        );
      return { k: "leaf", leaf: { ns: "present", name: key }, type: BOOL, span: e.span };
    }
    if (ns.ns === "device.features") {
      if (!this.scope.features.has(key))
        return this.problem("unknown_member", `\`${key}\` is not a WebGPU feature`, keyArg.span, didYouMean(key, this.scope.features));
      return { k: "leaf", leaf: { ns: "features", name: key }, type: BOOL, span: e.span };
    }
    return this.problem("type_mismatch", `\`has\` does not apply to \`${ns.ns}\``, nsArg.span, HAS_DOC);
  }

  private checkBinary(e: Extract<Expr, { kind: "binary" }>): TExpr {
    const left = this.check(e.left);
    const right = this.check(e.right);
    const lt = left.type;
    const rt = right.type;
    const node = (type: Type): TExpr => ({ k: "binary", op: e.op, left, right, type, span: e.span });
    if (lt.k === "error" || rt.k === "error")
      return node(
        e.op === "and" || e.op === "or" || e.op === "==" || e.op === "!=" || e.op === "<" || e.op === "<=" || e.op === ">" || e.op === ">="
          ? BOOL
          : ERROR,
      );
    switch (e.op) {
      case "and":
      case "or":
        for (const [t, sp] of [
          [lt, e.left.span],
          [rt, e.right.span],
        ] as const) {
          if (t.k !== "bool")
            return this.problem(
              "type_mismatch",
              `\`${e.op}\` needs bool operands, found ${showType(t)}`,
              sp,
              "compare explicitly, e.g. `x > 0`",
            );
        }
        return node(BOOL);
      case "==":
      case "!=":
        if (!comparable(lt, rt)) return this.problem("type_mismatch", `cannot compare ${showType(lt)} with ${showType(rt)}`, e.span);
        return node(BOOL);
      case "<":
      case "<=":
      case ">":
      case ">=":
        if (!isNumeric(lt) || !isNumeric(rt))
          return this.problem("type_mismatch", `\`${e.op}\` needs numbers, found ${showType(lt)} and ${showType(rt)}`, e.span);
        return node(BOOL);
      default:
        if (!isNumeric(lt)) return this.problem("type_mismatch", `\`${e.op}\` needs numbers, found ${showType(lt)}`, e.left.span);
        if (!isNumeric(rt)) return this.problem("type_mismatch", `\`${e.op}\` needs numbers, found ${showType(rt)}`, e.right.span);
        return node(numericJoin(lt, rt));
    }
  }
}

/** The result of checking one expression. */
export interface CheckedExpr {
  readonly texpr: TExpr;
  readonly problems: readonly ExprProblem[];
  readonly derives: ReadonlySet<string>;
}

/** Checks and resolves one parsed expression in `scope`. */
export function checkExpr(e: Expr, scope: Scope): CheckedExpr {
  const c = new ExprChecker(scope);
  const texpr = c.check(e);
  return { texpr, problems: c.problems, derives: c.derives };
}
