/**
 * Loading a spec file: strict JSON with locations → schema validation → the immutable
 * `KernelSpec` model of spec-model.ts, every field carrying where it sits in the file.
 */
import { lstatSync, realpathSync, statSync } from "node:fs";
import { join, relative, isAbsolute, sep } from "node:path";
import { capDiagnostics, type Diagnostic } from "../core/diagnostic.js";
import { makeDiagnostic } from "../core/codes.js";
import { walkFiles } from "../core/walk.js";
import { InputFileError, readInputFile } from "../core/read-file.js";
import { DEFAULT_JSON_LIMITS, parseJson, type JsonArray, type JsonEntry, type JsonNode, type JsonObject } from "../core/json-source.js";
import { validateSpecTree } from "./validate.js";
import type {
  AttributeConstraintSpec,
  AttributeSpec,
  BindingSpec,
  DeriveEntry,
  ExprSource,
  InputSpec,
  IntermediateSpec,
  KernelSpec,
  Named,
  OutputSpec,
  PassBindingRef,
  PassSpec,
  TunableSpec,
  TypeConstraintSpec,
  UniformField,
  VariantSpec,
  Where,
} from "../model/spec.js";

/** The result of loading one spec: the model when there were no errors, and all diagnostics. */
export interface LoadResult {
  readonly spec?: KernelSpec;
  readonly diagnostics: readonly Diagnostic[];
  /** The file's text, when loadSpecPath could read it. */
  readonly text?: string;
}

/** The most diagnostics one spec file gets from loading: the last one shown says how many more there are. */
export const MAX_FILE_DIAGNOSTICS = 1000;

/**
 * Parses, validates and models the spec `text` read from `path` (the path is only used in
 * locations). Returns `spec` only when no error was found.
 */
export function loadSpecFile(path: string, text: string): LoadResult {
  const parsed = parseJson(text, path);
  if (parsed.root === undefined) return { diagnostics: parsed.diagnostics };
  const diagnostics = [...parsed.diagnostics, ...validateSpecTree(parsed.root, path)];
  if (diagnostics.some((d) => d.severity === "error")) return { diagnostics: capDiagnostics(diagnostics, MAX_FILE_DIAGNOSTICS) };
  const builder = new SpecBuilder(path);
  const spec = builder.kernel(parsed.root, text);
  diagnostics.push(...builder.diagnostics);
  if (diagnostics.some((d) => d.severity === "error")) return { diagnostics };
  return { spec, diagnostics };
}

/** Reads `path` and loads it; an unreadable or oversized file gives a diagnostic instead. */
export function loadSpecPath(path: string): LoadResult {
  let text: string;
  try {
    text = readInputFile(path, DEFAULT_JSON_LIMITS.maxBytes);
  } catch (e) {
    if (e instanceof InputFileError && e.reason === "too_large") {
      return {
        diagnostics: [
          makeDiagnostic("file_too_large", `the file is ${e.size} bytes, more than the limit of ${DEFAULT_JSON_LIMITS.maxBytes} bytes`, {
            file: path,
          }),
        ],
      };
    }
    return { diagnostics: [unreadable(path, e)] };
  }
  return { ...loadSpecFile(path, text), text };
}

/** The spec files named by `paths`, and diagnostics for paths that cannot be read. */
export interface DiscoveredFiles {
  readonly files: readonly string[];
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * Expands `paths`: a file stays as given; a folder becomes its `*.json` files (not recursive),
 * sorted by name. Symlinks inside a folder are followed only when they stay inside that folder.
 * The result keeps the order of `paths` and lists each file once.
 */
export function discoverSpecFiles(paths: readonly string[]): DiscoveredFiles {
  const files: string[] = [];
  const seen = new Set<string>();
  const diagnostics: Diagnostic[] = [];
  const add = (file: string): void => {
    if (!seen.has(file)) {
      seen.add(file);
      files.push(file);
    }
  };
  for (const p of paths) {
    try {
      if (!statSync(p).isDirectory()) {
        add(p);
        continue;
      }
      const realDir = realpathSync(p);
      // Only the folder's own entries: every subfolder is skipped. Symlinks come back as `others`.
      const listed = walkFiles(p, () => true);
      const names = [...listed.files, ...listed.others].filter((n) => n.endsWith(".json")).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (const name of names) {
        const full = join(p, name);
        if (lstatSync(full).isSymbolicLink()) {
          let real: string;
          try {
            real = realpathSync(full);
          } catch {
            continue;
          }
          const rel = relative(realDir, real);
          if (rel === "" || rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) continue;
          if (!statSync(real).isFile()) continue;
        } else if (!listed.files.includes(name)) {
          continue;
        }
        add(full);
      }
    } catch (e) {
      diagnostics.push(unreadable(p, e));
    }
  }
  return { files, diagnostics };
}

function unreadable(path: string, e: unknown): Diagnostic {
  const reason = (e as NodeJS.ErrnoException)?.code === "ENOENT" ? "it does not exist" : ((e as Error)?.message ?? String(e));
  return makeDiagnostic("file_unreadable", `cannot read ${path}: ${reason}`, { file: path });
}

/** Thrown when the validated tree does not have the shape the schema promises: a kernelc bug. */
class SpecShapeError extends Error {
  constructor(node: JsonNode, expected: string) {
    super(`internal error: expected ${expected} at ${node.pointer || "/"} after schema validation, found ${node.kind}`);
    this.name = "SpecShapeError";
  }
}

/** Builds the model from a schema-valid tree; collects the few checks the schema cannot express. */
class SpecBuilder {
  readonly diagnostics: Diagnostic[] = [];

  constructor(private readonly file: string) {}

  kernel(root: JsonNode, source: string): KernelSpec {
    const o = asObject(root);
    return {
      file: this.file,
      source,
      domain: asString(need(o, "domain")),
      name: asString(need(o, "name")),
      sinceVersion: asNumber(need(o, "sinceVersion")),
      inputs: mapEntries(o, "inputs", (e): InputSpec => {
        const v = asObject(e.value);
        return {
          ...named(e),
          onnx: asString(need(v, "onnx")),
          dtype: asString(need(v, "dtype")),
          dtypeWhere: whereOf(need(v, "dtype")),
          rank: optNumber(v, "rank"),
          optional: optBoolean(v, "optional") ?? false,
          storage: optString(v, "storage"),
          storageWhere: member(v, "storage") === undefined ? undefined : whereOf(member(v, "storage")!),
        };
      }),
      outputs: mapEntries(o, "outputs", (e): OutputSpec => {
        const v = asObject(e.value);
        const shape = member(v, "shape");
        return {
          ...named(e),
          onnx: asString(need(v, "onnx")),
          dtype: asString(need(v, "dtype")),
          dtypeWhere: whereOf(need(v, "dtype")),
          rank: optNumber(v, "rank"),
          optional: optBoolean(v, "optional") ?? false,
          shape: shape === undefined ? undefined : exprOf(shape),
        };
      }),
      attributes: mapEntries(o, "attributes", (e): AttributeSpec => {
        const v = asObject(e.value);
        const d = member(v, "default");
        return {
          ...named(e),
          default: d === undefined ? undefined : attributeDefault(d),
          defaultWhere: d === undefined ? undefined : whereOf(d),
          defaultFloat: d !== undefined && writtenAsFloat(d),
        };
      }),
      attributeConstraints: mapEntries(o, "attributeConstraints", (e): AttributeConstraintSpec => {
        const v = asObject(e.value);
        const values = member(v, "values");
        return {
          ...named(e),
          values: values === undefined ? undefined : asArray(values).items.map((i) => (i.kind === "string" ? i.value : asNumber(i))),
          valuesWhere: values === undefined ? undefined : whereOf(values),
          required: optBoolean(v, "required") ?? false,
        };
      }),
      typeConstraints: mapEntries(o, "typeConstraints", (e): TypeConstraintSpec => ({
        ...named(e),
        types: asArray(e.value).items.map(asString),
        typesWhere: asArray(e.value).items.map(whereOf),
      })),
      tunables: mapEntries(o, "tunables", (e): TunableSpec => {
        const v = asObject(e.value);
        const values = member(v, "values");
        return {
          ...named(e),
          default: asNumber(need(v, "default")),
          values: values === undefined ? undefined : asArray(values).items.map(asNumber),
        };
      }),
      derive: deriveEntries(member(o, "derive")),
      when: conditions(member(o, "when")),
      bindings: mapEntries(o, "bindings", (e) => this.binding(e.key, e.value, named(e).keyWhere)),
      variants: asArray(need(o, "variants")).items.map((v) => this.variant(v)),
      explain: explainList(member(o, "explain")),
    };
  }

  private variant(node: JsonNode): VariantSpec {
    const o = asObject(node);
    const requires = member(o, "requires");
    const features = requires === undefined ? undefined : member(asObject(requires), "features");
    const intermediates = member(o, "intermediates");
    return {
      id: asString(need(o, "id")),
      priority: optNumber(o, "priority") ?? 0,
      when: conditions(member(o, "when")),
      features: features === undefined ? [] : asArray(features).items.map(asString),
      derive: deriveEntries(member(o, "derive")),
      intermediates: intermediates === undefined ? [] : asArray(intermediates).items.map(intermediate),
      passes: asArray(need(o, "passes")).items.map((p) => this.pass(p)),
      where: whereOf(node),
    };
  }

  private pass(node: JsonNode): PassSpec {
    const o = asObject(node);
    const shader = need(o, "shader");
    const dispatchNode = need(o, "dispatch");
    const dispatch = asObject(dispatchNode);
    const dim = (axis: "x" | "y" | "z"): ExprSource => {
      const v = member(dispatch, axis);
      if (v !== undefined) return exprOf(v);
      return { text: "1", where: whereOf(dispatchNode), textStart: dispatchNode.span.start };
    };
    return {
      id: asString(need(o, "id")),
      name: asString(need(o, "name")),
      shader: asString(shader),
      shaderWhere: whereOf(shader),
      derive: deriveEntries(member(o, "derive")),
      bindings: asArray(need(o, "bindings")).items.map((b): PassBindingRef => {
        if (b.kind === "string") return { kind: "ref", id: b.value, where: whereOf(b) };
        const name = member(asObject(b), "name");
        if (name === undefined) {
          this.diagnostics.push(
            makeDiagnostic(
              "schema_missing_field",
              `the inline binding at \`${b.pointer}\` has no \`name\``,
              { file: this.file, span: { start: b.span.start, end: b.span.start + 1 }, pointer: b.pointer },
              { hint: 'add `"name"`: the WGSL variable name the template uses for this buffer' },
            ),
          );
        }
        return { kind: "inline", binding: this.binding(name === undefined ? "" : asString(name), b, whereOf(b)) };
      }),
      dispatch: { x: dim("x"), y: dim("y"), z: dim("z") },
      where: whereOf(node),
    };
  }

  /** A binding; `keyWhere`: where its id is written (its key under `bindings`), where a name that defaults to it is reported. */
  private binding(id: string, node: JsonNode, keyWhere: Where): BindingSpec {
    const o = asObject(node);
    const arg = member(o, "arg");
    const scratch = member(o, "scratch");
    const struct = member(o, "struct");
    const ref = arg ?? scratch;
    const elementType = member(o, "elementType");
    const buffer = optString(o, "buffer") as BindingSpec["buffer"];
    const name = member(o, "name");
    return {
      id,
      where: whereOf(node),
      kind: arg !== undefined ? "arg" : scratch !== undefined ? "scratch" : "uniform",
      ref: ref === undefined ? undefined : asString(ref),
      refWhere: ref === undefined ? undefined : whereOf(ref),
      name: name === undefined ? id : asString(name),
      nameWhere: name === undefined ? keyWhere : whereOf(name),
      buffer,
      elementType: elementType === undefined ? undefined : asString(elementType),
      elementTypeWhere: elementType === undefined ? undefined : whereOf(elementType),
      fields: struct === undefined ? undefined : asArray(struct).items.map(uniformField),
    };
  }
}

function uniformField(node: JsonNode): UniformField {
  const o = asObject(node);
  const name = need(o, "name");
  return {
    name: asString(name),
    nameWhere: whereOf(name),
    type: asString(need(o, "type")) as UniformField["type"],
    value: exprOf(need(o, "value")),
    where: whereOf(node),
  };
}

function intermediate(node: JsonNode): IntermediateSpec {
  const o = asObject(node);
  return {
    id: asString(need(o, "id")),
    dtype: asString(need(o, "dtype")),
    shape: exprOf(need(o, "shape")),
    where: whereOf(node),
  };
}

function deriveEntries(node: JsonNode | undefined): DeriveEntry[] {
  if (node === undefined) return [];
  return asObject(node).entries.map((e) => ({ ...named(e), expr: exprOf(e.value) }));
}

/** The spec's `explain` list: derive names, each with where it is written. */
function explainList(node: JsonNode | undefined): { name: string; where: Where }[] {
  return node === undefined ? [] : asArray(node).items.map((i) => ({ name: asString(i), where: whereOf(i) }));
}

function conditions(node: JsonNode | undefined): ExprSource[] {
  return node === undefined ? [] : asArray(node).items.map(exprOf);
}

function attributeDefault(node: JsonNode): number | string | readonly number[] {
  if (node.kind === "string") return node.value;
  if (node.kind === "array") return node.items.map(asNumber);
  return asNumber(node);
}

/**
 * Whether a default holds a number written as a float (with a `.` or an exponent: `1.0`, `1e-5`).
 * JSON's `1.0` and `1` are the same number, so only the text tells a float attribute whose
 * default happens to be integral from an int one.
 */
function writtenAsFloat(node: JsonNode): boolean {
  if (node.kind === "number") return /[.eE]/.test(node.raw);
  if (node.kind === "array") return node.items.some((i) => i.kind === "number" && /[.eE]/.test(i.raw));
  return false;
}

/** An expression as written: a JSON string's decoded text, or a number/boolean literal's JSON text. */
export function exprOf(node: JsonNode): ExprSource {
  const where = whereOf(node);
  switch (node.kind) {
    case "string":
      return node.offsetMap === undefined
        ? { text: node.value, where, textStart: node.span.start + 1 }
        : { text: node.value, where, textStart: node.span.start + 1, offsetMap: node.offsetMap };
    case "number":
      return { text: node.raw, where, textStart: node.span.start };
    case "boolean":
      return { text: String(node.value), where, textStart: node.span.start };
    default:
      throw new SpecShapeError(node, "an expression");
  }
}

function whereOf(node: JsonNode): Where {
  return { pointer: node.pointer, span: node.span };
}

function named(e: JsonEntry): Named {
  return { name: e.key, keyWhere: { pointer: e.value.pointer, span: e.keySpan }, where: whereOf(e.value) };
}

/** Builds one model entry per member of the object at `o[key]` (absent: none). */
function mapEntries<T>(o: JsonObject, key: string, build: (e: JsonEntry) => T): T[] {
  const m = member(o, key);
  return m === undefined ? [] : asObject(m).entries.map(build);
}

function member(o: JsonObject, key: string): JsonNode | undefined {
  return o.entries.find((e) => e.key === key)?.value;
}

function need(o: JsonObject, key: string): JsonNode {
  const v = member(o, key);
  if (v === undefined) throw new SpecShapeError(o, `a member ${JSON.stringify(key)}`);
  return v;
}

function asObject(n: JsonNode): JsonObject {
  if (n.kind !== "object") throw new SpecShapeError(n, "an object");
  return n;
}

function asArray(n: JsonNode): JsonArray {
  if (n.kind !== "array") throw new SpecShapeError(n, "an array");
  return n;
}

function asString(n: JsonNode): string {
  if (n.kind !== "string") throw new SpecShapeError(n, "a string");
  return n.value;
}

function asNumber(n: JsonNode): number {
  if (n.kind !== "number") throw new SpecShapeError(n, "a number");
  return n.value;
}

function optString(o: JsonObject, key: string): string | undefined {
  const v = member(o, key);
  return v === undefined ? undefined : asString(v);
}

function optNumber(o: JsonObject, key: string): number | undefined {
  const v = member(o, key);
  return v === undefined ? undefined : asNumber(v);
}

function optBoolean(o: JsonObject, key: string): boolean | undefined {
  const v = member(o, key);
  if (v === undefined) return undefined;
  if (v.kind !== "boolean") throw new SpecShapeError(v, "a boolean");
  return v.value;
}
