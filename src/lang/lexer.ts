/**
 * Tokenizer for kernelc's expression language (Jinja's expression syntax, the subset specs use).
 */
import type { Span } from "../core/diagnostic.js";
import { ExprSyntaxError } from "./errors.js";

export type TokenKind = "number" | "string" | "ident" | "keyword" | "op" | "eof";

export interface Token {
  readonly kind: TokenKind;
  /** The token's text; for strings the decoded value. */
  readonly text: string;
  readonly span: Span;
  /** For number tokens: written as an integer (no '.', no exponent). */
  readonly isInt?: boolean;
}

/** Words that are operators or literals rather than names. */
export const KEYWORDS = new Set(["and", "or", "not", "if", "else", "true", "false", "True", "False", "in", "is", "none", "None"]);

const TWO_CHAR_OPS = ["//", "==", "!=", "<=", ">=", "**"];
const ONE_CHAR_OPS = "+-*/%<>()[],.~|=!{}:";

function isIdentStart(c: string): boolean {
  return (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_";
}
function isIdentPart(c: string): boolean {
  return isIdentStart(c) || (c >= "0" && c <= "9");
}
function isDigit(c: string): boolean {
  return c >= "0" && c <= "9";
}

/** Splits `src` into tokens, ending with an "eof" token. Throws ExprSyntaxError on a bad character or literal. */
export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    const start = i;
    if (isDigit(c) || (c === "." && isDigit(src[i + 1] ?? ""))) {
      let isInt = true;
      while (i < src.length && (isDigit(src[i]) || src[i] === "_")) i++;
      if (src[i] === "." && isDigit(src[i + 1] ?? "")) {
        isInt = false;
        i++;
        while (i < src.length && isDigit(src[i])) i++;
      } else if (src[i] === "." && !isIdentStart(src[i + 1] ?? "")) {
        // "1." is a float in Jinja.
        isInt = false;
        i++;
      }
      if (src[i] === "e" || src[i] === "E") {
        let j = i + 1;
        if (src[j] === "+" || src[j] === "-") j++;
        if (isDigit(src[j] ?? "")) {
          isInt = false;
          i = j;
          while (i < src.length && isDigit(src[i])) i++;
        }
      }
      const text = src.slice(start, i);
      if (isIdentStart(src[i] ?? "")) {
        let end = i;
        while (end < src.length && isIdentPart(src[end])) end++;
        throw new ExprSyntaxError(
          `invalid number literal \`${src.slice(start, end)}\``,
          { start, end },
          "a name cannot start with a digit; put an operator between a number and a name",
        );
      }
      tokens.push({ kind: "number", text: text.replace(/_/g, ""), span: { start, end: i }, isInt });
      continue;
    }
    if (isIdentStart(c)) {
      while (i < src.length && isIdentPart(src[i])) i++;
      const text = src.slice(start, i);
      tokens.push({ kind: KEYWORDS.has(text) ? "keyword" : "ident", text, span: { start, end: i } });
      continue;
    }
    if (c === '"' || c === "'") {
      const quote = c;
      i++;
      let value = "";
      for (;;) {
        if (i >= src.length) {
          throw new ExprSyntaxError("unterminated string literal", { start, end: src.length }, `close the string with ${quote}`);
        }
        const d = src[i];
        if (d === quote) {
          i++;
          break;
        }
        if (d === "\\") {
          const e = src[i + 1];
          const map: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"' };
          if (e === undefined) {
            throw new ExprSyntaxError("unterminated string literal", { start, end: src.length }, `close the string with ${quote}`);
          }
          if (!Object.prototype.hasOwnProperty.call(map, e)) {
            throw new ExprSyntaxError(`unknown escape \`\\${e}\` in string literal`, { start: i, end: Math.min(i + 2, src.length) });
          }
          value += map[e];
          i += 2;
          continue;
        }
        value += d;
        i++;
      }
      tokens.push({ kind: "string", text: value, span: { start, end: i } });
      continue;
    }
    const two = src.slice(i, i + 2);
    if (TWO_CHAR_OPS.includes(two)) {
      tokens.push({ kind: "op", text: two, span: { start, end: i + 2 } });
      i += 2;
      continue;
    }
    if (ONE_CHAR_OPS.includes(c)) {
      tokens.push({ kind: "op", text: c, span: { start, end: i + 1 } });
      i++;
      continue;
    }
    const cp = src.codePointAt(i) ?? 0;
    // A character one cannot see (a control, a bidirectional mark, a zero-width or other space) is
    // named by its code point alone; any other non-ASCII one with it, so that a look-alike such as
    // Cyrillic `а` (U+0430) in `nа` is told from the Latin letter it imitates.
    const code = `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
    const ch = String.fromCodePoint(cp);
    const shown = /^[\p{C}\p{Z}]$/u.test(ch) ? code : cp >= 0x80 ? `\`${ch}\` (${code})` : `\`${ch}\``;
    throw new ExprSyntaxError(`unexpected character ${shown}`, { start, end: i + (cp > 0xffff ? 2 : 1) });
  }
  tokens.push({ kind: "eof", text: "", span: { start: src.length, end: src.length } });
  return tokens;
}
