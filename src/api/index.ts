/**
 * kernelc's programmatic API (the package root, `import { build } from "kernelc"`): load a
 * project's config, lint its specs, build its bundle and explain a kernel, each returning
 * diagnostics and files as data. Nothing here prints, writes a file or exits; user errors are
 * diagnostics in the result, never exceptions (an exception is a bug).
 */
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { hasErrors, UserError, type Diagnostic } from "../core/diagnostic.js";
import { renderText, summaryLine } from "../core/render-diagnostics.js";
import { KERNELC_VERSION } from "../core/version.js";
import type { Call } from "../model/plan.js";
import { callDiagnostics, callOutcomeJson, callOutcomeText, explainCall, explainReport } from "../emit/explain.js";
import type { LoadedConfig } from "../plan/config.js";
import { explainCandidates, type ExplainedCandidate } from "../emit/explain-values.js";
import { compile, type ProfileResult } from "./compile.js";
import { loadProjectConfig } from "./config.js";
import { lintPaths, makeCheckContext, specsFromConfig, tuneKeysOf } from "./lint.js";
import { checkKernelArg, checkOptions, knownProfilesHint, noKernelDiagnostic } from "./options.js";

export type { Diagnostic, DiagnosticNote, Location, Severity, Span } from "../core/diagnostic.js";
export type { KernelcConfig, LoadedConfig } from "../plan/config.js";
export type { Profile } from "../plan/profiles.js";
export type { Call, KernelsFile, Manifest, Plan } from "../model/plan.js";
export type { ExplainedCandidate, ShaderExplain } from "../emit/explain-values.js";

/** kernelc's version (the package's). */
export const version: string = KERNELC_VERSION;

/** Where a project is: its folder and, optionally, its config file. */
export interface ProjectOptions {
  /** The folder relative paths are resolved against; default: process.cwd(). */
  readonly cwd?: string | undefined;
  /** The config file, relative to `cwd`; default: `cwd`'s kernelc.config.json if present, else the defaults. */
  readonly config?: string | undefined;
}

/** What loadConfig returns: the config (undefined when it is invalid) and its diagnostics. */
export interface ConfigResult {
  readonly ok: boolean;
  readonly config: LoadedConfig | undefined;
  readonly diagnostics: readonly Diagnostic[];
}

/** Loads and validates a project's kernelc.config.json (or the defaults when there is none). */
export function loadConfig(options: ProjectOptions = {}): ConfigResult {
  const usage = checkOptions("loadConfig", options, ["cwd", "config"]);
  if (usage.length) return { ok: false, config: undefined, diagnostics: usage };
  return loadChecked(options ?? {});
}

/** loadConfig() of options already checked. */
function loadChecked(options: ProjectOptions): ConfigResult {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  try {
    const config = loadProjectConfig(cwd, options.config);
    return { ok: true, config, diagnostics: config.diagnostics };
  } catch (err) {
    if (err instanceof UserError) return { ok: false, config: undefined, diagnostics: err.diagnostics };
    throw err;
  }
}

/** Options of lint(). */
export interface LintOptions extends ProjectOptions {
  /** Spec files or folders, relative to `cwd`; default: the config's specs folder. */
  readonly paths?: readonly string[] | undefined;
  /** The templates folder, relative to `cwd`; default: the config's templates folder. */
  readonly templates?: string | undefined;
}

/** What lint() returns. */
export interface LintResult {
  /** No errors (warnings allowed). */
  readonly ok: boolean;
  readonly diagnostics: readonly Diagnostic[];
  /** The names of the kernels that checked, in file order. */
  readonly kernels: readonly string[];
  /** The text of every file read, by absolute path (for code frames: see formatDiagnostics). */
  readonly sources: ReadonlyMap<string, string>;
}

/** Lints spec files: schema, expressions, types, references and shader paths. */
export function lint(options: LintOptions = {}): LintResult {
  const usage = checkOptions("lint", options, ["cwd", "config", "paths", "templates"]);
  if (usage.length) return { ok: false, diagnostics: usage, kernels: [], sources: new Map() };
  options ??= {};
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const loaded = loadChecked(options);
  if (!loaded.config) return { ok: false, diagnostics: loaded.diagnostics, kernels: [], sources: new Map() };
  const { root, config } = loaded.config;
  const templates = options.templates !== undefined ? path.resolve(cwd, options.templates) : path.resolve(root, config.templates);
  const given = options.paths && options.paths.length > 0;
  const paths = given ? options.paths!.map((p) => path.resolve(cwd, p)) : [path.resolve(root, config.specs)];
  const result = lintPaths(
    paths,
    makeCheckContext(templates, undefined, undefined, undefined, tuneKeysOf(loaded.config)),
    given ? { paths: options.paths! } : specsFromConfig(loaded.config),
  );
  // The config's warnings first, as `kernelc lint` prints them.
  const diagnostics = [...loaded.diagnostics, ...result.diagnostics];
  return {
    ok: !hasErrors(diagnostics),
    diagnostics,
    kernels: result.kernels.map((k) => k.spec.name),
    sources: result.sources,
  };
}

/** Options of build(). */
export interface BuildOptions extends ProjectOptions {
  /** Build only these profiles; default: the config's. */
  readonly profiles?: readonly string[] | undefined;
  /** Called with a short description of each step (for a progress display). */
  readonly onProgress?: ((step: string) => void) | undefined;
  /** The language of the generated modules: "ts", or "js" with .d.ts declarations; default: the config's `emit` ("ts"). */
  readonly emit?: "ts" | "js" | undefined;
}

/** What build() returns. */
export interface BuildResult {
  /** No errors (warnings allowed); when false, `files` is empty. */
  readonly ok: boolean;
  readonly diagnostics: readonly Diagnostic[];
  /** The bundle's files by "/"-separated path relative to the out folder, in sorted order. */
  readonly files: ReadonlyMap<string, string>;
  /** The profiles built, in run-time preference order. */
  readonly profiles: readonly string[];
  /** The absolute path of the config's out folder (where the CLI would write `files`). */
  readonly outDir: string | undefined;
  /** The text of every spec read, by absolute path (for code frames: see formatDiagnostics). */
  readonly sources: ReadonlyMap<string, string>;
}

/** Compiles a project into the files of its bundle (shaders, per-profile dispatchers and manifests, index). Writes nothing. */
export async function build(options: BuildOptions = {}): Promise<BuildResult> {
  // The types allow only these; a JavaScript caller gets a diagnostic (an emit other than ts or js
  // is not taken for the other language).
  const usage = checkOptions("build", options, ["cwd", "config", "profiles", "onProgress", "emit"]);
  if (usage.length) return { ok: false, diagnostics: usage, files: new Map(), profiles: [], outDir: undefined, sources: new Map() };
  options ??= {};
  const loaded = loadChecked(options);
  if (!loaded.config)
    return { ok: false, diagnostics: loaded.diagnostics, files: new Map(), profiles: [], outDir: undefined, sources: new Map() };
  const config = loaded.config;
  const result = await compile(config, {
    ...(options.profiles ? { profiles: options.profiles } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.emit ? { emit: options.emit } : {}),
  });
  const ok = !hasErrors(result.diagnostics);
  return {
    ok,
    diagnostics: result.diagnostics,
    files: ok ? result.files : new Map(),
    profiles: result.profiles.map((p) => p.profile.name),
    outDir: path.resolve(config.root, config.config.out),
    sources: result.sources,
  };
}

/** Options of explain(). */
export interface ExplainOptions extends ProjectOptions {
  /** The profile to explain the kernel on. */
  readonly profile: string;
  /** A call ({inputs, outputs, attrs}) to explain the variant choice for. */
  readonly call?: Call | undefined;
  readonly onProgress?: ((step: string) => void) | undefined;
}

/** What explain() returns. */
export interface ExplainResult {
  readonly ok: boolean;
  readonly diagnostics: readonly Diagnostic[];
  /**
   * Every candidate (variant × dtypes × tunables) with its status and reason; a built one also
   * with the values of the spec's `explain` derive entries per built shader; empty on errors.
   */
  readonly candidates: readonly ExplainedCandidate[];
  /** The report `kernelc explain` prints (with the call's part when a call was given). */
  readonly text: string;
  /** For a call: the variant picked and why each higher-priority one was rejected (as `kernelc explain --format json` prints it). */
  readonly call: unknown;
}

/** Why each candidate of a kernel is emitted or pruned on a profile; with a call, which variant it picks and why. */
export async function explain(kernel: string, options: ExplainOptions): Promise<ExplainResult> {
  const failed = (diagnostics: readonly Diagnostic[]): ExplainResult => ({
    ok: false,
    diagnostics,
    candidates: [],
    text: "",
    call: undefined,
  });
  const usage = [
    ...checkKernelArg(kernel),
    ...checkOptions("explain", options, ["cwd", "config", "profile", "call", "onProgress"], ["profile"]),
  ];
  if (usage.length) return failed(usage);
  const loaded = loadChecked(options);
  if (!loaded.config) return failed(loaded.diagnostics);
  const config = loaded.config;
  if (!config.allProfiles.some((p) => p.name === options.profile)) {
    return failed([
      makeDiagnostic("unknown_profile", `unknown profile \`${options.profile}\``, undefined, {
        hint: knownProfilesHint(
          options.profile,
          config.allProfiles.map((p) => p.name),
        ),
      }),
    ]);
  }
  const result = await compile(config, { profiles: [options.profile], ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
  if (hasErrors(result.diagnostics)) return failed(result.diagnostics);
  const built: ProfileResult | undefined = result.profiles[0];
  const entry = built?.kernels.find((k) => k.model.kernel.spec.name === kernel);
  if (!built || !entry) {
    const names = built?.kernels.map((k) => k.model.kernel.spec.name) ?? [];
    return failed([...result.diagnostics, noKernelDiagnostic(kernel, names)]);
  }
  const candidates = explainCandidates(entry.build, entry.model);
  let text = explainReport(entry.build, built.profile, candidates);
  let call: unknown;
  let diagnostics = result.diagnostics;
  if (options.call !== undefined) {
    // A call that is invalid or that no variant accepts is explained all the same, with an error.
    const outcome = explainCall(entry.model, options.call);
    text += "\n" + callOutcomeText(entry.model, outcome);
    call = callOutcomeJson(outcome);
    diagnostics = [...diagnostics, ...callDiagnostics(entry.model, outcome)];
  }
  return { ok: !hasErrors(diagnostics), diagnostics, candidates, text, call };
}

/** Renders diagnostics as `kernelc` prints them (code frames from `sources`, then a summary line); "" for none. */
export function formatDiagnostics(diagnostics: readonly Diagnostic[], sources: ReadonlyMap<string, string> = new Map()): string {
  if (diagnostics.length === 0) return "";
  return renderText(diagnostics, (file) => sources.get(file)) + summaryLine(diagnostics) + "\n";
}
