/**
 * Template paths (a pass's `shader`, and the names a template includes or imports) are taken as
 * written, relative to the templates folder, with `/` between folders: nothing normalizes them, so
 * `..`, `.` and empty segments are refused. A `..` that climbs above the folder leaves it; one that
 * stays inside only names a file another way, and the message says which path to write instead.
 * The spec check and the renderer's loader share this, so both give the same reason, and the same
 * did-you-mean for a template that does not exist.
 */
import { didYouMean } from "../core/did-you-mean.js";
import { walkFiles } from "../core/walk.js";

/**
 * Why a template path's segments are refused, as a clause that follows the path ("leaves the
 * templates folder through `..`", "has `..` segments, …: write `x`"), or undefined when it has
 * no `..`, `.` or empty segment.
 */
export function templateSegmentsProblem(name: string): string | undefined {
  const segments = name.split("/");
  if (!segments.some((s) => s === ".." || s === "." || s === "")) return undefined;
  const kept: string[] = [];
  for (const s of segments) {
    if (s === "..") {
      if (kept.length === 0) return "leaves the templates folder through `..`";
      kept.pop();
    } else if (s !== "." && s !== "") kept.push(s);
  }
  const what = segments.includes("..") ? "`..` segments" : "`.` or empty segments";
  const fix = kept.length > 0 ? `: write \`${kept.join("/")}\`` : ", and names the templates folder itself, not a template";
  return `has ${what}, which a template path may not have (it is taken as written, not normalized)${fix}`;
}

/**
 * A did-you-mean for template path `name` that names no file in `templatesDir`: the one template
 * (`.jinja` file) of that file name in a folder (`row.wgsl.jinja` written for `lib/row.wgsl.jinja`,
 * a path taken relative to the including template), else the closest template path; undefined when
 * none is close or the folder cannot be read.
 */
export function templateGuess(templatesDir: string, name: string): string | undefined {
  let available: readonly string[];
  try {
    available = walkFiles(templatesDir).files.filter((f) => f.endsWith(".jinja"));
  } catch {
    return undefined;
  }
  const inFolder = available.filter((f) => f.endsWith(`/${name}`));
  return inFolder.length === 1 ? `did you mean \`${inFolder[0]}\`?` : didYouMean(name, available);
}
