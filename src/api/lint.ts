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
): CheckContext {
  return {
    templatesDir: path.resolve(templatesDir),
    limitNames: new Set(LIMIT_NAMES),
    featureNames: new Set(FEATURE_NAMES),
    templateReadsCache,
    ...(templateReadsStore ? { templateReadsStore } : {}),
    ...(keptChecks ? { keptChecks } : {}),
  };
}

export interface LintResult {
  readonly diagnostics: readonly Diagnostic[];
  readonly kernels: readonly CheckedKernel[];
  /** The files read, with their text (for code frames). */
  readonly sources: ReadonlyMap<string, string>;
}

/** Lints the spec files and folders named by `paths`. */
export function lintPaths(paths: readonly string[], ctx: CheckContext): LintResult {
  const found = discoverSpecFiles(paths);
  const diagnostics: Diagnostic[] = [...found.diagnostics];
  const kernels: CheckedKernel[] = [];
  const sources = new Map<string, string>();
  const names = new Map<string, string>();
  for (const file of found.files) {
    const loaded = loadSpecPath(file);
    try {
      sources.set(file, fs.readFileSync(file, "utf8"));
    } catch {
      /* unreadable: loadSpecPath already reported it */
    }
    diagnostics.push(...loaded.diagnostics);
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
