/**
 * Writing a build's files into the out folder for the Vite plugin: only the files that changed,
 * each swapped in by rename, and a build-info.json that lists every file written with its hash.
 * It writes only into a folder that is missing, empty, or holds kernelc's marker or build-info.json, and it
 * removes only files that the previous build-info lists and that still have the content kernelc
 * wrote: it never deletes or overwrites anything kernelc did not write.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { UserError } from "../core/diagnostic.js";
import { sha256Hex } from "../core/hash.js";
import { stableJson } from "../core/stable-json.js";
import { KERNELC_VERSION } from "../core/version.js";
import { walkFiles } from "../core/walk.js";

/** The build-info file kernelc keeps in out/ (the CLI's format: `inputs` and `files`). */
const BUILD_INFO = "build-info.json";

/** The marker of a folder kernelc writes; the same name and text as the CLI's (src/cli/out-dir.ts; a test keeps them equal). */
export const MARKER = ".kernelc-out";
export const MARKER_TEXT =
  "This folder is written by kernelc (`npx kernelc build`); each build replaces its contents.\n" +
  "kernelc only replaces a folder that holds this file. Do not put your own files here.\n";

/** What writeOut did, as "/"-separated paths relative to the out folder. */
export interface WriteOutResult {
  readonly written: readonly string[];
  readonly removed: readonly string[];
}

/** The files kernelc wrote into `outDir` last time (path → sha256), or undefined when it holds no kernelc build-info. */
function previousFiles(outDir: string): Record<string, string> | undefined {
  try {
    const info: unknown = JSON.parse(fs.readFileSync(path.join(outDir, BUILD_INFO), "utf8"));
    const files = typeof info === "object" && info !== null ? (info as { files?: unknown }).files : undefined;
    if (typeof files !== "object" || files === null || Array.isArray(files)) return undefined;
    return Object.fromEntries(Object.entries(files).filter((e): e is [string, string] => typeof e[1] === "string"));
  } catch {
    return undefined;
  }
}

function refuse(outDir: string, why: string): never {
  throw new UserError([
    makeDiagnostic(
      "out_not_ours",
      `${outDir} was not written by kernelc: ${why}`,
      { file: outDir },
      {
        hint: `kernelc writes only into a folder it wrote (one holding a ${MARKER} file): point \`out\` in kernelc.config.json at a new folder, or move your files out of this one`,
      },
    ),
  ]);
}

/** Makes `outDir` hold `built` (path relative to it → text) and the marker, writing only what changed. */
export function writeOut(outDir: string, built: ReadonlyMap<string, string>): WriteOutResult {
  const files = new Map([...built, [MARKER, MARKER_TEXT]]);
  let previous: Record<string, string> = {};
  if (fs.existsSync(outDir)) {
    if (!fs.lstatSync(outDir).isDirectory()) refuse(outDir, "it is not a folder");
    const known = previousFiles(outDir);
    const marked = fs.existsSync(path.join(outDir, MARKER)) && fs.lstatSync(path.join(outDir, MARKER)).isFile();
    if (known) previous = known;
    else if (!marked && fs.readdirSync(outDir).length > 0)
      refuse(outDir, `it holds files but no ${MARKER} marker and no kernelc ${BUILD_INFO}`);
  }
  const written: string[] = [];
  const hashes: Record<string, string> = {};
  for (const [rel, text] of files) {
    const hash = sha256Hex(text);
    hashes[rel] = hash;
    const file = path.join(outDir, ...rel.split("/"));
    if (readOrUndefined(file) === text) continue;
    if (fs.existsSync(file) && previous[rel] === undefined) refuse(outDir, `${rel} is not a file kernelc wrote`);
    writeFileAtomic(file, text);
    written.push(rel);
  }
  const removed: string[] = [];
  const present = new Set(walkFiles(outDir).files);
  for (const [rel, hash] of Object.entries(previous)) {
    if (files.has(rel) || !present.has(rel)) continue;
    const file = path.join(outDir, ...rel.split("/"));
    const text = readOrUndefined(file);
    if (text === undefined || sha256Hex(text) !== hash) continue; // changed since kernelc wrote it: left alone
    fs.rmSync(file);
    removed.push(rel);
  }
  const info = stableJson({ generatedBy: `kernelc ${KERNELC_VERSION} (vite plugin); do not edit`, inputs: "vite", files: hashes });
  if (readOrUndefined(path.join(outDir, BUILD_INFO)) !== info) writeFileAtomic(path.join(outDir, BUILD_INFO), info);
  return { written, removed };
}

function readOrUndefined(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** Writes a file by writing a sibling temporary file and renaming it over the target. */
function writeFileAtomic(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}
