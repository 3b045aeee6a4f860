/**
 * Pratt parser for the expression language. Grammar (lowest to highest precedence), as Jinja:
 *
 *   expr    := or ("if" or "else" expr)?          conditional, right-associative
 *   or      := and ("or" and)*
 *   and     := not ("and" not)*
 *   not     := "not" not | compare
 *   compare := sum (("=="|"!="|"<"|"<="|">"|">=") sum)?   not chainable
 *   sum     := product (("+"|"-") product)*
 *   product := unary (("*"|"/"|"//"|"%") unary)*
 *   unary   := ("-"|"+") unary | postfix
 *   postfix := primary ("." IDENT | "(" args ")")*
 *   primary := NUMBER | STRING | true | false | IDENT | "(" expr ")" | "[" items "]"
 *
 * Each infix operator is one row of INFIX; adding an operator is adding a row.
 */
import type { Span } from "../core/diagnostic.js";
import type { BinaryOp, Expr } from "../model/ast.js";
import { ExprSyntaxError } from "./errors.js";
import { tokenize, type Token } from "./lexer.js";

/** Binding powers. */
const enum Prec {
  Lowest = 0,
  Cond = 1,
  Or = 2,
  And = 3,
  Not = 4,
  Compare = 5,
  Sum = 6,
  Product = 7,
  Unary = 8,
  Postfix = 9,
}

/**
 * The deepest nesting the parser accepts, counted both as parser recursion (parentheses, unary
 * operators) and as the height of the resulting tree (a chain `a + b + c + …` is one level per
 * operator). Later phases walk the tree recursively, so deeper input is an error, never a stack
 * overflow.
 */
export const MAX_EXPR_DEPTH = 128;
/** The longest expression text accepted. */
export const MAX_EXPR_LENGTH = 8192;

interface InfixRow {
  readonly prec: Prec;
  readonly op: BinaryOp;
}

const INFIX: Readonly<Record<string, InfixRow>> = {
  or: { prec: Prec.Or, op: "or" },
  and: { prec: Prec.And, op: "and" },
  "==": { prec: Prec.Compare, op: "==" },
  "!=": { prec: Prec.Compare, op: "!=" },
  "<": { prec: Prec.Compare, op: "<" },
  "<=": { prec: Prec.Compare, op: "<=" },
  ">": { prec: Prec.Compare, op: ">" },
  ">=": { prec: Prec.Compare, op: ">=" },
  "+": { prec: Prec.Sum, op: "+" },
  "-": { prec: Prec.Sum, op: "-" },
  "*": { prec: Prec.Product, op: "*" },
  "/": { prec: Prec.Product, op: "/" },
  "//": { prec: Prec.Product, op: "//" },
  "%": { prec: Prec.Product, op: "%" },
};

/** Jinja syntax kernelc does not accept, with what to write instead. */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  "**": "powers are not supported; use multiplication or `pow2ceil`",
  "~": "string concatenation with `~` is not supported in spec expressions",
  "|": "filters are not supported in spec expressions; use a builtin function",
  in: "the `in` operator is not supported; compare with `==` and combine with `or`",
  is: "tests (`is`) are not supported in spec expressions",
  "=": "`=` is not an operator; use `==` to compare",
  "!": "`!` is not an operator; use `not`",
  "{": "dict literals are not supported",
  "[": "indexing is not supported; use `dim(shape, i)` for a dimension",
  none: "`none` is not a value in spec expressions",
  None: "`None` is not a value in spec expressions",
};

class Parser {
  private pos = 0;
  private depth = 0;
  /** The height of every node built so far (leaves are 1). */
  private readonly heights = new WeakMap<Expr, number>();

  constructor(private readonly tokens: readonly Token[]) {}

  /** Records `e`'s height (one more than its tallest child) and rejects a tree taller than MAX_EXPR_DEPTH. */
  private built<T extends Expr>(e: T, ...children: readonly Expr[]): T {
    let h = 1;
    for (const c of children) h = Math.max(h, (this.heights.get(c) ?? 1) + 1);
    if (h > MAX_EXPR_DEPTH) {
      throw new ExprSyntaxError(
        `expression nests deeper than ${MAX_EXPR_DEPTH} levels`,
        e.span,
        "split it into derive entries",
        "expr_too_deep",
      );
    }
    this.heights.set(e, h);
    return e;
  }

  private peek(): Token {
    return this.tokens[this.pos];
  }
  private next(): Token {
    const t = this.tokens[this.pos];
    if (t.kind !== "eof") this.pos++;
    return t;
  }
  private isOp(t: Token, text: string): boolean {
    return (t.kind === "op" || t.kind === "keyword") && t.text === text;
  }
  private expect(text: string, what: string): Token {
    const t = this.peek();
    if (!this.isOp(t, text)) throw new ExprSyntaxError(`expected ${what}, found ${describe(t)}`, t.span);
    return this.next();
  }

  /** expr := the whole input. */
  parseAll(): Expr {
    const e = this.parseExpr(Prec.Lowest);
    const t = this.peek();
    if (t.kind !== "eof") {
      const unsupported = UNSUPPORTED[t.text];
      if (unsupported && (t.kind === "op" || t.kind === "keyword"))
        throw new ExprSyntaxError(`unsupported syntax \`${t.text}\``, t.span, unsupported);
      throw new ExprSyntaxError(
        `unexpected ${describe(t)} after the end of the expression`,
        t.span,
        "an operator may be missing between two operands",
      );
    }
    return e;
  }

  /** Pratt loop: a prefix, then infix/postfix operators binding tighter than `minPrec`. */
  private parseExpr(minPrec: Prec): Expr {
    if (++this.depth > MAX_EXPR_DEPTH) {
      throw new ExprSyntaxError(
        `expression nests deeper than ${MAX_EXPR_DEPTH} levels`,
        this.peek().span,
        "split it into derive entries",
        "expr_too_deep",
      );
    }
    let left = this.parsePrefix();
    for (;;) {
      const t = this.peek();
      if (t.kind === "eof") break;
      if (this.isOp(t, ".") || this.isOp(t, "(")) {
        left = this.parsePostfix(left);
        continue;
      }
      if (this.isOp(t, "if")) {
        if (minPrec >= Prec.Cond) break;
        left = this.parseConditional(left);
        continue;
      }
      const row = t.kind === "op" || t.kind === "keyword" ? INFIX[t.text] : undefined;
      if (!row || row.prec <= minPrec) break;
      this.next();
      const right = this.parseExpr(row.prec);
      if (row.prec === Prec.Compare) {
        const after = this.peek();
        const afterRow = after.kind === "op" ? INFIX[after.text] : undefined;
        if (afterRow && afterRow.prec === Prec.Compare) {
          throw new ExprSyntaxError("comparisons cannot be chained", after.span, "write `a < b and b < c`");
        }
      }
      left = this.built({ kind: "binary", op: row.op, left, right, span: join(left.span, right.span) }, left, right);
    }
    this.depth--;
    return left;
  }

  /** cond := then "if" or "else" expr */
  private parseConditional(then: Expr): Expr {
    const ifTok = this.next();
    const cond = this.parseExpr(Prec.Cond);
    const t = this.peek();
    if (!this.isOp(t, "else")) {
      throw new ExprSyntaxError(
        `expected \`else\` of the conditional started at \`if\`, found ${describe(t)}`,
        t.span.start === t.span.end ? ifTok.span : t.span,
        "a conditional needs both branches: `a if cond else b`",
      );
    }
    this.next();
    const otherwise = this.parseExpr(Prec.Lowest);
    return this.built({ kind: "cond", then, cond, otherwise, span: join(then.span, otherwise.span) }, then, cond, otherwise);
  }

  /** postfix := "." IDENT | "(" args ")" */
  private parsePostfix(object: Expr): Expr {
    const t = this.next();
    if (t.text === ".") {
      const name = this.next();
      if (name.kind !== "ident" && name.kind !== "keyword") {
        throw new ExprSyntaxError(`expected a member name after \`.\`, found ${describe(name)}`, name.span);
      }
      return this.built(
        { kind: "member", object, property: name.text, propertySpan: name.span, span: join(object.span, name.span) },
        object,
      );
    }
    const args: Expr[] = [];
    if (!this.isOp(this.peek(), ")")) {
      for (;;) {
        args.push(this.parseExpr(Prec.Lowest));
        if (this.isOp(this.peek(), ",")) {
          this.next();
          if (this.isOp(this.peek(), ")")) break;
          continue;
        }
        break;
      }
    }
    const close = this.expect(")", "`,` or `)` in the argument list");
    return this.built({ kind: "call", callee: object, args, span: join(object.span, close.span) }, object, ...args);
  }

  private parsePrefix(): Expr {
    const t = this.next();
    switch (t.kind) {
      case "number": {
        const value = Number(t.text);
        if (!Number.isFinite(value)) throw new ExprSyntaxError(`number literal \`${t.text}\` is out of range`, t.span);
        if (t.isInt && !Number.isSafeInteger(value)) {
          throw new ExprSyntaxError(
            `integer literal \`${t.text}\` exceeds 2^53 - 1`,
            t.span,
            "integers are exact only up to 9007199254740991",
          );
        }
        return { kind: "number", value, isInt: t.isInt === true, span: t.span };
      }
      case "string":
        return { kind: "string", value: t.text, span: t.span };
      case "ident":
        return { kind: "name", name: t.text, span: t.span };
      case "keyword":
        if (t.text === "true" || t.text === "True") return { kind: "bool", value: true, span: t.span };
        if (t.text === "false" || t.text === "False") return { kind: "bool", value: false, span: t.span };
        if (t.text === "not") {
          const operand = this.parseExpr(Prec.Not - 1);
          return this.built({ kind: "unary", op: "not", operand, span: join(t.span, operand.span) }, operand);
        }
        break;
      case "op":
        if (t.text === "(") {
          const inner = this.parseExpr(Prec.Lowest);
          const close = this.expect(")", "`)`");
          // Parentheses leave no node; the span widens to include them.
          const wrapped = { ...inner, span: join(t.span, close.span) } as Expr;
          this.heights.set(wrapped, this.heights.get(inner) ?? 1);
          return wrapped;
        }
        if (t.text === "[") {
          const items: Expr[] = [];
          if (!this.isOp(this.peek(), "]")) {
            for (;;) {
              items.push(this.parseExpr(Prec.Lowest));
              if (this.isOp(this.peek(), ",")) {
                this.next();
                if (this.isOp(this.peek(), "]")) break;
                continue;
              }
              break;
            }
          }
          const close = this.expect("]", "`,` or `]` in the list");
          return this.built({ kind: "list", items, span: join(t.span, close.span) }, ...items);
        }
        if (t.text === "-" || t.text === "+") {
          const operand = this.parseExpr(Prec.Unary);
          return this.built({ kind: "unary", op: t.text, operand, span: join(t.span, operand.span) }, operand);
        }
        break;
      case "eof":
        throw new ExprSyntaxError("unexpected end of expression", t.span, "an operand is missing");
    }
    const unsupported = UNSUPPORTED[t.text];
    if (unsupported) throw new ExprSyntaxError(`unsupported syntax \`${t.text}\``, t.span, unsupported);
    throw new ExprSyntaxError(`expected an operand, found ${describe(t)}`, t.span);
  }
}

function join(a: Span, b: Span): Span {
  return { start: Math.min(a.start, b.start), end: Math.max(a.end, b.end) };
}

function describe(t: Token): string {
  if (t.kind === "eof") return "the end of the expression";
  if (t.kind === "string") return `string ${JSON.stringify(t.text)}`;
  return `\`${t.text}\``;
}

/** Parses one expression. Throws ExprSyntaxError (with a span into `src`) on any error. */
export function parseExpression(src: string): Expr {
  if (src.length > MAX_EXPR_LENGTH) {
    throw new ExprSyntaxError(
      `expression is ${src.length} characters long; the limit is ${MAX_EXPR_LENGTH}`,
      { start: 0, end: src.length },
      "split it into derive entries",
      "expr_too_long",
    );
  }
  if (src.trim() === "") throw new ExprSyntaxError("empty expression", { start: 0, end: src.length }, "write an expression, e.g. `true`");
  return new Parser(tokenize(src)).parseAll();
}
