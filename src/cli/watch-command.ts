/**
 * `kernelc watch`: builds once, then rebuilds out/ whenever a spec, a template or the config
 * changes. Rebuilds reuse what the edit did not affect: a render is redone only when its template
 * or a template it includes changed (or its spec or config did), and Tint validates only shader
 * texts it has not seen, through one validator kept for the whole session. out/ is written by
 * `kernelc build`'s own writer (runBuild with this session's compile): the same checks, lock,
 * build-info and atomic swap.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { compile, type CompileOptions } from "../api/compile.js";
import { loadProjectConfig } from "../api/config.js";
import { createShaderCache, type ShaderCache } from "../emit/shader-cache.js";
import { WgslValidator } from "../emit/validate-wgsl.js";
import { CONFIG_FILE } from "../plan/config.js";
import { BUILD_INFO } from "./build-info.js";
import { runBuild } from "./build-command.js";
import type { Format, Io } from "./io.js";
import { VerdictCache } from "./verdict-cache.js";

/** Options of `kernelc watch`. */
export interface WatchOptions {
  readonly config?: string;
  readonly profile?: string[];
  readonly out?: string;
  readonly format: Format;
  /** Milliseconds to wait after a change for more changes before rebuilding (an editor's save can be several writes). */
  readonly debounceMs?: number;
  /** Called after each rebuild (tests and benchmarks). */
  readonly onRebuild?: (r: RebuildResult) => void;
}

/** What one rebuild did. */
export interface RebuildResult {
  /** Whether out/ was written (false after errors, or when nothing in it changed). */
  readonly wrote: boolean;
  readonly errors: boolean;
  readonly ms: number;
  /** Renders and Tint validations done and reused. */
  readonly stats: ShaderCache["stats"];
}

/** A running watch session. */
export interface WatchSession {
  /** The first build's result. */
  readonly ready: Promise<RebuildResult>;
  /** Stops watching and releases the validator; resolves when a rebuild in progress has finished. */
  close(): Promise<void>;
}

/** Starts watching: builds now, then on every change under the specs and templates folders and to the config file. */
export function startWatch(io: Io, opts: WatchOptions): WatchSession {
  const first = loadProjectConfig(io.cwd, opts.config);
  const configFile = first.file ?? path.join(first.root, CONFIG_FILE);
  const cache = createShaderCache();
  const templateReads: NonNullable<CompileOptions["templateReads"]> = new Map();
  const fileHashes = new Map<string, { readonly text: string; readonly hash: string }>();
  const keptChecks: NonNullable<CompileOptions["keptChecks"]> = new Map();
  const verdicts = VerdictCache.open(first.root);
  const validator = WgslValidator.create();
  const watchers: fs.FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<RebuildResult> | undefined;
  let again = false;
  let closed = false;

  let builds = 0;
  const rebuild = async (): Promise<RebuildResult> => {
    const t0 = performance.now();
    const infoFile = path.join(path.resolve(first.root, opts.out ?? first.config.out), BUILD_INFO);
    const before = readIfPresent(infoFile);
    // The first build compiles even when out/ is current, to fill the cache for the edits to come.
    // Later builds update out/ in place: only the files an edit changed are written.
    const initial = builds++ === 0;
    const buildOptions = {
      config: opts.config,
      profile: opts.profile,
      out: opts.out,
      format: opts.format,
      force: initial,
      inPlace: !initial,
      fileHashes,
    };
    const code = await runBuild(io, buildOptions, async (loaded) =>
      compile(loaded, { profiles: opts.profile, cache, templateReads, keptChecks, validator: await validator, verdicts }),
    );
    verdicts.save();
    const result: RebuildResult = {
      wrote: code === 0 && readIfPresent(infoFile) !== before,
      errors: code !== 0,
      ms: performance.now() - t0,
      stats: { ...cache.stats },
    };
    if (opts.format === "text") {
      const s = result.stats;
      const stats = `(${s.rendered} rendered, ${s.renderReused} reused; ${s.validated} validated, ${s.validationReused} reused)`;
      // A refused or failed rebuild is not "rebuilt": the errors above say what stopped it.
      io.stderr(
        result.errors
          ? `rebuild failed after ${Math.round(result.ms)} ms ${stats}: fix the errors above; still watching\n`
          : `rebuilt in ${Math.round(result.ms)} ms ${stats}\n`,
      );
    }
    opts.onRebuild?.(result);
    return result;
  };

  /** Runs a rebuild now, or once more after the one in progress. */
  const schedule = (): void => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = rebuild().finally(() => {
      running = undefined;
      if (again && !closed) {
        again = false;
        schedule();
      }
    });
  };

  const changed = (): void => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(schedule, opts.debounceMs ?? 5);
  };

  const ready = rebuild();
  running = ready.finally(() => (running = undefined));
  for (const dir of [first.config.specs, first.config.templates]) {
    const abs = path.resolve(first.root, dir);
    if (fs.existsSync(abs)) watchers.push(fs.watch(abs, { recursive: true }, changed));
  }
  watchers.push(fs.watch(path.dirname(configFile), (_event, name) => (name === path.basename(configFile) ? changed() : undefined)));

  return {
    ready,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      for (const w of watchers) w.close();
      await running?.catch(() => undefined);
      (await validator).dispose();
    },
  };
}

/** `kernelc watch`: runs until interrupted (Ctrl-C); exit code 0. */
export async function runWatch(io: Io, opts: WatchOptions): Promise<number> {
  const session = startWatch(io, opts);
  await session.ready;
  if (opts.format === "text") io.stderr("watching for changes (Ctrl-C stops)\n");
  await new Promise<void>((resolve) => process.once("SIGINT", resolve));
  await session.close();
  return 0;
}

/** A file's text, or undefined when it cannot be read. */
function readIfPresent(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
