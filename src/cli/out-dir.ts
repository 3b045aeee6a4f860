/**
 * The output folder: where it may be (never the project root, above it, outside it, or in specs/,
 * templates/, .git or node_modules), how kernelc knows it wrote it (the `.kernelc-out` marker, or
 * for folders written before the marker a build-info.json that matches every file), reading it
 * as it is on disk, and replacing it so that a crash at any moment loses nothing: the new tree is
 * staged beside it, swapped in by two renames, and the next build restores the previous tree if a
 * crash fell between them. Removal only ever touches folders kernelc wrote.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { UserError, type Diagnostic } from "../core/diagnostic.js";
import { sha256Hex } from "../core/hash.js";
import type { LoadedConfig } from "../plan/config.js";
import { BUILD_INFO, readBuildInfo, verifyAgainstBuildInfo, type OnDiskTree } from "./build-info.js";

/** The marker file kernelc writes into every output folder. */
export const MARKER = ".kernelc-out";

/** The marker's text: what the folder is and that kernelc replaces it. */
export const MARKER_TEXT =
  "This folder is written by kernelc (`npx kernelc build`); each build replaces its contents.\n" +
  "kernelc only replaces a folder that holds this file. Do not put your own files here.\n";

/** Folders (by name) that an output folder may never be in or contain. */
const PROTECTED_NAMES = [".git", "node_modules"] as const;

/** The output folder of a build: its real path (symlinks followed) and how to show it. */
export interface OutTarget {
  readonly dir: string;
  readonly shown: string;
}

/** `child` is `parent` or inside it (both real, absolute). */
function within(child: string, parent: string): boolean {
  if (child === parent) return true;
  const rel = path.relative(parent, child);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
}

/**
 * The real path of `target` (relative to `base`), resolved as the OS would: each existing
 * component with symlinks followed, `..` applied to the real folder, and the part that does not
 * exist yet appended as written.
 */
export function resolveReal(base: string, target: string): string {
  const full = path.isAbsolute(target) ? target : `${base}${path.sep}${target}`;
  const fsRoot = path.parse(full).root;
  let cur = fs.realpathSync(fsRoot);
  let exists = true;
  for (const part of full.slice(fsRoot.length).split(/[\\/]+/)) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      cur = path.dirname(cur);
      exists = true;
      continue;
    }
    const next = path.join(cur, part);
    if (exists) {
      try {
        cur = fs.realpathSync(next);
        continue;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
        exists = false;
      }
    }
    cur = next;
  }
  return cur;
}

/**
 * The build's output folder (`--out`, else the config's `out`, relative to the project root),
 * resolved with symlinks followed and checked: it must lie inside the project, below its root,
 * and neither in nor around specs/, templates/, .git or node_modules. Throws UserError (`out_unsafe`).
 */
export function resolveOutDir(loaded: LoadedConfig, cwd: string, outOption: string | undefined): OutTarget {
  const written = outOption ?? loaded.config.out;
  const root = fs.realpathSync(loaded.root);
  const dir = resolveReal(root, written);
  const shownRel = path.relative(cwd, dir);
  const shown = shownRel === "" ? "." : shownRel.startsWith("..") || path.isAbsolute(shownRel) ? dir : shownRel;
  const fromConfig = outOption === undefined;
  const origin = fromConfig ? `the config's out "${written}"` : `--out ${written}`;
  const refuse = (why: string): never => {
    throw new UserError([
      makeDiagnostic(
        "out_unsafe",
        `refusing to write the output folder ${dir} (${origin}): ${why}; a build replaces the whole output folder`,
        fromConfig && loaded.file ? { file: loaded.file, pointer: "/out" } : undefined,
        {
          hint: `use a folder of its own inside the project, such as "out"${fromConfig ? ` (the "out" field of ${loaded.file ? path.basename(loaded.file) : "kernelc.config.json"})` : " (--out out)"}`,
        },
      ),
    ]);
  };
  if (dir === root) refuse("it is the project root");
  if (within(root, dir)) refuse(`it contains the project root ${root}`);
  if (!within(dir, root)) refuse(`it is outside the project ${root}`);
  const guarded: [string, string][] = [
    [`specs folder "${loaded.config.specs}"`, resolveReal(root, loaded.config.specs)],
    [`templates folder "${loaded.config.templates}"`, resolveReal(root, loaded.config.templates)],
    ...PROTECTED_NAMES.map((n): [string, string] => [`${n} folder`, resolveReal(root, n)]),
  ];
  for (const [name, p] of guarded) {
    if (within(dir, p)) refuse(dir === p ? `it is the ${name}` : `it is inside the ${name}`);
    if (within(p, dir)) refuse(`it contains the ${name}`);
  }
  const parts = path.relative(root, dir).split(path.sep);
  const bad = parts.find((p) => (PROTECTED_NAMES as readonly string[]).includes(p));
  if (bad) refuse(`it is inside a ${bad} folder`);
  return { dir, shown };
}

/** Reads `dir` as it is on disk, without following symbolic links; a missing folder is empty. */
export function readTreeStrict(dir: string): OnDiskTree {
  const files = new Map<string, Buffer>();
  const unexpected: string[] = [];
  const visit = (abs: string, rel: string): void => {
    const entries = fs.readdirSync(abs, { withFileTypes: true });
    if (entries.length === 0 && rel !== "") unexpected.push(`${rel}/ (empty folder)`);
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const p = path.join(abs, e.name);
      if (e.isSymbolicLink()) unexpected.push(`${r} (symbolic link)`);
      else if (e.isDirectory()) visit(p, r);
      else if (e.isFile()) files.set(r, fs.readFileSync(p));
      else unexpected.push(`${r} (special file)`);
    }
  };
  if (lstatOrUndefined(dir)?.isDirectory()) visit(dir, "");
  return { files, unexpected: unexpected.sort() };
}

function lstatOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Whether `dir`'s files are exactly those of `files` (byte for byte) with nothing else there. */
export function treeEquals(tree: OnDiskTree, files: ReadonlyMap<string, string>): boolean {
  if (tree.unexpected.length > 0 || tree.files.size !== files.size) return false;
  for (const [rel, text] of files) {
    const have = tree.files.get(rel);
    if (!have || !have.equals(Buffer.from(text, "utf8"))) return false;
  }
  return true;
}

/** How kernelc knows a folder: missing, empty, marked (has the marker), legacy (an unmarked folder exactly as its build-info.json describes). */
export type Ownership = "missing" | "empty" | "marked" | "legacy";

/** Whether kernelc may replace `dir`. Throws UserError (`out_not_ours`) when it may not. */
export function checkOwnership(target: OutTarget): Ownership {
  const st = lstatOrUndefined(target.dir);
  if (!st) return "missing";
  const refuse = (why: string): never => {
    throw new UserError([
      makeDiagnostic(
        "out_not_ours",
        `${target.shown}/ exists and was not written by kernelc: ${why}`,
        { file: target.dir },
        {
          hint: `kernelc replaces its output folder as a whole, so it only replaces a folder it wrote (one holding a ${MARKER} file). Move your files out of ${target.shown}/ or choose another output folder`,
        },
      ),
    ]);
  };
  if (!st.isDirectory()) refuse("it is not a folder");
  if (fs.readdirSync(target.dir).length === 0) return "empty";
  if (lstatOrUndefined(path.join(target.dir, MARKER))?.isFile()) return "marked";
  const info = readBuildInfo(target.dir);
  if (!info) return refuse(`it has no ${MARKER} marker and no ${BUILD_INFO} of kernelc`);
  const problems = verifyAgainstBuildInfo(readTreeStrict(target.dir), info);
  if (problems.length > 0)
    refuse(
      `it has no ${MARKER} marker, and it is not exactly the build its ${BUILD_INFO} describes (${problems.slice(0, 3).join("; ")}${problems.length > 3 ? "; …" : ""})`,
    );
  return "legacy";
}

/** A pause point of the test hook: the build waits there while `KERNELC_TEST_PAUSE_AT` names it. */
export type PausePoint = "locked" | "staged" | "swap" | "cleanup";

/**
 * The test hook: when `KERNELC_TEST_PAUSE_AT` names `point`, creates `$KERNELC_TEST_PAUSE_FILE.reached`
 * and waits until `$KERNELC_TEST_PAUSE_FILE` exists, so a test can kill the build exactly there.
 */
export function testPause(env: Readonly<Record<string, string | undefined>>, point: PausePoint): void {
  const file = env.KERNELC_TEST_PAUSE_FILE;
  if (env.KERNELC_TEST_PAUSE_AT !== point || !file) return;
  fs.writeFileSync(`${file}.reached`, `${process.pid}\n`);
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (!fs.existsSync(file)) Atomics.wait(cell, 0, 0, 10);
}

const LEFTOVER = /^\.(.+)\.(tmp|old)-/;

/** Names for a staging folder and a previous tree beside `outDir`. */
function siblingName(outDir: string, kind: "tmp" | "old"): string {
  return path.join(path.dirname(outDir), `.${path.basename(outDir)}.${kind}-${process.pid}-${randomBytes(4).toString("hex")}`);
}

/** Writes one file and flushes it to disk. */
function writeDurable(file: string, text: string): void {
  const fd = fs.openSync(file, "wx", 0o666);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } catch (err) {
    // Errors of calls on a descriptor (ENOSPC from write) carry no path: name the file.
    (err as NodeJS.ErrnoException).path ??= file;
    throw err;
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // Not every platform can open or flush a folder; the renames are still atomic.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Writes `files` into a new staging folder beside `outDir` (marker first, build-info last, each
 * flushed) with the user's umask, and returns its path; on failure removes it and rethrows.
 */
export function stageTree(outDir: string, files: ReadonlyMap<string, string>): string {
  fs.mkdirSync(path.dirname(outDir), { recursive: true });
  const staging = siblingName(outDir, "tmp");
  fs.mkdirSync(staging, 0o777);
  try {
    const order = [...files.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
    for (const rel of order) {
      const p = path.join(staging, ...rel.split("/"));
      fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o777 });
      writeDurable(p, files.get(rel)!);
    }
    fsyncDir(staging);
  } catch (err) {
    removeOwnedTree(staging);
    throw err;
  }
  return staging;
}

function rank(rel: string): number {
  return rel === MARKER ? 0 : rel === BUILD_INFO ? 2 : 1;
}

/**
 * Brings a kernelc-written `outDir` (the tree `current`, marker included, nothing unexpected) to
 * `files` by touching only what differs: each new or changed file is written beside itself and
 * renamed over (so a reader never sees a partly written file), shaders first and build-info.json
 * last; then files no longer built, and folders left empty, are removed. For kernelc watch, where a
 * template edit changes a few shaders of a large tree: files are not flushed to disk one by one as
 * `kernelc build`'s staged swap does, and an interruption leaves a mixed tree whose build-info.json
 * no longer matches its inputs, which the next build replaces whole.
 */
export function updateInPlace(outDir: string, current: OnDiskTree, files: ReadonlyMap<string, string>): void {
  const order = [...files.keys()].sort((a, b) => writeRank(a) - writeRank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const write = (rel: string): void => {
    const text = files.get(rel)!;
    const have = current.files.get(rel);
    if (have && have.equals(Buffer.from(text, "utf8"))) return;
    const p = path.join(outDir, ...rel.split("/"));
    fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o777 });
    const tmp = path.join(path.dirname(p), `.${path.basename(p)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
    try {
      fs.writeFileSync(tmp, text, { flag: "wx", mode: 0o666 });
      fs.renameSync(tmp, p);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw err;
    }
  };
  for (const rel of order) if (rel !== BUILD_INFO) write(rel);
  const emptied = new Set<string>();
  for (const rel of current.files.keys()) {
    if (files.has(rel) || rel === MARKER || rel === BUILD_INFO) continue;
    fs.rmSync(path.join(outDir, ...rel.split("/")), { force: true });
    for (let dir = path.posix.dirname(rel); dir !== "."; dir = path.posix.dirname(dir)) emptied.add(dir);
  }
  // Deepest first, so that a folder whose subfolders were emptied is empty in its turn.
  for (const dir of [...emptied].sort((a, b) => b.split("/").length - a.split("/").length)) {
    const abs = path.join(outDir, ...dir.split("/"));
    if (fs.readdirSync(abs).length === 0) fs.rmdirSync(abs);
  }
  if (files.has(BUILD_INFO)) write(BUILD_INFO);
  else fs.rmSync(path.join(outDir, BUILD_INFO), { force: true });
}

/** Shaders before the files that name them (dispatchers, manifests, index.ts), build-info.json last. */
function writeRank(rel: string): number {
  return rel === MARKER ? 0 : rel.startsWith("shaders/") ? 1 : rel === BUILD_INFO ? 3 : 2;
}

/**
 * Replaces `outDir` by `staging`: the previous tree is renamed aside, the staged one renamed in,
 * then the previous one removed. A crash between the renames is repaired by `recoverOutDir`.
 */
export function swapIn(outDir: string, staging: string, env: Readonly<Record<string, string | undefined>>): void {
  const old = lstatOrUndefined(outDir) ? siblingName(outDir, "old") : undefined;
  if (old) fs.renameSync(outDir, old);
  testPause(env, "swap");
  try {
    fs.renameSync(staging, outDir);
  } catch (err) {
    if (old) fs.renameSync(old, outDir);
    throw err;
  }
  fsyncDir(path.dirname(outDir));
  testPause(env, "cleanup");
  if (old) removeOwnedTree(old);
}

/** Removes a folder kernelc wrote, its marker last, so that an interrupted removal is still recognized as kernelc's. */
export function removeOwnedTree(dir: string): void {
  if (!lstatOrUndefined(dir)?.isDirectory()) return;
  for (const name of fs.readdirSync(dir)) if (name !== MARKER) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
  fs.rmSync(path.join(dir, MARKER), { force: true });
  fs.rmdirSync(dir);
}

/** Whether a leftover staging or previous folder is kernelc's: empty, marked, or holding a kernelc build-info.json. */
function ownedLeftover(dir: string): boolean {
  const st = lstatOrUndefined(dir);
  if (!st?.isDirectory()) return false;
  if (fs.readdirSync(dir).length === 0) return true;
  if (lstatOrUndefined(path.join(dir, MARKER))?.isFile()) return true;
  return readBuildInfo(dir) !== undefined;
}

/** What `recoverOutDir` did. */
export interface Recovery {
  /** The previous tree put back as out/ (an interrupted swap), if any. */
  readonly restored?: string;
  /** Leftovers removed. */
  readonly removed: readonly string[];
  /** Warnings for leftovers kernelc cannot prove it wrote (kept). */
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * Repairs what an interrupted build left beside `outDir` (call it holding the lock): when out/ is
 * missing, puts back the newest complete previous tree; then removes every leftover staging or
 * previous folder that kernelc wrote, and warns about any other.
 */
export function recoverOutDir(outDir: string): Recovery {
  const parent = path.dirname(outDir);
  const base = path.basename(outDir);
  let names: string[];
  try {
    names = fs.readdirSync(parent);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { removed: [], diagnostics: [] };
    throw err;
  }
  const leftovers = names.filter((n) => LEFTOVER.exec(n)?.[1] === base).map((n) => path.join(parent, n));
  let restored: string | undefined;
  if (!lstatOrUndefined(outDir)) {
    const complete = leftovers
      .filter((p) => /\.old(-|$)/.test(path.basename(p)) && ownedLeftover(p))
      .filter((p) => {
        const info = readBuildInfo(p);
        return info !== undefined && verifyAgainstBuildInfo(readTreeStrict(p), info).length === 0;
      })
      .sort((a, b) => fs.lstatSync(b).mtimeMs - fs.lstatSync(a).mtimeMs);
    if (complete.length > 0) {
      fs.renameSync(complete[0]!, outDir);
      restored = complete[0];
    }
  }
  const removed: string[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const p of leftovers) {
    if (p === restored) continue;
    if (ownedLeftover(p)) {
      removeOwnedTree(p);
      removed.push(p);
    } else if (lstatOrUndefined(p)) {
      diagnostics.push(
        makeDiagnostic(
          "out_leftover",
          `${p} looks like a leftover of an interrupted build, but kernelc cannot tell that it wrote it, so it is left in place`,
          { file: p },
          { hint: "remove it if it is not yours" },
        ),
      );
    }
  }
  return { restored, removed, diagnostics };
}

/** The id a shader file's name promises checks out: its body (after the one-line header) hashes to it. */
export function shaderBodyMatches(id: string, text: string): boolean {
  const nl = text.indexOf("\n");
  return nl >= 0 && sha256Hex(text.slice(nl + 1)).slice(0, 16) === id;
}
