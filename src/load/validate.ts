/**
 * Schema validation of a parsed spec: Ajv (JSON Schema draft 2020-12) checks the plain data,
 * and every Ajv error becomes one Diagnostic located at the offending JSON value (or key).
 *
 * Ajv reports every failing branch of a `oneOf`, which for a malformed binding means a dozen
 * errors about shapes the author never meant. So a failed `oneOf` is replaced by the errors of
 * the one branch the value most resembles: first by JSON type (a string vs an object), then, for
 * object branches, by which branch's key field (`arg`, `scratch`, `struct`) the object has. The
 * value is re-validated against that branch alone, recursively.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Ajv2020 } from "ajv/dist/2020.js";
import type { ErrorObject, SchemaObject, ValidateFunction } from "ajv";
import { SCHEMA_SHA256, validate as precompiledCheck } from "./spec-schema-check.generated.js";
import type { Diagnostic, Span } from "../core/diagnostic.js";
import { makeDiagnostic } from "../core/codes.js";
import { dedupeDiagnostics } from "../core/dedupe.js";
import { closestMatch, didYouMean } from "../core/did-you-mean.js";
import {
  FORBIDDEN_KEYS,
  appendPointer,
  findForbiddenKeys,
  getMember,
  jsonTypeOf,
  resolvePointer,
  splitPointer,
  toPlain,
  type JsonEntry,
  type JsonNode,
} from "../core/json-source.js";

/** Where the spec schema lives, relative to this module (works from src/load and dist/load). */
const SCHEMA_URL = new URL("../../schema/kernel-spec.schema.json", import.meta.url);

/** Keys that name JS object internals; a spec never needs them and later phases must never see them. */
export { FORBIDDEN_KEYS };

/** Human descriptions of the schema's patterns, for messages. */
const PATTERN_NAMES: Readonly<Record<string, string>> = {
  "^[A-Za-z_][A-Za-z0-9_]*$": "an identifier (a letter or `_`, then letters, digits or `_`)",
  "^(\\$[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*(<[A-Za-z0-9_, <>]+>)?)$":
    "a WGSL type such as `f32` or `vec4<f32>`, or `$name` naming a derive entry",
  "^([A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*)?$": "a dotted name such as `com.microsoft`",
};

/** The compiled schema: Ajv instance, root validator and the schema document. */
interface SpecValidator {
  readonly ajv: Ajv2020;
  readonly validate: ValidateFunction;
  readonly schema: SchemaObject;
}

/**
 * Compiled once per process: compiling the schema costs far more than validating a spec, and the
 * result depends only on the schema file, so caching it cannot change any output.
 */
let compiled: SpecValidator | undefined;

/** The schema file's text (read once per process). */
let schemaText: string | undefined;
const readSchemaText = (): string => (schemaText ??= readFileSync(SCHEMA_URL, "utf8"));

/** The compiled spec schema (compiled on first use, with every error and the schema objects Ajv's errors point at). */
function specValidator(): SpecValidator {
  if (compiled === undefined) {
    const schema = JSON.parse(readSchemaText()) as SchemaObject;
    // Ajv (88 modules) is loaded only here: a valid spec is checked by the precompiled validator.
    const { Ajv2020: Ajv } = createRequire(import.meta.url)("ajv/dist/2020.js") as typeof import("ajv/dist/2020.js");
    const ajv = new Ajv({ allErrors: true, strict: true, verbose: true });
    const validate = ajv.compile(schema);
    compiled = { ajv, validate, schema };
  }
  return compiled;
}

/**
 * Whether the precompiled validator (scripts/gen-spec-validator.mjs) was generated from this
 * schema file; when not (the schema was edited and the script not rerun), every spec goes through
 * Ajv, so a stale precompilation costs time but never changes a verdict.
 */
let precompiledCurrent: boolean | undefined;
function precompiledIsCurrent(): boolean {
  precompiledCurrent ??= createHash("sha256").update(readSchemaText()).digest("hex") === SCHEMA_SHA256;
  return precompiledCurrent;
}

/** The spec JSON Schema as loaded from schema/kernel-spec.schema.json. */
export function specSchema(): SchemaObject {
  return specValidator().schema;
}

/**
 * Validates a parsed spec against the schema. Returns diagnostics (empty when valid): forbidden
 * keys (`__proto__`, `constructor`, `prototype`) as json_forbidden_key, then one diagnostic per
 * schema violation, in document order.
 */
export function validateSpecTree(root: JsonNode, file: string): Diagnostic[] {
  const forbidden = [...forbiddenKeyDiagnostics(root, file), ...inexactAttributeNumbers(root, file)];
  const forbiddenPointers = new Set(forbidden.map((d) => d.location?.pointer));
  const plain = toPlain(root);
  // The precompiled validator answers valid or not (the same schema, the same verdict); only an
  // invalid spec needs Ajv's full error list, with the schema objects its messages are built from.
  if (precompiledIsCurrent() && precompiledCheck(plain) === true) return forbidden;
  const v = specValidator();
  const ok = v.validate(plain);
  if (ok) return forbidden;
  const ctx: Ctx = { v, root, file };
  const converted = convertErrors(ctx, v.validate.errors ?? [], "").filter((d) => !forbiddenPointers.has(d.location?.pointer));
  return dedupeDiagnostics([...forbidden, ...converted]).sort((a, b) => (a.location?.span?.start ?? -1) - (b.location?.span?.start ?? -1));
}

interface Ctx {
  readonly v: SpecValidator;
  readonly root: JsonNode;
  readonly file: string;
}

/** Fields whose string value becomes a key of generated objects (kernel name, ids, binding and field names). */
const NAME_FIELDS: ReadonlySet<string> = new Set(["name", "id"]);

/**
 * Reports every object key in FORBIDDEN_KEYS (the shared walker of json-source.ts), and a name
 * or id whose value is `__proto__`: generated code and manifests use names as keys, where that
 * one would set a prototype. (`constructor` and `toString` are plain names there.)
 */
function forbiddenKeyDiagnostics(root: JsonNode, file: string): Diagnostic[] {
  const out = findForbiddenKeys(root).map(({ entry, pointer }) =>
    makeDiagnostic(
      "json_forbidden_key",
      `the key \`${entry.key}\` is not allowed: it names a JavaScript object internal`,
      { file, span: entry.keySpan, pointer },
      { hint: "rename it" },
    ),
  );
  for (const { entry, pointer } of findForbiddenKeys(root, NAME_FIELDS)) {
    if (entry.value.kind === "string" && entry.value.value === "__proto__") {
      out.push(
        makeDiagnostic(
          "json_forbidden_key",
          `\`__proto__\` is not allowed as a ${entry.key}: it names a JavaScript object internal`,
          { file, span: entry.value.span, pointer },
          { hint: "rename it" },
        ),
      );
    }
  }
  return out.sort((a, b) => a.location!.span!.start - b.location!.span!.start);
}

/**
 * Attribute values (defaults and constraint `values`) written as numbers a double cannot hold as
 * written: an integer past 2^53 - 1 (`9007199254740993` reads as 9007199254740992, which the
 * generated dispatcher would then compare calls against and document as the default), or a
 * non-zero number so small it reads as 0 (`1e-400`). Numbers elsewhere are range-checked by the
 * schema or, in expressions, by the parser.
 */
function inexactAttributeNumbers(root: JsonNode, file: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const check = (node: JsonNode | undefined, what: string): void => {
    if (node?.kind === "array") node.items.forEach((item) => check(item, what));
    if (node?.kind !== "number") return;
    const integer = /^-?\d+$/.test(node.raw);
    const message =
      integer && !Number.isSafeInteger(node.value)
        ? `${what} \`${node.raw}\` is not exact: JSON numbers are doubles, which hold integers exactly only up to 2^53 - 1 (9007199254740991), so it would be read as ${BigInt(node.value)}`
        : node.value === 0 && /[1-9]/.test(node.raw.replace(/[eE].*$/, ""))
          ? `${what} \`${node.raw}\` is too small for a double: it would be read as 0`
          : undefined;
    if (message)
      out.push(
        makeDiagnostic(
          "schema_value",
          message,
          { file, span: node.span, pointer: node.pointer },
          {
            hint: integer
              ? "use an integer of at most 9007199254740991 in magnitude"
              : "write 0, or a number of at least 5e-324 in magnitude",
          },
        ),
      );
  };
  const entries = (key: string): readonly JsonEntry[] => {
    const m = root.kind === "object" ? root.entries.find((e) => e.key === key)?.value : undefined;
    return m?.kind === "object" ? m.entries : [];
  };
  const field = (node: JsonNode, key: string): JsonNode | undefined =>
    node.kind === "object" ? node.entries.find((e) => e.key === key)?.value : undefined;
  for (const e of entries("attributes")) check(field(e.value, "default"), `the default of attribute \`${e.key}\``);
  for (const e of entries("attributeConstraints")) check(field(e.value, "values"), `an allowed value of attribute \`${e.key}\``);
  return out;
}

/** Converts Ajv errors whose instancePath is relative to `prefix` into diagnostics. */
function convertErrors(ctx: Ctx, errors: readonly ErrorObject[], prefix: string): Diagnostic[] {
  const abs = errors.map((e) => ({ ...e, instancePath: prefix + e.instancePath }));
  // Shallowest first; at one path the outermost oneOf, which Ajv reports after the inner ones.
  const branchErrors = abs
    .map((e, index) => ({ e, index }))
    .filter(({ e }) => e.keyword === "oneOf" || e.keyword === "anyOf")
    .sort((a, b) => a.e.instancePath.length - b.e.instancePath.length || b.index - a.index)
    .map(({ e }) => e);
  const handled: string[] = [];
  const out: Diagnostic[] = [];
  for (const b of branchErrors) {
    if (handled.some((p) => isAtOrBelow(b.instancePath, p))) continue;
    handled.push(b.instancePath);
    out.push(...resolveBranches(ctx, b));
  }
  for (const e of abs) {
    if (handled.some((p) => isAtOrBelow(e.instancePath, p))) continue;
    const d = convertOne(ctx, e);
    if (d !== undefined) out.push(d);
  }
  return out;
}

function isAtOrBelow(pointer: string, base: string): boolean {
  return pointer === base || pointer.startsWith(`${base}/`);
}

/** Replaces a failed oneOf/anyOf by the errors of the branch the value most resembles. */
function resolveBranches(ctx: Ctx, err: ErrorObject): Diagnostic[] {
  const pointer = err.instancePath;
  const target = resolvePointer(ctx.root, pointer);
  const parent = err.parentSchema as SchemaObject | undefined;
  const branches = (parent?.[err.keyword] as SchemaObject[] | undefined) ?? [];
  if (target === undefined || branches.length === 0) return [generic(ctx, err)];
  const node = target.node;
  const type = jsonTypeOf(node);
  const byType = branches.filter((b) => acceptsType(ctx, b, type));
  if (byType.length === 0) {
    const wanted = [...new Set(branches.flatMap((b) => [...branchTypes(ctx, b)]))];
    return [
      makeDiagnostic(
        "schema_type",
        `${describeValue(pointer)} must be ${listOr(wanted.map(typeName))}, found ${typeName(type)}`,
        locate(ctx, pointer),
        { hint: firstSentence(parent?.description) },
      ),
    ];
  }
  let chosen = byType[0];
  if (byType.length > 1 && node.kind === "object") {
    const keyed = byType.map((b) => ({ b, key: keyField(ctx, b) }));
    if (keyed.every((k) => k.key !== undefined)) {
      const keys = keyed.map((k) => k.key!);
      const position = (key: string): number => node.entries.findIndex((e) => e.key === key);
      const present = keyed.filter((k) => position(k.key!) >= 0).sort((a, b) => position(a.key!) - position(b.key!));
      if (present.length === 0) {
        return [
          makeDiagnostic(
            "schema_missing_field",
            `${describeValue(pointer)} needs one of the fields ${listOr(keys.map(code))}`,
            locateObjectHead(ctx, pointer),
            { hint: firstSentence(parent?.description) },
          ),
        ];
      }
      if (present.length > 1) {
        const second = node.entries.find((e) => e.key === present[1].key)!;
        return [
          makeDiagnostic(
            "schema_other",
            `${describeValue(pointer)} sets both ${code(present[0].key!)} and ${code(present[1].key!)}, which cannot be combined`,
            { file: ctx.file, span: second.keySpan, pointer: appendPointer(pointer, second.key) },
            { hint: `set exactly one of ${listOr(keys.map(code))}. ${firstSentence(parent?.description) ?? ""}`.trim() },
          ),
        ];
      }
      chosen = present[0].b;
    } else {
      chosen = fewestErrors(ctx, byType, node);
    }
  } else if (byType.length > 1) {
    chosen = fewestErrors(ctx, byType, node);
  }
  const validate = branchValidator(ctx, chosen);
  if (validate(toPlain(node))) return [generic(ctx, err)];
  return convertErrors(ctx, validate.errors ?? [], pointer);
}

function fewestErrors(ctx: Ctx, branches: readonly SchemaObject[], node: JsonNode): SchemaObject {
  const data = toPlain(node);
  let best = branches[0];
  let bestCount = Infinity;
  for (const b of branches) {
    const v = branchValidator(ctx, b);
    const n = v(data) ? 0 : (v.errors?.length ?? 0);
    if (n < bestCount) {
      best = b;
      bestCount = n;
    }
  }
  return best;
}

/** The schema a `{"$ref": "#/$defs/x"}` branch points at, or the branch itself. */
function deref(ctx: Ctx, s: SchemaObject): SchemaObject {
  let cur = s;
  for (let i = 0; i < 16 && typeof cur.$ref === "string"; i++) {
    const ref = cur.$ref as string;
    if (!ref.startsWith("#/")) break;
    let next: unknown = ctx.v.schema;
    for (const t of splitPointer(ref.slice(1))) next = (next as Record<string, unknown>)[t];
    cur = next as SchemaObject;
  }
  return cur;
}

function branchValidator(ctx: Ctx, branch: SchemaObject): ValidateFunction {
  if (typeof branch.$ref === "string") {
    const v = ctx.v.ajv.getSchema(`${ctx.v.schema.$id}${branch.$ref}`);
    if (v !== undefined) return v;
  }
  return ctx.v.ajv.compile(branch);
}

/** The JSON types a schema accepts (following $ref and oneOf/anyOf). */
function branchTypes(ctx: Ctx, s: SchemaObject): Set<string> {
  const d = deref(ctx, s);
  if (typeof d.type === "string") return new Set([d.type]);
  if (Array.isArray(d.type)) return new Set(d.type as string[]);
  const sub = (d.oneOf ?? d.anyOf) as SchemaObject[] | undefined;
  if (sub !== undefined) return new Set(sub.flatMap((b) => [...branchTypes(ctx, b)]));
  return new Set(["object", "array", "string", "number", "boolean", "null"]);
}

function acceptsType(ctx: Ctx, s: SchemaObject, type: string): boolean {
  const types = branchTypes(ctx, s);
  return types.has(type) || (type === "integer" && types.has("number"));
}

/** The first required field of an object branch: what tells the branches apart (`arg`, `scratch`, `struct`). */
function keyField(ctx: Ctx, s: SchemaObject): string | undefined {
  const d = deref(ctx, s);
  const req = d.required as string[] | undefined;
  return req?.[0];
}

/** Converts one (non-oneOf) Ajv error. */
function convertOne(ctx: Ctx, e: ErrorObject): Diagnostic | undefined {
  const pointer = e.instancePath;
  const params = e.params as Record<string, unknown>;
  const parent = e.parentSchema as SchemaObject | undefined;
  const value = resolvePointer(ctx.root, pointer)?.node;
  if (e.keyword === "propertyNames") return undefined;
  if (e.propertyName !== undefined) return propertyNameError(ctx, e, e.propertyName);
  switch (e.keyword) {
    case "additionalProperties": {
      const key = String(params.additionalProperty);
      const allowed = Object.keys((parent?.properties as Record<string, unknown> | undefined) ?? {});
      const keyPointer = appendPointer(pointer, key);
      const obj = value?.kind === "object" ? value : undefined;
      const entry = obj === undefined ? undefined : getMember(obj, key);
      return makeDiagnostic(
        "schema_unknown_field",
        `unknown field ${code(key)} ${placeOf(pointer)}`,
        { file: ctx.file, span: entry?.keySpan ?? value?.span, pointer: keyPointer },
        {
          hint: didYouMean(key, allowed) ?? (allowed.length > 0 ? `the fields allowed here are ${listAnd(allowed.map(code))}` : undefined),
        },
      );
    }
    case "required": {
      const field = String(params.missingProperty);
      const props = (parent?.properties as Record<string, SchemaObject> | undefined) ?? {};
      const desc = firstSentence(props[field]?.description);
      return makeDiagnostic(
        "schema_missing_field",
        `missing required field ${code(field)} ${placeOf(pointer)}`,
        locateObjectHead(ctx, pointer),
        { hint: `add ${code(field)}${desc !== undefined ? `: ${desc}` : ""}` },
      );
    }
    case "type": {
      const found = value === undefined ? "another type" : typeName(jsonTypeOf(value));
      const wanted = Array.isArray(params.type) ? (params.type as string[]) : [String(params.type)];
      return makeDiagnostic(
        "schema_type",
        `${describeValue(pointer)} must be ${listOr(wanted.map(typeName))}, found ${found}`,
        locate(ctx, pointer),
        { hint: firstSentence(parent?.description) },
      );
    }
    case "enum":
    case "const": {
      const allowed = (e.keyword === "enum" ? (params.allowedValues as unknown[]) : [params.allowedValue]) ?? [];
      const shown = value?.kind === "string" ? JSON.stringify(value.value) : describeFound(value);
      const suggestion =
        value?.kind === "string"
          ? closestMatch(
              value.value,
              allowed.filter((a): a is string => typeof a === "string"),
            )
          : undefined;
      return makeDiagnostic(
        "schema_value",
        `${describeValue(pointer)} is ${shown}, which is not allowed: expected ${listOr(allowed.map((a) => code(JSON.stringify(a))))}`,
        locate(ctx, pointer),
        { hint: suggestion !== undefined ? `did you mean ${code(JSON.stringify(suggestion))}?` : firstSentence(parent?.description) },
      );
    }
    case "pattern": {
      const pattern = String(params.pattern);
      const shown = value?.kind === "string" ? JSON.stringify(value.value) : describeFound(value);
      return makeDiagnostic(
        "schema_value",
        `${describeValue(pointer)} is ${shown}, which is not ${PATTERN_NAMES[pattern] ?? `a string matching /${pattern}/`}`,
        locate(ctx, pointer),
        { hint: firstSentence(parent?.description) },
      );
    }
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum": {
      const rel = { minimum: ">=", maximum: "<=", exclusiveMinimum: ">", exclusiveMaximum: "<" }[e.keyword];
      return makeDiagnostic(
        "schema_value",
        `${describeValue(pointer)} is ${describeFound(value)}, but must be ${rel} ${String(params.limit)}`,
        locate(ctx, pointer),
        { hint: firstSentence(parent?.description) },
      );
    }
    case "minLength":
    case "maxLength":
    case "minItems":
    case "maxItems":
    case "minProperties":
    case "maxProperties": {
      const unit = e.keyword.endsWith("Length") ? "character" : e.keyword.endsWith("Items") ? "item" : "field";
      const bound = e.keyword.startsWith("min") ? "at least" : "at most";
      return makeDiagnostic(
        "schema_value",
        `${describeValue(pointer)} must have ${bound} ${String(params.limit)} ${unit}${params.limit === 1 ? "" : "s"}`,
        locate(ctx, pointer),
        { hint: firstSentence(parent?.description) },
      );
    }
    case "uniqueItems": {
      const i = Number(params.i);
      const j = Number(params.j);
      const itemPointer = appendPointer(pointer, Math.max(i, j));
      return makeDiagnostic(
        "schema_value",
        `${describeValue(pointer)} lists the same value twice (items ${Math.min(i, j)} and ${Math.max(i, j)})`,
        locate(ctx, itemPointer),
        { hint: "remove the repeated item" },
      );
    }
    default:
      return generic(ctx, e);
  }
}

/** An error about an object key (propertyNames): points at the key itself. */
function propertyNameError(ctx: Ctx, e: ErrorObject, key: string): Diagnostic {
  const pointer = e.instancePath;
  const obj = resolvePointer(ctx.root, pointer)?.node;
  const entry = obj?.kind === "object" ? getMember(obj, key) : undefined;
  const params = e.params as Record<string, unknown>;
  const what =
    e.keyword === "pattern"
      ? `is not ${PATTERN_NAMES[String(params.pattern)] ?? `a name matching /${String(params.pattern)}/`}`
      : `is not a valid name (${e.message ?? e.keyword})`;
  return makeDiagnostic(
    "schema_value",
    `the name ${code(key)} ${placeOf(pointer)} ${what}`,
    { file: ctx.file, span: entry?.keySpan ?? obj?.span, pointer: appendPointer(pointer, key) },
    { hint: "names are used in expressions and generated code, so they must be identifiers" },
  );
}

function generic(ctx: Ctx, e: ErrorObject): Diagnostic {
  return makeDiagnostic(
    "schema_other",
    `${describeValue(e.instancePath)} ${e.message ?? `fails the schema keyword ${e.keyword}`}`,
    locate(ctx, e.instancePath),
    { hint: firstSentence((e.parentSchema as SchemaObject | undefined)?.description) },
  );
}

/** Location of the value at `pointer` (the whole value's span). */
function locate(ctx: Ctx, pointer: string): { file: string; span?: Span; pointer: string } {
  return { file: ctx.file, span: resolvePointer(ctx.root, pointer)?.node.span, pointer };
}

/** Location for "missing field" errors: the object's key when it is a member, else its `{`. */
function locateObjectHead(ctx: Ctx, pointer: string): { file: string; span?: Span; pointer: string } {
  const t = resolvePointer(ctx.root, pointer);
  if (t === undefined) return { file: ctx.file, pointer };
  const span = t.entry?.keySpan ?? { start: t.node.span.start, end: t.node.span.start + 1 };
  return { file: ctx.file, span, pointer };
}

/** "field `rank` of `/inputs/queryT`", "item 2 of `/when`", "the spec". */
function describeValue(pointer: string): string {
  if (pointer === "") return "the spec";
  const tokens = splitPointer(pointer);
  const last = tokens[tokens.length - 1];
  const parent = pointer.slice(0, pointer.lastIndexOf("/"));
  const of = parent === "" ? "" : ` of ${code(parent)}`;
  return /^(0|[1-9][0-9]*)$/.test(last) ? `item ${last}${of}` : `field ${code(last)}${of}`;
}

/** "at the top level of the spec" or "in `/variants/0`". */
function placeOf(pointer: string): string {
  return pointer === "" ? "at the top level of the spec" : `in ${code(pointer)}`;
}

function describeFound(node: JsonNode | undefined): string {
  if (node === undefined) return "a value";
  switch (node.kind) {
    case "number":
      return node.raw;
    case "string":
      return JSON.stringify(node.value);
    case "boolean":
      return String(node.value);
    case "null":
      return "null";
    default:
      return typeName(node.kind);
  }
}

function typeName(t: string): string {
  switch (t) {
    case "object":
      return "an object";
    case "array":
      return "an array";
    case "integer":
      return "an integer";
    case "null":
      return "null";
    default:
      return `a ${t}`;
  }
}

function code(s: string): string {
  return `\`${s}\``;
}

function listOr(items: readonly string[]): string {
  return joinList(items, "or");
}

function listAnd(items: readonly string[]): string {
  return joinList(items, "and");
}

function joinList(items: readonly string[], word: string): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} ${word} ${items[items.length - 1]}`;
}

function firstSentence(text: unknown): string | undefined {
  if (typeof text !== "string" || text === "") return undefined;
  const m = /^.*?(?<!\be\.g|\bi\.e)\.(?=\s|$)/.exec(text);
  return m === null ? text : m[0];
}
