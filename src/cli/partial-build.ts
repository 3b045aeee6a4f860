/**
 * Partial builds (`build --profile X`, `build --kernel K`) replace only what they built: the
 * folders of the profiles built and the shaders of the kernels built. Every other profile's folder
 * is kept, with the shaders its manifest still references; profiles.json lists what out/ then holds.
 */
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import { UserError } from "../core/diagnostic.js";
import { stableJson } from "../core/stable-json.js";
import { bundleIndexFromManifests, generateManifestModule, MANIFEST_MODULE } from "../emit/bundle-index.js";
import type { EmitKind } from "../emit/code-writer.js";
import { moduleFiles } from "../emit/dispatcher.js";
import { profilesIndex } from "../emit/manifest.js";
import { BUILD_INFO, type OnDiskTree } from "./build-info.js";
import { MARKER, shaderBodyMatches } from "./out-dir.js";

const PROFILES_JSON = "profiles.json";

/** The generated modules' files by emit: the bundle index's and each profile's dispatcher's and manifest module's. */
const MODULE_FILE = {
  ts: /^(?:index|[^/]+\/(?:dispatcher|manifest))\.ts$/,
  js: /^(?:index|[^/]+\/(?:dispatcher|manifest))\.(?:js|d\.ts)$/,
};

/** The files of `out/` that are generated modules of the other emit than `emit`. */
export function otherEmitModules(files: Iterable<string>, emit: EmitKind): string[] {
  const other = MODULE_FILE[emit === "ts" ? "js" : "ts"];
  return [...files].filter((rel) => other.test(rel) && !MODULE_FILE[emit].test(rel)).sort();
}
const SHADER_REF = /^\.\.\/shaders\/([0-9a-f]{16})\.wgsl$/;

/** What a partial build merges. */
export interface PartialMerge {
  /** out/ as it is on disk (already checked to be kernelc's and unchanged). */
  readonly current: OnDiskTree;
  /** The files the partial compile produced. */
  readonly built: ReadonlyMap<string, string>;
  /** The profiles it built. */
  readonly profiles: readonly string[];
  /** Profile names in run-time order (the config's, then every other known one). */
  readonly order: readonly string[];
  /** How to name out/ in messages. */
  readonly shown: string;
  /** The kernels built with --kernel, if any. */
  readonly kernels?: readonly string[];
  /** The language of the generated modules (the built ones are in it; out/'s must be too). */
  readonly emit: EmitKind;
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The profile names an existing profiles.json lists, in its order. */
function listedProfiles(text: string | undefined): string[] {
  const index = parseJson(text) as { profiles?: unknown } | undefined;
  if (!index || !Array.isArray(index.profiles)) return [];
  return index.profiles
    .map((p: unknown) => (p && typeof p === "object" ? (p as { name?: unknown }).name : undefined))
    .filter((n): n is string => typeof n === "string" && /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(n));
}

/** The shader files a profile's manifest references ("shaders/<id>.wgsl"). */
function referencedShaders(manifestText: string, file: string, shown: string): string[] {
  const manifest = parseJson(manifestText) as { shaders?: unknown } | undefined;
  const bad = (): never => {
    throw new UserError([
      makeDiagnostic(
        "out_modified",
        `${shown}/${file} is not a manifest kernelc wrote, so a partial build cannot tell which shaders to keep`,
        undefined,
        { hint: "run `kernelc build` without --profile/--kernel to rebuild every profile" },
      ),
    ]);
  };
  if (!manifest || typeof manifest.shaders !== "object" || manifest.shaders === null || Array.isArray(manifest.shaders)) return bad();
  const out: string[] = [];
  for (const ref of Object.values(manifest.shaders as Record<string, unknown>)) {
    const m = typeof ref === "string" ? SHADER_REF.exec(ref) : null;
    if (!m) return bad();
    out.push(`shaders/${m[1]}.wgsl`);
  }
  return out;
}

/** The files of out/ after a partial build (without the marker and build-info.json, which the caller adds). */
export function mergePartial(m: PartialMerge): Map<string, string> {
  // Modules of the other emit would stay next to the ones built: out/ would mix .ts and .js.
  const mixed = otherEmitModules(m.current.files.keys(), m.emit);
  if (mixed.length > 0) {
    const lang = (e: EmitKind): string => (e === "ts" ? "TypeScript (.ts)" : "JavaScript (.js and .d.ts)");
    throw new UserError([
      makeDiagnostic(
        "out_emit_mixed",
        `${m.shown}/ holds ${lang(m.emit === "ts" ? "js" : "ts")} modules (${mixed.slice(0, 3).join(", ")}${mixed.length > 3 ? ", …" : ""}) and this build of some profiles or kernels writes ${lang(m.emit)} ones: the rest of ${m.shown}/ would keep the other kind`,
        undefined,
        {
          hint: `run \`kernelc build\` without --profile/--kernel to rebuild all of ${m.shown}/ (the modules kernelc wrote before are replaced), or build with --emit ${m.emit === "ts" ? "js" : "ts"}`,
        },
      ),
    ]);
  }
  const current = new Map<string, string>();
  for (const [rel, bytes] of m.current.files) if (rel !== BUILD_INFO && rel !== MARKER) current.set(rel, bytes.toString("utf8"));
  const built = new Set(m.profiles);
  const files = new Map<string, string>();
  for (const [rel, text] of current) {
    const top = rel.split("/")[0]!;
    if (rel === PROFILES_JSON || top === "shaders" || built.has(top)) continue;
    files.set(rel, text);
  }
  for (const [rel, text] of m.built) if (rel !== PROFILES_JSON && !rel.startsWith("shaders/")) files.set(rel, text);

  const listed = [...new Set([...listedProfiles(current.get(PROFILES_JSON)), ...m.profiles])].filter((n) =>
    files.has(`${n}/manifest.json`),
  );
  const rank = (n: string): number => {
    const i = m.order.indexOf(n);
    return i < 0 ? m.order.length : i;
  };
  const names = listed
    .map((n, i) => ({ n, i }))
    .sort((a, b) => rank(a.n) - rank(b.n) || a.i - b.i)
    .map((x) => x.n);
  // Folders of profiles that are no longer listed would be unreachable: drop them.
  const keepTop = new Set(names);
  for (const rel of [...files.keys()]) if (!keepTop.has(rel.split("/")[0]!)) files.delete(rel);

  for (const name of names) {
    for (const shader of referencedShaders(files.get(`${name}/manifest.json`)!, `${name}/manifest.json`, m.shown)) {
      if (files.has(shader)) continue;
      const text = m.built.get(shader) ?? current.get(shader);
      const id = path.basename(shader, ".wgsl");
      if (text === undefined || !shaderBodyMatches(id, text)) {
        const why = text === undefined ? "is not in" : "does not match its name in";
        throw new UserError([
          makeDiagnostic(
            "out_modified",
            `${shader}, which profile ${name} needs, ${why} ${m.shown}/: ${m.kernels?.length ? "another kernel's shaders changed since out/ was built" : "out/ does not hold the build its manifests describe"}`,
            undefined,
            {
              hint: "run `kernelc build` without --kernel/--profile to rebuild every kernel and profile",
            },
          ),
        ]);
      }
      files.set(shader, text);
    }
  }
  files.set(PROFILES_JSON, stableJson(profilesIndex(names.map((name) => ({ name })))));
  // The bundle index lists what out/ now holds, as profiles.json does.
  const shaderIds = [...files.keys()].filter((rel) => rel.startsWith("shaders/")).map((rel) => path.basename(rel, ".wgsl"));
  const index = bundleIndexFromManifests(
    names.map((name) => ({ name, text: files.get(`${name}/manifest.json`)! })),
    shaderIds,
    m.emit,
  );
  if (index !== undefined) {
    for (const [rel, text] of moduleFiles("index", index, m.emit)) files.set(rel, text);
    // The manifest module the index imports, of every profile: one kept from an out/ built before
    // kernelc wrote manifest modules has only its manifest.json.
    for (const name of names) {
      const manifest = generateManifestModule(name, parseJson(files.get(`${name}/manifest.json`)), m.emit);
      for (const [rel, text] of moduleFiles(`${name}/${MANIFEST_MODULE}`, manifest, m.emit)) files.set(rel, text);
    }
  }
  return new Map([...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
