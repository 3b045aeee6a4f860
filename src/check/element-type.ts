/**
 * The element-type rule of tensor and scratch bindings, shared by the spec check (a literal element
 * type) and the shader's declarations (an element type known only at render time): a binding views
 * the tensor's bytes as arrays of its element type, so the element type's scalar must be the WGSL
 * scalar of the tensor's dtype. An `f32` view of a float16 tensor would read each pair of halves as
 * one float and run past the bound range. Bool tensors have their own rule (bool-binding.ts).
 */
import { ONNX_TO_WGSL } from "../lang/ops.js";

/** The scalar of a WGSL element type kernelc binds: `f16` of `vec4<f16>`, `f32` of `f32`. */
function scalarOf(elementType: string): string {
  const m = /^vec[234]<(\w+)>$/.exec(elementType);
  return m ? m[1]! : elementType;
}

/**
 * Why a binding of a tensor of ONNX type `dtype` cannot have this element type, or undefined when
 * it can (or when the rule does not apply: a bool tensor, an unknown dtype).
 */
export function elementTypeProblem(dtype: string, elementType: string): string | undefined {
  if (dtype === "bool" || !Object.prototype.hasOwnProperty.call(ONNX_TO_WGSL, dtype)) return undefined;
  const scalar = ONNX_TO_WGSL[dtype]!;
  if (scalarOf(elementType) === scalar) return undefined;
  return `its ${dtype} elements are ${scalar} values, and an element type of \`${elementType}\` would read their bytes as ${scalarOf(elementType)}`;
}

/**
 * How to fix a binding's element type: the hint of element_type_mismatch. `param`: the type
 * parameter the tensor's dtype is, if it is one.
 */
export function elementTypeHint(dtype: string, param?: string): string {
  const s = ONNX_TO_WGSL[dtype] ?? "the tensor's scalar";
  const generic =
    param === undefined ? "" : `; for every type of ${param}, give \`$name\` of a derive entry built from \`dtypes.${param}\``;
  return `leave \`elementType\` out (it defaults to the tensor's scalar) or give one of ${s}, vec2<${s}>, vec3<${s}>, vec4<${s}>${generic}; to reinterpret the bits, bitcast in the template`;
}
