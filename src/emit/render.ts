/**
 * Rendering a pass's Nunjucks WGSL template: a loader confined to templates/ that refuses
 * templates the sandbox does not allow, the sandboxed environment (template-sandbox.ts), a
 * prototype-free context, the whitespace tidy of the template contract, errors turned into
 * RenderError with the template's file and line, and a lazily computed map from WGSL output lines
 * back to template lines.
 */
import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import path from "node:path";
import nunjucks from "nunjucks";
import { didYouMean } from "../core/did-you-mean.js";
import { InputFileError, MAX_INPUT_BYTES, readInputFile } from "../core/read-file.js";
import { templateSourceProblems } from "../check/template-safety.js";
import { TEMPLATE_NESTING_HINT } from "../check/template-scan.js";
import { templateGuess, templateSegmentsProblem } from "../check/template-path.js";
import { JinjaSemanticsError } from "./template-jinja.js";
import {
  PRINTS_A_CALLABLE,
  PRINTS_A_LIST,
  PRINTS_A_MAPPING,
  RenderLimitExceeded,
  SandboxEnvironment,
  TemplateSandboxError,
  type SandboxPosition,
} from "./template-sandbox.js";

/** The x width at which a 1-D dispatch folds into y; templates read it as DISPATCH_FOLD_WIDTH. */
export const DISPATCH_FOLD_WIDTH = 65535;

/** What to render: one template with its context and its resource declarations. */
export interface RenderRequest {
  /** Absolute path of the templates folder; must be the renderer's own. */
  readonly templatesDir: string;
  /** Template path relative to templatesDir, "/"-separated. */
  readonly shader: string;
  /** Derive values by name, plus `tunables` and `dtypes` objects. */
  readonly context: Readonly<Record<string, unknown>>;
  /** The output of resourceDeclarations(), served as env.wgsl.resourceDeclarations. */
  readonly declarations: string;
  /** More members of env.wgsl (the f16 storage form of each binding: `storage`, `scalar`, `f16Storage`). */
  readonly wgsl?: Readonly<Record<string, unknown>>;
}

/** A render whose declarations are filled in afterwards (TemplateRenderer.renderOpen). */
export interface OpenRender {
  /** The render with these declarations, or undefined when a render limit could decide otherwise. */
  fill(declarations: string): Rendered | undefined;
}

/** A template position: `file` is the template path relative to templatesDir; line 0 means unknown. */
export interface TemplateLine {
  readonly file: string;
  readonly line: number;
}

/** A rendered shader. */
export interface Rendered {
  readonly wgsl: string;
  /**
   * For each 1-based WGSL output line (index line - 1), the 1-based template line (and template file,
   * for macros imported from other files) that produced it. Computed on first access.
   */
  readonly lineMap: readonly TemplateLine[];
  /** The template position of a 1-based WGSL line and, optionally, 1-based column (more precise when a line mixes template lines). */
  mapPosition(line: number, column?: number): TemplateLine;
}

/**
 * A template failed to load or render; `file` is relative to templatesDir, line and column
 * 1-based. `limit` is true when the render went past one of the sandbox's render limits.
 */
export class RenderError extends Error {
  override readonly name = "RenderError";

  constructor(
    message: string,
    readonly file: string,
    readonly line?: number,
    readonly column?: number,
    readonly limit = false,
    /** How to fix it, where the message alone does not say. */
    readonly hint?: string,
  ) {
    super(message);
  }
}

/**
 * The loader refused a template the sandbox does not allow, or one that nests too deep to compile
 * (`tooDeep`); carries the refused construct's position.
 */
class TemplateRefused extends TemplateSandboxError {
  constructor(
    message: string,
    readonly file: string,
    readonly lineno: number,
    readonly colno: number,
    readonly tooDeep = false,
  ) {
    super(message);
  }
}

/** Thrown by the loader for a template that does not exist; `root` and `name` give the hint its did-you-mean. */
class TemplateNotFound extends Error {
  constructor(
    readonly root: string,
    readonly templateName: string,
  ) {
    super(`template not found: ${templateName} (looked in ${root})`);
  }
}

/** Thrown by the loader for a name that would leave templatesDir. */
class UnsafeTemplatePath extends Error {
  override readonly name = "UnsafeTemplatePath";
}

/**
 * Why a template name is not acceptable, or undefined when it is. Names are relative to
 * templatesDir, "/"-separated, with no empty, "." or ".." segment, no backslash and no NUL.
 */
export function templateNameProblem(name: string): string | undefined {
  if (name === "") return "the template name is empty";
  if (name.includes("\\")) return "backslashes are not allowed in template paths";
  if (name.includes("\0")) return "NUL is not allowed in template paths";
  if (name.startsWith("/") || path.isAbsolute(name) || /^[A-Za-z]:/.test(name)) return "absolute template paths are not allowed";
  const segments = templateSegmentsProblem(name);
  return segments === undefined ? undefined : `the path ${segments}`;
}

/**
 * The text of template `name` in the templates folder whose real path is `root`, confined as the
 * loader confines it: a safe name, a real path inside `root`, a regular file (never a FIFO or a
 * device, which would block or never end) of at most MAX_INPUT_BYTES. Throws why not: an
 * UnsafeTemplatePath, an Error for a missing template or one that is not a file, a
 * RenderLimitExceeded for one that is too large.
 */
function readConfinedTemplate(root: string, name: string): { real: string; src: string } {
  const problem = templateNameProblem(name);
  if (problem) throw new UnsafeTemplatePath(`cannot load template ${JSON.stringify(name)}: ${problem}`);
  const full = path.join(root, ...name.split("/"));
  let real: string;
  try {
    real = realpathSync(full);
  } catch {
    throw new TemplateNotFound(root, name);
  }
  if (real !== root && !real.startsWith(root + path.sep)) {
    throw new UnsafeTemplatePath(
      `cannot load template ${JSON.stringify(name)}: it resolves (through a symlink) to ${real}, outside the templates folder`,
    );
  }
  try {
    return { real, src: readInputFile(real, MAX_INPUT_BYTES) };
  } catch (err) {
    if (!(err instanceof InputFileError)) throw err;
    if (err.reason === "too_large")
      throw new RenderLimitExceeded(`cannot load template ${JSON.stringify(name)}: ${err.message} for a template`);
    throw new Error(`cannot load template ${JSON.stringify(name)}: ${err.message}`);
  }
}

/**
 * The text of template `name` (relative to `templatesDir`) when the renderer would load it, else
 * undefined: for the digests of template closures (shader-cache.ts), which must not read outside
 * the folder, block on a FIFO or read a device either.
 */
export function readTemplateIfLoadable(templatesDir: string, name: string): string | undefined {
  try {
    return readConfinedTemplate(realpathSync(templatesDir), name).src;
  } catch {
    return undefined;
  }
}

/** One source file of the instrumented environment, by marker index. */
interface SourceTable {
  readonly files: string[];
}

/**
 * A loader that serves files inside templatesDir only: it rejects absolute paths, `..` segments and
 * backslashes, and a file whose realpath (after symlinks) lies outside templatesDir's realpath.
 * Names are always taken relative to templatesDir: Jinja-style, not relative to the including file.
 */
class ConfinedLoader extends nunjucks.Loader implements nunjucks.ILoader {
  /** Sources served so far, by name: for error messages that quote the template line. */
  readonly sources = new Map<string, string>();

  constructor(
    private readonly root: string,
    private readonly instrumentWith?: SourceTable,
  ) {
    super();
  }

  override isRelative(): boolean {
    return false;
  }

  getSource(name: string): nunjucks.LoaderSource {
    const { src } = readConfinedTemplate(this.root, name);
    this.sources.set(name, src);
    const refused = templateSourceProblems(src)[0];
    if (refused) throw new TemplateRefused(refused.message, name, refused.line, refused.column, refused.tooDeep);
    if (!this.instrumentWith) return { src, path: name, noCache: false };
    const index = this.instrumentWith.files.length;
    this.instrumentWith.files.push(name);
    return { src: instrumentTemplate(src, index), path: name, noCache: false };
  }
}

const ENV_OPTIONS: nunjucks.ConfigureOptions = {
  autoescape: false,
  throwOnUndefined: true,
  trimBlocks: true,
  lstripBlocks: true,
  // Keeps nunjucks' TemplateError (with lineno/colno) instead of a re-thrown plain Error.
  dev: true,
};

/**
 * Renders templates of one templates folder. Parsed templates are cached for the renderer's
 * lifetime (a build renders each template many times); the instrumented copies used for line
 * maps are parsed only when a line map is first asked for.
 */
export class TemplateRenderer {
  private readonly root: string;
  private readonly loader: ConfinedLoader;
  private readonly env: SandboxEnvironment;
  private instrumented?: { env: SandboxEnvironment; table: SourceTable };
  /** A templates folder path found to resolve to `root` (since the last refresh()). */
  private rootPath?: string;

  constructor(templatesDir: string) {
    if (!path.isAbsolute(templatesDir)) throw new Error(`templatesDir must be absolute: ${templatesDir}`);
    this.root = realpathSync(templatesDir);
    this.loader = new ConfinedLoader(this.root);
    this.env = new SandboxEnvironment(this.loader, { ...ENV_OPTIONS });
  }

  /** Renders one template and tidies its whitespace; throws RenderError on any template error. */
  render(req: RenderRequest): Rendered {
    if (!this.serves(req.templatesDir)) {
      throw new Error(`render request for ${req.templatesDir} sent to the renderer of ${this.root}`);
    }
    const problem = templateNameProblem(req.shader);
    if (problem) throw new RenderError(`cannot load template ${JSON.stringify(req.shader)}: ${problem}`, req.shader);
    const context = buildContext(req);
    let raw: string;
    try {
      raw = this.env.renderSandboxed(req.shader, context);
    } catch (err) {
      throw toRenderError(err, req.shader, this.loader.sources, context);
    }
    const wgsl = tidyText(raw);
    return new RenderedShader(wgsl, req.shader, () => this.renderInstrumented(req.shader, context));
  }

  /** Whether `templatesDir` resolves to this renderer's folder (checked once per path between refreshes). */
  private serves(templatesDir: string): boolean {
    if (templatesDir === this.rootPath) return true;
    if (realpathSync(templatesDir) !== this.root) return false;
    this.rootPath = templatesDir;
    return true;
  }

  /**
   * A render of `req` whose text is known (kept from an earlier render of the same template texts,
   * context and declarations): `wgsl`, with the line map computed from `req` on demand.
   */
  restore(req: RenderRequest, wgsl: string): Rendered {
    return new RenderedShader(wgsl, req.shader, () => this.renderInstrumented(req.shader, buildContext(req)));
  }

  /**
   * Forgets the parsed templates whose file changed (or moved out of the templates folder, or went
   * away) since it was read, so that one renderer can serve successive compilations (kernelc
   * watch): an edit re-parses only the edited template. Nunjucks' own cache busting ("update").
   */
  refresh(): void {
    this.rootPath = undefined;
    let changed = false;
    for (const [name, src] of [...this.loader.sources]) {
      let now: string | undefined;
      try {
        now = readConfinedTemplate(this.root, name).src;
      } catch {
        now = undefined;
      }
      if (now === src) continue;
      changed = true;
      this.loader.sources.delete(name);
      this.loader.emit("update", name, path.join(this.root, name));
    }
    // The instrumented copies number their files as they are read: start them afresh.
    if (changed) this.instrumented = undefined;
  }

  /**
   * Renders one template with a placeholder for the declarations, to be filled in afterwards: for
   * a template that prints `env.wgsl.resourceDeclarations` as it stands and does nothing else with
   * it (declarations-print.ts), `fill(D)` is what render() gives with declarations D. `fill`
   * returns undefined where a render limit could decide otherwise with D (render() then decides),
   * and renderOpen returns undefined when the render fails (render() then reports why).
   */
  renderOpen(req: Omit<RenderRequest, "declarations">): OpenRender | undefined {
    const problem = templateNameProblem(req.shader);
    if (problem || !this.serves(req.templatesDir)) return undefined;
    const placeholder = `\u2064kernelc-declarations-${randomUUID()}\u2064`;
    let counted: { out: string; printed: number };
    try {
      counted = this.env.renderCounted(req.shader, buildContext({ ...req, declarations: placeholder }));
    } catch {
      return undefined;
    }
    const parts = counted.out.split(placeholder);
    const prints = parts.length - 1;
    const limit = this.env.renderLimits.maxOutputChars;
    return {
      fill: (declarations) => {
        const raw = parts.join(declarations);
        const printed = counted.printed + prints * (declarations.length - placeholder.length);
        if (declarations.length > limit || raw.length > limit || printed > limit * 4) return undefined;
        const full = { ...req, declarations };
        return new RenderedShader(tidyText(raw), req.shader, () => this.renderInstrumented(req.shader, buildContext(full)));
      },
    };
  }

  private renderInstrumented(shader: string, context: object): { raw: string; files: readonly string[] } {
    if (!this.instrumented) {
      const table: SourceTable = { files: [] };
      this.instrumented = { env: new SandboxEnvironment(new ConfinedLoader(this.root, table), { ...ENV_OPTIONS }), table };
    }
    const raw = this.instrumented.env.renderSandboxed(shader, context);
    return { raw, files: this.instrumented.table.files };
  }
}

/**
 * The render context: a prototype-free deep copy of the request's context plus DISPATCH_FOLD_WIDTH
 * and env.wgsl.resourceDeclarations. (The sandbox reads only own properties anyway: a name such
 * as `toString` is a plain name, found only when the context has it.)
 */
function buildContext(req: RenderRequest): Record<string, unknown> {
  const ctx = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(req.context)) ctx[k] = copyValue(v);
  ctx.DISPATCH_FOLD_WIDTH = DISPATCH_FOLD_WIDTH;
  ctx.env = copyValue({ wgsl: { ...req.wgsl, resourceDeclarations: req.declarations } });
  return ctx;
}

function copyValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copyValue);
  if (v !== null && typeof v === "object") {
    const out = Object.create(null) as Record<string, unknown>;
    for (const [k, inner] of Object.entries(v)) out[k] = copyValue(inner);
    return out;
  }
  return v;
}

/** Line indices kept by the tidy, and the tidied text of each: trailing whitespace stripped, blank runs collapsed, no leading or trailing blanks. */
function tidyLines(lines: readonly string[]): { kept: number[]; texts: string[] } {
  const kept: number[] = [];
  const texts: string[] = [];
  lines.forEach((line, i) => {
    // trimEnd strips what /\s+$/ matches (WhiteSpace and LineTerminator), without a regular expression per line.
    const text = line.trimEnd();
    if (text === "" && (texts.length === 0 || texts[texts.length - 1] === "")) return;
    kept.push(i);
    texts.push(text);
  });
  while (texts.length > 0 && texts[texts.length - 1] === "") {
    texts.pop();
    kept.pop();
  }
  return { kept, texts };
}

/** The whitespace tidy applied after rendering; the result ends with exactly one newline. */
export function tidyText(raw: string): string {
  return tidyLines(raw.split("\n")).texts.join("\n") + "\n";
}

const MARK = "\u2063";
const MARKER_RE = /\u2063(\d+):(\d+)\u2063/g;

/**
 * The instrumented copy of a template: every line that starts (after indentation) with raw text or
 * `{{` — not `{{-`, and not inside a multi-line tag or comment — gets an invisible marker
 * `U+2063 file:line U+2063` after its indentation; a line that starts with `{% … %}` tags or
 * `{# … #}` comments closed on it gets the marker after them (and the blanks after them) when raw
 * text or `{{` follows, so `{% if c %}let a = 1;{% endif %}` is traced to its own line. Markers
 * travel through macros, includes and imports, so each output line can be traced to the template
 * line that wrote it.
 */
export function instrumentTemplate(src: string, fileIndex: number): string {
  const lines = src.split("\n");
  let state: "text" | "var" | "block" | "comment" = "text";
  let quote = "";
  const out: string[] = [];
  lines.forEach((line, idx) => {
    let text = line;
    if (state === "text") {
      const indent = /^[ \t]*/.exec(line)?.[0] ?? "";
      const rest = line.slice(indent.length).replace(/\r$/, "");
      const at = rest.startsWith("{%") || rest.startsWith("{#") ? afterLeadingTags(rest) : 0;
      if (at >= 0 && at < rest.length && !rest.startsWith("{{-", at)) {
        const cut = indent.length + at;
        text = `${line.slice(0, cut)}${MARK}${fileIndex}:${idx + 1}${MARK}${line.slice(cut)}`;
      }
    }
    for (let i = 0; i < line.length; i++) {
      const two = line.slice(i, i + 2);
      if (state === "text") {
        if (two === "{{") state = "var";
        else if (two === "{%") state = "block";
        else if (two === "{#") state = "comment";
        if (state !== "text") i++;
      } else if (state === "comment") {
        if (two === "#}") {
          state = "text";
          i++;
        }
      } else if (quote) {
        if (line[i] === "\\") i++;
        else if (line[i] === quote) quote = "";
      } else if (line[i] === '"' || line[i] === "'") {
        quote = line[i];
      } else if ((state === "var" && two === "}}") || (state === "block" && two === "%}")) {
        state = "text";
        i++;
      }
    }
    out.push(text);
  });
  return out.join("\n");
}

/**
 * The index in `rest` (a template line without its indentation) after its leading `{% … %}` tags and
 * `{# … #}` comments and the blanks after each; -1 when one of them does not close on the line.
 */
function afterLeadingTags(rest: string): number {
  let i = 0;
  while (rest.startsWith("{%", i) || rest.startsWith("{#", i)) {
    const close = rest.startsWith("{%", i) ? "%}" : "#}";
    let quote = "";
    let j = i + 2;
    for (; j < rest.length; j++) {
      if (close === "#}") {
        if (rest.startsWith(close, j)) break;
      } else if (quote) {
        if (rest[j] === "\\") j++;
        else if (rest[j] === quote) quote = "";
      } else if (rest[j] === '"' || rest[j] === "'") quote = rest[j];
      else if (rest.startsWith(close, j)) break;
    }
    if (j >= rest.length) return -1;
    i = j + 2;
    while (rest[i] === " " || rest[i] === "\t") i++;
  }
  return i;
}

/** Where, within one tidied output line, each template origin starts (0-based columns of the WGSL text). */
interface LineOrigins {
  readonly starts: readonly { readonly column: number; readonly origin: TemplateLine }[];
  readonly origin: TemplateLine;
}

class RenderedShader implements Rendered {
  private origins?: LineOrigins[];

  constructor(
    readonly wgsl: string,
    private readonly shader: string,
    private readonly instrumented: () => { raw: string; files: readonly string[] },
  ) {}

  get lineMap(): readonly TemplateLine[] {
    return this.lineOrigins().map((o) => o.origin);
  }

  mapPosition(line: number, column?: number): TemplateLine {
    const o = this.lineOrigins()[line - 1];
    if (!o) return { file: this.shader, line: 0 };
    if (column === undefined) return o.origin;
    let best = o.starts[0]?.origin ?? o.origin;
    for (const s of o.starts) if (s.column <= column - 1) best = s.origin;
    return best;
  }

  private lineOrigins(): LineOrigins[] {
    this.origins ??= this.computeOrigins();
    return this.origins;
  }

  private computeOrigins(): LineOrigins[] {
    const wgslLines = this.wgsl.split("\n").slice(0, -1);
    const unknown: TemplateLine = { file: this.shader, line: 0 };
    let instrumented: { raw: string; files: readonly string[] };
    try {
      instrumented = this.instrumented();
    } catch {
      return wgslLines.map(() => ({ starts: [], origin: unknown }));
    }
    const { texts, origins } = traceLines(instrumented.raw, instrumented.files, { file: this.shader, line: 1 });
    if (texts.length === wgslLines.length && texts.every((t, i) => t === wgslLines[i])) return origins;
    // The instrumented copy rendered differently (a marker changed what a filter or test saw):
    // match output lines by text, in order, and carry the last match over lines that do not match.
    const result: LineOrigins[] = [];
    let from = 0;
    let last: LineOrigins = { starts: [], origin: unknown };
    for (const line of wgslLines) {
      const at = texts.indexOf(line, from);
      if (at >= 0 && line !== "") {
        last = origins[at];
        from = at + 1;
      }
      result.push(last);
    }
    return result;
  }
}

/** Strips the markers of an instrumented render, tidies it, and returns each kept line's text and origins. */
function traceLines(raw: string, files: readonly string[], first: TemplateLine): { texts: string[]; origins: LineOrigins[] } {
  let current = first;
  const stripped: string[] = [];
  const lineOrigins: LineOrigins[] = [];
  for (const rawLine of raw.split("\n")) {
    const starts: { column: number; origin: TemplateLine }[] = [{ column: 0, origin: current }];
    let text = "";
    let pos = 0;
    for (const m of rawLine.matchAll(MARKER_RE)) {
      text += rawLine.slice(pos, m.index);
      pos = m.index + m[0].length;
      current = { file: files[Number(m[1])] ?? first.file, line: Number(m[2]) };
      starts.push({ column: text.length, origin: current });
    }
    text += rawLine.slice(pos);
    const firstChar = text.search(/\S/);
    let origin = current;
    if (firstChar >= 0) for (const s of starts) if (s.column <= firstChar) origin = s.origin;
    stripped.push(text);
    lineOrigins.push({ starts, origin });
  }
  const { kept, texts } = tidyLines(stripped);
  return { texts, origins: kept.map((i) => lineOrigins[i]) };
}

interface NunjucksErrorShape {
  message?: unknown;
  lineno?: unknown;
  colno?: unknown;
}

/**
 * Turns a nunjucks error into a RenderError. Nunjucks prefixes its message with
 * "(path) [Line l, Column c]\n  " once per template it passes through; the innermost prefix names
 * the file where the error happened and is the only one with a line.
 */
function toRenderError(
  err: unknown,
  shader: string,
  sources: ReadonlyMap<string, string>,
  context?: Readonly<Record<string, unknown>>,
): RenderError {
  let limit = false;
  let raised = false;
  let notFound: TemplateNotFound | undefined;
  for (let c: unknown = err; c instanceof Error; c = (c as { cause?: unknown }).cause) {
    if (c instanceof TemplateNotFound) notFound = c;
    if (c instanceof TemplateRefused)
      return c.tooDeep
        ? new RenderError(c.message, c.file, c.lineno || undefined, c.colno || undefined, true, TEMPLATE_NESTING_HINT)
        : new RenderError(`the template is refused: ${c.message}`, c.file, c.lineno || undefined, c.colno || undefined);
    if (c instanceof RenderLimitExceeded) limit = true;
    if (c instanceof RenderLimitExceeded || c instanceof TemplateSandboxError || c instanceof JinjaSemanticsError) raised = true;
  }
  const e = (err ?? {}) as NunjucksErrorShape;
  let message = typeof e.message === "string" ? e.message : String(err);
  let file = shader;
  let line: number | undefined;
  let column: number | undefined;
  const prefix = /^\s*\(([^)\n]*)\)(?: \[Line (\d+)(?:, Column (\d+))?\])?\n/;
  for (let m = prefix.exec(message); m; m = prefix.exec(message)) {
    if (m[1] !== "unknown path") file = m[1];
    if (m[2] !== undefined) {
      line = Number(m[2]);
      column = m[3] !== undefined ? Number(m[3]) : undefined;
    }
    message = message.slice(m[0].length);
  }
  message = message
    .trim()
    .replace(/^(Error|TypeError|RangeError|UnsafeTemplatePath|TemplateSandboxError|JinjaSemanticsError|RenderLimitExceeded): /, "");
  // A limit or refusal the sandbox raised happened where the template code ran (see Budget.at in
  // template-sandbox.ts): nunjucks can name another template, or another template's line.
  const at = (err as { sandboxAt?: SandboxPosition } | null)?.sandboxAt;
  if (raised && at?.file !== undefined && sources.has(at.file) && at.line > 0) [file, line, column] = [at.file, at.line, at.column];
  if (line === undefined && typeof e.lineno === "number" && e.lineno > 0) {
    line = e.lineno;
    column = typeof e.colno === "number" && e.colno > 0 ? e.colno : undefined;
  }
  const undefinedOutput = message.startsWith("attempted to output null or undefined value");
  // JavaScript's words for turning one of the render context's objects (they have no prototype) into text.
  const objectAsText =
    message === PRINTS_A_MAPPING ||
    message === "Cannot convert object to primitive value" ||
    message === "target.toString is not a function";
  const listAsText = message === PRINTS_A_LIST;
  const callableAsText = message === PRINTS_A_CALLABLE;
  if (undefinedOutput || objectAsText || listAsText || callableAsText) {
    let expr: string | undefined;
    const [l, c] = [line, column];
    if (l !== undefined && c !== undefined) {
      // Nunjucks names the calling template even when the failing `{{ }}` is in a macro imported
      // from another file; the column points at that `{{`, which tells the files apart.
      expr = outputExpression(sources.get(file), l, c);
      if (expr === undefined) {
        const others = [...sources].filter(([name, src]) => name !== file && outputExpression(src, l, c) !== undefined);
        if (others.length === 1) {
          file = others[0][0];
          expr = outputExpression(others[0][1], l, c);
        }
      }
    }
    // The printed value without the filters that printed it (`dims | string` advises `dims[0]`).
    const list = expr?.slice(2, -2).split("|")[0].trim() || "LIST";
    const callee = /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?/.exec(list)?.[0];
    message = callableAsText
      ? `${expr ? `\`${expr}\` prints` : "the template prints"} a macro or \`range\` itself (a function), which would print JavaScript source, not WGSL: call it and print what it returns (\`{{ ${callee !== undefined && callee !== "range" ? callee : "m"}(…) }}\`, \`{{ range(4) | join(", ") }}\`)`
      : listAsText
        ? `${expr ? `\`${expr}\` prints` : "the template prints"} a list, which would print as its items joined by commas (\`2,3\`), not WGSL: print one item (\`{{ ${list}[0] }}\`) or each in a loop (\`{% for v in ${list} %}{{ v }}{% if not loop.last %}, {% endif %}{% endfor %}\`)`
        : undefinedOutput
          ? `${expr ? `\`${expr}\` is` : "a value the template outputs is"} undefined: every variable and member a template outputs must be in the render context (derive values, tunables, dtypes, device, DISPATCH_FOLD_WIDTH, env)`
          : `${expr ? `\`${expr}\` turns` : "the template turns"} a mapping (an object such as \`tunables\`, \`dtypes\`, \`device\` or \`env\`) into text, which has no meaning in WGSL: print one of its members, such as \`tunables.NAME\``;
    const hint =
      undefinedOutput && expr !== undefined && context !== undefined ? undefinedPathHint(expr.slice(2, -2).trim(), context) : undefined;
    return new RenderError(message, file, line, column, limit, hint);
  }
  const pathHint = /^cannot load template |^template not found: /.test(message)
    ? "name a file inside the templates folder by its path relative to that folder (not to the including template), with `/` between folders, e.g. `lib/constants.wgsl.jinja`"
    : undefined;
  const guess = notFound && templateGuess(notFound.root, notFound.templateName);
  return new RenderError(message, file, line, column, limit, guess ? `${guess} ${pathHint}` : pathHint);
}

/**
 * For a printed member (`env.wgsl.scalar.yy`, `tunables.WGG`) that is undefined: which member is
 * missing, with a did-you-mean among the members there. Undefined for a bare name (the context
 * holds only the derive values the template reads, so it cannot tell what a typo meant), for any
 * other expression, and when the path resolves (the undefined value came from elsewhere).
 */
function undefinedPathHint(expr: string, context: Readonly<Record<string, unknown>>): string | undefined {
  if (!/^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$/.test(expr)) return undefined;
  const parts = expr.split(".");
  let at: unknown = context;
  for (const [i, part] of parts.entries()) {
    if (at === null || typeof at !== "object" || Array.isArray(at)) return undefined;
    const obj = at as Record<string, unknown>;
    if (Object.prototype.hasOwnProperty.call(obj, part) && obj[part] !== undefined) {
      at = obj[part];
      continue;
    }
    if (i === 0) return undefined;
    const names = Object.keys(obj).filter((k) => obj[k] !== undefined);
    const owner = `\`${parts.slice(0, i).join(".")}\``;
    const guess = didYouMean(part, names);
    const list = names.length <= 24 ? `: ${names.map((n) => `\`${n}\``).join(", ")}` : "";
    return `${owner} has no \`${part}\`${guess ? ` (${guess})` : ""}; it has ${names.length} name${names.length === 1 ? "" : "s"}${list}`;
  }
  return undefined;
}

/** The `{{ … }}` expression that starts at a 1-based line and column of a template source, if one does. */
function outputExpression(src: string | undefined, line: number, column: number): string | undefined {
  const text = src?.split("\n")[line - 1];
  if (text === undefined || !text.startsWith("{{", column - 1)) return undefined;
  const end = text.indexOf("}}", column - 1);
  return end < 0 ? undefined : text.slice(column - 1, end + 2);
}
