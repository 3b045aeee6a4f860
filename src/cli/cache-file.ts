/**
 * What the files under .kernelc-cache/ (emit's verdict and lint's render caches) share: entries
 * read from the file next to those used in this run, and a write that never goes through a
 * symbolic link and never fails a run. A cache file is ours (kernelc writes it, signed with this
 * user's key; it is safe to delete): one not signed so is not read, and its owner still checks
 * every entry's shape.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
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

/**
 * The folder of this user's cache key: $XDG_CACHE_HOME/kernelc, else %LOCALAPPDATA%\kernelc on
 * Windows, else ~/.cache/kernelc; undefined without a home folder.
 */
function keyFolder(): string | undefined {
  const env = process.env;
  if (env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME)) return path.join(env.XDG_CACHE_HOME, "kernelc");
  if (process.platform === "win32" && env.LOCALAPPDATA && path.isAbsolute(env.LOCALAPPDATA)) return path.join(env.LOCALAPPDATA, "kernelc");
  const home = os.homedir();
  return home ? path.join(home, ".cache", "kernelc") : undefined;
}

/** This user's key, read once per process (null: none could be read or made). */
let userKey: Buffer | null | undefined;

/**
 * The key cache files are signed with: 32 random bytes kept in this user's cache folder (made on
 * first use), outside every project. Why: the files under .kernelc-cache/ are in the project, and a
 * pull request can commit them: a forged verdict "valid" for an invalid shader, or a forged render,
 * would make lint pass (and build write) what Tint never accepted. A file signed with a key the
 * pull request cannot know was written by kernelc for this user; any other is ignored. Undefined
 * when no key can be kept (no home folder, a read-only one): caches are then neither read nor
 * written, which costs time only.
 */
export function cacheKey(): Buffer | undefined {
  if (userKey !== undefined) return userKey ?? undefined;
  userKey = null;
  const dir = keyFolder();
  if (dir === undefined) return undefined;
  const file = path.join(dir, "cache-key");
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!fs.existsSync(file)) {
      // Made beside it and linked into place: a concurrent run never reads a half-written key.
      const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
      fs.writeFileSync(tmp, randomBytes(32).toString("hex"), { flag: "wx", mode: 0o600 });
      try {
        fs.linkSync(tmp, file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      } finally {
        fs.rmSync(tmp, { force: true });
      }
    }
    if (!fs.lstatSync(file).isFile()) return undefined;
    const text = fs.readFileSync(file, "utf8").trim();
    if (!/^[0-9a-f]{64}$/.test(text)) return undefined;
    userKey = Buffer.from(text, "hex");
  } catch {
    return undefined;
  }
  return userKey;
}

/** The start of a cache file: its signature, then its content (see cacheKey). */
const SIGNED = /^\{"mac":"([0-9a-f]{64})","data":/;

function mac(key: Buffer, text: string): Buffer {
  return createHmac("sha256", key).update(text).digest();
}

/**
 * The parsed JSON of a cache file, or undefined when it is missing, not a plain file, unreadable,
 * malformed, or not signed with this user's key (written elsewhere, edited, committed).
 */
export function readCacheJson(file: string): unknown {
  try {
    const key = cacheKey();
    if (key === undefined || !fs.lstatSync(file).isFile()) return undefined;
    const text = fs.readFileSync(file, "utf8");
    const m = SIGNED.exec(text);
    if (!m || !text.endsWith("}")) return undefined;
    const data = text.slice(m[0].length, -1);
    if (!timingSafeEqual(mac(key, data), Buffer.from(m[1]!, "hex"))) return undefined;
    return JSON.parse(data);
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
    const key = cacheKey();
    if (key === undefined) return;
    const data = JSON.stringify(content);
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    fs.writeFileSync(tmp, `{"mac":"${mac(key, data).toString("hex")}","data":${data}}`, { flag: "wx" });
    fs.renameSync(tmp, file);
  } catch {
    // The next run does the work again.
  }
}
