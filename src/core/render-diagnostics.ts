/**
 * Renders diagnostics as text (with a code frame), JSON, or GitHub workflow annotations.
 * Offsets become line:column only here.
 */
import { LineMap } from "./line-map.js";
import type { Diagnostic, Location } from "./diagnostic.js";

/** Returns a file's text for code frames, or undefined when it cannot be shown. */
export type SourceLookup = (file: string) => string | undefined;

interface Resolved {
  readonly file: string;
  readonly line?: number;
  readonly column?: number;
  readonly endLine?: number;
  readonly endColumn?: number;
  readonly pointer?: string;
}

function resolve(loc: Location | undefined, sources: SourceLookup, maps: Map<string, LineMap>): Resolved | undefined {
  if (!loc) return undefined;
  if (!loc.span) return { file: loc.file, pointer: loc.pointer };
  const text = sources(loc.file);
  if (text === undefined) return { file: loc.file, pointer: loc.pointer };
  let map = maps.get(loc.file);
  if (!map) {
    map = new LineMap(text);
    maps.set(loc.file, map);
  }
  const a = map.position(loc.span.start);
  const b = map.position(Math.max(loc.span.start, loc.span.end));
  return { file: loc.file, line: a.line, column: a.column, endLine: b.line, endColumn: b.column, pointer: loc.pointer };
}

function where(r: Resolved): string {
  const pos = r.line !== undefined ? `${r.file}:${r.line}:${r.column}` : r.file;
  return r.pointer !== undefined ? `${pos} (${clip(r.pointer === "" ? "/" : r.pointer, MAX_POINTER)})` : pos;
}

/** Characters of a message, hint or note (and of a JSON pointer) that text and GitHub output show. */
const MAX_TEXT = 1000;
const MAX_POINTER = 400;

/**
 * `s`, or for a longer one its start and end around a count of the characters left out. Why:
 * messages quote what the input holds (a name, a dtype, an expression), and a spec, config or call
 * can hold a name of 100000 characters; its diagnostic should still fit a screen. JSON output keeps
 * the whole text.
 */
export function clip(s: string, max = MAX_TEXT): string {
  if (s.length <= max) return s;
  let head = Math.floor(max / 2);
  let tail = s.length - Math.floor(max / 4);
  // Never split a surrogate pair.
  if (/[\udc00-\udfff]/.test(s[head] ?? "")) head--;
  if (/[\udc00-\udfff]/.test(s[tail] ?? "")) tail++;
  return `${s.slice(0, head)}…[${tail - head} characters]…${s.slice(tail)}`;
}

/** Lines longer than this many characters are cut to a window of this width around the span. */
const FRAME_WIDTH = 120;
/** Characters of context shown before the span in a cut line. */
const FRAME_CONTEXT = 40;

/** A code frame: the first line of the span with `^` under the spanned characters (`~` past the first line). */
function codeFrame(loc: Location, sources: SourceLookup, maps: Map<string, LineMap>): string[] {
  const r = resolve(loc, sources, maps);
  if (!r || r.line === undefined || !loc.span) return [];
  const map = maps.get(loc.file)!;
  const gutter = String(r.line).length;
  const pad = " ".repeat(gutter);
  const lineStart = map.lineStart(r.line);
  const lineEnd = map.lineEnd(r.line);
  const length = map.position(lineEnd).column - 1;
  let startCol = (r.column ?? 1) - 1;
  let endCol = r.endLine === r.line ? Math.max(startCol + 1, (r.endColumn ?? 1) - 1) : length;
  let chars: string[];
  // A very long line (minified JSON, a huge expression) is shown as a window around the span;
  // only the code units near the span are read, so a frame costs the same on any line.
  let before = "";
  let after = "";
  if (length > FRAME_WIDTH) {
    const text = sources(loc.file) ?? "";
    const from = Math.max(0, Math.min(startCol - FRAME_CONTEXT, length - FRAME_WIDTH));
    const to = Math.min(length, from + FRAME_WIDTH);
    const at = Math.min(Math.max(loc.span.start, lineStart), lineEnd);
    let a = Math.max(lineStart, at - 4 * FRAME_WIDTH);
    if (a > lineStart && /[\udc00-\udfff]/.test(text[a]) && /[\ud800-\udbff]/.test(text[a - 1])) a++;
    const base = map.position(a).column - 1;
    const piece = [...text.slice(a, Math.min(lineEnd, at + 4 * FRAME_WIDTH))];
    before = from > 0 ? "…" : "";
    after = to < length ? "…" : "";
    chars = piece.slice(from - base, to - base);
    startCol -= from;
    endCol = Math.min(endCol - from, chars.length);
  } else {
    chars = [...map.lineText(r.line)];
  }
  const shownText = before + chars.join("");
  const prefix =
    (before ? " " : "") +
    chars
      .slice(0, startCol)
      .map((c) => (c === "\t" ? "\t" : " "))
      .join("");
  const marks =
    "^".repeat(Math.max(1, Math.min(endCol, Math.max(chars.length, startCol + 1)) - startCol)) + (r.endLine !== r.line ? "~~~" : "");
  return [`${pad} |`, `${r.line} | ${(shownText + after).replace(/\s+$/, "")}`, `${pad} | ${prefix}${marks}`];
}

/**
 * `text` with every character that a terminal or a log viewer would act on instead of showing made
 * visible: C0 controls but tab and newline, and DEL, become their Control Pictures (ESC shows as
 * ␛, CR as ␍), C1 controls and bidirectional overrides become U+FFFD. Messages quote spec, config
 * and file-name text, which is untrusted: without this a config could recolour or rewrite a CI log
 * or a terminal (an escape sequence, a carriage return over the line). One character for one, so
 * a code frame's caret stays under its span.
 */
export function visible(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b-\u001f]/g, (c) => String.fromCharCode(0x2400 + c.charCodeAt(0)))
    .replace(/\u007f/g, "\u2421")
    .replace(/[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/g, "\ufffd");
}

/** Renders diagnostics for a terminal or a log, one block each, with a summary line. */
export function renderText(diags: readonly Diagnostic[], sources: SourceLookup): string {
  return visible(renderTextRaw(diags, sources));
}

function renderTextRaw(diags: readonly Diagnostic[], sources: SourceLookup): string {
  const maps = new Map<string, LineMap>();
  const out: string[] = [];
  for (const d of diags) {
    out.push(`${d.severity}[${d.code}]: ${clip(d.message)}`);
    const r = resolve(d.location, sources, maps);
    if (r) out.push(`  --> ${where(r)}`);
    if (d.location) out.push(...codeFrame(d.location, sources, maps).map((l) => "  " + l));
    if (d.hint) out.push(`  = hint: ${clip(d.hint)}`);
    for (const n of d.notes) {
      const nr = resolve(n.location, sources, maps);
      out.push(`  = note: ${clip(n.message)}${nr ? ` (${where(nr)})` : ""}`);
    }
    out.push("");
  }
  return out.join("\n");
}

/** A one-line count: "2 errors, 1 warning". */
export function summaryLine(diags: readonly Diagnostic[]): string {
  const e = diags.filter((d) => d.severity === "error").length;
  const w = diags.length - e;
  return `${e} error${e === 1 ? "" : "s"}, ${w} warning${w === 1 ? "" : "s"}`;
}

/** Renders diagnostics as a JSON array (stable field order) for tools. */
export function renderJson(diags: readonly Diagnostic[], sources: SourceLookup): string {
  return JSON.stringify(jsonRows(diags, sources), null, 2) + "\n";
}

/** Diagnostics as the rows renderJson prints: plain data with line and column resolved. */
export function jsonRows(diags: readonly Diagnostic[], sources: SourceLookup): unknown[] {
  const maps = new Map<string, LineMap>();
  return diags.map((d) => {
    const r = resolve(d.location, sources, maps);
    return {
      code: d.code,
      severity: d.severity,
      message: d.message,
      hint: d.hint ?? null,
      file: r?.file ?? null,
      line: r?.line ?? null,
      column: r?.column ?? null,
      endLine: r?.endLine ?? null,
      endColumn: r?.endColumn ?? null,
      pointer: r?.pointer ?? null,
      notes: d.notes.map((n) => {
        const nr = resolve(n.location, sources, maps);
        return {
          message: n.message,
          file: nr?.file ?? null,
          line: nr?.line ?? null,
          column: nr?.column ?? null,
          pointer: nr?.pointer ?? null,
        };
      }),
    };
  });
}

function escapeData(s: string): string {
  return visible(s).replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}
function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

/** Renders GitHub Actions workflow commands (`::error file=…,line=…::message`), one per diagnostic. */
export function renderGithub(diags: readonly Diagnostic[], sources: SourceLookup): string {
  const maps = new Map<string, LineMap>();
  const lines = diags.map((d) => {
    const r = resolve(d.location, sources, maps);
    const props: string[] = [];
    if (r) {
      props.push(`file=${escapeProperty(r.file)}`);
      if (r.line !== undefined) {
        props.push(`line=${r.line}`, `col=${r.column}`);
        if (r.endLine !== undefined) props.push(`endLine=${r.endLine}`);
        if (r.endLine === r.line && r.endColumn !== undefined) props.push(`endColumn=${r.endColumn}`);
      }
    }
    props.push(`title=${escapeProperty(`kernelc ${d.code}`)}`);
    const msg =
      clip(d.message) +
      (r?.pointer !== undefined ? ` [${clip(r.pointer || "/", MAX_POINTER)}]` : "") +
      (d.hint ? `\nhint: ${clip(d.hint)}` : "") +
      d.notes.map((n) => `\nnote: ${clip(n.message)}`).join("");
    return `::${d.severity === "error" ? "error" : "warning"} ${props.join(",")}::${escapeData(msg)}`;
  });
  return lines.length ? lines.join("\n") + "\n" : "";
}
