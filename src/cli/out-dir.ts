/**
 * The output folder: where it may be (never the project root, above it, outside it, or in specs/,
 * templates/, .git or node_modules), how kernelc knows it wrote it (the `.kernelc-out` marker, or
 * for folders written before the marker a build-info.json that matches every file), reading it
 * as it is on disk, and replacing it so that a crash at any moment loses nothing: the new tree is
 * staged beside it, swapped in by two renames, and the next build restores the previous tree if a
 * crash fell between them. Before anything in it is replaced, the folder is audited (core/out-folder.ts):
 * an entry kernelc did not write, or one of its files edited since, stops the build with nothing
 * changed. Removal only ever touches entries kernelc can prove it wrote.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { UserError, type Diagnostic } from "../core/diagnostic.js";
import { sha256Hex } from "../core/hash.js";
import { nonPortablePart, portableSuggestion } from "../core/portable-path.js";
import {
  assertGeneratedMarks,
  assertWritable,
  auditClean,
  auditDiagnostics,
  auditTree,
  BUILD_INFO,
  buildInfoBound,
  lstatOrUndefined,
  MARKER,
  PENDING,
  readBuildInfo,
  readPending,
  readTreeStrict,
  unrecordedDiagnostic,
  updateInPlace,
  type BuildInfo,
  type OnDiskTree,
} from "../core/out-folder.js";
import type { LoadedConfig } from "../plan/config.js";
import { verifyAgainstBuildInfo } from "./build-info.js";
import { isOsError, osErrorWhat } from "./os-errors.js";

export { assertWritable, MARKER, MARKER_TEXT, readTreeStrict } from "../core/out-folder.js";

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
  const where = fromConfig ? ` (the "out" field of ${loaded.file ? path.basename(loaded.file) : "kernelc.config.json"})` : "";
  const refuse = (why: string, hint?: string): never => {
    throw new UserError([
      makeDiagnostic(
        "out_unsafe",
        `refusing to write the output folder ${dir} (${origin}): ${why}; a build replaces the whole output folder`,
        fromConfig && loaded.file ? { file: loaded.file, pointer: "/out" } : undefined,
        { hint: hint ?? `use a folder of its own inside the project, such as "out"${fromConfig ? where : " (--out out)"}` },
      ),
    ]);
  };
  if (/[\u0000-\u001f\u007f-\u009f]/.test(written)) refuse("its path holds a control character (a newline, a tab, an escape)");
  // A name Windows cannot create: the build works here, and its output cannot be checked out there.
  const unportable = nonPortablePart(written);
  if (unportable)
    refuse(
      `it cannot be created on Windows: ${unportable.why}`,
      `use a portable path${where}, such as ${fromConfig ? JSON.stringify(portableSuggestion(written)) : `--out ${portableSuggestion(written)}`} (no device name like CON or NUL, none of < > : " | ? *, no trailing dot or space)`,
    );
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
  const through = fileOnPath(root, dir);
  if (through !== undefined) refuse(`its path goes through ${path.relative(root, through) || through}, which is a file, not a folder`);
  const parts = path.relative(root, dir).split(path.sep);
  const bad = parts.find((p) => (PROTECTED_NAMES as readonly string[]).includes(p));
  if (bad) refuse(`it is inside a ${bad} folder`);
  return { dir, shown };
}

/** The nearest existing ancestor of `dir` (below `root`) when it is not a folder, else undefined. */
function fileOnPath(root: string, dir: string): string | undefined {
  for (let p = path.dirname(dir); p !== root && within(p, root); p = path.dirname(p)) {
    try {
      return fs.statSync(p).isDirectory() ? undefined : p;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
    }
  }
  return undefined;
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
  if (lstatOrUndefined(path.join(target.dir, MARKER))?.isFile()) {
    // A marked folder without its record (nor the pending record of a first build interrupted
    // while filling an empty folder): kernelc cannot tell its files from anyone else's.
    const recorded = readBuildInfo(target.dir) !== undefined || readPending(target.dir) !== undefined;
    const unrecorded = recorded ? undefined : unrecordedDiagnostic(readTreeStrict(target.dir), target.shown, target.dir);
    if (unrecorded) throw new UserError([unrecorded]);
    return "marked";
  }
  const info = readBuildInfo(target.dir);
  if (!info) return refuse(`it has no ${MARKER} marker and no ${BUILD_INFO} of kernelc`);
  // A marker that is all that is missing (out/ copied without its dotfiles), from a folder that
  // matches a build-info.json whose digest binds it: every file is proven kernelc's all the same.
  const markerOnly = buildInfoBound(info) && Object.hasOwn(info.files, MARKER);
  const problems = verifyAgainstBuildInfo(readTreeStrict(target.dir), info).filter((p) => !(markerOnly && p === `${MARKER} is missing`));
  if (problems.length > 0)
    refuse(
      `it has no ${MARKER} marker, and it is not exactly the build its ${BUILD_INFO} describes (${problems.slice(0, 3).join("; ")}${problems.length > 3 ? "; …" : ""})`,
    );
  return "legacy";
}

/** An output folder as audited: what is on disk, its build-info.json and its pending record. */
export interface AuditedOut {
  readonly tree: OnDiskTree;
  readonly info: BuildInfo | undefined;
  readonly pending: Readonly<Record<string, readonly string[]>> | undefined;
}

/**
 * Reads the output folder (call it after checkOwnership) and checks that every entry in it is
 * kernelc's: throws UserError with `out_unexpected` for each entry kernelc did not write and
 * `out_modified` for each of its files changed since it wrote it. No flag or config skips it.
 */
export function auditOutDir(target: OutTarget): AuditedOut {
  const tree = readTreeStrict(target.dir);
  const info = readBuildInfo(target.dir);
  const pending = readPending(target.dir);
  if (tree.files.size === 0 && tree.unexpected.length === 0) return { tree, info, pending };
  const diags = auditDiagnostics(auditTree(tree, info, pending), target.shown, target.dir);
  if (diags.length > 0) throw new UserError(diags);
  return { tree, info, pending };
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

/**
 * The exact names `siblingName` gives (`.<out>.tmp-<pid>-<8 hex>`, `.<out>.old-…`): a user's
 * `.out.old-backup` or `.out.tmp-mine` is not a leftover, and is never removed or restored as out/.
 */
const LEFTOVER = /^\.(.+)\.(tmp|old)-\d+-[0-9a-f]{8}$/;

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
 * Writes `files` into a new staging folder beside `outDir` (each flushed) with the user's umask,
 * and returns its path; on failure removes what it wrote and rethrows. The marker comes first and
 * build-info.json second, so that a staging folder left by a crash lists every file it may hold
 * with its hash, and the next build can prove it is kernelc's before removing it. Every file must
 * carry kernelc's generated-file mark (else it throws before writing: a bug).
 */
export function stageTree(outDir: string, files: ReadonlyMap<string, string>): string {
  assertGeneratedMarks(files);
  fs.mkdirSync(path.dirname(outDir), { recursive: true });
  const staging = siblingName(outDir, "tmp");
  fs.mkdirSync(staging, 0o777);
  const created: string[] = [];
  try {
    const order = [...files.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
    for (const rel of order) {
      const p = path.join(staging, ...rel.split("/"));
      for (let d = path.dirname(p); d !== staging && !fs.existsSync(d); d = path.dirname(d)) created.push(d);
      fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o777 });
      created.push(p);
      writeDurable(p, files.get(rel)!);
    }
    fsyncDir(staging);
  } catch (err) {
    removeCreated(staging, created);
    throw err;
  }
  return staging;
}

function rank(rel: string): number {
  return rel === MARKER ? 0 : rel === BUILD_INFO ? 1 : 2;
}

/** Removes what this process created in `staging` (files, then folders deepest first), then `staging` if it is then empty. */
function removeCreated(staging: string, created: readonly string[]): void {
  const files = created.filter((p) => !lstatOrUndefined(p)?.isDirectory());
  const dirs = created.filter((p) => lstatOrUndefined(p)?.isDirectory()).sort((a, b) => b.length - a.length);
  for (const p of files) fs.rmSync(p, { force: true });
  for (const d of [...dirs, staging]) if (lstatOrUndefined(d)?.isDirectory() && fs.readdirSync(d).length === 0) fs.rmdirSync(d);
}

/**
 * Replaces `outDir` by `staging`: the previous tree is renamed aside, the staged one renamed in,
 * then the previous one removed (only what kernelc can prove it wrote: anything else keeps it in
 * place, with the `out_leftover` warning returned). A crash between the renames is repaired by `recoverOutDir`.
 */
export function swapIn(outDir: string, staging: string, env: Readonly<Record<string, string | undefined>>): Diagnostic[] {
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
  // The new tree is in place: a previous tree that cannot be removed is a warning, not a failed build.
  return old ? removeLeftover(old) : [];
}

/**
 * Writes the first build (`files`) into an output folder that exists and is empty, in place: the
 * folder is the user's (kernelc did not make it), so it is filled, never swapped out and removed.
 * It is written as an in-place update is (the pending record first, build-info.json last), so that
 * a crash leaves only files kernelc can prove it wrote; when writing fails, the files written are
 * removed again and the folder is left empty, as it was.
 */
export function fillEmptyOutDir(outDir: string, files: ReadonlyMap<string, string>, generatedBy: string): void {
  try {
    updateInPlace(outDir, readTreeStrict(outDir), files, {}, generatedBy);
  } catch (err) {
    try {
      removeProvenEntries(outDir);
    } catch {
      // The write's error is the one to report; what is left is still provably kernelc's.
    }
    throw err;
  }
}

/** Removes a leftover that is provably kernelc's; otherwise, or when the OS refuses, keeps it and returns the warning. */
function removeLeftover(p: string): Diagnostic[] {
  try {
    return removeProvenTree(p) ? [] : [leftoverWarning(p)];
  } catch (err) {
    if (!isOsError(err)) throw err;
    return [leftoverWarning(p, err)];
  }
}

/**
 * Whether every entry of `dir` is provably kernelc's: the folder is empty, holds only kernelc's
 * marker, or every entry passes the audit against its own build-info.json and pending record (files it
 * lists that are missing are fine: an interrupted write or removal). An empty folder inside it is
 * not kernelc's (see auditTree).
 */
export function provablyOurs(dir: string): boolean {
  if (!lstatOrUndefined(dir)?.isDirectory()) return false;
  const tree = readTreeStrict(dir);
  return auditClean(auditTree(tree, readBuildInfo(dir), readPending(dir)));
}

/**
 * Removes a folder kernelc made or replaces (a previous tree swapped out, a staging folder, a
 * leftover beside the output folder; an empty output folder the user made is filled in place
 * instead, see fillEmptyOutDir) when every entry in it is provably kernelc's (`provablyOurs`);
 * true when it is gone.
 */
export function removeProvenTree(dir: string): boolean {
  if (!lstatOrUndefined(dir)) return true;
  if (!removeProvenEntries(dir)) return false;
  fs.rmdirSync(dir);
  return true;
}

/**
 * Empties `dir` when every entry in it is provably kernelc's (`provablyOurs`), keeping `dir`
 * itself; true when it is then empty. Folder by folder, deepest first: a folder's files, then the
 * folder once kernelc has emptied it of them (only such a folder: one that held none of kernelc's
 * files is not kernelc's to remove, and was refused by the audit), and the pending record,
 * build-info.json and the marker last, so that an interrupted removal leaves a folder kernelc can
 * still prove it wrote. Nothing is removed unless every folder can be written (else it throws the
 * OS's error): a folder emptied but kept by the OS would no longer be provably kernelc's.
 */
export function removeProvenEntries(dir: string): boolean {
  if (!provablyOurs(dir)) return false;
  const tree = readTreeStrict(dir);
  assertWritable(dir, tree);
  const last = [PENDING, BUILD_INFO, MARKER];
  const byFolder = new Map<string, string[]>();
  for (const rel of tree.files.keys())
    if (!last.includes(rel))
      for (let d = path.posix.dirname(rel), first = true; d !== "."; d = path.posix.dirname(d), first = false) {
        if (!byFolder.has(d)) byFolder.set(d, []);
        if (first) byFolder.get(d)!.push(rel);
      }
  for (const d of [...byFolder.keys()].sort((a, b) => b.split("/").length - a.split("/").length || (a < b ? -1 : 1))) {
    for (const rel of byFolder.get(d)!) fs.rmSync(path.join(dir, ...rel.split("/")), { force: true });
    const abs = path.join(dir, ...d.split("/"));
    if (lstatOrUndefined(abs)?.isDirectory() && fs.readdirSync(abs).length === 0) fs.rmdirSync(abs);
  }
  for (const rel of tree.files.keys()) if (!last.includes(rel) && !rel.includes("/")) fs.rmSync(path.join(dir, rel), { force: true });
  for (const rel of last) fs.rmSync(path.join(dir, rel), { force: true });
  return fs.readdirSync(dir).length === 0;
}

function leftoverWarning(p: string, err?: NodeJS.ErrnoException): Diagnostic {
  if (err)
    return makeDiagnostic(
      "out_leftover",
      `${p} is kernelc's previous or unfinished output, but it could not be removed (cannot ${err.syscall} ${err.path ?? p}: ${osErrorWhat(err)} (${err.code})), so it is left in place`,
      { file: p },
      { hint: `make it writable (chmod -R u+w ${p}) so that the next build removes it, or delete it yourself` },
    );
  return makeDiagnostic(
    "out_leftover",
    `${p} looks like a leftover of an interrupted build, but it holds entries kernelc cannot prove it wrote, so it is left in place`,
    { file: p },
    { hint: "look through it: move what is yours elsewhere, then delete it" },
  );
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
 * previous folder whose every entry kernelc can prove it wrote, and warns about (and keeps) any other.
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
      .filter((p) => LEFTOVER.exec(path.basename(p))?.[2] === "old" && provablyOurs(p))
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
    if (!lstatOrUndefined(p)) continue;
    const warnings = removeLeftover(p);
    if (warnings.length === 0) removed.push(p);
    diagnostics.push(...warnings);
  }
  return { restored, removed, diagnostics };
}

/** The id a shader file's name promises checks out: its body (after the one-line header) hashes to it. */
export function shaderBodyMatches(id: string, text: string): boolean {
  const nl = text.indexOf("\n");
  return nl >= 0 && sha256Hex(text.slice(nl + 1)).slice(0, 16) === id;
}
