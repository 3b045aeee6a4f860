/** The text of `kernelc explain`: every candidate on a profile and why; and, for a call, why its variant. */
import type { KernelModel } from "../plan/dispatch-model.js";
import type { KernelProfileBuild } from "../plan/enumerate.js";
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic, DiagnosticNote, Location } from "../core/diagnostic.js";
import { didYouMean } from "../core/did-you-mean.js";
import { clip } from "../core/render-diagnostics.js";
import { appendPointer, resolvePointer, splitPointer, type JsonNode } from "../core/json-source.js";
import type { CallErrorKind } from "../plan/call-error.js";
import { outputsToFill } from "../plan/dispatch-model.js";
import { interpretPlan, KernelCallError, selectVariant } from "../plan/interpret.js";
import { describeF16Storage, f16StorageFor } from "../plan/f16-storage.js";
import { resolveProfile, type Profile } from "../plan/profiles.js";
import type { Call, Plan } from "../model/plan.js";
import { instanceExplainText, type ExplainedCandidate } from "./explain-values.js";

const KEY_LIMITS = [
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxStorageBufferBindingSize",
  "maxBufferSize",
] as const;

function describeCombo(dtypes: Readonly<Record<string, string>>, tunables: Readonly<Record<string, number>>): string {
  const d = Object.entries(dtypes)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  const t = Object.entries(tunables)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  return [d, t].filter(Boolean).join("; ");
}

/**
 * Every candidate of one kernel on one profile, emitted or pruned, with the reason and instances;
 * with `explained` (explainCandidates), each built instance also shows the spec's `explain` values.
 */
export function explainReport(build: KernelProfileBuild, profile: Profile, explained?: readonly ExplainedCandidate[]): string {
  const k = build.kernel;
  const limits = resolveProfile(profile);
  const lines: string[] = [];
  lines.push(`${k.spec.name} on profile ${profile.name}`);
  lines.push(`  features: ${profile.features.length ? profile.features.join(", ") : "none"}`);
  lines.push(`  limits: ${KEY_LIMITS.map((l) => `${l}=${limits[l]}`).join(", ")}`);
  // Only for a kernel that binds f16 data on this profile (a built candidate says how it is stored).
  if (build.candidates.some((c) => c.f16Storage)) lines.push(`  f16 storage: ${describeF16Storage(f16StorageFor(profile.features))}`);
  if (build.noVariantReason) lines.push(`  NO VARIANT: ${build.noVariantReason}`);
  const groups = new Map<string, ExplainedCandidate[]>();
  for (const c of explained ?? build.candidates) {
    const key = describeCombo(c.dtypes, c.tunables);
    groups.set(key, [...(groups.get(key) ?? []), c]);
  }
  const byId = new Map(k.variants.map((v) => [v.id, v]));
  for (const [combo, cands] of groups) {
    const state = cands.some((c) => c.status === "emitted")
      ? "built"
      : cands.some((c) => c.status === "not-dispatched")
        ? "skipped: an earlier combination is built"
        : "no variant survives";
    lines.push("", `candidates for ${combo} (${state}):`);
    for (const c of cands) {
      const v = byId.get(c.variant)!;
      lines.push(
        `  ${c.status === "emitted" ? "EMITTED" : c.status === "pruned" ? "PRUNED " : "SKIPPED"} ${c.variant} (priority ${v.priority})`,
      );
      if (c.reason) lines.push(`      ${c.reason}`);
      if (c.f16Storage)
        lines.push(`      f16 tensors ${c.f16Storage === "packed" ? "packed in u32 pairs, computed in f32" : "native (array<f16>)"}`);
      for (const i of c.instances) {
        const shown = i.status === "built" ? instanceExplainText(c, i.name) : "";
        lines.push(`      instance ${i.name}: ${i.status}${i.reason ? ` — ${i.reason}` : ""}${shown ? `; ${shown}` : ""}`);
      }
    }
  }
  return lines.join("\n") + "\n";
}

/** What a call comes to on one kernel and profile: the variant picked, why each earlier one was rejected, and the plan or the error. */
export interface CallOutcome {
  readonly picked?: string;
  readonly rejected: readonly { readonly variant: string; readonly reason: string }[];
  /** Why the call cannot be planned; `pointer` is the JSON pointer into the call of the value at fault, when there is one. */
  readonly error?: { readonly kind: CallErrorKind; readonly message: string; readonly pointer?: string };
  readonly plan?: Plan;
  /** The call's own keys other than inputs, outputs, attrs and `$`-keys such as `$comment` (a planner ignores them: likely typos). */
  readonly unknownKeys: readonly string[];
  /**
   * Keys of tensor entries other than shape, dtype and `$`-keys (`data`, `sahpe`), with the entry
   * (`input \`xT\``) and the key's JSON pointer. A planner ignores them (a runtime tensor may carry
   * more), but in a call written for explain they are mistakes: a `data` there is not read.
   */
  readonly unknownTensorKeys: readonly { readonly entry: string; readonly key: string; readonly pointer: string }[];
}

const TENSOR_KEYS = ["shape", "dtype"] as const;

const CALL_KEYS = ["inputs", "outputs", "attrs"] as const;
/** Likely names of a call's keys that are too far from them for a did-you-mean by edit distance. */
const CALL_KEY_ALIASES: Readonly<Record<string, string>> = {
  attributes: "attrs",
  attribute: "attrs",
  attr: "attrs",
  input: "inputs",
  output: "outputs",
};

/**
 * The warnings of a compilation that concern the kernel being explained: those located in its spec
 * file (the check's unused and binding warnings, the build's `binding_unused`, `no_instances`,
 * `no_variant_for_profile` of the profile explained), in the order the compilation gives them.
 */
export function kernelWarnings(diagnostics: readonly Diagnostic[], model: KernelModel): Diagnostic[] {
  return diagnostics.filter((d) => d.severity === "warning" && d.location?.file === model.kernel.spec.file);
}

/** Plans `call` with the interpreter (the generated dispatcher's semantics), keeping what explain shows. */
export function explainCall(model: KernelModel, call: unknown): CallOutcome {
  let picked: string | undefined;
  let rejected: { variant: string; reason: string }[] = [];
  let error: CallOutcome["error"];
  let plan: Plan | undefined;
  try {
    const sel = selectVariant(model, call);
    rejected = [...sel.rejected];
    picked = sel.chosen?.vm.variant.id;
    plan = interpretPlan(model, call);
  } catch (err) {
    if (!(err instanceof KernelCallError)) throw err;
    error = { kind: err.kind, message: err.message, ...(err.pointer !== undefined ? { pointer: err.pointer } : {}) };
  }
  const unknownKeys =
    typeof call === "object" && call !== null && !Array.isArray(call)
      ? Object.keys(call).filter((k) => !(CALL_KEYS as readonly string[]).includes(k) && !k.startsWith("$"))
      : [];
  return {
    picked,
    rejected,
    error,
    plan: plan ? (JSON.parse(JSON.stringify(plan)) as Plan) : undefined,
    unknownKeys,
    unknownTensorKeys: unknownTensorKeys(call),
  };
}

/** The keys of the call's tensor entries other than shape, dtype and `$`-keys (see CallOutcome). */
function unknownTensorKeys(call: unknown): CallOutcome["unknownTensorKeys"] {
  const out: { entry: string; key: string; pointer: string }[] = [];
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(call)) return out;
  for (const [bag, what] of [
    ["inputs", "input"],
    ["outputs", "output"],
  ] as const) {
    const tensors = Object.hasOwn(call, bag) ? call[bag] : undefined;
    if (!isObject(tensors)) continue;
    for (const id of Object.keys(tensors)) {
      const entry = tensors[id];
      if (!isObject(entry)) continue;
      for (const key of Object.keys(entry)) {
        if ((TENSOR_KEYS as readonly string[]).includes(key) || key.startsWith("$")) continue;
        out.push({ entry: `${what} \`${id}\``, key, pointer: [bag, id, key].reduce<string>((p, t) => appendPointer(p, t), "") });
      }
    }
  }
  return out;
}

/** A call's outcome as `kernelc explain --format json` prints it under `call`. */
export function callOutcomeJson(outcome: CallOutcome): unknown {
  const { picked, rejected, error, plan } = outcome;
  return { picked, rejected, error, plan };
}

/** A call's outcome as `kernelc explain` prints it. */
export function callOutcomeText(model: KernelModel, outcome: CallOutcome): string {
  const { picked, rejected, error, plan } = outcome;
  const lines = [`call of ${model.kernel.spec.name} on profile ${model.profile}:`];
  for (const r of rejected) lines.push(`  rejected ${r.variant}: ${clip(r.reason)}`);
  if (picked) lines.push(`  picked ${picked}`);
  if (error) lines.push(`  error (${error.kind}): ${clip(error.message)}`);
  if (plan) {
    for (const pass of plan.passes) lines.push(`    pass ${pass.id}: shader ${pass.shader}, workgroups [${pass.x}, ${pass.y}, ${pass.z}]`);
    for (const [id, size] of Object.entries(plan.scratch)) lines.push(`    scratch ${id}: ${size} bytes`);
  }
  return lines.join("\n") + "\n";
}

/** Where a call came from: its file and, when it was parsed with locations, its tree (for spans). */
export interface CallSource {
  readonly file: string;
  readonly root?: JsonNode;
}

/** The location of `pointer` in the call file: the value's key (or the value), or else its nearest enclosing value that the file has. */
function callLocation(source: CallSource | undefined, pointer: string | undefined): Location | undefined {
  if (!source) return undefined;
  if (pointer === undefined || !source.root) return { file: source.file, ...(pointer !== undefined ? { pointer } : {}) };
  const tokens = splitPointer(pointer);
  for (let n = tokens.length; n >= 0; n--) {
    const at = tokens.slice(0, n).reduce<string>((p, t) => appendPointer(p, t), "");
    const target = resolvePointer(source.root, at);
    if (target) return { file: source.file, pointer: at, span: target.entry?.keySpan ?? target.node.span };
  }
  return { file: source.file, pointer };
}

/** What a call of the kernel looks like, for a hint: its tensors with dtype and rank, its attributes, the dtypes a type parameter allows. */
function callSignature(model: KernelModel): string {
  const spec = model.kernel.spec;
  const fill = outputsToFill(model.kernel);
  const tensor = (t: { name: string; dtype: string; rank?: number }, optional: boolean): string =>
    `${t.name} (${[t.dtype, ...(t.rank !== undefined ? [`rank ${t.rank}`] : []), ...(optional ? ["optional"] : [])].join(", ")})`;
  const parts = [
    `inputs ${spec.inputs.map((i) => tensor(i, i.optional)).join(", ") || "none"}`,
    `outputs ${spec.outputs.map((o) => tensor(o, o.optional || fill.has(o.name))).join(", ") || "none"}`,
    `attrs ${spec.attributes.map((a) => a.name).join(", ") || "none"}`,
    ...spec.typeConstraints.map((t) => `${t.name} is ${t.types.join(" or ")}`),
  ];
  return `a call of ${spec.name} has ${parts.join("; ")}`;
}

/**
 * The diagnostics of a call's outcome: `call_invalid` for a call of the wrong form (and for keys
 * other than inputs, outputs and attrs, which a planner refuses), `call_rejected` for a valid call
 * no variant accepts or whose plan fails; none for a call that plans. With `source`, each points
 * into the call file at the value at fault.
 */
export function callDiagnostics(model: KernelModel, outcome: CallOutcome, source?: CallSource): Diagnostic[] {
  const name = model.kernel.spec.name;
  const out: Diagnostic[] = [];
  // Without a file (explain()'s call object), the pointer is said in a note.
  const at = (pointer: string | undefined): DiagnosticNote[] =>
    source || pointer === undefined ? [] : [{ message: `at ${pointer || "/"} of the call` }];
  for (const key of outcome.unknownKeys) {
    const alias = CALL_KEY_ALIASES[key];
    const guess = alias ? `did you mean \`${alias}\`?` : didYouMean(key, CALL_KEYS);
    out.push(
      makeDiagnostic(
        "call_invalid",
        `unknown key \`${key}\` in the call of ${name}: a call has only inputs, outputs and attrs (and $-keys for comments), and a planner refuses other keys`,
        callLocation(source, appendPointer("", key)),
        { hint: guess ? `${guess} (${callSignature(model)})` : `remove it (${callSignature(model)})`, notes: at(appendPointer("", key)) },
      ),
    );
  }
  for (const { entry, key, pointer } of outcome.unknownTensorKeys) {
    const guess = didYouMean(key, TENSOR_KEYS);
    out.push(
      makeDiagnostic(
        "call_invalid",
        `unknown key \`${key}\` in ${entry} of the call of ${name}: a tensor entry has only shape and dtype (and $-keys for comments)`,
        callLocation(source, pointer),
        {
          hint: `${guess ?? "remove it;"} a tensor entry is { shape, dtype }${key === "data" ? " (a call holds no tensor data: explain plans from shapes and dtypes)" : ""}`,
          notes: at(pointer),
        },
      ),
    );
  }
  const error = outcome.error;
  if (!error) return out;
  // The planner refuses the first unknown key too: it is reported above, with a did-you-mean.
  if (error.kind === "invalid_call" && outcome.unknownKeys.some((k) => appendPointer("", k) === error.pointer)) return out;
  const message = error.message.startsWith(`${name}: `) ? error.message.slice(name.length + 2) : error.message;
  if (error.kind === "invalid_call") {
    out.push(
      makeDiagnostic("call_invalid", `invalid call of ${name}: ${message}`, callLocation(source, error.pointer), {
        hint: callSignature(model),
        notes: at(error.pointer),
      }),
    );
  } else if (error.kind === "no_variant" && outcome.rejected.length > 0) {
    const notes = outcome.rejected.map((r) => ({ message: `variant \`${r.variant}\` rejected it: ${r.reason}` }));
    if (model.prunedVariants.length) notes.push({ message: `not built for profile ${model.profile}: ${model.prunedVariants.join(", ")}` });
    out.push(
      makeDiagnostic(
        "call_rejected",
        `no variant of ${name} accepts the call on profile ${model.profile}`,
        callLocation(source, undefined),
        {
          hint: `change the call so that every \`when\` condition of one variant holds (the notes say which failed), or add a variant that accepts it`,
          notes,
        },
      ),
    );
  } else {
    const what = error.kind === "contract" ? `${name} rejects the call` : `${name} cannot plan the call on profile ${model.profile}`;
    out.push(
      makeDiagnostic("call_rejected", `${what}: ${message}`, callLocation(source, error.pointer), {
        notes: at(error.pointer),
        hint:
          error.kind === "contract"
            ? "every call must meet the kernel's top-level `when` conditions; change the call so this one holds"
            : error.kind === "missing_shader"
              ? "the shader this call needs was not built for the profile: add the instance values the message names to the config's `instances`, then build again"
              : `change the call, or see \`kernelc explain ${name} --profile ${model.profile}\` for what was built`,
      }),
    );
  }
  return out;
}
