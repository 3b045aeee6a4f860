/** A half-open byte range [start, end) into one source text. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/** Where a diagnostic points: a file, an optional byte span in it, and the JSON pointer into the spec. */
export interface Location {
  readonly file: string;
  readonly span?: Span;
  /** RFC 6901 JSON pointer of the spec value, "" for the document root. */
  readonly pointer?: string;
}

/** A secondary location with its own message ("declared here"). */
export interface DiagnosticNote {
  readonly message: string;
  readonly location?: Location;
}

export type Severity = "error" | "warning";

/**
 * The one diagnostic type of kernelc. Plain data: codes come from the table in codes.ts,
 * offsets become line:column only when rendered (render.ts).
 */
export interface Diagnostic {
  readonly code: string;
  readonly severity: Severity;
  /** What is wrong and why. */
  readonly message: string;
  readonly location?: Location;
  /** How to fix it ("did you mean …?"). */
  readonly hint?: string;
  readonly notes: readonly DiagnosticNote[];
}

/** Thrown for expected user errors that abort a command; carries diagnostics, never a stack for the user. */
export class UserError extends Error {
  constructor(readonly diagnostics: readonly Diagnostic[]) {
    super(diagnostics.map((d) => d.message).join("\n"));
    this.name = "UserError";
  }
}

/** Sorts diagnostics by file, then offset, then code, so output is deterministic. */
export function sortDiagnostics(diags: readonly Diagnostic[]): Diagnostic[] {
  return [...diags].sort((a, b) => {
    const fa = a.location?.file ?? "";
    const fb = b.location?.file ?? "";
    if (fa !== fb) return fa < fb ? -1 : 1;
    const sa = a.location?.span?.start ?? -1;
    const sb = b.location?.span?.start ?? -1;
    if (sa !== sb) return sa - sb;
    return a.code < b.code ? -1 : a.code > b.code ? 1 : 0;
  });
}

export function hasErrors(diags: readonly Diagnostic[]): boolean {
  return diags.some((d) => d.severity === "error");
}

/**
 * At most `max` of `diags`, in their order: past that, the last one kept carries a note saying
 * how many more there are. A file of 150,000 unknown fields (a pull request's, under the size
 * limit) is then 1000 diagnostics, not a flood of output or a `push(...)` past the stack.
 */
export function capDiagnostics(diags: readonly Diagnostic[], max: number): readonly Diagnostic[] {
  if (diags.length <= max) return diags;
  const last = diags[max - 1]!;
  const more = diags.length - max;
  const note: DiagnosticNote = { message: `and ${more} more problems in this file, not shown: fix these and run lint again` };
  return [...diags.slice(0, max - 1), { ...last, notes: [...last.notes, note] }];
}
