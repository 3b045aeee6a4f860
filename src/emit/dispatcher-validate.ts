/**
 * A kernel's plan function as generated TypeScript: it snapshots the call (each tensor's own shape
 * and dtype and each attribute read exactly once, into fresh plain values), validates the snapshot
 * with straight-line checks, and constructs the class of the call's dtype assignment. Same checks,
 * order and messages as plan/call-snapshot.ts and plan/interpret.ts validateCall.
 */
import type { Value } from "../model/ir.js";
import { outputsToFill, unfixedOutputMessage, type KernelModel } from "../plan/dispatch-model.js";
import { CodeWriter, comment, str, ty } from "./code-writer.js";
import { classFunction, lit, type TensorSlot, type ValidatedCall } from "./dispatcher-expr.js";
import { generateAssignment } from "./dispatcher-plan.js";

/** The fields a kernel's call becomes: tensor slots, in-place output aliases, attribute indices. */
export function validatedCall(model: KernelModel): ValidatedCall {
  const spec = model.kernel.spec;
  const fill = outputsToFill(model.kernel);
  const tensorIds: string[] = spec.inputs.map((i) => i.name);
  for (const o of spec.outputs) if (!tensorIds.includes(o.name)) tensorIds.push(o.name);
  // An id that is an input reads the call's input; validation rejects a call without a required one.
  const tensors = new Map<string, TensorSlot>(
    tensorIds.map((id, index) => {
      const io = spec.inputs.find((i) => i.name === id) ?? spec.outputs.find((o) => o.name === id)!;
      const filled = fill.has(id);
      return [id, { index, required: !io.optional, dtype: io.dtype, rank: io.rank, filled }];
    }),
  );
  const inputIds = new Set(spec.inputs.map((i) => i.name));
  const aliasIndex = new Map(spec.outputs.filter((o) => inputIds.has(o.name)).map((o) => [o.name, tensors.get(o.name)!.index]));
  const attrIndex = new Map(spec.attributes.map((a, i) => [a.name, i]));
  const required = new Set(spec.attributeConstraints.filter((c) => c.required).map((c) => c.name));
  const definedAttrs = new Set(spec.attributes.filter((a) => a.default !== undefined || required.has(a.name)).map((a) => a.name));
  return { tensors, aliasIndex, attrIndex, definedAttrs };
}

/** What a kernel's generated code is: its plan function's name and doc comment, and the code. */
export interface KernelCode {
  readonly fn: string;
  readonly doc: string;
  readonly code: string;
}

/** Generates the plan function of one kernel (its validation, assignment switch and classes). */
export function generateKernel(
  model: KernelModel,
  kIndex: number,
  callType: string,
  consts: string[],
  values: Map<string, string> = new Map(),
): KernelCode {
  const k = model.kernel;
  const spec = k.spec;
  const name = spec.name;
  const call = validatedCall(model);
  const { tensors, aliasIndex, attrIndex } = call;
  const K = `K${kIndex}`;
  consts.push(`const ${K} = ${str(name)};`);
  const inputIds = spec.inputs.map((i) => i.name);
  const outputIds = spec.outputs.map((o) => o.name);
  const paramIndex = new Map(spec.typeConstraints.map((t, i) => [t.name, i]));
  // Each type parameter's allowed dtypes, by name.
  const params = new Map(spec.typeConstraints.map((t) => [t.name, t.types]));
  const slot = (id: string): number => tensors.get(id)!.index;
  const w = new CodeWriter();
  const fail = (msg: string): string => `$fail("invalid_call", ${msg})`;
  const fn = `plan${kIndex}`;

  const doc = `/** Plans a call of ${comment(`${name} (${spec.domain})`)} on profile ${comment(model.profile)}. Throws KernelCallError when the call cannot run. */`;
  w.line(doc);
  w.open(`function ${fn}(call${ty(`: ${callType}`)})${ty(": Plan")}`);
  // The call is snapshot first: its bags, each bag's own keys (for-in skipping inherited keys
  // visits what Object.keys lists, in its order, without the array), each value read once.
  // $call's for-in finds which bags are own keys (bits 1, 2, 4); $bag reads each once.
  w.line(`const own = $call(call, ${K});`);
  w.line(`const ins = $bag(call, "inputs", ${K}, own & 1);`);
  w.line(`const outs = $bag(call, "outputs", ${K}, own & 2);`);
  w.line(`const attrs = $bag(call, "attrs", ${K}, own & 4);`);
  for (const id of [...tensors.keys()]) w.line(`let t${slot(id)}${ty(": TensorSnap | null")} = null;`);
  for (const i of aliasIndex.values()) w.line(`let u${i}${ty(": TensorSnap | null")} = null;`);
  spec.attributes.forEach((_, i) => w.line(`let g${i}${ty(": unknown")} = undefined;`));
  const keyLoop = (
    bag: string,
    ids: readonly string[],
    local: (id: string) => string,
    what: string,
    read: (id: string) => string,
  ): void => {
    w.open(`if (${bag} !== undefined)`).open(`for (const key in ${bag})`);
    w.line(`if (!$hasOwn.call(${bag}, key)) continue;`);
    w.open(`switch (key)`);
    for (const id of ids)
      w.line(`case ${str(id)}:`)
        .line(`  ${local(id)} = ${read(id)};`)
        .line(`  break;`);
    w.line(`default:`).line(
      `  ${fail(`${K} + ${str(`: unknown ${what} \``)} + $name(key) + ${str(`\`; ${what}s are ${ids.join(", ")}`)}`)};`,
    );
    w.close().close().close();
  };
  keyLoop(
    "ins",
    inputIds,
    (id) => `t${slot(id)}`,
    "input",
    () => `$td(ins[key], ${K}, "input", key)`,
  );
  const outLocal = (id: string): string => (inputIds.includes(id) ? `u${slot(id)}` : `t${slot(id)}`);
  keyLoop("outs", outputIds, outLocal, "output", () => `$td(outs[key], ${K}, "output", key)`);
  const attrNames = spec.attributes.map((x) => x.name);
  keyLoop(
    "attrs",
    attrNames,
    (id) => `g${attrIndex.get(id)}`,
    "attribute",
    () => `$av(attrs[key], ${K}, key)`,
  );

  // Then the snapshot is validated: tensors in spec order (missing, dtype and whether its type
  // parameter allows it, rank), type parameters a call leaves unset, attributes.
  const fill = outputsToFill(k);
  // What is known of a type parameter's dtype where a tensor is checked: not set by any tensor
  // before ("unset"), set ("set": an earlier required tensor gave it), or either ("maybe"). The
  // checks test only what is not known; `by` (the tensor that set it) exists when a later tensor
  // of the parameter may read it.
  const tensorsOf = new Map<number, number>();
  for (const t of [...spec.inputs, ...spec.outputs])
    if (params.has(t.dtype)) tensorsOf.set(paramIndex.get(t.dtype)!, (tensorsOf.get(paramIndex.get(t.dtype)!) ?? 0) + 1);
  const known = new Map<number, "unset" | "set" | "maybe">();
  spec.typeConstraints.forEach((_, i) => {
    w.line(`let dt${i}${ty(": string | undefined")} = undefined;`);
    if ((tensorsOf.get(i) ?? 0) > 1) w.line(`let by${i} = "";`);
    known.set(i, "unset");
  });
  // A tensor's dtype and rank are tested in place, with $param or $rank called only to fail (V8 inlines
  // few of plan0's calls before its inlining budget is spent); $num is a small prelude helper; the
  // others are written in place.
  const visit = (id: string, dtype: string, rank: number | undefined, optional: boolean, what: string, local: string): void => {
    const args = `${K}, ${str(what)}, ${str(id)}`;
    // An optional tensor that is absent needs nothing: no empty `if (t === null) {}` branch.
    if (optional) w.open(`if (${local} !== null)`);
    else {
      w.open(`if (${local} === null)`);
      w.line(`$missing(${args});`);
      w.close("} else {");
    }
    let rankChecked = false;
    if (params.has(dtype)) {
      const d = paramIndex.get(dtype)!;
      const state = known.get(d)!;
      const types = params.get(dtype)!;
      // The tensor that sets the parameter is checked against its allowed dtypes where it is: a
      // dtype not allowed is that tensor's fault, whatever the later tensors have.
      const setParam = (ind: string): void => {
        w.line(`${ind}dt${d} = ${local}.dtype;`);
        w.line(
          `${ind}if (${types.map((t) => `dt${d} !== ${str(t)}`).join(" && ")}) $notAllowed(${args}, dt${d}, ${str(dtype)}, ${str(types.join(", "))});`,
        );
      };
      if (state === "unset") {
        setParam("");
        if ((tensorsOf.get(d) ?? 0) > 1) w.line(`by${d} = ${str(id)};`);
      } else if (state === "set") {
        // Tested in place; $param, called only when a test fails, gives the message.
        const test = `${local}.dtype !== dt${d}${rank === undefined ? "" : ` || ${local}.shape.length !== ${rank}`}`;
        w.line(`if (${test}) $param(${local}, dt${d}${ty("!")}, by${d}, ${str(dtype)}, ${str(types.join(", "))}, ${rank ?? -1}, ${args});`);
        rankChecked = true;
      } else {
        w.line(`const prev = dt${d};`);
        w.line(`if (prev === undefined) {`);
        setParam("  ");
        w.line(`  by${d} = ${str(id)};`);
        w.line(`} else if (prev !== ${local}.dtype) {`)
          .line(`  $dtypeClash(${args}, ${local}.dtype, by${d}, ${str(dtype)}, prev, ${str(types.join(", "))});`)
          .line(`}`);
      }
      if (state !== "set") known.set(d, optional ? "maybe" : "set");
    } else {
      w.line(
        `if (${local}.dtype !== ${str(dtype)}) $badTensor(${args}, ${str(` must have dtype ${dtype}, got `)} + $name(${local}.dtype));`,
      );
    }
    if (rank !== undefined && !rankChecked) w.line(`if (${local}.shape.length !== ${rank}) $rank(${local}, ${rank}, ${args});`);
    w.close();
  };
  for (const i of spec.inputs) visit(i.name, i.dtype, i.rank, i.optional, "input", `t${slot(i.name)}`);
  for (const o of spec.outputs) {
    const optional = o.optional || inputIds.includes(o.name) || fill.has(o.name);
    visit(o.name, o.dtype, o.rank, optional, "output", outLocal(o.name));
  }
  for (const tc of spec.typeConstraints) {
    const d = paramIndex.get(tc.name)!;
    // An output the planner fills (the call left it out) needs its dtype from another tensor when
    // its type parameter allows several: the first allowed type would be a silent guess.
    const unfixed = unfixedOutputMessage(k, fill, tc.name, tc.types);
    if (unfixed !== undefined) w.line(`if (dt${d} === undefined) ${fail(`${K} + ${str(`: ${unfixed}`)}`)};`);
    else w.line(`if (dt${d} === undefined) dt${d} = ${str(tc.types[0]!)};`);
  }
  spec.attributes.forEach((a, i) => {
    const t = k.attrTypes.get(a.name)!;
    const g = `g${i}`;
    if (t.k !== "string" && t.k !== "list") {
      w.line(`$num(${g}, ${t.k === "int"}, ${K}, ${str(a.name)});`);
      return;
    }
    const ints = t.k === "list" && t.elem.k === "int";
    const check = t.k === "string" ? `typeof ${g} === "string"` : ints ? `$ints(${g})` : `$numbers(${g})`;
    const want = t.k === "string" ? "a string" : ints ? "a list of integers" : "a list of numbers";
    w.line(`if (${g} !== undefined && !(${check})) $badAttr(${K}, ${str(a.name)}, ${str(want)}, ${g});`);
  });
  // An attribute's value with its default (declared only where something reads it).
  const constrained = new Set(spec.attributeConstraints.map((c) => c.name));
  spec.attributes.forEach((a, i) => {
    if (model.assignments.length === 0 && !constrained.has(a.name)) return;
    w.line(
      `const a${i}${ty(": unknown")} = g${i} !== undefined ? g${i} : ${a.default === undefined ? "undefined" : lit(a.default as Value)};`,
    );
  });
  for (const c of spec.attributeConstraints) {
    const i = attrIndex.get(c.name);
    if (i === undefined) continue;
    if (c.required) w.line(`if (a${i} === undefined) ${fail(`${K} + ${str(`: attribute \`${c.name}\` is required`)}`)};`);
    if (c.values) {
      const allowed = c.values.map((x) => (typeof x === "string" ? JSON.stringify(x) : String(x))).join(", ");
      const test = c.values.length ? c.values.map((x) => `a${i} !== ${lit(x as Value)}`).join(" && ") : "true";
      w.line(
        `if (a${i} !== undefined && ${test}) ${fail(`${K} + ${str(`: attribute \`${c.name}\` is `)} + $show(a${i}) + ${str(`; allowed values: ${allowed}`)}`)};`,
      );
    }
  }
  // The class of the call's dtype assignment plans it. An assignment that fixes no dtype (a kernel
  // without type parameters) takes every call: it is returned unconditionally, and nothing follows
  // it (`if (true) return …` would leave the rest unreachable, an error under allowUnreachableCode: false).
  const classes: string[] = [];
  let takesEveryCall = false;
  model.assignments.forEach((a, ai) => {
    if (takesEveryCall) return;
    const cls = `K${kIndex}A${ai}`;
    const gen = generateAssignment(model, a, cls, call, consts, values);
    classes.push(gen.text);
    const test = Object.keys(a.facts.dtypes)
      .map((p) => `dt${paramIndex.get(p)} === ${str(a.facts.dtypes[p]!)}`)
      .join(" && ");
    takesEveryCall = test === "";
    w.line(`${test ? `if (${test}) ` : ""}return ${classFunction(cls, "plan")}(${gen.context});`);
  });
  const desc = spec.typeConstraints.map((tc) => `${str(`${tc.name}=`)} + dt${paramIndex.get(tc.name)}`).join(` + ", " + `);
  if (!takesEveryCall)
    w.line(
      `return $fail("no_variant", ${K} + ${str(`: nothing was built for `)} + ${desc || str("this call")} + ${str(` on profile ${model.profile}`)});`,
    );
  w.close();
  return { fn, doc, code: [...classes, "", w.text()].join("\n") };
}
