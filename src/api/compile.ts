/**
 * `compile()`: the whole compiler as one pure function from a loaded config to the files of a
 * bundle, the diagnostics and the per-profile models. It prints nothing and writes nothing; the
 * CLI (src/cli) writes out/, shows progress and runs `--check` on top of it. Phases:
 * load → check → enumerate → render → validate → generate.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { dedupeDiagnostics, type Report } from "../core/dedupe.js";
import { sortDiagnostics, UserError, type Diagnostic, type Location } from "../core/diagnostic.js";
import { parseJson, resolvePointer, type JsonNode } from "../core/json-source.js";
import { didYouMean } from "../core/did-you-mean.js";
import { sha256Hex } from "../core/hash.js";
import { stableJson } from "../core/stable-json.js";
import { generatedAs, unnamedModuleHeader } from "../core/generated-mark.js";
import { regenerateCommand } from "../core/version.js";
import type { EmitKind } from "../emit/code-writer.js";
import type { GeneratedModule } from "../emit/dispatcher.js";
import type { ReusableDispatcher } from "../emit/dispatcher-reuse.js";
import { TemplateRenderer } from "../emit/render.js";
import {
  createRenderMemo,
  recordEnabledFeatures,
  renderShader,
  validateShaders,
  type RenderContext,
  type ShaderRecord,
} from "../emit/shader.js";
import {
  createShaderCache,
  TemplateDigests,
  type RenderStore,
  type ShaderCache,
  type VerdictStore,
  type WorkgroupFactsStore,
} from "../emit/shader-cache.js";
import { WgslValidator } from "../emit/validate-wgsl.js";
import type { WorkgroupFacts } from "../emit/wgsl-limits.js";
import type { CheckContext, TemplateReadsStore } from "../check/check-spec.js";
import type { CheckedKernel } from "../model/checked.js";
import { configPins, pinnedTunables, type LoadedConfig } from "../plan/config.js";
import { applyRule, ruleProblem, ruleTunables, type TunedRule } from "../plan/tuned-rule.js";
import type { AssignmentModel, KernelModel, PassModel, VariantModel } from "../plan/dispatch-model.js";
import { enumerateKernel, IMPLICIT_INSTANCE, type KernelProfileBuild, type ParsedInstance } from "../plan/enumerate.js";
import { parseInstances } from "../plan/instances.js";
import { buildTimeConstantProblems } from "../plan/finite-check.js";
import { resolveProfile, type Profile } from "../plan/profiles.js";
import { lintPaths, makeCheckContext, specsFromConfig, tuneKeysOf, type SpecsOrigin } from "./lint.js";
import { knownProfilesHint } from "./options.js";
import { MAX_INPUT_BYTES, readInputFileOrUndefined } from "../core/read-file.js";

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
  /** Spec files or folders to compile (absolute); default: the config's specs folder. */
  readonly specs?: readonly string[];
  /** Where `specs` came from, for the messages of a missing or empty folder; default: the paths given, or the config's specs folder. */
  readonly specsOrigin?: SpecsOrigin;
  /** Whether to generate the bundle's files after validation (default true); lint stops before. */
  readonly generate?: boolean;
  /** Renders and Tint verdicts to reuse from earlier compilations and to keep for later ones (kernelc watch). */
  readonly cache?: ShaderCache;
  /** Parsed template reads to reuse from earlier compilations and to keep for later ones (kernelc watch); see makeCheckContext. */
  readonly templateReads?: CheckContext["templateReadsCache"];
  /** Each spec's check, to reuse while its text and its templates' reads are unchanged (kernelc watch); see KeptCheck. */
  readonly keptChecks?: CheckContext["keptChecks"];
  /** A validator to use (and leave open) instead of starting one for this compilation. */
  readonly validator?: WgslValidator;
  /**
   * Tint verdicts kept between processes (the CLI keeps them under .kernelc-cache/): a shader whose
   * exact text has a verdict there is not validated again, and new verdicts are added to it. When
   * it holds verdicts, Tint is started only once a shader has none.
   */
  readonly verdicts?: VerdictStore;
  /**
   * Renders kept between processes (kernelc lint keeps them under .kernelc-cache/): a render whose
   * key (template texts, context and declarations) has a shader there is not done again, and new
   * renders are added to it.
   */
  readonly renders?: RenderStore;
  /** What templates read, kept between processes by text (kernelc lint): a template with an entry is not parsed by the checks. */
  readonly templateReadsStore?: TemplateReadsStore;
  /** Shaders' workgroup facts, kept between processes by text (kernelc lint): a shader with an entry is not analysed again. */
  readonly workgroupFactsStore?: WorkgroupFactsStore;
  /** The language of the generated modules (default: the config's `emit`, "ts"): .ts, or .js with .d.ts. */
  readonly emit?: EmitKind;
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
  /** How many distinct shaders were rendered (and validated, unless rendering failed). */
  readonly shaderCount: number;
}

/** Compiles the project of `loaded` (its root, specs and templates) into the files of a bundle. */
export async function compile(loaded: LoadedConfig, options: CompileOptions = {}): Promise<CompileResult> {
  // Tint's validator starts (on its worker threads, which load Dawn themselves) now, so that it
  // comes up while the specs are checked, unless stored verdicts may make it unneeded: then it
  // starts when a shader has none. The generators are loaded only by the phase that uses them.
  let validating: Promise<WgslValidator> | undefined;
  const validator = (): Promise<WgslValidator> =>
    (validating ??= options.validator ? Promise.resolve(options.validator) : WgslValidator.create());
  if (!options.verdicts?.size) void validator().catch(() => undefined);
  try {
    return await compileWith(loaded, options, validator, () => validating);
  } finally {
    // A failed compilation never validates: the validator it started is released all the same.
    const started = await validating?.catch(() => undefined);
    started?.forgetPrefetched();
    if (!options.validator) started?.dispose();
  }
}

async function compileWith(
  loaded: LoadedConfig,
  options: CompileOptions,
  validator: () => Promise<WgslValidator>,
  started: () => Promise<WgslValidator> | undefined,
): Promise<CompileResult> {
  const progress = options.onProgress ?? (() => {});
  const templatesDir = path.resolve(loaded.root, loaded.config.templates);
  // Reports of one problem from several profiles, variants or instances are merged into one diagnostic.
  const diagnostics: Report[] = [];
  const merged = (): Diagnostic[] => sortDiagnostics(dedupeDiagnostics(diagnostics));
  const fail = (profiles: readonly ProfileResult[] = [], shaderCount = 0): CompileResult => ({
    files: new Map(),
    diagnostics: merged(),
    profiles,
    sources,
    shaderCount,
  });
  const failed = (): boolean => diagnostics.some((r) => r.diagnostic.severity === "error");
  // The config's warnings (a duplicate instance, a shadowed profile, a specs or templates folder
  // Windows cannot create) are reported with the build's: loading the config prints nothing.
  diagnostics.push(...loaded.diagnostics.map((diagnostic) => ({ diagnostic })));

  // load + check
  progress("checking specs");
  const lint = lintPaths(
    options.specs ?? [path.resolve(loaded.root, loaded.config.specs)],
    makeCheckContext(templatesDir, options.templateReads, options.templateReadsStore, options.keptChecks, tuneKeysOf(loaded)),
    options.specsOrigin ?? (options.specs ? { paths: options.specs } : specsFromConfig(loaded)),
  );
  const sources = lint.sources;
  diagnostics.push(...lint.diagnostics.map((diagnostic) => ({ diagnostic })));
  if (failed()) return fail();
  await letEventLoopRun();
  const plain: Diagnostic[] = [];
  const profiles = selectProfiles(loaded, options.profiles, plain);
  const kernels = [...lint.kernels].sort((a, b) => (a.spec.name < b.spec.name ? -1 : a.spec.name > b.spec.name ? 1 : 0));
  // Linting some spec files: the config's instances of other kernels are not an error.
  const instances = configuredInstances(loaded, kernels, plain, options.specs === undefined);
  checkConfigPins(loaded, kernels, plain, options.specs === undefined, pointerLocator(sources));
  const only = options.kernels?.length ? new Set(options.kernels) : undefined;
  const unknownKernels = only ? [...only].filter((n) => !kernels.some((k) => k.spec.name === n)) : [];
  if (unknownKernels.length) {
    plain.push(
      makeDiagnostic(
        "unknown_kernel",
        `no spec defines kernel${unknownKernels.length > 1 ? "s" : ""} ${unknownKernels.map((n) => `\`${n}\``).join(", ")}`,
        undefined,
        {
          hint: [
            unknownKernels.length === 1
              ? didYouMean(
                  unknownKernels[0]!,
                  kernels.map((k) => k.spec.name),
                )
              : undefined,
            `kernels: ${kernels.map((k) => k.spec.name).join(", ")}`,
          ]
            .filter((h) => h !== undefined)
            .join(" "),
        },
      ),
    );
  }
  diagnostics.push(...plain.map((diagnostic) => ({ diagnostic })));
  if (!profiles || failed()) return fail();

  // enumerate + render
  // Renders with the same template files, context and declarations are done once (profiles often
  // share them); with options.cache also across compilations.
  const shaderCache = options.cache ?? createShaderCache();
  Object.assign(shaderCache.stats, { rendered: 0, renderReused: 0, validated: 0, validationReused: 0, storeReused: 0 });
  const cache = { shaders: shaderCache, digests: new TemplateDigests(templatesDir) };
  // The renderer keeps parsed templates across compilations with a cache; an edited one is parsed again.
  let renderer = shaderCache.renderers.get(templatesDir);
  if (renderer) renderer.refresh();
  else shaderCache.renderers.set(templatesDir, (renderer = new TemplateRenderer(templatesDir)));
  const ctx: RenderContext = {
    renderer,
    templatesDir,
    shaders: new Map(),
    reports: diagnostics,
    cache,
    declared: new Map(),
    // Shader ids by render are kept with the renders (a kept render is not hashed again).
    memo: { ...createRenderMemo(), ids: shaderCache.renderIds },
    renders: options.renders,
    // Once the validator is up, each new shader goes to Tint as soon as it is rendered: a request
    // is posted to the workers at once, with no need for this thread's event loop to run.
    onShader: (id, rec) => {
      if (ready) prefetchShader(id, rec, startNow, shaderCache, options.verdicts, wanted, prefetched, facts);
    },
  };
  const locate = pointerLocator(sources);
  const wanted = (rec: ShaderRecord): boolean => !only || [...rec.kernels].some((k) => only.has(k));
  const prefetched = new Map<string, number>();
  // Shaders' workgroup facts found by the validation workers beside Tint, by shader id.
  const facts = new Map<string, Promise<WorkgroupFacts | undefined>>();
  // The validator once it is up (set when its promise settles, at one of the event loop's turns).
  let ready: WgslValidator | undefined;
  void started()?.then(
    (v) => (ready = v),
    () => undefined,
  );
  const startNow: StartValidation = (wgsl, features, withFacts) => Promise.resolve(ready!.prefetch(wgsl, features, withFacts));
  const startLater: StartValidation = (wgsl, features, withFacts) =>
    validator().then(
      (v) => (ready = v).prefetch(wgsl, features, withFacts),
      () => undefined,
    );
  const results: ProfileResult[] = [];
  // With a cache kept across compilations (watch), a kernel's enumeration on a profile is reused,
  // with its reports, while everything it is computed from is unchanged: the config (and its file's
  // text, which diagnostics point into), the spec's text and what its templates read.
  const enumerations = options.cache ? shaderCache.enumerations : undefined;
  const configDigest = enumerations ? sha256Hex(JSON.stringify([loaded, loaded.file ? readText(loaded.file) : null])) : "";
  const enumerationsUsed = new Set<string>();
  for (const profile of profiles) {
    const kernelResults: KernelOnProfile[] = [];
    for (const kernel of kernels) {
      progress(`${profile.name}: ${kernel.spec.name} (${ctx.shaders.size} shader${ctx.shaders.size === 1 ? "" : "s"} so far)`);
      const key = enumerations ? enumerationKey(configDigest, kernel, profile, sources) : undefined;
      let enumerated = key !== undefined ? enumerations?.get(key) : undefined;
      if (!enumerated) {
        const reports: Report[] = [];
        enumerated = {
          build: enumerateOnProfile(loaded, kernel, profile, instances.get(kernel.spec.name) ?? [], reports, locate),
          reports,
        };
        if (key !== undefined) enumerations?.set(key, enumerated);
      }
      if (key !== undefined) enumerationsUsed.add(key);
      diagnostics.push(...enumerated.reports);
      await letEventLoopRun();
      const build = enumerated.build;
      kernelResults.push({ build, model: renderKernel(build.kernel, profile, build, ctx) });
      // Validation of what is rendered so far runs beside the next renders.
      for (const [id, rec] of ctx.shaders) prefetchShader(id, rec, startLater, shaderCache, options.verdicts, wanted, prefetched, facts);
      await letEventLoopRun();
    }
    results.push({ profile, kernels: kernelResults });
  }

  for (const key of enumerations?.keys() ?? []) if (!enumerationsUsed.has(key)) enumerations!.delete(key);

  // validate
  const selected = only ? new Map([...ctx.shaders].filter(([, rec]) => wanted(rec))) : ctx.shaders;
  progress(`validating ${selected.size} shader${selected.size === 1 ? "" : "s"}`);
  // Every shader is rendered: this thread would only wait for Tint's verdicts, so it validates part
  // of what the workers have not started yet (WgslValidator.help).
  void started()
    ?.then((v) => v.help())
    .catch(() => undefined);
  await validateShaders(selected, validator, templatesDir, diagnostics, shaderCache, options.verdicts, options.workgroupFactsStore, facts);
  if (failed() || options.generate === false) return fail(results, ctx.shaders.size);

  // generate
  // With a cache (watch), each profile's dispatcher is kept and reused while only shader ids change.
  const reuse = options.cache && {
    dispatchers: options.cache.dispatchers,
    inputs: [
      ...sources.values(),
      loaded.file ? readText(loaded.file) : undefined,
      loaded.tuneFile ? readText(loaded.tuneFile.file) : undefined,
    ],
  };
  return {
    files: await generateFiles(loaded.root, selected, results, options.emit ?? loaded.config.emit, reuse),
    diagnostics: merged(),
    profiles: results,
    sources,
    shaderCount: ctx.shaders.size,
  };
}

/**
 * Lets the event loop run once. Checking, enumerating and rendering are synchronous; between their
 * steps this lets the validator start (its module loads, its workers report ready) and the
 * validation requests reach the workers, which would otherwise all wait for the last render.
 */
function letEventLoopRun(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Starts Tint on a shader text under a feature set; gives its workgroup facts when `withFacts` (undefined when the validation was already started, or fails). */
type StartValidation = (wgsl: string, features: readonly string[], withFacts: boolean) => Promise<WorkgroupFacts | undefined>;

/**
 * Starts Tint on a shader's text under each feature set that validateShaders will ask for and that
 * has no verdict in the cache or the store: the features the shader enables among those of each
 * profile rendering it (as validateShaders computes them). validateShaders then takes the results.
 * `done` holds how many of each shader's feature sets were started. With a shader's first
 * validation, its workgroup facts are asked of the validation thread too (it finds them for its
 * pipeline check), unless the cache has its analysis; the promise goes to `facts`.
 */
function prefetchShader(
  id: string,
  rec: ShaderRecord,
  start: StartValidation,
  cache: ShaderCache,
  store: VerdictStore | undefined,
  wanted: (rec: ShaderRecord) => boolean,
  done: Map<string, number>,
  facts: Map<string, Promise<WorkgroupFacts | undefined>>,
): void {
  // A shader's feature sets only grow, in order: those before the count in `done` were started.
  const started = done.get(id) ?? 0;
  if (started === rec.featureSets.size || !wanted(rec)) return;
  done.set(id, rec.featureSets.size);
  let enabled: Set<string> | undefined;
  let index = 0;
  for (const features of rec.featureSets.values()) {
    if (index++ < started) continue;
    enabled ??= recordEnabledFeatures(rec);
    const relevant = features.filter((f) => enabled!.has(f));
    if (cache.verdicts.has(`${id}|${relevant.join(",")}`) || store?.get(rec.body, relevant)) continue;
    // Taken (and any failure reported) by validateShaders, which awaits the same validator.
    const withFacts = !facts.has(id) && !cache.analyses.has(id);
    const found = start(rec.body, relevant, withFacts);
    if (withFacts) facts.set(id, found);
  }
}

/** The profiles to build: the config's, or those named in the options (unknown names are an error). */
function selectProfiles(
  loaded: LoadedConfig,
  names: readonly string[] | undefined,
  diagnostics: Diagnostic[],
): readonly Profile[] | undefined {
  if (!names || names.length === 0) return loaded.profiles;
  const unknown = names.filter((n) => !loaded.allProfiles.some((p) => p.name === n));
  if (unknown.length) {
    diagnostics.push(
      makeDiagnostic(
        "unknown_profile",
        `unknown profile${unknown.length > 1 ? "s" : ""} ${unknown.map((u) => `\`${u}\``).join(", ")}`,
        undefined,
        {
          hint: knownProfilesHint(
            unknown[0]!,
            loaded.allProfiles.map((p) => p.name),
          ),
        },
      ),
    );
    return undefined;
  }
  return loaded.allProfiles.filter((p) => names.includes(p.name));
}

/**
 * The config's tunable pins name kernels and tunables that exist: a pin of a misspelled tunable
 * (or kernel) would otherwise do nothing, silently. With `allSpecs`, pins of kernels no spec
 * defines are errors too.
 */
function checkConfigPins(
  loaded: LoadedConfig,
  kernels: readonly CheckedKernel[],
  diagnostics: Diagnostic[],
  allSpecs: boolean,
  locate: PointerLocator,
): void {
  const at = (pointer: string): Location | undefined => (loaded.file ? locate(loaded.file, pointer) : undefined);
  const esc = (key: string): string => key.replace(/~/g, "~0").replace(/\//g, "~1");
  for (const [profile, byKernel] of Object.entries(loaded.config.tunables)) {
    for (const [kernel, pins] of Object.entries(byKernel)) {
      const k = kernels.find((c) => c.spec.name === kernel);
      if (!k) {
        if (!allSpecs) continue;
        diagnostics.push(
          makeDiagnostic(
            "config_invalid",
            `the config pins tunables of kernel \`${kernel}\`, which no spec defines`,
            at(`/tunables/${esc(profile)}/${esc(kernel)}`),
            {
              hint:
                didYouMean(
                  kernel,
                  kernels.map((c) => c.spec.name),
                ) ?? `the kernels are ${kernels.map((c) => c.spec.name).join(", ")}`,
            },
          ),
        );
        continue;
      }
      const declared = k.spec.tunables.map((t) => t.name);
      for (const name of Object.keys(pins)) {
        if (declared.includes(name)) continue;
        diagnostics.push(
          makeDiagnostic(
            "unknown_tunable",
            `the config pins tunable \`${name}\` of ${kernel}${profile === "*" ? "" : ` on profile ${profile}`}, but ${kernel} declares no such tunable`,
            at(`/tunables/${esc(profile)}/${esc(kernel)}/${esc(name)}`),
            {
              hint:
                didYouMean(name, declared) ??
                (declared.length ? `the tunables of ${kernel} are ${declared.join(", ")}` : `${kernel} declares no tunables`),
            },
          ),
        );
      }
    }
  }
}

/** The config's instances per kernel, checked against the kernels' leaves; with `allSpecs`, instances of kernels no spec defines are errors. */
function configuredInstances(
  loaded: LoadedConfig,
  kernels: readonly CheckedKernel[],
  diagnostics: Diagnostic[],
  allSpecs: boolean,
): Map<string, ParsedInstance[]> {
  const byKernel = new Map(
    kernels.map((k) => [
      k.spec.name,
      parseInstances(
        k,
        Object.hasOwn(loaded.config.instances, k.spec.name) ? loaded.config.instances[k.spec.name] : [],
        loaded.file,
        diagnostics,
      ),
    ]),
  );
  for (const name of allSpecs ? Object.keys(loaded.config.instances) : []) {
    if (!kernels.some((k) => k.spec.name === name)) {
      diagnostics.push(
        makeDiagnostic(
          "instance_invalid",
          `the config lists instances for kernel \`${name}\`, which no spec defines`,
          loaded.file ? { file: loaded.file, pointer: `/instances/${name}` } : undefined,
          {
            hint:
              didYouMean(
                name,
                kernels.map((k) => k.spec.name),
              ) ?? `the kernels are ${kernels.map((k) => k.spec.name).join(", ")}`,
          },
        ),
      );
    }
  }
  return byKernel;
}

/** Enumerates and prunes one kernel's candidates on one profile, reporting missing instances and variants. */
/**
 * The kernel as built on a profile: with the tune file's per-call rule folded in (every read of a
 * ruled tunable becomes the rule's expression; see src/plan/tuned-rule.ts), unless the config pins
 * one of the ruled tunables (the config takes precedence) or the rule cannot apply (reported).
 */
function tunedKernel(loaded: LoadedConfig, k: CheckedKernel, profile: string, reports: Report[], locate: PointerLocator): CheckedKernel {
  const rec = loaded.tuneFile?.tune.profiles[profile]?.[k.spec.name];
  const perCall = rec?.perCall;
  if (!perCall || !loaded.tuneFile) return k;
  const rule: TunedRule = perCall;
  const configPinned = configPins(loaded.config, profile, k.spec.name);
  if (ruleTunables(rule).some((t) => Object.hasOwn(configPinned, t))) return k;
  const problem = ruleProblem(k, rule);
  if (!problem) return applyRule(k, rule);
  reports.push({
    diagnostic: makeDiagnostic(
      "tune_rule_invalid",
      `the per-call rule for ${k.spec.name} on profile ${profile} cannot apply: ${problem.message}`,
      locate(loaded.tuneFile.file, `/profiles/${profile}/${k.spec.name}/perCall`),
      { hint: problem.hint },
    ),
    where: { profile },
  });
  return k;
}

function enumerateOnProfile(
  loaded: LoadedConfig,
  k: CheckedKernel,
  profile: Profile,
  configured: readonly ParsedInstance[],
  reports: Report[],
  locate: PointerLocator,
): KernelProfileBuild {
  const where = { profile: profile.name };
  // A kernel with no configured instance is built once with nothing pinned: enough when its
  // templates read only build-time values; otherwise it is a warning that nothing was built.
  const implicit = configured.length === 0;
  const facts = { name: profile.name, limits: resolveProfile(profile), features: new Set<string>(profile.features) };
  const ruled = tunedKernel(loaded, k, profile.name, reports, locate);
  let build: KernelProfileBuild;
  try {
    build = enumerateKernel(
      ruled,
      facts,
      pinnedTunables(loaded.config, profile.name, k.spec.name),
      implicit ? [{ name: IMPLICIT_INSTANCE, values: new Map() }] : configured,
      loaded.config.maxCandidates,
    );
  } catch (err) {
    // Too many candidates: reported, and nothing of this kernel is built on this profile.
    if (!(err instanceof UserError)) throw err;
    reports.push(...err.diagnostics.map((diagnostic) => ({ diagnostic, where })));
    return { kernel: ruled, assignments: [], candidates: [], problems: [] };
  }
  for (const a of build.assignments)
    reports.push(...buildTimeConstantProblems(k, a, profile.name).map((diagnostic) => ({ diagnostic, where })));
  if (implicit && build.problems.length) {
    reports.push({
      diagnostic: makeDiagnostic(
        "no_instances",
        `kernel ${k.spec.name} has templates that read per-model values, but kernelc.config.json lists no instances for it: no shader of those passes was built`,
        locate(k.spec.file, "/variants"),
        { hint: `add instances under instances.${k.spec.name}; ${build.problems[0]}` },
      ),
      where,
    });
  }
  for (const p of implicit ? [] : build.problems) {
    reports.push({
      diagnostic: makeDiagnostic(
        "instance_invalid",
        p,
        loaded.file ? locate(loaded.file, `/instances/${k.spec.name}`) : { file: k.spec.file },
        { hint: "add the missing values to the instance in kernelc.config.json" },
      ),
      where,
    });
  }
  if (build.noVariantReason) {
    reports.push({
      diagnostic: makeDiagnostic(
        "no_variant_for_profile",
        `kernel ${k.spec.name} has no variant on a profile: ${build.noVariantReason}`,
        locate(k.spec.file, "/variants"),
        { hint: `calls of ${k.spec.name} on such devices will fail; see \`kernelc explain ${k.spec.name} --profile ${profile.name}\`` },
      ),
      where,
    });
  }
  return build;
}

/** The key of one kernel's enumeration on one profile: the config's digest, the profile, the spec's file and text, and what each pass's templates read. */
function enumerationKey(
  configDigest: string,
  kernel: CheckedKernel,
  profile: Profile,
  sources: ReadonlyMap<string, string>,
): string | undefined {
  const text = sources.get(kernel.spec.file);
  if (text === undefined) return undefined;
  const sorted = (xs: Iterable<string>): string[] => [...xs].sort();
  const reads = kernel.variants.map((v) =>
    v.passes.map((p) => [
      p.shader,
      p.reads ? [sorted(p.reads.names), sorted(p.reads.tunables), sorted(p.reads.dtypes), sorted(p.reads.includes)] : null,
    ]),
  );
  return sha256Hex(JSON.stringify([configDigest, profile, kernel.spec.file, text, reads]));
}

/** A file's text, or undefined when it cannot be read. */
function readText(file: string): string | undefined {
  return readInputFileOrUndefined(file, MAX_INPUT_BYTES);
}

/** A JSON file's location of a pointer, with the span of the member's key (or of the value) when the file parses. */
type PointerLocator = (file: string, pointer: string) => Location;

/** A PointerLocator over the specs already read (`sources`) and, for other files (the config), their text on disk. */
function pointerLocator(sources: ReadonlyMap<string, string>): PointerLocator {
  const trees = new Map<string, JsonNode | undefined>();
  return (file, pointer) => {
    if (!trees.has(file)) {
      let text = sources.get(file);
      text ??= readInputFileOrUndefined(file, MAX_INPUT_BYTES);
      trees.set(file, text === undefined ? undefined : parseJson(text, file).root);
    }
    const root = trees.get(file);
    const target = root ? resolvePointer(root, pointer) : undefined;
    return { file, pointer, ...(target ? { span: target.entry?.keySpan ?? target.node.span } : {}) };
  };
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

/** The bundle's files: shaders (shared across profiles), per profile a dispatcher, a manifest (JSON and module) and kernels.json, profiles.json and the index.ts that loadBundle reads. */
async function generateFiles(
  root: string,
  shaders: ReadonlyMap<string, ShaderRecord>,
  results: readonly ProfileResult[],
  emit: EmitKind,
  reuse?: { readonly dispatchers: Map<string, ReusableDispatcher>; readonly inputs: readonly (string | undefined)[] },
): Promise<Map<string, string>> {
  const [
    { generateBundleIndex, generateManifestModule, indexProfileOf, MANIFEST_MODULE },
    { commentText, generateDispatcher, moduleFiles },
    { dispatcherInputsAllowReuse, reuseDispatcher },
    { manifestFor, profilesIndex },
  ] = await Promise.all([
    import("../emit/bundle-index.js"),
    import("../emit/dispatcher.js"),
    import("../emit/dispatcher-reuse.js"),
    import("../emit/manifest.js"),
  ]);
  const dispatchers = reuse && dispatcherInputsAllowReuse(reuse.inputs) ? reuse.dispatchers : undefined;
  const files = new Map<string, string>();
  for (const [id, rec] of shaders) {
    const rel = `shaders/${id}.wgsl`;
    const header = `// Generated by ${generatedAs(rel)} from ${commentText(
      [...rec.templates]
        .sort()
        .map((t) => `templates/${t}`)
        .join(", "),
    )} for ${commentText([...rec.kernels].sort().join(", "))}. Do not edit.\n`;
    files.set(rel, header + rec.body);
  }
  for (const r of results) {
    const specFiles = r.kernels.map((k) => path.relative(root, k.model.kernel.spec.file).split(path.sep).join("/"));
    const header = `${unnamedModuleHeader(`${commentText(specFiles.join(", "))} for profile ${commentText(r.profile.name)}`)}\n// Regenerate with \`${regenerateCommand(emit)}\`.\n/* eslint-disable */`;
    const models = r.kernels.map((k) => k.model);
    let dispatcher: GeneratedModule;
    if (dispatchers && dispatcherInputsAllowReuse([header])) {
      const kept = dispatchers.get(r.profile.name);
      const reused = reuseDispatcher(
        kept,
        r.kernels.map((k) => k.build),
        models,
        header,
        r.profile.name,
      );
      dispatchers.set(r.profile.name, reused.keep);
      dispatcher = reused.module;
    } else dispatcher = generateDispatcher(models, header, r.profile.name);
    for (const [rel, text] of moduleFiles(`${r.profile.name}/dispatcher`, dispatcher, emit)) files.set(rel, text);
    const described = manifestFor(r.profile, models, specFiles);
    files.set(`${r.profile.name}/manifest.json`, stableJson(described.manifest));
    const manifestModule = generateManifestModule(r.profile.name, described.manifest, emit);
    for (const [rel, text] of moduleFiles(`${r.profile.name}/${MANIFEST_MODULE}`, manifestModule, emit)) files.set(rel, text);
    files.set(`${r.profile.name}/kernels.json`, stableJson(described.kernels));
  }
  files.set("profiles.json", stableJson(profilesIndex(results.map((r) => r.profile))));
  const specFiles = [
    ...new Set(results.flatMap((r) => r.kernels.map((k) => path.relative(root, k.model.kernel.spec.file).split(path.sep).join("/")))),
  ];
  const index = generateBundleIndex(
    results.map((r) => indexProfileOf(r.profile)),
    specFiles,
    [...shaders.keys()],
    emit,
  );
  for (const [rel, text] of moduleFiles("index", index, emit)) files.set(rel, text);
  return new Map([...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
