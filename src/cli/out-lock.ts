/**
 * The output folder's lock: `.<out>.lock` beside out/, created exclusively and holding the pid,
 * host and start time of the build that writes out/. A second build waits (bounded) for it; a lock
 * whose process is dead (same host) is stale and is broken, under a short second lock so that two
 * builds never both break it and both win.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { makeDiagnostic } from "../core/codes.js";
import { UserError } from "../core/diagnostic.js";

/** What a lock file records. */
export interface LockOwner {
  readonly pid: number;
  readonly host: string;
  readonly started: string;
}

/** How long a build waits for another build's lock by default. */
export const DEFAULT_LOCK_WAIT_MS = 300_000;

/** A lock file that cannot be parsed is stale once it is this old (its writer died while writing it). */
const UNREADABLE_STALE_MS = 10_000;

/** The lock file of an output folder. */
export function lockPathFor(outDir: string): string {
  return path.join(path.dirname(outDir), `.${path.basename(outDir)}.lock`);
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (typeof v.pid === "number" && Number.isInteger(v.pid) && v.pid > 0 && typeof v.host === "string" && typeof v.started === "string")
      return { pid: v.pid, host: v.host, started: v.started };
  } catch {
    // not a lock kernelc finished writing
  }
  return undefined;
}

/** Whether process `pid` of this host is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readText(file: string): { text: string; mtimeMs: number } | undefined {
  try {
    return { text: fs.readFileSync(file, "utf8"), mtimeMs: fs.statSync(file).mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    // read() errors (EISDIR: a folder where the lock file goes) carry no path: name the file.
    (err as NodeJS.ErrnoException).path ??= file;
    throw err;
  }
}

/** Whether a lock with this text is stale: its process died on this host, or it was never finished. */
function isStale(text: string, mtimeMs: number): boolean {
  const owner = parseOwner(text);
  if (!owner) return Date.now() - mtimeMs > UNREADABLE_STALE_MS;
  return owner.host === os.hostname() && !alive(owner.pid);
}

/** Removes the lock if it still holds `text`, under the breaker lock (does nothing while another build holds the breaker). */
function breakStale(lock: string, text: string): void {
  const breaker = `${lock}.break`;
  let fd: number;
  try {
    fd = fs.openSync(breaker, "wx");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const b = readText(breaker);
    // A breaker is held for microseconds; an old one belongs to a build that died holding it.
    if (b && Date.now() - b.mtimeMs > UNREADABLE_STALE_MS) fs.rmSync(breaker, { force: true });
    return;
  }
  try {
    if (readText(lock)?.text === text) fs.rmSync(lock, { force: true });
  } finally {
    fs.closeSync(fd);
    fs.rmSync(breaker, { force: true });
  }
}

function describe(owner: LockOwner | undefined): string {
  return owner ? `pid ${owner.pid} on ${owner.host}, started ${owner.started}` : "a build that is still writing its lock";
}

/** Options of acquireOutLock. */
export interface LockOptions {
  readonly waitMs: number;
  /** Called once when the lock is busy and the build starts waiting. */
  readonly onWait?: (holder: string) => void;
}

/**
 * Takes the lock of `outDir`, waiting up to `waitMs` for another build to release it and breaking
 * stale locks. Returns the function that releases it. Throws UserError (`out_locked`) on timeout.
 */
export async function acquireOutLock(outDir: string, shown: string, opts: LockOptions): Promise<() => void> {
  const lock = lockPathFor(outDir);
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const text = JSON.stringify({ pid: process.pid, host: os.hostname(), started: new Date().toISOString() }) + "\n";
  const start = Date.now();
  let waiting = false;
  for (;;) {
    try {
      const fd = fs.openSync(lock, "wx", 0o666);
      let written = false;
      try {
        fs.writeSync(fd, text);
        written = true;
      } catch (err) {
        (err as NodeJS.ErrnoException).path ??= lock;
        throw err;
      } finally {
        fs.closeSync(fd);
        if (!written) fs.rmSync(lock, { force: true });
      }
      return () => {
        if (readText(lock)?.text === text) fs.rmSync(lock, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const held = readText(lock);
    if (!held) continue;
    if (isStale(held.text, held.mtimeMs)) {
      breakStale(lock, held.text);
      continue;
    }
    const holder = describe(parseOwner(held.text));
    if (Date.now() - start >= opts.waitMs) {
      throw new UserError([
        makeDiagnostic(
          "out_locked",
          `another kernelc build (${holder}) is writing ${shown}/; waited ${Math.round((Date.now() - start) / 1000)} s for it`,
          { file: lock },
          {
            hint: `run the build again when the other one has finished (set KERNELC_LOCK_WAIT_MS to wait longer); if no build is running, remove ${lock}`,
          },
        ),
      ]);
    }
    if (!waiting) {
      waiting = true;
      opts.onWait?.(holder);
    }
    await sleep(Math.min(100, Math.max(1, opts.waitMs - (Date.now() - start))));
  }
}
