/** The error a plan function throws for a call it cannot plan (the generated code's has the same kinds and messages). */

/** Why a call could not be planned. */
export type CallErrorKind = "invalid_call" | "contract" | "no_variant" | "missing_shader" | "eval";

/**
 * The error a plan function throws for a call it cannot plan. Same kinds and messages as the
 * generated code's. The interpreter also gives `pointer`, the RFC 6901 JSON pointer into the call
 * of the value at fault (`/inputs/xT/shape`), so that `kernelc explain --call` can show it in the
 * call file; the generated code does not.
 */
export class KernelCallError extends Error {
  constructor(
    readonly kind: CallErrorKind,
    message: string,
    readonly pointer?: string,
  ) {
    super(message);
    this.name = "KernelCallError";
  }
}
