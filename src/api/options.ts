/**
 * The checks of the programmatic API's arguments. The API is called from JavaScript as well as
 * TypeScript, so an option of the wrong type, a misspelt option name or a kernel that does not
 * exist must come back as a `usage` diagnostic naming the option and what it takes, not as a
 * TypeError thrown from deep inside the compiler.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import { didYouMean } from "../core/did-you-mean.js";

/** One option: what it takes, in words, and whether a value is of that kind. */
interface OptionRule {
  readonly expects: string;
  readonly ok: (v: unknown) => boolean;
}

const isString = (v: unknown): boolean => typeof v === "string";
const isStringArray = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === "string");

/** Every option of the API's functions. */
const RULES = {
  cwd: { expects: "a folder path (a string)", ok: isString },
  config: { expects: "a config file path relative to cwd (a string)", ok: isString },
  paths: { expects: "an array of spec file or folder paths relative to cwd (strings)", ok: isStringArray },
  templates: { expects: "a templates folder path relative to cwd (a string)", ok: isString },
  profiles: { expects: "an array of profile names (strings)", ok: isStringArray },
  profile: { expects: "a profile name (a string)", ok: isString },
  onProgress: { expects: "a function called with each step's description", ok: (v) => typeof v === "function" },
  emit: { expects: '"ts" or "js"', ok: (v) => v === "ts" || v === "js" },
  // Any value: explain() reports a call of the wrong form as call_invalid, as `kernelc explain --call` does.
  call: { expects: "a call { inputs, outputs, attrs }", ok: () => true },
} as const satisfies Record<string, OptionRule>;

/** An option name of the API. */
export type OptionName = keyof typeof RULES;

/** A value as a usage message shows it: JSON for plain values, a word for the rest. */
function showArg(v: unknown): string {
  if (typeof v === "function") return "a function";
  if (typeof v === "symbol" || typeof v === "bigint") return String(v);
  if (typeof v === "object" && v !== null && !Array.isArray(v)) return "an object";
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return Array.isArray(v) ? "an array" : String(v);
  }
}

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/**
 * Checks `options` of the API function `fn` against the options it takes (`allowed`) and those it
 * needs (`required`): an options object (or undefined), no unknown key (with a did-you-mean), each
 * value of its kind, and `cwd` an existing folder. Returns `usage` diagnostics, none when all is well.
 * An option set to undefined counts as left out.
 */
export function checkOptions(
  fn: string,
  options: unknown,
  allowed: readonly OptionName[],
  required: readonly OptionName[] = [],
): Diagnostic[] {
  const takes = `${fn}() takes { ${allowed.map((k) => `${k}${required.includes(k) ? "" : "?"}`).join(", ")} }`;
  if (options === undefined) options = {};
  if (typeof options !== "object" || options === null || Array.isArray(options))
    return [makeDiagnostic("usage", `the options of ${fn}() must be an object, got ${showArg(options)}`, undefined, { hint: takes })];
  const o = options as Record<string, unknown>;
  const out: Diagnostic[] = [];
  for (const key of Object.keys(o)) {
    if ((allowed as readonly string[]).includes(key)) continue;
    const guess = didYouMean(key, allowed);
    out.push(makeDiagnostic("usage", `unknown option \`${key}\` of ${fn}()`, undefined, { hint: guess ? `${guess} ${takes}` : takes }));
  }
  for (const key of allowed) {
    const v = hasOwn(o, key) ? o[key] : undefined;
    if (v === undefined) {
      if (required.includes(key))
        out.push(makeDiagnostic("usage", `${fn}() needs the option \`${key}\`: ${RULES[key].expects}`, undefined, { hint: takes }));
      continue;
    }
    const rule: OptionRule = RULES[key];
    if (!rule.ok(v))
      out.push(makeDiagnostic("usage", `${key} must be ${rule.expects}, got ${showArg(v)}`, undefined, { hint: fixHint(key, v, takes) }));
    else if (key === "cwd" && !isFolder(v as string))
      out.push(
        makeDiagnostic("usage", `cwd must be an existing folder, but ${path.resolve(v as string)} is not one`, undefined, {
          hint: "pass the project's folder (the one holding kernelc.config.json, specs/ and templates/), or leave cwd out for process.cwd()",
        }),
      );
  }
  return out;
}

/** How to fix a value of the wrong kind. */
function fixHint(key: OptionName, v: unknown, takes: string): string {
  if (key === "emit")
    return 'pass emit: "ts" (TypeScript modules) or emit: "js" (JavaScript with .d.ts declarations), or leave it out for the config\'s';
  if ((key === "paths" || key === "profiles") && typeof v === "string") return `pass an array: ${key}: [${JSON.stringify(v)}]`;
  return takes;
}

function isFolder(p: string): boolean {
  try {
    return fs.statSync(path.resolve(p)).isDirectory();
  } catch {
    return false;
  }
}

/** The kernel argument of explain(): a kernel name. */
export function checkKernelArg(kernel: unknown): Diagnostic[] {
  if (typeof kernel === "string" && kernel !== "") return [];
  return [
    makeDiagnostic("usage", `the kernel of explain() must be a kernel name (a non-empty string), got ${showArg(kernel)}`, undefined, {
      hint: 'call explain("PagedAttention", { profile: "core" }): the kernel name first, then the options',
    }),
  ];
}

/** `no kernel named …`, with a did-you-mean and the kernels there are. */
export function noKernelDiagnostic(name: string, kernels: readonly string[]): Diagnostic {
  const guess = didYouMean(name, kernels);
  const list = kernels.length ? `kernels: ${kernels.join(", ")}` : "no spec defines a kernel";
  return makeDiagnostic("usage", `no kernel named \`${name}\``, undefined, { hint: guess ? `${guess} ${list}` : list });
}

/** The hint of an unknown profile: a did-you-mean and the profiles there are. */
export function knownProfilesHint(name: string, known: readonly string[]): string {
  const guess = didYouMean(name, known);
  return `${guess ? `${guess} ` : ""}known profiles: ${known.join(", ")}`;
}
