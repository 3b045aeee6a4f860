import type { Span } from "../core/diagnostic.js";

/** The parser's one internal error: a message and a span in the expression text. Converted to a Diagnostic at the phase boundary. */
export class ExprSyntaxError extends Error {
  constructor(
    message: string,
    readonly span: Span,
    readonly hint?: string,
    readonly code: "expr_syntax" | "expr_too_deep" | "expr_too_long" = "expr_syntax",
  ) {
    super(message);
    this.name = "ExprSyntaxError";
  }
}
