/**
 * What a kernelc template may contain, checked on its Nunjucks parse tree before it is compiled
 * (by the renderer) and when lint reads it. Templates are data, not code: they print values,
 * branch, loop and call their own macros. They may not name JavaScript internals (`constructor`,
 * `__proto__`, `prototype`, anything starting with `__`), call anything but a macro or `range`,
 * use filters or tests outside a small data-only list, or use the tags that hand control to
 * other machinery (`extends`, `block`, extensions) or regular-expression literals. The renderer's
 * sandbox (src/emit/template-sandbox.ts) enforces the same rules at run time.
 */
import { createRequire } from "node:module";
import { MAX_TEMPLATE_NESTING, sourceNestingProblem, TemplateTooDeep, tooDeepMessage, unclosedConstruct } from "./template-scan.js";

const require = createRequire(import.meta.url);
// nunjucks ships its lexer, parser and error class as CommonJS modules without type declarations.
const njLexer = require("nunjucks/src/lexer") as { lex(src: string, opts: unknown): unknown };
const njParser = require("nunjucks/src/parser") as { Parser: new (tokens: unknown) => NjParser };
const njNodes = require("nunjucks/src/nodes") as Record<string, new (lineno: number, colno: number, ...a: unknown[]) => unknown>;
const njLib = require("nunjucks/src/lib") as { TemplateError: new (message: string, lineno?: number, colno?: number) => Error };

/**
 * A slice `start:stop:step` inside `x[…]` (each part may be left out: null). Nunjucks has no slices;
 * TrackingParser makes this node where Jinja has its (Python's) slice, the sandbox's compiler
 * compiles `x[a:b]` to Python's slicing, and the checks refuse it anywhere but inside `x[…]`.
 */
export const SliceNode = (njNodes.Node as unknown as { extend(name: string, props: object): new (...a: unknown[]) => unknown }).extend(
  "Slice",
  { fields: ["start", "stop", "step"] },
);

/** A token of nunjucks' lexer (0-based position). */
interface NjToken {
  readonly lineno: number;
  readonly colno: number;
  readonly type?: string;
  readonly value?: string;
}

/** The parts of nunjucks' Parser used here. */
interface NjParser {
  extensions: unknown[];
  nextToken(withWhitespace?: boolean): NjToken | null;
  peekToken(): NjToken | null;
  pushToken(tok: NjToken): void;
  parseAsRoot(): unknown;
  parseConcat(): unknown;
  parsePow(): unknown;
  parseAggregate(): unknown;
  parsePrimary(noPostfix?: boolean): unknown;
  parseExpression(): unknown;
  fail(message: string, lineno?: number, colno?: number): never;
}

/** Jinja's binary operators of one precedence level, by token, with nunjucks' node type for each. */
const ADDITIVE: Readonly<Record<string, string>> = { "+": "Add", "-": "Sub" };
const MULTIPLICATIVE: Readonly<Record<string, string>> = { "*": "Mul", "/": "Div", "//": "FloorDiv", "%": "Mod" };
const CLOSING: Readonly<Record<string, string>> = { "left-paren": ")", "left-bracket": "]", "left-curly": "}" };

/**
 * Nunjucks' parser, remembering the last token it read. Why: on some malformed expressions the
 * parser fails with a JavaScript error of its own rather than a TemplateError (`{{ x not y }}`:
 * "pushToken: can only push one token on between reads"; `{{ x | f()[0] }}`, `{% call x %}`,
 * `{% from "f" import 1 %}`: a TypeError), which carries no position; it is reported at that token.
 */
class TrackingParser extends njParser.Parser {
  lastToken?: NjToken;

  override nextToken(withWhitespace?: boolean): NjToken | null {
    const tok = super.nextToken(withWhitespace);
    if (tok) this.lastToken = tok;
    return tok;
  }

  /*
   * Jinja's precedence levels (Python's): `+` and `-` are one level and `*`, `/`, `//` and `%`
   * another, each applied left to right. Nunjucks gave every operator a level of its own
   * (`7 * 3 // 2` was `7 * (3 // 2)`, 7; Jinja's is 10); these two replace its parseAdd and
   * parseMul, and its parseSub, parseDiv, parseFloorDiv and parseMod are no longer reached.
   */

  parseAdd(): unknown {
    return this.leftToRight(ADDITIVE, () => this.parseMul());
  }

  parseMul(): unknown {
    return this.leftToRight(MULTIPLICATIVE, () => this.parsePow());
  }

  private leftToRight(ops: Readonly<Record<string, string>>, operand: () => unknown): unknown {
    let node = operand() as NjToken;
    for (;;) {
      const tok = this.nextToken();
      if (!tok) break;
      if (tok.type !== "operator" || !Object.hasOwn(ops, tok.value ?? "")) {
        this.pushToken(tok);
        break;
      }
      node = new njNodes[ops[tok.value!]](node.lineno, node.colno, node, operand()) as NjToken;
    }
    return node;
  }

  /** For each aggregate being parsed, innermost last: the expression depth its items are parsed at when it is `[…]`, else -1. */
  private readonly brackets: number[] = [];
  /** How many parseExpression calls are running. */
  private expressionDepth = 0;

  /**
   * An item of `[…]` may be a slice, `a:b`, `a:b:c`, `:b`, `a:`, `::c` (a SliceNode; each part an
   * expression or left out): nunjucks failed on the `:` ("expected comma after expression").
   */
  override parseExpression(): unknown {
    const item = this.brackets.length > 0 && this.brackets[this.brackets.length - 1] === this.expressionDepth;
    this.expressionDepth++;
    try {
      if (!item) return super.parseExpression();
      const first = this.peekToken();
      const start = first?.type === "colon" ? null : super.parseExpression();
      if (this.peekToken()?.type !== "colon") return start;
      const parts: unknown[] = [start];
      while (parts.length < 3 && this.peekToken()?.type === "colon") {
        this.nextToken();
        const next = this.peekToken()?.type;
        parts.push(next === "colon" || next === "right-bracket" ? null : super.parseExpression());
      }
      const extra = this.peekToken();
      if (extra?.type === "colon") this.fail("a slice has at most three parts, `start:stop:step`", extra.lineno, extra.colno);
      return new SliceNode(first!.lineno, first!.colno, ...parts);
    } finally {
      this.expressionDepth--;
    }
  }

  /** A bracket closed by its own kind (nunjucks took `[1, 2)` and `(1]`). */
  override parseAggregate(): unknown {
    const open = this.peekToken();
    this.brackets.push(open?.type === "left-bracket" ? this.expressionDepth : -1);
    let node: unknown;
    try {
      node = super.parseAggregate();
    } finally {
      this.brackets.pop();
    }
    const close = this.lastToken;
    const want = open?.type !== undefined ? CLOSING[open.type] : undefined;
    if (node && want !== undefined && close !== undefined && close.value !== want)
      this.fail(
        `\`${String(open!.value)}\` at line ${open!.lineno + 1}, column ${open!.colno + 1} is closed by \`${String(close.value)}\`: close it with \`${want}\``,
        close.lineno,
        close.colno,
      );
    return node;
  }

  /**
   * Number literals Jinja reads differently: a float that is an integer (`2.0`, which Jinja prints
   * as `2.0` and nunjucks as `2`) and an integer past 2^53 (nunjucks rounds it).
   */
  override parsePrimary(noPostfix?: boolean): unknown {
    const tok = this.peekToken();
    if (tok?.type === "float" && Number.isInteger(parseFloat(tok.value ?? "")))
      this.fail(
        `\`${String(tok.value)}\` is a float in Jinja, which prints as \`${parseFloat(tok.value!)}.0\`; kernelc templates keep integers integers: write \`${parseFloat(tok.value!)}\``,
        tok.lineno,
        tok.colno,
      );
    if (tok?.type === "int" && !Number.isSafeInteger(parseInt(tok.value ?? "", 10)))
      this.fail(
        `\`${String(tok.value)}\` is outside ±9007199254740991 (2^53 - 1), beyond which kernelc templates cannot compute integers exactly: compute it in the spec`,
        tok.lineno,
        tok.colno,
      );
    return super.parsePrimary(noPostfix);
  }
}

/** What a template says where nunjucks' parser failed with an error of its own (`message`). */
function parserCrashMessage(message: string): string {
  if (message.startsWith("pushToken"))
    return "`not` after a value must be followed by `in` (`x not in list`); to negate a value, put `not` before it (`not x`)";
  return "the expression here cannot be parsed: a part of it is missing or misplaced (an argument list or index after a filter's arguments, `{% call %}` without a macro call, `{% from %}` importing something that is not a name)";
}

/**
 * Parses a template's source with kernelc's options; every error is nunjucks' TemplateError, with a
 * position where one is known: one at the end of the file is placed at the construct the file
 * never closes (unclosedConstruct), as lint reports it.
 */
function parseSource(src: string): unknown {
  const p = new TrackingParser(njLexer.lex(src, { trimBlocks: true, lstripBlocks: true }));
  p.extensions = [];
  try {
    return p.parseAsRoot();
  } catch (err) {
    const located = err instanceof njLib.TemplateError && typeof (err as { lineno?: unknown }).lineno === "number";
    if (located) throw err;
    // Errors without a position mostly come from reading past the end of the file inside a construct it never closes.
    const unclosed = unclosedConstruct(src);
    if (unclosed) throw new njLib.TemplateError(unclosed.message, unclosed.line, unclosed.column);
    if (p.lastToken === undefined) throw err;
    const message = String((err as Error).message);
    const what = err instanceof njLib.TemplateError ? message : parserCrashMessage(message);
    throw new njLib.TemplateError(what, p.lastToken.lineno + 1, p.lastToken.colno + 1);
  }
}

/**
 * Parse trees of the latest template sources, by text. Why kept: lint's template reads, the
 * renderer's loader and the render key's declaration test (emit/declarations-print.ts) each read a
 * template's tree, several times per compilation, and parsing is a large part of a short lint.
 * Every reader only walks the tree (none modifies it), so one tree serves them all. Bounded, so a
 * long kernelc watch session keeps only recent texts.
 */
const parsedTrees = new Map<string, unknown>();
const PARSED_TREES_KEPT = 64;

/**
 * Parses a template as kernelc renders it (trimBlocks, lstripBlocks). Throws nunjucks' TemplateError
 * on a syntax error, and TemplateTooDeep for a template that nests deeper than
 * MAX_TEMPLATE_NESTING (checked before parsing, which would overflow the stack, and on the tree).
 * The tree is shared by the callers with the same text: it must not be modified.
 */
export function parseTemplate(src: string): unknown {
  let tree = parsedTrees.get(src);
  if (tree === undefined) {
    const deep = sourceNestingProblem(src);
    if (deep) throw deep;
    tree = parseSource(src);
    const deepTree = treeNestingProblem(tree);
    if (deepTree) throw deepTree;
    if (parsedTrees.size >= PARSED_TREES_KEPT) parsedTrees.delete(parsedTrees.keys().next().value!);
    parsedTrees.set(src, tree);
  }
  return tree;
}

/**
 * Where a parse tree first nests deeper than MAX_TEMPLATE_NESTING levels (one per node; a
 * comparison one more per operator after the first, as the compiled code nests them), or
 * undefined. Iterative: the tree may be too deep for recursion.
 */
function treeNestingProblem(tree: unknown): TemplateTooDeep | undefined {
  const stack: { node: unknown; depth: number; at?: NjNode }[] = [{ node: tree, depth: 0 }];
  while (stack.length > 0) {
    const { node: x, depth, at } = stack.pop()!;
    if (Array.isArray(x)) {
      for (const y of x) stack.push({ node: y, depth, at });
      continue;
    }
    if (!isNode(x)) continue;
    // Node lists carry no position of their own (0, 0): the nearest enclosing node's is used.
    const here = typeof x.lineno === "number" && x.typename !== "NodeList" && x.typename !== "Root" ? x : at;
    const levels = depth + 1 + (x.typename === "Compare" && Array.isArray(x.ops) ? Math.max(0, x.ops.length - 1) : 0);
    if (levels > MAX_TEMPLATE_NESTING) {
      const what = "an expression or blocks nested inside each other, such as a long chain of operators, filters or members";
      return new TemplateTooDeep(tooDeepMessage(what), (here?.lineno ?? 0) + 1, (here?.colno ?? 0) + 1);
    }
    if (x.typename === "Set" && x.body !== undefined) stack.push({ node: x.body, depth: levels, at: here });
    for (const f of x.fields ?? []) stack.push({ node: x[f], depth: levels, at: here });
  }
  return undefined;
}

/** Filters a template may use: each maps data to data. */
export const TEMPLATE_FILTERS: readonly string[] = [
  "abs",
  "batch",
  "capitalize",
  "center",
  "default",
  "d",
  "first",
  "float",
  "indent",
  "int",
  "join",
  "last",
  "length",
  "list",
  "lower",
  "replace",
  "reverse",
  "round",
  "slice",
  "sort",
  "string",
  "sum",
  "title",
  "trim",
  "upper",
  "wordcount",
];

/** Tests (`x is NAME`) a template may use, each with whether it takes an argument (`n is divisibleby(4)`). */
const TEST_TAKES_ARGUMENT: Readonly<Record<string, boolean>> = {
  defined: false,
  undefined: false,
  none: false,
  null: false,
  number: false,
  string: false,
  odd: false,
  even: false,
  divisibleby: true,
  equalto: true,
  eq: true,
  sameas: true,
  ne: true,
  ge: true,
  gt: true,
  greaterthan: true,
  le: true,
  lt: true,
  lessthan: true,
  truthy: false,
  falsy: false,
  iterable: false,
  mapping: false,
  lower: false,
  upper: false,
};

/** Tests (`x is NAME`) a template may use. */
export const TEMPLATE_TESTS: readonly string[] = Object.keys(TEST_TAKES_ARGUMENT);

/** The tests of TEMPLATE_TESTS that take an argument; the others take none. */
const TESTS_WITH_ARGUMENT: ReadonlySet<string> = new Set(TEMPLATE_TESTS.filter((t) => TEST_TAKES_ARGUMENT[t]));

/** The only global a template sees, besides the render context: a bounded `range`. */
export const TEMPLATE_GLOBALS: readonly string[] = ["range"];

/**
 * A name a template may write (a variable, a `set` or loop target, a macro, its parameters, an
 * import): an ASCII identifier. Why: Nunjucks' lexer takes any run of characters up to whitespace or
 * a delimiter as a name, quotes included (`x"^…^"`), and its compiler pastes names into the
 * JavaScript it generates between double quotes without escaping them, so a quote in a name would
 * end the string and run the rest as code.
 */
const TEMPLATE_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The nodes a template node writes as names, each with what it is for messages: `{% set %}`
 * targets, loop variables, a macro's name and parameters (also a `{% call %}` block's), the name
 * before `=` of a keyword argument or a parameter's default value, the names of
 * `{% import … as x %}` and `{% from … import a as b %}`. Why: Nunjucks' compiler pastes the
 * `value` of each into the JavaScript it generates, between double quotes and in places without
 * any, and its parser takes any primary expression there, so a string
 * (`{% set "a\"+f()+\"" = 1 %}`) would end the quotes and run as code. Each must be a Symbol, whose
 * value the checks hold to an identifier.
 */
export function writtenNames(node: unknown): { node: unknown; what: string }[] {
  if (!isNode(node)) return [];
  const names: { node: unknown; what: string }[] = [];
  const children = (x: unknown): unknown[] => (isNode(x) && Array.isArray(x.children) ? x.children : []);
  // A macro's parameters with a default value are its KeywordArgs, listed with those of calls.
  const parameters = (args: unknown, what: string): void => {
    for (const arg of children(args)) if (!isNode(arg) || arg.typename !== "KeywordArgs") names.push({ node: arg, what });
  };
  switch (node.typename) {
    case "Set":
      for (const t of Array.isArray(node.targets) ? node.targets : []) names.push({ node: t, what: "a `{% set %}` target" });
      break;
    case "For": {
      const name = node.name;
      const vars = isNode(name) && name.typename === "Array" ? children(name) : [name];
      for (const v of vars) names.push({ node: v, what: "a loop variable" });
      break;
    }
    case "Macro":
      names.push({ node: node.name, what: "a macro's name" });
      parameters(node.args, "a macro parameter");
      break;
    case "Caller":
      parameters(node.args, "a `{% call %}` parameter");
      break;
    case "KeywordArgs":
      for (const pair of children(node)) names.push({ node: isNode(pair) ? pair.key : pair, what: "the name before `=`" });
      break;
    case "Import":
      names.push({ node: node.target, what: "the name after `as`" });
      break;
    case "FromImport":
      for (const n of children(node.names)) {
        if (isNode(n) && n.typename === "Pair") {
          names.push({ node: n.key, what: "an imported name" });
          names.push({ node: n.value, what: "the name after `as`" });
        } else names.push({ node: n, what: "an imported name" });
      }
      break;
  }
  return names;
}

/** How a node that is not a name is written, for messages. */
function describeNode(node: unknown): string {
  if (!isNode(node)) return "nothing";
  if (node.typename === "Literal") return typeof node.value === "string" ? "a string" : `\`${String(node.value)}\``;
  return "an expression";
}

/** Whether a name is a JavaScript internal no template may read, write or define. */
export function isForbiddenTemplateName(name: string): boolean {
  return name === "constructor" || name === "prototype" || name.startsWith("__");
}

/** A refused construct at a 1-based template line and column (`tooDeep`: nesting past MAX_TEMPLATE_NESTING). */
export interface TemplateProblem {
  readonly message: string;
  readonly line: number;
  readonly column: number;
  readonly tooDeep?: boolean;
}

/** Node types of the Nunjucks parse tree a template may contain. */
const ALLOWED_NODES = new Set([
  "Root",
  "NodeList",
  "Output",
  "TemplateData",
  "Literal",
  "Symbol",
  "Group",
  "Array",
  "Dict",
  "Pair",
  "InlineIf",
  "In",
  "Is",
  "Or",
  "And",
  "Not",
  "Add",
  "Concat",
  "Sub",
  "Mul",
  "Div",
  "FloorDiv",
  "Mod",
  "Pow",
  "Neg",
  "Pos",
  "Compare",
  "CompareOperand",
  "LookupVal",
  "FunCall",
  "Filter",
  "KeywordArgs",
  "Set",
  "If",
  "For",
  "Macro",
  "Caller",
  "Include",
  "Import",
  "FromImport",
  "Capture",
  "Switch",
  "Case",
  "Slice",
]);

/** How a refused node type is written in a template, for messages. */
const NODE_SYNTAX: Readonly<Record<string, string>> = {
  Extends: "`{% extends %}`",
  Block: "`{% block %}`",
  Super: "`super()`",
  CallExtension: "a custom tag",
  CallExtensionAsync: "a custom tag",
  IfAsync: "`{% ifAsync %}`",
  AsyncEach: "`{% asyncEach %}`",
  AsyncAll: "`{% asyncAll %}`",
  FilterAsync: "an asynchronous filter",
};

interface NjNode {
  readonly typename?: string;
  readonly fields?: readonly string[];
  readonly lineno?: number;
  readonly colno?: number;
  readonly value?: unknown;
  readonly [k: string]: unknown;
}

const FILTERS = new Set(TEMPLATE_FILTERS);
/** Nodes of binary operators and comparisons: `is` after one, unbracketed, means something else in Jinja. */
const BINARY_NODES = new Set(["Add", "Sub", "Mul", "Div", "FloorDiv", "Mod", "Pow", "Concat", "Compare", "In", "And", "Or"]);
const TESTS = new Set(TEMPLATE_TESTS);

function isNode(x: unknown): x is NjNode {
  return x !== null && typeof x === "object" && typeof (x as NjNode).typename === "string";
}

/**
 * The constructs of a parsed template (the tree nunjucks' parser returns) that kernelc refuses,
 * in document order. Walks the tree iteratively: a deeply nested template cannot overflow.
 */
export function templateSafetyProblems(ast: unknown): TemplateProblem[] {
  const problems: TemplateProblem[] = [];
  const at = (node: NjNode, fallback?: NjNode): { line: number; column: number } => {
    const n = typeof node.lineno === "number" ? node : (fallback ?? node);
    return { line: (n.lineno ?? -1) + 1, column: (n.colno ?? -1) + 1 };
  };
  const refuse = (node: NjNode, message: string, fallback?: NjNode): void => {
    problems.push({ message, ...at(node, fallback) });
  };
  const checkName = (node: NjNode, name: string, what: string, parent?: NjNode): void => {
    if (isForbiddenTemplateName(name))
      refuse(node, `${what} \`${name}\` is not allowed: it names a JavaScript internal, which templates cannot reach`, parent);
  };
  const stack: { node: unknown; parent?: NjNode }[] = [{ node: ast }];
  while (stack.length > 0) {
    const { node: x, parent } = stack.pop()!;
    if (Array.isArray(x)) {
      for (let i = x.length - 1; i >= 0; i--) stack.push({ node: x[i], parent });
      continue;
    }
    if (!isNode(x)) continue;
    const type = x.typename!;
    if (!ALLOWED_NODES.has(type)) {
      refuse(x, `${NODE_SYNTAX[type] ?? `\`${type}\``} is not allowed in kernelc templates`, parent);
      continue;
    }
    for (const { node: n, what } of writtenNames(x)) {
      if (!isNode(n) || n.typename !== "Symbol")
        refuse(isNode(n) ? n : x, `${what} must be a name (ASCII letters, digits and \`_\`), not ${describeNode(n)}`, x);
    }
    switch (type) {
      case "Symbol":
        if (!TEMPLATE_IDENTIFIER.test(String(x.value)))
          refuse(
            x,
            `the name \`${String(x.value)}\` is not an identifier: names in kernelc templates are ASCII letters, digits and \`_\`, not starting with a digit`,
            parent,
          );
        else checkName(x, String(x.value), "the name", parent);
        break;
      case "Literal":
        if (x.value instanceof RegExp) refuse(x, "regular-expression literals (`r/…/`) are not allowed in kernelc templates", parent);
        break;
      case "LookupVal": {
        const val = x.val as NjNode | undefined;
        if (isNode(val) && val.typename === "Literal" && typeof val.value === "string") checkName(val, val.value, "the member", x);
        // Nunjucks' parser reads `[` or `.` after any operator as a member access of nothing
        // (`{{ * [1] }}`), and `x[]` as one without an index: its compiler then fails without a line.
        if (!isNode(x.target)) refuse(x, "a member access (`.name` or `[index]`) needs a value before it", parent);
        else if (!isNode(val)) refuse(x, "`[]` needs an index inside it, such as `x[0]`", parent);
        break;
      }
      case "Slice":
        // Only an index is a slice (`xs[1:]`); in a list (`[1:2]`) or anywhere else it is not Jinja.
        if (parent?.typename !== "LookupVal" || parent.val !== x)
          refuse(x, "a slice `a:b` is written only inside the brackets after a list or a string (`xs[1:]`, `s[:-1]`)", parent);
        break;
      case "Pair": {
        const key = x.key as NjNode | undefined;
        if (isNode(key) && key.typename === "Literal" && typeof key.value === "string") checkName(key, key.value, "the key", x);
        // A mapping's key is a name or a string (Nunjucks' compiler fails on any other without saying
        // where); a keyword argument's is a name (writtenNames).
        else if (parent?.typename === "Dict" && (!isNode(key) || key.typename !== "Symbol"))
          refuse(isNode(key) ? key : x, `a mapping's key must be a name or a string (\`{"a": 1}\`), not ${describeNode(key)}`, x);
        break;
      }
      case "Group": {
        // Nunjucks compiles `(a, b)` to JavaScript's comma operator (the last item) and `()` to code that does not parse.
        const n = Array.isArray(x.children) ? x.children.length : 0;
        if (n === 0) refuse(x, "`()` is empty: put an expression inside the brackets, or write an empty list as `[]`", parent);
        else if (n > 1)
          refuse(
            x,
            `\`(…, …)\` with ${n} items is a tuple, which kernelc templates do not have (Nunjucks would take its last item): write a list \`[…, …]\``,
            parent,
          );
        break;
      }
      case "FunCall": {
        const callee = x.name as NjNode | undefined;
        const ok =
          isNode(callee) &&
          (callee.typename === "Symbol" ||
            (callee.typename === "LookupVal" &&
              isNode(callee.target) &&
              callee.target.typename === "Symbol" &&
              isNode(callee.val) &&
              callee.val.typename === "Literal" &&
              typeof callee.val.value === "string" &&
              TEMPLATE_IDENTIFIER.test(callee.val.value)));
        if (!ok) refuse(x, "only macros (and `range`) can be called, by name (`m(…)`) or from an imported namespace (`lib.m(…)`)", parent);
        break;
      }
      case "Pow": {
        // Jinja applies `**` left to right with the unary minus on its operand (`2 ** 3 ** 2` is
        // 64, `-2 ** 2` is 4), Python right to left after `**` (512, -4): brackets say which.
        const left = x.left as NjNode | undefined;
        if (isNode(left) && left.typename === "Pow")
          refuse(x, "`a ** b ** c` is `(a ** b) ** c` in Jinja but `a ** (b ** c)` in Python: write the brackets you mean", parent);
        else if (isNode(left) && (left.typename === "Neg" || left.typename === "Pos"))
          refuse(x, "`-a ** b` is `(-a) ** b` in Jinja but `-(a ** b)` in Python: write the brackets you mean", parent);
        break;
      }
      case "Concat":
        // Jinja joins with `~` before it adds (`"x" ~ n - 1` is `("x" ~ n) - 1`, an error); nunjucks after.
        if ([x.left, x.right].some((n) => isNode(n) && (n.typename === "Add" || n.typename === "Sub")))
          refuse(
            x,
            '`~` next to `+` or `-` without brackets: Jinja joins first (`"x" ~ n - 1` is `("x" ~ n) - 1`, an error): write `"x" ~ (n - 1)`',
            parent,
          );
        break;
      case "In": {
        // Jinja's `in` is a comparison and chains with the others (`a == b in c` is `a == b and b in c`).
        const chained = [x.left, x.right].some((n) => isNode(n) && (n.typename === "Compare" || n.typename === "In"));
        if (chained)
          refuse(
            x,
            "`in` chained with another comparison: Jinja reads `a == b in c` as `a == b and b in c`: write `and` or brackets",
            parent,
          );
        break;
      }
      case "CompareOperand":
        if (x.type === "===" || x.type === "!==")
          refuse(x, `\`${String(x.type)}\` is not a Jinja operator: write \`${String(x.type).slice(0, 2)}\``, parent);
        break;
      case "Filter": {
        const name = x.name as NjNode | undefined;
        const filter = isNode(name) ? String(name.value) : "";
        if (!FILTERS.has(filter))
          refuse(x, `the filter \`${filter}\` is not available in kernelc templates (available: ${TEMPLATE_FILTERS.join(", ")})`, parent);
        // The filter's name is a Symbol in the tree but not a variable: do not check it as one.
        stack.push({ node: x.args, parent: x });
        continue;
      }
      case "Is": {
        const right = x.right as NjNode | undefined;
        const call = isNode(right) && right.typename === "FunCall" ? right : undefined;
        const testNode = call ? (call.name as NjNode | undefined) : right;
        const test = isNode(testNode) && testNode.typename === "Symbol" ? String(testNode.value) : "";
        const args = call && isNode(call.args) && Array.isArray(call.args.children) ? (call.args.children as unknown[]) : [];
        const left = x.left as NjNode | undefined;
        if (isNode(left) && BINARY_NODES.has(left.typename!))
          refuse(
            x,
            "`is` after an operator without brackets: Jinja tests the value right before `is` (`n + 1 is even` is `n + (1 is even)`): write `(n + 1) is even`",
            parent,
          );
        if (test === "") refuse(x, "`is` must be followed by the name of a test (`x is defined`, `n is divisibleby(4)`)", parent);
        else if (!TESTS.has(test))
          refuse(x, `the test \`is ${test}\` is not available in kernelc templates (available: ${TEMPLATE_TESTS.join(", ")})`, parent);
        else if (TESTS_WITH_ARGUMENT.has(test) && (args.length !== 1 || (isNode(args[0]) && args[0].typename === "KeywordArgs")))
          refuse(x, `the test \`is ${test}\` takes one argument, in brackets: \`x is ${test}(4)\``, parent);
        else if (!TESTS_WITH_ARGUMENT.has(test) && call)
          refuse(x, `the test \`is ${test}\` takes no argument: write \`x is ${test}\``, parent);
        stack.push({ node: x.left, parent: x });
        if (call) stack.push({ node: call.args, parent: x });
        continue;
      }
    }
    const fields = x.fields ?? [];
    // The parser keeps the content of a `{% set x %}…{% endset %}` block in `body`, outside the fields.
    if (type === "Set" && x.body !== undefined) stack.push({ node: x.body, parent: x });
    for (let i = fields.length - 1; i >= 0; i--) stack.push({ node: x[fields[i]], parent: x });
  }
  return problems.sort((a, b) => a.line - b.line || a.column - b.column);
}

/**
 * The refused constructs of a template's source; a template that does not parse has none (its
 * syntax error is reported where it is compiled), unless it nests too deep to parse.
 */
export function templateSourceProblems(src: string): TemplateProblem[] {
  let ast: unknown;
  try {
    ast = parseTemplate(src);
  } catch (err) {
    if (err instanceof TemplateTooDeep)
      return [{ message: `the template ${err.message}`, line: err.line, column: err.column, tooDeep: true }];
    return [];
  }
  return templateSafetyProblems(ast);
}
