/**
 * build-info.json: the hash of everything a build reads and of every file it wrote, so that a
 * later build with the same inputs can tell that out/ is current and skip the work.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { sha256Hex } from "../core/hash.js";
import { stableJson } from "../core/stable-json.js";
import { KERNELC_VERSION } from "../core/version.js";
import { walkFiles } from "../core/walk.js";
import type { LoadedConfig } from "../plan/config.js";

/** The name of the build-info file inside out/. */
export const BUILD_INFO = "build-info.json";

let compilerHash: string | undefined;

/** A hash of kernelc's own compiled code, so a changed compiler never counts as a no-op build. */
function compilerCodeHash(): string {
  if (compilerHash === undefined) {
    const parts: string[] = [];
    const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
    for (const rel of walkFiles(dir).files) if (/\.(js|ts|json)$/.test(rel) && !rel.endsWith(".map")) parts.push(`${rel}\0${sha256Hex(fs.readFileSync(path.join(dir, rel)))}`);
    compilerHash = sha256Hex(parts.join("\0"));
  }
  return compilerHash;
}

/** A hash of everything a build reads: kernelc's code and version, the config, the specs, the templates and the profiles asked for. */
export function inputsHash(loaded: LoadedConfig, profiles: readonly string[] | undefined): string {
  const parts = [`kernelc ${KERNELC_VERSION} ${compilerCodeHash()}`, JSON.stringify(loaded.config), JSON.stringify(loaded.allProfiles), JSON.stringify(profiles ?? null)];
  for (const dir of [loaded.config.specs, loaded.config.templates]) {
    const abs = path.resolve(loaded.root, dir);
    for (const rel of walkFiles(abs).files) parts.push(`${dir}/${rel}\0${sha256Hex(fs.readFileSync(path.join(abs, rel)))}`);
  }
  return sha256Hex(parts.join("\0"));
}

/** Whether out/ holds exactly the build of these inputs (its build-info matches and no file was changed). */
export function upToDate(outDir: string, hash: string): boolean {
  let info: { inputs?: string; files?: Record<string, string> };
  try {
    info = JSON.parse(fs.readFileSync(path.join(outDir, BUILD_INFO), "utf8"));
  } catch {
    return false;
  }
  if (info.inputs !== hash || !info.files) return false;
  const tree = walkFiles(outDir);
  if (tree.others.length > 0) return false;
  const present = tree.files.filter((f) => f !== BUILD_INFO);
  if (present.length !== Object.keys(info.files).length) return false;
  for (const rel of present) {
    const want = Object.prototype.hasOwnProperty.call(info.files, rel) ? info.files[rel] : undefined;
    if (want === undefined || sha256Hex(fs.readFileSync(path.join(outDir, rel), "utf8")) !== want) return false;
  }
  return true;
}

/** Adds build-info.json: the inputs' hash and every file's hash, so a later build can tell nothing changed. */
export function withBuildInfo(files: ReadonlyMap<string, string>, hash: string): Map<string, string> {
  const hashes: Record<string, string> = {};
  for (const [rel, text] of files) hashes[rel] = sha256Hex(text);
  const out = new Map(files);
  out.set(BUILD_INFO, stableJson({ generatedBy: `kernelc ${KERNELC_VERSION}; do not edit`, inputs: hash, files: hashes }));
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
