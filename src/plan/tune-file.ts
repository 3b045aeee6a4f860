/**
 * kernelc.tune.json: the tunable values `kernelc tune` measured fastest on a real adapter, per
 * profile and kernel, with their provenance (adapter, driver, kernelc version, date, timer) and the
 * runner-up's timings. `kernelc build` reads it as pins beneath the config's own pins, so a build
 * from a tune file is as deterministic as one from the config alone.
 */
import * as path from "node:path";
import { z } from "zod";
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import { DEFAULT_JSON_LIMITS, parseJson, toPlain } from "../core/json-source.js";
import { InputFileError, readInputFile } from "../core/read-file.js";

/** The tune file's name, next to kernelc.config.json. */
export const TUNE_FILE = "kernelc.tune.json";

const pinsSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  z
    .number()
    .int()
    .min(-(2 ** 31 - 1))
    .max(2 ** 31 - 1),
);

const scoreSchema = z.strictObject({
  pins: pinsSchema,
  /** Median milliseconds per call shape, in the order of `calls`. */
  ms: z.array(z.number().nonnegative()),
  /** Geometric mean of `ms`. */
  score: z.number().nonnegative(),
});

/** A per-call rule (src/plan/tuned-rule.ts): ranges of a key, each with its own values of the ruled tunables. */
const perCallSchema = z.strictObject({
  /** The top-level derive entry of the kernel the ranges are cut on (the config's tune.<kernel>.by). */
  by: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  cases: z
    .array(
      z.strictObject({
        /** Calls whose key is at most this value (absent on the last range). */
        upTo: z.number().finite().optional(),
        pins: pinsSchema,
        /** The tune calls that fell in this range, and the range winner's time on each. */
        calls: z.array(z.string()),
        ms: z.array(z.number().nonnegative()),
      }),
    )
    .min(2),
});

const recordSchema = z.strictObject({
  /** The best single setting over every call (geometric mean); with perCall, what tools show and what ruled tunables fall back to nowhere. */
  pins: pinsSchema,
  perCall: perCallSchema.optional(),
  measured: z.strictObject({
    adapter: z.strictObject({ vendor: z.string(), architecture: z.string(), device: z.string(), description: z.string() }),
    driver: z.string(),
    kernelc: z.string(),
    date: z.string(),
    timer: z.enum(["timestamp-query", "wall-clock"]),
    repeats: z.number().int().positive(),
    calls: z.array(z.string()),
    candidates: z.number().int().positive(),
    winner: scoreSchema,
    runnerUp: scoreSchema.optional(),
    /** Runner-up's score over the winner's (1.07 = the winner is 7% faster). */
    margin: z.number().optional(),
    /** Every candidate measured, in the order they were compiled (the winner and runner-up among them). */
    table: z.array(scoreSchema).optional(),
  }),
});

const tuneFileSchema = z.strictObject({
  $comment: z.string().optional(),
  generatedBy: z.string(),
  profiles: z.record(z.string(), z.record(z.string(), recordSchema)),
});

/** One tuned kernel on one profile. */
export type TuneRecord = z.infer<typeof recordSchema>;

/** A per-call rule as the tune file holds it. */
export type PerCallRecord = z.infer<typeof perCallSchema>;

/** The whole tune file. */
export type TuneFile = z.infer<typeof tuneFileSchema>;

/** What reading the tune file gave: its records (empty without a file) and any problems. */
export interface TuneFileRead {
  readonly file: string;
  readonly exists: boolean;
  readonly tune: TuneFile;
  readonly diagnostics: readonly Diagnostic[];
}

/** An empty tune file (what `kernelc tune` starts from). */
export function emptyTuneFile(version: string): TuneFile {
  return {
    $comment:
      "Written by `kernelc tune`; `kernelc build` reads the pins (the config's pins take precedence). Re-run `kernelc tune` to update.",
    generatedBy: `kernelc ${version}`,
    profiles: Object.create(null),
  };
}

/** Reads `<root>/kernelc.tune.json`; a missing file is an empty one. */
export function readTuneFile(root: string): TuneFileRead {
  const file = path.join(root, TUNE_FILE);
  let text: string;
  try {
    text = readInputFile(file, DEFAULT_JSON_LIMITS.maxBytes);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === "ENOENT") return { file, exists: false, tune: emptyTuneFile("?"), diagnostics: [] };
    const tooLarge = e instanceof InputFileError && e.reason === "too_large";
    return {
      file,
      exists: false,
      tune: emptyTuneFile("?"),
      diagnostics: [
        makeDiagnostic(
          tooLarge ? "file_too_large" : "file_unreadable",
          `cannot read ${TUNE_FILE}: ${e instanceof InputFileError ? e.message : (err.code ?? err.message)}`,
          { file },
          { hint: "make it readable, or delete it to build with the config's pins alone" },
        ),
      ],
    };
  }
  const json = parseJson(text, file);
  if (json.root === undefined || json.diagnostics.some((d) => d.severity === "error"))
    return { file, exists: true, tune: emptyTuneFile("?"), diagnostics: json.diagnostics };
  const result = tuneFileSchema.safeParse(toPlain(json.root));
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const pointer = "/" + issue.path.map((p) => String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
    return {
      file,
      exists: true,
      tune: emptyTuneFile("?"),
      diagnostics: [
        makeDiagnostic(
          "tune_file_invalid",
          `${TUNE_FILE} at ${pointer}: ${issue.message}`,
          { file, pointer },
          { hint: "the file is written by `kernelc tune`: re-run it, or restore the file from version control" },
        ),
      ],
    };
  }
  return { file, exists: true, tune: { ...result.data, profiles: ownMaps(result.data.profiles) }, diagnostics: [] };
}

/**
 * The profile → kernel → record maps without a prototype. Why: readers look a record up by the
 * profile's and the kernel's name (`profiles[p]?.[kernel]`), and a kernel may be named
 * `constructor` or a profile `constructor`: in a plain object a name the file lacks would find
 * Object.prototype's member (a function) and take it for a record.
 */
function ownMaps(profiles: TuneFile["profiles"]): TuneFile["profiles"] {
  const out: TuneFile["profiles"] = Object.create(null);
  for (const [profile, kernels] of Object.entries(profiles)) {
    const m: Record<string, TuneRecord> = Object.create(null);
    for (const [kernel, rec] of Object.entries(kernels)) m[kernel] = rec;
    out[profile] = m;
  }
  return out;
}

/** Profile → kernel → pins of a tune file. */
export function tunedPins(tune: TuneFile): Record<string, Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, Record<string, number>>> = Object.create(null);
  for (const [profile, kernels] of Object.entries(tune.profiles)) {
    out[profile] = Object.create(null);
    for (const [kernel, rec] of Object.entries(kernels)) out[profile]![kernel] = { ...rec.pins };
  }
  return out;
}
