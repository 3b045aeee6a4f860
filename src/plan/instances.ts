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
      values.set(r.key, value);
    }
    out.push({ name, values });
  });
  return out;
}
