import { describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseExpression, MAX_EXPR_DEPTH, MAX_EXPR_LENGTH } from "../../src/lang/parser.js";
import { ExprSyntaxError } from "../../src/lang/errors.js";
import { printExpr } from "../../src/lang/print.js";

const p = (src: string): string => printExpr(parseExpression(src));

/** Input -> S-expression. */
const GOLDEN: ReadonlyArray<readonly [string, string]> = [
  // precedence, lowest to highest: cond < or < and < not < comparisons < + - < * / // % < unary - < postfix
  ["a + b * c", "(+ a (* b c))"],
  ["a * b + c", "(+ (* a b) c)"],
  ["a or b and c", "(or a (and b c))"],
  ["a and b or c", "(or (and a b) c)"],
  ["not a and b", "(and (not a) b)"],
  ["not a or b", "(or (not a) b)"],
  ["not a == b", "(not (== a b))"],
  ["a == b and c != d", "(and (== a b) (!= c d))"],
  ["a < b + c", "(< a (+ b c))"],
  ["a + b <= c * d", "(<= (+ a b) (* c d))"],
  ["a > b or c >= d", "(or (> a b) (>= c d))"],
  ["-a * b", "(* (neg a) b)"],
  ["-a + b", "(+ (neg a) b)"],
  ["a * -b", "(* a (neg b))"],
  ["-a.b", "(neg (. a b))"],
  ["-f(x)", "(neg (call f x))"],
  ["--a", "(neg (neg a))"],
  ["+a", "(pos a)"],
  ["not not a", "(not (not a))"],
  ["a // b % c", "(% (// a b) c)"],
  ["a / b * c", "(* (/ a b) c)"],
  ["a + b - c", "(- (+ a b) c)"],
  // left-associativity
  ["a - b - c", "(- (- a b) c)"],
  ["a / b / c", "(/ (/ a b) c)"],
  ["a // b // c", "(// (// a b) c)"],
  ["a % b % c", "(% (% a b) c)"],
  ["a or b or c", "(or (or a b) c)"],
  ["a and b and c", "(and (and a b) c)"],
  // conditional: right-associative, lower than `or`
  ["a if c else b", "(if c a b)"],
  ["a if c else b if d else e", "(if c a (if d b e))"],
  ["a or b if c or d else e", "(if (or c d) (or a b) e)"],
  ["a + 1 if c else b * 2", "(if c (+ a 1) (* b 2))"],
  ["(a if c else b) + 1", "(+ (if c a b) 1)"],
  ["x if not c else y", "(if (not c) x y)"],
  // parentheses
  ["(a + b) * c", "(* (+ a b) c)"],
  ["a - (b - c)", "(- a (- b c))"],
  ["((a))", "a"],
  ["-(a + b)", "(neg (+ a b))"],
  // lists
  ["[]", "(list)"],
  ["[1]", "(list 1)"],
  ["[1, 2]", "(list 1 2)"],
  ["[1, 2,]", "(list 1 2)"],
  ["[a + 1, [b]]", "(list (+ a 1) (list b))"],
  // calls and member chains
  ["f()", "(call f)"],
  ["f(a)", "(call f a)"],
  ["f(a, b)", "(call f a b)"],
  ["f(a, b, c,)", "(call f a b c)"],
  ["min(a, b, c, d)", "(call min a b c d)"],
  ["f(g(x), y + 1)", "(call f (call g x) (+ y 1))"],
  ["a.b", "(. a b)"],
  ["a.b.c", "(. (. a b) c)"],
  ["device.limits.maxBufferSize", "(. (. device limits) maxBufferSize)"],
  ["dim(shapes.queryT, 0)", "(call dim (. shapes queryT) 0)"],
  ['has(device.features, "shader-f16")', '(call has (. device features) "shader-f16")'],
  ["a.b(c).d", "(. (call (. a b) c) d)"],
  ["a . b", "(. a b)"],
  // strings and escapes
  ['"abc"', '"abc"'],
  ["'abc'", '"abc"'],
  ['"a\\"b"', '"a\\"b"'],
  ["'a\\'b'", '"a\'b"'],
  ['"a\\\\b"', '"a\\\\b"'],
  ['"\\n\\t\\r"', '"\\n\\t\\r"'],
  ["'say \"hi\"'", '"say \\"hi\\""'],
  ['""', '""'],
  // numbers: int vs float
  ["1", "1"],
  ["0", "0"],
  ["1.0", "1.0"],
  ["1.", "1.0"],
  ["1e3", "1000.0"],
  ["1E3", "1000.0"],
  ["2.5e-1", "0.25"],
  [".5", "0.5"],
  ["1_000", "1000"],
  ["9007199254740991", "9007199254740991"],
  ["-1", "(neg 1)"],
  // booleans
  ["true", "true"],
  ["false", "false"],
  ["True", "true"],
  ["False", "false"],
  ["true and False", "(and true false)"],
  // whitespace
  ["  a\n+\tb  ", "(+ a b)"],
];

describe("parser: golden S-expressions", () => {
  it.each(GOLDEN)("%s", (src, want) => {
    expect(p(src)).toBe(want);
  });

  it("marks int and float literals", () => {
    const lit = (s: string) => parseExpression(s) as { kind: string; isInt: boolean; value: number };
    expect(lit("1")).toMatchObject({ kind: "number", isInt: true, value: 1 });
    expect(lit("1.0")).toMatchObject({ kind: "number", isInt: false, value: 1 });
    expect(lit("1e3")).toMatchObject({ kind: "number", isInt: false, value: 1000 });
    expect(lit(".5")).toMatchObject({ kind: "number", isInt: false, value: 0.5 });
  });

  it("gives every node the span of its source text, parentheses included", () => {
    const src = "f(a) + (b * 2)";
    const e = parseExpression(src);
    expect(e.span).toEqual({ start: 0, end: src.length });
    if (e.kind !== "binary") throw new Error("expected a binary node");
    expect(src.slice(e.left.span.start, e.left.span.end)).toBe("f(a)");
    expect(src.slice(e.right.span.start, e.right.span.end)).toBe("(b * 2)");
  });
});

describe("parser: every expression of the seed spec parses", () => {
  const seed = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../specs/PagedAttention.json"), "utf8"));
  const exprs: string[] = [];
  const derive = (m: Record<string, unknown> | undefined) => {
    for (const v of Object.values(m ?? {})) exprs.push(String(v));
  };
  derive(seed.derive);
  exprs.push(...seed.when);
  for (const o of Object.values(seed.outputs) as Array<{ shape?: string }>) if (o.shape) exprs.push(o.shape);
  for (const b of Object.values(seed.bindings) as Array<{ struct?: Array<{ value: string }> }>)
    for (const f of b.struct ?? []) exprs.push(f.value);
  for (const v of seed.variants) {
    derive(v.derive);
    exprs.push(...(v.when ?? []));
    for (const i of v.intermediates ?? []) exprs.push(i.shape);
    for (const pass of v.passes) {
      derive(pass.derive);
      for (const d of Object.values(pass.dispatch)) exprs.push(String(d));
      for (const b of pass.bindings) if (typeof b === "object") for (const f of b.struct ?? []) exprs.push(f.value);
    }
  }

  it("collects the seed's expressions", () => {
    expect(exprs.length).toBeGreaterThan(100);
  });

  it.each([...new Set(exprs)])("%s", (src) => {
    expect(() => parseExpression(src)).not.toThrow();
  });

  it("parses the seed's nested conditional as Jinja does", () => {
    expect(p(seed.derive.cacheVec)).toBe('(if cacheVec4Ok (if (== (. dtypes T) "f16") "vec4<f16>" "vec4<f32>") (. dtypes T))');
    expect(p(seed.derive.slotShapeOk)).toBe(
      "(if (. present slotMappingT) (and (== (call dim (. shapes slotMappingT) 0) tokenCount) (== (. ranks slotMappingT) 1)) true)",
    );
  });
});

interface ErrCase {
  readonly src: string;
  readonly message: string;
  readonly span: readonly [number, number];
  readonly code?: string;
}

const ERRORS: readonly ErrCase[] = [
  { src: "a + )", message: "expected an operand, found `)`", span: [4, 5] },
  { src: "a +", message: "unexpected end of expression", span: [3, 3] },
  { src: "* a", message: "expected an operand, found `*`", span: [0, 1] },
  { src: "a b", message: "unexpected `b` after the end of the expression", span: [2, 3] },
  { src: "1 2", message: "unexpected `2` after the end of the expression", span: [2, 3] },
  { src: "(a", message: "expected `)`, found the end of the expression", span: [2, 2] },
  { src: "f(a b)", message: "expected `,` or `)` in the argument list, found `b`", span: [4, 5] },
  { src: "[1 2]", message: "expected `,` or `]` in the list, found `2`", span: [3, 4] },
  { src: "a.", message: "expected a member name after `.`, found the end of the expression", span: [2, 2] },
  { src: "a.1", message: "unexpected `.1` after the end of the expression", span: [1, 3] },
  { src: "a . 1", message: "expected a member name after `.`, found `1`", span: [4, 5] },
  { src: "'abc", message: "unterminated string literal", span: [0, 4] },
  { src: 'x == "ab', message: "unterminated string literal", span: [5, 8] },
  { src: "'a\\q'", message: "unknown escape `\\q` in string literal", span: [2, 4] },
  { src: "'a\\u0041'", message: "unknown escape `\\u` in string literal", span: [2, 4] },
  { src: "a if b", message: "expected `else` of the conditional started at `if`, found the end of the expression", span: [2, 4] },
  { src: "a if b c", message: "expected `else` of the conditional started at `if`, found `c`", span: [7, 8] },
  { src: "a if b else", message: "unexpected end of expression", span: [11, 11] },
  { src: "a < b < c", message: "comparisons cannot be chained", span: [6, 7] },
  { src: "a == b != c", message: "comparisons cannot be chained", span: [7, 9] },
  { src: "a ** 2", message: "unsupported syntax `**`", span: [2, 4] },
  { src: "~a", message: "unsupported syntax `~`", span: [0, 1] },
  { src: "a ~ b", message: "unsupported syntax `~`", span: [2, 3] },
  { src: "a | abs", message: "unsupported syntax `|`", span: [2, 3] },
  { src: "a in b", message: "unsupported syntax `in`", span: [2, 4] },
  { src: "a is defined", message: "unsupported syntax `is`", span: [2, 4] },
  { src: "a = 1", message: "unsupported syntax `=`", span: [2, 3] },
  { src: "!a", message: "unsupported syntax `!`", span: [0, 1] },
  { src: "a != !b", message: "unsupported syntax `!`", span: [5, 6] },
  { src: "a[0]", message: "unsupported syntax `[`", span: [1, 2] },
  { src: "{}", message: "unsupported syntax `{`", span: [0, 1] },
  { src: "none", message: "unsupported syntax `none`", span: [0, 4] },
  { src: "", message: "empty expression", span: [0, 0] },
  { src: "   ", message: "empty expression", span: [0, 3] },
  { src: "a @ b", message: "unexpected character `@`", span: [2, 3] },
  { src: "$x", message: "unexpected character `$`", span: [0, 1] },
  { src: "a\u0001", message: "unexpected character U+0001", span: [1, 2] },
  { src: "a + \u{1F600}", message: "unexpected character `\u{1F600}` (U+1F600)", span: [4, 6] },
  { src: "n\u0430", message: "unexpected character `\u0430` (U+0430)", span: [1, 2] },
  { src: "n \u202e+ 1", message: "unexpected character U+202E", span: [2, 3] },
  { src: "n\u200b", message: "unexpected character U+200B", span: [1, 2] },
  { src: "n\u00a0+ 1", message: "unexpected character U+00A0", span: [1, 2] },
  { src: "1abc", message: "invalid number literal `1abc`", span: [0, 4] },
  { src: "x + 2px", message: "invalid number literal `2px`", span: [4, 7] },
  { src: "1e3x", message: "invalid number literal `1e3x`", span: [0, 4] },
  { src: "9007199254740992", message: "integer literal `9007199254740992` exceeds 2^53 - 1", span: [0, 16] },
  { src: "1 + 99999999999999999999", message: "integer literal `99999999999999999999` exceeds 2^53 - 1", span: [4, 24] },
  { src: "1e999", message: "number literal `1e999` is out of range", span: [0, 5] },
];

describe("parser: errors", () => {
  it.each(ERRORS)("$src", ({ src, message, span, code }) => {
    let err: unknown;
    try {
      parseExpression(src);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExprSyntaxError);
    const e = err as ExprSyntaxError;
    expect(e.message).toBe(message);
    expect([e.span.start, e.span.end]).toEqual(span);
    expect(e.code).toBe(code ?? "expr_syntax");
  });

  it("gives unsupported syntax a hint saying what to write instead", () => {
    const hint = (src: string) => {
      try {
        parseExpression(src);
      } catch (e) {
        return (e as ExprSyntaxError).hint;
      }
      return undefined;
    };
    expect(hint("a ** 2")).toContain("pow2ceil");
    expect(hint("a = 1")).toContain("==");
    expect(hint("!a")).toContain("not");
    expect(hint("a[0]")).toContain("dim(");
    expect(hint("a < b < c")).toBe("write `a < b and b < c`");
  });

  it("rejects an expression longer than the limit with expr_too_long", () => {
    const src = "1+".repeat(4096) + "1";
    expect(src.length).toBe(MAX_EXPR_LENGTH + 1);
    expect(() => parseExpression(src)).toThrow(ExprSyntaxError);
    try {
      parseExpression(src);
    } catch (e) {
      expect((e as ExprSyntaxError).code).toBe("expr_too_long");
      expect((e as ExprSyntaxError).message).toBe("expression is 8193 characters long; the limit is 8192");
      expect((e as ExprSyntaxError).span).toEqual({ start: 0, end: 8193 });
    }
    expect(() => parseExpression(" ".repeat(MAX_EXPR_LENGTH - 1) + "1")).not.toThrow();
  });

  const deep = (src: string): ExprSyntaxError => {
    try {
      parseExpression(src);
    } catch (e) {
      if (e instanceof ExprSyntaxError) return e;
      throw e;
    }
    throw new Error("expected an error");
  };

  it("rejects 10,000-deep parentheses without a crash (too long before too deep)", () => {
    const e = deep("(".repeat(10_000) + "1" + ")".repeat(10_000));
    expect(e.code).toBe("expr_too_long");
  });

  it.each([
    ["parentheses", "(".repeat(4000) + "1" + ")".repeat(4000)],
    ["unclosed parentheses", "(".repeat(8000)],
    ["unary minus", "-".repeat(8000) + "1"],
    ["not", "not ".repeat(2000) + "true"],
    ["lists", "[".repeat(4000) + "]".repeat(4000)],
    ["a chain of +", Array(4096).fill("1").join("+")],
    ["a member chain", "a" + ".b".repeat(4000)],
    ["a call chain", "f" + "()".repeat(4000)],
    ["nested conditionals", "1 if a else ".repeat(600) + "2"],
  ])("rejects deep %s with expr_too_deep", (_what, src) => {
    expect(src.length).toBeLessThanOrEqual(MAX_EXPR_LENGTH);
    const e = deep(src);
    expect(e.code).toBe("expr_too_deep");
    expect(e.message).toBe(`expression nests deeper than ${MAX_EXPR_DEPTH} levels`);
    expect(e.hint).toBe("split it into derive entries");
  });

  it("accepts nesting up to the limit", () => {
    const n = MAX_EXPR_DEPTH - 2;
    expect(() => parseExpression("(".repeat(n) + "1" + ")".repeat(n))).not.toThrow();
    expect(() =>
      parseExpression(
        Array(MAX_EXPR_DEPTH - 1)
          .fill("1")
          .join("+"),
      ),
    ).not.toThrow();
    expect(() =>
      parseExpression(
        Array(MAX_EXPR_DEPTH + 1)
          .fill("1")
          .join("+"),
      ),
    ).toThrow(ExprSyntaxError);
  });
});
