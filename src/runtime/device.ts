/// <reference types="@webgpu/types" preserve="true" />
/**
 * Matching a bundle's device profiles against an adapter, and requesting a device for one profile.
 */
import type { Manifest } from "../model/plan.js";

/** What profile matching reads from an adapter; a GPUAdapter has it (and so can a test's fake). */
export interface AdapterCapabilities {
  /** The adapter's limits, readable by limit name (GPUSupportedLimits). */
  readonly limits: object;
  readonly features: { has(feature: string): boolean };
}

/** What a profile requires of a device: a manifest, or a profile entry of a bundle index. */
export type ProfileRequirements = Pick<Manifest, "requiredLimits" | "requiredFeatures">;

/** One limit a profile asks for that the adapter does not offer. */
export interface LimitShortfall {
  readonly name: string;
  readonly asked: number;
  /** The adapter's value; undefined when the adapter does not know the limit at all. */
  readonly has: number | undefined;
}

/** Why an adapter cannot run a profile; both lists empty means it can. */
export interface ProfileMismatch {
  readonly limits: readonly LimitShortfall[];
  readonly features: readonly string[];
}

/** Thrown by requestBundleDevice when the adapter cannot satisfy the manifest's profile. */
export class UnsupportedProfileError extends Error {
  override readonly name = "UnsupportedProfileError";

  constructor(
    /** The profile that was asked for. */
    readonly profile: string,
    readonly mismatch: ProfileMismatch,
    /** The first profile of the caller's list that this adapter can run, if any. */
    readonly fittingProfile: string | undefined,
    /** The profiles of the caller's list that were considered. */
    readonly consideredProfiles: readonly string[],
  ) {
    super(describeMismatch(profile, mismatch, fittingProfile, consideredProfiles));
  }
}

/**
 * Whether a limit is an alignment ("min…Alignment" and the like): a smaller value is more capable,
 * so the adapter fits when its value is <= the one asked, the reverse of every max… limit.
 */
export function isMinimumLimit(name: string): boolean {
  return name.startsWith("min");
}

function adapterLimit(adapter: AdapterCapabilities, name: string): number | undefined {
  const value: unknown = (adapter.limits as Record<string, unknown>)[name];
  return typeof value === "number" ? value : undefined;
}

/** Lists every limit and feature of a manifest that the adapter lacks. */
export function compareWithAdapter(adapter: AdapterCapabilities, manifest: ProfileRequirements): ProfileMismatch {
  const limits: LimitShortfall[] = [];
  for (const [name, asked] of Object.entries(manifest.requiredLimits)) {
    const has = adapterLimit(adapter, name);
    const fits = has !== undefined && (isMinimumLimit(name) ? has <= asked : has >= asked);
    if (!fits) limits.push({ name, asked, has });
  }
  const features = manifest.requiredFeatures.filter((f) => !adapter.features.has(f));
  return { limits, features };
}

/** Whether the adapter offers every limit and feature the manifest requires. */
export function adapterFits(adapter: AdapterCapabilities, manifest: ProfileRequirements): boolean {
  const { limits, features } = compareWithAdapter(adapter, manifest);
  return limits.length === 0 && features.length === 0;
}

/**
 * Returns the first manifest, in the given order, whose profile the adapter can run, or undefined.
 * List the profiles from most to least demanding so that the best fitting one wins.
 */
export function chooseProfile<M extends ProfileRequirements>(adapter: AdapterCapabilities, manifests: readonly M[]): M | undefined {
  return manifests.find((m) => adapterFits(adapter, m));
}

/** Options of requestBundleDevice. */
export interface RequestBundleDeviceOptions {
  /** Other profiles of the bundle, named in the error as the one that would fit when this one does not. */
  readonly profiles?: readonly Manifest[] | undefined;
  readonly label?: string | undefined;
}

/**
 * Requests a device with the manifest's required limits and features, after checking that the
 * adapter has them: throws UnsupportedProfileError naming each missing limit (asked vs has), each
 * missing feature, and which of `options.profiles` would fit.
 */
export async function requestBundleDevice(
  adapter: GPUAdapter,
  manifest: Manifest,
  options: RequestBundleDeviceOptions = {},
): Promise<GPUDevice> {
  const mismatch = compareWithAdapter(adapter, manifest);
  if (mismatch.limits.length > 0 || mismatch.features.length > 0) {
    const profiles = options.profiles ?? [];
    throw new UnsupportedProfileError(
      manifest.profile,
      mismatch,
      chooseProfile(adapter, profiles)?.profile,
      profiles.map((p) => p.profile),
    );
  }
  return adapter.requestDevice({
    label: options.label ?? `kernelc ${manifest.profile}`,
    requiredLimits: { ...manifest.requiredLimits },
    requiredFeatures: [...manifest.requiredFeatures] as GPUFeatureName[],
  });
}

function describeMismatch(profile: string, mismatch: ProfileMismatch, fitting: string | undefined, considered: readonly string[]): string {
  const lines = [`this adapter cannot run the bundle profile "${profile}":`];
  for (const l of mismatch.limits) {
    const has = l.has === undefined ? "the adapter does not report this limit" : `the adapter has ${l.has}`;
    const want = isMinimumLimit(l.name) ? `at most ${l.asked}` : `at least ${l.asked}`;
    lines.push(`  limit ${l.name}: the profile needs ${want}, ${has}`);
  }
  for (const f of mismatch.features) lines.push(`  feature "${f}": the adapter does not offer it`);
  if (fitting !== undefined) lines.push(`use the profile "${fitting}" instead: this adapter can run it`);
  else if (considered.length > 0) lines.push(`none of the profiles ${considered.map((p) => `"${p}"`).join(", ")} fits this adapter`);
  return lines.join("\n");
}
