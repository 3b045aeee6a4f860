/**
 * One shader: a pass of a variant rendered for one specialization key on one profile. Rendering
 * computes the values the template reads, declares the bindings, renders through Nunjucks, and
 * records the result in a table deduplicated by content hash; validation runs Tint once per
 * distinct shader and feature set and checks the workgroup against the profile's limits.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { deriveEnv } from "../check/check-spec.js";
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import { sha256Hex } from "../core/hash.js";
import { LineMap } from "../core/line-map.js";
import { UNKNOWN } from "../lang/evaluate.js";
import { EvalError } from "../lang/ops.js";
import type { CheckedBinding, CheckedKernel, CheckedPass } from "../model/checked.js";
import type { ShaderRequest } from "../plan/enumerate.js";
import { DeriveEnv, StaticLeaves, wgslScalar, type StaticFacts } from "../plan/env.js";
import { f16StorageFor, type F16Storage } from "../plan/f16-storage.js";
import { FEATURE_NAMES, resolveProfile, type Profile } from "../plan/profiles.js";
import { RenderError, type Rendered as RenderedShader, type TemplateRenderer } from "./render.js";
import type { WgslValidator } from "./validate-wgsl.js";
import { declareResources, type Declarations, type DeclBinding } from "./wgsl-declarations.js";
import { checkWorkgroupLimits, workgroupFacts } from "./wgsl-limits.js";

/** A distinct shader body and what it was rendered from. */
export interface ShaderRecord {
  readonly body: string;
  readonly templates: Set<string>;
  readonly kernels: Set<string>;
  /** How to map a line of the body back to a template line. */
  readonly rendered: RenderedShader;
  /** Where the first request that rendered it came from (for diagnostics). */
  readonly origin: ShaderOrigin;
  /** The feature sets it must validate under. */
  readonly featureSets: Map<string, readonly string[]>;
  /** The profiles it was rendered for, with their limits. */
  readonly profiles: Map<string, Profile>;
}

/** Where a rendered shader came from: the kernel, variant, pass and instances. */
export interface ShaderOrigin {
  readonly kernel: CheckedKernel;
  readonly pass: CheckedPass;
  readonly where: string;
}

/** What rendering needs beyond the request: the renderer, the templates folder, the shared table and the diagnostics sink. */
export interface RenderContext {
  readonly renderer: TemplateRenderer;
  readonly templatesDir: string;
  readonly shaders: Map<string, ShaderRecord>;
  readonly diagnostics: Diagnostic[];
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

function declBindings(bindings: readonly CheckedBinding[], env: DeriveEnv): DeclBinding[] {
  return bindings.map((b, i) => {
    let elementType: string | undefined;
    if (b.elementType) {
      if ("literal" in b.elementType) elementType = b.elementType.literal;
      else {
        const v = env.derive(b.elementType.derive);
        if (typeof v !== "string") throw new EvalError(`element type \`$${b.elementType.derive}\` of binding \`${b.name}\` is ${v === UNKNOWN ? "not known at build time" : String(v)}`);
        elementType = v;
      }
    }
    return { binding: i, name: b.name, type: b.buffer, elementType, fields: b.fields?.map((f) => ({ name: f.name, type: f.type })) };
  });
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

/** A diagnostic located at a template line (and column) when known. */
export function templateDiagnostic(code: "template_error" | "wgsl_invalid" | "wgsl_limit_exceeded" | "f16_unavailable", message: string, templatesDir: string, file: string, line?: number, column?: number, notes: { message: string }[] = [], hint?: string): Diagnostic {
  const full = path.join(templatesDir, file);
  let span: { start: number; end: number } | undefined;
  if (line) {
    try {
      const map = new LineMap(fs.readFileSync(full, "utf8"));
      const start = map.lineStart(line) + Math.max(0, (column ?? 1) - 1);
      span = { start, end: column ? start + 1 : map.lineEnd(line) };
    } catch {
      span = undefined;
    }
  }
  return makeDiagnostic(code, message, { file: full, span }, { notes, hint });
}

/** The helpers a rendered body calls (a name followed by `(`), by name. */
function helpersCalled(body: string, helpers: ReadonlyMap<string, string>): Set<string> {
  const used = new Set<string>();
  for (const m of body.matchAll(/\b([A-Za-z_][A-Za-z0-9_]*)\s*\(/g)) if (helpers.has(m[1])) used.add(m[1]);
  return used;
}

/**
 * Renders a template with its pass's declarations: `env.wgsl.resourceDeclarations` and the f16
 * storage of each binding (`env.wgsl.f16Storage`, `.storage`, `.scalar`). Rendered without the
 * accessor helpers first; the helpers the body calls are then declared and the template rendered
 * again, so a shader carries only the helpers it uses. Throws RenderError.
 */
export function renderWithDeclarations(renderer: TemplateRenderer, templatesDir: string, shader: string, context: Readonly<Record<string, unknown>>, decls: Declarations, form: F16Storage): RenderedShader {
  const wgsl = {
    f16Storage: form,
    storage: Object.fromEntries([...decls.storage.values()].map((b) => [b.name, b.storage])),
    scalar: Object.fromEntries([...decls.storage.values()].map((b) => [b.name, b.scalar])),
  };
  const rendered = renderer.render({ templatesDir, shader, context, declarations: decls.text, wgsl });
  const used = helpersCalled(rendered.wgsl, decls.helpers);
  return used.size === 0 ? rendered : renderer.render({ templatesDir, shader, context, declarations: decls.withHelpers(used), wgsl });
}

/** Renders one pass for one key; returns the shader's id (its content hash) or undefined after reporting why not. */
export function renderShader(req: PassRequest, ctx: RenderContext): string | undefined {
  const k = req.kernel;
  const v = k.variants.find((x) => x.id === req.variantId)!;
  const pass = v.passes.find((p) => p.id === req.passId)!;
  const r = req.request;
  const where = `variant \`${req.variantId}\`, pass \`${req.passId}\`, instance${r.instances.length > 1 ? "s" : ""} ${r.instances.join(", ")}, profile ${req.profile.name}`;
  const names = deriveEnv(k, v, pass);
  const env = new DeriveEnv(names, new StaticLeaves(req.facts, r.pinned));
  const context: Record<string, unknown> = Object.create(null);
  try {
    for (const name of [...(pass.reads?.names ?? [])].sort()) {
      if (!names.has(name)) continue;
      const value = env.derive(name);
      if (value === UNKNOWN) throw new EvalError(`\`${name}\` is not known at build time for this instance`);
      context[name] = value;
    }
  } catch (err) {
    if (!(err instanceof EvalError)) throw err;
    ctx.diagnostics.push(makeDiagnostic("eval_error", `template ${pass.shader} reads a value that cannot be computed (${where}): ${err.message}`, { file: k.spec.file, span: pass.where.span, pointer: pass.where.pointer }));
    return undefined;
  }
  context.tunables = { ...req.facts.tunables };
  context.dtypes = Object.fromEntries(Object.entries(req.facts.dtypes).map(([p, t]) => [p, wgslScalar(t)]));
  context.device = deviceContext(req.profile);
  const form = f16StorageFor(req.profile.features);
  let decls: Declarations;
  try {
    decls = declareResources(declBindings(pass.bindings, env), form, { enableF16: v.features.includes("shader-f16") });
  } catch (err) {
    ctx.diagnostics.push(makeDiagnostic("eval_error", `cannot declare the bindings of ${where}: ${(err as Error).message}`, { file: k.spec.file, span: pass.where.span, pointer: pass.where.pointer }));
    return undefined;
  }
  let rendered: RenderedShader;
  try {
    rendered = renderWithDeclarations(ctx.renderer, ctx.templatesDir, pass.shader, context, decls, form);
  } catch (err) {
    if (!(err instanceof RenderError)) throw err;
    ctx.diagnostics.push(templateDiagnostic("template_error", `template ${err.file} failed to render (${where}): ${err.message}`, ctx.templatesDir, err.file, err.line, err.column));
    return undefined;
  }
  const body = rendered.wgsl;
  const id = sha256Hex(body).slice(0, 16);
  const rec = ctx.shaders.get(id) ?? { body, templates: new Set<string>(), kernels: new Set<string>(), rendered, origin: { kernel: k, pass, where }, featureSets: new Map(), profiles: new Map() };
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
  return id;
}

/** Tint's messages for f16 used where the shader cannot have it. */
const F16_PROBLEM = /'f16' type used without 'f16' extension enabled|extension 'f16' is not allowed/;

/** How to fix f16 used without the extension, on a profile with or without shader-f16. */
function f16Hint(profileHasF16: boolean): string {
  return profileHasF16
    ? "`enable f16;` is generated only when a binding of the pass is f16 or the variant requires shader-f16: add `\"requires\": { \"features\": [\"shader-f16\"] }` to the variant if its template computes in f16 without f16 bindings, or compute in f32"
    : "without shader-f16, f16 bindings are stored as u32 pairs and computed in f32: read and write them through the generated helpers (load_NAME, store_NAME, …), compute in `env.wgsl.scalar.NAME` instead of naming f16, and do not write `enable f16;` (docs/f16.md); a variant that must compute in f16 can say so with `has(device.features, \"shader-f16\")` in its `when`";
}

/** Validates every shader of the table with Tint (once per feature set) and against each profile's workgroup limits. */
export async function validateShaders(shaders: ReadonlyMap<string, ShaderRecord>, validator: WgslValidator, templatesDir: string, diagnostics: Diagnostic[]): Promise<void> {
  for (const rec of shaders.values()) {
    const { pass, where } = rec.origin;
    for (const features of rec.featureSets.values()) {
      const problems = await validator.validate(rec.body, features);
      for (const pr of problems.filter((x) => x.severity === "error")) {
        const pos = pr.line > 0 ? rec.rendered.mapPosition(pr.line, pr.column) : { file: pass.shader, line: 0 };
        const wgslLine = pr.line > 0 ? (rec.body.split("\n")[pr.line - 1] ?? "") : "";
        const notes = pr.line > 0 ? [{ message: `generated WGSL line ${pr.line}: ${wgslLine.trim()}` }] : [];
        const f16 = F16_PROBLEM.test(pr.message);
        const profiles = [...rec.profiles.values()].filter((p) => [...p.features].sort().join(",") === features.join(",")).map((p) => p.name);
        diagnostics.push(
          f16
            ? templateDiagnostic("f16_unavailable", `the WGSL rendered for ${where} uses f16, which it cannot have on profile${profiles.length > 1 ? "s" : ""} ${profiles.join(", ")}: ${pr.message}`, templatesDir, pos.file, pos.line || undefined, undefined, notes, f16Hint(features.includes("shader-f16")))
            : templateDiagnostic("wgsl_invalid", `Tint rejects the WGSL rendered for ${where}: ${pr.message}`, templatesDir, pos.file, pos.line || undefined, undefined, notes),
        );
      }
    }
    for (const profile of rec.profiles.values()) {
      for (const problem of checkWorkgroupLimits(workgroupFacts(rec.body), resolveProfile(profile))) {
        diagnostics.push(templateDiagnostic("wgsl_limit_exceeded", `the WGSL rendered for ${where} exceeds profile ${profile.name}: ${problem}`, templatesDir, pass.shader, undefined, undefined, []));
      }
    }
  }
}
