/**
 * How a profile stores f16 tensors. With the WebGPU feature `shader-f16` a binding of element type
 * f16 is an `array<f16>` (native); without it the same bytes are bound as `array<u32>` (two halves
 * per word, or `vec2<u32>` for four), read with `unpack2x16float`, written with `pack2x16float`,
 * and computed in f32 (packed). The choice is the profile's, never the spec's: a template reads and
 * writes through the generated helpers (docs/f16.md) and works in both forms.
 */
import { deriveEnv } from "../check/check-spec.js";
import { EvalError } from "../lang/ops.js";
import type { CheckedKernel, CheckedVariant } from "../model/checked.js";
import { bindingElementType, DeriveEnv, StaticLeaves, type StaticFacts } from "./env.js";

/** The storage form of f16 tensors on a profile. */
export type F16Storage = "native" | "packed";

/** The form a profile with these features gets: native exactly when it has `shader-f16`. */
export function f16StorageFor(features: ReadonlySet<string> | readonly string[]): F16Storage {
  const has = Array.isArray(features) ? features.includes("shader-f16") : (features as ReadonlySet<string>).has("shader-f16");
  return has ? "native" : "packed";
}

/** One line saying what the form means, for `kernelc explain` and messages. */
export function describeF16Storage(form: F16Storage): string {
  return form === "native"
    ? "native: f16 tensors are array<f16> (the profile has shader-f16; `enable f16;` is generated)"
    : "packed: f16 tensors are bound as u32 pairs, read with unpack2x16float and written with pack2x16float, computed in f32 (the profile has no shader-f16)";
}

/**
 * Whether a variant binds f16 data for these build-time facts: some binding of one of its passes
 * has an element type (literal, or a derive value known at build time) whose scalar is f16.
 */
export function variantBindsF16(kernel: CheckedKernel, variant: CheckedVariant, facts: StaticFacts): boolean {
  return variant.passes.some((pass) => {
    const env = new DeriveEnv(deriveEnv(kernel, variant, pass), new StaticLeaves(facts));
    return pass.bindings.some((b) => {
      try {
        return bindingElementType(b, env)?.includes("f16") ?? false;
      } catch (err) {
        if (err instanceof EvalError) return false;
        throw err;
      }
    });
  });
}
