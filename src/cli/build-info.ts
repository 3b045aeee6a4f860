/**
 * build-info.json: the hash of everything a build reads and of every file it wrote, bound together
 * by a digest, so that a later build with the same inputs can tell that out/ is current and skip
 * the work, and so that a file changed after the build (even with its hash updated) is noticed.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { sha256Hex } from "../core/hash.js";
import { KERNELC_VERSION } from "../core/version.js";
import { walkFiles } from "../core/walk.js";
import { BUILD_INFO, buildInfoBound, buildInfoText, carriesGeneratedMark, type BuildInfo, type OnDiskTree } from "../core/out-folder.js";
import type { LoadedConfig } from "../plan/config.js";

export { BUILD_INFO, readBuildInfo, type BuildInfo, type OnDiskTree } from "../core/out-folder.js";

/** kernelc's own folder (dist/ when installed, src/ under the tests). */
const CODE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The hash of the code this process runs, computed once: the code is loaded once, so a session
 * that rebuilds (kernelc watch) hashes it once, and an edit of dist/ during the session does not
 * change what the session's builds are made by.
 */
let codeHash: string | undefined;

/** The `generatedBy` of the build-info.json and pending record kernelc build and watch write. */
export const BUILD_INFO_BY = `kernelc ${KERNELC_VERSION}; do not edit`;

/** A hash of kernelc's own code and schema/, so that a changed compiler never counts as a no-op build. */
export function compilerCodeHash(): string {
  codeHash ??= hashCompilerCode();
  return codeHash;
}

function hashCompilerCode(): string {
  const parts: string[] = [];
  for (const [label, dir] of [
    ["code", CODE_DIR],
    ["schema", path.resolve(CODE_DIR, "../schema")],
  ] as const) {
    for (const rel of walkFiles(dir).files)
      if (/\.(js|ts|json)$/.test(rel) && !rel.endsWith(".map"))
        parts.push(`${label}/${rel}\0${sha256Hex(fs.readFileSync(path.join(dir, rel)))}`);
  }
  return sha256Hex(parts.join("\0"));
}

/** The installed version of a dependency (its package.json next to its entry point), or "unknown". */
function dependencyVersion(name: string): string {
  try {
    let dir = path.dirname(createRequire(import.meta.url).resolve(name));
    for (;;) {
      const file = path.join(dir, "package.json");
      if (fs.existsSync(file)) {
        const pkg = JSON.parse(fs.readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
        if (pkg.name === name && typeof pkg.version === "string") return pkg.version;
      }
      const up = path.dirname(dir);
      if (up === dir) return "unknown";
      dir = up;
    }
  } catch {
    return "unknown";
  }
}

/** The versions the inputs hash records: kernelc's, nunjucks' and the WGSL validator's (the webgpu package). */
export function hashedVersions(): { readonly kernelc: string; readonly nunjucks: string; readonly webgpu: string } {
  return { kernelc: KERNELC_VERSION, nunjucks: dependencyVersion("nunjucks"), webgpu: dependencyVersion("webgpu") };
}

/** What a build covers besides the config: all profiles and kernels, or the subsets named on the command line. */
export interface BuildScope {
  readonly profiles?: readonly string[];
  readonly kernels?: readonly string[];
}

/**
 * A hash of everything a build reads: kernelc's version, code and schema/, the versions of
 * nunjucks and of the WGSL validator (the webgpu package), the config, the specs, the templates,
 * and the profiles and kernels asked for.
 */
export function inputsHash(loaded: LoadedConfig, scope: BuildScope = {}): string {
  const parts = [
    `kernelc ${compilerCodeHash()}`,
    JSON.stringify(hashedVersions()),
    JSON.stringify(loaded.config),
    JSON.stringify(loaded.allProfiles),
    JSON.stringify(scope.profiles?.length ? scope.profiles : null),
    JSON.stringify(scope.kernels?.length ? scope.kernels : null),
  ];
  for (const dir of [loaded.config.specs, loaded.config.templates]) {
    const abs = path.resolve(loaded.root, dir);
    const tree = walkFiles(abs);
    for (const rel of tree.files) parts.push(`${dir}/${rel}\0${hashFile(path.join(abs, rel))}`);
    // A symlink is never read by the build (specs and templates refuse them), but it changes the diagnostics.
    for (const rel of tree.others) parts.push(`${dir}/${rel}\0other`);
  }
  return sha256Hex(parts.join("\0"));
}

/**
 * The SHA-256 of a file's bytes (sha256Hex of its contents), read in chunks: a file of any size in
 * specs/ or templates/ (a stray 3 GB file, which readFileSync refuses past 2 GiB) is hashed in
 * constant memory; the build then reports it if it reads it (file_too_large).
 */
function hashFile(file: string): string {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  try {
    const hash = createHash("sha256");
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let n = fs.readSync(fd, buf, 0, buf.length, null); n > 0; n = fs.readSync(fd, buf, 0, buf.length, null))
      hash.update(buf.subarray(0, n));
    return hash.digest("hex");
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * What differs between a folder as it is on disk and its build-info.json: files missing, extra,
 * changed, listed with their hash but without kernelc's generated-file mark (a record kernelc did
 * not write), symbolic links and other entries, and a digest that does not bind the recorded hashes.
 * Empty when the folder is exactly the build the file describes.
 */
export function verifyAgainstBuildInfo(tree: OnDiskTree, info: BuildInfo): string[] {
  const problems: string[] = [...tree.unexpected];
  if (!buildInfoBound(info))
    problems.push(`${BUILD_INFO} was edited (${info.digest === undefined ? "it has no digest" : "its digest does not match"})`);
  for (const [rel, want] of Object.entries(info.files)) {
    const have = tree.files.get(rel);
    if (!have) problems.push(`${rel} is missing`);
    else if (sha256Hex(have) !== want) problems.push(`${rel} was changed`);
    else if (!carriesGeneratedMark(rel, have)) problems.push(`${rel} lacks kernelc's generated-file mark for its path`);
  }
  for (const rel of tree.files.keys())
    if (rel !== BUILD_INFO && !Object.prototype.hasOwnProperty.call(info.files, rel)) problems.push(`${rel} is not part of the build`);
  return problems;
}

/** Whether the tree on disk is exactly the build of these inputs: its build-info matches, with a valid digest, and every file is as written. */
export function upToDate(tree: OnDiskTree, info: BuildInfo | undefined, hash: string): boolean {
  return info !== undefined && info.inputs === hash && verifyAgainstBuildInfo(tree, info).length === 0;
}

/**
 * Adds build-info.json: the inputs' hash, every file's hash and the digest binding them, so a later
 * build can tell nothing changed. `known` keeps each file's hash with its text across builds
 * (kernelc watch): a file whose text is the same is not hashed again.
 */
export function withBuildInfo(
  files: ReadonlyMap<string, string>,
  hash: string,
  known?: Map<string, { readonly text: string; readonly hash: string }>,
): Map<string, string> {
  const hashes: Record<string, string> = {};
  for (const [rel, text] of files) {
    if (rel === BUILD_INFO) continue;
    const k = known?.get(rel);
    hashes[rel] = k !== undefined && k.text === text ? k.hash : sha256Hex(text);
    known?.set(rel, { text, hash: hashes[rel] });
  }
  if (known) for (const rel of [...known.keys()]) if (!files.has(rel)) known.delete(rel);
  const out = new Map(files);
  out.set(BUILD_INFO, buildInfoText(BUILD_INFO_BY, hash, hashes));
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
