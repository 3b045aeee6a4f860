/**
 * `kernelc build`: compile, then replace out/ (or, with --check, compare it with a fresh build).
 * Writing is guarded: the output folder must be a safe place (out-dir.ts), kernelc's own (marker),
 * locked against concurrent builds (out-lock.ts), and is swapped in whole so a failure or a crash
 * leaves the previous out/ in place.
 */
import * as fs from "node:fs";
import { compile, type CompileResult } from "../api/compile.js";
import { loadProjectConfig } from "../api/config.js";
import { makeDiagnostic } from "../core/codes.js";
import { hasErrors, UserError, type Diagnostic } from "../core/diagnostic.js";
import type { EmitKind } from "../emit/code-writer.js";
import type { LoadedConfig } from "../plan/config.js";
import { carriesGeneratedMark, lstatOrUndefined, updateInPlace } from "../core/out-folder.js";
import { BUILD_INFO, BUILD_INFO_BY, inputsHash, readBuildInfo, upToDate, verifyAgainstBuildInfo, withBuildInfo } from "./build-info.js";
import { fileSources, printDiagnostics, type Format, type Io } from "./io.js";
import { isOsError, osErrorDiagnostic } from "./os-errors.js";
import { acquireOutLock, DEFAULT_LOCK_WAIT_MS } from "./out-lock.js";
import {
  assertWritable,
  auditOutDir,
  checkOwnership,
  MARKER,
  MARKER_TEXT,
  readTreeStrict,
  fillEmptyOutDir,
  recoverOutDir,
  removeProvenTree,
  resolveOutDir,
  stageTree,
  swapIn,
  testPause,
  treeEquals,
  type OutTarget,
} from "./out-dir.js";
import { mergePartial } from "./partial-build.js";
import { Progress } from "./progress.js";
import { VerdictCache } from "./verdict-cache.js";
import { MAX_INPUT_BYTES, readInputFileOrUndefined } from "../core/read-file.js";

/** Options of `kernelc build`. */
export interface BuildOptions {
  readonly config?: string;
  readonly profile?: string[];
  readonly kernel?: string[];
  readonly out?: string;
  readonly check?: boolean;
  readonly force?: boolean;
  /** The language of the generated modules; overrides the config's `emit`. */
  readonly emit?: EmitKind;
  readonly format: Format;
  /**
   * Update out/ in place, writing only the files that changed (kernelc watch; see updateInPlace),
   * when it holds a complete earlier build; otherwise, and by default, the new tree is swapped in whole.
   */
  readonly inPlace?: boolean;
  /** The hash of each file written by earlier builds, with its text (kernelc watch; see withBuildInfo). */
  readonly fileHashes?: Map<string, { readonly text: string; readonly hash: string }>;
}

/** What a build run shares between its steps. */
interface BuildRun {
  readonly io: Io;
  readonly opts: BuildOptions;
  readonly loaded: LoadedConfig;
  readonly target: OutTarget;
  readonly hash: string;
  readonly partial: boolean;
  /** Compiles instead of compile() (kernelc watch: its session's cache and validator). */
  readonly compileWith?: CompileWith;
}

/** A compile function for runBuild: the loaded config in, compile()'s result out. */
export type CompileWith = (loaded: LoadedConfig) => Promise<CompileResult>;

/**
 * `kernelc build`: user errors and errors of the system are printed in the chosen format (exit 1).
 * `compileWith` replaces the compile step (kernelc watch writes out/ through this same writer).
 */
export async function runBuild(io: Io, opts: BuildOptions, compileWith?: CompileWith): Promise<number> {
  try {
    return await build(io, opts, compileWith);
  } catch (err) {
    const diags = err instanceof UserError ? err.diagnostics : isOsError(err) ? [osErrorDiagnostic(err)] : undefined;
    if (!diags) throw err;
    printDiagnostics(io, diags, opts.format, fileSources(io.cwd));
    return 1;
  }
}

async function build(io: Io, opts: BuildOptions, compileWith?: CompileWith): Promise<number> {
  const loaded = withEmit(loadProjectConfig(io.cwd, opts.config), opts.emit);
  const target = resolveOutDir(loaded, io.cwd, opts.out);
  const run: BuildRun = {
    io,
    opts,
    loaded,
    target,
    hash: inputsHash(loaded, { profiles: opts.profile, kernels: opts.kernel }),
    partial: Boolean(opts.profile?.length || opts.kernel?.length),
    compileWith,
  };
  if (opts.check) return runCheck(run);
  const waitMs = Number(io.env.KERNELC_LOCK_WAIT_MS ?? DEFAULT_LOCK_WAIT_MS);
  const release = await acquireOutLock(target.dir, target.shown, {
    waitMs: Number.isFinite(waitMs) && waitMs >= 0 ? waitMs : DEFAULT_LOCK_WAIT_MS,
    onWait: (holder) => {
      if (opts.format === "text") io.stderr(`waiting for another kernelc build (${holder}) to finish writing ${target.shown}/…\n`);
    },
  });
  try {
    testPause(io.env, "locked");
    return await writeBuild(run);
  } catch (err) {
    if (isOsError(err)) throw new UserError([osErrorDiagnostic(err, `the build stopped; ${target.shown}/ was left as it was`)]);
    throw err;
  } finally {
    release();
  }
}

/**
 * The config with --emit applied: the inputs hash covers the config, so a build in the other
 * language is never taken for a no-op.
 */
function withEmit(loaded: LoadedConfig, emit: EmitKind | undefined): LoadedConfig {
  return emit === undefined || emit === loaded.config.emit ? loaded : { ...loaded, config: { ...loaded.config, emit } };
}

/** Compiles the project (the whole of it, or the profiles and kernels asked for), with a progress line. */
async function compileWithProgress(run: BuildRun): Promise<CompileResult> {
  const progress = new Progress(run.io);
  try {
    if (run.compileWith) return await run.compileWith(run.loaded);
    const verdicts = VerdictCache.open(run.loaded.root);
    const result = await compile(run.loaded, {
      profiles: run.opts.profile,
      kernels: run.opts.kernel,
      onProgress: (step) => progress.update(`kernelc build: ${step}`),
      verdicts,
    });
    // `build --check` writes nothing: it takes the verdicts kept, and keeps none.
    if (!run.opts.check) verdicts.save();
    return result;
  } finally {
    progress.done();
  }
}

/** Prints the compile's diagnostics; true when it failed. */
function reportCompile(run: BuildRun, result: CompileResult): boolean {
  const sources = (f: string): string | undefined => result.sources.get(f) ?? readInputFileOrUndefined(f, MAX_INPUT_BYTES);
  printDiagnostics(run.io, result.diagnostics, run.opts.format, sources);
  if (!hasErrors(result.diagnostics)) return false;
  if (run.opts.format === "text") run.io.stderr(`build failed; ${run.target.shown}/ was left as it was\n`);
  return true;
}

/** The final files: the compile's (or, for a partial build, merged into out/'s) plus the marker and build-info.json. */
function finalFiles(run: BuildRun, result: CompileResult, current: ReturnType<typeof readTreeStrict>): Map<string, string> {
  let files: ReadonlyMap<string, string> = result.files;
  if (run.partial && current.files.size > 0) {
    files = mergePartial({
      current,
      built: result.files,
      profiles: result.profiles.map((p) => p.profile.name),
      order: [...run.loaded.config.profiles, ...run.loaded.allProfiles.map((p) => p.name)],
      shown: run.target.shown,
      kernels: run.opts.kernel,
      emit: run.loaded.config.emit,
    });
  }
  return withBuildInfo(new Map([...files, [MARKER, MARKER_TEXT]]), run.hash, run.opts.fileHashes);
}

/**
 * Under the lock: repairs leftovers, checks ownership, audits out/ (an entry kernelc did not write,
 * or a file of its own edited since, stops the build with nothing changed), skips a no-op, compiles
 * and swaps out/ in.
 */
async function writeBuild(run: BuildRun): Promise<number> {
  const { io, opts, target } = run;
  const text = opts.format === "text";
  const recovery = recoverOutDir(target.dir);
  const notices: Diagnostic[] = [...recovery.diagnostics];
  if (recovery.restored && text)
    io.stderr(`restored ${target.shown}/ from ${recovery.restored} (an earlier build was interrupted while replacing it)\n`);
  try {
    const ownership = checkOwnership(target);
    const audited = auditOutDir(target);
    const { info } = audited;
    let current = audited.tree;
    if (!run.partial && !opts.force && upToDate(current, info, run.hash)) {
      printDiagnostics(io, notices, opts.format, () => undefined);
      if (text) io.stderr(`${target.shown}/ is up to date (inputs unchanged; --force rebuilds)\n`);
      return 0;
    }
    if (run.partial && [...current.files.keys()].some((rel) => rel !== MARKER)) {
      const problems = info
        ? verifyAgainstBuildInfo(current, info).filter((p) => !restoredByPartial(run, p))
        : [`${BUILD_INFO} is missing`];
      if (problems.length > 0) {
        throw new UserError([
          makeDiagnostic(
            "out_modified",
            `${target.shown}/ is not the complete build kernelc wrote (${problems.slice(0, 5).join("; ")}${problems.length > 5 ? "; …" : ""}), and a build of some profiles or kernels would keep the rest of it`,
            { file: target.dir },
            {
              hint: "run `kernelc build` without --profile/--kernel to rebuild all of it",
            },
          ),
        ]);
      }
    }
    const result = await compileWithProgress(run);
    if (reportCompile(run, result)) {
      printDiagnostics(io, notices, opts.format, () => undefined);
      return 1;
    }
    // The compile took a while: audit out/ again (the lock keeps other builds out, not the user).
    const again = auditOutDir(target);
    current = again.tree;
    const files = finalFiles(run, result, current);
    // A partial build that changes nothing keeps build-info.json as it is (it may record a full build).
    const same =
      treeEquals(current, files) ||
      (run.partial &&
        again.info !== undefined &&
        treeEquals({ files: dropInfo(current.files), unexpected: current.unexpected }, dropInfo(files)));
    if (!same) assertWritable(target.dir, current);
    if (!same && ownership === "empty" && current.files.size === 0 && current.unexpected.length === 0) {
      fillEmptyOutDir(target.dir, files, BUILD_INFO_BY);
    } else if (
      !same &&
      opts.inPlace &&
      !run.partial &&
      again.info !== undefined &&
      current.unexpected.length === 0 &&
      current.files.has(MARKER)
    ) {
      updateInPlace(target.dir, current, files, again.info.files, BUILD_INFO_BY);
    } else if (!same) {
      const staging = stageTree(target.dir, files);
      try {
        testPause(io.env, "staged");
        notices.push(...swapIn(target.dir, staging, io.env));
      } catch (err) {
        if (fs.existsSync(staging)) removeProvenTree(staging);
        throw err;
      }
    }
    printDiagnostics(io, notices, opts.format, () => undefined);
    const shaderCount = [...files.keys()].filter((f) => f.startsWith("shaders/")).length;
    const profileCount = [...files.keys()].filter((f) => f.endsWith("/manifest.json")).length;
    if (text)
      io.stderr(
        `${same ? "unchanged" : "wrote"} ${target.shown}/: ${profileCount} profile${profileCount === 1 ? "" : "s"}, ${shaderCount} shader${shaderCount === 1 ? "" : "s"}\n`,
      );
    return 0;
  } catch (err) {
    // The refusal comes with the warnings about leftovers beside out/.
    if (err instanceof UserError && notices.length > 0) throw new UserError([...notices, ...err.diagnostics]);
    throw err;
  }
}

/**
 * Whether a problem verifyAgainstBuildInfo found is a file kernelc wrote that is missing and that
 * this partial build writes again anyway: the marker, the bundle index (made from the manifests), the
 * files of the profiles it builds (the config's with --kernel alone), or a shader (the merge
 * checks that every shader a kept manifest needs is there). Not profiles.json: it says which
 * profiles' folders to keep.
 */
function restoredByPartial(run: BuildRun, problem: string): boolean {
  const m = / is missing$/.exec(problem);
  if (!m) return false;
  const rel = problem.slice(0, m.index);
  if (rel === MARKER || /^index\.(?:ts|js|d\.ts)$/.test(rel) || rel.startsWith("shaders/")) return true;
  const top = rel.split("/")[0]!;
  return rel.includes("/") && (run.opts.profile?.length ? run.opts.profile : run.loaded.config.profiles).includes(top);
}

/** The entries of a file map other than build-info.json. */
function dropInfo<V>(m: ReadonlyMap<string, V>): Map<string, V> {
  return new Map([...m].filter(([rel]) => rel !== BUILD_INFO));
}

/** `build --check` on an output path that holds something other than a folder. */
function notAFolder(target: OutTarget, st: fs.Stats): Diagnostic {
  const what = st.isSymbolicLink() ? "a symbolic link" : st.isFile() ? "a file" : "a special file";
  return makeDiagnostic(
    "out_unexpected",
    `${target.shown} is ${what}, not the folder of a build: kernelc did not write it`,
    { file: target.dir },
    { hint: `choose another output folder (the config's "out" or --out), or move ${target.shown} away and run \`npx kernelc build\`` },
  );
}

/** `build --check` with no output folder at all. */
function missingOut(target: OutTarget): Diagnostic {
  return makeDiagnostic(
    "out_stale",
    `${target.shown}/ does not exist: nothing was built there yet`,
    { file: target.dir },
    {
      hint: "run `npx kernelc build` and commit the result",
    },
  );
}

/** `build --check`: compiles and compares with what is on disk, byte for byte; writes nothing. */
async function runCheck(run: BuildRun): Promise<number> {
  const { io, opts, target } = run;
  const result = await compileWithProgress(run);
  if (reportCompile(run, result)) return 1;
  // Not a folder, or none at all: say that, not that every file of the build differs.
  const st = lstatOrUndefined(target.dir);
  if (!st || !st.isDirectory()) {
    printDiagnostics(io, [st ? notAFolder(target, st) : missingOut(target)], opts.format, () => undefined);
    return 1;
  }
  const current = readTreeStrict(target.dir);
  // A partial check leaves out the whole-bundle lists (profiles.json, the bundle index), which name every profile.
  const expected = run.partial
    ? new Map([...result.files].filter(([rel]) => rel !== "profiles.json" && !/^index\.(?:ts|js|d\.ts)$/.test(rel)))
    : withBuildInfo(new Map([...result.files, [MARKER, MARKER_TEXT]]), run.hash);
  const inScope = (rel: string): boolean => !run.partial || result.profiles.some((p) => rel.startsWith(`${p.profile.name}/`));
  const diags: Diagnostic[] = [];
  const unexpected = current.unexpected.filter(inScope);
  const extra = [...current.files.keys()].filter((rel) => !expected.has(rel) && inScope(rel));
  // A file the out folder's build-info.json lists, with kernelc's mark, was written by an earlier
  // build (another `--emit`, a spec or profile since removed), not by someone else.
  const listed = readBuildInfo(target.dir)?.files ?? {};
  const earlier = (rel: string): boolean => {
    const bytes = current.files.get(rel);
    return Object.hasOwn(listed, rel) && bytes !== undefined && carriesGeneratedMark(rel, bytes);
  };
  // out/ built with the other `--emit` than this check's: say so once, in every hint.
  const builtEmit = current.files.has("index.js") ? "js" : current.files.has("index.ts") ? "ts" : undefined;
  const checkEmit = run.loaded.config.emit;
  const buildHint =
    builtEmit !== undefined && builtEmit !== checkEmit
      ? `${target.shown}/ holds the ${builtEmit === "js" ? "JavaScript" : "TypeScript"} modules of \`build --emit ${builtEmit}\`, and this check builds --emit ${checkEmit}: check with \`npx kernelc build --check --emit ${builtEmit}\` (or set "emit": "${builtEmit}" in the config), or run \`npx kernelc build\` and commit the result`
      : undefined;
  for (const entry of [...unexpected, ...extra]) {
    const why = entry.endsWith(")") ? "" : earlier(entry) ? " (an earlier build wrote it)" : " (kernelc did not write it)";
    diags.push(
      makeDiagnostic(
        "out_unexpected",
        `${target.shown}/${entry} is not part of the build${why}`,
        { file: target.dir },
        {
          hint:
            buildHint ??
            (earlier(entry)
              ? "run `npx kernelc build` (it removes the files earlier builds wrote) and commit the result"
              : `move it out of ${target.shown}/ or delete it (kernelc never removes what it did not write), then run \`npx kernelc build\` and commit the result`),
        },
      ),
    );
  }
  const stale: string[] = [];
  for (const [rel, text] of expected) {
    const have = current.files.get(rel);
    // build-info.json is bookkeeping for no-op builds: its inputs hash covers kernelc's own
    // compiled code, which differs between a clean dist/ and one with stale files, so --check
    // requires it to be there but compares only what the build generates.
    if (rel === BUILD_INFO && have) continue;
    if (!have || !have.equals(Buffer.from(text, "utf8"))) stale.push(rel);
  }
  if (stale.length) {
    diags.push(
      makeDiagnostic(
        "out_stale",
        `${target.shown}/ is out of date: ${stale.length} file${stale.length > 1 ? "s differ" : " differs"} from a fresh build (${stale.slice(0, 5).join(", ")}${stale.length > 5 ? ", …" : ""})`,
        { file: target.dir },
        { hint: buildHint ?? "run `npx kernelc build` and commit the result" },
      ),
    );
  }
  if (diags.length) {
    printDiagnostics(io, diags, opts.format, () => undefined);
    return 1;
  }
  const shaderCount = [...expected.keys()].filter((f) => f.startsWith("shaders/")).length;
  if (opts.format === "text")
    io.stderr(
      `${target.shown}/ is up to date (${result.profiles.length} profile${result.profiles.length === 1 ? "" : "s"}, ${shaderCount} shader${shaderCount === 1 ? "" : "s"})\n`,
    );
  return 0;
}
