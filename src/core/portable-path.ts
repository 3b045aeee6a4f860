/**
 * Folder paths that every operating system kernelc runs on can create. Linux and macOS accept
 * almost any name; Windows does not: a project whose `out` is `gen/CON` or `out.` builds on Linux,
 * and then its committed output folder cannot be checked out, or built, on Windows (`CON` opens
 * the console, a trailing dot is silently dropped, so `out.` and `out` are one folder there).
 *
 * Why only these rules: they are the names Windows refuses or changes (device names, the
 * characters `<>:"|?*`, a trailing dot or space). Control characters are refused elsewhere (the
 * config's schema, `--out`), with their own message.
 */

/**
 * Names Windows reserves for devices, matched against a path part's base (before its first `.`,
 * trailing spaces ignored), in any case: `nul`, `NUL.txt` and `Nul.tar.gz` all name the device.
 * COM0 and LPT0 are reserved by some versions; ¹ ² ³ are the superscript digits Windows also takes.
 */
export const WINDOWS_DEVICE_NAME = /^(?:con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])$/i;

/** Characters Windows does not allow in a file or folder name (besides `/`, `\` and control characters). */
const WINDOWS_FORBIDDEN_CHARS = /[<>:"|?*]/;

/**
 * A drive prefix (`C:\`, `C:/`), whose `:` is not part of a name, on Windows only: elsewhere
 * `C:/x` is a relative path that makes a folder named `C:`.
 */
const DRIVE_PREFIX = /^[A-Za-z]:(?=[\\/])/;

function drivePrefix(p: string): string {
  return process.platform === "win32" ? (DRIVE_PREFIX.exec(p)?.[0] ?? "") : "";
}

/** What is wrong with one part of a path, and that part. */
export interface NonPortablePart {
  /** The part as written, e.g. "CON" or "out.". */
  readonly part: string;
  /** Why Windows cannot create it, e.g. `"CON" is a name Windows reserves for a device`. */
  readonly why: string;
}

/**
 * The first part of `p` (split at `/` and `\`, a leading drive letter left out on Windows, `.` and
 * `..` allowed) that Windows cannot create, or undefined when every part is portable.
 */
export function nonPortablePart(p: string): NonPortablePart | undefined {
  for (const part of p.slice(drivePrefix(p).length).split(/[\\/]+/)) {
    if (part === "" || part === "." || part === "..") continue;
    const bad = WINDOWS_FORBIDDEN_CHARS.exec(part);
    if (bad) return { part, why: `"${part}" holds ${bad[0]}, which Windows does not allow in a name (nor any of < > : " | ? *)` };
    if (/[. ]$/.test(part))
      return {
        part,
        why: `"${part}" ends with ${part.endsWith(".") ? "a dot" : "a space"}, which Windows drops from a name (so it would name another folder there)`,
      };
    const base = part.split(".")[0]!.trimEnd();
    if (WINDOWS_DEVICE_NAME.test(base))
      return {
        part,
        why: `"${part}" is${base === part ? " " : ` (by its base "${base}") `}a name Windows reserves for a device (CON, PRN, AUX, NUL, COM0-9, LPT0-9, in any case and with any extension)`,
      };
  }
  return undefined;
}

/**
 * `p` with each part Windows cannot create made portable, for a "did you mean" hint: forbidden
 * characters become `-`, trailing dots and spaces go, a device name gets `-out` after its base.
 */
export function portableSuggestion(p: string): string {
  const drive = drivePrefix(p);
  const parts = p.slice(drive.length).split(/([\\/]+)/);
  const fixed = parts.map((part, i) => {
    if (i % 2 === 1 || part === "" || part === "." || part === "..") return part;
    let s = part.replace(/[<>:"|?*]/g, "-").replace(/[. ]+$/, "");
    if (s === "") s = "out";
    const dot = s.indexOf(".");
    const base = dot < 0 ? s : s.slice(0, dot);
    if (WINDOWS_DEVICE_NAME.test(base.trimEnd())) s = `${base.trimEnd()}-out${dot < 0 ? "" : s.slice(dot)}`;
    return s;
  });
  return drive + fixed.join("");
}
