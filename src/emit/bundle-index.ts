/**
 * out/index.ts (or index.js and index.d.ts), the bundle index: the built profiles in run-time preference order, each with what
 * it requires of a device and a lazy import of its dispatcher and manifest, and every shader file
 * as a URL next to the module. The runtime's `loadBundle(adapter, index)` reads it. The file imports
 * nothing at load time and compiles under the strictest common compiler flags.
 */
import { unnamedModuleHeader } from "../core/generated-mark.js";
import { KERNELC_VERSION, regenerateCommand } from "../core/version.js";
import { requiredLimitsFor, type Profile } from "../plan/profiles.js";
import { str, ty, type EmitKind } from "./code-writer.js";
import { commentText, type GeneratedModule } from "./dispatcher.js";

/** What the index says of one profile: its name and what it requires of a device. */
export interface IndexProfile {
  readonly name: string;
  readonly requiredLimits: Readonly<Record<string, number | undefined>>;
  readonly requiredFeatures: readonly string[];
}

/** A profile's index entry. */
export function indexProfileOf(p: Profile): IndexProfile {
  return { name: p.name, requiredLimits: requiredLimitsFor(p), requiredFeatures: p.features };
}

/**
 * The index of a bundle assembled from manifests kernelc wrote (a partial build keeps other
 * profiles' folders): each manifest's requirements and the specs its `generatedBy` names.
 * Undefined when a manifest is not one kernelc wrote.
 */
export function bundleIndexFromManifests(
  manifests: readonly { readonly name: string; readonly text: string }[],
  shaderIds: readonly string[],
  emit: EmitKind,
): GeneratedModule | undefined {
  const profiles: IndexProfile[] = [];
  const specFiles: string[] = [];
  for (const { name, text } of manifests) {
    let m: { generatedBy?: unknown; requiredLimits?: unknown; requiredFeatures?: unknown };
    try {
      m = JSON.parse(text) as typeof m;
    } catch {
      return undefined;
    }
    const from = typeof m.generatedBy === "string" ? /^kernelc \S+ as \S+ from (.*); do not edit$/.exec(m.generatedBy) : null;
    const limits = m.requiredLimits;
    const features = m.requiredFeatures;
    if (!from || typeof limits !== "object" || limits === null || Array.isArray(limits) || !Array.isArray(features)) return undefined;
    if (!Object.values(limits).every((v) => typeof v === "number") || !features.every((f) => typeof f === "string")) return undefined;
    for (const f of from[1]!.split(", ")) if (f && !specFiles.includes(f)) specFiles.push(f);
    profiles.push({ name, requiredLimits: limits as Record<string, number>, requiredFeatures: features as string[] });
  }
  return generateBundleIndex(profiles, specFiles, shaderIds, emit);
}

/** What a profile's manifest is to the runtime (kernelc/runtime's Manifest), as index.d.ts declares it. */
const MANIFEST_DECLARATION = `/** A profile's manifest.json as the runtime reads it (kernelc/runtime's Manifest). */
export interface BundleManifest {
  readonly generatedBy: string;
  readonly profile: string;
  readonly requiredLimits: Readonly<Record<string, number>>;
  readonly requiredFeatures: readonly string[];
  readonly shaders: Readonly<Record<string, string>>;
  readonly pipelines: readonly { readonly shader: string; readonly entryPoint: string; readonly bindings: readonly string[] }[];
}`;

/**
 * The bundle index module for `profiles` (in preference order), built from `specFiles`, and the
 * bundle's shader ids: out/index.ts, or out/index.js with out/index.d.ts (see moduleFiles).
 */
export function generateBundleIndex(
  profiles: readonly IndexProfile[],
  specFiles: readonly string[],
  shaderIds: readonly string[],
  emit: EmitKind,
): GeneratedModule {
  const q = str;
  const header = [
    unnamedModuleHeader(
      `${commentText(specFiles.join(", "))}: the bundle index, for profile order ${commentText(profiles.map((p) => p.name).join(", "))}`,
    ),
    `// Regenerate with \`${regenerateCommand(emit)}\`.`,
    "/* eslint-disable */",
    "",
  ];
  const profilesDoc = "/** The bundle's profiles in run-time preference order: the first one an adapter can run is the one to use. */";
  const shadersDoc =
    "/** Each shader file of the bundle by shader id, as a URL next to this module (bundlers such as Vite emit them as assets). */";
  const bundleDoc =
    "/** The bundle index: `await loadBundle(adapter, bundle)` (kernelc/runtime) picks, loads and opens the best profile. */";
  // The .ts module states the declarations' types where it declares each export (the interface,
  // the profiles tuple, the default export), so it compiles under isolatedDeclarations too.
  const profileTypes: string[] = [];
  const lines: string[] = [];
  for (const p of profiles) {
    const limits = Object.entries(p.requiredLimits)
      .filter((e): e is [string, number] => e[1] !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const features = [...p.requiredFeatures].sort().map(q);
    lines.push(
      "  {",
      `    name: ${q(p.name)},`,
      `    requiredLimits: {${limits.map(([k, v]) => ` ${q(k)}: ${JSON.stringify(v)}`).join(",")}${limits.length ? " " : ""}},`,
      `    requiredFeatures: [${features.join(", ")}],`,
      `    dispatcher: () => import(${q(`./${p.name}/dispatcher.js`)}),`,
      `    manifest: () => import(${q(`./${p.name}/manifest.json`)}, { with: { type: "json" } }).then((m) => m.default),`,
      "  },",
    );
    profileTypes.push(
      "  {",
      `    readonly name: ${q(p.name)};`,
      `    readonly requiredLimits: {${limits.map(([k, v]) => ` readonly ${q(k)}: ${JSON.stringify(v)};`).join("")}${limits.length ? " " : ""}};`,
      `    readonly requiredFeatures: readonly [${features.join(", ")}];`,
      `    readonly dispatcher: () => Promise<typeof import(${q(`./${p.name}/dispatcher.js`)})>;`,
      `    readonly manifest: () => Promise<BundleManifest>;`,
      "  },",
    );
  }
  const bundleType = "{ generatedBy: string; profiles: typeof profiles; shaders: typeof shaders }";
  lines.unshift(
    ...header,
    ty(MANIFEST_DECLARATION),
    "",
    profilesDoc,
    `export const profiles${ty(`: readonly [\n${profileTypes.join("\n")}\n]`)} = [`,
  );
  lines.push(
    `]${ty(" as const")};`,
    "",
    shadersDoc,
    `export const shaders${ty(": Readonly<Record<string, () => URL>>")} = {`,
    ...[...shaderIds].sort().map((id) => `  ${q(id)}: () => new URL(${q(`./shaders/${id}.wgsl`)}, import.meta.url),`),
    "};",
    "",
    bundleDoc,
    `const bundle${ty(`: ${bundleType}`)} = { generatedBy: ${q(`kernelc ${KERNELC_VERSION}`)}, profiles, shaders };`,
    "export default bundle;",
    "",
  );
  const decls = [
    ...header,
    MANIFEST_DECLARATION,
    "",
    profilesDoc,
    "export declare const profiles: readonly [",
    ...profileTypes,
    "];",
    "",
    shadersDoc,
    "export declare const shaders: Readonly<Record<string, () => URL>>;",
    "",
    bundleDoc,
    `declare const bundle: ${bundleType};`,
    "export default bundle;",
    "",
  ];
  return { marked: lines.join("\n"), declarations: decls.join("\n") };
}
