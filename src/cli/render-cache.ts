/**
 * Renders kept between runs of `kernelc lint` in .kernelc-cache/renders.json, so that a lint after
 * an edit renders only the shaders the edit affects; with them, what each template reads (the
 * checks' template reads, by the template's exact text), so that only edited templates are parsed,
 * and each shader's workgroup facts (by its exact text). The file is a cache, safe to delete, and read
 * with suspicion: a render is keyed by its render key (the SHA-256 of the template closure's texts,
 * the render context and the declarations; see emit/shader-cache.ts), the whole file is ignored
 * unless it was written by the same renderer (the hash of kernelc's whole code, nunjucks' version
 * and Node's), and an entry of the wrong shape is dropped. Only lint uses it: lint writes nothing
 * from a render, so the cache can make it skip work but never change a built file.
 */
import * as path from "node:path";
import { sha256Hex } from "../core/hash.js";
import type { TemplateReadsStore } from "../check/check-spec.js";
import type { RenderStore, WorkgroupFactsStore } from "../emit/shader-cache.js";
import type { WorkgroupFacts } from "../emit/wgsl-limits.js";
import type { TemplateReads } from "../model/checked.js";
import { compilerCodeHash, hashedVersions } from "./build-info.js";
import { KeptEntries, readCacheJson, writeCacheJson } from "./cache-file.js";

/** The render cache's file, relative to the project root. */
export const RENDER_CACHE = ".kernelc-cache/renders.json";

/** At most this many renders are kept; those of the latest run first. */
const MAX_RENDERS = 4096;

/** Who made a render: kernelc's code, nunjucks and Node. A cache written by another renderer is not used. */
function rendererIdentity(): string {
  return `kernelc code ${compilerCodeHash()}; nunjucks ${hashedVersions().nunjucks}; node ${process.version}`;
}

/**
 * What the file holds: shader texts by their SHA-256, per render key the shader and the
 * declarations it was rendered with, and per template text (its SHA-256) what the template reads.
 */
interface RenderFile {
  readonly generatedBy: string;
  readonly renderer: string;
  readonly texts: Record<string, string>;
  readonly renders: Record<string, { readonly wgsl: string; readonly declarations: string }>;
  readonly reads: Record<string, StoredReads>;
  /** Per shader text (its SHA-256), its workgroup facts. */
  readonly facts: Record<string, WorkgroupFacts>;
}

/** TemplateReads as JSON. */
interface StoredReads {
  readonly names: readonly string[];
  readonly tunables: readonly string[];
  readonly dtypes: readonly string[];
  readonly includes: readonly string[];
  readonly anyTunable: boolean;
  readonly unknownIncludes: boolean;
}

/** One render: its shader and declarations texts. */
interface Kept {
  readonly wgsl: string;
  readonly declarations: string;
}

/** A RenderStore read from the project's cache file; save() writes what it learned. */
export class RenderCache implements RenderStore {
  private added = 0;

  private constructor(
    private readonly file: string,
    /** Renders by render key, read from the file and used or made in this run. */
    private readonly renders: KeptEntries<Kept>,
    /** Template reads, by the SHA-256 of the template's text. */
    private readonly reads: KeptEntries<TemplateReads>,
    /** Workgroup facts, by the SHA-256 of the shader's text. */
    private readonly facts: KeptEntries<WorkgroupFacts>,
  ) {}

  /** The cache of the project at `root` (empty when the file is missing, unreadable, of another renderer or malformed). */
  static open(root: string): RenderCache {
    const file = path.join(root, RENDER_CACHE);
    const { renders, reads, facts } = readFile(file);
    return new RenderCache(file, new KeptEntries(renders), new KeptEntries(reads), new KeptEntries(facts));
  }

  /** Shaders' workgroup facts, kept in the same file (validateShaders' WorkgroupFactsStore). */
  readonly workgroupFacts: WorkgroupFactsStore = {
    get: (wgsl) => this.facts.get(sha256Hex(wgsl)),
    set: (wgsl, facts) => {
      this.facts.set(sha256Hex(wgsl), facts);
      this.added++;
    },
  };

  /** What templates read, kept in the same file (the checks' TemplateReadsStore). */
  readonly templateReads: TemplateReadsStore = {
    get: (text) => this.reads.get(sha256Hex(text)),
    set: (text, reads) => {
      this.reads.set(sha256Hex(text), reads);
      this.added++;
    },
  };

  get(key: string): Kept | undefined {
    return this.renders.get(key);
  }

  set(key: string, wgsl: string, declarations: string): void {
    this.renders.set(key, { wgsl, declarations });
    this.added++;
  }

  /** Writes the file when this run made new renders (see writeCacheJson). */
  save(): void {
    if (this.added === 0) return;
    this.added = 0;
    // Many keys render the same shader, and the declarations of a pass recur: each text once.
    const texts = new Map<string, string>();
    const ref = (text: string): string => {
      const h = sha256Hex(text);
      texts.set(h, text);
      return h;
    };
    const renders: RenderFile["renders"] = {};
    for (const [k, v] of this.renders.kept(MAX_RENDERS)) renders[k] = { wgsl: ref(v.wgsl), declarations: ref(v.declarations) };
    const content: RenderFile = {
      generatedBy: "kernelc lint: rendered shaders by render key, and what templates read; a cache, safe to delete",
      renderer: rendererIdentity(),
      texts: Object.fromEntries(texts),
      renders,
      reads: Object.fromEntries(
        this.reads.kept(MAX_RENDERS).map(([h, r]): [string, StoredReads] => [
          h,
          {
            names: [...r.names],
            tunables: [...r.tunables],
            dtypes: [...r.dtypes],
            includes: [...r.includes],
            anyTunable: r.anyTunable,
            unknownIncludes: r.unknownIncludes,
          },
        ]),
      ),
      facts: Object.fromEntries(this.facts.kept(MAX_RENDERS)),
    };
    writeCacheJson(this.file, content);
  }
}

const SHA256 = /^[0-9a-f]{64}$/;

function readFile(file: string): { renders: Map<string, Kept>; reads: Map<string, TemplateReads>; facts: Map<string, WorkgroupFacts> } {
  const out = new Map<string, Kept>();
  const reads = new Map<string, TemplateReads>();
  const facts = new Map<string, WorkgroupFacts>();
  const result = { renders: out, reads, facts };
  const data = readCacheJson(file);
  if (data === undefined || data === null || typeof data !== "object") return result;
  const { renderer, texts, renders, reads: storedReads, facts: storedFacts } = data as Partial<Record<keyof RenderFile, unknown>>;
  const isRecord = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);
  if (renderer !== rendererIdentity() || !isRecord(texts) || !isRecord(renders)) return result;
  const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === "string");
  for (const [h, r] of Object.entries(isRecord(storedReads) ? storedReads : {})) {
    if (
      !SHA256.test(h) ||
      !isRecord(r) ||
      !strings(r.names) ||
      !strings(r.tunables) ||
      !strings(r.dtypes) ||
      !strings(r.includes) ||
      typeof r.anyTunable !== "boolean" ||
      typeof r.unknownIncludes !== "boolean"
    )
      continue;
    reads.set(h, {
      names: new Set(r.names),
      tunables: new Set(r.tunables),
      dtypes: new Set(r.dtypes),
      includes: [...r.includes],
      anyTunable: r.anyTunable,
      unknownIncludes: r.unknownIncludes,
    });
  }
  for (const [h, f] of Object.entries(isRecord(storedFacts) ? storedFacts : {})) {
    const copy = SHA256.test(h) ? workgroupFactsOf(f) : undefined;
    if (copy) facts.set(h, copy);
  }
  // A text is taken only when it is the text its hash names.
  const valid = new Map<string, string>();
  for (const [h, t] of Object.entries(texts)) if (typeof t === "string" && SHA256.test(h) && sha256Hex(t) === h) valid.set(h, t);
  const text = (h: unknown): string | undefined => (typeof h === "string" ? valid.get(h) : undefined);
  for (const [key, entry] of Object.entries(renders)) {
    if (!SHA256.test(key) || !isRecord(entry)) continue;
    const wgsl = text(entry.wgsl);
    const declarations = text(entry.declarations);
    if (wgsl !== undefined && declarations !== undefined) out.set(key, { wgsl, declarations });
  }
  return result;
}

/** A copy of stored workgroup facts, or undefined when `x` does not have their shape. */
function workgroupFactsOf(x: unknown): WorkgroupFacts | undefined {
  if (x === null || typeof x !== "object" || Array.isArray(x)) return undefined;
  const f = x as Record<string, unknown>;
  const natural = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
  const known = new Set(["workgroupSize", "workgroupSizeLine", "workgroupStorageBytes", "largestWorkgroupVarLine", "unresolved"]);
  if (Object.keys(f).some((k) => !known.has(k))) return undefined;
  const size = f.workgroupSize;
  if (size !== undefined && !(Array.isArray(size) && size.length === 3 && size.every(natural))) return undefined;
  for (const k of ["workgroupSizeLine", "workgroupStorageBytes", "largestWorkgroupVarLine"])
    if (f[k] !== undefined && !natural(f[k])) return undefined;
  if (!Array.isArray(f.unresolved) || !f.unresolved.every((u) => typeof u === "string")) return undefined;
  return {
    ...(Array.isArray(size) ? { workgroupSize: [size[0] as number, size[1] as number, size[2] as number] as const } : {}),
    ...(f.workgroupSizeLine !== undefined ? { workgroupSizeLine: f.workgroupSizeLine as number } : {}),
    ...(f.workgroupStorageBytes !== undefined ? { workgroupStorageBytes: f.workgroupStorageBytes as number } : {}),
    ...(f.largestWorkgroupVarLine !== undefined ? { largestWorkgroupVarLine: f.largestWorkgroupVarLine as number } : {}),
    unresolved: [...(f.unresolved as string[])],
  };
}
