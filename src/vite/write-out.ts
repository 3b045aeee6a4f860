/**
 * Writing a build's files into the out folder for the Vite plugin: only the files that changed,
 * each swapped in by rename, and a build-info.json that lists every file written with its hash.
 * It writes only into a folder that is missing, empty, or holds kernelc's marker or build-info.json,
 * and only after auditing it (core/out-folder.ts): an entry kernelc did not write, or a file of its
 * own edited since, is an error naming it and nothing is written. It never deletes or overwrites
 * anything kernelc did not write.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { UserError } from "../core/diagnostic.js";
import { sha256Hex } from "../core/hash.js";
import {
  auditDiagnostics,
  auditTree,
  BUILD_INFO,
  buildInfoText,
  MARKER,
  MARKER_TEXT,
  readBuildInfo,
  readPending,
  readTreeStrict,
  unrecordedDiagnostic,
  updateInPlace,
} from "../core/out-folder.js";
import { KERNELC_VERSION } from "../core/version.js";

export { MARKER, MARKER_TEXT } from "../core/out-folder.js";

/** What writeOut did, as "/"-separated paths relative to the out folder. */
export interface WriteOutResult {
  readonly written: readonly string[];
  readonly removed: readonly string[];
}

/** Who wrote the plugin's build-info.json and pending record. */
const GENERATED_BY = `kernelc ${KERNELC_VERSION} (vite plugin); do not edit`;

function refuse(outDir: string, shown: string, why: string): never {
  throw new UserError([
    makeDiagnostic(
      "out_not_ours",
      `${shown} was not written by kernelc: ${why}`,
      { file: outDir },
      {
        hint: `kernelc writes only into a folder it wrote (one holding a ${MARKER} file): point \`out\` in kernelc.config.json at a new folder, or move your files out of this one`,
      },
    ),
  ]);
}

/**
 * Makes `outDir` hold `built` (path relative to it → text) and the marker, writing only what changed;
 * messages name the folder as `shown` (the plugin passes it relative to the project root).
 */
export function writeOut(outDir: string, built: ReadonlyMap<string, string>, shown: string = outDir): WriteOutResult {
  const files = new Map([...built, [MARKER, MARKER_TEXT]]);
  if (fs.existsSync(outDir) && !fs.lstatSync(outDir).isDirectory()) refuse(outDir, shown, "it is not a folder");
  const tree = readTreeStrict(outDir);
  const info = readBuildInfo(outDir);
  const pending = readPending(outDir);
  if (!info && (tree.files.size > 0 || tree.unexpected.length > 0)) {
    if (!tree.files.has(MARKER)) refuse(outDir, shown, `it holds files but no ${MARKER} marker and no kernelc ${BUILD_INFO}`);
    // The pending record of a first write interrupted in progress proves the files it lists.
    const unrecorded = pending ? undefined : unrecordedDiagnostic(tree, shown, outDir);
    if (unrecorded) throw new UserError([unrecorded]);
  }
  const diags = auditDiagnostics(auditTree(tree, info, pending), shown, outDir);
  if (diags.length > 0) throw new UserError(diags);
  const hashes: Record<string, string> = {};
  for (const [rel, text] of files) hashes[rel] = sha256Hex(text);
  const withInfo = new Map([...files, [BUILD_INFO, buildInfoText(GENERATED_BY, "vite", hashes)]]);
  return updateInPlace(outDir, tree, withInfo, info?.files ?? {}, GENERATED_BY);
}
