/**
 * The template sandbox: a Nunjucks environment in which templates are data. Each render gets its
 * own runtime (the object the compiled template code calls for every lookup, call and output), so
 * that:
 * - member access reads only own properties of plain data objects and arrays handed to the
 *   template (never a prototype, never a member of a string, function or macro), and refuses
 *   `constructor`, `prototype` and `__*` names;
 * - names resolve to template variables, the render context and `range` only (no other globals);
 * - only macros and `range` can be called;
 * - filters and tests are a data-only list (src/check/template-safety.ts);
 * - render limits hold: loop iterations, the size of each printed value and string variable, the
 *   shader's total size, macro nesting, template nesting and render time; exceeding one throws a
 *   RenderLimitExceeded that the renderer reports with the template line.
 * The parse tree of every template is also checked before it is compiled (the loader does it).
 */
import { createRequire } from "node:module";
import nunjucks from "nunjucks";
import { TEMPLATE_FILTERS, TEMPLATE_TESTS, isForbiddenTemplateName, parseTemplate, writtenNames } from "../check/template-safety.js";
import {
  JINJA_TESTS,
  JinjaFloat,
  absFilter,
  binary,
  codePoints,
  compareChain,
  describeValue,
  concatText,
  equal,
  contains,
  floatFilter,
  floatRefusal,
  formatNumber,
  intFilter,
  noMembers,
  roundFilter,
  sequenceItem,
  sliceSequence,
  truthy,
  unary,
} from "./template-jinja.js";

const require = createRequire(import.meta.url);
// nunjucks ships its runtime, filters and tests as CommonJS modules without type declarations.
const njRuntime = require("nunjucks/src/runtime") as Record<string, unknown> & {
  Frame: FrameClass;
  makeMacro: (...a: unknown[]) => Callable;
  fromIterator: (x: unknown) => unknown;
  suppressValue: (v: unknown, esc: boolean) => unknown;
};
const njFilters = require("nunjucks/src/filters") as Record<string, Callable>;
const njTests = require("nunjucks/src/tests") as Record<string, Callable>;
const njCompiler = require("nunjucks/src/compiler") as {
  Compiler: new (name: string, throwOnUndefined: boolean) => CompilerLike;
  compile: (src: string, asyncFilters: unknown, extensions: unknown, name: string, opts: CompileOptions) => string;
};
const njTransformer = require("nunjucks/src/transformer") as { transform(ast: unknown, asyncFilters: unknown[], name: string): unknown };
const njParser = require("nunjucks/src/parser") as { parse(src: string, extensions: unknown[], opts: unknown): unknown };

/** The environment's options nunjucks hands its compiler (those read here). */
interface CompileOptions {
  readonly throwOnUndefined?: boolean;
  readonly trimBlocks?: boolean;
  readonly lstripBlocks?: boolean;
  readonly tags?: unknown;
}

interface CompilerLike {
  compile(node: unknown): void;
  getCode(): string;
  _emitLine(code: string): void;
  _compileChildren(node: { children: { typename?: string; lineno?: number; colno?: number }[] }, frame: unknown): void;
}

/** The compiler's own methods the overrides below call. */
interface CompilerSelf {
  _emit(code: string): void;
  compile(node: unknown, frame: unknown): void;
  _compileExpression(n: unknown, f: unknown): void;
  _compileAggregate(n: unknown, f: unknown, open: string, close: string): void;
  _getNodeName(n: unknown): string;
}

/** Statement nodes: before each, the compiled code records its template line and column. */
const STATEMENTS = new Set(["Output", "Set", "For", "If", "Macro", "Include", "Import", "FromImport", "Switch"]);

/**
 * Nunjucks' compiler, with the current template line and column (1-based) recorded before every
 * statement, so that an error the sandbox raises inside an expression names its line (stock
 * nunjucks records a position only at function calls, 0-based), and the size of the output being
 * built checked there, so that literal text repeated by a loop is caught at its line.
 */
class LocatingCompiler extends njCompiler.Compiler {
  override _compileChildren(node: { children: { typename?: string; lineno?: number; colno?: number }[] }, frame: unknown): void {
    for (const child of node.children) {
      if (child && STATEMENTS.has(child.typename ?? "") && typeof child.lineno === "number") {
        const buffer = (this as unknown as { buffer: string }).buffer;
        const [line, column] = [child.lineno + 1, (child.colno ?? 0) + 1];
        this._emitLine(
          `lineno = ${line}; colno = ${column}; runtime.outputSoFar(${buffer}.length, ${this.fileLiteral()}, ${line}, ${column});`,
        );
      }
      (this as unknown as { compile(n: unknown, f: unknown): void }).compile(child, frame);
    }
  }

  /**
   * Nunjucks' compileFunCall with 1-based positions, which the sandbox also records (runtime.at),
   * and the callee's name for messages as a JSON string literal (nunjucks escapes only its quotes).
   */
  compileFunCall(node: { lineno: number; colno: number; name: unknown; args: unknown }, frame: unknown): void {
    const self = this as unknown as CompilerSelf;
    const [line, column] = [node.lineno + 1, node.colno + 1];
    self._emit(`(lineno = ${line}, colno = ${column}, runtime.at(${this.fileLiteral()}, ${line}, ${column}), runtime.callWrap(`);
    self._compileExpression(node.name, frame);
    self._emit(`, ${JSON.stringify(self._getNodeName(node.name))}, context, `);
    self._compileAggregate(node.args, frame, "[", "])");
    self._emit(")");
  }

  /*
   * Operators. Nunjucks writes a unary operator right before its operand's code and a binary one
   * between its operands' code, so the JavaScript reads its own precedence into the text:
   * `- - 1` became `--1` (a decrement: a SyntaxError, or on a variable `- - x` decremented it),
   * `not a == b` became `!a == b` (`(not a) == b`), and `"x" ~ n - 1` became `"x" + "" + n - 1`
   * (NaN). Each operand in brackets keeps the meaning of the parse tree, which is Jinja's here.
   */

  compileNeg(node: { target: unknown }, frame: unknown): void {
    this.call("runtime.jinjaUnary", ['"neg"', node.target], frame);
  }

  compilePos(node: { target: unknown }, frame: unknown): void {
    this.call("runtime.jinjaUnary", ['"pos"', node.target], frame);
  }

  compileNot(node: { target: unknown }, frame: unknown): void {
    this.call("!runtime.jinjaTruthy", [node.target], frame);
  }

  compileConcat(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaConcat", [node.left, node.right], frame);
  }

  /*
   * Arithmetic, comparisons, `in`, `and`, `or` and conditions: each a call of the sandbox's helper
   * with Jinja's meaning (src/emit/template-jinja.ts), where nunjucks wrote JavaScript's operator
   * (`%` of a negative number, `==` between a string and a number, `[] or x`, `a < b < c`, …).
   * The right operand of `and`, `or` and a comparison chain is a function, computed only as needed.
   */

  compileAdd(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaBinary", ['"add"', node.left, node.right], frame);
  }

  compileSub(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaBinary", ['"sub"', node.left, node.right], frame);
  }

  compileMul(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaBinary", ['"mul"', node.left, node.right], frame);
  }

  compileDiv(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaBinary", ['"div"', node.left, node.right], frame);
  }

  compileFloorDiv(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaBinary", ['"floordiv"', node.left, node.right], frame);
  }

  compileMod(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaBinary", ['"mod"', node.left, node.right], frame);
  }

  compilePow(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaBinary", ['"pow"', node.left, node.right], frame);
  }

  compileIn(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaIn", [node.left, node.right], frame);
  }

  compileAnd(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaAnd", [node.left, { lazy: node.right }], frame);
  }

  compileOr(node: { left: unknown; right: unknown }, frame: unknown): void {
    this.call("runtime.jinjaOr", [node.left, { lazy: node.right }], frame);
  }

  compileCompare(node: { expr: unknown; ops: { type: string; expr: unknown }[] }, frame: unknown): void {
    const args: unknown[] = [node.expr];
    for (const op of node.ops) args.push(JSON.stringify(op.type), { lazy: op.expr });
    this.call("runtime.jinjaCompare", args, frame);
  }

  compileInlineIf(node: { cond: unknown; body: unknown; else_: unknown }, frame: unknown): void {
    const self = this as unknown as CompilerSelf;
    this.call("(runtime.jinjaTruthy", [node.cond], frame);
    self._emit(" ? (");
    self.compile(node.body, frame);
    self._emit(") : (");
    if (node.else_ !== null) self.compile(node.else_, frame);
    else self._emit('""');
    self._emit("))");
  }

  compileIf(node: { cond: unknown; body: unknown; else_: unknown }, frame: unknown): void {
    const self = this as unknown as CompilerSelf & { _withScopedSyntax(f: () => void): void };
    self._emit("if(");
    this.call("runtime.jinjaTruthy", [node.cond], frame);
    self._emit(") {\n");
    self._withScopedSyntax(() => self.compile(node.body, frame));
    if (node.else_) {
      self._emit("}\nelse {\n");
      self._withScopedSyntax(() => self.compile(node.else_, frame));
    }
    self._emit("}\n");
  }

  /**
   * `{% switch x %}{% case a %}…{% default %}…{% endswitch %}` (a Nunjucks tag, not Jinja's): its
   * value computed once, then each case compared with it in order by Jinja's `==` (nunjucks wrote a
   * JavaScript `switch`, which compares with `===`: `6 / 2` matched no `case 3`, `[1]` no
   * `case [1]`). As nunjucks', a case with an empty body runs the body of the next case (or of the
   * default, after the last case).
   */
  compileSwitch(
    node: { expr: unknown; cases: { cond: unknown; body: { children: unknown[] } }[]; default: unknown },
    frame: unknown,
  ): void {
    const self = this as unknown as CompilerSelf & { _tmpid(): string; _withScopedSyntax(f: () => void): void };
    const value = self._tmpid();
    self._emit(`var ${value} = (`);
    self.compile(node.expr, frame);
    self._emit(");\n");
    let pending: unknown[] = [];
    let branches = 0;
    for (const c of node.cases) {
      pending.push(c.cond);
      if (c.body.children.length === 0) continue;
      self._emit(branches++ > 0 ? "else if (" : "if (");
      pending.forEach((cond, i) => {
        if (i > 0) self._emit(" || ");
        this.call("runtime.jinjaEqual", [value, cond], frame);
      });
      self._emit(") {\n");
      self._withScopedSyntax(() => self.compile(c.body, frame));
      self._emit("}\n");
      pending = [];
    }
    // Nothing matched: the empty cases after the last body are still compared (JavaScript's switch
    // computed each case until one matched; one may fail), then the default runs, as it does when
    // one of them matches.
    if (pending.length === 0 && !node.default) return;
    if (branches > 0) self._emit("else {\n");
    if (pending.length > 0) {
      self._emit("if (");
      pending.forEach((cond, i) => {
        if (i > 0) self._emit(" || ");
        this.call("runtime.jinjaEqual", [value, cond], frame);
      });
      self._emit(") {}\n");
    }
    if (node.default) self._withScopedSyntax(() => self.compile(node.default, frame));
    if (branches > 0) self._emit("}\n");
  }

  /** `x[i]`, `x.name`, and `x[a:b:c]` (a slice, Python's: src/check/template-safety.ts parses it) of a list or a string. */
  compileLookupVal(
    node: { target: unknown; val: { typename?: string; start?: unknown; stop?: unknown; step?: unknown } },
    frame: unknown,
  ): void {
    const self = this as unknown as CompilerSelf;
    if (node.val?.typename !== "Slice") {
      self._emit("runtime.memberLookup((");
      self._compileExpression(node.target, frame);
      self._emit("),");
      self._compileExpression(node.val, frame);
      self._emit(")");
      return;
    }
    const { start, stop, step } = node.val;
    this.call("runtime.jinjaSlice", [node.target, ...[start, stop, step].map((part) => part ?? "null")], frame);
  }

  /** Writes `fn(arg, …)`: a string argument as written, `{ lazy: node }` as a function returning the node's value, any other the node's code. */
  private call(fn: string, args: readonly unknown[], frame: unknown): void {
    const self = this as unknown as CompilerSelf;
    self._emit(`${fn}(`);
    args.forEach((arg, i) => {
      if (i > 0) self._emit(", ");
      if (typeof arg === "string") self._emit(arg);
      else if (arg !== null && typeof arg === "object" && "lazy" in arg) {
        self._emit("function() { return (");
        self.compile((arg as { lazy: unknown }).lazy, frame);
        self._emit("); }");
      } else {
        self._emit("(");
        self.compile(arg, frame);
        self._emit(")");
      }
    });
    self._emit(")");
  }

  /**
   * `x is test` and `x is test(arg)`: nunjucks' compileIs wrote a test's arguments one after the
   * other without commas, so `x is divisibleby(a, (b))` called `a` with `b` (the checks allow one
   * argument, check/template-safety.ts; here they are separated whatever the tree holds). The
   * test's name, a Symbol the checks hold to the allowed tests, is written as a JSON string.
   */
  compileIs(
    node: { left: unknown; right: { typename?: string; name?: { value?: unknown }; value?: unknown; args?: { children: unknown[] } } },
    frame: unknown,
  ): void {
    const self = this as unknown as CompilerSelf;
    const call = node.right.typename === "FunCall" ? node.right : undefined;
    const name = call ? call.name?.value : node.right.value;
    if (typeof name !== "string") throw new Error("the test after `is` is not a name");
    self._emit(`env.getTest(${JSON.stringify(name)}).call(context, `);
    self.compile(node.left, frame);
    for (const arg of call?.args?.children ?? []) {
      self._emit(", ");
      self.compile(arg, frame);
    }
    self._emit(") === true");
  }

  /** The template's name as a JavaScript literal (a JSON string, or `undefined`). */
  private fileLiteral(): string {
    return (this as unknown as { _templateName(): string })._templateName();
  }
}

/**
 * Compiles a template's source to the module text nunjucks evaluates, with positions recorded (see
 * LocatingCompiler). With the options kernelc renders with, the parse tree is the one the checks
 * made of the same text (parseTemplate), not parsed again: neither the transformer (without async
 * filters and blocks, which the sandbox refuses before compiling) nor the compiler modifies it.
 */
function compileTemplate(src: string, name: string, opts: CompileOptions): string {
  const c = new LocatingCompiler(name, opts.throwOnUndefined ?? false);
  const tree =
    opts.trimBlocks === true && opts.lstripBlocks === true && opts.tags === undefined ? parseTemplate(src) : njParser.parse(src, [], opts);
  assertPastableNames(tree);
  c.compile(njTransformer.transform(tree, [], name));
  return c.getCode();
}

/**
 * Throws if a name in the tree could end the double-quoted string nunjucks' compiler pastes it
 * into (a quote, a backslash, a line break), or if the compiler would paste something other than a
 * name where it writes one (writtenNames: a string as a `{% set %}` target, a macro's name, …). The
 * checks refuse both before a template is compiled (check/template-safety.ts); this holds for any
 * tree that reaches the compiler, the instrumented copies for line maps included.
 */
function assertPastableNames(tree: unknown): void {
  const stack: unknown[] = [tree];
  while (stack.length > 0) {
    const x = stack.pop();
    if (Array.isArray(x)) {
      stack.push(...x);
      continue;
    }
    if (x === null || typeof x !== "object") continue;
    const node = x as { typename?: unknown; value?: unknown; fields?: readonly string[]; body?: unknown } & Record<string, unknown>;
    if (typeof node.typename !== "string") continue;
    if (node.typename === "Symbol" && /["\\\n\r\u2028\u2029]/.test(String(node.value)))
      throw new Error(`the name ${JSON.stringify(String(node.value))} is not an identifier`);
    for (const written of writtenNames(node)) {
      const n = written.node as { typename?: unknown; value?: unknown } | null | undefined;
      if (n?.typename !== "Symbol") throw new Error(`${written.what} is not a name`);
    }
    if (node.typename === "Set" && node.body !== undefined) stack.push(node.body);
    for (const f of node.fields ?? []) stack.push(node[f]);
  }
}

type Callable = (...args: unknown[]) => unknown;

/** The limits one render of one shader must stay within. */
export interface RenderLimits {
  /** Loop iterations plus `range` items plus macro calls, over the whole render. */
  readonly maxSteps: number;
  /** Characters of the rendered shader, and of any one printed value or string variable. */
  readonly maxOutputChars: number;
  /** Macro calls nested inside each other. */
  readonly maxCallDepth: number;
  /** Nested scopes: loops, includes and imports inside each other. */
  readonly maxNesting: number;
  /** Wall-clock time of one render, in milliseconds. */
  readonly maxMillis: number;
}

/** The limits every render runs under (docs/templates.md lists them). */
export const RENDER_LIMITS: RenderLimits = Object.freeze({
  maxSteps: 200_000,
  maxOutputChars: 1 << 20,
  maxCallDepth: 64,
  maxNesting: 256,
  maxMillis: 20_000,
});

/** The sandbox's message for `{{ list }}`; render.ts names the expression and says what to print. */
export const PRINTS_A_LIST = "the template prints a list";
/** The sandbox's message for printing a macro or `range` (`{{ m }}`, `{{ range | string }}`, `m ~ ""`); render.ts words it. */
export const PRINTS_A_CALLABLE = "the template prints a macro or function";
/** The sandbox's message for printing an object (`{{ lib }}` of an `{% import %}`, `{{ tunables }}`); render.ts words it. */
export const PRINTS_A_MAPPING = "the template prints a mapping";

/** A template tried something the sandbox refuses (a reported template_error). */
export class TemplateSandboxError extends Error {
  override readonly name = "TemplateSandboxError";
}

/** A render went past one of its limits (a reported template_limit_exceeded). */
export class RenderLimitExceeded extends Error {
  override readonly name = "RenderLimitExceeded";
}

interface FrameLike {
  variables: Record<string, unknown>;
  parent?: FrameLike;
  topLevel: boolean;
  set(name: string, val: unknown, resolveUp?: boolean): void;
  push(isolateWrites?: boolean): FrameLike;
}
type FrameClass = new (parent?: FrameLike, isolateWrites?: boolean) => FrameLike;

/** A template position the sandbox records as the code runs (1-based line and column). */
export interface SandboxPosition {
  readonly file: string | undefined;
  readonly line: number;
  readonly column: number;
}

/** Counters of one render. */
class Budget {
  steps = 0;
  callDepth = 0;
  /** Templates rendering inside each other (includes and imports). */
  renders = 0;
  printed = 0;
  /**
   * Where the template code runs now: the template, line and column of the statement or call being
   * run (each records it; a macro call puts its caller's back on return). That is where a limit or
   * a refusal the runtime raises happened. Why kept here: nunjucks takes the position from the
   * template whose code catches the error first, and the rest of a template after an
   * `{% import %}` runs inside the imported template's code (its callback), so nunjucks reported
   * such an error at the imported template's last line; and it names the calling template for an
   * error inside a macro imported from another file.
   */
  file: string | undefined;
  line = 0;
  column = 0;
  private ticks = 0;
  private readonly deadline: number;
  /** Functions a template may call: its macros (made by this render's runtime) and `range`. */
  readonly callable = new WeakSet<object>();

  constructor(readonly limits: RenderLimits) {
    this.deadline = Date.now() + limits.maxMillis;
  }

  /** Counts `n` steps (loop iterations, range items, calls); `what` describes them for the error. */
  step(n: number, what: () => string): void {
    this.steps += n;
    if (this.steps > this.limits.maxSteps) {
      throw new RenderLimitExceeded(
        `${what()} takes the render past ${this.limits.maxSteps} steps (loop iterations, range items and macro calls); a shader needs far fewer: bound the loop, or compute the value in the spec`,
      );
    }
    this.tick();
  }

  /** Checks the clock now and then. */
  tick(): void {
    if ((++this.ticks & 255) === 0 && Date.now() > this.deadline) {
      throw new RenderLimitExceeded(`rendering took more than ${this.limits.maxMillis / 1000} s`);
    }
  }

  /** Checks the size of a string a template made; `what` names it for the error. */
  size(v: unknown, what: () => string): void {
    if (typeof v === "string" && v.length > this.limits.maxOutputChars) {
      throw new RenderLimitExceeded(`${what()} is ${v.length} characters long, more than the limit of ${this.limits.maxOutputChars}`);
    }
  }
}

/**
 * Makes a function a template may hold (a macro, `caller`, `range`) refuse to become text: every
 * way JavaScript turns it into a string (printing, `~`, `join`, the `string` filter's
 * `toString()`) would otherwise paste its JavaScript source into the WGSL.
 */
function refuseText<F extends object>(fn: F): F {
  const refuse = (): never => {
    throw new TemplateSandboxError(PRINTS_A_CALLABLE);
  };
  for (const key of [Symbol.toPrimitive, "toString", "valueOf"]) Object.defineProperty(fn, key, { value: refuse, configurable: false });
  return fn;
}

/** The sandbox's message for a value a template must not print or stringify, if it is one: a list, a function or an object. */
function unprintable(v: unknown): string | undefined {
  if (v instanceof JinjaFloat) throw floatRefusal(v, "prints with `.0`");
  if (typeof v === "function") return PRINTS_A_CALLABLE;
  if (Array.isArray(v)) return PRINTS_A_LIST;
  if (v !== null && typeof v === "object" && !(v instanceof (njRuntime.SafeString as new () => object))) return PRINTS_A_MAPPING;
  return undefined;
}

function isPlainData(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === null || proto === Object.prototype;
}

function refuseName(name: string): void {
  if (isForbiddenTemplateName(name))
    throw new TemplateSandboxError(`\`${name}\` is not accessible in templates: it names a JavaScript internal`);
}

/**
 * The runtime object the compiled code of one environment's templates calls (the base runtime is
 * never handed out), with the Budget of the render in progress. Why one object for all the renders
 * of an environment, with the budget swapped at the start of each (`begin`), rather than a fresh
 * runtime per render: the compiled templates then call the same functions on the same object every
 * render, which V8 optimizes, where fresh closures and a fresh frame class per render (hundreds of
 * renders in a build) kept the hottest template code slow. Renders of one environment never
 * overlap (SandboxEnvironment.renderCounted), so the budget in `current` is always the render's own.
 */
interface SandboxRuntime {
  /** The runtime object handed to compiled templates. */
  readonly runtime: Record<string, unknown>;
  /** Starts a render with a fresh budget. */
  begin(): Budget;
  /** The budget of the render in progress. */
  budget(): Budget;
}

function makeRuntime(limits: RenderLimits): SandboxRuntime {
  let budget = new Budget(limits);

  /** A bounded `range(stop)` / `range(start, stop[, step])` that counts its items as steps. */
  const range: Callable = refuseText((...args: unknown[]): number[] => {
    if (args.length < 1 || args.length > 3)
      throw new TemplateSandboxError(`range() takes 1 to 3 numbers (stop, or start, stop[, step]), got ${args.length}`);
    for (const a of args) {
      if (a instanceof JinjaFloat) throw floatRefusal(a, "range() does not take (a TypeError)");
      if (typeof a !== "number" || !Number.isSafeInteger(a))
        throw new TemplateSandboxError(
          `range() takes integers (as in Jinja), got ${typeof a === "number" ? formatNumber(a) : describeValue(a)}${typeof a === "number" && Number.isFinite(a) ? ": round it with `| int`" : ""}`,
        );
    }
    const [start, stop, step] =
      args.length === 1 ? [0, args[0] as number, 1] : [args[0] as number, args[1] as number, args.length === 3 ? (args[2] as number) : 1];
    // As in Jinja and Python: a step of 0 is an error (it would never reach stop), a negative one counts down.
    if (step === 0)
      throw new TemplateSandboxError(
        `range(${args.join(", ")}): the step must not be 0 (it would never reach ${stop}): give a positive step to count up or a negative one to count down`,
      );
    const count = Math.max(0, Math.ceil((stop - start) / step));
    budget.step(count, () => `range(${args.join(", ")}) with ${count} items`);
    const out: number[] = [];
    for (let i = 0; i < count; i++) out.push(start + i * step);
    return out;
  });
  const globals = new Map<string, unknown>([["range", range]]);
  /** The names frames set (from the templates' code, so a bounded set), split at their dots. */
  const nameParts = new Map<string, readonly string[]>();

  class SandboxFrame extends (njRuntime.Frame as FrameClass) {
    readonly depth: number;
    constructor(parent?: FrameLike, isolateWrites?: boolean) {
      super(parent, isolateWrites);
      this.depth = parent instanceof SandboxFrame ? parent.depth + 1 : 0;
      if (this.depth > limits.maxNesting)
        throw new RenderLimitExceeded(
          `templates nest more than ${limits.maxNesting} scopes deep (an include or import that includes itself?)`,
        );
    }
    override set(name: string, val: unknown, resolveUp?: boolean): void {
      let parts = nameParts.get(name);
      if (parts === undefined) {
        // Kept only once the name passed: a refused name is refused on every set.
        const split = name.split(".");
        refuseName(split[0]);
        nameParts.set(name, (parts = split));
      }
      // budget.size refuses only a string over the limit: called (with its message) only then.
      if (typeof val === "string" && val.length > limits.maxOutputChars) budget.size(val, () => `the value of \`${name}\``);
      budget.tick();
      if (resolveUp) return super.set(name, val, resolveUp);
      // Nunjucks' Frame.set in this frame, with the parts of the name split once: a loop sets
      // `loop.index` and six more names on every iteration.
      let obj = this.variables as Record<string, unknown>;
      for (let i = 0; i < parts.length - 1; i++) {
        const id = parts[i];
        if (!obj[id]) obj[id] = {};
        obj = obj[id] as Record<string, unknown>;
      }
      obj[parts[parts.length - 1]] = val;
    }
    override push(isolateWrites?: boolean): FrameLike {
      return new SandboxFrame(this, isolateWrites);
    }
  }

  const runtime: Record<string, unknown> = Object.assign(Object.create(null) as Record<string, unknown>, njRuntime, {
    Frame: SandboxFrame,
    makeMacro(...args: unknown[]): Callable {
      const m = refuseText(njRuntime.makeMacro(...args) as object) as Callable;
      budget.callable.add(m);
      return m;
    },
    memberLookup(obj: unknown, key: unknown): unknown {
      if (obj === undefined || obj === null) return undefined;
      if (key instanceof JinjaFloat) throw floatRefusal(key, "is not an index (a TypeError)");
      if (typeof key !== "string" && typeof key !== "number")
        throw new TemplateSandboxError(`a member name must be a string or a number, not ${key === null ? "null" : typeof key}`);
      if (typeof key === "string") refuseName(key);
      budget.tick();
      // A string or a list is indexed by an integer as in Python (`s[-1]` is the last character),
      // undefined past either end as in Jinja; it has no members (`xs.length`, `s["length"]` are
      // JavaScript's, undefined or a method in Jinja).
      if (typeof obj === "string" || Array.isArray(obj)) {
        if (typeof key === "string") throw new TemplateSandboxError(noMembers(obj, key));
        return sequenceItem(obj, key);
      }
      if (typeof obj !== "object" || !isPlainData(obj)) return undefined;
      return Object.hasOwn(obj, key) ? (obj as Record<string | number, unknown>)[key] : undefined;
    },
    jinjaSlice(seq: unknown, start: unknown, stop: unknown, step: unknown): unknown {
      budget.tick();
      return sliceSequence(seq, start, stop, step);
    },
    contextOrFrameLookup(context: { ctx: Record<string, unknown> }, frame: FrameLike, name: string): unknown {
      refuseName(name);
      for (let f: FrameLike | undefined = frame; f; f = f.parent) {
        if (Object.hasOwn(f.variables, name) && f.variables[name] !== undefined) return f.variables[name];
      }
      if (Object.hasOwn(context.ctx, name)) return context.ctx[name];
      return globals.get(name);
    },
    callWrap(fn: unknown, name: string, context: unknown, args: unknown[]): unknown {
      if (!fn) throw new TemplateSandboxError(`Unable to call \`${name}\`, which is undefined or falsey`);
      if (typeof fn !== "function" || !budget.callable.has(fn))
        throw new TemplateSandboxError(`\`${name}\` is not a macro: templates can call only their macros and range()`);
      for (let i = 0; i < args.length; i++) {
        const arg = args[i];
        if (typeof arg === "string" && arg.length > limits.maxOutputChars) budget.size(arg, () => `argument ${i + 1} of \`${name}\``);
      }
      budget.step(1, () => `the call of \`${name}\``);
      if (budget.callDepth >= limits.maxCallDepth)
        throw new RenderLimitExceeded(`macro calls nest more than ${limits.maxCallDepth} deep (does \`${name}\` call itself?)`);
      budget.callDepth++;
      const { file, line, column } = budget;
      try {
        const r = (fn as Callable).apply(context, args);
        // Only on return: an error keeps the position where it happened.
        budget.file = file;
        budget.line = line;
        budget.column = column;
        return r;
      } finally {
        budget.callDepth--;
      }
    },
    fromIterator(arr: unknown): unknown {
      if (arr instanceof JinjaFloat) throw floatRefusal(arr, "cannot be looped over");
      // A string is looped over by its characters as Python counts them (nunjucks split a
      // character outside the BMP into its two UTF-16 halves).
      const items = typeof arr === "string" ? codePoints(arr) : njRuntime.fromIterator(arr);
      const n =
        Array.isArray(items) || typeof items === "string"
          ? items.length
          : items !== null && typeof items === "object"
            ? Object.keys(items).length
            : 0;
      budget.step(n, () => `a loop over ${n} items`);
      return items;
    },
    jinjaBinary: (op: string, a: unknown, b: unknown): unknown => binary(op, a, b, limits.maxOutputChars),
    jinjaUnary: unary,
    jinjaTruthy: truthy,
    jinjaIn: contains,
    jinjaCompare: compareChain,
    jinjaEqual: equal,
    jinjaAnd: (a: unknown, b: () => unknown): unknown => (truthy(a) ? b() : a),
    jinjaOr: (a: unknown, b: () => unknown): unknown => (truthy(a) ? a : b()),
    jinjaConcat(a: unknown, b: unknown): string {
      for (const v of [a, b]) {
        if (v instanceof JinjaFloat) concatText(v);
        const refused = unprintable(v);
        if (refused !== undefined) throw new TemplateSandboxError(refused);
      }
      const out = concatText(a) + concatText(b);
      if (out.length > limits.maxOutputChars) budget.size(out, () => "the text `~` joins");
      return out;
    },
    at(file: string | undefined, line: number, column: number): void {
      budget.file = file;
      budget.line = line;
      budget.column = column;
    },
    outputSoFar(length: number, file: string | undefined, line: number, column: number): void {
      budget.file = file;
      budget.line = line;
      budget.column = column;
      if (length > limits.maxOutputChars)
        throw new RenderLimitExceeded(`the output reaches ${length} characters, more than the limit of ${limits.maxOutputChars}`);
      budget.tick();
    },
    suppressValue(val: unknown, autoescape: boolean): unknown {
      // A list would print as its items joined by commas (`2,3`), a macro or range() as its
      // JavaScript source, an object as `[object Object]`: none of them is WGSL.
      if (val instanceof JinjaFloat) throw floatRefusal(val, "prints with `.0`");
      const refused = unprintable(val);
      if (refused !== undefined) throw new TemplateSandboxError(refused);
      const out = typeof val === "number" ? formatNumber(val) : njRuntime.suppressValue(val, autoescape);
      const len = typeof out === "string" ? out.length : String(out).length;
      budget.printed += len;
      if (len > limits.maxOutputChars || budget.printed > limits.maxOutputChars * 4) {
        throw new RenderLimitExceeded(
          `the values this template prints add up to more than ${budget.printed > limits.maxOutputChars * 4 ? limits.maxOutputChars * 4 : limits.maxOutputChars} characters`,
        );
      }
      return out;
    },
  });
  return {
    runtime,
    begin: () => {
      budget = new Budget(limits);
      budget.callable.add(range);
      return budget;
    },
    budget: () => budget,
  };
}

interface CompiledTemplate {
  compiled?: boolean;
  rootRenderFunc?: RootRender;
  blocks?: Record<string, RootRender>;
  _compile(): void;
  render(ctx: object, parentFrame: FrameLike): string;
}
type RootRender = (env: unknown, context: unknown, frame: FrameLike, runtime: unknown, cb: (err: unknown, res?: string) => void) => void;

const SECURED = Symbol("kernelc.sandboxed");

/**
 * Makes a template's compiled render functions run with the runtime of the render in progress
 * (`active()`), in a sandbox frame, and counts how deep templates render inside each other (an
 * import that imports itself).
 */
function secure(tmpl: CompiledTemplate, active: () => SandboxRuntime | undefined): CompiledTemplate {
  const marked = tmpl as CompiledTemplate & { [SECURED]?: true };
  if (marked[SECURED]) return tmpl;
  marked[SECURED] = true;
  const wrap =
    (fn: RootRender): RootRender =>
    (env, context, frame, _runtime, cb) => {
      const sandbox = active();
      if (sandbox === undefined) return cb(new Error("internal error: a template ran outside the sandbox"));
      const runtime = sandbox.runtime;
      const Frame = runtime.Frame as FrameClass;
      let f = frame;
      if (!((frame as object) instanceof Frame)) {
        // An import without context starts from a fresh nunjucks frame: run it in a sandbox frame.
        f = new Frame(undefined, (frame as { isolateWrites?: boolean }).isolateWrites);
        f.topLevel = (frame as FrameLike).topLevel;
      }
      const budget = sandbox.budget();
      if (budget.renders >= budget.limits.maxNesting)
        return cb(
          new RenderLimitExceeded(
            `templates include or import each other more than ${budget.limits.maxNesting} deep (a template that includes itself?)`,
          ),
        );
      budget.renders++;
      try {
        return fn(env, context, f, runtime, cb);
      } finally {
        budget.renders--;
      }
    };
  const wrapAll = (): void => {
    tmpl.rootRenderFunc = wrap(tmpl.rootRenderFunc!);
    for (const [name, block] of Object.entries(tmpl.blocks ?? {})) tmpl.blocks![name] = wrap(block);
  };
  // Compiled by LocatingCompiler; nunjucks' own _compile turns the code it generates into the
  // template's functions (kernelc evaluates nothing itself): the compiler module's compile() is
  // swapped for ours for the duration of that synchronous call.
  const nunjucksCompile = (Object.getPrototypeOf(tmpl) as { _compile: () => void })._compile;
  tmpl._compile = () => {
    const saved = njCompiler.compile;
    njCompiler.compile = (src, _asyncFilters, _extensions, name, opts) => compileTemplate(src, name, opts);
    try {
      nunjucksCompile.call(tmpl);
    } finally {
      njCompiler.compile = saved;
    }
    wrapAll();
  };
  if (tmpl.compiled) tmpl._compile();
  return tmpl;
}

/** Filters computed as Jinja computes them (template-jinja.ts), where nunjucks' differ: `int` of `1e21` was 1, `round` rounded halves up, `string` printed `1e-7`. */
/** A filter computed as Jinja's: its parameters' names (keyword arguments use them) and its function. */
interface JinjaFilter {
  readonly params: readonly string[];
  readonly f: Callable;
}

const JINJA_FILTERS: Readonly<Record<string, JinjaFilter>> = {
  int: { params: ["default"], f: (v, d) => intFilter(v, d ?? 0) },
  float: { params: ["default"], f: (v, d) => floatFilter(v, d ?? 0) },
  round: { params: ["precision", "method"], f: (v, p, m) => roundFilter(v, p ?? 0, m ?? "common") },
  abs: { params: [], f: (v) => absFilter(v) },
};

/**
 * Filters over lists and values computed as Jinja's (after the checks of every filter): `join` and
 * `sum` with Jinja's text of numbers and `+` (nunjucks' joined `1e-7` and summed strings), `default`
 * with Python's truth value (nunjucks' kept `[]`).
 */
const JINJA_LIST_FILTERS: Readonly<Record<string, JinjaFilter>> = {
  join: {
    params: ["d", "attribute"],
    f: (v, sep) => {
      if (!Array.isArray(v)) throw new TemplateSandboxError(`the filter \`join\` joins a list, not ${describeValue(v)}`);
      return v
        .map((item) => {
          if (typeof item === "string" || typeof item === "boolean") return String(item);
          if (typeof item === "number") return formatNumber(item);
          if (item instanceof JinjaFloat) throw floatRefusal(item, "`join` would write with `.0`");
          throw new TemplateSandboxError(`the filter \`join\` joins numbers, strings and booleans, not ${describeValue(item)}`);
        })
        .join(sep === undefined || sep === null ? "" : String(sep));
    },
  },
  sum: {
    params: ["attribute", "start"],
    f: (v, _attribute, start) => {
      if (!Array.isArray(v)) throw new TemplateSandboxError(`the filter \`sum\` adds the items of a list, not ${describeValue(v)}`);
      return v.reduce((acc: unknown, item) => binary("add", acc, item, RENDER_LIMITS.maxOutputChars), start ?? 0);
    },
  },
  default: { params: ["default_value", "boolean"], f: defaultFilter },
  d: { params: ["default_value", "boolean"], f: defaultFilter },
};

/** Jinja's `default(default_value="", boolean=false)`. */
function defaultFilter(v: unknown, fallback: unknown, boolean: unknown): unknown {
  return v === undefined || (boolean === true && !truthy(v)) ? (fallback ?? "") : v;
}

/** Calls a Jinja filter with its positional and keyword arguments (Jinja's names). */
function callJinjaFilter(name: string, { params, f }: JinjaFilter, args: readonly unknown[]): unknown {
  const last = args[args.length - 1] as { __keywords?: boolean } | undefined;
  const kwargs = last !== null && typeof last === "object" && last.__keywords === true ? (last as Record<string, unknown>) : undefined;
  const positional = kwargs ? args.slice(1, -1) : args.slice(1);
  if (positional.length > params.length)
    throw new TemplateSandboxError(
      `the filter \`${name}\` takes ${params.length === 0 ? "no arguments" : `at most ${params.length} (${params.join(", ")})`}`,
    );
  const values = params.map((p, i) => positional[i]);
  for (const key of Object.keys(kwargs ?? {})) {
    if (key === "__keywords") continue;
    const i = params.indexOf(key);
    if (i < 0)
      throw new TemplateSandboxError(
        `the filter \`${name}\` has no argument \`${key}\`${params.length > 0 ? ` (it takes ${params.join(", ")})` : ""}`,
      );
    values[i] = kwargs![key];
  }
  return f(args[0], ...values);
}

/** Filters that count, pick or reverse the characters of a string. */
const CHARACTER_FILTERS: ReadonlySet<string> = new Set(["length", "first", "last", "list", "reverse"]);

/** Filters whose attribute form reads members of the items (`join(", ", "x")`, `sort(attribute="x")`): the sandbox refuses that form. */
const ATTRIBUTE_ARG: Readonly<Record<string, number>> = { join: 2, sum: 1, sort: 3 };

/**
 * Checks a filter call before it runs: no attribute form (it would read members around the
 * sandbox), and no result larger than the limit (estimated from the arguments, so `center`,
 * `indent`, `replace` and `join` never build a huge string first).
 */
function filterPreflight(name: string, args: readonly unknown[], maxChars: number): void {
  const last = args[args.length - 1] as { __keywords?: boolean } | undefined;
  const kwargs = last !== null && typeof last === "object" && last.__keywords === true ? (last as Record<string, unknown>) : undefined;
  const positional = kwargs ? args.slice(0, -1) : args;
  if (
    Object.hasOwn(ATTRIBUTE_ARG, name) &&
    (positional[ATTRIBUTE_ARG[name]] !== undefined || (kwargs && (Object.hasOwn(kwargs, "attribute") || Object.hasOwn(kwargs, "attr"))))
  ) {
    throw new TemplateSandboxError(
      `the attribute form of the filter \`${name}\` is not available in kernelc templates: it reads members of the items`,
    );
  }
  const str = (v: unknown): string => (v === undefined || v === null ? "" : String(v));
  let estimate = 0;
  if (name === "center" && typeof positional[1] === "number") estimate = positional[1];
  if (name === "indent" && typeof positional[1] === "number")
    estimate = str(positional[0]).length + (str(positional[0]).split("\n").length + 1) * positional[1];
  if (name === "replace") {
    const [s, old, neu] = [str(positional[0]), str(positional[1]), str(positional[2])];
    estimate =
      old === ""
        ? s.length + (s.length + 1) * neu.length
        : s.length + (Math.floor(s.length / old.length) + 1) * Math.max(0, neu.length - old.length);
  }
  if (name === "join" && Array.isArray(positional[0])) {
    const sep = str(positional[1]).length;
    for (const item of positional[0] as unknown[]) {
      estimate += str(item).length + sep;
      if (estimate > maxChars) break;
    }
  }
  if (estimate > maxChars)
    throw new RenderLimitExceeded(
      `the filter \`${name}\` would make a string of about ${estimate} characters, more than the limit of ${maxChars}`,
    );
}

/**
 * How many items a filter is about to make that its input does not bound, counted as render steps
 * before it runs: `slice(n)` makes n lists and `batch(n, fill)` pads its last row to n items, so
 * `[1, 2, 3] | slice(1000000000)` would otherwise build a billion lists (and `slice(1 / 0)` never
 * end). A count that is not a finite number is refused.
 */
function filterItems(name: string, args: readonly unknown[]): number {
  if (name !== "slice" && !(name === "batch" && args[2] !== undefined && args[2] !== null)) return 0;
  if (args[1] === undefined || args[1] === null) return 0;
  const n = Number(args[1]);
  if (n === Infinity)
    throw new RenderLimitExceeded(`the filter \`${name}\` with ${String(args[1])} items takes the render past any step limit`);
  return Number.isFinite(n) && n > 0 ? Math.ceil(n) : 0;
}

/**
 * A Nunjucks environment whose templates run in the sandbox: no globals, the data-only filters
 * and tests, and every template it hands out rendered with the current render's runtime.
 */
export class SandboxEnvironment extends nunjucks.Environment {
  /** The runtime of this environment's renders, made on the first. */
  private sandbox?: SandboxRuntime;
  /** The runtime while a render is in progress (renders are synchronous and never nest across one environment). */
  private active?: SandboxRuntime;

  constructor(
    loader: nunjucks.ILoader,
    opts: nunjucks.ConfigureOptions,
    private readonly limits: RenderLimits = RENDER_LIMITS,
  ) {
    super(loader, opts);
    const self = this as unknown as { globals: object; filters: Record<string, Callable>; tests: Record<string, Callable> };
    self.globals = Object.create(null);
    self.filters = Object.create(null);
    self.tests = Object.create(null);
    const maxChars = limits.maxOutputChars;
    const active = (): SandboxRuntime | undefined => this.active;
    for (const name of TEMPLATE_FILTERS) {
      const f = njFilters[name];
      self.filters[name] = function (this: unknown, ...args: unknown[]): unknown {
        // A filter given a macro or range() would stringify it (`string`, `replace`, `upper`: its
        // JavaScript source, or JavaScript's words for a missing method); `string` also makes text
        // of a list or an object, as printing would.
        const refused = args.some((a) => typeof a === "function")
          ? PRINTS_A_CALLABLE
          : name === "string"
            ? unprintable(args[0])
            : undefined;
        if (refused !== undefined) throw new TemplateSandboxError(refused);
        if (Object.hasOwn(JINJA_FILTERS, name)) return callJinjaFilter(name, JINJA_FILTERS[name], args);
        if (name === "string" && typeof args[0] === "number") return formatNumber(args[0]);
        for (const a of args) if (a instanceof JinjaFloat) throw floatRefusal(a, `the filter \`${name}\` does not take here`);
        filterPreflight(name, args, maxChars);
        if (Object.hasOwn(JINJA_LIST_FILTERS, name)) return callJinjaFilter(name, JINJA_LIST_FILTERS[name], args);
        const made = filterItems(name, args);
        if (made > 0)
          active()
            ?.budget()
            .step(made, () => `the filter \`${name}\` making ${made} items`);
        // These count, pick or reverse a string's characters: as Python counts them, by code point
        // (nunjucks' split a character outside the BMP into its two UTF-16 halves).
        const points = typeof args[0] === "string" && CHARACTER_FILTERS.has(name) ? codePoints(args[0]) : undefined;
        if (points !== undefined && typeof points !== "string") {
          const r = f.apply(this, [[...points], ...args.slice(1)]);
          return name === "reverse" ? (r as string[]).join("") : r;
        }
        const r = f.apply(this, args);
        const text = typeof r === "string" ? r : r instanceof (njRuntime.SafeString as new () => object) ? String(r) : undefined;
        if (text !== undefined && text.length > maxChars)
          throw new RenderLimitExceeded(
            `the filter \`${name}\` made a string of ${text.length} characters, more than the limit of ${maxChars}`,
          );
        return r;
      };
    }
    for (const name of TEMPLATE_TESTS) self.tests[name] = Object.hasOwn(JINJA_TESTS, name) ? JINJA_TESTS[name] : njTests[name];
  }

  /** Hands out templates whose render functions use the sandbox runtime (also to includes and imports). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override getTemplate(...args: any[]): any {
    const i = args.findIndex((a) => typeof a === "function");
    const base = nunjucks.Environment.prototype.getTemplate as (...a: unknown[]) => unknown;
    if (i >= 0) {
      const cb = args[i] as (err: unknown, t?: CompiledTemplate) => void;
      args[i] = (err: unknown, t?: CompiledTemplate) => cb(err, t ? secure(t, () => this.active) : t);
      return base.apply(this, args);
    }
    return secure(base.apply(this, args) as CompiledTemplate, () => this.active);
  }

  /** Renders one template in a fresh sandbox; throws what nunjucks throws (TemplateError with the cause). */
  renderSandboxed(name: string, context: object): string {
    return this.renderCounted(name, context).out;
  }

  /** The sandbox's render limits. */
  get renderLimits(): RenderLimits {
    return this.limits;
  }

  /** renderSandboxed, also returning how many characters the template's `{{ … }}` printed (the total the limits count). */
  renderCounted(name: string, context: object): { out: string; printed: number } {
    const tmpl = this.getTemplate(name, false) as unknown as CompiledTemplate;
    if (this.active !== undefined) throw new Error("internal error: a sandboxed render started inside another");
    const sandbox = (this.sandbox ??= makeRuntime(this.limits));
    const budget = sandbox.begin();
    const Frame = sandbox.runtime.Frame as FrameClass;
    this.active = sandbox;
    let out: string;
    try {
      out = tmpl.render(context, new Frame());
    } catch (err) {
      if (err !== null && typeof err === "object" && budget.file !== undefined) {
        const at: SandboxPosition = { file: budget.file, line: budget.line, column: budget.column };
        Object.defineProperty(err, "sandboxAt", { value: at, configurable: true });
      }
      throw err;
    } finally {
      this.active = undefined;
    }
    if (out.length > this.limits.maxOutputChars) {
      throw new RenderLimitExceeded(
        `the rendered shader is ${out.length} characters long, more than the limit of ${this.limits.maxOutputChars}`,
      );
    }
    return { out, printed: budget.printed };
  }
}
