/**
 * What a compilation may reuse from an earlier one (`kernelc watch`): rendered shaders by what they
 * were rendered from, and Tint's verdicts by shader content. A render is reused only when the
 * template, every template it includes or imports, the render context and the declarations are
 * all unchanged, so a template edit re-renders only the shaders whose templates include it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { sha256Hex } from "../core/hash.js";
import type { Report } from "../core/dedupe.js";
import { walkFiles } from "../core/walk.js";
import type { KernelProfileBuild } from "../plan/enumerate.js";
import { declarationPrints } from "./declarations-print.js";
import type { ReusableDispatcher } from "./dispatcher-reuse.js";
import { readTemplateIfLoadable, type Rendered, type RenderError, type TemplateRenderer } from "./render.js";
import type { WgslProblem } from "./validate-wgsl.js";
import type { WorkgroupFacts } from "./wgsl-limits.js";

/** What the static checks read from one shader's text: its workgroup facts and how often each identifier occurs. */
export interface ShaderAnalysis {
  readonly facts: WorkgroupFacts;
  readonly identifiers: ReadonlyMap<string, number>;
}

/** Results kept across compilations; create one with createShaderCache() and pass it to each compile. */
export interface ShaderCache {
  /** Render results (or the render's error) by renderKey(). */
  readonly renders: Map<string, Rendered | RenderError>;
  /** Tint's problems by shader id (its content hash) and feature set. */
  readonly verdicts: Map<string, readonly WgslProblem[]>;
  /** What the static checks read from a shader's text, by shader id. */
  readonly analyses: Map<string, ShaderAnalysis>;
  /** The template renderer of each templates folder, its parsed templates kept (refreshed by each compilation). */
  readonly renderers: Map<string, TemplateRenderer>;
  /** The render of each shader request of a reused enumeration, with the profile and template closure it was made for. */
  readonly requestRenders: WeakMap<object, { readonly key: string; readonly rendered: Rendered }>;
  /** The shader id (content hash) of each render kept here. */
  readonly renderIds: WeakMap<Rendered, string>;
  /** Enumerations of a kernel on a profile, with the reports they made, by what they are computed from (see compile()). */
  readonly enumerations: Map<string, { readonly build: KernelProfileBuild; readonly reports: readonly Report[] }>;
  /** Each profile's dispatcher with placeholders for shader ids, and what it was generated from (see dispatcher-reuse.ts). */
  readonly dispatchers: Map<string, ReusableDispatcher>;
  /**
   * How many renders and validations the last compilation did and reused (for tests and
   * benchmarks); `storeReused`: verdicts taken from the VerdictStore (kept by an earlier process).
   */
  readonly stats: { rendered: number; renderReused: number; validated: number; validationReused: number; storeReused: number };
}

/**
 * Tint's verdicts kept between processes (kernelc lint, build and watch keep them under
 * .kernelc-cache/): by the exact text of a shader and the feature set it was validated under, for
 * one validator (the webgpu package's version and kernelc's validation code). A verdict is taken
 * only for the very text it was found for, so it can never stand for another shader.
 */
export interface VerdictStore {
  /** Whether the store holds verdicts (a compilation then starts Tint only when a shader has none). */
  readonly size: number;
  /** Tint's problems in `wgsl` under `features`, when known. */
  get(wgsl: string, features: readonly string[]): readonly WgslProblem[] | undefined;
  /** Records Tint's problems in `wgsl` under `features`. */
  set(wgsl: string, features: readonly string[], problems: readonly WgslProblem[]): void;
}

/**
 * Renders kept between processes (kernelc lint keeps them under .kernelc-cache/): the shader text a
 * render key (renderKey: the template closure's digest, the render context and the declarations)
 * made, with the declarations text it was rendered with (the accessor helpers it calls included),
 * for one renderer (kernelc's code and nunjucks' version). A render that failed is not kept.
 */
export interface RenderStore {
  /** The shader rendered for `key`, when known. */
  get(key: string): { readonly wgsl: string; readonly declarations: string } | undefined;
  /** Records the shader rendered for `key`. */
  set(key: string, wgsl: string, declarations: string): void;
}

/**
 * The workgroup facts of shader texts (wgsl-limits.ts) kept between processes (kernelc lint keeps
 * them under .kernelc-cache/), by the exact text.
 */
export interface WorkgroupFactsStore {
  get(wgsl: string): WorkgroupFacts | undefined;
  set(wgsl: string, facts: WorkgroupFacts): void;
}

/** An empty cache. */
export function createShaderCache(): ShaderCache {
  return {
    renders: new Map(),
    verdicts: new Map(),
    analyses: new Map(),
    renderers: new Map(),
    enumerations: new Map(),
    dispatchers: new Map(),
    requestRenders: new WeakMap(),
    renderIds: new WeakMap(),
    stats: { rendered: 0, renderReused: 0, validated: 0, validationReused: 0, storeReused: 0 },
  };
}

/** Literal template names of include/import/from/extends tags; `dynamic` when a tag names its template by an expression. */
function includedNames(text: string): { names: string[]; dynamic: boolean } {
  const names: string[] = [];
  let dynamic = false;
  for (const m of text.matchAll(/\{%-?\s*(?:include|import|from|extends)\s+(?:"([^"]*)"|'([^']*)'|(\S))/g)) {
    if (m[3] !== undefined) dynamic = true;
    else names.push(m[1] ?? m[2]);
  }
  return { names, dynamic };
}

/**
 * Digests of template closures for one compilation (templates are read once per compilation):
 * the hash of a template's text and of every template it includes, transitively. A template that
 * includes one by an expression depends on the whole folder.
 */
export class TemplateDigests {
  private readonly texts = new Map<string, string | undefined>();
  private readonly closures = new Map<string, Closure>();
  private readonly asIs = new Map<string, boolean>();
  private folder?: string;

  constructor(private readonly templatesDir: string) {}

  /** The digest of `name` (relative to the templates folder) and everything it includes. */
  digest(name: string): string {
    return this.closure(name).digest;
  }

  /** Which members of `device` the template and its includes can read. */
  deviceReads(name: string): DeviceReads {
    return this.closure(name).reads.device;
  }

  /** Which members of `device`, `tunables` and `dtypes` the template and its includes can read (see keyContext). */
  contextReads(name: string): ContextReads {
    return this.closure(name).reads;
  }

  /** Whether the template or an include can read `env.wgsl.f16Storage` (the profile's f16 storage form, known to differ between profiles even where no binding is f16). */
  readsF16Storage(name: string): boolean {
    return this.closure(name).f16Storage;
  }

  /**
   * Whether the template and every template it includes or imports print
   * `env.wgsl.resourceDeclarations` as it stands and do nothing else with it (declarations-print.ts),
   * so that one render can be filled in with any declarations.
   */
  printsDeclarationsAsIs(name: string): boolean {
    let known = this.asIs.get(name);
    if (known === undefined) {
      known = true;
      const seen = new Set<string>();
      const stack = [name];
      while (stack.length > 0 && known) {
        const next = stack.pop()!;
        if (seen.has(next)) continue;
        seen.add(next);
        const text = this.text(next);
        const prints = text === undefined ? undefined : declarationPrints(text);
        known = prints?.asIs ?? false;
        stack.push(...(prints?.includes ?? []));
      }
      this.asIs.set(name, known);
    }
    return known;
  }

  private text(name: string): string | undefined {
    if (!this.texts.has(name)) {
      // Read as the renderer reads it: never outside the folder, never a FIFO, a device or a huge file.
      this.texts.set(name, readTemplateIfLoadable(this.templatesDir, name));
    }
    return this.texts.get(name);
  }

  private closure(root: string): Closure {
    let c = this.closures.get(root);
    if (!c) {
      c = this.computeClosure(root);
      this.closures.set(root, c);
    }
    return c;
  }

  private computeClosure(root: string): Closure {
    const parts: string[] = [];
    const texts: string[] = [];
    const seen = new Set<string>();
    const stack = [root];
    while (stack.length > 0) {
      const name = stack.pop()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const text = this.text(name);
      parts.push(`${name}\0${text === undefined ? "(missing)" : sha256Hex(text)}`);
      if (text === undefined) continue;
      texts.push(text);
      const inc = includedNames(text);
      if (inc.dynamic) return { digest: this.folderDigest(), reads: ALL_READS, f16Storage: true };
      stack.push(...inc.names);
    }
    return {
      digest: sha256Hex(parts.sort().join("\0")),
      reads: { device: deviceMembers(texts), tunables: members(texts, "tunables"), dtypes: members(texts, "dtypes") },
      f16Storage: texts.some((t) => t.includes("f16Storage")),
    };
  }

  private folderDigest(): string {
    this.folder ??= sha256Hex(
      walkFiles(this.templatesDir)
        .files.map((f) => `${f}\0${sha256Hex(this.text(f) ?? "")}`)
        .join("\0"),
    );
    return this.folder;
  }
}

/** What a template closure is and reads: its digest, the context members, whether it reads the f16 storage form. */
interface Closure {
  readonly digest: string;
  readonly reads: ContextReads;
  readonly f16Storage: boolean;
}

/** The `device` members a template can read: "all" unless every mention is `device.features.X` or `device.limits.X`. */
export type DeviceReads = "all" | { readonly features: readonly string[]; readonly limits: readonly string[] };

/** The members of an object of the render context a template can read: "all" unless every mention of the object is `NAME.X`. */
export type MemberReads = "all" | readonly string[];

/** The members of the render context's `device`, `tunables` and `dtypes` a template closure can read. */
export interface ContextReads {
  readonly device: DeviceReads;
  readonly tunables: MemberReads;
  readonly dtypes: MemberReads;
}

const ALL_READS: ContextReads = { device: "all", tunables: "all", dtypes: "all" };

/**
 * The members of `object` the texts can read: "all" when one mentions it other than as
 * `object.X` (a subscript, a loop over it, a `set`, an argument, any other text). Any mention in
 * the template's text counts, also in WGSL text or a comment, so the answer is a superset.
 */
function members(texts: readonly string[], object: "tunables" | "dtypes"): MemberReads {
  const pattern = object === "tunables" ? /(?<![\w.])tunables\b(\s*\.\s*([A-Za-z_]\w*))?/g : /(?<![\w.])dtypes\b(\s*\.\s*([A-Za-z_]\w*))?/g;
  const read = new Set<string>();
  for (const text of texts) {
    for (const m of text.matchAll(pattern)) {
      if (m[2] === undefined) return "all";
      read.add(m[2]);
    }
  }
  return [...read].sort();
}

function deviceMembers(texts: readonly string[]): DeviceReads {
  const features = new Set<string>();
  const limits = new Set<string>();
  for (const text of texts) {
    for (const m of text.matchAll(/(?<![\w.])device\b(\s*\.\s*(features|limits)\s*\.\s*([A-Za-z_][\w-]*))?/g)) {
      if (m[1] === undefined) return "all";
      (m[2] === "features" ? features : limits).add(m[3]);
    }
  }
  return { features: [...features].sort(), limits: [...limits].sort() };
}

/**
 * What of a render context the output can depend on: everything but the members of `device`,
 * `tunables` and `dtypes` the template cannot read (renders of a pass on profiles or assignments
 * that differ only there give the same text, and are done once).
 */
export function keyContext(context: Readonly<Record<string, unknown>>, reads: ContextReads): unknown {
  const keyed: Record<string, unknown> = { ...context };
  if (reads.device !== "all") {
    const device = context.device as { features: Record<string, boolean>; limits: Record<string, number> } | undefined;
    keyed.device = {
      features: reads.device.features.map((f) => [f, device?.features[f]]),
      limits: reads.device.limits.map((l) => [l, device?.limits[l]]),
    };
  }
  for (const object of ["tunables", "dtypes"] as const) {
    const read = reads[object];
    const values = context[object] as Readonly<Record<string, unknown>> | undefined;
    if (read !== "all") keyed[object] = read.map((name) => [name, values && Object.hasOwn(values, name) ? values[name] : null]);
  }
  return keyed;
}

/** The key of one render: the template closure's digest, the render context and the declarations. */
export function renderKey(shader: string, digest: string, context: unknown, declarations: string): string {
  return sha256Hex(JSON.stringify([shader, digest, context, declarations]));
}
