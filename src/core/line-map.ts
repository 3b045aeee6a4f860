/**
 * Offset → line:column for one source text, used when rendering diagnostics.
 *
 * Offsets are indices into the JS string (UTF-16 code units), as everywhere in kernelc. Lines
 * end at `\n`, `\r\n` or a lone `\r`. Lines and columns are 1-based; the column counts Unicode
 * code points (characters) from the start of the line, so a character outside the BMP (an emoji)
 * counts as one column, like rustc and unlike tsc. `utf16Column` gives the editor-protocol
 * column (UTF-16 code units, 1-based) for tools that need it.
 */

/** A 1-based line and column; see the module doc for how columns are counted. */
export interface LinePosition {
  readonly line: number;
  /** 1-based column in code points. */
  readonly column: number;
  /** 1-based column in UTF-16 code units (what LSP and VS Code use). */
  readonly utf16Column: number;
}

/** Precomputed line starts of one text. */
export class LineMap {
  /** Offset of the first character of each line (line 1 at index 0). */
  private readonly starts: readonly number[];

  constructor(private readonly text: string) {
    const starts = [0];
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x0a) starts.push(i + 1);
      else if (c === 0x0d) {
        if (text.charCodeAt(i + 1) === 0x0a) i++;
        starts.push(i + 1);
      }
    }
    this.starts = starts;
  }

  /** Number of lines (a text ending with a line break has an empty last line). */
  get lineCount(): number {
    return this.starts.length;
  }

  /** The 1-based line and column of `offset` (clamped to [0, text.length]). */
  position(offset: number): LinePosition {
    const o = Math.max(0, Math.min(offset, this.text.length));
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= o) lo = mid;
      else hi = mid - 1;
    }
    const start = this.starts[lo];
    const before = this.text.slice(start, o);
    let codePoints = 0;
    for (const _ of before) codePoints++;
    return { line: lo + 1, column: codePoints + 1, utf16Column: o - start + 1 };
  }

  /** Offset of the first character of 1-based `line`. */
  lineStart(line: number): number {
    return this.starts[this.checkLine(line) - 1];
  }

  /** Offset just past the last character of 1-based `line`, before its line break. */
  lineEnd(line: number): number {
    const l = this.checkLine(line);
    if (l === this.starts.length) return this.text.length;
    let end = this.starts[l];
    if (this.text.charCodeAt(end - 1) === 0x0a) end--;
    if (this.text.charCodeAt(end - 1) === 0x0d) end--;
    return end;
  }

  /** The text of 1-based `line` without its line break. */
  lineText(line: number): string {
    return this.text.slice(this.lineStart(line), this.lineEnd(line));
  }

  private checkLine(line: number): number {
    if (!Number.isInteger(line) || line < 1 || line > this.starts.length) {
      throw new RangeError(`line ${line} is outside 1..${this.starts.length}`);
    }
    return line;
  }
}

/** Builds the line map of `text`. */
export function createLineMap(text: string): LineMap {
  return new LineMap(text);
}
