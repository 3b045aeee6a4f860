/**
 * kernelc.config.json: where specs, templates and output live, which device profiles to build
 * (defaults plus user-defined ones), pinned tunable values per profile, and the configured kernel
 * instances. Validated with zod over the located JSON tree of json-source.ts, so every error has a
 * file, a JSON pointer and a span. docs/config.md describes every field.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import type { Diagnostic, Location } from "../core/diagnostic.js";
import { hasErrors } from "../core/diagnostic.js";
import { type Code, makeDiagnostic } from "../core/codes.js";
import { didYouMean } from "../core/did-you-mean.js";
import { nonPortablePart, portableSuggestion } from "../core/portable-path.js";
import {
  type JsonNode,
  DEFAULT_JSON_LIMITS,
  appendPointer,
  findForbiddenKeys,
  parseJson,
  resolvePointer,
  toPlain,
} from "../core/json-source.js";
import { InputFileError, readInputFile } from "../core/read-file.js";
import {
  DEFAULT_PROFILES,
  FEATURE_NAMES,
  LIMIT_NAMES,
  PROFILE_KEYS,
  type Profile,
  type ProfileInput,
  checkProfile,
  mergeProfiles,
  profileSchema,
  profileShadows,
} from "./profiles.js";
import { readTuneFile, TUNE_FILE, tunedPins, type TuneFile } from "./tune-file.js";
import { DEFAULT_MAX_CANDIDATES } from "../check/candidate-limit.js";

/** The config file's name, looked up in the project root. */
export const CONFIG_FILE = "kernelc.config.json";

/** The profile key of `tunables` that applies to every profile. */
export const ALL_PROFILES_KEY = "*";

/** Tunable names as the spec format spells them (WORKGROUP_SIZE). */
const TUNABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Instance names may appear in generated file names and identifiers. */
const INSTANCE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** One configured instance of a kernel: run-time leaves pinned to values. */
export interface InstanceConfig {
  readonly name?: string;
  /** Run-time leaf name (e.g. "attrs.num_heads", "dim(shapes.keyCacheT, 3)") → value; the back end interprets them. */
  readonly values: Readonly<Record<string, number | boolean | string>>;
}

/** The validated config with every default filled in. */
export interface KernelcConfig {
  readonly specs: string;
  readonly templates: string;
  readonly out: string;
  /** Profiles to build, by name, in run-time selection order. */
  readonly profiles: readonly string[];
  /** User profiles as written: new ones and overrides of same-named ones. */
  readonly defineProfiles: readonly ProfileInput[];
  /** Profile name or "*" → kernel name → tunable name → pinned value. */
  readonly tunables: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, number>>>>>>;
  /** Kernel name → its instances. */
  readonly instances: Readonly<Record<string, readonly InstanceConfig[]>>;
  /** Kernel name → what `kernelc tune` measures (call shapes, candidate values). */
  readonly tune: Readonly<Record<string, TuneKernelConfig>>;
  /** Profile name → kernel name → tunable pins measured by `kernelc tune` (read from kernelc.tune.json; config pins take precedence). */
  readonly tuned: Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, number>>>>>>;
  /** The most candidates (dtype assignments × tunable combinations × variants) one kernel may have on one profile. */
  readonly maxCandidates: number;
  /** The language of generated modules: TypeScript (.ts), or JavaScript with declarations (.js + .d.ts). */
  readonly emit: "ts" | "js";
}

/** How `kernelc tune` fills an input: explicit values, or a generator. */
export type TuneFill =
  readonly number[] | { readonly fill: "random" | "iota" | "constant"; readonly value?: number } | { readonly file: string };

/** One call shape `kernelc tune` times: a call (as for `kernelc explain --call`) plus the contents of its inputs. */
export interface TuneCallConfig {
  readonly name: string;
  readonly inputs: Readonly<Record<string, { readonly shape: readonly number[]; readonly dtype: string }>>;
  readonly outputs?: Readonly<Record<string, { readonly shape: readonly number[]; readonly dtype: string }>>;
  readonly attrs?: Readonly<Record<string, number | string | readonly number[]>>;
  /** Input id → contents; unnamed inputs get random values in [-1, 1] (floats) or zeros (integers). */
  readonly data?: Readonly<Record<string, TuneFill>>;
}

/** What `kernelc tune` measures for one kernel. */
export interface TuneKernelConfig {
  readonly calls: readonly TuneCallConfig[];
  /** Tunable name → the candidate values (default: the spec's `values`, else its default). */
  readonly tunables?: Readonly<Record<string, readonly number[]>>;
  /**
   * A top-level derive entry of the kernel to key per-call choices on: when the fastest setting
   * differs between calls, the tune file gets ranges of this key with their own values, which the
   * build folds into the dispatcher (src/plan/tuned-rule.ts).
   */
  readonly by?: string;
}

/** What loadConfig returns. `config` and `profiles` are the defaults when `diagnostics` has errors. */
export interface LoadedConfig {
  readonly config: KernelcConfig;
  /** The profiles to build (config.profiles resolved against the defaults merged with defineProfiles), in order. */
  readonly profiles: readonly Profile[];
  /** Every known profile: the defaults with defineProfiles applied. */
  readonly allProfiles: readonly Profile[];
  /** The project root: folder fields are relative to it. */
  readonly root: string;
  /** The config file's path when one was read. */
  readonly file?: string;
  /** kernelc.tune.json when the project has one (its pins are in config.tuned). */
  readonly tuneFile?: { readonly file: string; readonly tune: TuneFile };
  readonly diagnostics: readonly Diagnostic[];
}

/** The config used when there is no kernelc.config.json. */
export const DEFAULT_CONFIG: KernelcConfig = Object.freeze({
  specs: "specs",
  templates: "templates",
  out: "out",
  profiles: DEFAULT_PROFILES.map((p) => p.name),
  defineProfiles: [],
  tunables: {},
  instances: {},
  tune: {},
  tuned: {},
  maxCandidates: DEFAULT_MAX_CANDIDATES,
  emit: "ts",
});

const folderSchema = z
  .string({ error: "a folder must be a string" })
  .min(1, { error: "a folder must not be empty" })
  .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, { error: "a folder path must not hold control characters (a newline, a tab, an escape)" });

const instanceSchema = z.strictObject({
  name: z
    .string({ error: "an instance name must be a string" })
    .regex(INSTANCE_NAME_PATTERN, {
      error: "an instance name must be 1-64 characters of letters, digits, '.', '-' and '_', starting with a letter or digit",
    })
    .optional(),
  values: z.record(
    z.string(),
    z.union([z.number(), z.boolean(), z.string().max(1024)], { error: "an instance value must be a number, a boolean or a string" }),
    { error: "values must be an object mapping run-time leaf names to numbers, booleans or strings" },
  ),
});

// Any integer a spec's tunable may hold (a spec's defaults include 0, e.g. a flag), within what a
// WGSL i32 literal can carry.
const tunableValueSchema = z
  .number({ error: "a pinned tunable value must be a number" })
  .int({ error: "a pinned tunable value must be an integer" })
  .min(-(2 ** 31 - 1), { error: "a pinned tunable value must be at least -(2^31 - 1)" })
  .max(2 ** 31 - 1, { error: "a pinned tunable value must be at most 2^31 - 1" });

const tensorDescSchema = z.strictObject({
  shape: z.array(z.number().int().min(0), { error: "a shape must be an array of whole numbers" }),
  dtype: z.string({ error: 'a dtype must be a string such as "float16"' }),
});

const tuneCallSchema = z.strictObject({
  name: z
    .string({ error: "a tune call needs a name" })
    .regex(INSTANCE_NAME_PATTERN, { error: "a tune call name must be 1-64 characters of letters, digits, '.', '-' and '_'" }),
  inputs: z.record(z.string(), tensorDescSchema, { error: "inputs must map input ids to {shape, dtype}" }),
  outputs: z.record(z.string(), tensorDescSchema, { error: "outputs must map output ids to {shape, dtype}" }).optional(),
  attrs: z
    .record(z.string(), z.union([z.number(), z.string(), z.array(z.number())]), { error: "attrs must map attribute names to values" })
    .optional(),
  data: z
    .record(
      z.string(),
      z.union(
        [
          z.array(z.number()),
          z.strictObject({ fill: z.enum(["random", "iota", "constant"]), value: z.number().optional() }),
          z.strictObject({
            file: z.string().regex(/^(?![/\\])(?!.*(?:^|[/\\])\.\.(?:[/\\]|$))[^\0]+\.json$/, {
              error: "a data file is a .json path inside the project, without ..",
            }),
          }),
        ],
        {
          error:
            'an input\'s data is an array of numbers, {"fill": "random" | "iota" | "constant", "value": n} or {"file": "path/inside/project.json"}',
        },
      ),
    )
    .optional(),
});

const tuneKernelSchema = z.strictObject({
  calls: z
    .array(tuneCallSchema, { error: "calls must be an array of call shapes" })
    .min(1, { error: "calls must list at least one call shape" }),
  tunables: z.record(z.string(), z.array(tunableValueSchema).min(1, { error: "list at least one candidate value" })).optional(),
  by: z
    .string({ error: "by must name a top-level derive entry of the kernel" })
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "by must name a top-level derive entry of the kernel (an identifier)" })
    .optional(),
});

const configSchema = z.strictObject({
  $schema: z.string({ error: "$schema must be a string" }).optional(),
  $comment: z.union([z.string(), z.array(z.string())], { error: "$comment must be a string or an array of strings" }).optional(),
  specs: folderSchema.optional(),
  templates: folderSchema.optional(),
  out: folderSchema.optional(),
  profiles: z
    .array(z.string({ error: "a profile name must be a string" }), { error: "profiles must be an array of profile names" })
    .min(1, { error: "profiles must name at least one profile" })
    .optional(),
  defineProfiles: z.array(profileSchema, { error: "defineProfiles must be an array of profile objects" }).optional(),
  tunables: z
    .record(
      z.string(),
      z.record(
        z.string(),
        z.record(z.string(), tunableValueSchema, { error: "a kernel's pins must be an object mapping tunable names to values" }),
        { error: "a profile's pins must be an object mapping kernel names to {TUNABLE: value} objects" },
      ),
      { error: 'tunables must be an object mapping profile names (or "*") to kernels' },
    )
    .optional(),
  instances: z
    .record(z.string(), z.array(instanceSchema, { error: "a kernel's instances must be an array of instance objects" }), {
      error: "instances must be an object mapping kernel names to arrays of instances",
    })
    .optional(),
  tune: z.record(z.string(), tuneKernelSchema, { error: "tune must be an object mapping kernel names to {calls, tunables}" }).optional(),
  maxCandidates: z
    .number({ error: "maxCandidates must be a number" })
    .int({ error: "maxCandidates must be a positive integer" })
    .positive({ error: "maxCandidates must be a positive integer" })
    .max(2 ** 31 - 1, { error: "maxCandidates must be at most 2^31 - 1" })
    .optional(),
  emit: z
    .enum(["ts", "js"], { error: 'emit must be "ts" (TypeScript modules) or "js" (JavaScript modules with .d.ts declarations)' })
    .optional(),
});

/** The top-level fields of kernelc.config.json. */
export const CONFIG_KEYS: readonly string[] = Object.keys(configSchema.shape);

/** Collects diagnostics with locations resolved against the located JSON tree. */
class Reporter {
  readonly diagnostics: Diagnostic[] = [];

  constructor(
    /** The config file, named in messages about its top level. */
    readonly file: string,
    private readonly root: JsonNode | undefined,
  ) {}

  /** The location of `pointer`: the key's span when `atKey` and it is an object member, else the value's span, else the nearest existing ancestor's. */
  locate(pointer: string, atKey = false): Location {
    if (this.root === undefined) return { file: this.file, pointer };
    let p = pointer;
    for (;;) {
      const target = resolvePointer(this.root, p);
      if (target !== undefined) {
        const span = atKey && p === pointer && target.entry !== undefined ? target.entry.keySpan : target.node.span;
        return { file: this.file, pointer, span };
      }
      p = p.slice(0, p.lastIndexOf("/"));
    }
  }

  report(code: Code, pointer: string, message: string, hint?: string, opts?: { atKey?: boolean; warning?: boolean }): void {
    this.diagnostics.push(
      makeDiagnostic(code, message, this.locate(pointer, opts?.atKey), {
        hint,
        severity: opts?.warning ? "warning" : undefined,
      }),
    );
  }
}

function pointerOf(segments: readonly PropertyKey[]): string {
  return segments.reduce<string>((p, s) => appendPointer(p, typeof s === "symbol" ? String(s.description) : s), "");
}

function valueAt(data: unknown, segments: readonly PropertyKey[]): unknown {
  let v: unknown = data;
  for (const s of segments) {
    if (v === null || typeof v !== "object" || !Object.prototype.hasOwnProperty.call(v, s)) return undefined;
    v = (v as Record<PropertyKey, unknown>)[s];
  }
  return v;
}

function describeJson(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return `${typeof v === "number" ? "the number" : "the boolean"} ${String(v)}`;
}

/** The field names an object at `segments` may have, for "did you mean" hints. */
function knownKeysAt(segments: readonly PropertyKey[]): readonly string[] {
  const [a, , c] = segments;
  if (segments.length === 0) return CONFIG_KEYS;
  if (a === "defineProfiles" && segments.length === 2) return PROFILE_KEYS;
  if (a === "defineProfiles" && segments.length === 3 && c === "limits") return LIMIT_NAMES;
  if (a === "instances" && segments.length === 3) return Object.keys(instanceSchema.shape);
  return [];
}

function whereOf(segments: readonly PropertyKey[], file: string): string {
  if (segments.length === 0) return path.basename(file);
  if (segments[0] === "defineProfiles" && segments.length === 2) return "a profile of defineProfiles";
  if (segments[0] === "defineProfiles" && segments[2] === "limits") return "a profile's limits";
  if (segments[0] === "instances") return "an instance";
  return pointerOf(segments);
}

/** How to fix a value at `segments`: an example of the expected form. */
function exampleHint(segments: readonly PropertyKey[]): string {
  const [a, , c] = segments;
  switch (a) {
    case "specs":
    case "templates":
    case "out":
      return `write a folder path relative to the project root, e.g. "${String(a)}"`;
    case "profiles":
      return 'write an array of profile names, e.g. ["desktop-64k", "core"]';
    case "tunables":
      return segments.length === 4
        ? "pin a whole number, e.g. 64"
        : 'write {"<profile or *>": {"<kernel>": {"<TUNABLE>": value}}}, e.g. {"*": {"PagedAttention": {"WORKGROUP_SIZE": 64}}}';
    case "instances":
      return segments.length > 3
        ? 'write e.g. {"name": "llama-3-8b", "values": {"attrs.num_heads": 32}}; values are numbers, true/false or strings (for string attributes)'
        : 'write {"<kernel>": [{"name": "...", "values": {"<leaf>": number}}]}';
    case "defineProfiles":
      if (c === "limits") return "write a whole number, e.g. 32768";
      if (c === "features") return 'write an array of WebGPU feature names, e.g. ["shader-f16", "subgroups"]';
      if (c === "name") return 'write e.g. "desktop-128k"';
      return 'write {"name": "...", "limits": {...}, "features": [...]}; see docs/profiles.md';
    default:
      return "see docs/config.md for the field's format";
  }
}

/** Turns zod's issues into diagnostics: one per location, with what/why/how-to-fix text. */
function reportSchemaIssues(issues: readonly z.core.$ZodIssue[], data: unknown, rep: Reporter): void {
  const seen = new Set<string>();
  for (const issue of issues) {
    const code: Code = issue.path[0] === "defineProfiles" ? "profile_invalid" : "config_invalid";
    if (issue.code === "unrecognized_keys") {
      const known = knownKeysAt(issue.path);
      for (const key of issue.keys) {
        const segs = [...issue.path, key];
        const pointer = pointerOf(segs);
        if (seen.has(pointer)) continue;
        seen.add(pointer);
        const hint =
          didYouMean(key, known) ?? (known.length > 0 && known.length <= 12 ? `the known fields are: ${known.join(", ")}` : undefined);
        rep.report(
          code,
          pointer,
          `unknown field "${key}" in ${whereOf(issue.path, rep.file)}: kernelc does not define it`,
          hint ?? "remove it",
          {
            atKey: true,
          },
        );
      }
      continue;
    }
    const pointer = pointerOf(issue.path);
    if (seen.has(pointer)) continue;
    seen.add(pointer);
    const value = valueAt(data, issue.path);
    const field = issue.path.length > 0 ? String(issue.path[issue.path.length - 1]) : "";
    if (issue.code === "invalid_type" && value === undefined && issue.path.length > 0) {
      rep.report(code, pointer, `missing required field "${field}" in ${whereOf(issue.path.slice(0, -1), rep.file)}`, `add "${field}"`);
    } else if (issue.code === "invalid_value" && typeof value === "string") {
      const options = issue.values.map(String);
      const isFeature = issue.path[0] === "defineProfiles" && issue.path[2] === "features";
      const what = isFeature ? "WebGPU feature" : "value";
      const hint =
        didYouMean(value, options) ??
        (isFeature ? `the WebGPU features are: ${FEATURE_NAMES.join(", ")}` : `use one of: ${options.join(", ")}`);
      rep.report(code, pointer, `"${value}" at ${pointer} is not a known ${what}`, hint);
    } else if (issue.code === "invalid_type" || issue.code === "invalid_union") {
      rep.report(code, pointer, `${issue.message}, but ${pointer || "the document"} is ${describeJson(value)}`, exampleHint(issue.path));
    } else {
      rep.report(code, pointer, `${issue.message}; ${pointer} is ${describeJson(value)}`, exampleHint(issue.path));
    }
  }
}

/** The config's forbidden keys: records are copied into plain objects, where `__proto__` would set a prototype (lookups use Object.hasOwn, so `constructor` is a plain name). */
const CONFIG_FORBIDDEN_KEYS: ReadonlySet<string> = new Set(["__proto__"]);

/** Rejects `__proto__` keys anywhere (the walker spec validation uses too). */
function reportForbiddenKeys(node: JsonNode, rep: Reporter): void {
  for (const { pointer, entry } of findForbiddenKeys(node, CONFIG_FORBIDDEN_KEYS)) {
    rep.report(
      "json_forbidden_key",
      pointer,
      `the key "${entry.key}" is not allowed: it could change an object's prototype`,
      "rename or remove it",
      { atKey: true },
    );
  }
}

type ParsedConfig = z.infer<typeof configSchema>;

/** Checks what the schema cannot: profile names and merges, pins, instances, folders. */
function checkSemantics(parsed: ParsedConfig, root: string, rep: Reporter): { config: KernelcConfig; all: Profile[]; selected: Profile[] } {
  const defineProfiles = parsed.defineProfiles ?? [];
  const definedAt = new Map<string, number>();
  defineProfiles.forEach((p, i) => {
    const first = definedAt.get(p.name);
    if (first !== undefined) {
      rep.report(
        "profile_invalid",
        `/defineProfiles/${i}/name`,
        `profile "${p.name}" is defined twice in defineProfiles (first at /defineProfiles/${first})`,
        "merge the two entries into one",
      );
    } else {
      definedAt.set(p.name, i);
    }
  });
  const all = mergeProfiles(DEFAULT_PROFILES, defineProfiles);
  for (const [name, i] of definedAt) {
    const merged = all.find((p) => p.name === name)!;
    const given = defineProfiles[i];
    for (const problem of checkProfile(merged)) {
      const [field, key] = problem.path;
      const present =
        (field === "limits" && typeof key === "string" && given.limits?.[key as keyof typeof given.limits] !== undefined) ||
        (field === "features" && given.features !== undefined);
      const pointer = present ? pointerOf([`defineProfiles`, i, ...problem.path]) : `/defineProfiles/${i}`;
      rep.report("profile_invalid", pointer, problem.message, problem.hint);
    }
  }
  const allNames = all.map((p) => p.name);

  const profileNames = parsed.profiles ?? allNames;
  const selected: Profile[] = [];
  const selectedAt = new Map<string, number>();
  profileNames.forEach((name, i) => {
    const p = all.find((q) => q.name === name);
    if (p === undefined) {
      const known = `the known profiles are: ${allNames.join(", ")}`;
      rep.report(
        "unknown_profile",
        `/profiles/${i}`,
        `profile "${name}" in profiles is neither a default profile nor defined in defineProfiles`,
        didYouMean(name, allNames) ?? `${known}; define new ones in defineProfiles`,
      );
    } else if (selectedAt.has(name)) {
      rep.report(
        "config_invalid",
        `/profiles/${i}`,
        `profile "${name}" is listed twice in profiles (first at /profiles/${selectedAt.get(name)})`,
        "remove one of them",
      );
    } else {
      selectedAt.set(name, i);
      selected.push(p);
    }
  });
  selected.forEach((later, j) => {
    const earlier = selected.slice(0, j).find((e) => profileShadows(e, later));
    if (earlier === undefined) return;
    const pointer =
      parsed.profiles !== undefined
        ? `/profiles/${selectedAt.get(later.name)}`
        : definedAt.has(later.name)
          ? `/defineProfiles/${definedAt.get(later.name)}`
          : "";
    rep.report(
      "profile_invalid",
      pointer,
      `profile "${later.name}" can never be selected at run time: "${earlier.name}" comes earlier, and every adapter that fits "${later.name}" also fits "${earlier.name}"`,
      `list "${later.name}" before "${earlier.name}" in profiles, or drop it`,
      { warning: true },
    );
  });

  const tunables = parsed.tunables ?? {};
  for (const [profile, kernels] of Object.entries(tunables)) {
    const pp = pointerOf(["tunables", profile]);
    if (profile !== ALL_PROFILES_KEY && !allNames.includes(profile)) {
      rep.report(
        "unknown_profile",
        pp,
        `tunables pins values for profile "${profile}", which is not defined`,
        didYouMean(profile, allNames) ?? `use "*" for every profile or one of: ${allNames.join(", ")}`,
        { atKey: true },
      );
    }
    for (const [kernel, pins] of Object.entries(kernels)) {
      if (kernel.trim() === "")
        rep.report(
          "config_invalid",
          pointerOf(["tunables", profile, kernel]),
          "a kernel name in tunables is empty",
          'write the kernel\'s name, e.g. "PagedAttention"',
          { atKey: true },
        );
      for (const tunable of Object.keys(pins)) {
        if (!TUNABLE_NAME_PATTERN.test(tunable)) {
          rep.report(
            "config_invalid",
            pointerOf(["tunables", profile, kernel, tunable]),
            `"${tunable}" is not a tunable name: tunable names are identifiers such as WORKGROUP_SIZE`,
            "use the tunable's name as the spec declares it",
            { atKey: true },
          );
        }
      }
    }
  }

  const instances = parsed.instances ?? {};
  for (const [kernel, list] of Object.entries(instances)) {
    if (kernel.trim() === "")
      rep.report(
        "config_invalid",
        pointerOf(["instances", kernel]),
        "a kernel name in instances is empty",
        'write the kernel\'s name, e.g. "PagedAttention"',
        { atKey: true },
      );
    const names = new Map<string, number>();
    const keys = new Map<string, number>();
    list.forEach((inst, i) => {
      const ip = pointerOf(["instances", kernel, i]);
      if (inst.name !== undefined) {
        const first = names.get(inst.name);
        if (first !== undefined)
          rep.report(
            "config_invalid",
            `${ip}/name`,
            `instance name "${inst.name}" is used twice for ${kernel} (first at index ${first})`,
            "give each instance its own name",
          );
        else names.set(inst.name, i);
      }
      const leaves = Object.keys(inst.values);
      if (leaves.length === 0)
        rep.report(
          "config_invalid",
          `${ip}/values`,
          "an instance must pin at least one run-time value",
          'add leaves such as "attrs.num_heads": 32, or remove the instance',
        );
      for (const leaf of leaves) {
        if (leaf.trim() === "")
          rep.report(
            "config_invalid",
            pointerOf(["instances", kernel, i, "values", leaf]),
            "a run-time leaf name is empty",
            'write a leaf such as "attrs.num_heads"',
            { atKey: true },
          );
      }
      const key = JSON.stringify(leaves.sort().map((l) => [l, inst.values[l]]));
      const same = keys.get(key);
      if (same !== undefined && leaves.length > 0) {
        rep.report(
          "config_invalid",
          ip,
          `this instance pins the same values as instance ${same} of ${kernel}; it adds shaders to the build and nothing else`,
          "remove one of them",
          {
            warning: true,
          },
        );
      } else {
        keys.set(key, i);
      }
    });
  }

  const specs = parsed.specs ?? DEFAULT_CONFIG.specs;
  const templates = parsed.templates ?? DEFAULT_CONFIG.templates;
  const out = parsed.out ?? DEFAULT_CONFIG.out;
  checkFolders(root, { specs, templates, out }, parsed, rep);

  return {
    config: {
      specs,
      templates,
      out,
      profiles: profileNames,
      defineProfiles,
      tunables,
      instances,
      tune: parsed.tune ?? {},
      tuned: {},
      maxCandidates: parsed.maxCandidates ?? DEFAULT_MAX_CANDIDATES,
      emit: parsed.emit ?? DEFAULT_CONFIG.emit,
    },
    all,
    selected,
  };
}

/** Whether path `child` is `parent` or lies inside it (both absolute). */
function inside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
}

/**
 * The folder kernelc reads specs and templates from: the repository the project is in (the nearest
 * folder at or above the project root that holds a `.git` entry), or the project root itself when
 * it is in none. A project of a monorepo (examples/vite-app reads `../../specs`) reads the
 * repository's specs; nothing outside the repository is read.
 */
function readBoundary(absRoot: string): string {
  for (let dir = absRoot; ;) {
    try {
      fs.lstatSync(path.join(dir, ".git"));
      return dir;
    } catch {
      // No .git here: look further up.
    }
    const up = path.dirname(dir);
    if (up === dir) return absRoot;
    dir = up;
  }
}

/**
 * The specs and templates folders that are not inside the project's repository (readBoundary).
 * Lint runs on pull requests: a config (or a committed symlink `templates -> /etc`) must not
 * point kernelc at files elsewhere on the machine, which it would read and quote in diagnostics
 * (a template's first line in a Tint error, a JSON file's keys in schema errors). Checked as
 * written and, for a folder that exists, as the OS resolves it.
 */
function foldersOutsideProject(
  root: string,
  folders: { specs: string; templates: string },
): { field: "specs" | "templates"; message: string; hint: string }[] {
  const problems: { field: "specs" | "templates"; message: string; hint: string }[] = [];
  const absRoot = path.resolve(root);
  const boundary = readBoundary(absRoot);
  const where = boundary === absRoot ? `the project ${absRoot}` : `the repository ${boundary} (the project is ${absRoot})`;
  for (const field of ["specs", "templates"] as const) {
    const given = path.resolve(root, folders[field]);
    let real: string | undefined;
    let realBoundary = boundary;
    let realRoot = absRoot;
    try {
      realBoundary = fs.realpathSync(boundary);
      realRoot = fs.realpathSync(absRoot);
      real = fs.realpathSync(given);
    } catch {
      real = undefined;
    }
    // The project root itself is not a specs or templates folder (out/ and the config live there).
    const lexical = !inside(given, boundary) || given === absRoot;
    if (!lexical && (real === undefined || (inside(real, realBoundary) && real !== realRoot))) continue;
    problems.push({
      field,
      message: `${field} "${folders[field]}" is not a folder inside ${where} (${lexical ? given : `${given} resolves to ${real}`}); kernelc reads ${field} only from there`,
      hint: `keep ${field} in a folder of the project (or of its repository), such as "${field}" (a symbolic link must stay inside too)`,
    });
  }
  return problems;
}

/**
 * Folder paths Windows cannot create (core/portable-path.ts): an error for `out`, which kernelc
 * writes (and which is usually committed, so a checkout on Windows would fail too); a warning for
 * `specs` and `templates`, which kernelc only reads: they work on this machine, but the project
 * cannot be checked out and built on Windows.
 */
function checkPortableFolders(folders: { specs: string; templates: string; out: string }, parsed: ParsedConfig, rep: Reporter): void {
  for (const field of ["out", "specs", "templates"] as const) {
    const bad = nonPortablePart(folders[field]);
    if (!bad) continue;
    const written = field === "out";
    rep.report(
      "config_invalid",
      parsed[field] !== undefined ? `/${field}` : "",
      written
        ? `out ${JSON.stringify(folders[field])} cannot be created on Windows: ${bad.why}; kernelc writes the output folder, and a project built here (or its committed output) could not be built or checked out there`
        : `${field} ${JSON.stringify(folders[field])} cannot be created on Windows: ${bad.why}; kernelc reads it here, but the project could not be checked out and built there`,
      `rename the folder and set "${field}" to a portable path, such as ${JSON.stringify(portableSuggestion(folders[field]))} (no device name like CON or NUL, none of < > : " | ? *, no trailing dot or space)`,
      { warning: !written },
    );
  }
}

/** `out` is rewritten by builds: it must not be the project root, hold it, or overlap specs/ or templates/. */
function checkFolders(root: string, folders: { specs: string; templates: string; out: string }, parsed: ParsedConfig, rep: Reporter): void {
  checkPortableFolders(folders, parsed, rep);
  const abs = (p: string) => path.resolve(root, p);
  const out = abs(folders.out);
  const pointer = parsed.out !== undefined ? "/out" : "";
  if (inside(abs(root), out)) {
    rep.report(
      "config_invalid",
      pointer,
      `out "${folders.out}" is the project root or contains it; a build replaces the output folder's contents`,
      'use a folder of its own such as "out"',
    );
    return;
  }
  for (const problem of foldersOutsideProject(root, folders))
    rep.report("config_invalid", parsed[problem.field] !== undefined ? `/${problem.field}` : "", problem.message, problem.hint);
  for (const other of ["specs", "templates"] as const) {
    const o = abs(folders[other]);
    if (inside(o, out) || inside(out, o)) {
      rep.report(
        "config_invalid",
        pointer,
        `out "${folders.out}" overlaps ${other} "${folders[other]}"; a build would overwrite sources`,
        `give out and ${other} separate folders`,
      );
    }
  }
}

/** The default config and profiles, with the diagnostics that kept the config file from being used. */
function defaultsWith(root: string, file: string, diagnostics: readonly Diagnostic[]): LoadedConfig {
  return { config: DEFAULT_CONFIG, profiles: DEFAULT_PROFILES, allProfiles: DEFAULT_PROFILES, root, file, diagnostics };
}

/**
 * Validates the text of a kernelc.config.json. `file` names it in diagnostics; `root` is the
 * project root that folder fields are relative to.
 */
export function parseConfig(text: string, file: string, root: string): LoadedConfig {
  const fallback = (diagnostics: readonly Diagnostic[]): LoadedConfig => defaultsWith(root, file, diagnostics);
  const parsedJson = parseJson(text, file);
  if (parsedJson.root === undefined || hasErrors(parsedJson.diagnostics)) return fallback(parsedJson.diagnostics);
  const rep = new Reporter(file, parsedJson.root);
  reportForbiddenKeys(parsedJson.root, rep);
  if (hasErrors(rep.diagnostics)) return fallback(rep.diagnostics);
  const data = toPlain(parsedJson.root);
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    rep.report(
      "config_invalid",
      "",
      `${path.basename(file)} must hold a JSON object, but it holds ${describeJson(data)}`,
      'start from {} and add fields such as "profiles"',
    );
    return fallback(rep.diagnostics);
  }
  const result = configSchema.safeParse(data);
  if (!result.success) {
    reportSchemaIssues(result.error.issues, data, rep);
    return fallback(rep.diagnostics);
  }
  const { config, all, selected } = checkSemantics(result.data, root, rep);
  if (hasErrors(rep.diagnostics)) return fallback(rep.diagnostics);
  return withTuneFile({ config, profiles: selected, allProfiles: all, root, file, diagnostics: rep.diagnostics });
}

/**
 * Where `file` (of the project at `root`) resolves when that is outside the project's repository
 * (readBoundary): a committed symbolic link such as `kernelc.tune.json -> ~/.npmrc`. Lint runs on
 * pull requests, and a file that is not JSON is quoted in a json_syntax code frame: such a file is
 * refused unread. Undefined for a file inside, or one that does not resolve or is not a regular file
 * (its reader reports it).
 */
function resolvesOutsideRepository(root: string, file: string): string | undefined {
  let real: string;
  let boundary = readBoundary(path.resolve(root));
  try {
    real = fs.realpathSync(file);
    boundary = fs.realpathSync(boundary);
    // A FIFO or a device is refused unread by the reader (file_unreadable), wherever it is.
    if (!fs.statSync(real).isFile()) return undefined;
  } catch {
    return undefined;
  }
  return inside(real, boundary) ? undefined : real;
}

/** A file of the project that a symbolic link takes out of its repository, as an error of `code`, unread. */
function outsideFileDiagnostic(code: Code, file: string, real: string): Diagnostic {
  return makeDiagnostic(
    code,
    `${path.basename(file)} resolves (through a symbolic link) to ${real}, outside the project and its repository: kernelc does not read it`,
    { file },
    { hint: `replace the link with the file itself, inside the project` },
  );
}

/** Adds the project's kernelc.tune.json (if any) to a valid loaded config: its pins become config.tuned. */
function withTuneFile(loaded: LoadedConfig): LoadedConfig {
  const tuneFile = path.join(loaded.root, TUNE_FILE);
  const out = resolvesOutsideRepository(loaded.root, tuneFile);
  if (out !== undefined)
    return { ...loaded, diagnostics: [...loaded.diagnostics, outsideFileDiagnostic("tune_file_invalid", tuneFile, out)] };
  const read = readTuneFile(loaded.root);
  if (read.diagnostics.length > 0) return { ...loaded, diagnostics: [...loaded.diagnostics, ...read.diagnostics] };
  if (!read.exists) return loaded;
  return { ...loaded, config: { ...loaded.config, tuned: tunedPins(read.tune) }, tuneFile: { file: read.file, tune: read.tune } };
}

/** Reads and validates `<root>/kernelc.config.json`; without the file, returns the defaults and no diagnostics. */
export function loadConfig(root: string): LoadedConfig {
  const file = path.join(root, CONFIG_FILE);
  const out = resolvesOutsideRepository(root, file);
  if (out !== undefined) return defaultsWith(root, file, [outsideFileDiagnostic("config_invalid", file, out)]);
  let text: string;
  try {
    text = readInputFile(file, DEFAULT_JSON_LIMITS.maxBytes);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === "ENOENT") {
      // No config: the default folders, which must not be symlinks out of the project either.
      const diagnostics = foldersOutsideProject(root, DEFAULT_CONFIG).map((p) =>
        makeDiagnostic("config_invalid", p.message, { file: path.join(root, DEFAULT_CONFIG[p.field]) }, { hint: p.hint }),
      );
      return withTuneFile({ config: DEFAULT_CONFIG, profiles: DEFAULT_PROFILES, allProfiles: DEFAULT_PROFILES, root, diagnostics });
    }
    const tooLarge = e instanceof InputFileError && e.reason === "too_large";
    return defaultsWith(root, file, [
      makeDiagnostic(
        tooLarge ? "file_too_large" : "file_unreadable",
        `cannot read ${CONFIG_FILE}: ${e instanceof InputFileError ? e.message : (err.code ?? err.message)}`,
        { file },
        { hint: "make it a readable file, or remove it to build with the defaults" },
      ),
    ]);
  }
  return parseConfig(text, file, root);
}

/** The tunable values the config itself pins for one kernel on one profile (its "*" pins overridden by the profile's own). */
export function configPins(config: KernelcConfig, profile: string, kernel: string): Record<string, number> {
  const pick = (key: string): Readonly<Record<string, number>> => {
    const byKernel = Object.hasOwn(config.tunables, key) ? config.tunables[key] : undefined;
    return byKernel !== undefined && Object.hasOwn(byKernel, kernel) ? byKernel[kernel] : {};
  };
  return { ...pick(ALL_PROFILES_KEY), ...pick(profile) };
}

/** The pinned tunable values of one kernel on one profile: tuned values (kernelc.tune.json), overridden by the config's "*" pins, overridden by the profile's own. */
export function pinnedTunables(config: KernelcConfig, profile: string, kernel: string): Record<string, number> {
  const tuned = Object.hasOwn(config.tuned, profile) && Object.hasOwn(config.tuned[profile]!, kernel) ? config.tuned[profile]![kernel] : {};
  return { ...tuned, ...configPins(config, profile, kernel) };
}
