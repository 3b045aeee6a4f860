/** Maps spans inside expression strings back to byte offsets in the spec file. */
import type { Location, Span } from "../core/diagnostic.js";
import type { ExprSource, Where } from "../model/spec.js";

/** File offset of character `i` of an expression's text. */
export function exprOffset(src: ExprSource, i: number): number {
  if (src.offsetMap) {
    if (i < src.offsetMap.length) return src.offsetMap[i];
    return src.offsetMap.length > 0 ? src.offsetMap[src.offsetMap.length - 1] + 1 : src.textStart;
  }
  return src.textStart + i;
}

/** The location of a span of an expression, in the spec file. */
export function exprLocation(file: string, src: ExprSource, span: Span): Location {
  // The end of the last character is where the next one starts, so a span ending on an escape
  // such as `\"` covers the whole escape.
  const start = exprOffset(src, span.start);
  return { file, span: { start, end: span.end > span.start ? exprOffset(src, span.end) : start }, pointer: src.where.pointer };
}

/** The location of a spec value. */
export function whereLocation(file: string, where: Where): Location {
  return { file, span: where.span, pointer: where.pointer };
}
