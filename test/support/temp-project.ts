/** Throw-away projects for tests: files written into a new temporary folder. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/**
 * Writes `files` (relative path → text, folders made as needed) into a new temporary folder named
 * `kernelc-<prefix>-…` and returns its root.
 */
export function writeProject(prefix: string, files: Readonly<Record<string, string>> | Iterable<readonly [string, string]>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kernelc-${prefix}-`));
  const entries = Symbol.iterator in files ? files : Object.entries(files);
  for (const [rel, text] of entries as Iterable<readonly [string, string]>) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}
