/**
 * Errors of the operating system (disk full, permission denied, read-only filesystem, …) are the
 * user's to fix, not bugs: they become an `os_error` diagnostic that names the path and says what
 * to do, and the CLI exits 1 instead of printing "internal error".
 */
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";

/** What each error code means and what to do about it ({path} is replaced by the path). */
const ADVICE: Readonly<Record<string, { readonly what: string; readonly hint: string }>> = {
  ENOSPC: { what: "no space left on the device", hint: "free space on the filesystem that holds {path}, then run the command again" },
  EDQUOT: {
    what: "the disk quota is exceeded",
    hint: "free space within your quota on the filesystem that holds {path}, then run the command again",
  },
  EACCES: {
    what: "permission denied",
    hint: "check the permissions of {path} and of its folder (you need to be able to write there), or choose another output folder",
  },
  EPERM: {
    what: "operation not permitted",
    hint: "check the permissions and attributes of {path} (read-only or immutable files, a folder owned by another user), or choose another output folder",
  },
  EROFS: {
    what: "the filesystem is read-only",
    hint: "{path} is on a read-only filesystem: build on a writable checkout, or choose an output folder on a writable filesystem",
  },
  EEXIST: { what: "it already exists", hint: "something kernelc did not expect is at {path}; move it away and run the command again" },
  ENOTDIR: {
    what: "a part of the path is a file, not a folder",
    hint: "one of the folders of {path} is a file: rename it or choose another path",
  },
  EISDIR: {
    what: "it is a folder, not a file",
    hint: "{path} is a folder where kernelc expected a file: pass a file, or move the folder away",
  },
  EBUSY: {
    what: "the resource is busy",
    hint: "{path} is in use (a mount point, or open in another program): close what uses it, or choose another output folder",
  },
  ENOTEMPTY: {
    what: "the folder is not empty",
    hint: "{path} changed while kernelc was writing (another program writing there?): run the command again",
  },
  ENOENT: {
    what: "no such file or folder",
    hint: "{path} does not exist (or was removed while kernelc ran): check the path and run the command again",
  },
  ENAMETOOLONG: { what: "the name is too long", hint: "choose a shorter path than {path}" },
  ELOOP: {
    what: "too many levels of symbolic links",
    hint: "{path} goes through a symbolic link that points back at itself: fix the link",
  },
  EMFILE: { what: "too many open files", hint: "raise the open-file limit (ulimit -n) and run the command again" },
  ENFILE: {
    what: "too many open files in the system",
    hint: "close other programs or raise the system's open-file limit, then run the command again",
  },
  EXDEV: {
    what: "the operation crosses filesystems",
    hint: "{path} and its folder lie on different filesystems (a mount point?): choose an output folder that is not a mount point",
  },
  EIO: { what: "an input/output error", hint: "the device that holds {path} reported an error: check the disk" },
  ETXTBSY: { what: "the file is busy", hint: "{path} is in use by a running program: stop it and run the command again" },
};

/** Whether `err` is an error of the operating system about a file (it has an errno code kernelc knows and a syscall). */
export function isOsError(err: unknown): err is NodeJS.ErrnoException {
  if (!(err instanceof Error)) return false;
  const e = err as NodeJS.ErrnoException;
  return typeof e.code === "string" && Object.prototype.hasOwnProperty.call(ADVICE, e.code) && typeof e.syscall === "string";
}

/** What an OS error means, in words ("permission denied"). */
export function osErrorWhat(err: NodeJS.ErrnoException): string {
  return ADVICE[err.code ?? ""]?.what ?? err.message;
}

/** The `os_error` diagnostic for an OS error: the operation, the path, what the code means and what to do. */
export function osErrorDiagnostic(err: NodeJS.ErrnoException, note?: string): Diagnostic {
  const code = err.code ?? "EIO";
  const advice = ADVICE[code] ?? { what: err.message, hint: "check {path} and run the command again" };
  const target = (err as { dest?: string }).dest;
  const path = err.path === undefined ? "" : target ? ` ${err.path} -> ${target}` : ` ${err.path}`;
  return makeDiagnostic(
    "os_error",
    `cannot ${err.syscall ?? "access"}${path}: ${advice.what} (${code})`,
    err.path ? { file: err.path } : undefined,
    {
      hint: advice.hint.replaceAll("{path}", err.path ?? "the path"),
      notes: note ? [{ message: note }] : [],
    },
  );
}
