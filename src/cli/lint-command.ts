/**
 * `kernelc lint`: checks spec files and, unless `--no-render`, renders every variant's templates
 * for the configured profiles (or `--profile`) and validates them with Tint, like `build` but
 * without writing anything. A template error is found here, not first by `build`.
 */
import * as path from "node:path";
import { compile } from "../api/compile.js";
import { loadProjectConfig } from "../api/config.js";
import { lintPaths, makeCheckContext, specsFromConfig, tuneKeysOf, type SpecsOrigin } from "../api/lint.js";
import { hasErrors } from "../core/diagnostic.js";
import { fileSources, printDiagnostics, type Format, type Io } from "./io.js";
import { RenderCache } from "./render-cache.js";
import { VerdictCache } from "./verdict-cache.js";

/** Options of `kernelc lint`. */
export interface LintOptions {
  readonly templates?: string;
  readonly config?: string;
  readonly profile?: string[];
  /** False with `--no-render`: schema, expression and reference checks only. */
  readonly render: boolean;
  /** False with `--no-cache`: render every shader and validate it with Tint, ignoring and leaving alone the renders and verdicts kept in .kernelc-cache/. */
  readonly cache?: boolean;
  readonly format: Format;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** `kernelc lint [paths…]`: exit 0 when there are no errors, 1 otherwise. */
export async function runLint(io: Io, paths: readonly string[] | undefined, opts: LintOptions): Promise<number> {
  const loaded = loadProjectConfig(io.cwd, opts.config);
  const templatesDir =
    opts.templates !== undefined ? path.resolve(io.cwd, opts.templates) : path.resolve(loaded.root, loaded.config.templates);
  const given = paths !== undefined && paths.length > 0;
  const specs = given ? paths.map((p) => path.resolve(io.cwd, p)) : [path.resolve(loaded.root, loaded.config.specs)];
  const specsOrigin: SpecsOrigin = given ? { paths } : specsFromConfig(loaded);
  if (!opts.render) {
    const result = lintPaths(specs, makeCheckContext(templatesDir, undefined, undefined, undefined, tuneKeysOf(loaded)), specsOrigin);
    // The config's warnings first, as compile() reports them.
    const diagnostics = [...loaded.diagnostics, ...result.diagnostics];
    printDiagnostics(io, diagnostics, opts.format, fileSources(io.cwd, result.sources));
    if (opts.format === "text" && diagnostics.length === 0) io.stderr(`${plural(result.kernels.length, "spec")} checked, no problems\n`);
    return hasErrors(diagnostics) ? 1 : 0;
  }
  const project = { ...loaded, config: { ...loaded.config, templates: path.relative(loaded.root, templatesDir) || "." } };
  const verdicts = opts.cache === false ? undefined : VerdictCache.open(loaded.root);
  const renders = opts.cache === false ? undefined : RenderCache.open(loaded.root);
  const result = await compile(project, {
    specs,
    specsOrigin,
    profiles: opts.profile,
    generate: false,
    verdicts,
    renders,
    templateReadsStore: renders?.templateReads,
    workgroupFactsStore: renders?.workgroupFacts,
  });
  verdicts?.save();
  renders?.save();
  printDiagnostics(io, result.diagnostics, opts.format, fileSources(io.cwd, result.sources));
  if (opts.format === "text" && result.diagnostics.length === 0) {
    const kernels = result.profiles[0]?.kernels.length ?? 0;
    io.stderr(
      `${plural(kernels, "spec")} checked, ${plural(result.shaderCount, "shader")} rendered and validated for ${plural(result.profiles.length, "profile")}, no problems\n`,
    );
  }
  return hasErrors(result.diagnostics) ? 1 : 0;
}
