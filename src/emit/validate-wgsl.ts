/// <reference types="@webgpu/types" preserve="true" />
/**
 * WGSL validation with Tint through Dawn's null backend (npm `webgpu`): no GPU is needed. Each
 * shader is compiled as a module and then as a compute pipeline with entry point `main`, which
 * catches entry-point errors (a missing `main`, bad workgroup size) that module compilation does not.
 */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { checkWorkgroupLimits, workgroupFacts, type WorkgroupFacts } from "./wgsl-limits.js";

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
 * Validates WGSL with Tint in this thread. One device per distinct feature set, requested with
 * the null adapter's highest limits. Call dispose() when done so Dawn lets the process exit.
 */
let sharedGpu: GPU | undefined;

export class TintSession {
  private readonly devices = new Map<string, Promise<GPUDevice>>();

  private constructor(
    /** Held for the session's lifetime: Dawn tears its instance down when the GPU object is collected. */
    private readonly gpu: GPU,
    /** Used for its feature list only. */
    private readonly adapter: GPUAdapter,
  ) {}

  /** Starts Dawn's null backend (once per thread) and gets an adapter. */
  static async create(): Promise<TintSession> {
    // Dawn is loaded here, not with this module: a compilation that validates on worker threads
    // starts them (WgslValidator.create) without loading Dawn in its own thread.
    const { create, globals } = await import("webgpu");
    // Dawn's binding reads GPUBufferUsage and friends from globalThis; installing them is idempotent.
    Object.assign(globalThis, globals);
    // One Dawn instance for the whole thread, never released: Dawn tears an instance down when its
    // GPU object is garbage-collected, and doing that while other instances live has been seen to
    // deadlock or crash the process.
    sharedGpu ??= create(["backend=null"]);
    const gpu = sharedGpu;
    const adapter = await gpu.requestAdapter();
    if (!adapter) throw new Error("Dawn's null backend offered no adapter; WGSL cannot be validated");
    return new TintSession(gpu, adapter);
  }

  /**
   * Problems in `wgsl` compiled on a device with `features` (those among shader-f16 and subgroups that
   * the adapter has). Tint's errors and warnings come with their line and column; if the module is
   * clean, a failed compute pipeline (entry point `main`, layout "auto") is reported at line 0.
   */
  async validate(wgsl: string, features: readonly string[]): Promise<WgslProblem[]> {
    return (await this.check(wgsl, features, false)).problems;
  }

  /** validate(), with the shader's workgroup facts (workgroupFacts) when `withFacts`. */
  async check(wgsl: string, features: readonly string[], withFacts: boolean): Promise<Checked> {
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
    const invalid = problems.some((p) => p.severity === "error");
    if (invalid && !withFacts) return { problems };
    // Found for the pipeline's check below in any case.
    const facts = workgroupFacts(wgsl);
    const answer = withFacts ? { problems, facts } : { problems };
    if (invalid) return answer;
    // Workgroup limits belong to the profile (checked by checkWorkgroupLimits); the null adapter's
    // own limits are small, so a shader known to exceed them is not compiled as a pipeline here.
    if (checkWorkgroupLimits(facts, limitsOf(device)).length > 0) return answer;
    try {
      await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } });
    } catch (err) {
      const message = cleanPipelineMessage(err instanceof Error ? err.message : String(err));
      const aboutLimits = facts.unresolved.length > 0 && /exceed|maximum|limit/i.test(message);
      problems.push({ line: 0, column: 0, length: 0, message, severity: aboutLimits ? "warning" : "error" });
    }
    return answer;
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

  /** The features the adapter offers, among those it can enable. */
  supportedFeatures(): string[] {
    return SHADER_FEATURES.filter((f) => this.adapter.features.has(f));
  }
}

/** Tint's problems in a shader, and the shader's workgroup facts when they were asked for. */
export interface Checked {
  readonly problems: WgslProblem[];
  readonly facts?: WorkgroupFacts;
}

/** A request to a validation worker, and its answer. */
export interface WorkerRequest {
  readonly id: number;
  readonly wgsl: string;
  readonly features: readonly string[];
  /** Whether to answer with the shader's workgroup facts too (found for the pipeline's check, so that the main thread need not find them again). */
  readonly withFacts: boolean;
  /**
   * One Int32 shared with the requesting thread: the worker validates only after changing it from
   * 0 to 1 (Atomics.compareExchange); when the requesting thread took the request first (it set
   * 2, see WgslValidator.help), the worker answers `skipped`.
   */
  readonly claim: SharedArrayBuffer;
}
export type WorkerAnswer =
  | { readonly ready: true; readonly features: readonly string[] }
  | { readonly id: number; readonly problems: readonly WgslProblem[]; readonly facts?: WorkgroupFacts }
  | { readonly id: number; readonly skipped: true }
  | { readonly id: number; readonly error: string };

/** The worker script (compiled next to this module; absent when running from TypeScript sources, e.g. in tests). */
const WORKER_URL = new URL("./validate-worker.js", import.meta.url);

/** A request sent to a worker and not answered yet, with how to settle it. */
interface OpenRequest {
  readonly wgsl: string;
  readonly features: readonly string[];
  readonly withFacts: boolean;
  /** 0 while no thread has taken it, 1 once the worker has, 2 once help() has. */
  readonly claim: Int32Array;
  readonly resolve: (c: Checked) => void;
  readonly reject: (e: Error) => void;
}

/** One validation worker: a thread with its own Dawn, kept for the process and unreferenced while idle. */
class TintWorker {
  readonly ready: Promise<readonly string[]>;
  private readonly pending = new Map<number, { resolve: (c: Checked | undefined) => void; reject: (e: Error) => void }>();
  private next = 0;
  private failure?: Error;

  constructor(private readonly worker: Worker) {
    worker.unref();
    let onReady!: (features: readonly string[]) => void;
    let onFail!: (e: Error) => void;
    this.ready = new Promise((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    // The promise is awaited by create(); a failure before then must not be unhandled.
    this.ready.catch(() => undefined);
    worker.on("message", (m: WorkerAnswer) => {
      if ("ready" in m) {
        // Unreferenced again once running: an unref() before the thread is online does not last.
        if (this.pending.size === 0) worker.unref();
        return onReady(m.features);
      }
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) worker.unref();
      if ("error" in m) p.reject(new Error(`WGSL validation failed in the validation worker: ${m.error}`));
      else if ("skipped" in m) p.resolve(undefined);
      else p.resolve({ problems: [...m.problems], ...(m.facts ? { facts: m.facts } : {}) });
    });
    const fail = (err: Error): void => {
      // A later validator starts new workers.
      workerPool = undefined;
      this.failure = err;
      onFail(err);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`the WGSL validation worker exited (code ${code})`)));
  }

  /** Requests in flight. */
  get load(): number {
    return this.pending.size;
  }

  /** Tint's answer, or undefined when the requesting thread claimed the request first (see WorkerRequest.claim). */
  check(wgsl: string, features: readonly string[], withFacts: boolean, claim: SharedArrayBuffer): Promise<Checked | undefined> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Referenced while it has work, so that the process waits for the answer.
      this.worker.ref();
      this.worker.postMessage({ id, wgsl, features, withFacts, claim } satisfies WorkerRequest);
    });
  }
}

/** The process's validation workers (started on first use; Dawn instances are never torn down, see TintSession). */
let workerPool: Promise<TintWorker[]> | undefined;

async function startWorkers(): Promise<TintWorker[]> {
  // One core is left to the main thread, which renders while the workers validate: on 2 cores one
  // worker beside it took less CPU and less wall time than two competing with it (docs/performance.md).
  const count = Math.max(1, Math.min(4, availableParallelism() - 1));
  // No Node options of the calling process: the script needs none, and some (`--input-type` of a
  // `node -e` caller, loaders) would stop a worker started from a file.
  const workers = Array.from({ length: count }, () => new TintWorker(new Worker(WORKER_URL, { execArgv: [] })));
  await Promise.all(workers.map((w) => w.ready));
  return workers;
}

/**
 * Validates WGSL with Tint. From the compiled package, on worker threads (one per core but one, at
 * least one and at most four, each with its own Dawn), so that validation runs beside rendering: a
 * compilation starts a validation with prefetch() as soon as a shader is rendered and takes its
 * result with validate(). From the TypeScript sources (tests), in this thread. Call dispose() when done.
 */
export class WgslValidator {
  /** Validations started by prefetch() and not yet taken by validate(), by features and text. */
  private readonly started = new Map<string, Promise<WgslProblem[]>>();
  /** Requests sent to the workers and not answered yet, in the order they were sent (see help()). */
  private readonly open = new Set<OpenRequest>();
  /** Dawn in this thread, for help(). */
  private helper?: Promise<TintSession>;

  private constructor(
    private readonly workers: readonly TintWorker[] | undefined,
    private readonly session: TintSession | undefined,
    private readonly features: readonly string[],
  ) {}

  /** Starts the validation workers (once per process), or Dawn in this thread when there is no compiled worker script. */
  static async create(): Promise<WgslValidator> {
    if (existsSync(fileURLToPath(WORKER_URL))) {
      workerPool ??= startWorkers();
      try {
        const workers = await workerPool;
        return new WgslValidator(workers, undefined, await workers[0].ready);
      } catch (err) {
        workerPool = undefined;
        throw err;
      }
    }
    const session = await TintSession.create();
    return new WgslValidator(undefined, session, session.supportedFeatures());
  }

  /**
   * Problems in `wgsl` compiled on a device with `features` (those among shader-f16 and subgroups that
   * the adapter has). Tint's errors and warnings come with their line and column; if the module is
   * clean, a failed compute pipeline (entry point `main`, layout "auto") is reported at line 0.
   */
  validate(wgsl: string, features: readonly string[]): Promise<WgslProblem[]> {
    const key = `${features.join(",")}\n${wgsl}`;
    const started = this.started.get(key);
    if (started) {
      this.started.delete(key);
      return started;
    }
    return this.run(wgsl, features, false).then((c) => c.problems);
  }

  /**
   * Starts validating `wgsl` now; the next validate() of the same text and features takes the
   * result. With `withFacts`, the shader's workgroup facts (as workgroupFacts finds them: the
   * validation finds them for its pipeline check) are returned too (undefined when the validation is
   * already started, or fails).
   */
  prefetch(wgsl: string, features: readonly string[], withFacts = false): Promise<WorkgroupFacts | undefined> | undefined {
    const key = `${features.join(",")}\n${wgsl}`;
    if (this.started.has(key)) return undefined;
    const p = this.run(wgsl, features, withFacts);
    const problems = p.then((c) => c.problems);
    problems.catch(() => undefined); // reported by the validate() that takes it
    this.started.set(key, problems);
    return withFacts
      ? p.then(
          (c) => c.facts,
          () => undefined,
        )
      : undefined;
  }

  /** Forgets validations started by prefetch() that no validate() took. */
  forgetPrefetched(): void {
    this.started.clear();
  }

  private run(wgsl: string, features: readonly string[], withFacts: boolean): Promise<Checked> {
    if (this.session) return this.session.check(wgsl, features, withFacts);
    const workers = this.workers!;
    let least = workers[0];
    for (const w of workers) if (w.load < least.load) least = w;
    const claim = new SharedArrayBuffer(4);
    return new Promise((resolve, reject) => {
      const request: OpenRequest = { wgsl, features, withFacts, claim: new Int32Array(claim), resolve, reject };
      this.open.add(request);
      least.check(wgsl, features, withFacts, claim).then(
        (checked) => {
          // Undefined: help() claimed it first, and settles it.
          if (!checked) return;
          this.open.delete(request);
          resolve(checked);
        },
        (err: unknown) => {
          this.open.delete(request);
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }

  /**
   * Validates, in this thread, requests sent to the workers that no worker has started yet, latest
   * first (the workers take them first to last), until none is left: for a caller that has nothing
   * else to do until the answers come (a compilation once every shader is rendered), so that the
   * workers' backlog is shared with this thread's core. A request is validated once, by whichever
   * thread claims it first (WorkerRequest.claim); Tint's answer is the same in any thread. Dawn is
   * started in this thread for it only when `minimum` requests are waiting.
   */
  async help(minimum = 4): Promise<void> {
    if (!this.workers) return;
    const unclaimed = (): OpenRequest[] => [...this.open].filter((r) => Atomics.load(r.claim, 0) === 0);
    if (unclaimed().length < minimum) return;
    const session = await (this.helper ??= TintSession.create());
    for (;;) {
      const request = unclaimed().pop();
      if (!request) return;
      if (Atomics.compareExchange(request.claim, 0, 0, 2) !== 0) continue;
      this.open.delete(request);
      try {
        request.resolve(await session.check(request.wgsl, request.features, request.withFacts));
      } catch (err) {
        request.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  /** Releases what this validator holds (the workers stay, unreferenced, for the process's next validator). */
  dispose(): void {
    this.started.clear();
    this.session?.dispose();
    void this.helper?.then(
      (h) => h.dispose(),
      () => undefined,
    );
  }

  /** The features the validator's adapter offers, among those it can enable. */
  supportedFeatures(): string[] {
    return [...this.features];
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
