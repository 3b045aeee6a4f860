/// <reference types="@webgpu/types" preserve="true" />
/**
 * Compute pipelines of a bundle, created once per (shader, entry point) with explicit bind group layouts.
 *
 * Why explicit layouts: layout "auto" derives the bind group layout from the bindings the entry point
 * statically uses, so a binding the shader declares but a specialization does not touch would vanish
 * from the layout and the runtime's bind group (built from the plan) would no longer match it.
 */
import type { BindingType, Manifest, ManifestPipeline, PipelineDesc } from "../model/plan.js";
import { ScratchPool } from "./scratch-pool.js";
import { ShaderStage } from "./gpu-constants.js";

/** Returns a shader's WGSL source by shader id (the bundle's manifest maps ids to files). */
export type ShaderLoader = (shaderId: string) => string | Promise<string>;

/** A ready pipeline and the bind group layout its bind groups must use. */
export interface CachedPipeline {
  readonly desc: PipelineDesc;
  readonly pipeline: GPUComputePipeline;
  readonly bindGroupLayout: GPUBindGroupLayout;
}

/** One message of a WGSL compilation, with its line and column (1-based) in the shader. */
export interface ShaderMessage {
  readonly type: "error" | "warning" | "info";
  readonly message: string;
  readonly line: number;
  readonly column: number;
}

/** Thrown when a shader of the bundle does not compile; the message quotes each error with its source line. */
export class ShaderCompilationError extends Error {
  override readonly name = "ShaderCompilationError";

  constructor(
    readonly shaderId: string,
    readonly messages: readonly ShaderMessage[],
    source: string,
  ) {
    super(formatCompilationErrors(shaderId, messages, source));
  }
}

/** Thrown when the device refuses to create a pipeline or its layout (e.g. a missing entry point or a limit exceeded). */
export class PipelineCreationError extends Error {
  override readonly name = "PipelineCreationError";

  constructor(
    readonly shaderId: string,
    readonly entryPoint: string,
    detail: string,
  ) {
    super(`cannot create the compute pipeline ${shaderId}:${entryPoint}: ${detail}`);
  }
}

/** The cache key of a pipeline. */
export function pipelineKey(shaderId: string, entryPoint: string): string {
  return `${shaderId}\u0000${entryPoint}`;
}

/**
 * Creates compute pipelines with createComputePipelineAsync, at most once per (shader, entry point):
 * concurrent requests for the same pipeline share one creation; a failed creation is forgotten so a
 * later request retries. Also owns the device's default ScratchPool used by executePlan.
 */
export class PipelineCache {
  /** Scratch and uniform buffers reused across executePlan calls on this cache's device. */
  readonly scratchPool: ScratchPool;
  private readonly pipelines = new Map<string, Promise<CachedPipeline>>();
  private readonly modules = new Map<string, Promise<GPUShaderModule>>();

  constructor(
    readonly device: GPUDevice,
    private readonly loadShader: ShaderLoader,
  ) {
    this.scratchPool = new ScratchPool(device);
  }

  /** Returns the pipeline for a shader entry point with the given binding types (binding i = types[i]). */
  get(desc: PipelineDesc): Promise<CachedPipeline> {
    const key = pipelineKey(desc.shader, desc.entryPoint);
    const existing = this.pipelines.get(key);
    if (existing) return existing.then((p) => checkSameBindings(p, desc));
    const created = this.create(desc);
    this.pipelines.set(key, created);
    created.catch(() => {
      if (this.pipelines.get(key) === created) this.pipelines.delete(key);
    });
    return created;
  }

  /** Number of pipelines created or being created. */
  get size(): number {
    return this.pipelines.size;
  }

  private shaderModule(shaderId: string): Promise<GPUShaderModule> {
    const existing = this.modules.get(shaderId);
    if (existing) return existing;
    const created = this.compile(shaderId);
    this.modules.set(shaderId, created);
    created.catch(() => {
      if (this.modules.get(shaderId) === created) this.modules.delete(shaderId);
    });
    return created;
  }

  private async compile(shaderId: string): Promise<GPUShaderModule> {
    const code = await this.loadShader(shaderId);
    if (typeof code !== "string") throw new TypeError(`loadShader("${shaderId}") did not return a string`);
    // The scope keeps a compilation error from also surfacing as an uncaptured device error.
    this.device.pushErrorScope("validation");
    const module = this.device.createShaderModule({ label: shaderId, code });
    const scopeError = await this.device.popErrorScope();
    const info = await module.getCompilationInfo();
    const messages: ShaderMessage[] = info.messages.map((m) => ({
      type: m.type,
      message: m.message,
      line: m.lineNum,
      column: m.linePos,
    }));
    if (messages.some((m) => m.type === "error")) throw new ShaderCompilationError(shaderId, messages, code);
    if (scopeError) throw new ShaderCompilationError(shaderId, [{ type: "error", message: scopeError.message, line: 0, column: 0 }], code);
    return module;
  }

  private async create(desc: PipelineDesc): Promise<CachedPipeline> {
    const module = await this.shaderModule(desc.shader);
    const { device } = this;
    const label = `${desc.shader}:${desc.entryPoint}`;
    device.pushErrorScope("validation");
    const bindGroupLayout = device.createBindGroupLayout({
      label,
      entries: desc.bindings.map((type, binding) => ({
        binding,
        visibility: ShaderStage.COMPUTE,
        buffer: { type },
      })),
    });
    const layout = device.createPipelineLayout({ label, bindGroupLayouts: [bindGroupLayout] });
    const layoutError = await device.popErrorScope();
    if (layoutError) throw new PipelineCreationError(desc.shader, desc.entryPoint, layoutError.message);
    let pipeline: GPUComputePipeline;
    try {
      pipeline = await device.createComputePipelineAsync({
        label,
        layout,
        compute: { module, entryPoint: desc.entryPoint },
      });
    } catch (e) {
      throw new PipelineCreationError(desc.shader, desc.entryPoint, e instanceof Error ? e.message : String(e));
    }
    return { desc, pipeline, bindGroupLayout };
  }
}

/** Creates every pipeline a manifest lists, in parallel, so that the first calls do not wait for compilation. */
export async function warmUp(cache: PipelineCache, manifest: Pick<Manifest, "pipelines">): Promise<number> {
  await Promise.all(manifest.pipelines.map((p) => cache.get(pipelineDescOfManifest(p))));
  return manifest.pipelines.length;
}

const BINDING_TYPES: readonly string[] = ["storage", "read-only-storage", "uniform"] satisfies readonly BindingType[];

/** A manifest's pipeline as a PipelineDesc; throws PipelineCreationError for a binding type WebGPU does not have. */
export function pipelineDescOfManifest(p: ManifestPipeline): PipelineDesc {
  const bad = p.bindings.findIndex((t) => !BINDING_TYPES.includes(t));
  if (bad >= 0)
    throw new PipelineCreationError(
      p.shader,
      p.entryPoint,
      `binding ${bad} has the type "${p.bindings[bad]}"; a manifest's binding types are ${BINDING_TYPES.map((t) => `"${t}"`).join(", ")}`,
    );
  return { shader: p.shader, entryPoint: p.entryPoint, bindings: p.bindings as readonly BindingType[] };
}

/**
 * A ShaderLoader for a bundle: maps a shader id to its file through the manifest and reads the file
 * with `readText` (e.g. `(path) => fetch(new URL(path, manifestUrl)).then((r) => r.text())`).
 */
export function manifestShaderLoader(
  manifest: Pick<Manifest, "shaders" | "profile">,
  readText: (relativePath: string) => string | Promise<string>,
): ShaderLoader {
  return (shaderId) => {
    const file = Object.hasOwn(manifest.shaders, shaderId) ? manifest.shaders[shaderId] : undefined;
    if (file === undefined) throw new Error(`the manifest of profile "${manifest.profile}" has no shader "${shaderId}"`);
    return readText(file);
  };
}

function checkSameBindings(p: CachedPipeline, desc: PipelineDesc): CachedPipeline {
  const a = p.desc.bindings;
  const b = desc.bindings;
  if (a.length !== b.length || a.some((t, i) => t !== b[i])) {
    throw new PipelineCreationError(
      desc.shader,
      desc.entryPoint,
      `asked with bindings [${b.join(", ")}] but already created with [${a.join(", ")}]`,
    );
  }
  return p;
}

function formatCompilationErrors(shaderId: string, messages: readonly ShaderMessage[], source: string): string {
  const lines = source.split("\n");
  const errors = messages.filter((m) => m.type === "error");
  const out = [`WGSL shader "${shaderId}" does not compile (${errors.length} error${errors.length === 1 ? "" : "s"}):`];
  for (const m of errors) {
    const where = m.line > 0 ? `${shaderId}:${m.line}:${m.column}` : shaderId;
    out.push(`${where}: error: ${m.message}`);
    const text = m.line > 0 ? lines[m.line - 1] : undefined;
    if (text !== undefined) {
      out.push(`  ${text}`);
      out.push(`  ${" ".repeat(Math.max(0, m.column - 1))}^`);
    }
  }
  return out.join("\n");
}
