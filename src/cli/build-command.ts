/** `kernelc build`: compile, then write out/ (or, with --check, compare it with a fresh build). */
import * as fs from "node:fs";
import * as path from "node:path";
import { compile } from "../api/compile.js";
import { loadProjectConfig } from "../api/config.js";
import { makeDiagnostic } from "../core/codes.js";
import { hasErrors } from "../core/diagnostic.js";
import { inputsHash, upToDate, withBuildInfo } from "./build-info.js";
import { printDiagnostics, type Format, type Io } from "./io.js";
import { readTree, writeTreeAtomic } from "./out-dir.js";

/** A progress line on a TTY for builds longer than a second; silent in CI or when piped. */
class Progress {
  private readonly start = Date.now();
  private last = "";
  private shown = false;
  constructor(private readonly io: Io) {}
  update(text: string): void {
    if (!this.io.isTTY || this.io.env.CI === "true" || Date.now() - this.start < 1000) return;
    if (text === this.last) return;
    this.last = text;
    this.shown = true;
    this.io.stderr(`\r\x1b[K${text}`);
  }
  done(): void {
    if (this.shown) this.io.stderr("\r\x1b[K");
  }
}

/** Options of `kernelc build`. */
export interface BuildOptions {
  readonly config?: string;
  readonly profile?: string[];
  readonly out?: string;
  readonly check?: boolean;
  readonly force?: boolean;
  readonly format: Format;
}

/** `kernelc build`. */
export async function runBuild(io: Io, opts: BuildOptions): Promise<number> {
  const loaded = loadProjectConfig(io.cwd, opts.config);
  const outDir = path.resolve(loaded.root, opts.out ?? loaded.config.out);
  const shownOut = path.relative(io.cwd, outDir) || outDir;
  const hash = inputsHash(loaded, opts.profile);
  if (!opts.check && !opts.force && upToDate(outDir, hash)) {
    if (opts.format === "text") io.stderr(`${shownOut}/ is up to date (inputs unchanged; --force rebuilds)\n`);
    return 0;
  }
  const progress = new Progress(io);
  let built;
  try {
    built = await compile(loaded, { profiles: opts.profile, onProgress: (step) => progress.update(`kernelc build: ${step}`) });
  } finally {
    progress.done();
  }
  const result = hasErrors(built.diagnostics) ? built : { ...built, files: withBuildInfo(built.files, hash) };
  const sources = (f: string): string | undefined => result.sources.get(f) ?? (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : undefined);
  printDiagnostics(io, result.diagnostics, opts.format, sources);
  if (hasErrors(result.diagnostics)) {
    if (opts.format === "text") io.stderr(`build failed; ${path.relative(io.cwd, outDir) || "."}/ was left as it was\n`);
    return 1;
  }
  const shaderCount = [...result.files.keys()].filter((f) => f.startsWith("shaders/")).length;
  const current = readTree(outDir);
  if (opts.check) {
    const stale: string[] = [];
    for (const [rel, text] of result.files) if (current.get(rel) !== text) stale.push(rel);
    for (const rel of current.keys()) if (!result.files.has(rel)) stale.push(rel);
    if (stale.length) {
      printDiagnostics(io, [makeDiagnostic("out_stale", `${shownOut}/ is out of date: ${stale.length} file${stale.length > 1 ? "s differ" : " differs"} from a fresh build (${stale.slice(0, 5).join(", ")}${stale.length > 5 ? ", …" : ""})`, { file: outDir }, { hint: "run `npx kernelc build` and commit the result" })], opts.format, sources);
      return 1;
    }
    if (opts.format === "text") io.stderr(`${shownOut}/ is up to date (${result.profiles.length} profiles, ${shaderCount} shaders)\n`);
    return 0;
  }
  const same = current.size === result.files.size && [...result.files].every(([rel, text]) => current.get(rel) === text);
  if (!same) writeTreeAtomic(outDir, result.files);
  if (opts.format === "text") io.stderr(`${same ? "unchanged" : "wrote"} ${shownOut}/: ${result.profiles.length} profiles, ${shaderCount} shaders\n`);
  return 0;
}
