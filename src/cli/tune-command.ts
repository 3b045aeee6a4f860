/// <reference types="@webgpu/types" preserve="true" />
/**
 * `kernelc tune`: measures the candidate tunable settings of the config's `tune` section on this
 * machine's GPU (Dawn, the `webgpu` package) and writes the winners to kernelc.tune.json, which
 * `kernelc build` reads as pins. Measurements are cached in .kernelc-cache/tune.json (signed with
 * this user's key, like the other caches) so that a re-run measures only what changed and an
 * interrupted run keeps what it measured.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { loadProjectConfig } from "../api/config.js";
import { makeDiagnostic } from "../core/codes.js";
import { hasErrors, UserError } from "../core/diagnostic.js";
import { stableJson } from "../core/stable-json.js";
import { TUNE_FILE } from "../plan/tune-file.js";
import { tuneProfile, type MeasurementCache } from "../tune/tune.js";
import { readCacheJson, writeCacheJson } from "./cache-file.js";
import { printDiagnostics, type Format, type Io } from "./io.js";
import { Progress } from "./progress.js";

/** The measurement cache's folder and file, relative to the project root. */
export const TUNE_CACHE = ".kernelc-cache/tune.json";

/** Options of `kernelc tune`. */
export interface TuneCommandOptions {
  readonly profile: string;
  readonly kernel?: string[];
  readonly repeats?: string;
  readonly config?: string;
  /** Extra Dawn toggles, e.g. "enable-dawn-features=vulkan_enable_f16_on_nvidia". */
  readonly dawnFlag?: string[];
  readonly format: Format;
}

/** Writes `text` to `file` through a temporary file and a rename (never a half-written file). */
function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/**
 * The measurements of the cache file, signed as every cache under .kernelc-cache/ is
 * (cli/cache-file.ts): an unsigned, edited or foreign file (one committed to a pull request, whose
 * times would choose the tuned pins) is not read, and the run measures again.
 */
function readCache(file: string): MeasurementCache {
  const data = readCacheJson(file) as { measurements?: unknown } | undefined;
  const out: MeasurementCache = new Map();
  const measurements = data !== null && typeof data === "object" ? data.measurements : undefined;
  if (measurements === null || typeof measurements !== "object") return out;
  for (const [k, v] of Object.entries(measurements))
    if (/^[0-9a-f]{64}$/.test(k) && typeof v === "number" && Number.isFinite(v) && v >= 0) out.set(k, v);
  return out;
}

/** `kernelc tune`. */
export async function runTune(io: Io, opts: TuneCommandOptions): Promise<number> {
  const loaded = loadProjectConfig(io.cwd, opts.config);
  const repeats = opts.repeats === undefined ? 7 : Number(opts.repeats);
  if (!Number.isInteger(repeats) || repeats < 1 || repeats > 1000) {
    throw new UserError([makeDiagnostic("usage", `--repeats must be a whole number from 1 to 1000, not \`${opts.repeats}\``)]);
  }
  const cacheFile = path.join(loaded.root, TUNE_CACHE);
  const cacheDir = path.dirname(cacheFile);
  if (fs.existsSync(cacheDir) && !fs.statSync(cacheDir).isDirectory()) {
    throw new UserError([
      makeDiagnostic(
        "tune_unavailable",
        `${path.relative(io.cwd, cacheDir)} exists and is not a folder; kernelc keeps its tune measurements there`,
        { file: cacheDir },
        { hint: "move that file away" },
      ),
    ]);
  }
  const { create } = await import("webgpu");
  const gpu = create(["disable-dawn-features=timestamp_quantization", ...(opts.dawnFlag ?? [])]);
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) {
    throw new UserError([
      makeDiagnostic("tune_unavailable", "no WebGPU adapter: kernelc tune measures on this machine's GPU", undefined, {
        hint: "run it on a machine with a GPU and a Vulkan, Metal or D3D12 driver (on Linux without a GPU, Mesa's lavapipe works: VK_DRIVER_FILES=…/lvp_icd.json)",
      }),
    ]);
  }
  const cache = readCache(cacheFile);
  const progress = new Progress(io);
  let result;
  try {
    result = await tuneProfile(loaded, {
      profile: opts.profile,
      ...(opts.kernel ? { kernels: opts.kernel } : {}),
      adapter,
      repeats,
      cache,
      date: new Date().toISOString().slice(0, 10),
      onProgress: (step) => progress.update(`kernelc tune: ${step}`),
      onMeasured: (c) =>
        writeCacheJson(cacheFile, {
          generatedBy: "kernelc tune; a cache, safe to delete",
          measurements: Object.fromEntries([...c].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
        }),
    });
  } finally {
    progress.done();
  }
  for (const w of result.warnings) io.stderr(`warning: ${w}\n`);
  printDiagnostics(io, result.diagnostics, opts.format, (f) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : undefined));
  if (hasErrors(result.diagnostics)) return 1;
  const file = path.join(loaded.root, TUNE_FILE);
  writeAtomic(file, stableJson(result.tune));
  const records = result.tune.profiles[opts.profile] ?? {};
  for (const [kernel, rec] of Object.entries(records)) {
    if (opts.kernel && !opts.kernel.includes(kernel)) continue;
    const m = rec.measured;
    const pins =
      Object.entries(rec.pins)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ") || "(defaults)";
    const margin =
      m.margin === undefined
        ? "the only candidate"
        : `the runner-up takes ${((m.margin - 1) * 100).toFixed(1)}% longer: ${Object.entries(m.runnerUp!.pins)
            .map(([k, v]) => `${k}=${v}`)
            .join(" ")}`;
    io.stdout(
      `${opts.profile} ${kernel}: ${pins}  ${m.winner.score} ms (geomean of ${m.calls.length} call${m.calls.length === 1 ? "" : "s"}), ${margin}; ${m.candidates} candidates\n`,
    );
  }
  if (opts.format === "text")
    io.stderr(`wrote ${path.relative(io.cwd, file) || file}; run \`kernelc build\` to build with the tuned pins\n`);
  return 0;
}
