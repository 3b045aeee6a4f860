/**
 * Reads an input file (a spec, the config, the tune file, a template) that a pull request may have
 * put in place: only a regular file, and only up to a size limit. `fs.readFileSync` alone would
 * block forever on a FIFO, read a character device such as /dev/zero until memory runs out, and
 * fail with an internal error on a file over 2 GiB; here each of those is an InputFileError that
 * the caller reports as a diagnostic.
 */
import * as fs from "node:fs";

/** The size limit of a template file, and of the files read only to quote a line in a diagnostic (specs and configs have their own limit of the same size, DEFAULT_JSON_LIMITS). */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024;

/** Why an input file was not read: it is not a regular file, or it is larger than the limit. */
export class InputFileError extends Error {
  override readonly name = "InputFileError";
  constructor(
    message: string,
    /** `not_file`: a folder, FIFO, socket or device; `too_large`: over the limit (`size` bytes). */
    readonly reason: "not_file" | "too_large",
    readonly size?: number,
  ) {
    super(message);
  }
}

/** What a non-regular file is, for messages. */
function kindOf(st: fs.Stats): string {
  if (st.isDirectory()) return "a folder";
  if (st.isFIFO()) return "a FIFO (named pipe)";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a regular file";
}

function check(st: fs.Stats, maxBytes: number): void {
  if (!st.isFile()) throw new InputFileError(`it is ${kindOf(st)}, not a regular file`, "not_file");
  if (st.size > maxBytes)
    throw new InputFileError(`it is ${st.size} bytes, more than the limit of ${maxBytes} bytes`, "too_large", st.size);
}

/**
 * The UTF-8 text of `file` (symbolic links followed), which must be a regular file of at most
 * `maxBytes` bytes: InputFileError otherwise. Errors of the system (ENOENT, EACCES, …) are thrown
 * as they are. A file that is not regular is never opened (opening a FIFO blocks, and opening some
 * devices does something); the file is opened non-blocking and checked again, and at most
 * `maxBytes + 1` bytes are read, so a file that grows or is swapped meanwhile cannot get past.
 */
export function readInputFile(file: string, maxBytes: number): string {
  check(fs.statSync(file), maxBytes);
  const fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  try {
    const st = fs.fstatSync(fd);
    check(st, maxBytes);
    const buf = Buffer.allocUnsafe(Math.min(st.size, maxBytes) + 1);
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes)
        throw new InputFileError(`it is more than ${maxBytes} bytes, the limit (it grew while read)`, "too_large", total);
      if (total === buf.length) break;
    }
    return buf.toString("utf8", 0, total);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Why readInputFile failed, in words: InputFileError's reason, or what an OS error means ("it does
 * not exist", "permission denied"). Anything else is a bug, and is rethrown.
 */
export function readFailure(err: unknown): string {
  if (err instanceof InputFileError) return err.message;
  const e = err as NodeJS.ErrnoException;
  if (!(err instanceof Error) || typeof e.code !== "string") throw err;
  const words: Record<string, string> = {
    ENOENT: "it does not exist",
    ENOTDIR: "a part of its path is a file, not a folder",
    EACCES: "permission denied",
    EPERM: "operation not permitted",
    ELOOP: "too many levels of symbolic links",
    ENAMETOOLONG: "the name is too long",
    EIO: "an input/output error",
  };
  return e.code === "ENOENT" ? words.ENOENT! : `${words[e.code] ?? "it cannot be read"} (${e.code})`;
}

/** readInputFile, or undefined when the file cannot be read for any reason (for code frames of diagnostics). */
export function readInputFileOrUndefined(file: string, maxBytes: number): string | undefined {
  try {
    return readInputFile(file, maxBytes);
  } catch {
    return undefined;
  }
}
