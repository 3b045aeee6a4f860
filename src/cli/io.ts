/** The CLI's streams and how it prints diagnostics. */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Diagnostic } from "../core/diagnostic.js";
import { jsonRows, renderGithub, renderJson, renderText, summaryLine, type SourceLookup } from "../core/render-diagnostics.js";
import { MAX_INPUT_BYTES, readInputFileOrUndefined } from "../core/read-file.js";

/** Streams the CLI writes to; tests pass their own. */
export interface Io {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
  readonly cwd: string;
  readonly isTTY: boolean;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export type Format = "text" | "json" | "github";

/** Prints diagnostics in the chosen format. */
export function printDiagnostics(io: Io, diags: readonly Diagnostic[], format: Format, sources: SourceLookup): void {
  const { shown, lookup } = relative(io, diags, sources);
  if (format === "json") io.stdout(renderJson(shown, lookup));
  else if (format === "github") io.stdout(renderGithub(shown, lookup));
  else if (shown.length > 0) io.stderr(renderText(shown, lookup) + summaryLine(shown) + "\n");
}

/** Diagnostics as `--format json` prints them (files relative to the current folder), for a command's JSON document. */
export function diagnosticRows(io: Io, diags: readonly Diagnostic[], sources: SourceLookup): unknown[] {
  const { shown, lookup } = relative(io, diags, sources);
  return jsonRows(shown, lookup);
}

/** Diagnostics with their files relative to the current folder, and a source lookup that takes either form. */
function relative(io: Io, diags: readonly Diagnostic[], sources: SourceLookup): { shown: Diagnostic[]; lookup: SourceLookup } {
  const rel = (d: Diagnostic): Diagnostic =>
    d.location
      ? {
          ...d,
          location: { ...d.location, file: relPath(io.cwd, d.location.file) },
          notes: d.notes.map((n) => (n.location ? { ...n, location: { ...n.location, file: relPath(io.cwd, n.location.file) } } : n)),
        }
      : d;
  const lookup: SourceLookup = (f) => sources(path.resolve(io.cwd, f)) ?? sources(f);
  return { shown: diags.map(rel), lookup };
}

function relPath(cwd: string, file: string): string {
  const abs = path.resolve(cwd, file);
  const r = path.relative(cwd, abs);
  return r.startsWith("..") || path.isAbsolute(r) ? abs : r.split(path.sep).join("/");
}

export function fileSources(cwd: string, known: ReadonlyMap<string, string> = new Map()): SourceLookup {
  const cache = new Map<string, string | undefined>();
  return (f) => {
    const abs = path.resolve(cwd, f);
    if (known.has(f)) return known.get(f);
    if (known.has(abs)) return known.get(abs);
    if (!cache.has(abs)) {
      cache.set(abs, readInputFileOrUndefined(abs, MAX_INPUT_BYTES));
    }
    return cache.get(abs);
  };
}
