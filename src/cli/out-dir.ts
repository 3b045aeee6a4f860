/** Reading and writing the output folder. */
import * as fs from "node:fs";
import * as path from "node:path";
import { walkFiles } from "../core/walk.js";

/** Reads every regular file under `dir` as "/"-separated relative paths. */
export function readTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const rel of walkFiles(dir).files) out.set(rel, fs.readFileSync(path.join(dir, ...rel.split("/")), "utf8"));
  return out;
}

/** Writes `files` as the new contents of `outDir`, atomically: a temporary folder swapped in by rename. */
export function writeTreeAtomic(outDir: string, files: ReadonlyMap<string, string>): void {
  const parent = path.dirname(outDir);
  fs.mkdirSync(parent, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(parent, `.${path.basename(outDir)}.tmp-`));
  try {
    for (const [rel, text] of files) {
      const p = path.join(tmp, ...rel.split("/"));
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, text);
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  const old = fs.existsSync(outDir) ? `${tmp}.old` : undefined;
  if (old) fs.renameSync(outDir, old);
  try {
    fs.renameSync(tmp, outDir);
  } catch (err) {
    if (old) fs.renameSync(old, outDir);
    throw err;
  }
  if (old) fs.rmSync(old, { recursive: true, force: true });
}
