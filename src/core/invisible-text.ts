/**
 * Characters of untrusted text (spec names, attribute strings, file names) that generated files
 * hold only as `\uXXXX` escapes: controls (C0 and C1), format characters (bidirectional marks,
 * embeddings, overrides and isolates, zero-width characters, the BOM, soft hyphen), lone
 * surrogates, and every space or separator but the ASCII space (U+2028 and U+2029 end a line in
 * many editors and in JavaScript comments). Raw, they make a generated file read differently from
 * what it does (a right-to-left override in a literal reorders the code around it on screen) or
 * break it; escaped, a string literal has the same value and a comment shows what was there.
 */
const INVISIBLE = /(?![ \n])[\p{Cc}\p{Cf}\p{Cs}\p{Z}]/gu;

/** `\uXXXX` for each UTF-16 unit of `ch` (an astral format character becomes its surrogate pair). */
function unicodeEscape(ch: string): string {
  let out = "";
  for (let i = 0; i < ch.length; i++) out += "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0");
  return out;
}

/**
 * JSON text (of JSON.stringify) with every invisible character escaped: still JSON, with the same
 * value. JSON.stringify escapes C0 controls and lone surrogates itself; it leaves bidirectional
 * controls, C1 controls, U+2028/U+2029 and the BOM as they are. Structural whitespace (spaces and
 * newlines of an indented text) is kept.
 */
export function escapeInvisibleJson(jsonText: string): string {
  return jsonText.replace(INVISIBLE, unicodeEscape);
}

/**
 * A string literal of `s` in JavaScript, TypeScript or JSON: JSON-quoted (nothing in `s` can end
 * it), with every invisible character escaped. The one way generated files write a string.
 */
export function quoteString(s: string): string {
  return escapeInvisibleJson(JSON.stringify(s));
}

/** `s` with every invisible character, newline included, written visibly as `\uXXXX` (for comments). */
export function showInvisible(s: string): string {
  return s.replace(/\n/g, "\\u000a").replace(INVISIBLE, unicodeEscape);
}
