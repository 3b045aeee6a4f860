/**
 * The execution plan a generated dispatcher returns for one call, and that the runtime executes.
 * Plain data with no dependency, so a generated dispatcher module and the runtime share it.
 */

/** What each binding of a pass has in common, whatever the call: its number, WGSL name and buffer type. */
interface BindingBase {
  readonly binding: number;
  /** The WGSL variable name the template sees. */
  readonly name: string;
  /** The buffer binding type for the explicit bind group layout. */
  readonly type: "storage" | "read-only-storage" | "uniform";
}

/** A binding of a caller's tensor (an input or an output of the kernel, by spec id). */
export interface TensorBinding extends BindingBase {
  readonly kind: "input" | "output";
  /** The spec's input or output id (e.g. "keyCacheT"). An id that is both an input and an output is an "input": the buffer is shared (in place). */
  readonly tensor: string;
}

/** A binding of a scratch buffer the runtime allocates (a variant's intermediate, by id: a key of the plan's `scratch`). */
export interface ScratchBinding extends BindingBase {
  readonly kind: "scratch";
  readonly scratch: string;
}

/** A binding of the pass's uniform data (its words are the pass's resource for it). */
export interface UniformBinding extends BindingBase {
  readonly kind: "uniform";
}

/**
 * One binding of a pass and what it binds, the same for every call of the pass: a generated
 * dispatcher makes one frozen list of these per pass when its module loads and shares it among all
 * its plans. What a call binds to it is the pass's `resources[i]` for `bindings[i]`.
 */
export type BindingPlan = TensorBinding | ScratchBinding | UniformBinding;

/** A byte range of a tensor or scratch buffer, [offset, offset + size): what a hand-built plan may bind at an offset. */
export interface ByteRange {
  readonly offset: number;
  readonly size: number;
}

/** The byte range a tensor or scratch resource binds: a number n is [0, n), a ByteRange itself. */
export function byteRange(r: number | ByteRange): ByteRange {
  return typeof r === "number" ? { offset: 0, size: r } : r;
}

/**
 * What one call binds to a binding (the pass's `resources[i]` for `bindings[i]`). For a tensor or
 * scratch binding: a number, the byte size of the range [0, size) of its buffer (what a generated
 * dispatcher gives), or a ByteRange. For a uniform binding: its contents, laid out by WGSL's uniform
 * rules, as u32 words (word i holds bytes 4i..4i+3, little-endian; an i32 as its two's complement, an
 * f32 as its bits); the runtime uploads words.length * 4 bytes. Numbers and arrays of numbers rather
 * than objects: a plan function makes no object per resource.
 */
export type BindingResource = number | ByteRange | readonly number[];

export interface PassPlan {
  readonly id: string;
  readonly name: string;
  /** Shader id: the WGSL file's name in the bundle (content-hash based). */
  readonly shader: string;
  readonly entryPoint: string;
  /** In binding order, group 0. */
  readonly bindings: readonly BindingPlan[];
  /** What this call binds: `resources[i]` is the resource of `bindings[i]` (as many as bindings). */
  readonly resources: readonly BindingResource[];
  /** The workgroup counts of the dispatch (three numbers, not an array: one object less per pass). */
  readonly x: number;
  readonly y: number;
  readonly z: number;
}

export interface Plan {
  readonly kernel: string;
  readonly variant: string;
  readonly passes: readonly PassPlan[];
  /** The byte size of each scratch buffer, by scratch id (the variant's intermediates, in spec order). */
  readonly scratch: Readonly<Record<string, number>>;
  /** Output shapes by output id (absent optional outputs are omitted). */
  readonly outputShapes: Readonly<Record<string, readonly number[]>>;
}

/** What a caller passes to a plan function: tensors with shape and ONNX dtype (absent = omitted or null), and attributes. */
export interface TensorDesc {
  readonly shape: readonly number[];
  readonly dtype: string;
}

export interface Call {
  readonly inputs: Readonly<Record<string, TensorDesc | null | undefined>>;
  readonly outputs?: Readonly<Record<string, TensorDesc | null | undefined>> | undefined;
  readonly attrs?: Readonly<Record<string, number | string | readonly number[] | undefined>> | undefined;
}

/**
 * The per-profile manifest.json written next to the WGSL files of a bundle: what the runtime reads
 * (the variants' descriptions for tools are in kernels.json, KernelsFile). Typed loosely enough
 * that the JSON module itself satisfies it (`import m from "./out/core/manifest.json" with { type: "json" }`
 * is a Manifest); the runtime checks the values it reads (binding types in warmUp).
 */
export interface Manifest {
  readonly generatedBy: string;
  readonly profile: string;
  /** Pass these to requestDevice. */
  readonly requiredLimits: Readonly<Record<string, number>>;
  readonly requiredFeatures: readonly string[];
  /** Shader id -> file name relative to the manifest, e.g. "shaders/1a2b3c4d5e6f.wgsl". */
  readonly shaders: Readonly<Record<string, string>>;
  /** Every pipeline a profile may create, for warm-up: shader id, entry point and binding types. */
  readonly pipelines: readonly ManifestPipeline[];
}

/**
 * The per-profile kernels.json beside manifest.json: what tools and tests read (each kernel's
 * variants with their dtypes, tunables, passes, shader keys and ids, the variants not built, and
 * the values of its `explain` entries per shader). The runtime never reads it.
 */
export interface KernelsFile {
  readonly generatedBy: string;
  readonly profile: string;
  readonly kernels: Readonly<Record<string, unknown>>;
}

/** The buffer binding type of one binding of an explicit bind group layout. */
export type BindingType = "storage" | "read-only-storage" | "uniform";

/** One compute pipeline: a shader's entry point with its explicit bind group layout. */
export interface PipelineDesc {
  readonly shader: string;
  readonly entryPoint: string;
  readonly bindings: readonly BindingType[];
}

/** A pipeline as manifest.json lists it: a PipelineDesc whose binding types are plain strings (as JSON types them). */
export interface ManifestPipeline {
  readonly shader: string;
  readonly entryPoint: string;
  readonly bindings: readonly string[];
}
