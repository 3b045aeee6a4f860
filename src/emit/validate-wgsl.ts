/// <reference types="@webgpu/types" preserve="true" />
/**
 * WGSL validation with Tint through Dawn's null backend (npm `webgpu`): no GPU is needed. Each
 * shader is compiled as a module and then as a compute pipeline with entry point `main`, which
 * catches entry-point errors (a missing `main`, bad workgroup size) that module compilation does not.
 */
import { create, globals } from "webgpu";
import { checkWorkgroupLimits, workgroupFacts } from "./wgsl-limits.js";

/** One problem Tint found; line and column are 1-based, line 0 for a pipeline-level problem. */
export interface WgslProblem {
  readonly line: number;
  readonly column: number;
  readonly length: number;
  readonly message: string;
  readonly severity: "error" | "warning";
}

/** The features a device can be asked for here; other feature names in a request are ignored. */
const SHADER_FEATURES = ["shader-f16", "subgroups"] as const;

/**
 * Validates WGSL with Tint. One device per distinct feature set, requested with the null adapter's
 * highest limits. Call dispose() when done so Dawn lets the process exit.
 */
let sharedGpu: GPU | undefined;

export class WgslValidator {
  private readonly devices = new Map<string, Promise<GPUDevice>>();

  private constructor(
    /** Held for the validator's lifetime: Dawn tears its instance down when the GPU object is collected. */
    private readonly gpu: GPU,
    /** Used for its feature list only. */
    private readonly adapter: GPUAdapter,
  ) {}

  /** Starts Dawn's null backend (once per process) and gets an adapter. */
  static async create(): Promise<WgslValidator> {
    // Dawn's binding reads GPUBufferUsage and friends from globalThis; installing them is idempotent.
    Object.assign(globalThis, globals);
    // One Dawn instance for the whole process, never released: Dawn tears an instance down when its
    // GPU object is garbage-collected, and doing that while other instances live has been seen to
    // deadlock or crash the process.
    sharedGpu ??= create(["backend=null"]);
    const gpu = sharedGpu;
    const adapter = await gpu.requestAdapter();
    if (!adapter) throw new Error("Dawn's null backend offered no adapter; WGSL cannot be validated");
    return new WgslValidator(gpu, adapter);
  }

  /**
   * Problems in `wgsl` compiled on a device with `features` (those among shader-f16 and subgroups that
   * the adapter has). Tint's errors and warnings come with their line and column; if the module is
   * clean, a failed compute pipeline (entry point `main`, layout "auto") is reported at line 0.
   */
  async validate(wgsl: string, features: readonly string[]): Promise<WgslProblem[]> {
    const device = await this.deviceFor(features);
    const problems: WgslProblem[] = [];
    // An invalid module also raises a validation error; the scope keeps Dawn from reporting it as
    // uncaptured. It is popped before any await so that concurrent validate() calls cannot interleave scopes.
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ code: wgsl });
    const scope = device.popErrorScope();
    const info = await module.getCompilationInfo();
    await scope;
    for (const m of info.messages) {
      if (m.type === "info") continue;
      problems.push({ line: m.lineNum, column: m.linePos, length: m.length, message: m.message, severity: m.type });
    }
    if (problems.some((p) => p.severity === "error")) return problems;
    const facts = workgroupFacts(wgsl);
    // Workgroup limits belong to the profile (checked by checkWorkgroupLimits); the null adapter's
    // own limits are small, so a shader known to exceed them is not compiled as a pipeline here.
    if (checkWorkgroupLimits(facts, limitsOf(device)).length > 0) return problems;
    try {
      await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } });
    } catch (err) {
      const message = cleanPipelineMessage(err instanceof Error ? err.message : String(err));
      const aboutLimits = facts.unresolved.length > 0 && /exceed|maximum|limit/i.test(message);
      problems.push({ line: 0, column: 0, length: 0, message, severity: aboutLimits ? "warning" : "error" });
    }
    return problems;
  }

  /** Destroys every device so the process can exit. */
  dispose(): void {
    const pending = [...this.devices.values()];
    this.devices.clear();
    for (const p of pending)
      void p.then(
        (d) => d.destroy(),
        () => undefined,
      );
  }

  private deviceFor(features: readonly string[]): Promise<GPUDevice> {
    const wanted: GPUFeatureName[] = SHADER_FEATURES.filter((f) => features.includes(f) && this.adapter.features.has(f));
    const key = wanted.join(",");
    let device = this.devices.get(key);
    if (!device) {
      device = this.requestDevice(wanted);
      this.devices.set(key, device);
    }
    return device;
  }

  /** A device on a fresh adapter: Dawn's adapters are "consumed" by the first device made from them. */
  private async requestDevice(features: GPUFeatureName[]): Promise<GPUDevice> {
    const adapter = await this.gpu.requestAdapter();
    if (!adapter) throw new Error("Dawn's null backend offered no adapter; WGSL cannot be validated");
    return adapter.requestDevice({ requiredFeatures: features, requiredLimits: computeLimits(adapter) });
  }

  /** The features the validator's adapter offers, among those it can enable. */
  supportedFeatures(): string[] {
    return SHADER_FEATURES.filter((f) => this.adapter.features.has(f));
  }
}

const COMPUTE_LIMITS = [
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxStorageBuffersPerShaderStage",
  "maxUniformBuffersPerShaderStage",
  "maxBindingsPerBindGroup",
] as const;

function computeLimits(adapter: GPUAdapter): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of COMPUTE_LIMITS) out[name] = adapter.limits[name];
  return out;
}

function limitsOf(device: GPUDevice): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of COMPUTE_LIMITS) out[name] = device.limits[name];
  return out;
}

/** Dawn's message without its trailing " - While …" context lines. */
function cleanPipelineMessage(message: string): string {
  return message
    .split("\n")
    .filter((l) => l.trim() !== "" && !/^\s*- While /.test(l))
    .join("\n")
    .trim();
}
