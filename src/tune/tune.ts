/// <reference types="@webgpu/types" preserve="true" />
/**
 * `kernelc tune`: for one profile, times every candidate tunable setting of each kernel on the
 * config's call shapes on a real adapter, through the compiler (compile()) and the runtime
 * (executePlan), and returns the tune file with the winners and their provenance.
 *
 * Method: each call shape's tensors are filled once and shared by every candidate; each candidate
 * is compiled with its pins, planned (the interpreter) and its pipelines created; the GPU is heated
 * with buffer copies and then kept busy with the candidates' runs back to back, so that its clocks
 * are up; then rounds interleave the candidates (the order rotates every round) and each round
 * times a batch of executions, submitted right after a batch of untimed ones, with timestamp
 * queries (or the wall clock, with a warning, on an adapter without them). With a per-call key
 * (`by`), tunables that shape the shader are chosen once and the others per call (bestRule). A candidate's time on a call is the median over rounds; its score is
 * the geometric mean over the calls. Measurements are cached by what determines them (adapter,
 * shader text, plan, call), so a re-run measures only what changed and an interrupted run loses
 * nothing already measured.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { compile } from "../api/compile.js";
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import { sha256Hex } from "../core/hash.js";
import { readFailure, readInputFile } from "../core/read-file.js";
import { KERNELC_VERSION } from "../core/version.js";
import { byteRange, type ByteRange, type Call, type Plan } from "../model/plan.js";
import type { LoadedConfig, TuneCallConfig, TuneFill } from "../plan/config.js";
import { ELEMENT_BYTES } from "../plan/dispatch-model.js";
import { interpretPlan, KernelCallError, selectVariant } from "../plan/interpret.js";
import type { KernelModel } from "../plan/dispatch-model.js";
import { findRanges, geomean, ruleProblem, shaderTunables, type FoundRange } from "../plan/tuned-rule.js";
import { requiredLimitsFor, type Profile } from "../plan/profiles.js";
import type { Manifest } from "../model/plan.js";
import { compareWithAdapter } from "../runtime/device.js";
import type { TunableSpec } from "../model/spec.js";
import { emptyTuneFile, type PerCallRecord, type TuneFile, type TuneRecord } from "../plan/tune-file.js";
import { executePlan } from "../runtime/execute.js";
import { f32ToF16 } from "../runtime/f16.js";
import { BufferUsage, MapMode } from "../runtime/gpu-constants.js";
import { PipelineCache } from "../runtime/pipeline-cache.js";

/** The most candidate settings one kernel may have (the product of its tunables' value lists). */
export const MAX_TUNE_CANDIDATES = 256;

/** Measured milliseconds, by measurement key (see measurementKey). */
export type MeasurementCache = Map<string, number>;

/** What tuning needs beyond the config. */
export interface TuneOptions {
  readonly profile: string;
  /** Kernels to tune (default: every kernel the config's `tune` section names). */
  readonly kernels?: readonly string[];
  readonly adapter: GPUAdapter;
  /** Rounds of interleaved timing (default 7). */
  readonly repeats?: number;
  /** Previous measurements; new ones are added to it (and `onMeasured` is called) as they are made. */
  readonly cache?: MeasurementCache;
  readonly onMeasured?: (cache: MeasurementCache) => void;
  readonly onProgress?: (step: string) => void;
  /** The tune file to update (default: the project's, or an empty one). */
  readonly previous?: TuneFile;
  /** Today's date as YYYY-MM-DD (recorded as provenance). */
  readonly date: string;
}

/** What tuning produced. */
export interface TuneResult {
  readonly tune: TuneFile;
  readonly diagnostics: readonly Diagnostic[];
  readonly warnings: readonly string[];
}

/**
 * Every candidate pin set of a kernel: the cartesian product of each tunable's candidate values (the
 * config's list, else the spec's `default` then its `values`, the order the build tries them), in
 * a fixed order.
 */
export function candidatePins(
  tunables: readonly TunableSpec[],
  override: Readonly<Record<string, readonly number[]>> | undefined,
  pinned: ReadonlySet<string>,
): Record<string, number>[] {
  let sets: Record<string, number>[] = [{}];
  for (const t of [...tunables].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const name = t.name;
    if (pinned.has(name)) continue;
    const values = [...new Set(override && Object.hasOwn(override, name) ? override[name]! : [t.default, ...(t.values ?? [])])];
    if (values.length <= 1 && !(override && Object.hasOwn(override, name))) continue;
    sets = sets.flatMap((s) => values.map((v) => ({ ...s, [name]: v })));
  }
  return sets;
}

/** Random contents are written as one repeated chunk of this many bytes (timing does not need fresh values everywhere). */
const RANDOM_CHUNK_BYTES = 8 << 20;

/** How an input is filled: its `data` entry, if the call has one. */
function fillOf(call: TuneCallConfig, id: string): TuneFill | undefined {
  return call.data && Object.hasOwn(call.data, id) ? call.data[id] : undefined;
}

/** Whether a tensor gets random contents (then a repeated chunk is enough). */
function isRandom(fill: TuneFill | undefined, dtype: string): boolean {
  if (fill === undefined) return dtype === "float16" || dtype === "float32";
  return !Array.isArray(fill) && "fill" in fill && fill.fill === "random";
}

/** The size limit of a tune call's data file (a CSR layout of a large matrix fits). */
const MAX_DATA_FILE_BYTES = 256 * 1024 * 1024;

/**
 * Replaces `{"file": …}` fills by the numbers of that JSON file. The file must be inside the
 * project (symbolic links resolved) and hold an array of finite numbers.
 */
export function resolveDataFiles(root: string, call: TuneCallConfig): TuneCallConfig | string {
  if (!call.data) return call;
  const data: Record<string, TuneFill> = {};
  const realRoot = fs.realpathSync(root);
  for (const [id, fill] of Object.entries(call.data)) {
    if (Array.isArray(fill) || !("file" in fill)) {
      data[id] = fill;
      continue;
    }
    let real: string;
    try {
      real = fs.realpathSync(path.resolve(root, fill.file));
    } catch (err) {
      return `data file ${fill.file} of input ${id}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
    }
    if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return `data file ${fill.file} of input ${id} is outside the project`;
    let text: string;
    try {
      // Never readFileSync: a FIFO would hang, a device fill the memory.
      text = readInputFile(real, MAX_DATA_FILE_BYTES);
    } catch (err) {
      return `data file ${fill.file} of input ${id} cannot be read: ${readFailure(err)}`;
    }
    let values: unknown;
    try {
      values = JSON.parse(text);
    } catch (err) {
      return `data file ${fill.file} of input ${id} is not JSON: ${(err as Error).message}`;
    }
    if (!Array.isArray(values) || values.length === 0 || !values.every((v) => typeof v === "number" && Number.isFinite(v)))
      return `data file ${fill.file} of input ${id} must hold a non-empty array of finite numbers`;
    data[id] = values as number[];
  }
  return { ...call, data };
}

/** The first `count` elements of one input or output, filled as the call's `data` says (seeded random values by default). */
export function tensorBytes(
  call: TuneCallConfig,
  id: string,
  desc: { readonly shape: readonly number[]; readonly dtype: string },
  seed: number,
  count: number,
): Uint8Array<ArrayBuffer> {
  const size = ELEMENT_BYTES[desc.dtype] ?? 4;
  const fill = fillOf(call, id);
  let state = seed >>> 0 || 1;
  const random = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) / 2 ** 32) * 2 - 1;
  };
  const value = (i: number): number => {
    if (Array.isArray(fill)) return fill[i % fill.length]!;
    const f = fill !== undefined && "fill" in fill ? fill : undefined;
    if (f?.fill === "iota") return i;
    if (f?.fill === "constant") return f.value ?? 0;
    // Random bools are true and false alike (any nonzero value is true).
    if (f?.fill === "random") return desc.dtype === "bool" ? Number(random() > 0) : random();
    if (desc.dtype === "float16" || desc.dtype === "float32") return random();
    return 0;
  };
  const buf: ArrayBuffer = new ArrayBuffer(Math.max(4, Math.ceil((count * size) / 4) * 4));
  const view = new DataView(buf);
  for (let i = 0; i < count; i++) {
    const v = value(i);
    if (desc.dtype === "float16") view.setUint16(i * 2, f32ToF16(v), true);
    else if (desc.dtype === "float32") view.setFloat32(i * 4, v, true);
    else if (desc.dtype === "bool") view.setUint8(i, v ? 1 : 0);
    else if (desc.dtype === "uint32") view.setUint32(i * 4, Math.trunc(v) >>> 0, true);
    else view.setInt32(i * 4, Math.trunc(v), true);
  }
  return new Uint8Array(buf);
}

/** The timing method's version, part of every measurement key: a change of method re-measures. */
const TIMING_METHOD = "one-pass-4";

/** What a measurement depends on: the timing method, the adapter, the plan (workgroups, ranges, uniforms), the shader texts and the call. */
function measurementKey(adapter: string, plan: Plan, shaders: ReadonlyMap<string, string>, call: TuneCallConfig): string {
  const shaderText = plan.passes.map((p) => shaders.get(p.shader) ?? "").join("\0");
  return sha256Hex([TIMING_METHOD, adapter, legacyPlanText(plan), shaderText, JSON.stringify(call)].join("\0"));
}

/**
 * A plan as JSON in the layout plans had when measurement keys were first made (a resource object
 * per binding, with the tensor or scratch id, offset and size, a uniform as its bytes in hex; the
 * workgroups an array; the scratch list of { id, size }), so the keys of earlier measurements still match.
 */
function legacyPlanText(plan: Plan): string {
  return JSON.stringify({
    kernel: plan.kernel,
    variant: plan.variant,
    passes: plan.passes.map((p) => ({
      id: p.id,
      name: p.name,
      shader: p.shader,
      entryPoint: p.entryPoint,
      bindings: p.bindings.map((b) => ({ binding: b.binding, name: b.name, type: b.type })),
      resources: p.bindings.map((b, i) => {
        const r = p.resources[i]!;
        if (b.kind === "uniform")
          return { kind: "uniform", bytes: Buffer.from(new Uint32Array(r as readonly number[]).buffer).toString("hex") };
        const { offset, size } = byteRange(r as number | ByteRange);
        return b.kind === "scratch" ? { kind: b.kind, scratch: b.scratch, offset, size } : { kind: b.kind, tensor: b.tensor, offset, size };
      }),
      workgroups: [p.x, p.y, p.z],
    })),
    scratch: Object.entries(plan.scratch).map(([id, size]) => ({ id, size })),
    outputShapes: plan.outputShapes,
  });
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** One candidate ready to run on one call. */
interface Runnable {
  readonly plan: Plan;
  readonly cache: PipelineCache;
  readonly key: string;
  samples: number[];
}

/** Times `batch` executions of a plan; returns milliseconds per execution. */
async function timeBatch(
  device: GPUDevice,
  r: Runnable,
  tensors: Record<string, GPUBuffer>,
  batch: number,
  querySet: GPUQuerySet | undefined,
): Promise<number> {
  if (!querySet) {
    await device.queue.onSubmittedWorkDone();
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) await executePlan(device, r.cache, r.plan, tensors);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / batch;
  }
  // The plan as the runtime runs it: its passes are dispatches of one compute pass, timed at that
  // pass's beginning and end.
  for (let i = 0; i < batch; i++) {
    await executePlan(device, r.cache, r.plan, tensors, {
      planTimestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 },
    });
  }
  const resolve = device.createBuffer({ size: 16 * batch, usage: BufferUsage.QUERY_RESOLVE | BufferUsage.COPY_SRC });
  const read = device.createBuffer({ size: 16 * batch, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.resolveQuerySet(querySet, 0, 2 * batch, resolve, 0);
  enc.copyBufferToBuffer(resolve, 0, read, 0, 16 * batch);
  device.queue.submit([enc.finish()]);
  await read.mapAsync(MapMode.READ);
  const stamps = new BigInt64Array(read.getMappedRange().slice(0));
  read.unmap();
  resolve.destroy();
  read.destroy();
  const per: number[] = [];
  for (let i = 0; i < batch; i++) per.push(Number(stamps[2 * i + 1]! - stamps[2 * i]!) / 1e6);
  return median(per);
}

/** Tunes the kernels of the config's `tune` section on one profile. */
export async function tuneProfile(loaded: LoadedConfig, options: TuneOptions): Promise<TuneResult> {
  const diagnostics: Diagnostic[] = [];
  const warnings: string[] = [];
  const progress = options.onProgress ?? (() => {});
  const cache = options.cache ?? new Map<string, number>();
  const repeats = options.repeats ?? 7;
  const tune: TuneFile = structuredClone(options.previous ?? loaded.tuneFile?.tune ?? emptyTuneFile(KERNELC_VERSION));
  const profile = loaded.allProfiles.find((p) => p.name === options.profile);
  const configFile = loaded.file ? { file: loaded.file } : undefined;
  if (!profile) {
    diagnostics.push(
      makeDiagnostic("unknown_profile", `unknown profile \`${options.profile}\``, undefined, {
        hint: `known profiles: ${loaded.allProfiles.map((p) => p.name).join(", ")}`,
      }),
    );
    return { tune, diagnostics, warnings };
  }
  const kernels = options.kernels ?? Object.keys(loaded.config.tune).sort();
  if (kernels.length === 0) {
    diagnostics.push(
      makeDiagnostic("tune_unavailable", "the config has no `tune` section: nothing to measure", configFile, {
        hint: 'add e.g. "tune": {"MyKernel": {"calls": [{"name": "small", "inputs": {"xT": {"shape": [4096], "dtype": "float32"}}}]}} to kernelc.config.json',
      }),
    );
    return { tune, diagnostics, warnings };
  }
  const requiredLimits = requiredLimitsFor(profile) as Record<string, number>;
  const mismatch = compareWithAdapter(options.adapter, { requiredLimits, requiredFeatures: profile.features } as unknown as Manifest);
  if (mismatch.limits.length > 0 || mismatch.features.length > 0) {
    const lacks = [
      ...mismatch.limits.map((l) => `${l.name} (needs ${l.asked}, has ${l.has ?? "none"})`),
      ...mismatch.features.map((f) => `feature ${f}`),
    ];
    diagnostics.push(
      makeDiagnostic(
        "tune_unavailable",
        `this adapter (${options.adapter.info.description || options.adapter.info.vendor}) cannot run profile ${profile.name}: it lacks ${lacks.join(", ")}`,
        undefined,
        { hint: "tune a profile this adapter can run (see `kernelc profiles`), on the device class the profile is for" },
      ),
    );
    return { tune, diagnostics, warnings };
  }
  const features = [...profile.features, ...(options.adapter.features.has("timestamp-query") ? ["timestamp-query"] : [])];
  const device = await options.adapter.requestDevice({
    label: `kernelc tune ${profile.name}`,
    requiredFeatures: features as GPUFeatureName[],
    requiredLimits,
  });
  const querySet = features.includes("timestamp-query") ? device.createQuerySet({ type: "timestamp", count: 2 * 64 }) : undefined;
  if (!querySet) warnings.push("the adapter has no timestamp-query feature: timing with the wall clock (less precise for short kernels)");
  const info = options.adapter.info;
  const adapterText = `${info.vendor}|${info.architecture}|${info.device}|${info.description}`;
  try {
    for (const kernel of kernels) {
      const section = Object.hasOwn(loaded.config.tune, kernel) ? loaded.config.tune[kernel]! : undefined;
      if (!section) {
        diagnostics.push(
          makeDiagnostic("tune_unavailable", `the config's \`tune\` section has no entry for kernel \`${kernel}\``, configFile, {
            hint: `add "tune": {"${kernel}": {"calls": [...]}}`,
          }),
        );
        continue;
      }
      const record = await tuneKernel(loaded, profile, kernel, section.calls, section.tunables, section.by, {
        device,
        querySet,
        repeats,
        cache,
        adapterText,
        progress,
        onMeasured: options.onMeasured,
        diagnostics,
        warnings,
      });
      if (!record) continue;
      tune.profiles[profile.name] ??= Object.create(null);
      tune.profiles[profile.name]![kernel] = {
        pins: record.winner.pins,
        ...(record.perCall ? { perCall: record.perCall } : {}),
        measured: {
          adapter: { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description },
          driver: info.description,
          kernelc: KERNELC_VERSION,
          date: options.date,
          timer: querySet ? "timestamp-query" : "wall-clock",
          repeats,
          calls: record.calls,
          candidates: record.candidates,
          winner: record.winner,
          table: record.table,
          ...(record.runnerUp
            ? { runnerUp: record.runnerUp, margin: Number((record.runnerUp.score / Math.max(record.winner.score, 1e-12)).toFixed(4)) }
            : {}),
        },
      };
    }
  } finally {
    querySet?.destroy();
    device.destroy();
  }
  tune.generatedBy = `kernelc ${KERNELC_VERSION}`;
  return { tune, diagnostics, warnings };
}

interface KernelTuneContext {
  readonly device: GPUDevice;
  readonly querySet: GPUQuerySet | undefined;
  readonly repeats: number;
  readonly cache: MeasurementCache;
  readonly adapterText: string;
  readonly progress: (step: string) => void;
  readonly onMeasured: ((cache: MeasurementCache) => void) | undefined;
  readonly diagnostics: Diagnostic[];
  readonly warnings: string[];
}

type Score = TuneRecord["measured"]["winner"];

async function tuneKernel(
  loaded: LoadedConfig,
  profile: Profile,
  kernel: string,
  rawCalls: readonly TuneCallConfig[],
  override: Readonly<Record<string, readonly number[]>> | undefined,
  by: string | undefined,
  ctx: KernelTuneContext,
): Promise<{ winner: Score; runnerUp?: Score; table: Score[]; perCall?: PerCallRecord; candidates: number; calls: string[] } | undefined> {
  const configFile = loaded.file ? { file: loaded.file, pointer: `/tune/${kernel}` } : undefined;
  const resolved: TuneCallConfig[] = [];
  for (const call of rawCalls) {
    const r = resolveDataFiles(loaded.root, call);
    if (typeof r === "string") {
      ctx.diagnostics.push(
        makeDiagnostic("tune_call_invalid", `tune call \`${call.name}\` of ${kernel}: ${r}`, configFile, {
          hint: 'name a JSON file inside the project holding an array of numbers, e.g. {"file": "tune-data/layout.json"}',
        }),
      );
      return undefined;
    }
    resolved.push(r);
  }
  const calls: readonly TuneCallConfig[] = resolved;
  // The spec's tunables: compile once without pins to find the kernel.
  // Without the tune file: a previous per-call rule would hide its tunables from the spec as built.
  const { tuneFile: _previous, ...untuned } = loaded;
  const base = await compile(untuned, { profiles: [profile.name] });
  const baseKernel = base.profiles[0]?.kernels.find((k) => k.model.kernel.spec.name === kernel);
  if (base.diagnostics.some((d) => d.severity === "error") || !baseKernel) {
    ctx.diagnostics.push(...base.diagnostics.filter((d) => d.severity === "error"));
    if (!baseKernel)
      ctx.diagnostics.push(
        makeDiagnostic("tune_unavailable", `no kernel named \`${kernel}\` was built for profile ${profile.name}`, configFile),
      );
    return undefined;
  }
  const spec = baseKernel.model.kernel.spec;
  const configPins = new Set([
    ...Object.keys(pick(loaded.config.tunables, "*", kernel)),
    ...Object.keys(pick(loaded.config.tunables, profile.name, kernel)),
  ]);
  for (const name of Object.keys(override ?? {})) {
    if (!spec.tunables.some((t) => t.name === name))
      ctx.diagnostics.push(
        makeDiagnostic("tune_call_invalid", `tune.${kernel}.tunables names \`${name}\`, which is not a tunable of ${kernel}`, configFile, {
          hint: `tunables of ${kernel}: ${spec.tunables.map((t) => t.name).join(", ") || "none"}`,
        }),
      );
  }
  const candidates = candidatePins(spec.tunables, override, configPins);
  if (candidates.length > MAX_TUNE_CANDIDATES) {
    ctx.diagnostics.push(
      makeDiagnostic(
        "tune_unavailable",
        `${kernel} has ${candidates.length} candidate settings on ${profile.name}, more than ${MAX_TUNE_CANDIDATES}`,
        configFile,
        { hint: "list fewer values per tunable under tune.<kernel>.tunables" },
      ),
    );
    return undefined;
  }
  // With a per-call key, the tunables that reach shader text (a design choice such as a load
  // distance) are chosen once for the profile; the others may change per call.
  let ruled: readonly string[] | undefined;
  if (by !== undefined && candidates.length > 1) {
    const names = Object.keys(candidates[0]!);
    const shaping = shaderTunables(baseKernel.model.kernel, names);
    ruled = names.filter((n) => !shaping.has(n));
    // The key must exist and not depend on the ruled tunables; with every tunable shaping the
    // shader, the rule over all of them is refused (the message names them).
    const rulePins = ruled.length > 0 ? pinsOf(candidates[0]!, ruled) : candidates[0]!;
    const probe = ruleProblem(baseKernel.model.kernel, { by, cases: [{ upTo: 0, pins: rulePins }, { pins: rulePins }] });
    if (probe)
      ctx.diagnostics.push(
        makeDiagnostic(
          "tune_rule_invalid",
          `tune.${kernel}.by: ${probe.message}`,
          loaded.file ? { file: loaded.file, pointer: `/tune/${kernel}/by` } : undefined,
          {
            hint: probe.hint,
          },
        ),
      );
  }
  if (ctx.diagnostics.some((d) => d.severity === "error")) return undefined;
  // Compile and plan every candidate (without the tune file: a previous per-call rule must not
  // change what a candidate's pins mean). A call no candidate can serve on this profile (no variant,
  // e.g. f16 data on a profile without f16 kernels) is left out with a warning; an invalid call is
  // an error; a candidate that cannot serve a usable call is left out.
  const built: { pins: Record<string, number>; plans: (Plan | KernelCallError)[]; shaders: Map<string, string> }[] = [];
  let keys: (number | undefined)[] | undefined;
  for (const [i, pins] of candidates.entries()) {
    ctx.progress(`${profile.name} ${kernel}: compiling candidate ${i + 1}/${candidates.length}`);
    const byProfile = Object.hasOwn(loaded.config.tunables, profile.name) ? loaded.config.tunables[profile.name]! : {};
    const withPins: LoadedConfig = {
      ...untuned,
      config: {
        ...loaded.config,
        tunables: {
          ...loaded.config.tunables,
          [profile.name]: { ...byProfile, [kernel]: { ...pick(loaded.config.tunables, profile.name, kernel), ...pins } },
        },
      },
    };
    const result = await compile(withPins, { profiles: [profile.name] });
    const model = result.profiles[0]?.kernels.find((k) => k.model.kernel.spec.name === kernel)?.model;
    if (!model || result.diagnostics.some((d) => d.severity === "error")) continue;
    const shaders = new Map<string, string>();
    for (const [file, text] of result.files) if (file.startsWith("shaders/")) shaders.set(file.slice(8, -5), text);
    const plans = calls.map((call) => {
      try {
        return interpretPlan(model, callOf(call));
      } catch (err) {
        if (err instanceof KernelCallError) return err;
        throw err;
      }
    });
    keys ??= by === undefined ? undefined : calls.map((call) => ruleKey(model, call, by));
    built.push({ pins, plans, shaders });
  }
  const usable: number[] = [];
  for (const [c, call] of calls.entries()) {
    const errors = built.map((b) => b.plans[c]).filter((p): p is KernelCallError => p instanceof KernelCallError);
    if (errors.length < built.length) usable.push(c);
    else if (errors.length > 0 && errors.every((e) => e.kind === "no_variant" || e.kind === "missing_shader"))
      ctx.warnings.push(`${profile.name} ${kernel}: call \`${call.name}\` left out: ${errors[0]!.message}`);
    else if (errors.length > 0)
      ctx.diagnostics.push(
        makeDiagnostic(
          "tune_call_invalid",
          `tune call \`${call.name}\` of ${kernel} cannot be planned on ${profile.name}: ${errors[0]!.message}`,
          configFile,
          { hint: "fix the call's shapes, dtypes or attributes (the same form as `kernelc explain --call`)" },
        ),
      );
  }
  if (ctx.diagnostics.some((d) => d.severity === "error")) return undefined;
  const prepared = built
    .filter((b) => usable.every((c) => !(b.plans[c] instanceof KernelCallError)))
    .map((b) => ({ pins: b.pins, plans: usable.map((c) => b.plans[c] as Plan), shaders: b.shaders }));
  const usedCalls = usable.map((c) => calls[c]!);
  if (prepared.length === 0 || usedCalls.length === 0) {
    ctx.diagnostics.push(
      makeDiagnostic(
        "tune_unavailable",
        `no candidate setting of ${kernel} builds and plans the tune calls on ${profile.name}`,
        configFile,
        { hint: "add call shapes this profile's variants serve (see `kernelc explain`)" },
      ),
    );
    return undefined;
  }
  const perCall: number[][] = prepared.map(() => []);
  for (const [c, call] of usedCalls.entries()) {
    const tensors = allocateTensors(
      ctx.device,
      call,
      c,
      prepared.map((p) => p.plans[c]!),
    );
    try {
      const runnables: Runnable[] = prepared.map((p) => ({
        plan: p.plans[c]!,
        cache: new PipelineCache(ctx.device, (id) => p.shaders.get(id) ?? ""),
        key: measurementKey(ctx.adapterText, p.plans[c]!, p.shaders, call),
        samples: [],
      }));
      const todo = runnables.filter((r) => !ctx.cache.has(r.key));
      if (todo.length > 0) await measure(ctx, todo, tensors, `${profile.name} ${kernel} ${call.name}`);
      runnables.forEach((r, i) => perCall[i]!.push(ctx.cache.get(r.key)!));
    } finally {
      for (const b of Object.values(tensors)) b.destroy();
    }
  }
  const scored: Score[] = prepared.map((p, i) => ({
    pins: p.pins,
    ms: perCall[i]!.map((x) => Number(x.toPrecision(4))),
    score: Number(geomean(perCall[i]!).toPrecision(4)),
  }));
  const order = scored.map((s, i) => [s, i] as const).sort((a, b) => a[0].score - b[0].score || a[1] - b[1]);
  let rule: PerCallRecord | undefined;
  let winner = order[0]![0];
  const usedKeys = keys && usable.map((c) => keys![c]);
  if (by !== undefined && ruled && usedKeys && usedKeys.every((k): k is number => k !== undefined) && scored.length > 1) {
    const best = bestRule(usedKeys, scored, ruled);
    winner = best.winner;
    if (best.ranges.length > 1)
      rule = {
        by,
        cases: best.ranges.map((r) => ({
          ...(r.upTo !== undefined ? { upTo: r.upTo } : {}),
          pins: pinsOf(best.table[r.winner]!.pins, ruled!),
          calls: r.calls.map((c) => usedCalls[c]!.name),
          ms: r.calls.map((c) => best.table[r.winner]!.ms[c]!),
        })),
      };
  }
  const runnerUp = order.find(([s]) => s !== winner)?.[0];
  return {
    ...(rule ? { perCall: rule } : {}),
    winner,
    ...(runnerUp ? { runnerUp } : {}),
    table: scored,
    candidates: prepared.length,
    calls: usedCalls.map((c) => c.name),
  };
}

/** The values of `names` in a candidate's pins. */
function pinsOf(pins: Readonly<Record<string, number>>, names: readonly string[]): Record<string, number> {
  return Object.fromEntries(names.map((n) => [n, pins[n]!]));
}

/**
 * The per-call choice: candidates grouped by their values of the tunables a rule cannot set (those
 * that shape the shader: one group when there are none), each group cut into ranges of the key
 * (findRanges), and the group whose ranges' winners give the lowest geometric mean over the calls.
 * Returns that group's candidates (`table`), its ranges (winners index `table`) and its best single
 * setting (`winner`: the record's pins, which carry the group's shader-shaping values).
 */
export function bestRule(
  keys: readonly number[],
  scored: readonly Score[],
  ruled: readonly string[],
): { table: Score[]; ranges: FoundRange[]; winner: Score } {
  const groups = new Map<string, Score[]>();
  for (const s of scored) {
    const id = JSON.stringify(
      Object.keys(s.pins)
        .filter((n) => !ruled.includes(n))
        .sort()
        .map((n) => [n, s.pins[n]]),
    );
    const g = groups.get(id);
    if (g) g.push(s);
    else groups.set(id, [s]);
  }
  let best: { table: Score[]; ranges: FoundRange[]; winner: Score; score: number } | undefined;
  for (const table of groups.values()) {
    const ranges = findRanges(keys, table, RULE_TOLERANCE);
    const perCall = keys.map((_, c) => table[ranges.find((r) => r.calls.includes(c))!.winner]!.ms[c]!);
    const score = geomean(perCall);
    if (!best || score < best.score) {
      const winner = [...table].sort((a, b) => a.score - b.score)[0]!;
      best = { table, ranges, winner, score };
    }
  }
  return best!;
}

/**
 * How much slower than a call's fastest candidate a range's single winner may be on that call
 * (2%, about the spread of repeated medians on the H200) before the call starts a new range.
 */
export const RULE_TOLERANCE = 0.02;

/** The value of the rule's key (a top-level derive entry) for one tune call, or undefined when the call does not evaluate it. */
function ruleKey(model: KernelModel, call: TuneCallConfig, by: string): number | undefined {
  try {
    const v = selectVariant(model, callOf(call)).topEnv.derive(by);
    return typeof v === "number" && Number.isFinite(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function pick(t: LoadedConfig["config"]["tunables"], profile: string, kernel: string): Record<string, number> {
  const byProfile = Object.hasOwn(t, profile) ? t[profile]! : {};
  return Object.hasOwn(byProfile, kernel) ? { ...byProfile[kernel] } : {};
}

function callOf(call: TuneCallConfig): Call {
  return { inputs: call.inputs, ...(call.outputs ? { outputs: call.outputs } : {}), ...(call.attrs ? { attrs: call.attrs } : {}) };
}

/**
 * The call's tensors, filled per the call's `data` (seeded random by default), and a zeroed buffer
 * for every other tensor the plans bind: an output the call leaves out is planned with its computed
 * shape (plan.outputShapes), and its buffer is sized from the byte ranges the plans bind.
 */
function allocateTensors(device: GPUDevice, call: TuneCallConfig, seed: number, plans: readonly Plan[]): Record<string, GPUBuffer> {
  const out: Record<string, GPUBuffer> = {};
  const all = [...Object.entries(call.inputs), ...Object.entries(call.outputs ?? {})];
  for (const [i, [id, desc]] of all.entries()) {
    if (Object.hasOwn(out, id)) continue;
    const count = desc.shape.reduce((a, b) => a * b, 1);
    const size = ELEMENT_BYTES[desc.dtype] ?? 4;
    const total = Math.max(4, Math.ceil((count * size) / 4) * 4);
    const chunkCount = isRandom(fillOf(call, id), desc.dtype) ? Math.min(count, Math.floor(RANDOM_CHUNK_BYTES / size)) : count;
    const bytes = tensorBytes(call, id, desc, 0x9e3779b9 ^ (seed * 131 + i), chunkCount);
    const buffer = device.createBuffer({ size: total, usage: BufferUsage.STORAGE | BufferUsage.COPY_DST | BufferUsage.COPY_SRC });
    for (let o = 0; o < total; o += bytes.byteLength) device.queue.writeBuffer(buffer, o, bytes, 0, Math.min(bytes.byteLength, total - o));
    out[id] = buffer;
  }
  const planned = new Map<string, number>();
  for (const plan of plans)
    for (const pass of plan.passes)
      pass.bindings.forEach((b, i) => {
        const r = pass.resources[i];
        if ((b.kind !== "input" && b.kind !== "output") || Object.hasOwn(out, b.tensor) || r === undefined || Array.isArray(r)) return;
        const { offset, size } = byteRange(r as number | ByteRange);
        planned.set(b.tensor, Math.max(planned.get(b.tensor) ?? 4, offset + Math.ceil(size / 4) * 4));
      });
  for (const [id, size] of [...planned].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    out[id] = device.createBuffer({ size, usage: BufferUsage.STORAGE | BufferUsage.COPY_DST | BufferUsage.COPY_SRC });
  return out;
}

/** Milliseconds of back-to-back runs that warm the GPU up before a call's candidates are timed. */
const WARM_MS = 300;
/** GPU milliseconds a timed batch of one candidate aims at. */
const BATCH_MS = 5;

/** Milliseconds of buffer copies that bring the GPU's clocks up before a call's warm-up. */
const HEAT_MS = 200;

/**
 * Keeps the GPU busy with copies between two buffers (64 MiB, or the device's largest buffer if
 * smaller) for `ms` milliseconds, doubling the copies per submission while one submission takes
 * under 10 ms. A short kernel's own runs cannot do this: the CPU side of each run (bind groups,
 * encoding, submit) takes longer than the GPU work, the GPU idles between runs and its clocks stay
 * low (on an H200 the first call of a tune measured 2x slower than a later one).
 */
async function heatGpu(device: GPUDevice, ms: number): Promise<void> {
  const size = Math.min(64 * 1024 * 1024, device.limits.maxBufferSize) & ~3;
  const a = device.createBuffer({ size, usage: BufferUsage.COPY_SRC | BufferUsage.COPY_DST });
  const b = device.createBuffer({ size, usage: BufferUsage.COPY_SRC | BufferUsage.COPY_DST });
  try {
    const t0 = performance.now();
    for (let per = 1; performance.now() - t0 < ms;) {
      const t1 = performance.now();
      const enc = device.createCommandEncoder();
      for (let i = 0; i < per; i++) enc.copyBufferToBuffer(i % 2 ? b : a, 0, i % 2 ? a : b, 0, size);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      if (performance.now() - t1 < 10) per = Math.min(per * 2, 256);
    }
  } finally {
    a.destroy();
    b.destroy();
  }
}

/**
 * Runs the candidates in turn, submitted back to back (a wait only every 16 runs, so the queue
 * never drains), until `ms` milliseconds have passed and every candidate has run at least 5 times.
 */
async function keepBusy(device: GPUDevice, runnables: readonly Runnable[], tensors: Record<string, GPUBuffer>, ms: number): Promise<void> {
  const t0 = performance.now();
  for (let n = 0; n < 5 * runnables.length || performance.now() - t0 < ms; n++) {
    const r = runnables[n % runnables.length]!;
    await executePlan(device, r.cache, r.plan, tensors);
    if (n % 16 === 15) await device.queue.onSubmittedWorkDone();
  }
  await device.queue.onSubmittedWorkDone();
}

/** Warms every candidate up, then times interleaved rounds; stores each median in the cache. */
async function measure(
  ctx: KernelTuneContext,
  runnables: readonly Runnable[],
  tensors: Record<string, GPUBuffer>,
  what: string,
): Promise<void> {
  const { device, querySet } = ctx;
  // Warm-up: create each candidate's pipelines (one checked run), heat the GPU with copies
  // (HEAT_MS), then keep it busy with back-to-back runs (WARM_MS in all, at least 5 runs per
  // candidate) so that its clocks are up;
  // then size each candidate's batch to about BATCH_MS of GPU time from one timed run. Runs awaited
  // one by one leave the GPU idle between them: on an H200 that kept the clocks low and made the
  // times of a short call up to 3x those of a steady stream, which is what a model's decode loop gives.
  for (const [i, r] of runnables.entries()) {
    ctx.progress(`${what}: warming candidate ${i + 1}/${runnables.length}`);
    await executePlan(device, r.cache, r.plan, tensors, { checkErrors: true });
  }
  await heatGpu(device, HEAT_MS);
  await keepBusy(device, runnables, tensors, WARM_MS);
  const batches: number[] = [];
  for (const r of runnables) {
    const perRun = await timeBatch(device, r, tensors, 1, querySet);
    batches.push(Math.max(1, Math.min(64, Math.round(BATCH_MS / Math.max(perRun, 1e-3)))));
  }
  for (let round = 0; round < ctx.repeats; round++) {
    ctx.progress(`${what}: round ${round + 1}/${ctx.repeats} of ${runnables.length} candidates`);
    for (let k = 0; k < runnables.length; k++) {
      const i = (k + round) % runnables.length;
      // Back-to-back runs of the candidate just before its timed batch, submitted without waiting:
      // the GPU goes from them straight into the batch, with its clocks where the warm-up left them.
      for (let j = 0; j < batches[i]!; j++) await executePlan(device, runnables[i]!.cache, runnables[i]!.plan, tensors);
      runnables[i]!.samples.push(await timeBatch(device, runnables[i]!, tensors, batches[i]!, querySet));
    }
  }
  for (const r of runnables) ctx.cache.set(r.key, median(r.samples));
  ctx.onMeasured?.(ctx.cache);
}
