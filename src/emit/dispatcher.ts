/**
 * Generates a profile's dispatcher module: per kernel a typed call and a plan function with every
 * build-time value, and every value the call's validation fixes, folded to a constant, as plain
 * TypeScript (comparisons, integer-checked arithmetic written in place, and a few helper calls) —
 * no expression interpreter. Spec text never becomes code: names become numbered identifiers, and
 * every string from the spec is emitted as a quoted literal (see code-writer.ts).
 *
 * The generator is split by what it emits: dispatcher-validate.ts the plan function (call snapshot
 * and validation), dispatcher-plan.ts the plan methods of each dtype assignment's class (emitted as
 * module functions taking the instance: see dispatcher-expr.ts's methodsAsFunctions),
 * dispatcher-expr.ts expressions, derive memos and condition explanations, and this file the
 * module (prelude, call types, planners). A module carries only the prelude helpers it uses.
 */
import { nameModuleMark } from "../core/generated-mark.js";
import type { KernelModel } from "../plan/dispatch-model.js";
import { outputsToFill } from "../plan/dispatch-model.js";
import { CodeWriter, comment, finishModule, isIdent, str, ty, type EmitKind } from "./code-writer.js";
import { lit } from "./dispatcher-expr.js";
import { PRELUDE_DECLARATIONS, PRELUDE_TYPES, preludeFor } from "./dispatcher-prelude.js";
import { generateKernel } from "./dispatcher-validate.js";
import { poolStrings } from "./string-pool.js";
import type { Value } from "../model/ir.js";

export { commentText } from "./dispatcher-expr.js";

/** The name of a kernel's call type: `<Kernel>Call` when the kernel's name is an identifier. */
function callTypeName(name: string, kIndex: number): string {
  return isIdent(name) && isIdent(`${name}Call`) ? `${name}Call` : `KernelCall${kIndex}`;
}

/**
 * The members TypeScript gives every object literal through its `Object` interface. A bag's
 * optional key of one of these names would otherwise be checked against the member every literal
 * inherits (`toString: () => string` is not a TensorDesc), so no call could leave it out: its
 * type also admits that member, which the planners ignore (they read a bag's own keys only).
 */
const OBJECT_MEMBERS: ReadonlySet<string> = new Set([
  "constructor",
  "toString",
  "toLocaleString",
  "valueOf",
  "hasOwnProperty",
  "isPrototypeOf",
  "propertyIsEnumerable",
]);
const inherited = (name: string): string => (OBJECT_MEMBERS.has(name) ? ` | Object[${str(name)}]` : "");

/**
 * A kernel's call type: its tensor ids as literal keys (required ones required), dtypes as literal
 * unions of the type constraints, attributes with their types (literal unions where the spec
 * lists the allowed values) and their defaults in doc comments.
 */
function callType(model: KernelModel, typeName: string, w: CodeWriter): void {
  const spec = model.kernel.spec;
  const inputIds = new Set(spec.inputs.map((i) => i.name));
  const fill = outputsToFill(model.kernel);
  const dtypeOf = (d: string): string => {
    const tc = spec.typeConstraints.find((t) => t.name === d);
    return (tc ? tc.types : [d]).map((t) => str(t)).join(" | ");
  };
  const tensor = (id: string, dtype: string, required: boolean): string =>
    required
      ? `readonly ${str(id)}: TensorDesc<${dtypeOf(dtype)}>;`
      : `readonly ${str(id)}?: TensorDesc<${dtypeOf(dtype)}> | null | undefined${inherited(id)};`;
  const outputs = spec.outputs.filter((o) => !inputIds.has(o.name));
  const outputRequired = (o: (typeof outputs)[number]): boolean => !o.optional && !fill.has(o.name);
  const requiredAttrs = new Set(spec.attributeConstraints.filter((c) => c.required).map((c) => c.name));
  const attrType = (name: string): string => {
    const values = spec.attributeConstraints.find((c) => c.name === name)?.values;
    if (values && values.length) return values.map((v) => lit(v as Value)).join(" | ");
    const t = model.kernel.attrTypes.get(name)!;
    return t.k === "string" ? "string" : t.k === "list" ? "readonly number[]" : "number";
  };
  w.line(`/** A call of ${comment(spec.name)}: its tensors by spec id and its attributes. */`);
  w.open(`export interface ${typeName}`);
  w.open(`readonly inputs:`);
  for (const i of spec.inputs) w.line(tensor(i.name, i.dtype, !i.optional));
  w.close("};");
  const anyOutputRequired = outputs.some(outputRequired);
  w.open(`readonly outputs${anyOutputRequired ? "" : "?"}:`);
  for (const o of outputs) w.line(tensor(o.name, o.dtype, outputRequired(o)));
  w.close(anyOutputRequired ? "};" : "} | undefined;");
  const anyAttrRequired = spec.attributes.some((a) => a.default === undefined && requiredAttrs.has(a.name));
  w.open(`readonly attrs${anyAttrRequired ? "" : "?"}:`);
  for (const a of spec.attributes) {
    if (a.default !== undefined) w.line(`/** Default: ${comment(JSON.stringify(a.default))}. */`);
    const required = a.default === undefined && requiredAttrs.has(a.name);
    w.line(
      required
        ? `readonly ${str(a.name)}: ${attrType(a.name)};`
        : `readonly ${str(a.name)}?: ${attrType(a.name)} | undefined${inherited(a.name)};`,
    );
  }
  w.close(anyAttrRequired ? "};" : "} | undefined;");
  w.close();
}

/** A generated module: its code with type-only text marked, and its declarations (the .d.ts of a JavaScript module). */
export interface GeneratedModule {
  /** finishModule(marked, emit) is the .ts or the .js module. */
  readonly marked: string;
  readonly declarations: string;
}

/** The last line of a generated module's header (the dispatchers' and the bundle index's). */
const HEADER_END = "\n/* eslint-disable */\n";

/**
 * The files of a generated module `base` (e.g. "core/dispatcher"): base.ts, or base.js and base.d.ts.
 * The .js module's header ends with `// @ts-nocheck`: a JavaScript project that type-checks its
 * .js files (allowJs + checkJs) would otherwise check the untyped code too, with hundreds of
 * errors; the types are the .d.ts beside it, which importers get.
 */
export function moduleFiles(base: string, m: GeneratedModule, emit: EmitKind): [string, string][] {
  if (emit === "ts") return [[`${base}.ts`, nameModuleMark(`${base}.ts`, finishModule(m.marked, "ts"))]];
  const js = finishModule(m.marked, "js");
  const end = js.indexOf(HEADER_END);
  if (end < 0) throw new Error(`internal error: the generated module ${base} has no header`);
  const at = end + HEADER_END.length;
  const declarations = `${base.slice(base.lastIndexOf("/") + 1)}.d.ts`;
  return [
    [`${base}.js`, nameModuleMark(`${base}.js`, `${js.slice(0, at)}// @ts-nocheck (its types are in ${declarations})\n${js.slice(at)}`)],
    [`${base}.d.ts`, nameModuleMark(`${base}.d.ts`, m.declarations)],
  ];
}

/** Generates the complete dispatcher module of one profile. */
export function generateDispatcher(models: readonly KernelModel[], header: string, profile: string): GeneratedModule {
  const body = new CodeWriter();
  const decls = new CodeWriter();
  const profileDoc = `/** The profile this module was built for. */`;
  body
    .line(profileDoc)
    .line(`export const PROFILE = ${str(profile)};`)
    .line("");
  decls
    .line(profileDoc)
    .line(`export declare const PROFILE = ${str(profile)};`)
    .line("");
  // Constant lists (explanation gaps, key names, stage tables) by their code, for the whole module.
  const values = new Map<string, string>();
  const planners: string[] = [];
  const types: string[] = [];
  models.forEach((m, i) => {
    const name = m.kernel.spec.name;
    const typeName = callTypeName(name, i);
    const t = new CodeWriter();
    callType(m, typeName, t);
    body.line(ty(t.text())).line("");
    decls.lines(t.written).line("");
    const consts: string[] = [];
    const g = generateKernel(m, i, typeName, consts, values);
    body.lines(consts).line("").lines(g.code.split("\n")).line("");
    decls.line(g.doc).line(`export declare function ${g.fn}(call: ${typeName}): Plan;`).line("");
    types.push(`readonly ${str(name)}: (call: ${typeName}) => Plan;`);
    planners.push(`${str(name)}: ${g.fn},`);
  });
  const plannersDoc = `/** Plan functions by kernel name, each taking its kernel's call type. */`;
  body.line(plannersDoc);
  body.line(`export const planners${ty(`: {\n${types.map((t) => `  ${t}`).join("\n")}\n}`)} = {`);
  body
    .lines(planners.map((p) => `  ${p}`))
    .line("};")
    .line("");
  decls.line(plannersDoc).open(`export declare const planners:`).lines(types).close("};");
  const code = body.text();
  const pooled = poolStrings([PRELUDE_TYPES, preludeFor(code), "", code].join("\n"));
  return {
    marked: [header, "", pooled.declarations, pooled.code].join("\n"),
    declarations: [header, "", PRELUDE_DECLARATIONS, decls.text(), ""].join("\n"),
  };
}
