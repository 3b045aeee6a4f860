/**
 * The loaded, schema-validated kernel spec: immutable data with the source location of every
 * field, so later phases can point diagnostics at the exact place in the JSON file.
 * Expression strings are kept as `ExprSource` (text + where it sits); the parse phase turns
 * them into ASTs.
 */
import type { Span } from "../core/diagnostic.js";

/** Where a spec value sits: JSON pointer and byte span of the value in the file. */
export interface Where {
  readonly pointer: string;
  readonly span: Span;
}

/** An expression as written in the spec. A JSON number or boolean literal is kept as its JSON text. */
export interface ExprSource {
  readonly text: string;
  readonly where: Where;
  /**
   * Offset of the expression's first character within the file. For a JSON string this is the
   * offset after the opening quote; `offsetMap` maps text offsets back when the string had escapes.
   * Offsets are UTF-16 code-unit indices into the file's text (`KernelSpec.source`).
   */
  readonly textStart: number;
  /**
   * For each UTF-16 code unit of `text`, the file offset of the character or escape sequence it
   * came from, plus one final entry for the end of the text (the closing quote), so its length is
   * `text.length + 1`. Present only when the JSON string held escapes; otherwise the offset of
   * `text[i]` is `textStart + i`.
   */
  readonly offsetMap?: readonly number[];
}

/** A named entry of a JSON object, with where its key sits (for "declared here" notes). */
export interface Named {
  readonly name: string;
  readonly keyWhere: Where;
  readonly where: Where;
}

export interface InputSpec extends Named {
  readonly onnx: string;
  readonly dtype: string;
  /** Where the dtype is written. */
  readonly dtypeWhere?: Where;
  readonly rank?: number;
  readonly optional: boolean;
  readonly storage?: string;
  /** Where the storage type is written (when there is one). */
  readonly storageWhere?: Where;
}

export interface OutputSpec extends Named {
  readonly onnx: string;
  readonly dtype: string;
  /** Where the dtype is written. */
  readonly dtypeWhere?: Where;
  readonly rank?: number;
  readonly optional: boolean;
  readonly shape?: ExprSource;
}

export interface AttributeSpec extends Named {
  readonly default?: number | string | readonly number[];
  /** Where the default is written (when there is one). */
  readonly defaultWhere?: Where;
  /** Whether the default is written as a float (`1.0`, `1e-5`, `[1.0, 2.0]`): the attribute is then a float (or list<float>). */
  readonly defaultFloat?: boolean;
}

export interface AttributeConstraintSpec extends Named {
  readonly values?: readonly (number | string)[];
  /** Where `values` is written (when it is). */
  readonly valuesWhere?: Where;
  readonly required: boolean;
}

export interface TypeConstraintSpec extends Named {
  /** ONNX type names, e.g. "float16". */
  readonly types: readonly string[];
  /** Where each of `types` is written. */
  readonly typesWhere?: readonly Where[];
}

export interface TunableSpec extends Named {
  readonly default: number;
  /** Candidate values to enumerate; when absent only the default (or the profile's pin) is built. */
  readonly values?: readonly number[];
}

export interface DeriveEntry extends Named {
  readonly expr: ExprSource;
}

export interface UniformField {
  readonly name: string;
  readonly type: "u32" | "i32" | "f32";
  readonly value: ExprSource;
  readonly where: Where;
  /** Where `name` is written. */
  readonly nameWhere: Where;
}

/** A binding as declared (top-level `bindings` or inline in a pass). */
export interface BindingSpec {
  /** The id under top-level `bindings`, or for an inline binding its WGSL `name` (which inline bindings must set). */
  readonly id: string;
  readonly where: Where;
  readonly kind: "arg" | "scratch" | "uniform";
  /** Input/output id for "arg", intermediate id for "scratch". */
  readonly ref?: string;
  readonly refWhere?: Where;
  /** WGSL variable name; defaults to the binding id. */
  readonly name: string;
  /** Where `name` is written; for a name that defaults to the id, where the binding's key is. */
  readonly nameWhere: Where;
  /** Explicit buffer binding type, else inferred. */
  readonly buffer?: "storage" | "read-only-storage" | "uniform";
  /** WGSL element type or `$deriveName` reference. */
  readonly elementType?: string;
  readonly elementTypeWhere?: Where;
  readonly fields?: readonly UniformField[];
}

export interface IntermediateSpec {
  readonly id: string;
  readonly dtype: string;
  readonly shape: ExprSource;
  readonly where: Where;
}

export interface PassSpec {
  readonly id: string;
  readonly name: string;
  readonly shader: string;
  readonly shaderWhere: Where;
  readonly derive: readonly DeriveEntry[];
  /** Each binding either names a top-level binding id (with where the reference sits) or is inline. */
  readonly bindings: readonly PassBindingRef[];
  readonly dispatch: { readonly x: ExprSource; readonly y: ExprSource; readonly z: ExprSource };
  readonly where: Where;
}

export type PassBindingRef =
  { readonly kind: "ref"; readonly id: string; readonly where: Where } | { readonly kind: "inline"; readonly binding: BindingSpec };

export interface VariantSpec {
  readonly id: string;
  readonly priority: number;
  readonly when: readonly ExprSource[];
  readonly features: readonly string[];
  readonly derive: readonly DeriveEntry[];
  readonly intermediates: readonly IntermediateSpec[];
  readonly passes: readonly PassSpec[];
  readonly where: Where;
}

export interface KernelSpec {
  readonly file: string;
  readonly source: string;
  readonly domain: string;
  readonly name: string;
  readonly sinceVersion: number;
  readonly inputs: readonly InputSpec[];
  readonly outputs: readonly OutputSpec[];
  readonly attributes: readonly AttributeSpec[];
  readonly attributeConstraints: readonly AttributeConstraintSpec[];
  readonly typeConstraints: readonly TypeConstraintSpec[];
  readonly tunables: readonly TunableSpec[];
  readonly derive: readonly DeriveEntry[];
  readonly when: readonly ExprSource[];
  readonly bindings: readonly BindingSpec[];
  readonly variants: readonly VariantSpec[];
  /** Derive entries `kernelc explain` and the manifest show per built shader (the spec's `explain` list). */
  readonly explain: readonly { readonly name: string; readonly where: Where }[];
}
