/**
 * The checked kernel: what the check phase hands to planning and emission. Immutable data; built by
 * src/check/check-spec.ts.
 */
import type { KernelSpec, ExprSource, Where } from "./spec.js";
import type { TExpr } from "./ir.js";
import type { Type } from "./types.js";
import type { Diagnostic } from "../core/diagnostic.js";

/** Which names a Nunjucks template reads (found statically by src/check/template-reads.ts). */
export interface TemplateReads {
  /** Bare names looked up (macro parameters and `set` targets included: a superset is safe). */
  readonly names: ReadonlySet<string>;
  /** Members read as `tunables.X`. */
  readonly tunables: ReadonlySet<string>;
  /** Members read as `dtypes.X`. */
  readonly dtypes: ReadonlySet<string>;
  /** Templates named by include/import/extends (literal names only). */
  readonly includes: readonly string[];
  /**
   * Whether the template uses `tunables` other than as `tunables.X` or `tunables["X"]` (a
   * subscript by a variable, a loop over it, an argument, a `set`): it may read any tunable.
   */
  readonly anyTunable: boolean;
  /**
   * Whether an include or import names its template by an expression (or, in the reads of a
   * template with its includes, names one that cannot be read): what that template reads is unknown.
   */
  readonly unknownIncludes: boolean;
}

/** An expression after checking: its source (for locations) and typed IR. */
export interface CExpr {
  readonly source: ExprSource;
  readonly texpr: TExpr;
}

export interface CheckedDerive {
  readonly name: string;
  readonly expr: CExpr;
  readonly type: Type;
  /** Derive names its expression reads directly. */
  readonly reads: ReadonlySet<string>;
  readonly keyWhere: Where;
}

export type BufferType = "storage" | "read-only-storage" | "uniform";

export interface CheckedField {
  readonly name: string;
  readonly type: "u32" | "i32" | "f32";
  readonly value: CExpr;
}

export interface CheckedBinding {
  readonly id: string;
  /** WGSL variable name. */
  readonly name: string;
  readonly kind: "arg" | "scratch" | "uniform";
  /** Tensor id (arg) or intermediate id (scratch). */
  readonly ref?: string;
  /** For args: whether the tensor id is an input (an id that is both is an input: in place). */
  readonly refIsInput?: boolean;
  readonly buffer: BufferType;
  /**
   * WGSL element type: a literal, the name of a string-valued derive entry (`$name`), or, for a
   * tensor binding that gives none, the WGSL scalar of the type parameter its tensor's dtype names
   * (`typeParam`; a tensor or intermediate of a fixed ONNX type gets that type's scalar as a literal).
   */
  readonly elementType?: { readonly literal: string } | { readonly derive: string } | { readonly typeParam: string };
  readonly fields?: readonly CheckedField[];
  readonly where: Where;
}

export interface CheckedPass {
  readonly id: string;
  readonly name: string;
  readonly shader: string;
  /** Absolute path of the template when it exists and is safe. */
  readonly shaderPath?: string;
  readonly reads?: TemplateReads;
  readonly derive: ReadonlyMap<string, CheckedDerive>;
  readonly bindings: readonly CheckedBinding[];
  readonly dispatch: readonly [CExpr, CExpr, CExpr];
  readonly where: Where;
}

export interface CheckedIntermediate {
  readonly id: string;
  readonly dtype: string;
  readonly shape: CExpr;
}

export interface CheckedVariant {
  readonly id: string;
  readonly priority: number;
  /** Position in the spec: ties of priority go to the earlier variant. */
  readonly order: number;
  readonly when: readonly CExpr[];
  readonly features: readonly string[];
  readonly derive: ReadonlyMap<string, CheckedDerive>;
  readonly intermediates: readonly CheckedIntermediate[];
  readonly passes: readonly CheckedPass[];
  readonly where: Where;
}

export interface CheckedKernel {
  readonly spec: KernelSpec;
  readonly attrTypes: ReadonlyMap<string, Type>;
  readonly derive: ReadonlyMap<string, CheckedDerive>;
  readonly when: readonly CExpr[];
  readonly outputShapes: ReadonlyMap<string, CExpr>;
  readonly variants: readonly CheckedVariant[];
}

export interface CheckResult {
  readonly kernel?: CheckedKernel;
  readonly diagnostics: readonly Diagnostic[];
}
