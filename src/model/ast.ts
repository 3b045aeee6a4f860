/**
 * The expression AST. Every node is immutable and carries the byte span of its source text
 * (offsets into the expression string; `ExprSource` maps them back into the spec file).
 */
import type { Span } from "../core/diagnostic.js";

export type BinaryOp = "or" | "and" | "==" | "!=" | "<" | "<=" | ">" | ">=" | "+" | "-" | "*" | "/" | "//" | "%";
export type UnaryOp = "not" | "-" | "+";

export type Expr = NumberLit | StringLit | BoolLit | NameRef | MemberExpr | CallExpr | UnaryExpr | BinaryExpr | CondExpr | ListExpr;

/** A number literal; `isInt` when written without '.' or exponent. */
export interface NumberLit {
  readonly kind: "number";
  readonly value: number;
  readonly isInt: boolean;
  readonly span: Span;
}
export interface StringLit {
  readonly kind: "string";
  readonly value: string;
  readonly span: Span;
}
export interface BoolLit {
  readonly kind: "bool";
  readonly value: boolean;
  readonly span: Span;
}
/** A bare identifier: a derive entry, a namespace (`shapes`, `attrs`, …) or a builtin function. */
export interface NameRef {
  readonly kind: "name";
  readonly name: string;
  readonly span: Span;
}
/** `object.property` */
export interface MemberExpr {
  readonly kind: "member";
  readonly object: Expr;
  readonly property: string;
  readonly propertySpan: Span;
  readonly span: Span;
}
/** `callee(args…)`; only builtin functions can be called. */
export interface CallExpr {
  readonly kind: "call";
  readonly callee: Expr;
  readonly args: readonly Expr[];
  readonly span: Span;
}
export interface UnaryExpr {
  readonly kind: "unary";
  readonly op: UnaryOp;
  readonly operand: Expr;
  readonly span: Span;
}
export interface BinaryExpr {
  readonly kind: "binary";
  readonly op: BinaryOp;
  readonly left: Expr;
  readonly right: Expr;
  readonly span: Span;
}
/** Jinja's conditional expression `then if cond else otherwise`. */
export interface CondExpr {
  readonly kind: "cond";
  readonly then: Expr;
  readonly cond: Expr;
  readonly otherwise: Expr;
  readonly span: Span;
}
export interface ListExpr {
  readonly kind: "list";
  readonly items: readonly Expr[];
  readonly span: Span;
}
