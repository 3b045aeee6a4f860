/**
 * The dispatch model of one kernel on one profile: everything a plan function needs, after
 * enumeration and shader emission. The interpreter (interpret.ts) executes it directly; the
 * dispatcher generator (emit/dispatcher.ts) compiles it to TypeScript. Same data, one meaning.
 */
import { CheckedBinding, CheckedKernel, CheckedPass, CheckedVariant } from "../model/checked.js";
import { leavesOf, type LeafInfo } from "../check/binding-time.js";
import type { StaticFacts } from "./env.js";

export interface PassModel {
  readonly pass: CheckedPass;
  readonly keyLeaves: readonly LeafInfo[];
  /** JSON of the key values -> shader id. */
  readonly shaders: ReadonlyMap<string, string>;
  readonly bindings: readonly CheckedBinding[];
}

export interface VariantModel {
  readonly variant: CheckedVariant;
  readonly passes: readonly PassModel[];
}

export interface AssignmentModel {
  readonly facts: StaticFacts;
  readonly variants: readonly VariantModel[];
}

export interface KernelModel {
  readonly kernel: CheckedKernel;
  readonly profile: string;
  readonly instancesHint: string;
  readonly assignments: readonly AssignmentModel[];
  /** Variants of the spec that were pruned for this profile (listed in "no variant" errors). */
  readonly prunedVariants: readonly string[];
}

/** Bytes per element of the ONNX element types kernelc binds. */
export const ELEMENT_BYTES: Readonly<Record<string, number>> = Object.freeze(
  Object.assign(Object.create(null), { float16: 2, float32: 4, float: 4, int32: 4, uint32: 4, bool: 1 }),
);

const TENSOR_NAMESPACES: ReadonlySet<string> = new Set(["shapes", "ranks", "present", "tensorDtypes"]);

/**
 * The outputs a call may leave out: required output-only ids with a declared shape, planned with
 * that shape. Only when no output's shape expression reads an output-only tensor, so that filling
 * one in can never change a value computed before it.
 */
export function outputsToFill(kernel: CheckedKernel): ReadonlySet<string> {
  const inputIds = new Set(kernel.spec.inputs.map((i) => i.name));
  const outputOnly = new Set(kernel.spec.outputs.map((o) => o.name).filter((id) => !inputIds.has(id)));
  for (const se of kernel.outputShapes.values()) {
    for (const l of leavesOf(se.texpr, kernel.derive).values()) {
      if (TENSOR_NAMESPACES.has(l.leaf.ns) && outputOnly.has(l.leaf.name)) return new Set();
    }
  }
  return new Set(
    kernel.spec.outputs.filter((o) => outputOnly.has(o.name) && !o.optional && kernel.outputShapes.has(o.name)).map((o) => o.name),
  );
}

/**
 * The message for a call that leaves out an output the planner would fill while no tensor of the
 * call fixes the output's type parameter, which allows several types; undefined when that cannot
 * happen (the parameter allows one type, or no filled output has it).
 */
export function unfixedOutputMessage(
  kernel: CheckedKernel,
  fill: ReadonlySet<string>,
  param: string,
  types: readonly string[],
): string | undefined {
  if (types.length < 2) return undefined;
  const outs = kernel.spec.outputs.filter((o) => fill.has(o.name) && o.dtype === param).map((o) => `\`${o.name}\``);
  if (outs.length === 0) return undefined;
  const one = outs.length === 1;
  return `${one ? "output" : "outputs"} ${outs.join(", ")} ${one ? "is" : "are"} left out of the call and no tensor of the call fixes ${one ? "its" : "their"} dtype ${param} (${types.join(" or ")}): give ${one ? "the output" : "them"} with ${one ? "its" : "their"} dtype`;
}
