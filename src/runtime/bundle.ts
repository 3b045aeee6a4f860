/**
 * Opening a generated bundle: `loadBundle(adapter, index)` takes the bundle index kernelc writes
 * as out/index.ts, picks the first profile (in the index's preference order) that the adapter can
 * run, imports that profile's dispatcher and manifest, requests a device with the profile's limits
 * and features, and returns them with a pipeline cache that reads the bundle's shader files.
 */
import type { Manifest } from "../model/plan.js";
import { chooseProfile, requestBundleDevice, UnsupportedProfileError, compareWithAdapter, type ProfileRequirements } from "./device.js";
import { PipelineCache, warmUp } from "./pipeline-cache.js";

/** One profile of a bundle index: its requirements and lazy imports of its dispatcher and manifest. */
export interface BundleProfile<D> extends ProfileRequirements {
  readonly name: string;
  /** Imports the profile's generated dispatcher module. */
  readonly dispatcher: () => Promise<D>;
  /** Imports the profile's manifest.json. */
  readonly manifest: () => Promise<Manifest>;
}

/** A bundle index (the default export of a generated out/index.ts). */
export interface BundleIndex<D> {
  readonly generatedBy: string;
  /** Most demanding first: the first profile the adapter can run is taken. */
  readonly profiles: readonly BundleProfile<D>[];
  /** Each shader file's URL by shader id. */
  readonly shaders: Readonly<Record<string, () => URL>>;
}

/** The dispatcher module type of an index: the union of its profiles' modules. */
export type BundleDispatcher<I extends BundleIndex<unknown>> = Awaited<ReturnType<I["profiles"][number]["dispatcher"]>>;

/** Options of loadBundle. */
export interface LoadBundleOptions {
  /**
   * Reads a shader file; default: `fetch(url)` (browsers). In Node, where fetch does not read
   * file: URLs, pass `(url) => readFile(url, "utf8")` from node:fs/promises.
   */
  readonly readText?: ((url: URL) => Promise<string>) | undefined;
  /** Create every pipeline of the profile before returning (default false: each on its first use). */
  readonly warmUp?: boolean | undefined;
  /** The device's label (default "kernelc <profile>"). */
  readonly label?: string | undefined;
}

/** An opened bundle: the chosen profile's dispatcher and manifest, a device for it and a pipeline cache. */
export interface LoadedBundle<D> {
  /** The chosen profile's name. */
  readonly profile: string;
  /** The profile's dispatcher module (its `planners` turn a call into a Plan). */
  readonly dispatcher: D;
  readonly manifest: Manifest;
  /** A device with the profile's required limits and features. */
  readonly device: GPUDevice;
  /** Pipelines of the bundle's shaders on `device`; pass it to executePlan. */
  readonly cache: PipelineCache;
}

/** Reads a URL with fetch, failing on an HTTP error status. */
async function fetchText(url: URL): Promise<string> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot load the shader ${url.href}: HTTP ${response.status}`);
  return response.text();
}

/**
 * Opens the best profile of a bundle for `adapter`: the first of `index.profiles` whose limits and
 * features the adapter has. Throws UnsupportedProfileError (naming what the least demanding profile
 * lacks) when none fits.
 */
export async function loadBundle<I extends BundleIndex<unknown>>(
  adapter: GPUAdapter,
  index: I,
  options: LoadBundleOptions = {},
): Promise<LoadedBundle<BundleDispatcher<I>>> {
  const chosen = chooseProfile(adapter, index.profiles);
  if (!chosen) {
    const last = index.profiles[index.profiles.length - 1];
    const names = index.profiles.map((p) => p.name);
    if (!last) throw new Error("the bundle index lists no profile: rebuild it with `npx kernelc build`");
    throw new UnsupportedProfileError(last.name, compareWithAdapter(adapter, last), undefined, names);
  }
  const [dispatcher, manifest] = await Promise.all([chosen.dispatcher(), chosen.manifest()]);
  const device = await requestBundleDevice(adapter, manifest, options.label !== undefined ? { label: options.label } : {});
  const readText = options.readText ?? fetchText;
  const cache = new PipelineCache(device, (shaderId) => {
    const url = Object.hasOwn(index.shaders, shaderId) ? index.shaders[shaderId] : undefined;
    if (url === undefined) throw new Error(`the bundle index has no shader "${shaderId}": rebuild the bundle with \`npx kernelc build\``);
    return readText(url());
  });
  if (options.warmUp) await warmUp(cache, manifest);
  return { profile: chosen.name, dispatcher: dispatcher as BundleDispatcher<I>, manifest, device, cache };
}
