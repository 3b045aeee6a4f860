/// <reference types="@webgpu/types" />
/**
 * The in-page harness of the browser test (test/browser/attention.test.ts). The test copies
 * examples/vite-app, adds this file as src/browser-test.ts (a second module script of its
 * index.html) and builds the app with Vite and the kernelc plugin, so this module imports the
 * same generated bundle index and runtime as the example's own main.ts.
 *
 * It exposes `window.kernelcBrowserTest`:
 * - `open()`: requests this browser's WebGPU adapter, lets the runtime pick the profile
 *   (chooseProfile, then loadBundle) and reports the adapter and the choice;
 * - `run(request)`: plans one call with the chosen profile's generated dispatcher, fetches the
 *   input tensors from the test's server, poisons the outputs and the scratch buffers, runs the
 *   plan with the runtime's executePlan and PUTs the tensors to read back to the server.
 * Nothing here knows the kernels: the test sends calls and compares the results in Node.
 */
import bundleIndex from "../out/index.js";
import { chooseProfile, executePlan, loadBundle, ScratchPool, type Call, type Plan } from "kernelc/runtime";

/** What `open()` reports. */
export interface OpenResult {
  readonly adapter: {
    readonly features: readonly string[];
    readonly vendor: string;
    readonly architecture: string;
    readonly subgroupMinSize: number | undefined;
    readonly subgroupMaxSize: number | undefined;
    readonly maxComputeInvocationsPerWorkgroup: number;
    readonly maxComputeWorkgroupStorageSize: number;
  };
  /** The bundle index's profiles, in preference order. */
  readonly profiles: readonly string[];
  /** chooseProfile's pick for the adapter. */
  readonly chosen: string | undefined;
  /** The profile loadBundle opened. */
  readonly loaded: string;
  /** The kernels the loaded dispatcher has planners for. */
  readonly kernels: readonly string[];
}

/** One call to run. */
export interface RunRequest {
  readonly kernel: string;
  readonly call: Call;
  /** Input tensor id -> URL (on the test's server) of its bytes. */
  readonly inputs: Readonly<Record<string, string>>;
  /** Output tensor id -> byte size; each output buffer is filled with `poison` before the run. */
  readonly outputs: Readonly<Record<string, number>>;
  /** Tensor ids (inputs or outputs) whose bytes are PUT to `${resultUrl}/${id}` after the run. */
  readonly readBack: readonly string[];
  readonly resultUrl: string;
  /** 32-bit word that fills the outputs. */
  readonly poison: number;
  /** Cycle of 32-bit words that fills every scratch buffer of the plan. */
  readonly scratchPoison: readonly number[];
}

/** What `run()` reports. */
export interface RunResult {
  readonly variant: string;
  readonly passes: readonly string[];
  readonly dispatched: readonly string[];
  /** Uncaptured WebGPU errors the device reported during the run. */
  readonly errors: readonly string[];
  readonly ms: number;
}

declare global {
  interface Window {
    kernelcBrowserTest: { open(): Promise<OpenResult>; run(request: RunRequest): Promise<RunResult> };
  }
}

type Loaded = Awaited<ReturnType<typeof loadBundle<typeof bundleIndex>>>;
let loaded: Loaded | undefined;
const uncaptured: string[] = [];

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
const size4 = (n: number): number => Math.max(4, Math.ceil(n / 4) * 4);

async function open(): Promise<OpenResult> {
  if (!navigator.gpu) throw new Error("navigator.gpu is missing: this browser has no WebGPU (is --enable-unsafe-webgpu set?)");
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error("navigator.gpu.requestAdapter() returned null: no WebGPU adapter");
  const chosen = chooseProfile(adapter, bundleIndex.profiles)?.name;
  const bundle = await loadBundle(adapter, bundleIndex);
  bundle.device.addEventListener("uncapturederror", (event) => uncaptured.push((event as GPUUncapturedErrorEvent).error.message));
  loaded = bundle;
  const info = adapter.info as GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number };
  return {
    adapter: {
      features: [...adapter.features].sort(),
      vendor: info.vendor,
      architecture: info.architecture,
      subgroupMinSize: info.subgroupMinSize,
      subgroupMaxSize: info.subgroupMaxSize,
      maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    },
    profiles: bundleIndex.profiles.map((p) => p.name),
    chosen,
    loaded: bundle.profile,
    kernels: Object.keys(bundle.dispatcher.planners).sort(),
  };
}

async function fetchBytes(url: string): Promise<ArrayBuffer> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

function fill(device: GPUDevice, buffer: GPUBuffer, words: readonly number[]): void {
  const data = new Uint32Array(buffer.size / 4);
  for (let i = 0; i < data.length; i++) data[i] = words[i % words.length]! >>> 0;
  device.queue.writeBuffer(buffer, 0, data);
}

async function run(request: RunRequest): Promise<RunResult> {
  if (!loaded) throw new Error("run() before open()");
  const { device, cache } = loaded;
  const started = performance.now();
  uncaptured.length = 0;
  const planners = loaded.dispatcher.planners as unknown as Readonly<Record<string, (call: Call) => Plan>>;
  const planner = planners[request.kernel];
  if (!planner) throw new Error(`the ${loaded.profile} dispatcher has no planner for ${request.kernel}`);
  const plan = planner(request.call);

  const buffers: Record<string, GPUBuffer> = {};
  const sizes: Record<string, number> = {};
  for (const [id, url] of Object.entries(request.inputs)) {
    const bytes = await fetchBytes(url);
    const buffer = device.createBuffer({ label: id, size: size4(bytes.byteLength), usage: STORAGE, mappedAtCreation: true });
    new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(bytes));
    buffer.unmap();
    buffers[id] = buffer;
    sizes[id] = bytes.byteLength;
  }
  for (const [id, size] of Object.entries(request.outputs)) {
    buffers[id] = device.createBuffer({ label: id, size: size4(size), usage: STORAGE });
    sizes[id] = size;
    fill(device, buffers[id], [request.poison]);
  }
  // A fresh scratch pool whose buffers are poisoned (acquire, fill, give back; executePlan then
  // takes the same buffers): a partial result or statistic a kernel fails to write shows.
  const scratchPool = new ScratchPool(device, "browser test scratch");
  const held = Object.values(plan.scratch).map((size) => scratchPool.acquire(Math.max(size, 4)));
  for (const buffer of held) fill(device, buffer, request.scratchPoison);
  scratchPool.release(...held);
  const result = await executePlan(device, cache, plan, buffers, { checkErrors: true, scratchPool });

  for (const id of request.readBack) {
    const source = buffers[id];
    if (!source) throw new Error(`readBack names ${id}, which is neither an input nor an output`);
    const staging = device.createBuffer({ size: source.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(source, 0, staging, 0, source.size);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const bytes = staging.getMappedRange().slice(0, sizes[id]);
    staging.unmap();
    staging.destroy();
    const response = await fetch(`${request.resultUrl}/${id}`, { method: "PUT", body: bytes });
    if (!response.ok) throw new Error(`PUT ${request.resultUrl}/${id}: HTTP ${response.status}`);
  }
  await device.queue.onSubmittedWorkDone();
  for (const buffer of Object.values(buffers)) buffer.destroy();
  scratchPool.destroy();
  return {
    variant: plan.variant,
    passes: plan.passes.map((p) => p.id),
    dispatched: [...result.dispatched],
    errors: [...uncaptured],
    ms: Math.round(performance.now() - started),
  };
}

window.kernelcBrowserTest = { open, run };
