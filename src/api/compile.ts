/**
 * `compile()`: the whole compiler as one pure function from a loaded config to the files of a
 * bundle, the diagnostics and the per-profile models. It prints nothing and writes nothing; the
 * CLI (src/cli) writes out/, shows progress and runs `--check` on top of it. Phases:
 * load → check → enumerate → render → validate → generate.
 */
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { hasErrors, sortDiagnostics, type Diagnostic } from "../core/diagnostic.js";
import { stableJson } from "../core/stable-json.js";
import { KERNELC_VERSION } from "../core/version.js";
import { commentText, generateDispatcher } from "../emit/dispatcher.js";
import { manifestFor, profilesIndex } from "../emit/manifest.js";
import { TemplateRenderer } from "../emit/render.js";
import { renderShader, validateShaders, type RenderContext, type ShaderRecord } from "../emit/shader.js";
import { WgslValidator } from "../emit/validate-wgsl.js";
import type { CheckedKernel } from "../model/checked.js";
import { pinnedTunables, type LoadedConfig } from "../plan/config.js";
import type { AssignmentModel, KernelModel, PassModel, VariantModel } from "../plan/dispatch-model.js";
import { enumerateKernel, type KernelProfileBuild, type ParsedInstance } from "../plan/enumerate.js";
import { parseInstances } from "../plan/instances.js";
import { resolveProfile, type Profile } from "../plan/profiles.js";
import { lintPaths, makeCheckContext } from "./lint.js";

/** Options of one compilation. */
export interface CompileOptions {
  /** Build only these profiles (by name); default: the config's profiles. */
  readonly profiles?: readonly string[];
  /**
   * Validate and write only these kernels' shaders (by name). The profiles' dispatchers and
   * manifests still cover every kernel (they are one module per profile), so the other kernels are
   * enumerated and rendered but their shaders are left out of `files`: the caller keeps them from
   * a previous build. Default: every kernel.
   */
  readonly kernels?: readonly string[];
  /** Called with a short description of the current step (for a progress display). */
  readonly onProgress?: (step: string) => void;
}

/** One kernel on one profile: what enumeration decided and the model the dispatcher is generated from. */
export interface KernelOnProfile {
  readonly build: KernelProfileBuild;
  readonly model: KernelModel;
}

/** What one profile built. */
export interface ProfileResult {
  readonly profile: Profile;
  readonly kernels: readonly KernelOnProfile[];
}

/** Everything one compilation produced, in memory. */
export interface CompileResult {
  /** Files of the bundle, by "/"-separated relative path, in sorted order (empty when there are errors). */
  readonly files: ReadonlyMap<string, string>;
  readonly diagnostics: readonly Diagnostic[];
  readonly profiles: readonly ProfileResult[];
  /** The text of every spec read (for code frames). */
  readonly sources: ReadonlyMap<string, string>;
}

/** Compiles the project of `loaded` (its root, specs and templates) into the files of a bundle. */
export async function compile(loaded: LoadedConfig, options: CompileOptions = {}): Promise<CompileResult> {
  const progress = options.onProgress ?? (() => {});
  const templatesDir = path.resolve(loaded.root, loaded.config.templates);
  const diagnostics: Diagnostic[] = [];
  const fail = (profiles: readonly ProfileResult[] = []): CompileResult => ({ files: new Map(), diagnostics: sortDiagnostics(diagnostics), profiles, sources });

  // load + check
  progress("checking specs");
  const lint = lintPaths([path.resolve(loaded.root, loaded.config.specs)], makeCheckContext(templatesDir));
  const sources = lint.sources;
  diagnostics.push(...lint.diagnostics);
  if (hasErrors(diagnostics)) return fail();
  const profiles = selectProfiles(loaded, options.profiles, diagnostics);
  const kernels = [...lint.kernels].sort((a, b) => (a.spec.name < b.spec.name ? -1 : a.spec.name > b.spec.name ? 1 : 0));
  const instances = configuredInstances(loaded, kernels, diagnostics);
  const only = options.kernels?.length ? new Set(options.kernels) : undefined;
  const unknownKernels = only ? [...only].filter((n) => !kernels.some((k) => k.spec.name === n)) : [];
  if (unknownKernels.length) {
    diagnostics.push(makeDiagnostic("unknown_kernel", `no spec defines kernel${unknownKernels.length > 1 ? "s" : ""} ${unknownKernels.map((n) => `\`${n}\``).join(", ")}`, undefined, { hint: `kernels: ${kernels.map((k) => k.spec.name).join(", ")}` }));
  }
  if (!profiles || hasErrors(diagnostics)) return fail();

  // enumerate + render
  const ctx: RenderContext = { renderer: new TemplateRenderer(templatesDir), templatesDir, shaders: new Map(), diagnostics };
  const results: ProfileResult[] = profiles.map((profile) => ({
    profile,
    kernels: kernels.map((kernel) => {
      progress(`${profile.name}: ${kernel.spec.name} (${ctx.shaders.size} shaders so far)`);
      const build = enumerateOnProfile(loaded, kernel, profile, instances.get(kernel.spec.name) ?? [], diagnostics);
      return { build, model: renderKernel(kernel, profile, build, ctx) };
    }),
  }));

  // validate
  const selected = only ? new Map([...ctx.shaders].filter(([, rec]) => [...rec.kernels].some((k) => only.has(k)))) : ctx.shaders;
  progress(`validating ${selected.size} shaders`);
  const validator = await WgslValidator.create();
  try {
    await validateShaders(selected, validator, templatesDir, diagnostics);
  } finally {
    validator.dispose();
  }
  if (hasErrors(diagnostics)) return fail(results);

  // generate
  return { files: generateFiles(loaded.root, selected, results), diagnostics: sortDiagnostics(diagnostics), profiles: results, sources };
}

/** The profiles to build: the config's, or those named in the options (unknown names are an error). */
function selectProfiles(loaded: LoadedConfig, names: readonly string[] | undefined, diagnostics: Diagnostic[]): readonly Profile[] | undefined {
  if (!names || names.length === 0) return loaded.profiles;
  const unknown = names.filter((n) => !loaded.allProfiles.some((p) => p.name === n));
  if (unknown.length) {
    diagnostics.push(makeDiagnostic("unknown_profile", `unknown profile${unknown.length > 1 ? "s" : ""} ${unknown.map((u) => `\`${u}\``).join(", ")}`, undefined, { hint: `known profiles: ${loaded.allProfiles.map((p) => p.name).join(", ")}` }));
    return undefined;
  }
  return loaded.allProfiles.filter((p) => names.includes(p.name));
}

/** The config's instances per kernel, checked against the kernels' leaves. */
function configuredInstances(loaded: LoadedConfig, kernels: readonly CheckedKernel[], diagnostics: Diagnostic[]): Map<string, ParsedInstance[]> {
  const byKernel = new Map(kernels.map((k) => [k.spec.name, parseInstances(k, loaded.config.instances[k.spec.name] ?? [], loaded.file, diagnostics)]));
  for (const name of Object.keys(loaded.config.instances)) {
    if (!kernels.some((k) => k.spec.name === name)) {
      diagnostics.push(makeDiagnostic("instance_invalid", `the config lists instances for kernel \`${name}\`, which no spec defines`, loaded.file ? { file: loaded.file, pointer: `/instances/${name}` } : undefined));
    }
  }
  return byKernel;
}

/** Enumerates and prunes one kernel's candidates on one profile, reporting missing instances and variants. */
function enumerateOnProfile(loaded: LoadedConfig, k: CheckedKernel, profile: Profile, configured: readonly ParsedInstance[], diagnostics: Diagnostic[]): KernelProfileBuild {
  // A kernel with no configured instance is built once with nothing pinned: enough when its
  // templates read only build-time values; otherwise it is a warning that nothing was built.
  const implicit = configured.length === 0;
  const facts = { name: profile.name, limits: resolveProfile(profile), features: new Set<string>(profile.features) };
  const build = enumerateKernel(k, facts, pinnedTunables(loaded.config, profile.name, k.spec.name), implicit ? [{ name: "(no instance)", values: new Map() }] : configured);
  if (implicit && build.problems.length) {
    diagnostics.push(makeDiagnostic("no_instances", `kernel ${k.spec.name} has templates that read per-model values, but kernelc.config.json lists no instances for it: no shader of those passes was built for profile ${profile.name}`, { file: k.spec.file, pointer: "/variants" }, { hint: `add instances under instances.${k.spec.name}; ${build.problems[0]}` }));
  }
  for (const p of implicit ? [] : build.problems) {
    diagnostics.push(makeDiagnostic("instance_invalid", p, loaded.file ? { file: loaded.file, pointer: `/instances/${k.spec.name}` } : { file: k.spec.file }, { hint: "add the missing values to the instance in kernelc.config.json" }));
  }
  if (build.noVariantReason) {
    diagnostics.push(makeDiagnostic("no_variant_for_profile", `kernel ${k.spec.name} has no variant on profile ${profile.name}: ${build.noVariantReason}`, { file: k.spec.file, pointer: "/variants" }, { hint: `calls of ${k.spec.name} on ${profile.name} devices will fail; see \`kernelc explain ${k.spec.name} --profile ${profile.name}\`` }));
  }
  return build;
}

/** Renders every shader request of one kernel's build and returns the model the dispatcher is generated from. */
function renderKernel(kernel: CheckedKernel, profile: Profile, build: KernelProfileBuild, ctx: RenderContext): KernelModel {
  const assignments: AssignmentModel[] = build.assignments.map((a) => ({
    facts: a.facts,
    variants: a.variants.map((vb): VariantModel => ({
      variant: vb.variant,
      passes: vb.passes.map((pb): PassModel => {
        const table = new Map<string, string>();
        for (const request of pb.requests) {
          const id = renderShader({ kernel, variantId: vb.variant.id, passId: pb.pass.id, facts: a.facts, request, profile }, ctx);
          if (id) table.set(JSON.stringify(request.key), id);
        }
        return { pass: pb.pass, keyLeaves: pb.keyLeaves, shaders: table, bindings: pb.pass.bindings };
      }),
    })),
  }));
  const built = new Set(build.assignments.flatMap((a) => a.variants.map((v) => v.variant.id)));
  return {
    kernel,
    profile: profile.name,
    instancesHint: `add an instance with these values under instances.${kernel.spec.name} in kernelc.config.json and rebuild`,
    assignments,
    prunedVariants: kernel.variants.map((v) => v.id).filter((id) => !built.has(id)),
  };
}

/** The bundle's files: shaders (shared across profiles), per profile a dispatcher and a manifest, and profiles.json. */
function generateFiles(root: string, shaders: ReadonlyMap<string, ShaderRecord>, results: readonly ProfileResult[]): Map<string, string> {
  const files = new Map<string, string>();
  for (const [id, rec] of shaders) {
    const header = `// Generated by kernelc ${KERNELC_VERSION} from ${commentText([...rec.templates].sort().map((t) => `templates/${t}`).join(", "))} for ${commentText([...rec.kernels].sort().join(", "))}. Do not edit.\n`;
    files.set(`shaders/${id}.wgsl`, header + rec.body);
  }
  for (const r of results) {
    const specFiles = r.kernels.map((k) => path.relative(root, k.model.kernel.spec.file).split(path.sep).join("/"));
    const header = `// Generated by kernelc ${KERNELC_VERSION} from ${commentText(specFiles.join(", "))} for profile ${commentText(r.profile.name)}. Do not edit.\n// Regenerate with \`npx kernelc build\`.\n/* eslint-disable */`;
    const models = r.kernels.map((k) => k.model);
    files.set(`${r.profile.name}/dispatcher.ts`, generateDispatcher(models, header, r.profile.name));
    files.set(`${r.profile.name}/manifest.json`, stableJson(manifestFor(r.profile, models, specFiles)));
  }
  files.set("profiles.json", stableJson(profilesIndex(results.map((r) => r.profile))));
  return new Map([...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
