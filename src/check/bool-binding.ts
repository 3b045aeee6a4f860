/**
 * The binding rule of bool tensors, shared by the spec check (a literal element type) and the
 * shader's declarations (an element type known only at render time): an ONNX bool tensor is 1 byte
 * per element and is bound as u32 words, 4 elements per word (docs/templates.md#bool-tensors).
 */

/**
 * The element type a bool tensor's binding declares: the tensor's bytes are bound as u32 words,
 * element i in byte i % 4 (little-endian) of word i / 4. A read-write bool binding is declared
 * `array<atomic<u32>>` so that its store helpers can change one byte without a race.
 */
export const BOOL_ELEMENT_TYPE = "u32";

/** How to fix a bool binding's element type: the hint of bool_element_type. */
export const BOOL_ELEMENT_HINT =
  'set `"elementType": "u32"` and read and write the tensor through the generated helpers (`load_NAME(i) -> bool`, `store_NAME(i, v)`, …; docs/templates.md#bool-tensors); when a type parameter may be bool, give `$name` of a derive entry that is `"u32"` for bool';

/**
 * Why a bool tensor's binding cannot have this element type, or undefined when it can: the shared
 * rule of the build's check (bool_element_type) and of declareResources.
 */
export function boolElementTypeProblem(elementType: string | undefined): string | undefined {
  if (elementType === BOOL_ELEMENT_TYPE) return undefined;
  return `a bool tensor is 1 byte per element, bound as u32 words of 4 elements, so its binding's element type must be \`${BOOL_ELEMENT_TYPE}\`, not \`${String(elementType)}\``;
}
