/**
 * Device-limit profiles: the WebGPU limits table, the profile schema, the nine default profiles
 * (docs/profiles.md), merging user profiles onto them, and the `kernelc profiles` table.
 *
 * A profile is the `requiredLimits` and `requiredFeatures` one bundle is built for. Its values are
 * Chrome's tier values (Dawn's ApplyLimitTiers), so that a real adapter qualifies exactly; limits a
 * profile does not name take the WebGPU default, or the compatibility-mode default for a profile
 * marked `compatibilityMode`.
 */
import { z } from "zod";
import { WINDOWS_DEVICE_NAME } from "../core/portable-path.js";

/** One row of the limits table: the core default, the compatibility-mode default and the limit's class. */
interface LimitInfo {
  readonly core: number;
  readonly compat: number;
  /** "maximum": higher is better; "alignment": lower is better and must be a power of two. */
  readonly class: "maximum" | "alignment";
}

const max = (core: number, compat = core): LimitInfo => ({ core, compat, class: "maximum" });
const align = (core: number): LimitInfo => ({ core, compat: core, class: "alignment" });

/**
 * Every member of the WebGPU spec's GPUSupportedLimits with its defaults (gpuweb spec §3.6.2, the
 * CTS's capability_info.ts). The four "In{Vertex,Fragment}Stage" limits came with compatibility
 * mode; Dawn (webgpu 0.6.2) reports and accepts them.
 */
const LIMIT_TABLE = {
  maxTextureDimension1D: max(8192, 4096),
  maxTextureDimension2D: max(8192, 4096),
  maxTextureDimension3D: max(2048, 1024),
  maxTextureArrayLayers: max(256),
  maxBindGroups: max(4),
  maxBindGroupsPlusVertexBuffers: max(24),
  maxBindingsPerBindGroup: max(1000),
  maxDynamicUniformBuffersPerPipelineLayout: max(8),
  maxDynamicStorageBuffersPerPipelineLayout: max(4),
  maxSampledTexturesPerShaderStage: max(16),
  maxSamplersPerShaderStage: max(16),
  maxStorageBuffersPerShaderStage: max(8),
  maxStorageBuffersInVertexStage: max(8, 0),
  maxStorageBuffersInFragmentStage: max(8, 4),
  maxStorageTexturesPerShaderStage: max(4),
  maxStorageTexturesInVertexStage: max(4, 0),
  maxStorageTexturesInFragmentStage: max(4),
  maxUniformBuffersPerShaderStage: max(12),
  maxUniformBufferBindingSize: max(65536, 16384),
  maxStorageBufferBindingSize: max(134217728),
  minUniformBufferOffsetAlignment: align(256),
  minStorageBufferOffsetAlignment: align(256),
  maxVertexBuffers: max(8),
  maxBufferSize: max(268435456),
  maxVertexAttributes: max(16),
  maxVertexBufferArrayStride: max(2048),
  maxInterStageShaderVariables: max(16, 15),
  maxColorAttachments: max(8, 4),
  maxColorAttachmentBytesPerSample: max(32),
  maxComputeWorkgroupStorageSize: max(16384),
  maxComputeInvocationsPerWorkgroup: max(256, 128),
  maxComputeWorkgroupSizeX: max(256, 128),
  maxComputeWorkgroupSizeY: max(256, 128),
  maxComputeWorkgroupSizeZ: max(64),
  maxComputeWorkgroupsPerDimension: max(65535),
} as const satisfies Record<string, LimitInfo>;

/** A WebGPU limit name (a member of GPUSupportedLimits). */
export type LimitName = keyof typeof LIMIT_TABLE;

/** A full limits record: every WebGPU limit with a value. */
export type Limits = Readonly<Record<LimitName, number>>;

/** Every WebGPU limit name, in the spec's order. */
export const LIMIT_NAMES: readonly LimitName[] = Object.keys(LIMIT_TABLE) as LimitName[];

/** The WebGPU spec defaults (core feature level). */
export const WEBGPU_DEFAULT_LIMITS: Limits = mapLimits((info) => info.core);

/** The WebGPU compatibility-mode defaults (differ from core for texture sizes, uniform binding, invocations, …). */
export const COMPAT_DEFAULT_LIMITS: Limits = mapLimits((info) => info.compat);

function mapLimits(pick: (info: LimitInfo) => number): Limits {
  const out = {} as Record<LimitName, number>;
  for (const name of LIMIT_NAMES) out[name] = pick(LIMIT_TABLE[name]);
  return Object.freeze(out);
}

/** True for limits where lower is better (minUniformBufferOffsetAlignment, minStorageBufferOffsetAlignment). */
export function isAlignmentLimit(name: LimitName): boolean {
  return LIMIT_TABLE[name].class === "alignment";
}

/** True when `name` is a WebGPU limit name. */
export function isLimitName(name: string): name is LimitName {
  return Object.prototype.hasOwnProperty.call(LIMIT_TABLE, name);
}

/** Every GPUFeatureName of the WebGPU spec (and @webgpu/types 0.1.74), sorted. */
export const FEATURE_NAMES = [
  "atomic-vec2u-min-max",
  "bgra8unorm-storage",
  "clip-distances",
  "core-features-and-limits",
  "depth-clip-control",
  "depth32float-stencil8",
  "dual-source-blending",
  "float32-blendable",
  "float32-filterable",
  "indirect-first-instance",
  "primitive-index",
  "rg11b10ufloat-renderable",
  "shader-f16",
  "subgroup-size-control",
  "subgroups",
  "texture-component-swizzle",
  "texture-compression-astc",
  "texture-compression-astc-sliced-3d",
  "texture-compression-bc",
  "texture-compression-bc-sliced-3d",
  "texture-compression-etc2",
  "texture-compression-unaligned",
  "texture-formats-tier1",
  "texture-formats-tier2",
  "timestamp-query",
] as const;

/** A WebGPU feature name. */
export type FeatureName = (typeof FEATURE_NAMES)[number];

/** Profile names become folder names under out/ and keys in generated code: lower-case, digits, `-`, `_`. */
export const PROFILE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const limitValueSchema = z
  .number({ error: "a limit value must be a number" })
  .int({ error: "a limit value must be an integer" })
  .min(0, { error: "a limit value must not be negative" })
  .max(Number.MAX_SAFE_INTEGER, { error: "a limit value must be at most 2^53 - 1" });

const limitsShape = Object.fromEntries(LIMIT_NAMES.map((n) => [n, limitValueSchema.optional()])) as Record<
  LimitName,
  z.ZodOptional<typeof limitValueSchema>
>;

/** A profile's `limits`: any subset of the WebGPU limits; unknown names are errors. */
export const limitsSchema = z.strictObject(limitsShape).superRefine((limits, ctx) => {
  for (const name of LIMIT_NAMES) {
    const v = limits[name];
    if (v !== undefined && isAlignmentLimit(name) && (v === 0 || (v & (v - 1)) !== 0 || v > 2 ** 30)) {
      ctx.addIssue({ code: "custom", path: [name], message: `${name} must be a power of two, but it is ${v}` });
    }
  }
});

/** A profile's `features`: known WebGPU feature names, each at most once. */
export const featuresSchema = z.array(z.enum(FEATURE_NAMES)).superRefine((features, ctx) => {
  const seen = new Set<string>();
  features.forEach((f, i) => {
    if (seen.has(f)) ctx.addIssue({ code: "custom", path: [i], message: `feature "${f}" is listed twice` });
    seen.add(f);
  });
});

/**
 * A profile as written in kernelc.config.json `defineProfiles`: only `name` is required. For a new
 * profile, absent fields take their defaults (no limits above the spec defaults, no features); for
 * an override of a same-named profile, absent fields keep the overridden profile's values.
 */
export const profileSchema = z.strictObject({
  name: z
    .string({ error: "a profile name must be a string" })
    .regex(PROFILE_NAME_PATTERN, {
      error: "a profile name must be 1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit",
    })
    // Each profile gets a folder of the output folder, beside `shaders/`: that name is taken.
    .refine((name) => name !== "shaders", { error: 'a profile cannot be named "shaders": out/shaders/ holds the bundle\'s shader files' })
    // Names Windows reserves for devices, with or without an extension: out/<profile>/ could not be created there.
    .refine((name) => !WINDOWS_DEVICE_NAME.test(name), {
      error:
        "a profile cannot be named like a Windows device (con, prn, aux, nul, com1-9, lpt1-9): out/<profile>/ could not be created on Windows",
    }),
  description: z.string({ error: "description must be a string" }).optional(),
  typicalDevices: z.string({ error: "typicalDevices must be a string" }).optional(),
  compatibilityMode: z.boolean({ error: "compatibilityMode must be true or false" }).optional(),
  limits: limitsSchema.optional(),
  features: featuresSchema.optional(),
});

/** A profile as a user writes it (partial). */
export type ProfileInput = z.infer<typeof profileSchema>;

/** A complete profile: named limits are the ones it raises; every other limit is its baseline's default. */
export interface Profile {
  readonly name: string;
  readonly description: string;
  readonly typicalDevices: string;
  /** Unnamed limits take the compatibility-mode defaults instead of the core defaults. */
  readonly compatibilityMode: boolean;
  readonly limits: Readonly<Partial<Record<LimitName, number>>>;
  readonly features: readonly FeatureName[];
}

/** The field names a profile object may have (for "did you mean" hints). */
export const PROFILE_KEYS: readonly string[] = Object.keys(profileSchema.shape);

/** The defaults `limits` are filled from: the compat defaults for a compatibility-mode profile, else the spec defaults. */
export function baselineLimits(p: Pick<Profile, "compatibilityMode">): Limits {
  return p.compatibilityMode ? COMPAT_DEFAULT_LIMITS : WEBGPU_DEFAULT_LIMITS;
}

/** The profile's full limits record: its named limits over its baseline defaults. */
export function resolveProfile(p: Profile): Limits {
  const base = baselineLimits(p);
  const out = {} as Record<LimitName, number>;
  for (const name of LIMIT_NAMES) out[name] = p.limits[name] ?? base[name];
  return out;
}

/**
 * The limits to pass to `requestDevice` for a profile: only those better than the core spec
 * default. A device always gets at least the default, and naming a limit an implementation does
 * not know rejects the request, so limits at or below the default are left out.
 */
export function requiredLimitsFor(p: Profile): Partial<Record<LimitName, number>> {
  const full = resolveProfile(p);
  const out: Partial<Record<LimitName, number>> = {};
  for (const name of LIMIT_NAMES) {
    const v = full[name];
    const d = WEBGPU_DEFAULT_LIMITS[name];
    if (isAlignmentLimit(name) ? v < d : v > d) out[name] = v;
  }
  return out;
}

/** A problem of a complete profile: a message and the path (relative to the profile object) it is about. */
export interface ProfileProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
  readonly hint?: string;
}

/**
 * Checks what the schema cannot see on a complete (possibly merged) profile: a named limit worse
 * than its baseline default (a device always has the default, so such a value means nothing),
 * a binding size above the buffer size, and compatibility mode with `core-features-and-limits`.
 */
export function checkProfile(p: Profile): ProfileProblem[] {
  const problems: ProfileProblem[] = [];
  const base = baselineLimits(p);
  const baseName = p.compatibilityMode ? "compatibility-mode default" : "WebGPU default";
  for (const name of LIMIT_NAMES) {
    const v = p.limits[name];
    if (v === undefined) continue;
    const worse = isAlignmentLimit(name) ? v > base[name] : v < base[name];
    if (worse) {
      problems.push({
        path: ["limits", name],
        message: `profile "${p.name}": ${name} = ${v} is worse than the ${baseName} ${base[name]}; every device has at least the default, so the value has no effect`,
        hint: `use a value of at least the default (${base[name]}), or leave ${name} out`,
      });
    }
  }
  const full = resolveProfile(p);
  for (const binding of ["maxStorageBufferBindingSize", "maxUniformBufferBindingSize"] as const) {
    if (full[binding] > full.maxBufferSize) {
      problems.push({
        path: ["limits", p.limits[binding] !== undefined ? binding : "maxBufferSize"],
        message: `profile "${p.name}": ${binding} (${full[binding]}) exceeds maxBufferSize (${full.maxBufferSize}); no buffer can be that large`,
        hint: `raise maxBufferSize to at least ${full[binding]} or lower ${binding}`,
      });
    }
  }
  if (p.compatibilityMode && p.features.includes("core-features-and-limits")) {
    problems.push({
      path: ["features"],
      message: `profile "${p.name}" is a compatibility-mode profile but requires "core-features-and-limits", which only core devices have`,
      hint: `remove "core-features-and-limits" or set compatibilityMode to false`,
    });
  }
  return problems;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const desktop = (storage: number, features: FeatureName[], typicalDevices: string, name: string): Profile => ({
  name,
  description: `${storage / 1024} KiB workgroup storage, 1024 invocations, 1 GiB buffers`,
  typicalDevices,
  compatibilityMode: false,
  limits: {
    maxComputeWorkgroupStorageSize: storage,
    maxComputeInvocationsPerWorkgroup: 1024,
    maxComputeWorkgroupSizeX: 1024,
    maxComputeWorkgroupSizeY: 1024,
    maxStorageBufferBindingSize: GiB,
    maxBufferSize: GiB,
  },
  features,
});

const mobile = (invocations: 1024 | 256, features: FeatureName[], typicalDevices: string, name: string): Profile => ({
  name,
  description: `32 KiB workgroup storage, ${invocations} invocations, spec-default buffer sizes`,
  typicalDevices,
  compatibilityMode: false,
  limits:
    invocations === 1024
      ? {
          maxComputeWorkgroupStorageSize: 32768,
          maxComputeInvocationsPerWorkgroup: 1024,
          maxComputeWorkgroupSizeX: 1024,
          maxComputeWorkgroupSizeY: 1024,
        }
      : { maxComputeWorkgroupStorageSize: 32768 },
  features,
});

/**
 * The nine default profiles of docs/profiles.md, in run-time selection order: the runtime takes
 * the first whose every limit is at most the adapter's and whose features the adapter has.
 */
export const DEFAULT_PROFILES: readonly Profile[] = Object.freeze([
  desktop(65536, ["shader-f16", "subgroups"], "Intel (Mesa) on Linux/ChromeOS, likely AMD on Linux", "desktop-64k"),
  desktop(32768, ["shader-f16", "subgroups"], "Windows D3D12 (all vendors), AMD Vulkan, Apple silicon", "desktop-32k"),
  desktop(49152, ["subgroups"], "NVIDIA on Vulkan (Chrome blocks shader-f16 there)", "desktop-48k"),
  mobile(1024, ["shader-f16"], "Adreno, Windows on Arm, Intel Macs, iOS, lavapipe", "mobile-1024-f16"),
  mobile(1024, [], "Adreno without f16", "mobile-1024"),
  mobile(256, ["shader-f16"], "Mali, Intel Windows Vulkan", "mobile-256-f16"),
  mobile(256, [], "Mali without f16, SwiftShader", "mobile-256"),
  {
    name: "core",
    description: "the WebGPU spec defaults",
    typicalDevices: "any conformant adapter, Firefox on Windows",
    compatibilityMode: false,
    limits: {},
    features: [],
  },
  {
    name: "compat",
    description: "the WebGPU compatibility-mode defaults",
    typicalDevices: "compatibility-mode adapters (GL ES)",
    compatibilityMode: true,
    limits: {},
    features: [],
  },
]);

/** A new profile from its input form: absent fields take their defaults. */
export function normalizeProfile(input: ProfileInput): Profile {
  return {
    name: input.name,
    description: input.description ?? "",
    typicalDevices: input.typicalDevices ?? "",
    compatibilityMode: input.compatibilityMode ?? false,
    limits: { ...input.limits },
    features: [...(input.features ?? [])],
  };
}

/** `base` overridden by `input`: `limits` merge key by key onto the base's; every other given field replaces. */
export function overrideProfile(base: Profile, input: ProfileInput): Profile {
  return {
    name: base.name,
    description: input.description ?? base.description,
    typicalDevices: input.typicalDevices ?? base.typicalDevices,
    compatibilityMode: input.compatibilityMode ?? base.compatibilityMode,
    limits: { ...base.limits, ...input.limits },
    features: input.features !== undefined ? [...input.features] : [...base.features],
  };
}

/**
 * The defaults with the user's profiles applied, in order. A user profile named like an earlier
 * one overrides it in place (see `overrideProfile`: limits merge onto the existing ones, features
 * and other given fields replace); a new name is appended after the defaults.
 */
export function mergeProfiles(defaults: readonly Profile[], userProfiles: readonly ProfileInput[]): Profile[] {
  const out = [...defaults];
  for (const input of userProfiles) {
    const i = out.findIndex((p) => p.name === input.name);
    if (i >= 0) out[i] = overrideProfile(out[i], input);
    else out.push(normalizeProfile(input));
  }
  return out;
}

/**
 * True when every adapter that fits `later` also fits `earlier` (all of `earlier`'s limits are at
 * most `later`'s and its features are a subset): the runtime then never reaches `later`.
 */
export function profileShadows(earlier: Profile, later: Profile): boolean {
  const a = resolveProfile(earlier);
  const b = resolveProfile(later);
  for (const name of LIMIT_NAMES) {
    if (isAlignmentLimit(name) ? a[name] < b[name] : a[name] > b[name]) return false;
  }
  return earlier.features.every((f) => later.features.includes(f));
}

/** "1 GiB", "128 MiB", "16 KiB", or a byte count when the size is not a whole number of those. */
export function formatBytes(n: number): string {
  if (n >= GiB && n % GiB === 0) return `${n / GiB} GiB`;
  if (n >= MiB && n % MiB === 0) return `${n / MiB} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} B`;
}

/** A plain-text table of profiles for `kernelc profiles`: order, name, the limits that matter, features. */
export function formatProfilesTable(profiles: readonly Profile[]): string {
  const header = ["order", "name", "workgroup storage", "invocations (X, Y, Z)", "storage binding / buffer", "features"];
  const rows = profiles.map((p, i) => {
    const l = resolveProfile(p);
    let sizes = `${formatBytes(l.maxStorageBufferBindingSize)} / ${formatBytes(l.maxBufferSize)}`;
    if (l.maxUniformBufferBindingSize !== WEBGPU_DEFAULT_LIMITS.maxUniformBufferBindingSize) {
      sizes += `, uniform ${formatBytes(l.maxUniformBufferBindingSize)}`;
    }
    return [
      String(i + 1),
      p.name,
      String(l.maxComputeWorkgroupStorageSize),
      `${l.maxComputeInvocationsPerWorkgroup} (${l.maxComputeWorkgroupSizeX}, ${l.maxComputeWorkgroupSizeY}, ${l.maxComputeWorkgroupSizeZ})`,
      sizes,
      p.features.length === 0 ? "none" : p.features.join(", "),
    ];
  });
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => cell.padEnd(widths[c]))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n") + "\n";
}
