/**
 * One shader: a pass of a variant rendered for one specialization key on one profile. Rendering
 * computes the values the template reads, declares the bindings, renders through Nunjucks, and
 * records the result in a table deduplicated by content hash; validation runs Tint once per
 * distinct shader and feature set and checks the workgroup against the profile's limits.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { elementTypeHint, elementTypeProblem } from "../check/element-type.js";
import { BOOL_ELEMENT_HINT, boolElementTypeProblem } from "../check/bool-binding.js";
import { deriveEnv } from "../check/check-spec.js";
import { whereLocation } from "../check/locate.js";
import { wgslValueProblem } from "../check/template-values.js";
import { makeDiagnostic, type Code } from "../core/codes.js";
import type { Occurrence, Report } from "../core/dedupe.js";
import type { Diagnostic, DiagnosticNote } from "../core/diagnostic.js";
import { sha256Hex } from "../core/hash.js";
import { didYouMean } from "../core/did-you-mean.js";
import { LineMap } from "../core/line-map.js";
import { UNKNOWN } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import type { CheckedBinding, CheckedKernel, CheckedPass, CheckedVariant } from "../model/checked.js";
import { IMPLICIT_INSTANCE, type ShaderRequest } from "../plan/enumerate.js";
import { bindingElementType, DeriveEnv, StaticLeaves, wgslScalar, type StaticFacts } from "../plan/env.js";
import { f16StorageFor, type F16Storage } from "../plan/f16-storage.js";
import { FEATURE_NAMES, resolveProfile, type Profile } from "../plan/profiles.js";
import { RenderError, type Rendered as RenderedShader, type TemplateRenderer } from "./render.js";
import {
  keyContext,
  renderKey,
  type RenderStore,
  type ShaderAnalysis,
  type ShaderCache,
  type TemplateDigests,
  type VerdictStore,
  type WorkgroupFactsStore,
} from "./shader-cache.js";
import type { WgslProblem, WgslValidator } from "./validate-wgsl.js";
import { declareResources, type Declarations, type DeclBinding } from "./wgsl-declarations.js";
import { checkWorkgroupLimits, identifierCounts, workgroupFacts, type LimitProblem, type WorkgroupFacts } from "./wgsl-limits.js";
import { MAX_INPUT_BYTES, readInputFile } from "../core/read-file.js";

/** A distinct shader body and what it was rendered from. */
export interface ShaderRecord {
  readonly body: string;
  readonly templates: Set<string>;
  readonly kernels: Set<string>;
  /** How to map a line of the body back to a template line. */
  readonly rendered: RenderedShader;
  /** The kernel and pass of the first request that rendered it (for diagnostics). */
  readonly origin: ShaderOrigin;
  /** Every request that rendered it: profile, variant, pass and instances (for diagnostics). */
  readonly occurrences: Occurrence[];
  /** The tunable values of the first request (for hints). */
  readonly tunables: Readonly<Record<string, number>>;
  /** The feature sets it must validate under. */
  readonly featureSets: Map<string, readonly string[]>;
  /** The profiles it was rendered for, with their limits. */
  readonly profiles: Map<string, Profile>;
}

/** Where a rendered shader came from: the kernel and pass. */
export interface ShaderOrigin {
  readonly kernel: CheckedKernel;
  readonly pass: CheckedPass;
}

/**
 * What rendering needs beyond the request: the renderer, the templates folder, the shared table
 * and the sink of reports (each with where it arose; core/dedupe.ts merges repeats).
 */
export interface RenderContext {
  readonly renderer: TemplateRenderer;
  readonly templatesDir: string;
  readonly shaders: Map<string, ShaderRecord>;
  readonly reports: Report[];
  /** Renders and verdicts kept from earlier compilations, with this compilation's template digests (kernelc watch). */
  readonly cache?: { readonly shaders: ShaderCache; readonly digests: TemplateDigests };
  /** Declarations made so far, by what they are made from (many requests declare the same bindings). */
  readonly declared?: Map<string, Declarations>;
  /** What many requests share, computed once: each pass's derive names, each profile's `device`, each render's shader id. */
  readonly memo?: RenderMemo;
  /** Renders kept between processes, by render key (used only with `cache`, which makes the keys). */
  readonly renders?: RenderStore;
  /** Called after each request with the shader it rendered (new or not), e.g. to start its validation at once. */
  readonly onShader?: (id: string, rec: ShaderRecord) => void;
}

/** Values renderShader computes once per pass, profile or render rather than once per request. */
export interface RenderMemo {
  readonly names: WeakMap<CheckedPass, ReturnType<typeof deriveEnv>>;
  readonly devices: WeakMap<Profile, ReturnType<typeof deviceContext>>;
  /** A rendered shader's id (the hash of its text). */
  readonly ids: WeakMap<RenderedShader, string>;
}

/** An empty RenderMemo. */
export function createRenderMemo(): RenderMemo {
  return { names: new WeakMap(), devices: new WeakMap(), ids: new WeakMap() };
}

/** One pass of one variant to render, with the facts of its assignment on a profile. */
export interface PassRequest {
  readonly kernel: CheckedKernel;
  readonly variantId: string;
  readonly passId: string;
  readonly facts: StaticFacts;
  readonly request: ShaderRequest;
  readonly profile: Profile;
}

function declBindings(bindings: readonly CheckedBinding[], env: DeriveEnv, isBool: (b: CheckedBinding) => boolean): DeclBinding[] {
  return bindings.map((b, i) => {
    const elementType = bindingElementType(b, env);
    const fields = b.fields?.map((f) => ({ name: f.name, type: f.type }));
    return { binding: i, name: b.name, type: b.buffer, elementType, fields, ...(isBool(b) ? { bool: true } : {}) };
  });
}

/** The dtype (or type parameter) a tensor or scratch binding's spec declares, or undefined. */
function declaredDtype(kernel: CheckedKernel, variant: CheckedVariant, b: CheckedBinding): string | undefined {
  if (b.kind === "arg") return [...kernel.spec.inputs, ...kernel.spec.outputs].find((t) => t.name === b.ref)?.dtype;
  if (b.kind === "scratch") return variant.intermediates.find((im) => im.id === b.ref)?.dtype;
  return undefined;
}

/** The type parameter a binding's tensor has as its dtype, or undefined. */
function typeParamOf(
  kernel: CheckedKernel,
  variant: CheckedVariant,
  dtypes: Readonly<Record<string, string>>,
  b: CheckedBinding,
): string | undefined {
  const dtype = declaredDtype(kernel, variant, b);
  return dtype !== undefined && Object.hasOwn(dtypes, dtype) ? dtype : undefined;
}

/** For a tensor whose dtype is a type parameter: ` (T = float16)`, else "". */
function dtypeBecause(kernel: CheckedKernel, variant: CheckedVariant, dtypes: Readonly<Record<string, string>>, b: CheckedBinding): string {
  const param = typeParamOf(kernel, variant, dtypes, b);
  return param === undefined ? "" : ` (${param} = ${dtypes[param]})`;
}

/** The ONNX type a tensor or scratch binding holds under these dtypes, or undefined. */
function bindingDtype(
  kernel: CheckedKernel,
  variant: CheckedVariant,
  dtypes: Readonly<Record<string, string>>,
  b: CheckedBinding,
): string | undefined {
  const param = typeParamOf(kernel, variant, dtypes, b);
  return param === undefined ? declaredDtype(kernel, variant, b) : dtypes[param];
}

/**
 * Whether a binding holds a bool tensor under these dtypes: an input or output whose dtype (or the
 * type parameter's assignment) is `bool`, or an intermediate of dtype `bool`.
 */
function bindsBool(kernel: CheckedKernel, variant: CheckedVariant, dtypes: Readonly<Record<string, string>>, b: CheckedBinding): boolean {
  return bindingDtype(kernel, variant, dtypes, b) === "bool";
}

/**
 * What a template knows of the profile it is rendered for: `device.features.NAME` is true or false
 * for every WebGPU feature name, `device.limits.NAME` is the profile's value of every limit.
 */
function deviceContext(profile: Profile): { features: Record<string, boolean>; limits: Record<string, number> } {
  const features: Record<string, boolean> = {};
  for (const name of FEATURE_NAMES) features[name] = profile.features.includes(name);
  return { features, limits: { ...resolveProfile(profile) } };
}

/** A template position: `file` relative to the templates folder, 1-based line and column (0 or absent: unknown). */
export interface TemplateAt {
  readonly file: string;
  readonly line?: number;
  readonly column?: number;
  /** Characters from the column to underline (default 1), cut at the line's end. */
  readonly length?: number;
}

/** A diagnostic located at a template line (and column) when known. */
export function templateDiagnostic(
  code: Code,
  message: string,
  templatesDir: string,
  at: TemplateAt,
  extra: { hint?: string; notes?: readonly DiagnosticNote[] } = {},
): Diagnostic {
  const full = path.join(templatesDir, at.file);
  let span: { start: number; end: number } | undefined;
  if (at.line) {
    try {
      const map = new LineMap(readInputFile(full, MAX_INPUT_BYTES));
      span = map.spanAt(at.line, at.column || undefined);
      if (span && at.column && at.length && at.length > 1)
        span = { start: span.start, end: Math.min(span.start + at.length, map.lineEnd(at.line)) };
    } catch {
      span = undefined;
    }
  }
  return makeDiagnostic(code, message, { file: full, span }, extra);
}

/** Per helper table, a pattern of its names called as whole identifiers (see helpersCalled). */
const helperCalls = new WeakMap<ReadonlyMap<string, string>, RegExp>();

/**
 * The helpers a rendered body calls, by name: a helper's name as a whole identifier (no identifier
 * character before or after it) followed by optional whitespace and `(` — the identifiers that
 * `\b([A-Za-z_][A-Za-z0-9_]*)\s*\(` finds called, among the helpers' names, matched by one pattern
 * of the names rather than by matching every call of the body.
 */
function helpersCalled(body: string, helpers: ReadonlyMap<string, string>): Set<string> {
  const used = new Set<string>();
  // Only a helper whose name occurs in the body can be called there: the body is scanned only then.
  if (![...helpers.keys()].some((name) => body.includes(name))) return used;
  let pattern = helperCalls.get(helpers);
  if (!pattern) {
    const names = [...helpers.keys()].map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    pattern = new RegExp(`(?<![A-Za-z0-9_])(${names.join("|")})(?![A-Za-z0-9_])\\s*\\(`, "g");
    helperCalls.set(helpers, pattern);
  }
  for (const m of body.matchAll(pattern)) used.add(m[1]);
  return used;
}

/** The members of `env.wgsl` besides the declarations: the f16 storage form and each binding's storage and scalar types. */
function wgslMembers(decls: Declarations, form: F16Storage): Record<string, unknown> {
  return {
    f16Storage: form,
    storage: Object.fromEntries([...decls.storage.values()].map((b) => [b.name, b.storage])),
    scalar: Object.fromEntries([...decls.storage.values()].map((b) => [b.name, b.scalar])),
  };
}

/**
 * Renders a template with its pass's declarations: `env.wgsl.resourceDeclarations` and the f16
 * storage of each binding (`env.wgsl.f16Storage`, `.storage`, `.scalar`). Rendered without the
 * accessor helpers first; the helpers the body calls are then declared and the template rendered
 * again, so a shader carries only the helpers it uses. Gives the shader and the declarations text
 * it was rendered with (helpers included). Throws RenderError.
 */
export function renderWithDeclarations(
  renderer: TemplateRenderer,
  templatesDir: string,
  shader: string,
  context: Readonly<Record<string, unknown>>,
  decls: Declarations,
  form: F16Storage,
  printsDeclarationsAsIs = false,
): { rendered: RenderedShader; declarations: string } {
  const wgsl = wgslMembers(decls, form);
  // A template that prints the declarations as they stand is rendered once and filled in twice:
  // the same two results as the two renders below (TemplateRenderer.renderOpen).
  const open = printsDeclarationsAsIs ? renderer.renderOpen({ templatesDir, shader, context, wgsl }) : undefined;
  const first = open?.fill(decls.text);
  if (open && first) {
    refuseWithheldCalls(first, decls);
    const usedFirst = helpersCalled(first.wgsl, decls.helpers);
    if (usedFirst.size === 0) return { rendered: first, declarations: decls.text };
    const declarations = decls.withHelpers(usedFirst);
    const filled = open.fill(declarations);
    if (filled) return { rendered: filled, declarations };
  }
  const rendered = renderer.render({ templatesDir, shader, context, declarations: decls.text, wgsl });
  refuseWithheldCalls(rendered, decls);
  const used = helpersCalled(rendered.wgsl, decls.helpers);
  if (used.size === 0) return { rendered, declarations: decls.text };
  const declarations = decls.withHelpers(used);
  return { rendered: renderer.render({ templatesDir, shader, context, declarations, wgsl }), declarations };
}

/**
 * Throws a RenderError at the first call of an accessor helper kernelc left out because its name
 * is taken (a binding named `load_x` beside a binding `x`; see accessorHelpers), unless the template
 * declares a function of that name itself: Tint would only say that a variable cannot be called,
 * and "fix the template" would be the wrong advice, the fix being a binding's name in the spec.
 */
function refuseWithheldCalls(rendered: RenderedShader, decls: Declarations): void {
  if (decls.withheld.size === 0) return;
  const body = rendered.wgsl;
  for (const [name, w] of decls.withheld) {
    if (!body.includes(name)) continue;
    const call = new RegExp(`(?<![A-Za-z0-9_])${name}\\s*\\(`).exec(body);
    if (!call || new RegExp(`\\bfn\\s+${name}(?![A-Za-z0-9_])`).test(body)) continue;
    const before = body.slice(0, call.index).split("\n");
    const at = rendered.mapPosition(before.length, before[before.length - 1]!.length + 1);
    throw new RenderError(
      `the template calls \`${name}\`, which kernelc does not declare: it is ${w.why}`,
      at.file,
      at.line,
      undefined,
      false,
      `rename binding \`${w.rename}\` (its \`name\` in the spec, and where the template uses it), so that the helper \`${name}\` is declared`,
    );
  }
}

/** Renders one pass for one key; returns the shader's id (its content hash) or undefined after reporting why not. */
export function renderShader(req: PassRequest, ctx: RenderContext): string | undefined {
  const k = req.kernel;
  const v = k.variants.find((x) => x.id === req.variantId)!;
  const pass = v.passes.find((p) => p.id === req.passId)!;
  const r = req.request;
  // Which dtypes the problem is in matters when the kernel has several assignments (one may fail
  // Tint where another compiles: an f16-only construct, an integer-only operator).
  const several = k.spec.typeConstraints.some((tc) => tc.types.length > 1);
  const where: Occurrence = {
    profile: req.profile.name,
    ...(several
      ? {
          dtypes: Object.entries(req.facts.dtypes)
            .map(([p, t]) => `${p}=${t}`)
            .join(", "),
        }
      : {}),
    variant: req.variantId,
    pass: req.passId,
    instances: r.instances.filter((i) => i !== IMPLICIT_INSTANCE),
  };
  // With a cache kept across compilations (watch), a request of a reused enumeration whose template
  // closure is unchanged renders what it rendered before: its context, declarations and render key
  // are not computed again. (The request is the same object only while its kernel's spec, what its
  // templates read and the config are unchanged; see compile().)
  const requestKey = ctx.cache ? `${req.profile.name}\0${ctx.cache.digests.digest(pass.shader)}` : undefined;
  const earlier = requestKey !== undefined ? ctx.cache!.shaders.requestRenders.get(r) : undefined;
  let rendered: RenderedShader | undefined;
  if (earlier && earlier.key === requestKey) {
    rendered = earlier.rendered;
    ctx.cache!.shaders.stats.renderReused++;
  } else {
    rendered = renderRequest(req, ctx, v, pass, where);
    if (!rendered) return undefined;
    if (requestKey !== undefined) ctx.cache!.shaders.requestRenders.set(r, { key: requestKey, rendered });
  }
  const body = rendered.wgsl;
  let id = ctx.memo?.ids.get(rendered);
  if (id === undefined) {
    id = sha256Hex(body).slice(0, 16);
    ctx.memo?.ids.set(rendered, id);
  }
  const rec = ctx.shaders.get(id) ?? {
    body,
    templates: new Set<string>(),
    kernels: new Set<string>(),
    rendered,
    origin: { kernel: k, pass },
    occurrences: [] as Occurrence[],
    tunables: req.facts.tunables,
    featureSets: new Map(),
    profiles: new Map(),
  };
  rec.occurrences.push(where);
  rec.templates.add(pass.shader);
  // Templates it includes are sources too (all are named, also one a branch of the template did not use).
  for (const inc of pass.reads?.includes ?? []) rec.templates.add(inc);
  rec.kernels.add(k.spec.name);
  // A device for this profile has all its features, and the template may use any of them (it can
  // read them as device.features): validate under the profile's whole feature set.
  const features = [...req.profile.features].sort();
  rec.featureSets.set(features.join(","), features);
  rec.profiles.set(req.profile.name, req.profile);
  ctx.shaders.set(id, rec);
  ctx.onShader?.(id, rec);
  return id;
}

/** Renders one request (or takes the render of the same inputs from the cache); undefined after reporting why it cannot be rendered. */
function renderRequest(
  req: PassRequest,
  ctx: RenderContext,
  v: CheckedVariant,
  pass: CheckedPass,
  where: Occurrence,
): RenderedShader | undefined {
  const k = req.kernel;
  const r = req.request;
  let names = ctx.memo?.names.get(pass);
  if (!names) {
    names = deriveEnv(k, v, pass);
    ctx.memo?.names.set(pass, names);
  }
  const env = new DeriveEnv(names, new StaticLeaves(req.facts, r.pinned));
  const context: Record<string, unknown> = Object.create(null);
  try {
    for (const name of [...(pass.reads?.names ?? [])].sort()) {
      if (!names.has(name)) continue;
      const value = env.derive(name);
      if (value === UNKNOWN) throw new EvalError(`\`${name}\` is not known at build time for this instance`);
      const problem = wgslValueProblem(value);
      if (problem) {
        const d = names.get(name)!;
        ctx.reports.push({
          diagnostic: makeDiagnostic(
            "wgsl_value_invalid",
            `template ${pass.shader} reads \`${name}\`, but its value cannot be printed into WGSL: ${problem}`,
            whereLocation(k.spec.file, d.expr.source.where),
            { hint: "a value a template reads must be a finite number, a boolean, or a WGSL identifier or type name" },
          ),
          where,
        });
        return undefined;
      }
      context[name] = value;
    }
  } catch (err) {
    if (!(err instanceof EvalError)) throw err;
    ctx.reports.push({
      diagnostic: makeDiagnostic("eval_error", `template ${pass.shader} reads a value that cannot be computed: ${err.message}`, {
        file: k.spec.file,
        span: pass.where.span,
        pointer: pass.where.pointer,
      }),
      where,
    });
    return undefined;
  }
  context.tunables = { ...req.facts.tunables };
  context.dtypes = Object.fromEntries(Object.entries(req.facts.dtypes).map(([p, t]) => [p, wgslScalar(t)]));
  let device = ctx.memo?.devices.get(req.profile);
  if (!device) {
    device = deviceContext(req.profile);
    ctx.memo?.devices.set(req.profile, device);
  }
  context.device = device;
  const form = f16StorageFor(req.profile.features);
  let decls: Declarations;
  try {
    const bindings = declBindings(pass.bindings, env, (b) => bindsBool(k, v, req.facts.dtypes, b));
    // A bool tensor is bound as u32 words: an element type given through a derive entry is known only now.
    for (const [i, b] of bindings.entries()) {
      const problem = b.bool && b.type !== "uniform" ? boolElementTypeProblem(b.elementType) : undefined;
      if (!problem) continue;
      const cb = pass.bindings[i]!;
      ctx.reports.push({
        diagnostic: makeDiagnostic(
          "bool_element_type",
          `binding \`${cb.id}\` of pass \`${pass.id}\` holds bool tensor \`${cb.ref}\`${dtypeBecause(k, v, req.facts.dtypes, cb)}: ${problem}`,
          whereLocation(k.spec.file, cb.where),
          { hint: BOOL_ELEMENT_HINT },
        ),
        where,
      });
      return undefined;
    }
    const enableF16 = v.features.includes("shader-f16");
    const declKey = ctx.declared ? JSON.stringify([bindings, form, enableF16]) : "";
    const known = ctx.declared?.get(declKey);
    decls = known ?? declareResources(bindings, form, { enableF16 });
    if (!known) ctx.declared?.set(declKey, decls);
    // A binding views the tensor's bytes as its element type (valid, as declared): its scalar must be the dtype's.
    for (const [i, b] of bindings.entries()) {
      const cb = pass.bindings[i]!;
      const dtype = b.type === "uniform" || b.elementType === undefined ? undefined : bindingDtype(k, v, req.facts.dtypes, cb);
      const problem = dtype === undefined ? undefined : elementTypeProblem(dtype, b.elementType!);
      if (!problem) continue;
      ctx.reports.push({
        diagnostic: makeDiagnostic(
          "element_type_mismatch",
          `binding \`${cb.id}\` of pass \`${pass.id}\` holds ${cb.kind === "scratch" ? "intermediate" : "tensor"} \`${cb.ref}\`${dtypeBecause(k, v, req.facts.dtypes, cb)}: ${problem}`,
          whereLocation(k.spec.file, cb.where),
          { hint: elementTypeHint(dtype!, typeParamOf(k, v, req.facts.dtypes, cb)) },
        ),
        where,
      });
      return undefined;
    }
  } catch (err) {
    ctx.reports.push({
      diagnostic: makeDiagnostic("eval_error", `cannot declare the bindings of pass \`${pass.id}\`: ${(err as Error).message}`, {
        file: k.spec.file,
        span: pass.where.span,
        pointer: pass.where.pointer,
      }),
      where,
    });
    return undefined;
  }
  const key = ctx.cache
    ? renderKey(
        pass.shader,
        ctx.cache.digests.digest(pass.shader),
        keyContext(context, ctx.cache.digests.contextReads(pass.shader)),
        // The form matters only to a template that reads it; otherwise it shows in the declarations
        // and in each binding's storage form and scalar: a packed f16 binding is declared
        // `array<u32>` as a u32 one is, but its helpers unpack (load_x returns f32, not u32).
        `${ctx.cache.digests.readsF16Storage(pass.shader) ? form : ""}\0${decls.text}\0${storageKey(decls)}`,
      )
    : undefined;
  let rendered: RenderedShader | RenderError | undefined = key !== undefined ? ctx.cache?.shaders.renders.get(key) : undefined;
  // A render kept by an earlier process (kernelc lint): its text, with the template line map
  // computed on demand from the declarations it was made with.
  const stored = !rendered && key !== undefined ? ctx.renders?.get(key) : undefined;
  if (stored) {
    rendered = ctx.renderer.restore(
      { templatesDir: ctx.templatesDir, shader: pass.shader, context, declarations: stored.declarations, wgsl: wgslMembers(decls, form) },
      stored.wgsl,
    );
    ctx.cache!.shaders.renders.set(key!, rendered);
  }
  if (rendered) ctx.cache!.shaders.stats.renderReused++;
  else {
    try {
      const made = renderWithDeclarations(
        ctx.renderer,
        ctx.templatesDir,
        pass.shader,
        context,
        decls,
        form,
        ctx.cache?.digests.printsDeclarationsAsIs(pass.shader) ?? false,
      );
      rendered = made.rendered;
      if (key !== undefined) ctx.renders?.set(key, made.rendered.wgsl, made.declarations);
    } catch (err) {
      if (!(err instanceof RenderError)) throw err;
      rendered = err;
    }
    if (ctx.cache && key !== undefined) {
      ctx.cache.shaders.stats.rendered++;
      ctx.cache.shaders.renders.set(key, rendered);
    }
  }
  if (rendered instanceof RenderError) {
    const err = rendered;
    ctx.reports.push({
      diagnostic: templateDiagnostic(
        err.limit ? "template_limit_exceeded" : "template_error",
        `template ${err.file} failed to render: ${err.message}`,
        ctx.templatesDir,
        err,
        { hint: err.hint },
      ),
      where,
    });
    return undefined;
  }
  return rendered;
}

/**
 * Validates every shader of the table with Tint (once per feature set) and against each profile's
 * workgroup limits, and warns about spec bindings the shader never declares or never uses. Each
 * problem is reported once per request that rendered the shader, so the merge names them all.
 */
export async function validateShaders(
  shaders: ReadonlyMap<string, ShaderRecord>,
  validator: WgslValidator | (() => Promise<WgslValidator>),
  templatesDir: string,
  reports: Report[],
  cache?: ShaderCache,
  store?: VerdictStore,
  factsStore?: WorkgroupFactsStore,
  comingFacts?: ReadonlyMap<string, Promise<WorkgroupFacts | undefined>>,
): Promise<void> {
  const validatorNow = typeof validator === "function" ? validator : () => Promise.resolve(validator);
  // The shaders' analyses, first, while Tint may still be busy on its threads: the workgroup facts
  // found by the validation threads when they were asked for (`comingFacts`, by shader id), the
  // identifier counts here.
  const analyses = new Map<string, ShaderAnalysis>();
  const waiting: [string, Map<string, number>][] = [];
  for (const [id, rec] of shaders) {
    if (!cache?.analyses.has(id) && comingFacts?.has(id)) waiting.push([id, identifierCounts(rec.body)]);
    else analyses.set(id, analyse(id, rec.body, cache, factsStore));
  }
  for (const [id, identifiers] of waiting) {
    const body = shaders.get(id)!.body;
    const found = await comingFacts!.get(id)!;
    if (!found) {
      analyses.set(id, analyse(id, body, cache, factsStore));
      continue;
    }
    factsStore?.set(body, found);
    const made = { facts: found, identifiers };
    cache?.analyses.set(id, made);
    analyses.set(id, made);
  }
  for (const [id, rec] of shaders) {
    const { kernel, pass } = rec.origin;
    const report = (diagnostic: Diagnostic, profiles?: ReadonlySet<string>): void => {
      for (const where of rec.occurrences) if (!profiles || profiles.has(where.profile ?? "")) reports.push({ diagnostic, where });
    };
    const bodyLines = rec.body.split("\n");
    const enabled = recordEnabledFeatures(rec);
    for (const [key, features] of rec.featureSets) {
      // A device feature matters to Tint only through the module's `enable` directives: validate
      // under the features the shader enables, so profiles that differ in others share the verdict.
      const relevant = features.filter((f) => enabled.has(f));
      const verdictKey = `${id}|${relevant.join(",")}`;
      let problems = cache?.verdicts.get(verdictKey);
      if (problems) cache!.stats.validationReused++;
      else {
        const stored = store?.get(rec.body, relevant);
        if (stored) {
          problems = stored;
          if (cache) cache.stats.storeReused++;
        } else {
          problems = await (await validatorNow()).validate(rec.body, relevant);
          store?.set(rec.body, relevant, problems);
          if (cache) cache.stats.validated++;
        }
        cache?.verdicts.set(verdictKey, problems);
      }
      const profiles = new Set([...rec.profiles.values()].filter((p) => [...p.features].sort().join(",") === key).map((p) => p.name));
      for (const pr of problems.filter((x) => x.severity === "error"))
        report(tintDiagnostic(pr, rec, bodyLines, templatesDir, features.includes("shader-f16")), profiles);
    }
    const analysis = analyses.get(id)!;
    const facts = analysis.facts;
    for (const profile of rec.profiles.values()) {
      // Problems about one WGSL line (the workgroup size's axes and its product) are one diagnostic.
      const byLine = new Map<number | undefined, LimitProblem[]>();
      for (const problem of checkWorkgroupLimits(facts, resolveProfile(profile)))
        byLine.set(problem.line, [...(byLine.get(problem.line) ?? []), problem]);
      for (const problems of byLine.values()) report(limitDiagnostic(problems, rec, templatesDir), new Set([profile.name]));
    }
    for (const d of bindingDiagnostics(kernel, pass, rec.body, analysis.identifiers)) report(d);
  }
}

/** A shader's workgroup facts and identifier counts, from the cache or the store when they have them. */
function analyse(id: string, body: string, cache?: ShaderCache, factsStore?: WorkgroupFactsStore): ShaderAnalysis {
  let analysis = cache?.analyses.get(id);
  if (!analysis) {
    let facts = factsStore?.get(body);
    if (!facts) {
      facts = workgroupFacts(body);
      factsStore?.set(body, facts);
    }
    analysis = { facts, identifiers: identifierCounts(body) };
    cache?.analyses.set(id, analysis);
  }
  return analysis;
}

const enabledOfRecord = new WeakMap<ShaderRecord, Set<string>>();

/** enabledFeatures of a shader record's body, found once per record. */
export function recordEnabledFeatures(rec: ShaderRecord): Set<string> {
  let enabled = enabledOfRecord.get(rec);
  if (!enabled) enabledOfRecord.set(rec, (enabled = enabledFeatures(rec.body)));
  return enabled;
}

/** The device features a WGSL module's `enable` directives ask for (`enable f16;` → shader-f16, `enable subgroups;` → subgroups). */
export function enabledFeatures(wgsl: string): Set<string> {
  const out = new Set<string>();
  for (const m of wgsl.matchAll(/^\s*enable\s+([^;]+);/gm)) {
    for (const ext of m[1]
      .split(",")
      .map((e) => e.trim())
      .filter(Boolean))
      out.add(ext === "f16" ? "shader-f16" : ext.replace(/_/g, "-"));
  }
  return out;
}

/** Tint's message without the candidate list of an overload error: its first paragraph, plus how many candidates Tint listed. */
export function trimTintMessage(message: string): string {
  const paragraphs = message.trim().split(/\n\s*\n/);
  const first = paragraphs[0]
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .join(" ");
  const candidates = /^(\d+) candidate (?:functions|conversions|operators)/m.exec(message);
  return candidates ? `${first} (none of Tint's ${candidates[1]} candidates takes these argument types)` : first;
}

/**
 * The template column of a 1-based WGSL column: the same when the template line wrote the WGSL
 * line as it stands or up to that column, counted from the end when the text after it is the
 * template's, and otherwise where the offending token appears once on the template line.
 */
function templateColumn(templateLine: string, wgslLine: string, column: number, length: number): number | undefined {
  if (column < 1) return undefined;
  const prefix = wgslLine.slice(0, column - 1);
  if (templateLine.startsWith(prefix)) return column;
  const tail = wgslLine.slice(column - 1);
  if (tail !== "" && templateLine.endsWith(tail)) return templateLine.length - tail.length + 1;
  const token = wgslLine.slice(column - 1, column - 1 + Math.max(1, length));
  const at = token.trim() === "" ? -1 : templateLine.indexOf(token);
  return at >= 0 && templateLine.indexOf(token, at + 1) < 0 ? at + 1 : undefined;
}

/** The text of a template line, or undefined when it cannot be read. */
function readTemplateLine(templatesDir: string, file: string, line: number): string | undefined {
  try {
    const map = new LineMap(readInputFile(path.join(templatesDir, file), MAX_INPUT_BYTES));
    return line >= 1 && line <= map.lineCount ? map.lineText(line) : undefined;
  } catch {
    return undefined;
  }
}

/** Tint's messages for f16 used where the shader cannot have it. */
const F16_PROBLEM = /'f16' type used without 'f16' extension enabled|extension 'f16' is not allowed/;

/** How to fix f16 used without the extension, on a profile with or without shader-f16. */
function f16Hint(profileHasF16: boolean): string {
  return profileHasF16
    ? '`enable f16;` is generated only when a binding of the pass is f16 or the variant requires shader-f16: add `"requires": { "features": ["shader-f16"] }` to the variant if its template computes in f16 without f16 bindings, or compute in f32'
    : 'without shader-f16, f16 bindings are stored as u32 pairs and computed in f32: read and write them through the generated helpers (load_NAME, store_NAME, …), compute in `env.wgsl.scalar.NAME` instead of naming f16, and do not write `enable f16;` (docs/f16.md); a variant that must compute in f16 can say so with `has(device.features, "shader-f16")` in its `when`';
}

/** The accessor helpers' prefixes (docs/f16.md, docs/templates.md#bool-tensors), longest first so that `store_raw2_x` is not `store_` of `raw2_x`. */
const HELPER_PREFIXES = ["store_raw2", "store_raw", "store4", "store2", "store", "raw2", "raw", "load4", "load2", "load", "len"];

/**
 * For Tint's "unresolved call target" of an accessor helper (`load_NAME`, `store2_NAME`, …): what
 * is wrong with NAME, as a hint; for its "unresolved value" of a binding of the pass, that the
 * template does not output the declarations. The helpers exist only for the storage bindings the pass binds, so
 * a typo in NAME or a binding the pass does not list shows up as an unknown function.
 */
function helperCallHint(message: string, origin: ShaderOrigin, body: string): string | undefined {
  // A binding of the pass that the shader never declares: the template left out the declarations.
  const value = /unresolved value '(\w+)'/.exec(message)?.[1];
  const declared = (name: string): boolean => new RegExp(`\\bvar<[^>]*>\\s+${name}\\s*:`).test(body);
  const undeclared = `the shader declares none of the pass's bindings: output \`{{ env.wgsl.resourceDeclarations }}\` at the top of ${origin.pass.shader}, after only your own \`enable\` directives`;
  if (value !== undefined) return origin.pass.bindings.some((b) => b.name === value) && !declared(value) ? undeclared : undefined;
  const called = /unresolved call target '(\w+)'/.exec(message)?.[1];
  if (called === undefined) return undefined;
  const prefix = HELPER_PREFIXES.find((p) => called.startsWith(`${p}_`) && called.length > p.length + 1);
  if (prefix === undefined) return undefined;
  const name = called.slice(prefix.length + 1);
  const { kernel, pass } = origin;
  const storage = pass.bindings.filter((b) => b.kind !== "uniform");
  const bound = storage.map((b) => `\`${b.name}\``).join(", ") || "none";
  if (storage.some((b) => b.name === name) && !declared(name)) return undeclared;
  if (storage.some((b) => b.name === name))
    return `binding \`${name}\` of pass \`${pass.id}\` has no helper \`${called}\`: store helpers exist only for read-write bindings, the 2- and 4-element ones only for scalar element types, \`raw_\` only for vector ones (docs/f16.md#the-accessor-helpers)`;
  const elsewhere = [...kernel.spec.bindings, ...kernel.variants.flatMap((v) => v.passes.flatMap((p) => p.bindings))].find(
    (b) => b.name === name && b.kind !== "uniform",
  );
  if (elsewhere)
    return `\`${called}\` is a helper of binding \`${name}\`, which pass \`${pass.id}\` does not bind: add \`"${elsewhere.id}"\` to the pass's \`bindings\` (its storage bindings: ${bound})`;
  const guess = didYouMean(
    called,
    storage.map((b) => `${prefix}_${b.name}`),
  );
  return `pass \`${pass.id}\` binds no storage binding named \`${name}\`, so there is no helper \`${called}\`${guess ? ` (${guess})` : ""}; helpers are named after the WGSL names of the pass's bindings: ${bound}`;
}

/** A Tint error as a diagnostic at the template line (and column) that wrote the offending WGSL. */
function tintDiagnostic(
  pr: WgslProblem,
  rec: ShaderRecord,
  bodyLines: readonly string[],
  templatesDir: string,
  profileHasF16: boolean,
): Diagnostic {
  const f16 = F16_PROBLEM.test(pr.message);
  const code = f16 ? "f16_unavailable" : "wgsl_invalid";
  const message = f16
    ? `the rendered WGSL uses f16, which it cannot have ${profileHasF16 ? "here" : "on a profile without shader-f16"}: ${trimTintMessage(pr.message)}`
    : `Tint rejects the rendered WGSL: ${trimTintMessage(pr.message)}`;
  const hint = f16
    ? f16Hint(profileHasF16)
    : (helperCallHint(pr.message, rec.origin, rec.body) ??
      "fix the template so that the WGSL it renders is valid; the note shows the generated line");
  if (pr.line <= 0) return templateDiagnostic(code, message, templatesDir, { file: rec.origin.pass.shader }, { hint });
  const pos = rec.rendered.mapPosition(pr.line, pr.column);
  const wgslLine = bodyLines[pr.line - 1] ?? "";
  const templateLine = pos.line ? readTemplateLine(templatesDir, pos.file, pos.line) : undefined;
  const column = templateLine !== undefined ? templateColumn(templateLine, wgslLine, pr.column, pr.length) : undefined;
  // Tint's whole range is underlined only where the template wrote that text as it stands.
  const token = wgslLine.slice(pr.column - 1, pr.column - 1 + pr.length);
  const length = column !== undefined && templateLine?.slice(column - 1, column - 1 + pr.length) === token ? pr.length : 1;
  const notes = [{ message: `generated WGSL line ${pr.line}, column ${pr.column}: ${wgslLine.trim()}` }];
  return templateDiagnostic(code, message, templatesDir, { file: pos.file, line: pos.line, column, length }, { hint, notes });
}

/** Workgroup limit problems of one WGSL line, at the template line of `@workgroup_size` (or of the largest var<workgroup>), with what to do about them. */
function limitDiagnostic(problems: readonly LimitProblem[], rec: ShaderRecord, templatesDir: string): Diagnostic {
  const { kernel, pass } = rec.origin;
  const line = problems[0].line;
  const pos = line ? rec.rendered.mapPosition(line) : { file: pass.shader, line: 0 };
  const variants = [...new Set(rec.occurrences.map((o) => o.variant ?? ""))].map((v) => `\`${v}\``).join(", ");
  const read = [...(pass.reads?.tunables ?? [])].sort();
  const limit = problems[problems.length - 1].limit;
  const hint =
    read.length > 0
      ? `guard variant ${variants} with a \`when\` condition such as \`tunables.${read[0]} <= device.limits.${limit}\`, so that on such profiles the next of the tunable's \`values\` is tried (give it smaller \`values\`), or pin a smaller value for the profile in kernelc.config.json (\`tunables.<profile>.${kernel.spec.name}.${read[0]}\`); the template reads tunable${read.length > 1 ? "s" : ""} ${read.join(", ")}`
      : `guard variant ${variants} with a \`when\` condition on \`device.limits.${limit}\`, so that it is pruned on such profiles, or size the workgroup from a tunable whose \`values\` offer a smaller fallback`;
  const notes = line ? [{ message: `generated WGSL line ${line}: ${(rec.body.split("\n")[line - 1] ?? "").trim()}` }] : [];
  return templateDiagnostic(
    "wgsl_limit_exceeded",
    `the rendered WGSL exceeds the profile's limits: ${problems.map((p) => p.message).join("; ")}`,
    templatesDir,
    { file: pos.file, line: pos.line },
    { hint, notes },
  );
}

/** Warnings for bindings of the pass that the rendered shader never declares, or declares and never uses. */
function bindingDiagnostics(kernel: CheckedKernel, pass: CheckedPass, body: string, counts: ReadonlyMap<string, number>): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const b of pass.bindings) {
    const declared = new RegExp(`\\bvar\\s*(<[^>]*>)?\\s*${b.name}\\s*:`).test(body);
    const loc = { file: kernel.spec.file, span: b.where.span, pointer: b.where.pointer };
    if (!declared) {
      out.push(
        makeDiagnostic(
          "binding_unused",
          `binding \`${b.name}\` of pass \`${pass.id}\` is never declared by the shader its template renders`,
          loc,
          { hint: `output \`{{ env.wgsl.resourceDeclarations }}\` in ${pass.shader}, or remove the binding from the pass` },
        ),
      );
    } else if ((counts.get(b.name) ?? 0) <= 1) {
      out.push(
        makeDiagnostic(
          "binding_unused",
          `binding \`${b.name}\` of pass \`${pass.id}\` is declared but never used by the shader its template renders (every call still binds a buffer to it)`,
          loc,
          { hint: `use \`${b.name}\` in ${pass.shader}, or remove the binding from the pass` },
        ),
      );
    }
  }
  return out;
}

/** What the accessor helpers of a pass's declarations depend on beyond their text: each storage binding's element type, storage form and scalar. */
function storageKey(decls: Declarations): string {
  return JSON.stringify([...decls.storage.values()].map((b) => [b.name, b.elementType, b.storage, b.scalar, b.access]));
}
