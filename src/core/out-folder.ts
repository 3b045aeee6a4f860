/**
 * What kernelc knows about the files it wrote into an output folder, shared by `kernelc build`,
 * `kernelc watch` and the Vite plugin: the `.kernelc-out` marker, build-info.json (every file
 * written, with its hash, bound by a digest), the pending record an in-place update writes before
 * it touches a file, and the audit that tells kernelc's files from everything else.
 *
 * Why an audit before every write: a user's files are not kernelc's. A build deletes or overwrites
 * only what it can prove it wrote: a file whose bytes hash to what build-info.json or the pending
 * record says kernelc wrote there, and whose content carries kernelc's generated-file mark naming
 * that very path (`carriesGeneratedMark`, core/generated-mark.ts). The records alone prove nothing:
 * they are plain files in out/ that anyone can write, so a record that lists a user's own file with
 * its real hash, or a copy of a generated file under another name, must not make that file
 * kernelc's. Each record carries a digest binding every path it lists to its hash, and a record
 * without a digest that binds it proves nothing: a record edited by hand or by a tool (an entry
 * added with `sha256sum`'s hash, the digest dropped) is refused. The digest is not a secret (the
 * output folder is committed and shared, so no one user's key can sign it): whoever recomputes it
 * as kernelc does can still forge a record, and with it make kernelc take a file whose mark they
 * also edited to name its own path for kernelc's; docs/config.md states that residual risk. Nor
 * does a record make a folder kernelc's: a folder is removed only once kernelc has removed its own
 * files from it and it is empty; an empty folder found in out/ is not kernelc's. Anything else in
 * the folder (a file, folder, symbolic link or special file it did not write, or a file of its own
 * edited since) stops the build before it changes anything, with a diagnostic naming the path.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "./codes.js";
import type { Diagnostic } from "./diagnostic.js";
import { markedPath } from "./generated-mark.js";
import { sha256Hex } from "./hash.js";
import { stableJson } from "./stable-json.js";

/** The marker file kernelc writes into every output folder. */
export const MARKER = ".kernelc-out";

/** The marker's text: what the folder is and that kernelc replaces it. */
export const MARKER_TEXT =
  "This folder is written by kernelc (`npx kernelc build`); each build replaces its contents.\n" +
  "kernelc only replaces a folder that holds this file. Do not put your own files here.\n";

/** The name of the build-info file inside out/. */
export const BUILD_INFO = "build-info.json";

/** The record of an in-place update in progress: the files it is about to write, with their hashes. */
export const PENDING = ".kernelc-pending.json";

/** What is on disk in an output folder: regular files by "/"-separated path, and every entry a build never writes. */
export interface OnDiskTree {
  readonly files: ReadonlyMap<string, Buffer>;
  /** Symbolic links, special files and empty folders, as "path (what)". */
  readonly unexpected: readonly string[];
  /** The empty folders among `unexpected`, as paths. */
  readonly emptyDirs?: readonly string[];
}

/** What build-info.json holds. */
export interface BuildInfo {
  readonly generatedBy: string;
  /** The hash of the inputs (inputsHash) of the build that wrote the folder. */
  readonly inputs: string;
  /** Every other file of the folder → the SHA-256 of its content. */
  readonly files: Readonly<Record<string, string>>;
  /** Binds `inputs` and `files` together: kernelc writes it into every build-info.json, and one without it (or whose digest does not bind it) proves nothing. */
  readonly digest?: string;
}

/** The digest that binds a build-info's inputs hash to its files' hashes. */
export function buildInfoDigest(inputs: string, files: Readonly<Record<string, string>>): string {
  return sha256Hex(
    `kernelc build-info v1\0${inputs}\0${Object.keys(files)
      .sort()
      .map((f) => `${f}\0${files[f]}`)
      .join("\0")}`,
  );
}

/** The text of a build-info.json: who wrote it, the inputs hash, every file's hash and the digest. */
export function buildInfoText(generatedBy: string, inputs: string, files: Readonly<Record<string, string>>): string {
  return stableJson({ generatedBy, inputs, files, digest: buildInfoDigest(inputs, files) });
}

/** Reads `dir`'s build-info.json when it is a regular file of kernelc's shape; otherwise undefined. */
export function readBuildInfo(dir: string): BuildInfo | undefined {
  const file = path.join(dir, BUILD_INFO);
  try {
    if (!fs.lstatSync(file).isFile()) return undefined;
    return parseBuildInfo(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/** A build-info.json's text parsed, when it has kernelc's shape; otherwise undefined. */
function parseBuildInfo(text: string): BuildInfo | undefined {
  try {
    const info = JSON.parse(text) as unknown;
    if (info === null || typeof info !== "object" || Array.isArray(info)) return undefined;
    const { generatedBy, inputs, files, digest } = info as Record<string, unknown>;
    if (typeof generatedBy !== "string" || !generatedBy.startsWith("kernelc ") || typeof inputs !== "string") return undefined;
    if (files === null || typeof files !== "object" || Array.isArray(files)) return undefined;
    const hashes: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [rel, h] of Object.entries(files as Record<string, unknown>)) {
      if (typeof h !== "string") return undefined;
      hashes[rel] = h;
    }
    if (digest !== undefined && typeof digest !== "string") return undefined;
    return { generatedBy, inputs, files: hashes, digest: digest as string | undefined };
  } catch {
    return undefined;
  }
}

/**
 * Larger than any file kernelc generates (its inputs are at most 4 MiB each): such a file in out/
 * is not read into memory (past 2 GiB Node cannot) but reported as not kernelc's.
 */
export const MAX_OUT_FILE_BYTES = 256 * 1024 * 1024;

/** Reads `dir` as it is on disk, without following symbolic links; a missing folder is empty. */
export function readTreeStrict(dir: string): OnDiskTree {
  const files = new Map<string, Buffer>();
  const unexpected: string[] = [];
  const emptyDirs: string[] = [];
  const visit = (abs: string, rel: string): void => {
    const entries = fs.readdirSync(abs, { withFileTypes: true });
    if (entries.length === 0 && rel !== "") {
      unexpected.push(`${rel}/ (empty folder)`);
      emptyDirs.push(rel);
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const p = path.join(abs, e.name);
      if (e.isSymbolicLink()) unexpected.push(`${r} (symbolic link)`);
      else if (e.isDirectory()) visit(p, r);
      else if (e.isFile() && fs.lstatSync(p).size > MAX_OUT_FILE_BYTES) unexpected.push(`${r} (file too large to be generated)`);
      else if (e.isFile()) files.set(r, fs.readFileSync(p));
      else unexpected.push(`${r} (special file)`);
    }
  };
  if (lstatOrUndefined(dir)?.isDirectory()) visit(dir, "");
  return { files, unexpected: unexpected.sort(), emptyDirs: emptyDirs.sort() };
}

/** The entry at `p` without following a link, or undefined when there is none. */
export function lstatOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** The digest that binds a pending record's paths to their hashes. */
export function pendingDigest(files: Readonly<Record<string, readonly string[]>>): string {
  return sha256Hex(
    `kernelc pending v1\0${JSON.stringify(
      Object.keys(files)
        .sort()
        .map((f) => [f, files[f]]),
    )}`,
  );
}

/** The text of a pending record: who wrote it, every path an update is about to write with its hashes, and the digest. */
export function pendingText(generatedBy: string, files: Readonly<Record<string, readonly string[]>>): string {
  return stableJson({ generatedBy, files, digest: pendingDigest(files) });
}

/**
 * The pending record's hashes (path → every hash an unfinished update may have left there), or
 * undefined when absent, not kernelc's shape, or without the digest that binds its entries (a
 * record edited by hand or forged proves nothing: the record itself is then not kernelc's).
 */
export function readPending(dir: string): Readonly<Record<string, readonly string[]>> | undefined {
  try {
    const file = path.join(dir, PENDING);
    if (!fs.lstatSync(file).isFile()) return undefined;
    return parsePending(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

function parsePending(text: string): Record<string, readonly string[]> | undefined {
  try {
    const rec = JSON.parse(text) as { generatedBy?: unknown; files?: unknown; digest?: unknown };
    if (!rec || typeof rec !== "object" || typeof rec.generatedBy !== "string" || !rec.generatedBy.startsWith("kernelc ")) return undefined;
    if (!rec.files || typeof rec.files !== "object" || Array.isArray(rec.files)) return undefined;
    const out: Record<string, readonly string[]> = Object.create(null) as Record<string, readonly string[]>;
    for (const [rel, hs] of Object.entries(rec.files as Record<string, unknown>)) {
      if (!Array.isArray(hs) || !hs.every((h) => typeof h === "string")) return undefined;
      out[rel] = hs as string[];
    }
    return rec.digest === pendingDigest(out) ? out : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `bytes`, found at `rel` in an output folder, carry the mark of the file kernelc generates
 * there: the marker's exact text; build-info.json of kernelc's shape and the pending record of
 * kernelc's shape with its digest (top level); a shader or module (`.wgsl`, `.ts`, `.js`) whose
 * first line is kernelc's header naming `rel` (`// Generated by kernelc <version> as <rel> from ….
 * Do not edit.`); a JSON file whose
 * first key is `"generatedBy": "kernelc <version> as <rel> from …"` (JSON has no comments: keys are
 * written sorted, and `generatedBy` sorts first among each file's keys). Any other name or content
 * is not kernelc's, whatever its records say: a record is a file anyone can write, and listing a
 * user's file in it (with its real hash, and a digest recomputed), or a copy of a generated file
 * under another name (its mark names the original), must not make kernelc delete or replace that
 * file. Every file kernelc writes into out/ carries its mark (`assertGeneratedMarks`).
 */
export function carriesGeneratedMark(rel: string, bytes: Buffer | string): boolean {
  const text = typeof bytes === "string" ? bytes : bytes.toString("utf8");
  if (rel === MARKER) return text === MARKER_TEXT;
  if (rel === BUILD_INFO) return parseBuildInfo(text) !== undefined;
  if (rel === PENDING) return parsePending(text) !== undefined;
  return markedPath(rel, text) === rel;
}

/**
 * Throws (a bug in kernelc, not a user error) when a file about to be written into an output
 * folder lacks kernelc's generated-file mark: the next build could not tell it from a user's file.
 */
export function assertGeneratedMarks(files: ReadonlyMap<string, string>): void {
  const unmarked = [...files].filter(([rel, text]) => !carriesGeneratedMark(rel, text)).map(([rel]) => rel);
  if (unmarked.length > 0)
    throw new Error(`kernelc was about to write files without its generated-file mark into the output folder: ${unmarked.join(", ")}`);
}

/** A temporary file an in-place update writes beside `<name>` and renames over it. */
const TEMP_FILE = /^\.(.+)\.tmp-\d+-[0-9a-f]{8}$/;

/** What the audit of an output folder found that kernelc did not write or that changed since. */
export interface OutAudit {
  /** Entries kernelc did not write: "path" (a file) or "path (what)", a folder holding nothing kernelc lists named once as "path/ (folder)". */
  readonly foreign: readonly string[];
  /** Files kernelc wrote whose bytes changed since (build-info.json when its digest no longer binds it). */
  readonly modified: readonly string[];
  /**
   * Files that build-info.json or the pending record (`records`) list with their very hash, but
   * that lack kernelc's generated-file mark for their path: kernelc did not write them, so the
   * record that lists them was not written by kernelc either. `names` is the path their mark
   * names instead (a copy of a generated file), null for a mark that names no path.
   */
  readonly unmarked: readonly { readonly path: string; readonly records: readonly string[]; readonly names?: string | null }[];
}

/** Whether build-info.json has the digest kernelc writes into every one, binding its inputs hash and every file's hash. */
export function buildInfoBound(info: BuildInfo): boolean {
  return info.digest === buildInfoDigest(info.inputs, info.files);
}

/**
 * Whether `rel` is a temporary file of an in-place update that kernelc can prove it wrote: named as
 * `writeAtomic` names them, beside a target that the pending record (`pending`, whose digest binds
 * it) lists with this very content's hash, and carrying kernelc's mark for that target; or a
 * temporary file of the pending record itself, holding a pending record with its digest. Only the
 * pending record counts (an update writes it before any temporary file, and removes it last): a
 * copy of a generated file named like a temporary file is not kernelc's, whatever build-info.json lists.
 */
function provenTemp(rel: string, bytes: Buffer, pending: Readonly<Record<string, readonly string[]>> | undefined): boolean {
  const temp = TEMP_FILE.exec(path.posix.basename(rel));
  if (!temp) return false;
  const target = path.posix.join(path.posix.dirname(rel), temp[1]!);
  if (target === PENDING) return parsePending(bytes.toString("utf8")) !== undefined;
  return pending !== undefined && (pending[target] ?? []).includes(sha256Hex(bytes)) && carriesGeneratedMark(target, bytes);
}

/**
 * Tells kernelc's entries of a folder from the rest. An entry is kernelc's when it is a regular
 * file whose hash is the one build-info.json (`info`) or the pending record lists for its path and
 * whose content carries kernelc's generated-file mark for that path (`carriesGeneratedMark`), the
 * marker with kernelc's text, build-info.json itself, the pending record (with its digest), or a
 * temporary file of an in-place update holding exactly the content the pending record lists for its
 * target (with that target's mark; `provenTemp`). build-info.json without the digest that binds it
 * is `modified`: its entries prove nothing. A folder is kernelc's only through the files of
 * kernelc's it holds: an empty one is not, even on the path of a file a record lists (a record
 * proves nothing; kernelc removes only the folders it empties of its own files). A listed file that
 * is missing is fine. Without `info` only a lone marker is kernelc's.
 */
export function auditTree(tree: OnDiskTree, info: BuildInfo | undefined, pending?: Readonly<Record<string, readonly string[]>>): OutAudit {
  const foreign: string[] = [];
  const modified: string[] = [];
  const unmarked: { path: string; records: string[]; names?: string | null }[] = [];
  const listed = (rel: string): boolean =>
    (info !== undefined && Object.hasOwn(info.files, rel)) || (pending !== undefined && Object.hasOwn(pending, rel));
  const inPending = (rel: string, hash: string): boolean => pending !== undefined && (pending[rel] ?? []).includes(hash);
  const known = (rel: string, hash: string): boolean => (info !== undefined && info.files[rel] === hash) || inPending(rel, hash);
  if (info !== undefined && !buildInfoBound(info)) modified.push(BUILD_INFO);
  for (const [rel, bytes] of tree.files) {
    if (rel === BUILD_INFO && info !== undefined) continue;
    if (rel === PENDING && pending !== undefined) continue;
    const hash = sha256Hex(bytes);
    if (listed(rel)) {
      if (!known(rel, hash)) modified.push(rel);
      else if (!carriesGeneratedMark(rel, bytes)) {
        const names = markedPath(rel, bytes.toString("utf8"));
        unmarked.push({
          path: rel,
          records: [...(info !== undefined && info.files[rel] === hash ? [BUILD_INFO] : []), ...(inPending(rel, hash) ? [PENDING] : [])],
          ...(names !== undefined ? { names } : {}),
        });
      }
      continue;
    }
    if (rel === MARKER) {
      if (!bytes.equals(Buffer.from(MARKER_TEXT, "utf8"))) modified.push(rel);
      continue;
    }
    if (provenTemp(rel, bytes, pending)) continue;
    foreign.push(rel);
  }
  const ancestors = new Set<string>();
  for (const rel of [...Object.keys(info?.files ?? {}), ...Object.keys(pending ?? {})])
    for (let d = path.posix.dirname(rel); d !== "."; d = path.posix.dirname(d)) ancestors.add(d);
  foreign.push(...tree.unexpected);
  // A folder that holds nothing kernelc lists is named once, as the folder.
  const named = new Set<string>();
  for (const entry of foreign) {
    const parts = entry
      .replace(/ \([a-z ]+\)$/, "")
      .replace(/\/$/, "")
      .split("/");
    const isDir = entry.endsWith("/ (empty folder)");
    let shown = entry;
    for (let i = 1; i <= parts.length - (isDir ? 0 : 1); i++) {
      const d = parts.slice(0, i).join("/");
      if (!ancestors.has(d)) {
        shown = `${d}/ (folder)`;
        break;
      }
    }
    named.add(shown);
  }
  foreign.splice(0, foreign.length, ...named);
  return { foreign: foreign.sort(), modified: modified.sort(), unmarked: unmarked.sort((a, b) => (a.path < b.path ? -1 : 1)) };
}

/** Whether the audit found nothing but kernelc's own entries. */
export function auditClean(audit: OutAudit): boolean {
  return audit.foreign.length === 0 && audit.modified.length === 0 && audit.unmarked.length === 0;
}

/**
 * The errors for what an audit found in the output folder shown as `shown`: `out_unexpected` for
 * each entry kernelc did not write (a file its records list but that lacks its mark among them),
 * `out_modified` for each of its files edited since.
 */
export function auditDiagnostics(audit: OutAudit, shown: string, dir: string): Diagnostic[] {
  const diags: Diagnostic[] = [];
  for (const entry of audit.foreign) {
    const what = /\((?:empty folder|folder|symbolic link|special file|file too large to be generated)\)$/.test(entry) ? "" : " (a file)";
    const empty = entry.endsWith("/ (empty folder)") ? entry.slice(0, -" (empty folder)".length) : undefined;
    diags.push(
      makeDiagnostic(
        "out_unexpected",
        `${shown}/${entry}${what} was not written by kernelc; kernelc never deletes or overwrites what it did not write, so nothing in ${shown}/ was changed`,
        { file: dir },
        {
          hint:
            empty === undefined
              ? `move it out of ${shown}/ (or delete it yourself), then rebuild: ${shown}/ holds only what kernelc generates`
              : `kernelc removes only the folders it empties of its own files, and cannot tell an empty folder it made from yours: if it is yours, move it out of ${shown}/; if it is what is left of kernelc's files (files you deleted, an interrupted build), remove it yourself (rmdir ${shown}/${empty}); then rebuild`,
        },
      ),
    );
  }
  // Files whose mark names no path: an output folder written before marks named their files.
  const unnamed = audit.unmarked.filter((u) => u.names === null).map((u) => u.path);
  if (unnamed.length > 0)
    diags.push(
      makeDiagnostic(
        "out_unexpected",
        `${shown}/ holds ${unnamed.length === 1 ? "a file" : `${unnamed.length} files`} (${unnamed
          .slice(0, 3)
          .map((rel) => `${shown}/${rel}`)
          .join(
            ", ",
          )}${unnamed.length > 3 ? ", …" : ""}) that its records list with ${unnamed.length === 1 ? "its hash" : "their hashes"}, but whose generated-file mark names no file: every file kernelc writes names its own path in its mark (${markWanted(unnamed[0]!)}), so kernelc cannot prove it wrote ${unnamed.length === 1 ? "it" : "them"} (an earlier kernelc's marks named none); kernelc never deletes or overwrites what it did not write, so nothing in ${shown}/ was changed`,
        { file: dir },
        {
          hint: `if ${shown}/ was written by an earlier kernelc, move any file of yours out of it, delete ${shown}/ yourself and rebuild; otherwise move ${unnamed.length === 1 ? "the file" : "these files"} out of ${shown}/, then rebuild`,
        },
      ),
    );
  for (const { path: rel, records, names } of audit.unmarked) {
    if (names === null) continue;
    const named = records.map((r) => `${shown}/${r}`).join(" and ");
    const lacks =
      names !== undefined
        ? `but its mark names ${names}: it is a copy of a file kernelc generates as ${names}, not one kernelc wrote as ${rel} (every file kernelc writes names its own path in its mark: ${markWanted(rel)})`
        : `but it lacks the mark every file kernelc writes carries (${markWanted(rel)})`;
    diags.push(
      makeDiagnostic(
        "out_unexpected",
        `${shown}/${rel} (a file) was not written by kernelc: ${named} list${records.length === 1 ? "s" : ""} it with its hash, ${lacks}, so that entry is not kernelc's; kernelc never deletes or overwrites what it did not write, so nothing in ${shown}/ was changed`,
        { file: dir },
        {
          hint: `move it out of ${shown}/ (or delete it yourself), then rebuild: ${shown}/ holds only what kernelc generates, and an entry added to ${named} (by hand or by a tool) does not make a file kernelc's`,
        },
      ),
    );
  }
  for (const rel of audit.modified) {
    diags.push(
      rel === BUILD_INFO
        ? makeDiagnostic(
            "out_modified",
            `${shown}/${BUILD_INFO} was edited after kernelc wrote it (it has no digest, or its digest does not bind the hashes it lists: kernelc writes one into every ${BUILD_INFO}): it is kernelc's record of the files it wrote, so kernelc can no longer tell its files from your edits or your own files, and nothing in ${shown}/ was changed`,
            { file: dir },
            { hint: `copy any file of ${shown}/ that you edited elsewhere, then delete ${shown}/ and rebuild` },
          )
        : makeDiagnostic(
            "out_modified",
            `${shown}/${rel} was changed after kernelc wrote it; the build would overwrite your edit, so nothing in ${shown}/ was changed`,
            { file: dir },
            {
              hint: `your edit would be lost: copy ${shown}/${rel} elsewhere or delete it, then rebuild (generated files are rewritten by every build)`,
            },
          ),
    );
  }
  return diags;
}

/** What mark a file at `rel` would carry if kernelc had written it, for messages. */
function markWanted(rel: string): string {
  if (rel === MARKER) return "the marker's fixed text";
  if (rel === BUILD_INFO || rel === PENDING) return "kernelc's record format";
  if (/\.(?:wgsl|ts|js)$/.test(rel)) return `a first line "// Generated by kernelc … as ${rel} from … Do not edit."`;
  if (rel.endsWith(".json")) return `a first key "generatedBy": "kernelc … as ${rel} from …"`;
  return "kernelc writes no file named like this";
}

/**
 * The check for a folder that holds the marker: kernelc can tell its files only by its
 * build-info.json, so a marked folder without a readable one is refused unless the marker is all it holds.
 */
export function unrecordedDiagnostic(tree: OnDiskTree, shown: string, dir: string): Diagnostic | undefined {
  const others = [...tree.files.keys()].filter((rel) => rel !== MARKER);
  if (others.length === 0 && tree.unexpected.length === 0) return undefined;
  const entries = [...others, ...tree.unexpected].sort();
  return makeDiagnostic(
    "out_not_ours",
    `${shown}/ holds kernelc's ${MARKER} marker but no readable ${BUILD_INFO}, so kernelc cannot tell which of its entries it wrote (${entries.slice(0, 5).join(", ")}${entries.length > 5 ? ", …" : ""}); nothing was changed`,
    { file: dir },
    { hint: `move the files you want to keep out of ${shown}/, then delete ${shown}/ and rebuild` },
  );
}

/**
 * Checks, before anything changes, that the output folder and every folder in it can be written
 * (throws the OS's error: EACCES, EROFS). A read-only out/ can still be renamed aside (that needs
 * only its parent), but then its files cannot be removed: the build would put the new tree in place
 * and fail with the previous one left beside it. Failing here leaves out/ as it was.
 */
export function assertWritable(dir: string, tree: OnDiskTree): void {
  if (!lstatOrUndefined(dir)?.isDirectory()) return;
  const dirs = new Set<string>(["."]);
  for (const rel of [...tree.files.keys(), ...(tree.emptyDirs ?? []).map((d) => `${d}/.`)])
    for (let d = path.posix.dirname(rel); d !== "."; d = path.posix.dirname(d)) dirs.add(d);
  for (const d of [...dirs].sort()) fs.accessSync(path.join(dir, ...d.split("/")), fs.constants.W_OK | fs.constants.X_OK);
}

/** What an in-place update wrote and removed, as "/"-separated paths. */
export interface InPlaceResult {
  readonly written: readonly string[];
  readonly removed: readonly string[];
}

/**
 * Brings an audited output folder (`current`: every entry kernelc's) to `files` (build-info.json
 * included) by touching only what differs. First the pending record lists every file about to be
 * written with its new hash (merged with an earlier unfinished update's), so that an interruption
 * at any later point leaves only entries the audit recognizes; then each new or changed file is
 * written beside itself and renamed over (a reader never sees a partly written file), shaders first
 * and build-info.json last; files no longer built (listed in `previous`, or in an earlier
 * unfinished update's pending record), the temporary files an interrupted update left (`provenTemp`)
 * and folders left empty are removed; the pending record goes last, since it is what proves those
 * leftovers kernelc's. Files are not flushed one by one.
 * Every file of `files` must carry kernelc's generated-file mark (else it throws before writing).
 */
export function updateInPlace(
  outDir: string,
  current: OnDiskTree,
  files: ReadonlyMap<string, string>,
  previous: Readonly<Record<string, string>>,
  generatedBy: string,
): InPlaceResult {
  assertGeneratedMarks(files);
  const changed = [...files.keys()].filter((rel) => {
    const have = current.files.get(rel);
    return !have || !have.equals(Buffer.from(files.get(rel)!, "utf8"));
  });
  const earlier = readPending(outDir) ?? {};
  const listed = (rel: string): boolean => Object.hasOwn(previous, rel) || Object.hasOwn(earlier, rel);
  const stale = [...current.files.keys()].filter(
    (rel) => !files.has(rel) && rel !== PENDING && (listed(rel) || provenTemp(rel, current.files.get(rel)!, earlier)),
  );
  const leftPending = current.files.has(PENDING);
  if (changed.length === 0 && stale.length === 0) {
    if (leftPending) fs.rmSync(path.join(outDir, PENDING), { force: true });
    return { written: [], removed: [] };
  }
  assertWritable(outDir, current);
  fs.mkdirSync(outDir, { recursive: true, mode: 0o777 });
  const pending: Record<string, string[]> = {};
  for (const [rel, hs] of Object.entries(earlier)) pending[rel] = [...hs];
  for (const rel of changed) {
    const h = sha256Hex(files.get(rel)!);
    pending[rel] = [...new Set([...(pending[rel] ?? []), h])];
  }
  writeAtomic(outDir, PENDING, pendingText(generatedBy, pending));
  const order = changed.sort((a, b) => writeRank(a) - writeRank(b) || (a < b ? -1 : a > b ? 1 : 0));
  for (const rel of order) if (rel !== BUILD_INFO) writeAtomic(outDir, rel, files.get(rel)!);
  const emptied = new Set<string>();
  const removed: string[] = [];
  for (const rel of stale) {
    fs.rmSync(path.join(outDir, ...rel.split("/")), { force: true });
    removed.push(rel);
    for (let dir = path.posix.dirname(rel); dir !== "."; dir = path.posix.dirname(dir)) emptied.add(dir);
  }
  // Deepest first, so that a folder whose subfolders were emptied is empty in its turn.
  for (const dir of [...emptied].sort((a, b) => b.split("/").length - a.split("/").length)) {
    const abs = path.join(outDir, ...dir.split("/"));
    if (lstatOrUndefined(abs)?.isDirectory() && fs.readdirSync(abs).length === 0) fs.rmdirSync(abs);
  }
  if (changed.includes(BUILD_INFO)) writeAtomic(outDir, BUILD_INFO, files.get(BUILD_INFO)!);
  fs.rmSync(path.join(outDir, PENDING), { force: true });
  return { written: order.filter((rel) => rel !== BUILD_INFO), removed };
}

/** Removes `dir` and its parents up to `top` (both included) while they are empty; a failure to is ignored (the caller reports its own error). */
function removeIfEmpty(dir: string, top: string): void {
  try {
    for (let d = dir; d.length >= top.length; d = path.dirname(d)) {
      if (!lstatOrUndefined(d)?.isDirectory() || fs.readdirSync(d).length > 0) return;
      fs.rmdirSync(d);
    }
  } catch {
    // Left in place: the next build names it.
  }
}

/** Shaders before the files that name them (dispatchers, manifests, index.ts), build-info.json last. */
function writeRank(rel: string): number {
  return rel === MARKER ? 0 : rel.startsWith("shaders/") ? 1 : rel === BUILD_INFO ? 3 : 2;
}

/**
 * Writes `rel` under `dir` by a temporary file beside it renamed over it (the audit knows that
 * name). When the write fails, the folders it made for the file are removed again if still empty:
 * an empty folder is not kernelc's to the next build (see auditTree), so it must not leave one.
 */
function writeAtomic(dir: string, rel: string, text: string): void {
  const p = path.join(dir, ...rel.split("/"));
  const made = fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o777 });
  const tmp = path.join(path.dirname(p), `.${path.basename(p)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    fs.writeFileSync(tmp, text, { flag: "wx", mode: 0o666 });
    fs.renameSync(tmp, p);
  } catch (err) {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      // Never made (a name too long, a folder it may not write): nothing to remove.
    }
    if (made !== undefined) removeIfEmpty(path.dirname(p), made);
    throw err;
  }
}
