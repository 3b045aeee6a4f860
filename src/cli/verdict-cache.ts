/**
 * Tint's verdicts kept between runs in .kernelc-cache/tint-verdicts.json, so that `kernelc lint`,
 * `build` and `watch` validate only shader texts they have not validated before. The file is a
 * cache, safe to delete, and read with suspicion: a verdict is keyed by the SHA-256 of the exact
 * text and feature set it was found for (a hit skips validating that very text and no other), the
 * whole file is ignored unless it was written by the same validator (the webgpu package's version,
 * the platform, and kernelc's validation code), and an entry of the wrong shape is dropped.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { sha256Hex } from "../core/hash.js";
import type { VerdictStore } from "../emit/shader-cache.js";
import type { WgslProblem } from "../emit/validate-wgsl.js";
import { hashedVersions } from "./build-info.js";
import { KeptEntries, readCacheJson, writeCacheJson } from "./cache-file.js";

/** The verdict cache's file, relative to the project root. */
export const VERDICT_CACHE = ".kernelc-cache/tint-verdicts.json";

/** At most this many verdicts are kept; those of the latest run first. */
const MAX_VERDICTS = 4096;

/** kernelc's emit/ folder (dist/emit when installed, src/emit under the tests). */
const EMIT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../emit");

/** The modules whose code decides a verdict besides Dawn: the validator, its worker and the workgroup-limit check. */
const VALIDATION_MODULES = ["validate-wgsl", "validate-worker", "wgsl-limits"];

let identity: string | undefined;

/**
 * Who found a verdict: the webgpu package (Dawn's Tint) by version, the platform (its binary), and
 * the hash of kernelc's validation code. A cache written under another identity is not used.
 */
export function validatorIdentity(): string {
  if (identity === undefined) {
    const code = VALIDATION_MODULES.map((name) => {
      for (const ext of [".js", ".ts"]) {
        const file = path.join(EMIT_DIR, name + ext);
        if (fs.existsSync(file)) return `${name}${ext}\0${sha256Hex(fs.readFileSync(file))}`;
      }
      return `${name}\0(missing)`;
    });
    identity = `webgpu ${hashedVersions().webgpu}; ${process.platform}-${process.arch}; code ${sha256Hex(code.join("\0"))}`;
  }
  return identity;
}

/** What the file holds. */
interface VerdictFile {
  readonly generatedBy: string;
  readonly validator: string;
  /** SHA-256 of `features + "\n" + wgsl` → Tint's problems. */
  readonly verdicts: Record<string, readonly WgslProblem[]>;
}

/** A VerdictStore read from the project's cache file; save() writes what it learned. */
export class VerdictCache implements VerdictStore {
  private added = 0;

  private constructor(
    private readonly file: string,
    /** Verdicts read from the file and used or found in this run. */
    private readonly entries: KeptEntries<readonly WgslProblem[]>,
  ) {}

  /** The cache of the project at `root` (empty when the file is missing, unreadable, of another validator or malformed). */
  static open(root: string): VerdictCache {
    const file = path.join(root, VERDICT_CACHE);
    return new VerdictCache(file, new KeptEntries(readVerdicts(file)));
  }

  get size(): number {
    return this.entries.size;
  }

  get(wgsl: string, features: readonly string[]): readonly WgslProblem[] | undefined {
    return this.entries.get(verdictKey(wgsl, features));
  }

  set(wgsl: string, features: readonly string[], problems: readonly WgslProblem[]): void {
    this.entries.set(verdictKey(wgsl, features), problems);
    this.added++;
  }

  /** Writes the file when this run found new verdicts (see writeCacheJson). */
  save(): void {
    if (this.added === 0) return;
    this.added = 0;
    const content: VerdictFile = {
      generatedBy: "kernelc: Tint's verdicts on shader texts; a cache, safe to delete",
      validator: validatorIdentity(),
      verdicts: Object.fromEntries(this.entries.kept(MAX_VERDICTS)),
    };
    writeCacheJson(this.file, content);
  }
}

/** The key of a verdict: the SHA-256 of the feature set and the exact text. */
function verdictKey(wgsl: string, features: readonly string[]): string {
  return sha256Hex(`${features.join(",")}\n${wgsl}`);
}

function readVerdicts(file: string): Map<string, readonly WgslProblem[]> {
  const out = new Map<string, readonly WgslProblem[]>();
  const data = readCacheJson(file);
  if (data === undefined || data === null || typeof data !== "object") return out;
  const { validator, verdicts } = data as Partial<Record<keyof VerdictFile, unknown>>;
  if (validator !== validatorIdentity() || verdicts === null || typeof verdicts !== "object" || Array.isArray(verdicts)) return out;
  for (const [key, problems] of Object.entries(verdicts)) {
    if (/^[0-9a-f]{64}$/.test(key) && Array.isArray(problems) && problems.every(isProblem)) out.set(key, problems.map(copyProblem));
  }
  return out;
}

function isProblem(p: unknown): p is WgslProblem {
  if (p === null || typeof p !== "object") return false;
  const q = p as Record<string, unknown>;
  return (
    Number.isInteger(q.line) &&
    Number.isInteger(q.column) &&
    Number.isInteger(q.length) &&
    typeof q.message === "string" &&
    (q.severity === "error" || q.severity === "warning")
  );
}

function copyProblem(p: WgslProblem): WgslProblem {
  return { line: p.line, column: p.column, length: p.length, message: p.message, severity: p.severity };
}
