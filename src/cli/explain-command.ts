/** `kernelc explain`: every candidate of a kernel on a profile, and for a call the variant it picks. */
import * as path from "node:path";
import { compile } from "../api/compile.js";
import { loadProjectConfig } from "../api/config.js";
import { makeDiagnostic } from "../core/codes.js";
import { UserError } from "../core/diagnostic.js";
import { DEFAULT_JSON_LIMITS, parseJson, toPlain, type JsonNode } from "../core/json-source.js";
import { InputFileError, readFailure, readInputFile } from "../core/read-file.js";
import { stableJson } from "../core/stable-json.js";
import { configPins, pinnedTunables } from "../plan/config.js";
import { ruleTunables, ruleText } from "../plan/tuned-rule.js";
import type { TuneRecord } from "../plan/tune-file.js";
import { callDiagnostics, callOutcomeJson, callOutcomeText, explainCall, explainReport, kernelWarnings } from "../emit/explain.js";
import { explainCandidates } from "../emit/explain-values.js";
import { knownProfilesHint, noKernelDiagnostic } from "../api/options.js";
import { diagnosticRows, fileSources, printDiagnostics, type Format, type Io } from "./io.js";

/** What kernelc.tune.json says of this kernel on this profile, and which of its pins the config overrides. */
function tunedReport(rec: TuneRecord, effective: Readonly<Record<string, number>>, configPinned: Readonly<Record<string, number>>): string {
  const show = (pins: Readonly<Record<string, number>>): string =>
    Object.entries(pins)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ") || "(defaults)";
  const m = rec.measured;
  const lines = [
    `\ntuned (kernelc.tune.json): ${show(rec.pins)}, measured ${m.date} on ${m.adapter.description || m.adapter.vendor} with kernelc ${m.kernelc} (${m.timer}, ${m.repeats} rounds, ${m.candidates} candidates)`,
  ];
  lines.push(`  winner: ${m.winner.score} ms geomean over ${m.calls.join(", ")} (${m.winner.ms.join(", ")} ms)`);
  const margin = m.margin ?? 1;
  if (m.runnerUp)
    lines.push(
      margin >= 1
        ? `  runner-up: ${show(m.runnerUp.pins)} at ${m.runnerUp.score} ms (${((margin - 1) * 100).toFixed(1)}% slower)`
        : `  runner-up: ${show(m.runnerUp.pins)} at ${m.runnerUp.score} ms (${((1 - margin) * 100).toFixed(1)}% faster as one setting for every call, but its shader setting measured slower with its per-call rule)`,
    );
  const rule = rec.perCall;
  const overridden = rule ? ruleTunables(rule).filter((t) => Object.hasOwn(configPinned, t)) : [];
  if (rule && overridden.length === 0) {
    const kept = Object.keys(rec.pins).filter((t) => !ruleTunables(rule).includes(t));
    lines.push(
      kept.length > 0
        ? `  chosen per call by \`${rule.by}\` (folded into the dispatcher; ${kept.join(", ")} keep${kept.length === 1 ? "s" : ""} the setting above, for every call):`
        : `  chosen per call by \`${rule.by}\` (folded into the dispatcher; the single best setting above is not used):`,
    );
    for (const t of ruleTunables(rule)) lines.push(`    ${t} = ${ruleText(rule, t)}`);
    let lower: number | undefined;
    for (const c of rule.cases) {
      const range =
        c.upTo === undefined
          ? `${rule.by} > ${lower}`
          : lower === undefined
            ? `${rule.by} <= ${c.upTo}`
            : `${lower} < ${rule.by} <= ${c.upTo}`;
      lines.push(`    ${range}: ${show(c.pins)} (${c.calls.map((n, i) => `${n} ${c.ms[i]} ms`).join(", ")})`);
      lower = c.upTo;
    }
  } else if (rule) {
    lines.push(`  a per-call rule on \`${rule.by}\` is not used: the config pins ${overridden.join(", ")}`);
  }
  for (const [k, v] of Object.entries(rec.pins))
    if (effective[k] !== v && !(rule && overridden.length === 0 && ruleTunables(rule).includes(k)))
      lines.push(`  ${k}: the config pins ${effective[k]}, which takes precedence over the tuned ${v}`);
  return lines.join("\n") + "\n";
}

/**
 * `kernelc explain`. With `--format json` it prints one document `{ candidates, tuned, call,
 * diagnostics }` whatever happens: a problem that stops it before any candidate is known (the
 * config, the profile, the kernel name, the call file, a build error) gives
 * `{ candidates: [], diagnostics }`, so a tool reads the same shape every time.
 */
export async function runExplain(
  io: Io,
  kernelName: string,
  opts: { profile: string; call?: string; config?: string; format: Format },
): Promise<number> {
  if (opts.format !== "json") return explainOnce(io, kernelName, opts);
  try {
    return await explainOnce(io, kernelName, opts);
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    io.stdout(stableJson({ candidates: [], diagnostics: diagnosticRows(io, err.diagnostics, fileSources(io.cwd)) }));
    return 1;
  }
}

async function explainOnce(
  io: Io,
  kernelName: string,
  opts: { profile: string; call?: string; config?: string; format: Format },
): Promise<number> {
  const loaded = loadProjectConfig(io.cwd, opts.config);
  if (!loaded.allProfiles.some((p) => p.name === opts.profile)) {
    throw new UserError([
      makeDiagnostic("unknown_profile", `unknown profile \`${opts.profile}\``, undefined, {
        hint: knownProfilesHint(
          opts.profile,
          loaded.allProfiles.map((p) => p.name),
        ),
      }),
    ]);
  }
  const callFile = opts.call !== undefined ? path.resolve(io.cwd, opts.call) : undefined;
  const call = callFile !== undefined ? readCall(callFile) : undefined;
  const result = await compile(loaded, { profiles: [opts.profile] });
  const errors = result.diagnostics.filter((d) => d.severity === "error");
  if (errors.length) {
    // Template and WGSL errors point into templates, which result.sources does not hold: read them.
    const sources = fileSources(io.cwd, result.sources);
    if (opts.format === "json") io.stdout(stableJson({ candidates: [], diagnostics: diagnosticRows(io, errors, sources) }));
    else printDiagnostics(io, errors, opts.format, sources);
    return 1;
  }
  const entry = result.profiles[0]?.kernels.find((k) => k.model.kernel.spec.name === kernelName);
  if (!entry) {
    const names = result.profiles[0]?.kernels.map((k) => k.model.kernel.spec.name) ?? [];
    throw new UserError([noKernelDiagnostic(kernelName, names)]);
  }
  const profile = result.profiles[0]!.profile;
  const tuned = loaded.tuneFile?.tune.profiles[opts.profile]?.[kernelName];
  const candidates = explainCandidates(entry.build, entry.model);
  const outcome = call ? explainCall(entry.model, call.value) : undefined;
  // A call that is invalid or that no variant accepts is still explained (each variant's reason),
  // and then reported as an error at its place in the call file: exit 1.
  const callErrors = call && outcome ? callDiagnostics(entry.model, outcome, { file: call.file, root: call.root }) : [];
  // The compilation's warnings about this kernel are shown as build and lint show them, then the call's errors.
  const shown = [...kernelWarnings(result.diagnostics, entry.model), ...callErrors];
  const sources = fileSources(io.cwd, new Map([...result.sources, ...(call ? [[call.file, call.text] as const] : [])]));
  if (opts.format === "json") {
    io.stdout(
      stableJson({
        candidates,
        tuned,
        call: outcome ? callOutcomeJson(outcome) : undefined,
        diagnostics: diagnosticRows(io, shown, sources),
      }),
    );
    return callErrors.length ? 1 : 0;
  }
  io.stdout(explainReport(entry.build, profile, candidates));
  if (tuned)
    io.stdout(
      tunedReport(tuned, pinnedTunables(loaded.config, opts.profile, kernelName), configPins(loaded.config, opts.profile, kernelName)),
    );
  if (outcome) io.stdout("\n" + callOutcomeText(entry.model, outcome));
  printDiagnostics(io, shown, opts.format, sources);
  return callErrors.length ? 1 : 0;
}

/** A call file as read: its path, text, located tree (for spans) and plain value. */
interface CallFile {
  readonly file: string;
  readonly text: string;
  readonly root: JsonNode;
  readonly value: unknown;
}

/**
 * Reads a call file with the located JSON reader of specs, so that a malformed file is reported
 * at its line and column with a code frame. The value is plain data with prototype-free objects.
 */
function readCall(file: string): CallFile {
  let text: string;
  try {
    // Never readFileSync: a FIFO would hang, /dev/zero fill the memory.
    text = readInputFile(file, DEFAULT_JSON_LIMITS.maxBytes);
  } catch (err) {
    const tooLarge = err instanceof InputFileError && err.reason === "too_large";
    throw new UserError([
      makeDiagnostic(
        tooLarge ? "file_too_large" : "file_unreadable",
        `cannot read the call file ${file}: ${readFailure(err)}`,
        { file },
        {
          hint: `check the --call path (relative to the current folder); ${CALL_SHAPE}`,
        },
      ),
    ]);
  }
  const parsed = parseJson(text, file);
  const errors = parsed.diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0 || !parsed.root) throw new UserError(errors.map((d) => ({ ...d, hint: d.hint ?? CALL_SHAPE })));
  return { file, text, root: parsed.root, value: toPlain(parsed.root) };
}

const CALL_SHAPE = 'a call is JSON: {"inputs": {"queryT": {"shape": [4, 4096], "dtype": "float16"}, …}, "outputs": {…}, "attrs": {…}}';
