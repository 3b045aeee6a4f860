/**
 * The one directory walker: every regular file under a folder, as sorted "/"-separated relative
 * paths. Symbolic links are reported separately and never followed, so a walk cannot leave the
 * folder or loop.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** What a walk found. */
export interface WalkResult {
  /** Regular files, sorted. */
  readonly files: readonly string[];
  /** Symbolic links and other non-regular entries (sockets, FIFOs), sorted. */
  readonly others: readonly string[];
}

/** Walks `dir` recursively; a missing folder is empty. `skip` filters folder names (e.g. node_modules). */
export function walkFiles(dir: string, skip: (name: string) => boolean = () => false): WalkResult {
  const files: string[] = [];
  const others: string[] = [];
  const stack: [string, string][] = [[dir, ""]];
  while (stack.length > 0) {
    const [d, rel] = stack.pop()!;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch (err) {
      if (rel === "" && (err as NodeJS.ErrnoException).code === "ENOENT") break;
      throw err;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!skip(e.name)) stack.push([path.join(d, e.name), r]);
      } else if (e.isFile()) files.push(r);
      else others.push(r);
    }
  }
  const order = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return { files: files.sort(order), others: others.sort(order) };
}
