/**
 * A small writer for generated TypeScript: lines at an indentation level, blocks opened and closed
 * in pairs, string literals quoted by construction and identifiers checked. Spec text reaches
 * generated code only through `str` (a JSON string literal) or `comment` (inert comment text).
 */
import { quoteString, showInvisible } from "../core/invisible-text.js";

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(
  (
    "break case catch class const continue debugger default delete do else enum export extends false finally for function if " +
    "implements import in instanceof interface let new null package private protected public return static super switch this " +
    "throw true try typeof var void while with yield await arguments eval undefined NaN Infinity"
  ).split(" "),
);

/**
 * A string literal of `s` (JSON-quoted: no spec text can end it; bidirectional, invisible and
 * control characters as `\uXXXX`, core/invisible-text.ts). The one way generated code writes a string.
 */
export function str(s: string): string {
  return quoteString(s);
}

/** `name`, checked to be a plain identifier that is not a reserved word (throws an internal error otherwise). */
export function ident(name: string): string {
  if (!IDENT.test(name) || RESERVED.has(name)) throw new Error(`internal error: ${JSON.stringify(name)} is not a safe identifier`);
  return name;
}

/** Whether `name` can be written as an identifier (else it is written quoted, e.g. as a property key). */
export function isIdent(name: string): boolean {
  return IDENT.test(name) && !RESERVED.has(name);
}

/** A property key: the name itself when it is an identifier, else its string literal. */
export function key(name: string): string {
  return isIdent(name) ? name : str(name);
}

/**
 * Text safe inside a generated comment (block or line, TypeScript, JavaScript or WGSL): line breaks,
 * controls, bidirectional and invisible characters written visibly as `\uXXXX`, and no `*` followed
 * by `/`, so spec text in a comment can never end it early nor show something else than it says.
 */
export function comment(s: string): string {
  return showInvisible(s).replace(/\*\//g, "*\\/");
}

/** Lines of generated code at an indentation level (two spaces per level). */
export class CodeWriter {
  private readonly out: string[] = [];
  private depth: number;

  constructor(depth = 0) {
    this.depth = depth;
  }

  /** One line at the current indentation. */
  line(text: string): this {
    this.out.push(text === "" ? "" : "  ".repeat(this.depth) + text);
    return this;
  }

  /** Several lines at the current indentation. */
  lines(texts: readonly string[]): this {
    for (const t of texts) this.line(t);
    return this;
  }

  /** `head {`, then indents. */
  open(head: string): this {
    this.line(`${head} {`);
    this.depth++;
    return this;
  }

  /** Dedents, then `}` (or `tail`, e.g. `} else {`, which stays open). */
  close(tail = "}"): this {
    if (this.depth === 0) throw new Error("internal error: CodeWriter.close without open");
    this.depth--;
    this.line(tail);
    if (tail.endsWith("{")) this.depth++;
    return this;
  }

  /** `head { body }`. */
  block(head: string, body: (w: this) => void): this {
    this.open(head);
    body(this);
    return this.close();
  }

  /** The current indentation level. */
  get level(): number {
    return this.depth;
  }

  /** The lines written so far. */
  get written(): readonly string[] {
    return this.out;
  }

  /** The code written, lines joined. */
  text(): string {
    return this.out.join("\n");
  }
}

/**
 * Type-only text in generated code is marked (start and end control characters, which `str` escapes
 * and `comment` replaces, so spec text can never contain them): TypeScript output keeps the text,
 * JavaScript output drops it. Marks may nest.
 */
export const TYPE_START = "\u0001";
export const TYPE_END = "\u0002";

/** Marks `text` as type-only (see TYPE_START). */
export function ty(text: string): string {
  return `${TYPE_START}${text}${TYPE_END}`;
}

/** The languages kernelc emits generated modules in: TypeScript, or JavaScript with .d.ts declarations. */
export type EmitKind = "ts" | "js";

/**
 * A generated module's final text: for "ts" the marked text with the marks removed; for "js" without
 * the marked text, and without the lines that held nothing else (field declarations, interfaces).
 */
export function finishModule(marked: string, emit: EmitKind): string {
  if (emit === "ts") return marked.replace(/[\u0001\u0002]/g, "");
  const DROPPED = "\u0003";
  const kept: string[] = [];
  let depth = 0;
  for (const part of marked.split(/([\u0001\u0002])/)) {
    if (part === TYPE_START) depth++;
    else if (part === TYPE_END) {
      if (depth === 0) throw new Error("internal error: unbalanced type marks in generated code");
      if (--depth === 0) kept.push(DROPPED);
    } else if (depth === 0) kept.push(part);
  }
  if (depth !== 0) throw new Error("internal error: unbalanced type marks in generated code");
  const out = kept.join("");
  // Generated code has no multi-line strings or template literals: collapsing blank lines changes no value.
  return out
    .split("\n")
    .filter((line) => !(line.includes(DROPPED) && /^[\s\u0003]*$/.test(line)))
    .join("\n")
    .replace(/\u0003/g, "")
    .replace(/\n{3,}/g, "\n\n");
}
