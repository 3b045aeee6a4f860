/**
 * `kernelc build` and `kernelc explain`: lint the specs, enumerate and prune per profile, render
 * and validate every shader, generate the dispatchers and manifests, and write out/ atomically
 * (a failed build leaves the previous out/ untouched). Output is byte-deterministic.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { deriveEnv, type CheckedBinding, type CheckedKernel } from "../check/check-spec.js";
import { makeDiagnostic } from "../diagnostics/codes.js";
import { hasErrors, sortDiagnostics, UserError, type Diagnostic } from "../diagnostics/diagnostic.js";
import { UNKNOWN } from "../eval/evaluate.js";
import { EvalError } from "../eval/ops.js";
import { lintPaths, makeCheckContext } from "../lint.js";
import { LineMap } from "../load/line-map.js";
import type { LoadedConfig } from "../plan/config.js";
import { pinnedTunables } from "../plan/config.js";
import type { AssignmentModel, KernelModel, PassModel, VariantModel } from "../plan/dispatch-model.js";
import { enumerateKernel, type KernelProfileBuild, type ShaderRequest } from "../plan/enumerate.js";
import { DeriveEnv, StaticLeaves, wgslScalar, type StaticFacts } from "../plan/env.js";
import { parseInstances } from "../plan/instances.js";
import { FEATURE_NAMES, requiredLimitsFor, resolveProfile, type Profile } from "../plan/profiles.js";
import type { PipelineDesc } from "../runtime/plan.js";
import { loadProjectConfig } from "../cli/commands.js";
import type { Format, Io } from "../cli/main.js";
import { printDiagnostics } from "../cli/main.js";
import { commentText, generateDispatcher } from "./dispatcher.js";
import { RenderError, TemplateRenderer } from "./render.js";
import { resourceDeclarations, type DeclBinding } from "./wgsl-declarations.js";
import { WgslValidator } from "./validate-wgsl.js";
import { checkWorkgroupLimits, workgroupFacts } from "./wgsl-limits.js";
import { explainReport, explainCallReport } from "./explain.js";

/** kernelc's version, stamped into generated files. */
export const KERNELC_VERSION = "0.1.0";

/** Everything one build produced, in memory. */
export interface BuildResult {
  /** Files under out/, by "/"-separated relative path, in sorted order. */
  readonly files: ReadonlyMap<string, string>;
  readonly diagnostics: readonly Diagnostic[];
  readonly profiles: readonly { readonly profile: Profile; readonly kernels: readonly { readonly build: KernelProfileBuild; readonly model: KernelModel }[] }[];
  readonly sources: ReadonlyMap<string, string>;
}

interface ShaderRecord {
  readonly body: string;
  readonly templates: Set<string>;
  readonly kernels: Set<string>;
}

function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Stable JSON: object keys sorted, two-space indent, trailing newline. */
export function stableJson(value: unknown): string {
  const norm = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(norm);
    if (v && typeof v === "object" && !(v instanceof Uint8Array)) {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) out[k] = norm((v as Record<string, unknown>)[k]);
      return out;
    }
    return v;
  };
  return JSON.stringify(norm(value), null, 2) + "\n";
}

/** A progress line on a TTY for builds longer than a second; silent in CI or when piped. */
class Progress {
  private readonly start = Date.now();
  private last = "";
  private shown = false;
  constructor(private readonly io: Io) {}
  update(text: string): void {
    if (!this.io.isTTY || this.io.env.CI === "true" || Date.now() - this.start < 1000) return;
    if (text === this.last) return;
    this.last = text;
    this.shown = true;
    this.io.stderr(`\r\x1b[K${text}`);
  }
  done(): void {
    if (this.shown) this.io.stderr("\r\x1b[K");
  }
}

/** Builds every configured profile in memory. */
export async function buildProject(root: string, loaded: LoadedConfig, profileNames: readonly string[] | undefined, io?: Io): Promise<BuildResult> {
  const config = loaded.config;
  const templatesDir = path.resolve(root, config.templates);
  const specsDir = path.resolve(root, config.specs);
  const lint = lintPaths([specsDir], makeCheckContext(templatesDir));
  const diagnostics: Diagnostic[] = [...lint.diagnostics];
  const sources = new Map(lint.sources);
  const empty: BuildResult = { files: new Map(), diagnostics, profiles: [], sources };
  if (hasErrors(diagnostics)) return empty;
  let profiles = loaded.profiles;
  if (profileNames && profileNames.length) {
    const unknown = profileNames.filter((n) => !loaded.allProfiles.some((p) => p.name === n));
    if (unknown.length) {
      diagnostics.push(makeDiagnostic("unknown_profile", `unknown profile${unknown.length > 1 ? "s" : ""} ${unknown.map((u) => `\`${u}\``).join(", ")}`, undefined, { hint: `known profiles: ${loaded.allProfiles.map((p) => p.name).join(", ")}` }));
      return empty;
    }
    profiles = loaded.allProfiles.filter((p) => profileNames.includes(p.name));
  }
  const kernels = [...lint.kernels].sort((a, b) => (a.spec.name < b.spec.name ? -1 : a.spec.name > b.spec.name ? 1 : 0));
  const instances = new Map(kernels.map((k) => [k.spec.name, parseInstances(k, config.instances[k.spec.name] ?? [], loaded.file, diagnostics)]));
  for (const name of Object.keys(config.instances)) {
    if (!kernels.some((k) => k.spec.name === name)) diagnostics.push(makeDiagnostic("instance_invalid", `the config lists instances for kernel \`${name}\`, which no spec defines`, loaded.file ? { file: loaded.file, pointer: `/instances/${name}` } : undefined));
  }
  if (hasErrors(diagnostics)) return empty;

  const renderer = new TemplateRenderer(templatesDir);
  const validator = await WgslValidator.create();
  const progress = io ? new Progress(io) : undefined;
  const shaders = new Map<string, ShaderRecord>();
  const validated = new Map<string, Promise<readonly string[]>>();
  const files = new Map<string, string>();
  const results: { profile: Profile; kernels: { build: KernelProfileBuild; model: KernelModel }[] }[] = [];
  try {
    for (const profile of profiles) {
      const limits = resolveProfile(profile);
      const features = new Set<string>(profile.features);
      const perKernel: { build: KernelProfileBuild; model: KernelModel }[] = [];
      for (const k of kernels) {
        progress?.update(`kernelc build: ${profile.name}: ${k.spec.name} (${shaders.size} shaders so far)`);
        // A kernel with no configured instance is built once with nothing pinned: enough when its
        // templates read only build-time values; otherwise it is a warning that nothing was built.
        const configured = instances.get(k.spec.name) ?? [];
        const implicit = configured.length === 0;
        const build = enumerateKernel(k, { name: profile.name, limits, features }, pinnedTunables(config, profile.name, k.spec.name), implicit ? [{ name: "(no instance)", values: new Map() }] : configured);
        if (implicit && build.problems.length) {
          diagnostics.push(makeDiagnostic("no_instances", `kernel ${k.spec.name} has templates that read per-model values, but kernelc.config.json lists no instances for it: no shader of those passes was built for profile ${profile.name}`, { file: k.spec.file, pointer: "/variants" }, { hint: `add instances under instances.${k.spec.name}; ${build.problems[0]}` }));
        }
        for (const p of implicit ? [] : build.problems) diagnostics.push(makeDiagnostic("instance_invalid", p, loaded.file ? { file: loaded.file, pointer: `/instances/${k.spec.name}` } : { file: k.spec.file }, { hint: "add the missing values to the instance in kernelc.config.json" }));
        if (build.noVariantReason) {
          diagnostics.push(makeDiagnostic("no_variant_for_profile", `kernel ${k.spec.name} has no variant on profile ${profile.name}: ${build.noVariantReason}`, { file: k.spec.file, pointer: "/variants" }, { hint: `calls of ${k.spec.name} on ${profile.name} devices will fail; see \`kernelc explain ${k.spec.name} --profile ${profile.name}\`` }));
        }
        const assignments: AssignmentModel[] = [];
        for (const a of build.assignments) {
          const variants: VariantModel[] = [];
          for (const vb of a.variants) {
            const passes: PassModel[] = [];
            for (const pb of vb.passes) {
              const table = new Map<string, string>();
              for (const req of pb.requests) {
                const id = await emitShader(k, a.facts, vb.variant.id, pb.pass.id, req, profile, renderer, templatesDir, shaders, validator, validated, diagnostics);
                if (id) table.set(JSON.stringify(req.key), id);
              }
              passes.push({ pass: pb.pass, keyLeaves: pb.keyLeaves, shaders: table, bindings: pb.pass.bindings });
            }
            variants.push({ variant: vb.variant, passes });
          }
          assignments.push({ facts: a.facts, variants });
        }
        const built = new Set(build.assignments.flatMap((a) => a.variants.map((v) => v.variant.id)));
        const model: KernelModel = {
          kernel: k,
          profile: profile.name,
          instancesHint: `add an instance with these values under instances.${k.spec.name} in kernelc.config.json and rebuild`,
          assignments,
          prunedVariants: k.variants.map((v) => v.id).filter((id) => !built.has(id)),
        };
        perKernel.push({ build, model });
      }
      results.push({ profile, kernels: perKernel });
    }
    // Wait for every validation before writing anything.
    await Promise.all(validated.values());
  } finally {
    validator.dispose();
    progress?.done();
  }
  if (hasErrors(diagnostics)) return { files: new Map(), diagnostics: sortDiagnostics(diagnostics), profiles: results, sources };

  // Files: shaders (shared across profiles), then per profile a manifest and a dispatcher.
  for (const [id, rec] of [...shaders.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const header = `// Generated by kernelc ${KERNELC_VERSION} from ${commentText([...rec.templates].sort().map((t) => `templates/${t}`).join(", "))} for ${commentText([...rec.kernels].sort().join(", "))}. Do not edit.\n`;
    files.set(`shaders/${id}.wgsl`, header + rec.body);
  }
  const index: { name: string; manifest: string }[] = [];
  for (const r of results) {
    const specFiles = r.kernels.map((k) => path.relative(root, k.model.kernel.spec.file).split(path.sep).join("/"));
    const header = `// Generated by kernelc ${KERNELC_VERSION} from ${commentText(specFiles.join(", "))} for profile ${commentText(r.profile.name)}. Do not edit.\n// Regenerate with \`npx kernelc build\`.\n/* eslint-disable */`;
    files.set(`${r.profile.name}/dispatcher.ts`, generateDispatcher(r.kernels.map((k) => k.model), header, r.profile.name));
    files.set(`${r.profile.name}/manifest.json`, stableJson(manifestFor(r.profile, r.kernels.map((k) => k.model), specFiles)));
    index.push({ name: r.profile.name, manifest: `${r.profile.name}/manifest.json` });
  }
  files.set("profiles.json", stableJson({ generatedBy: `kernelc ${KERNELC_VERSION}`, note: "Profiles in run-time selection order: take the first whose limits and features the adapter has.", profiles: index }));
  const sorted = new Map([...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { files: sorted, diagnostics: sortDiagnostics(diagnostics), profiles: results, sources };
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

async function emitShader(
  k: CheckedKernel,
  facts: StaticFacts,
  variantId: string,
  passId: string,
  req: ShaderRequest,
  profile: Profile,
  renderer: TemplateRenderer,
  templatesDir: string,
  shaders: Map<string, ShaderRecord>,
  validator: WgslValidator,
  validated: Map<string, Promise<readonly string[]>>,
  diagnostics: Diagnostic[],
): Promise<string | undefined> {
  const v = k.variants.find((x) => x.id === variantId)!;
  const pass = v.passes.find((p) => p.id === passId)!;
  const where = `variant \`${variantId}\`, pass \`${passId}\`, instance${req.instances.length > 1 ? "s" : ""} ${req.instances.join(", ")}, profile ${profile.name}`;
  const env = new DeriveEnv(deriveEnv(k, v, pass), new StaticLeaves(facts, req.pinned));
  const context: Record<string, unknown> = Object.create(null);
  const names = deriveEnv(k, v, pass);
  try {
    for (const name of [...(pass.reads?.names ?? [])].sort()) {
      if (!names.has(name)) continue;
      const value = env.derive(name);
      if (value === UNKNOWN) throw new EvalError(`\`${name}\` is not known at build time for this instance`);
      context[name] = value;
    }
  } catch (err) {
    if (!(err instanceof EvalError)) throw err;
    diagnostics.push(makeDiagnostic("eval_error", `template ${pass.shader} reads a value that cannot be computed (${where}): ${err.message}`, { file: k.spec.file, span: pass.where.span, pointer: pass.where.pointer }));
    return undefined;
  }
  context.tunables = { ...facts.tunables };
  context.dtypes = Object.fromEntries(Object.entries(facts.dtypes).map(([p, t]) => [p, wgslScalar(t)]));
  context.device = deviceContext(profile);
  let decls: string;
  try {
    decls = resourceDeclarations(declBindings(pass.bindings, env), v.features.includes("shader-f16"));
  } catch (err) {
    diagnostics.push(makeDiagnostic("eval_error", `cannot declare the bindings of ${where}: ${(err as Error).message}`, { file: k.spec.file, span: pass.where.span, pointer: pass.where.pointer }));
    return undefined;
  }
  let rendered;
  try {
    rendered = renderer.render({ templatesDir, shader: pass.shader, context, declarations: decls });
  } catch (err) {
    if (!(err instanceof RenderError)) throw err;
    diagnostics.push(templateDiagnostic("template_error", `template ${err.file} failed to render (${where}): ${err.message}`, templatesDir, err.file, err.line, err.column));
    return undefined;
  }
  const body = rendered.wgsl;
  const id = sha(body).slice(0, 16);
  const rec = shaders.get(id) ?? { body, templates: new Set<string>(), kernels: new Set<string>() };
  rec.templates.add(pass.shader);
  // Templates it includes are sources too (all are named, also one a branch of the template did not use).
  for (const inc of pass.reads?.includes ?? []) rec.templates.add(inc);
  rec.kernels.add(k.spec.name);
  shaders.set(id, rec);
  // Tint, once per distinct shader and feature set: a device for this profile has all its
  // features, and the template may use any of them (it can read them as device.features).
  const features = [...profile.features].sort();
  const vkey = `${id}|${features.join(",")}`;
  if (!validated.has(vkey)) {
    const p = validator.validate(body, features).then((problems) => {
      for (const pr of problems.filter((x) => x.severity === "error")) {
        const pos = pr.line > 0 ? rendered.mapPosition(pr.line, pr.column) : { file: pass.shader, line: 0 };
        const wgslLine = pr.line > 0 ? body.split("\n")[pr.line - 1] ?? "" : "";
        diagnostics.push(
          templateDiagnostic("wgsl_invalid", `Tint rejects the WGSL rendered for ${where}: ${pr.message}`, templatesDir, pos.file, pos.line || undefined, undefined, [
            ...(pr.line > 0 ? [{ message: `generated WGSL line ${pr.line}: ${wgslLine.trim()}` }] : []),
          ]),
        );
      }
      return problems.map((x) => x.message);
    });
    validated.set(vkey, p);
    await p;
  }
  for (const problem of checkWorkgroupLimits(workgroupFacts(body), resolveProfile(profile))) {
    diagnostics.push(templateDiagnostic("wgsl_limit_exceeded", `the WGSL rendered for ${where} exceeds profile ${profile.name}: ${problem}`, templatesDir, pass.shader, undefined, undefined, []));
  }
  return id;
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

function templateDiagnostic(code: "template_error" | "wgsl_invalid" | "wgsl_limit_exceeded", message: string, templatesDir: string, file: string, line?: number, column?: number, notes: { message: string }[] = []): Diagnostic {
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
  return makeDiagnostic(code, message, { file: full, span }, { notes });
}

function manifestFor(profile: Profile, models: readonly KernelModel[], specFiles: readonly string[]): unknown {
  const shaders: Record<string, string> = {};
  const pipelines = new Map<string, PipelineDesc>();
  const kernels: Record<string, unknown> = {};
  for (const m of models) {
    const variants: unknown[] = [];
    for (const a of m.assignments) {
      for (const vm of a.variants) {
        variants.push({
          id: vm.variant.id,
          dtypes: a.facts.dtypes,
          tunables: a.facts.tunables,
          requiredFeatures: vm.variant.features,
          passes: vm.passes.map((pm) => {
            for (const id of pm.shaders.values()) {
              shaders[id] = `../shaders/${id}.wgsl`;
              const types = pm.bindings.map((b) => b.buffer);
              pipelines.set(`${id}|main|${types.join(",")}`, { shader: id, entryPoint: "main", bindings: types });
            }
            return { id: pm.pass.id, name: pm.pass.name, template: pm.pass.shader, key: pm.keyLeaves.map((l) => l.key), shaders: Object.fromEntries([...pm.shaders.entries()].sort(([x], [y]) => (x < y ? -1 : 1))) };
          }),
        });
      }
    }
    kernels[m.kernel.spec.name] = { domain: m.kernel.spec.domain, sinceVersion: m.kernel.spec.sinceVersion, variants, notBuilt: m.prunedVariants };
  }
  return {
    generatedBy: `kernelc ${KERNELC_VERSION} from ${specFiles.join(", ")}; do not edit`,
    profile: profile.name,
    requiredLimits: requiredLimitsFor(profile),
    requiredFeatures: [...profile.features].sort(),
    shaders,
    pipelines: [...pipelines.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, p]) => p),
    kernels,
  };
}

/** Reads every file under `dir` as "/"-separated relative paths. */
function readTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(p, r);
      else if (e.isFile()) out.set(r, fs.readFileSync(p, "utf8"));
    }
  };
  if (fs.existsSync(dir)) walk(dir, "");
  return out;
}

/** Writes `files` as the new contents of `outDir`, atomically: a temporary folder swapped in by rename. */
export function writeTreeAtomic(outDir: string, files: ReadonlyMap<string, string>): void {
  const parent = path.dirname(outDir);
  fs.mkdirSync(parent, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(parent, `.${path.basename(outDir)}.tmp-`));
  try {
    for (const [rel, text] of files) {
      const p = path.join(tmp, ...rel.split("/"));
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, text);
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  const old = fs.existsSync(outDir) ? `${tmp}.old` : undefined;
  if (old) fs.renameSync(outDir, old);
  try {
    fs.renameSync(tmp, outDir);
  } catch (err) {
    if (old) fs.renameSync(old, outDir);
    throw err;
  }
  if (old) fs.rmSync(old, { recursive: true, force: true });
}

/** Every file under `dir` (recursively), sorted, as "/"-separated relative paths. */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else if (e.isFile()) out.push(r);
    }
  };
  walk(dir, "");
  return out.sort();
}

let compilerHash: string | undefined;

/** A hash of kernelc's own compiled code, so a changed compiler never counts as a no-op build. */
function compilerCodeHash(): string {
  if (compilerHash === undefined) {
    const h = createHash("sha256");
    const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
    for (const rel of listFiles(dir)) if (/\.(js|ts|json)$/.test(rel) && !rel.endsWith(".map")) h.update(`${rel}\0`).update(fs.readFileSync(path.join(dir, rel))).update("\0");
    compilerHash = h.digest("hex");
  }
  return compilerHash;
}

/** A hash of everything a build reads: kernelc's code and version, the config, the specs, the templates and the profiles asked for. */
export function inputsHash(root: string, loaded: LoadedConfig, profiles: readonly string[] | undefined): string {
  const h = createHash("sha256");
  h.update(`kernelc ${KERNELC_VERSION} ${compilerCodeHash()}\0${JSON.stringify(loaded.config)}\0${JSON.stringify(loaded.allProfiles)}\0${JSON.stringify(profiles ?? null)}\0`);
  for (const dir of [loaded.config.specs, loaded.config.templates]) {
    const abs = path.resolve(root, dir);
    for (const rel of listFiles(abs)) h.update(`${dir}/${rel}\0`).update(fs.readFileSync(path.join(abs, rel))).update("\0");
  }
  return h.digest("hex");
}

const BUILD_INFO = "build-info.json";

/** Whether out/ holds exactly the build of these inputs (its build-info matches and no file was changed). */
function upToDate(outDir: string, hash: string): boolean {
  let info: { inputs?: string; files?: Record<string, string> };
  try {
    info = JSON.parse(fs.readFileSync(path.join(outDir, BUILD_INFO), "utf8"));
  } catch {
    return false;
  }
  if (info.inputs !== hash || !info.files) return false;
  const present = listFiles(outDir).filter((f) => f !== BUILD_INFO);
  if (present.length !== Object.keys(info.files).length) return false;
  for (const rel of present) {
    const want = Object.prototype.hasOwnProperty.call(info.files, rel) ? info.files[rel] : undefined;
    if (want === undefined || sha(fs.readFileSync(path.join(outDir, rel), "utf8")) !== want) return false;
  }
  return true;
}

/** Adds build-info.json: the inputs' hash and every file's hash, so a later build can tell nothing changed. */
function withBuildInfo(files: ReadonlyMap<string, string>, hash: string): Map<string, string> {
  const hashes: Record<string, string> = {};
  for (const [rel, text] of files) hashes[rel] = sha(text);
  const out = new Map(files);
  out.set(BUILD_INFO, stableJson({ generatedBy: `kernelc ${KERNELC_VERSION}; do not edit`, inputs: hash, files: hashes }));
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** `kernelc build`. */
export async function runBuild(io: Io, opts: { config?: string; profile?: string[]; out?: string; check?: boolean; force?: boolean; format: Format }): Promise<number> {
  const loaded = loadProjectConfig(io, opts.config);
  const root = opts.config ? path.dirname(path.resolve(io.cwd, opts.config)) : io.cwd;
  const outDir = path.resolve(root, opts.out ?? loaded.config.out);
  const hash = inputsHash(root, loaded, opts.profile);
  if (!opts.check && !opts.force && upToDate(outDir, hash)) {
    if (opts.format === "text") io.stderr(`${path.relative(io.cwd, outDir) || outDir}/ is up to date (inputs unchanged; --force rebuilds)\n`);
    return 0;
  }
  const built = await buildProject(root, loaded, opts.profile, io);
  const result = hasErrors(built.diagnostics) ? built : { ...built, files: withBuildInfo(built.files, hash) };
  const sources = (f: string): string | undefined => result.sources.get(f) ?? (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : undefined);
  printDiagnostics(io, result.diagnostics, opts.format, sources);
  if (hasErrors(result.diagnostics)) {
    if (opts.format === "text") io.stderr(`build failed; ${path.relative(io.cwd, outDir) || "."}/ was left as it was\n`);
    return 1;
  }
  const shaderCount = [...result.files.keys()].filter((f) => f.startsWith("shaders/")).length;
  if (opts.check) {
    const current = readTree(outDir);
    const stale: string[] = [];
    for (const [rel, text] of result.files) if (current.get(rel) !== text) stale.push(rel);
    for (const rel of current.keys()) if (!result.files.has(rel)) stale.push(rel);
    if (stale.length) {
      printDiagnostics(io, [makeDiagnostic("out_stale", `${path.relative(io.cwd, outDir) || outDir}/ is out of date: ${stale.length} file${stale.length > 1 ? "s differ" : " differs"} from a fresh build (${stale.slice(0, 5).join(", ")}${stale.length > 5 ? ", …" : ""})`, { file: outDir }, { hint: "run `npx kernelc build` and commit the result" })], opts.format, sources);
      return 1;
    }
    if (opts.format === "text") io.stderr(`${path.relative(io.cwd, outDir) || outDir}/ is up to date (${result.profiles.length} profiles, ${shaderCount} shaders)\n`);
    return 0;
  }
  const current = readTree(outDir);
  const same = current.size === result.files.size && [...result.files].every(([rel, text]) => current.get(rel) === text);
  if (!same) writeTreeAtomic(outDir, result.files);
  if (opts.format === "text") io.stderr(`${same ? "unchanged" : "wrote"} ${path.relative(io.cwd, outDir) || outDir}/: ${result.profiles.length} profiles, ${shaderCount} shaders\n`);
  return 0;
}

/** `kernelc explain`. */
export async function runExplain(io: Io, kernelName: string, opts: { profile: string; call?: string; config?: string; format: Format }): Promise<number> {
  const loaded = loadProjectConfig(io, opts.config);
  const root = opts.config ? path.dirname(path.resolve(io.cwd, opts.config)) : io.cwd;
  if (!loaded.allProfiles.some((p) => p.name === opts.profile)) {
    throw new UserError([makeDiagnostic("unknown_profile", `unknown profile \`${opts.profile}\``, undefined, { hint: `known profiles: ${loaded.allProfiles.map((p) => p.name).join(", ")}` })]);
  }
  const result = await buildProject(root, loaded, [opts.profile], undefined);
  const errors = result.diagnostics.filter((d) => d.severity === "error");
  if (errors.length) {
    printDiagnostics(io, errors, opts.format, (f) => result.sources.get(f));
    return 1;
  }
  const entry = result.profiles[0]?.kernels.find((k) => k.model.kernel.spec.name === kernelName);
  if (!entry) {
    const names = result.profiles[0]?.kernels.map((k) => k.model.kernel.spec.name) ?? [];
    throw new UserError([makeDiagnostic("usage", `no kernel named \`${kernelName}\``, undefined, { hint: `kernels: ${names.join(", ")}` })]);
  }
  let call: unknown;
  if (opts.call) {
    try {
      call = JSON.parse(fs.readFileSync(path.resolve(io.cwd, opts.call), "utf8"));
    } catch (err) {
      throw new UserError([makeDiagnostic("file_unreadable", `cannot read the call file: ${(err as Error).message}`, { file: path.resolve(io.cwd, opts.call) }, { hint: 'a call is JSON: {"inputs": {"queryT": {"shape": [4, 4096], "dtype": "float16"}, …}, "outputs": {…}, "attrs": {…}}' })]);
    }
  }
  const profile = result.profiles[0].profile;
  if (opts.format === "json") {
    io.stdout(stableJson({ candidates: entry.build.candidates, call: call ? explainCallReport(entry.model, call, "json") : undefined }));
    return 0;
  }
  io.stdout(explainReport(entry.build, profile));
  if (call) io.stdout("\n" + (explainCallReport(entry.model, call, "text") as string));
  return 0;
}

