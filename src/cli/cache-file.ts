/**
 * What the files under .kernelc-cache/ (emit's verdict and lint's render caches) share: entries
 * read from the file next to those used in this run, and a write that never goes through a
 * symbolic link and never fails a run. A cache file is ours (kernelc writes it; it is safe to
 * delete) and is read with suspicion by its owner, which checks every entry's shape.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/**
 * Entries by key: those read from the file and those used or made in this run. A hit moves an
 * entry into the run's set, which `kept` lists first, so a bounded file keeps what is in use.
 */
export class KeptEntries<V> {
  private readonly used = new Map<string, V>();

  constructor(private readonly old: ReadonlyMap<string, V> = new Map()) {}

  /** How many entries there are, counting one read from the file and used again twice. */
  get size(): number {
    return this.old.size + this.used.size;
  }

  get(key: string): V | undefined {
    const hit = this.used.get(key) ?? this.old.get(key);
    if (hit !== undefined) this.used.set(key, hit);
    return hit;
  }

  set(key: string, value: V): void {
    this.used.set(key, value);
  }

  /** At most `max` entries: this run's first, then the others read from the file. */
  kept(max: number): [string, V][] {
    const kept = new Map(this.used);
    for (const [k, v] of this.old) {
      if (kept.size >= max) break;
      if (!kept.has(k)) kept.set(k, v);
    }
    return [...kept].slice(0, max);
  }
}

/** The parsed JSON of a cache file, or undefined when it is missing, not a plain file, unreadable or malformed. */
export function readCacheJson(file: string): unknown {
  try {
    if (!fs.lstatSync(file).isFile()) return undefined;
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Writes a cache file (beside itself, then renamed over it). A cache that cannot be written is
 * skipped silently: it only saves time (a read-only project, a full disk). Nothing is written
 * through a symbolic link or where the cache's folder is not a folder.
 */
export function writeCacheJson(file: string, content: unknown): void {
  const dir = path.dirname(file);
  try {
    fs.mkdirSync(dir, { recursive: true });
    if (!fs.lstatSync(dir).isDirectory()) return;
    if (fs.existsSync(file) && !fs.lstatSync(file).isFile()) return;
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(content), { flag: "wx" });
    fs.renameSync(tmp, file);
  } catch {
    // The next run does the work again.
  }
}
