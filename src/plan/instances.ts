/**
 * Configured instances: each names run-time leaves by their spec text and pins their values.
 * Leaf names are parsed with the expression parser and accepted only in the leaf forms
 * (`attrs.x`, `present.t`, `ranks.t`, `tensorDtypes.t`, `dim(shapes.t, k)`, `has(attrs, "x")`).
 */
import { CheckedKernel } from "../model/checked.js";
import type { Value } from "../model/ir.js";
import { makeDiagnostic } from "../core/codes.js";
import type { Diagnostic } from "../core/diagnostic.js";
import { didYouMean } from "../core/did-you-mean.js";
import type { Expr } from "../model/ast.js";
import { parseExpression } from "../lang/parser.js";
import type { InstanceConfig } from "./config.js";
import type { ParsedInstance } from "./enumerate.js";

/** How to write an instance's leaf names (the hint of every malformed one). */
const LEAF_FORMS =
  'write one of attrs.NAME, present.TENSOR, ranks.TENSOR, tensorDtypes.TENSOR, dim(shapes.TENSOR, AXIS), has(attrs, "NAME")';

/** The canonical leaf key of a leaf expression, or a message saying why it is not one. */
export function leafKeyOf(e: Expr, k: CheckedKernel): { key: string } | { error: string; hint?: string } {
  const tensors = [...new Set([...k.spec.inputs.map((i) => i.name), ...k.spec.outputs.map((o) => o.name)])];
  const attrs = k.spec.attributes.map((a) => a.name);
  const checkTensor = (t: string): { error: string; hint?: string } | undefined =>
    tensors.includes(t)
      ? undefined
      : {
          error: `\`${t}\` is not an input or output of ${k.spec.name}`,
          hint: didYouMean(t, tensors) ?? `the inputs and outputs of ${k.spec.name} are ${tensors.join(", ")}`,
        };
  const attrHint = (a: string): string =>
    didYouMean(a, attrs) ??
    (attrs.length ? `the attributes of ${k.spec.name} are ${attrs.join(", ")}` : `${k.spec.name} declares no attributes`);
  if (e.kind === "member" && e.object.kind === "name") {
    const ns = e.object.name;
    if (ns === "attrs")
      return attrs.includes(e.property)
        ? { key: `attrs.${e.property}` }
        : { error: `\`${e.property}\` is not an attribute of ${k.spec.name}`, hint: attrHint(e.property) };
    if (ns === "present" || ns === "ranks" || ns === "tensorDtypes") return checkTensor(e.property) ?? { key: `${ns}.${e.property}` };
  }
  if (e.kind === "call" && e.callee.kind === "name") {
    if (e.callee.name === "dim" && e.args.length === 2) {
      const [s, ax] = e.args;
      if (s.kind === "member" && s.object.kind === "name" && s.object.name === "shapes" && ax.kind === "number" && ax.isInt) {
        return checkTensor(s.property) ?? { key: `dim(shapes.${s.property}, ${ax.value})` };
      }
      if (
        s.kind === "member" &&
        s.object.kind === "name" &&
        s.object.name === "shapes" &&
        ax.kind === "unary" &&
        ax.op === "-" &&
        ax.operand.kind === "number" &&
        ax.operand.isInt
      ) {
        return checkTensor(s.property) ?? { key: `dim(shapes.${s.property}, ${-ax.operand.value})` };
      }
    }
    if (
      e.callee.name === "has" &&
      e.args.length === 2 &&
      e.args[0].kind === "name" &&
      e.args[0].name === "attrs" &&
      e.args[1].kind === "string"
    ) {
      const a = e.args[1].value;
      return attrs.includes(a)
        ? { key: `has(attrs, ${JSON.stringify(a)})` }
        : { error: `\`${a}\` is not an attribute of ${k.spec.name}`, hint: attrHint(a) };
    }
  }
  return { error: "not a run-time leaf", hint: LEAF_FORMS };
}

/** Parses a kernel's configured instances; problems become diagnostics pointing into the config. */
export function parseInstances(
  k: CheckedKernel,
  configured: readonly InstanceConfig[],
  configFile: string | undefined,
  diagnostics: Diagnostic[],
): ParsedInstance[] {
  const out: ParsedInstance[] = [];
  configured.forEach((inst, i) => {
    const name = inst.name ?? `#${i}`;
    const values = new Map<string, Value>();
    for (const [text, value] of Object.entries(inst.values)) {
      const loc = configFile
        ? { file: configFile, pointer: `/instances/${k.spec.name}/${i}/values/${text.replace(/~/g, "~0").replace(/\//g, "~1")}` }
        : undefined;
      let e: Expr;
      try {
        e = parseExpression(text);
      } catch (err) {
        diagnostics.push(
          makeDiagnostic(
            "instance_invalid",
            `instance ${name} of ${k.spec.name}: \`${text}\` is not a valid leaf: ${(err as Error).message}`,
            loc,
            { hint: LEAF_FORMS },
          ),
        );
        continue;
      }
      const r = leafKeyOf(e, k);
      if ("error" in r) {
        diagnostics.push(
          makeDiagnostic("instance_invalid", `instance ${name} of ${k.spec.name}: \`${text}\`: ${r.error}`, loc, { hint: r.hint }),
        );
        continue;
      }
      const bad = valueProblem(r.key, value, k);
      if (bad) {
        diagnostics.push(
          makeDiagnostic("instance_invalid", `instance ${name} of ${k.spec.name}: \`${text}\`: ${bad.error}`, loc, { hint: bad.hint }),
        );
        continue;
      }
      values.set(r.key, value);
    }
    out.push({ name, values });
  });
  return out;
}

/**
 * Why a pinned value cannot be the value of its leaf in any call (a dimension that is negative or
 * fractional, an axis past the tensor's declared rank, a number for a boolean leaf, an attribute
 * value its constraint does not allow), or undefined. Such a value would be rendered into a shader
 * no call can use, or fail there with a message about the template instead of the config.
 */
function valueProblem(key: string, value: Value, k: CheckedKernel): { error: string; hint: string } | undefined {
  const show = JSON.stringify(value);
  const rankOf = (t: string): number | undefined =>
    (k.spec.inputs.find((i) => i.name === t) ?? k.spec.outputs.find((o) => o.name === t))?.rank;
  const dim = /^dim\(shapes\.([A-Za-z_][A-Za-z0-9_]*), (-?\d+)\)$/.exec(key);
  if (dim) {
    const [, t, axisText] = dim;
    const axis = Number(axisText);
    const rank = rankOf(t!);
    if (rank !== undefined && (axis < -rank || axis >= rank))
      return {
        error: `\`${t}\` has rank ${rank}, so it has no axis ${axis}`,
        hint: rank === 0 ? `\`${t}\` is a scalar: it has no dimensions` : `use an axis from 0 to ${rank - 1} (or -${rank} to -1)`,
      };
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
      return { error: `a dimension is a non-negative integer, not ${show}`, hint: "pin the size the calls will have, e.g. 128" };
    return undefined;
  }
  const ns = key.slice(0, key.indexOf("."));
  if (ns === "ranks") {
    const rank = rankOf(key.slice(6));
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > 64)
      return { error: `a rank is an integer from 0 to 64, not ${show}`, hint: "pin the rank the calls will have" };
    if (rank !== undefined && value !== rank)
      return { error: `the spec declares rank ${rank}, so no call has rank ${show}`, hint: `pin ${rank}, or leave the rank out` };
    return undefined;
  }
  if (ns === "present" || key.startsWith("has(")) {
    if (typeof value !== "boolean") return { error: `this leaf is true or false, not ${show}`, hint: "pin true or false" };
    return undefined;
  }
  if (ns === "attrs") {
    const attr = key.slice(6);
    const allowed = k.spec.attributeConstraints.find((c) => c.name === attr)?.values;
    if (allowed && !allowed.some((v) => v === value))
      return {
        error: `attribute \`${attr}\` may only be ${allowed.map((v) => JSON.stringify(v)).join(", ")}, not ${show}`,
        hint: "pin one of the values its attributeConstraints allow",
      };
    const isString = k.attrTypes.get(attr)?.k === "string";
    if (isString && typeof value !== "string")
      return { error: `attribute \`${attr}\` is a string, not ${show}`, hint: 'pin the string the calls will give, e.g. "wrap"' };
    if (!isString && typeof value !== "number")
      return {
        error: `attribute \`${attr}\` is not ${typeof value === "string" ? "a string" : "a boolean"}`,
        hint: "pin the number the calls will give",
      };
  }
  return undefined;
}
