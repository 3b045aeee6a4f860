/**
 * `kernelc lint`: load, validate and check spec files, returning every diagnostic. Pure with
 * respect to its inputs: reads files, writes nothing.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { checkKernel, type CheckContext, type KeptCheck, type TemplateReadsStore } from "../check/check-spec.js";
import { type CheckedKernel } from "../model/checked.js";
import { dedupeDiagnostics } from "../core/dedupe.js";
import { sortDiagnostics, type Diagnostic } from "../core/diagnostic.js";
import { discoverSpecFiles, loadSpecPath } from "../load/load-spec.js";
import { FEATURE_NAMES, LIMIT_NAMES } from "../plan/profiles.js";
import type { LoadedConfig } from "../plan/config.js";
import { makeDiagnostic } from "../core/codes.js";

/**
 * A check context for a project rooted at `templatesDir`'s parent. `templateReadsCache` keeps the
 * templates' parsed reads (by real path, size and modification time) across checks (kernelc watch);
 * `templateReadsStore` keeps them by text between processes (kernelc lint); `keptChecks` keeps each
 * spec's check for the next compilation (kernelc watch; see KeptCheck).
 */
export function makeCheckContext(
  templatesDir: string,
  templateReadsCache: CheckContext["templateReadsCache"] = new Map(),
  templateReadsStore?: TemplateReadsStore,
  keptChecks?: Map<string, KeptCheck>,
  tuneKeys?: CheckContext["tuneKeys"],
): CheckContext {
  return {
    templatesDir: path.resolve(templatesDir),
    limitNames: new Set(LIMIT_NAMES),
    featureNames: new Set(FEATURE_NAMES),
    templateReadsCache,
    ...(templateReadsStore ? { templateReadsStore } : {}),
    ...(keptChecks ? { keptChecks } : {}),
    ...(tuneKeys ? { tuneKeys } : {}),
  };
}

/**
 * Per kernel, the derive entries per-call tune rules key on: the config's `tune.<kernel>.by` and
 * the `perCall.by` of kernelc.tune.json's records. The check counts them as used.
 */
export function tuneKeysOf(loaded: LoadedConfig): Map<string, Set<string>> {
  const keys = new Map<string, Set<string>>();
  const add = (kernel: string, by: string | undefined): void => {
    if (by === undefined) return;
    let set = keys.get(kernel);
    if (!set) keys.set(kernel, (set = new Set()));
    set.add(by);
  };
  for (const [kernel, section] of Object.entries(loaded.config.tune)) add(kernel, section.by);
  for (const byKernel of Object.values(loaded.tuneFile?.tune.profiles ?? {}))
    for (const [kernel, rec] of Object.entries(byKernel)) add(kernel, rec.perCall?.by);
  return keys;
}

export interface LintResult {
  readonly diagnostics: readonly Diagnostic[];
  readonly kernels: readonly CheckedKernel[];
  /** The files read, with their text (for code frames). */
  readonly sources: ReadonlyMap<string, string>;
}

/**
 * Where the spec paths of a lint or build came from: paths given by the user (command line or
 * lint()'s `paths`), or the config's `specs` folder (with the config file, if there is one). It
 * only shapes the messages of a missing or empty folder: what was searched and how to fix it.
 */
export type SpecsOrigin = { readonly paths: readonly string[] } | { readonly configFile: string | undefined; readonly specs: string };

/** The origin of the config's specs folder. */
export function specsFromConfig(loaded: LoadedConfig): SpecsOrigin {
  return { configFile: loaded.file, specs: loaded.config.specs };
}

/** Only a folder's own .json files are specs: said in every hint about a folder with none. */
const OWN_FILES = "only a folder's own .json files are read, not its subfolders'";

/** The hint of a spec path that cannot be read. */
function unreadableHint(origin: SpecsOrigin | undefined): string | undefined {
  if (!origin) return undefined;
  if ("paths" in origin) return "check the path: spec files and folders are relative to the current folder";
  return origin.configFile
    ? `the "specs" field of ${path.basename(origin.configFile)} names this folder (${JSON.stringify(origin.specs)}): create it and add a spec, or set "specs" to the folder that holds your specs`
    : 'with no kernelc.config.json the specs folder is "specs": create it and add a spec (`npx kernelc init` writes an example), or create kernelc.config.json with "specs" naming the folder that holds your specs';
}

/** `no_specs`: the paths searched hold no spec file, so there is nothing to check or build. */
function noSpecs(paths: readonly string[], origin: SpecsOrigin | undefined): Diagnostic {
  if (origin && !("paths" in origin)) {
    const folder = paths[0]!;
    const hint = origin.configFile
      ? `add a kernel spec (a .json file) to the folder, or set the "specs" field of ${path.basename(origin.configFile)} (now ${JSON.stringify(origin.specs)}) to the folder that holds your specs; ${OWN_FILES}`
      : `add a kernel spec (a .json file) to the folder (\`npx kernelc init\` writes an example), or create kernelc.config.json with "specs" naming the folder that holds your specs; ${OWN_FILES}`;
    return makeDiagnostic("no_specs", `no spec files: the specs folder ${folder} holds no .json file`, { file: folder }, { hint });
  }
  const shown = origin && "paths" in origin ? origin.paths : paths;
  return makeDiagnostic(
    "no_specs",
    shown.length === 1 ? `no spec files: ${shown[0]} holds no .json file` : `no spec files: none of ${shown.join(", ")} holds a .json file`,
    paths.length === 1 ? { file: paths[0]! } : undefined,
    { hint: `give spec files (*.json) or folders that hold them; ${OWN_FILES}` },
  );
}

/**
 * Lints the spec files and folders named by `paths` (`origin`: where they came from, for the
 * messages). Paths that exist but hold no spec file are a `no_specs` error: a lint or a build of
 * nothing must not report success.
 */
export function lintPaths(paths: readonly string[], ctx: CheckContext, origin?: SpecsOrigin): LintResult {
  const found = discoverSpecFiles(paths);
  const hint = unreadableHint(origin);
  const diagnostics: Diagnostic[] = found.diagnostics.map((d) => (hint && d.code === "file_unreadable" && !d.hint ? { ...d, hint } : d));
  if (found.files.length === 0 && diagnostics.length === 0) diagnostics.push(noSpecs(paths, origin));
  const kernels: CheckedKernel[] = [];
  const sources = new Map<string, string>();
  const names = new Map<string, string>();
  for (const file of found.files) {
    const loaded = loadSpecPath(file);
    // Unreadable (or not a regular file, or too large): loadSpecPath reported it.
    if (loaded.text !== undefined) sources.set(file, loaded.text);
    // A template (or another file) named on the command line is read as a spec: say what lint takes.
    const notSpec = file.endsWith(".json")
      ? undefined
      : `the file is read as a spec because the command line names it: kernelc lint takes spec files (*.json) and folders of them, and checks each template through the passes that name it`;
    diagnostics.push(...loaded.diagnostics.map((d) => (notSpec && d.code === "json_syntax" && !d.hint ? { ...d, hint: notSpec } : d)));
    if (!loaded.spec) continue;
    const checked = checkKernel(loaded.spec, ctx);
    diagnostics.push(...checked.diagnostics);
    if (checked.kernel) {
      const prev = names.get(loaded.spec.name);
      if (prev) {
        diagnostics.push({
          code: "duplicate_id",
          severity: "error",
          message: `two specs define the kernel \`${loaded.spec.name}\``,
          location: { file, pointer: "/name" },
          hint: "kernel names must be unique across the specs folder",
          notes: [{ message: "the other is here", location: { file: prev, pointer: "/name" } }],
        });
      }
      names.set(loaded.spec.name, file);
      kernels.push(checked.kernel);
    }
  }
  return { diagnostics: sortDiagnostics(dedupeDiagnostics(diagnostics)), kernels, sources };
}
