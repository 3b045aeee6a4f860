/**
 * A kernel's plan methods as generated TypeScript, per dtype assignment: `plan()` checks the
 * outputs against their computed shapes, the kernel's conditions, then each variant's in selection
 * order, and runs the first fitting variant's plan method: shader ids, scratch sizes, the bindings'
 * resources (byte sizes checked against the profile's binding limits, uniform words built field by
 * field), workgroup counts — in interpret.ts's order, so the first error is the same.
 */
import { deriveEnv } from "../check/check-spec.js";
import { leavesOf } from "../check/binding-time.js";
import type { CheckedBinding, CheckedVariant } from "../model/checked.js";
import type { Value } from "../model/ir.js";
import type { StaticFacts } from "../plan/env.js";
import { ELEMENT_BYTES, type AssignmentModel, type KernelModel, type VariantModel } from "../plan/dispatch-model.js";
import { str as q, ty } from "./code-writer.js";
import { AssignmentGen, lit, type Code, type GenEnv, type ValidatedCall } from "./dispatcher-expr.js";

/** What generating one assignment's class shares: the kernel model, the facts, the generator, message constants. */
export interface AssignmentContext {
  readonly model: KernelModel;
  readonly facts: StaticFacts;
  readonly g: AssignmentGen;
  readonly valid: ValidatedCall;
  /** The module constant holding a message prefix (strings repeated across error paths are pooled). */
  readonly sc: (text: string) => string;
  /** The module constant holding a value (code of a literal; equal ones are pooled), with its type. */
  readonly konst: (code: string, type: string) => string;
  /** The class's name, the module's declarations (`consts`), and the kernel's shared functions by their text. */
  readonly cls: string;
  readonly consts: string[];
  readonly shared: Map<string, string>;
  /** The class's pass methods by their text (signature and body). */
  readonly passMethods: Map<string, string>;
  /** The class's methods reading a shader key leaf lazily, by their text. */
  readonly keyReads: Map<string, string>;
}

const AS_NUMBER = ty(" as number");

/** A call of a helper that yields a number, as generated code (the whole code one call). */
const NUMERIC_CALL = /^(?:\$(?:mulN|addN|subN|chk|ceilDiv|fdivI|divN|modN|divF|pow2ceil)|Math\.(?:min|max|floor|ceil))\(/;

/**
 * The guarded values a method has computed, for reuse: a later guarded value that computes one of
 * them again (the specs repeat sub-expressions, e.g. a dispatch's x and y) reads its temporary
 * instead. Only a whole call of a numeric helper is reused: it is pure, and the method computed it
 * already without failing, so reading the temporary gives the same value and the same errors.
 */
class Reuse {
  private readonly known: { readonly code: string; readonly temp: string }[] = [];

  /** The temporary holding exactly `code`, if any. */
  temp(code: string): string | undefined {
    return this.known.find((k) => k.code === code)?.temp;
  }

  /** `code` with every computed value in it (longest first) replaced by its temporary. */
  rewrite(code: string): string {
    let out = code;
    for (const k of this.known) {
      for (let at = out.indexOf(k.code); at >= 0; at = out.indexOf(k.code, at + 1)) {
        // A whole call: not the tail of a longer name or of a property access, nor text in a string.
        if ((at > 0 && /[\w$.]/.test(out[at - 1]!)) || inString(out, at)) continue;
        // Typed as the call was: where the code casts the call to a number already, the bare temporary.
        const by = out.startsWith(AS_NUMBER, at + k.code.length) ? k.temp : `(${k.temp}${AS_NUMBER})`;
        out = out.slice(0, at) + by + out.slice(at + k.code.length);
      }
    }
    return out;
  }

  /** Records that `temp` holds `code` (when it is a numeric helper's call). */
  add(code: string, temp: string): void {
    if (!NUMERIC_CALL.test(code) || !wholeCall(code)) return;
    this.known.push({ code, temp });
    this.known.sort((a, b) => b.code.length - a.code.length);
  }
}

/** Whether position `at` of generated code is inside a string literal (double-quoted, with backslash escapes). */
function inString(code: string, at: number): boolean {
  let open = false;
  for (let i = 0; i < at; i++) {
    if (open && code[i] === "\\") i++;
    else if (code[i] === '"') open = !open;
  }
  return open;
}

/** Whether the parenthesis that the code's first `(` opens closes at its last character (parentheses in strings aside). */
function wholeCall(code: string): boolean {
  let depth = 0;
  let open = false;
  for (let i = code.indexOf("("); i < code.length; i++) {
    if (open && code[i] === "\\") i++;
    else if (code[i] === '"') open = !open;
    else if (open) continue;
    else if (code[i] === "(") depth++;
    else if (code[i] === ")" && --depth === 0) return i === code.length - 1;
  }
  return false;
}

/** Per kernel (its declarations array): module functions shared by its classes, by their text. */
const sharedFunctions = new WeakMap<string[], Map<string, string>>();

/** The body of a variant's plan method: mirrors interpret.ts buildPlan (same order of evaluation, so the same first error). */
function planBody(cx: AssignmentContext, vm: VariantModel, vi: number, venv: GenEnv): string[] {
  const {
    g,
    sc,
    valid: { tensors },
  } = cx;
  const k = cx.model.kernel;
  const name = k.spec.name;
  const v = vm.variant;
  const prefix = `${name}: variant \`${v.id}\``;
  const body: string[] = [];
  const stages: string[] = [];
  const passEnvs = vm.passes.map((pm) => g.env(venv, deriveEnv(k, v, pm.pass), new Set(pm.pass.derive.keys())));
  // Shader ids first. The entries are tried in order and key leaves read lazily, as the interpreter
  // does: each leaf once per call, into a local, by a method that turns a failure into an "eval" error.
  vm.passes.forEach((pm, pi) => {
    const pprefix = `${prefix}: pass \`${pm.pass.id}\``;
    const leaves = pm.keyLeaves.map((l) => g.keyLeaf(l));
    const entries = [...pm.shaders.entries()].map(([key, id]) => ({ key: JSON.parse(key) as (Value | null)[], id }));
    // The message of a missing shader: the variant's prefix (a module constant), then this text
    // (only built when no shader fits, so no constant per variant and pass).
    const missing = q(`: no shader was built for pass \`${pm.pass.id}\` with `);
    const head = `${sc(prefix)} + ${missing}`;
    const tail = ` on profile ${cx.model.profile}; ${cx.model.instancesHint}`;
    if (leaves.every((x) => x.read || x.value !== undefined) && entries.every((e) => e.key.every((kv) => !Array.isArray(kv)))) {
      // Every key leaf is a plain read: each into a local, then one conditional expression over the
      // built keys in entry order (null matches anything); the locals name the key when none fits.
      const locals = leaves.map((_, i) => `k${pi}_${i}`);
      // The call that fails naming the key (its constants are made only when the code needs it).
      const miss = (vals: readonly string[], headCode: string): string => {
        const names = cx.konst(`[${pm.keyLeaves.map((l) => q(l.key)).join(", ")}]`, "readonly string[]");
        return `$noShader(${headCode}, ${names}, [${vals.join(", ")}], ${sc(tail)})`;
      };
      if (entries.length > 0 && entries.every((e) => e.key.every((kv) => kv !== null))) {
        // No wildcard: at most one entry's key matches (the first, if keys repeat), so the entries
        // become a decision tree over the leaves, those with fewer distinct values tested first.
        const distinct = leaves.map((_, i) => new Set(entries.map((e) => lit(e.key[i]!))).size);
        const order = leaves.map((_, i) => i).sort((a, b) => distinct[a]! - distinct[b]! || a - b);
        // The tree is a module function over the key values (`a0`, …) and the variant's message prefix, one per
        // distinct tree: the variants that run the same pass with the same shaders share it.
        const params = leaves.map((_, i) => `a${i}`);
        const tree = (rows: typeof entries, depth: number): string => {
          if (depth === order.length) return q(rows[0]!.id);
          const i = order[depth]!;
          const groups = new Map<string, typeof entries>();
          for (const r of rows) {
            const v = lit(r.key[i]!);
            groups.set(v, [...(groups.get(v) ?? []), r]);
          }
          const arms = [...groups].map(([v, rs]) => `${params[i]} === ${v} ? ${tree(rs, depth + 1)}`);
          // null where no key matches (`??` reads it as undefined; shorter minified than `void 0`).
          return `(${arms.join(" : ")} : null)`;
        };
        // Without key leaves the first entry is the shader (and no call can miss it).
        const choose = (): string => {
          const ps = [...params.map((a) => `${a}${ty(": unknown")}`), `vp${ty(": string")}`].join(", ");
          const fn = `(${ps})${ty(": string")} {\n  return ${tree(entries, 0)} ?? ${miss(params, `vp + ${missing}`)};\n}`;
          let shared = cx.shared.get(fn);
          if (!shared) {
            shared = `${cx.cls}T${cx.shared.size}`;
            cx.shared.set(fn, shared);
            cx.consts.push(`function ${shared}${fn}`);
          }
          return `${shared}(${[...leaves.map((x) => x.code), sc(prefix)].join(", ")})`;
        };
        body.push(`    const s${pi}${ty(": string")} = ${order.length ? choose() : q(entries[0]!.id)};`);
        return;
      }
      if (locals.length) body.push(`    const ${leaves.map((x, i) => `${locals[i]} = ${x.code}`).join(", ")};`);
      const arms = entries.map((e) => {
        const tests = e.key.flatMap((kv, i) => (kv === null ? [] : [`${locals[i]} === ${lit(kv)}`]));
        return `${tests.length ? tests.join(" && ") : "true"} ? ${q(e.id)}`;
      });
      body.push(`    const s${pi}${ty(": string")} = ${[...arms, miss(locals, head)].join("\n      : ")};`);
      return;
    }
    // Otherwise the entries are tried in order and key leaves read lazily, as the interpreter does:
    // each leaf once per call, into a local, by a method that turns a failure into an "eval" error.
    const used = new Set<number>();
    for (const e of entries) e.key.forEach((kv, i) => kv !== null && used.add(i));
    const reads = pm.keyLeaves.map((l, i) => {
      const leaf = leaves[i]!;
      if (leaf.read || leaf.value !== undefined) return { value: leaf.code, shown: `$show(${leaf.code})` };
      // The methods reading the leaf (called with the pass's message prefix) and showing it are
      // shared by every pass and variant of the class that reads the same leaf.
      const readText = `(pp${ty(": string")})${ty(": unknown")} {\n    try {\n      return ${leaf.code};\n    } catch (e) {\n      return $evalFail(e, pp, ${q(`shader key ${l.key}`)});\n    }\n  }`;
      let read = cx.keyReads.get(readText);
      if (!read) {
        read = `k${cx.keyReads.size}`;
        cx.keyReads.set(readText, read);
        g.shared(read, () => readText);
        g.shared(
          `${read}s`,
          () =>
            `()${ty(": string")} {\n    try {\n      return $show(${leaf.code});\n    } catch (e) {\n      if (e instanceof EvalFailure) return "error: " + e.message;\n      throw e;\n    }\n  }`,
        );
      }
      if (!used.has(i)) return { value: "", shown: `this.${read}s()` };
      body.push(`    let k${pi}_${i}${ty(": unknown")} = undefined;`);
      return { value: `(k${pi}_${i} ??= this.${read}(${sc(pprefix)}))`, shown: `this.${read}s()` };
    });
    body.push(`    let s${pi}${ty(": string | undefined")} = undefined;`);
    entries.forEach((e, ei) => {
      const tests = e.key.flatMap((kv, i) =>
        kv === null ? [] : [Array.isArray(kv) ? `$eq(${reads[i]!.value}, ${lit(kv)})` : `${reads[i]!.value} === ${lit(kv)}`],
      );
      body.push(`    ${ei ? "else " : ""}if (${tests.length ? tests.join(" && ") : "true"}) s${pi} = ${q(e.id)};`);
    });
    const names = cx.konst(`[${pm.keyLeaves.map((l) => q(l.key)).join(", ")}]`, "readonly string[]");
    body.push(`    if (s${pi} === undefined) $noShown(${head}, ${names}, [${reads.map((r) => r.shown).join(", ")}], ${sc(tail)});`);
  });
  let tmpCount = 0;
  const reuse = new Reuse();
  /**
   * Emits `st = N; const rN = code;` and returns rN: the method's one try/catch turns an evaluation
   * failure into an "eval" KernelCallError naming stage N (`stages`: its prefix and what was
   * evaluated). A constant or a plain read cannot fail and is returned as it is; a value computed
   * before is read from its temporary.
   */
  const guarded = (x: Code, pfx: string, what: string): string => {
    if (x.value !== undefined || x.read) return x.code;
    const known = reuse.temp(x.code);
    if (known) return known;
    const t = `r${tmpCount++}`;
    stages.push(sc(pfx), q(what));
    body.push(`    st = ${stages.length / 2};`, `    const ${t}${ty(": unknown")} = ${reuse.rewrite(x.code)};`);
    reuse.add(x.code, t);
    return t;
  };
  // Scratch sizes: a literal list shape multiplies its items in place (the same product, no array).
  const maxStorage = limitOf(cx.facts, "maxStorageBufferBindingSize");
  v.intermediates.forEach((im, ii) => {
    const x = im.shape.texpr;
    const bytes = ELEMENT_BYTES[im.dtype];
    const what = `the shape of intermediate \`${im.id}\``;
    let size: string;
    if (x.k === "list") {
      // Each dimension is checked (a non-negative integer) unless it is a constant that is one.
      const items = x.items.map((item) => {
        const t = guarded(g.expr(item, venv, im.shape), prefix, what);
        return /^\d+$/.test(t) ? t : `$sdim(${t}, ${sc(prefix)}, ${q(im.id)})`;
      });
      size = `$round4(${[...items, String(bytes)].join(" * ")})`;
    } else {
      const shape = guarded(g.expr(x, venv, im.shape), prefix, what);
      size = `$round4($product($sshape(${shape}${ty(" as readonly unknown[]")}, ${sc(prefix)}, ${q(im.id)})) * ${bytes})`;
    }
    body.push(
      `    const x${ii} = $fits(${size}, ${maxStorage}, "maxStorageBufferBindingSize", ${sc(prefix)}, ${q(`intermediate \`${im.id}\``)});`,
    );
  });
  // A scratch binding's resource is its buffer's byte size (the whole buffer, from byte 0).
  const scratchIndex = new Map(v.intermediates.map((im, ii) => [im.id, ii]));
  const scratchSize = (ref: string): string => {
    const si = scratchIndex.get(ref);
    return si === undefined ? "0" : `x${si}`;
  };
  // Each pass is a method of the class, called with its message prefix, shader and scratch
  // sizes; variants whose pass has the same code share one method.
  const passes = vm.passes.map((pm, pi) => {
    const scratchRefs = [...new Set(pm.bindings.filter((b) => b.kind === "scratch").map((b) => b.ref!))];
    const method = passMethod(cx, pm, passEnvs[pi]!, scratchRefs);
    return `this.${method}(${[sc(`${prefix}: pass \`${pm.pass.id}\``), `s${pi}`, ...scratchRefs.map(scratchSize)].join(", ")})`;
  });
  // The scratch sizes by id: one object literal (no intermediates: the module's one frozen empty record).
  const scratch = v.intermediates.length ? `{ ${v.intermediates.map((im, ii) => `${q(im.id)}: x${ii}`).join(", ")} }` : "$none";
  body.push(`    return $plan(${q(name)}, ${q(v.id)}, [${passes.join(", ")}], ${scratch}, shapes);`);
  if (stages.length === 0) return body;
  // One try/catch for the method: `st` names the guarded evaluation that was running.
  const table = cx.konst(`[${stages.join(", ")}]`, "readonly string[]");
  return [
    "    let st = 0;",
    "    try {",
    ...body.map((l) => `  ${l}`),
    "    } catch (e) {",
    `      return $evalAt(e, ${table}, st);`,
    "    }",
  ];
}

/**
 * The method building one pass of a variant (`y<N>(pp, s, c0, …)`): its bindings' resources in
 * order (a tensor's byte size from its snapshot's element count, checked against the binding limit,
 * after the check that the call gives the tensor; a uniform's fields evaluated, then range-checked
 * into its words), then its workgroup counts, in interpret.ts's order. `pp` is the pass's message
 * prefix, `s` its shader id, `c0, …` the byte sizes of the scratch buffers it binds (in
 * `scratchRefs`' order). The method's one try/catch names the stage that failed (`$evalIn`). Its
 * text does not depend on the variant beyond the code of its expressions, so variants that run the
 * same pass with the same derive values share one method.
 */
function passMethod(cx: AssignmentContext, pm: VariantModel["passes"][number], penv: GenEnv, scratchRefs: readonly string[]): string {
  const { g, sc } = cx;
  const k = cx.model.kernel;
  const name = k.spec.name;
  const tensors = cx.valid.tensors;
  const maxWg = cx.facts.limits.maxComputeWorkgroupsPerDimension ?? 65535;
  const maxStorage = limitOf(cx.facts, "maxStorageBufferBindingSize");
  const maxUniform = limitOf(cx.facts, "maxUniformBufferBindingSize");
  const generated = g.scoped(() => {
    const body: string[] = [];
    const whats: string[] = [];
    let tmpCount = 0;
    const reuse = new Reuse();
    const guarded = (x: Code, what: string): string => {
      if (x.value !== undefined || x.read) return x.code;
      const known = reuse.temp(x.code);
      if (known) return known;
      const t = `r${tmpCount++}`;
      whats.push(q(what));
      body.push(`    st = ${whats.length};`, `    const ${t}${ty(": unknown")} = ${reuse.rewrite(x.code)};`);
      reuse.add(x.code, t);
      return t;
    };
    const resources = new Map<string, string>(scratchRefs.map((r, i) => [`scratch:${r}`, `c${i}`]));
    const resourceOf = (b: CheckedBinding): string => {
      const key = `${b.kind}:${b.ref}`;
      const known = resources.get(key);
      if (known) return known;
      const r = `q${resources.size - scratchRefs.length}`;
      resources.set(key, r);
      const slot = tensors.get(b.ref!)!;
      const t = `this.t${slot.index}`;
      if (!slot.required) body.push(`    if (${t} === null) $omitted(pp, ${q(b.name)}, ${q(b.ref!)});`);
      // Validation fixed the tensor's dtype (the assignment's, for a type parameter), so its element size is known.
      const dtype = k.spec.typeConstraints.some((tc) => tc.name === slot.dtype) ? cx.facts.dtypes[slot.dtype] : slot.dtype;
      const bytes = Object.prototype.hasOwnProperty.call(ELEMENT_BYTES, dtype) ? ELEMENT_BYTES[dtype] : undefined;
      if (bytes === undefined) {
        body.push(
          `    const ${r}${ty(": number")} = $fail("eval", pp + ${q(`: tensor \`${b.ref}\` has dtype ${dtype}, which cannot be bound`)});`,
        );
      } else {
        // The byte size from the snapshot's element count, checked against the binding limit (a tensor
        // is a storage buffer). Computed in each pass that binds the tensor (a multiplication and a
        // comparison: cheaper than a memo field in the context and a method to fill it); the first
        // binding fails first, as before.
        const lim = cx.konst(`[${maxStorage}, ${q("maxStorageBufferBindingSize")}, ${sc(name)}]`, "readonly [number, string, string]");
        body.push(`    const ${r} = $buf(${t}${ty("!")}, ${q(b.ref!)}, ${bytes}, ${lim});`);
      }
      return r;
    };
    // One statement per binding, in order, so the first failing binding is the one reported. The
    // pass's binding list (each binding's name, buffer type, kind and tensor or scratch id) is a
    // module constant made by $bl from its layout, shared by every plan; the call gives only the
    // resources (byte sizes and uniform words).
    const layout: string[] = [];
    const bindings = pm.bindings.map((b, bi) => {
      if (b.kind === "uniform") {
        // All fields are evaluated, then each is range-checked as the array of the buffer's u32
        // words is built (one literal, zeros to its 16-byte multiple).
        const fields = b.fields ?? [];
        const vals = fields.map((f) => guarded(g.expr(f.value.texpr, penv, f.value), `uniform field \`${b.name}.${f.name}\``));
        const u = `b${bi}`;
        const ubytes = Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
        if (ubytes > maxUniform)
          body.push(`    $fits(${ubytes}, ${maxUniform}, "maxUniformBufferBindingSize", pp, ${q(`uniform \`${b.name}\``)});`);
        const words = fields.map((f, fi) => `$${f.type}(${vals[fi]}, pp, ${q(`${b.name}.${f.name}`)})`);
        while (words.length < ubytes / 4) words.push("0");
        body.push(`    const ${u} = [${words.join(", ")}];`);
        layout.push(q(b.name), String(BUFFER_TYPES.indexOf(b.buffer) + 3 * BINDING_KINDS.indexOf("uniform")), "0");
        return u;
      }
      const kind = b.kind === "scratch" ? "scratch" : b.refIsInput ? "input" : "output";
      layout.push(q(b.name), String(BUFFER_TYPES.indexOf(b.buffer) + 3 * BINDING_KINDS.indexOf(kind)), q(b.ref!));
      return resourceOf(b);
    });
    const wg = pm.pass.dispatch.map((d, i) => {
      const x = g.expr(d.texpr, penv, d);
      if (typeof x.value === "number" && Number.isInteger(x.value) && x.value >= 0 && x.value <= maxWg) return lit(x.value);
      const w = `w${"xyz"[i]}`;
      body.push(`    const ${w} = $wg(${guarded(x, `dispatch ${"xyz"[i]}`)}, ${maxWg}, pp, ${q("xyz"[i])});`);
      return w;
    });
    const layoutConst = cx.konst(`$bl([${layout.join(", ")}])`, "readonly BindingPlan[]");
    body.push(`    return $pass(${q(pm.pass.id)}, ${q(pm.pass.name)}, s, ${layoutConst}, [${bindings.join(", ")}], ${wg.join(", ")});`);
    if (whats.length === 0) return body;
    const table = cx.konst(`[${whats.join(", ")}]`, "readonly string[]");
    return [
      "    let st = 0;",
      "    try {",
      ...body.map((l) => `  ${l}`),
      "    } catch (e) {",
      `      return $evalIn(e, pp, ${table}, st);`,
      "    }",
    ];
  });
  // A pass with nothing that can fail (no uniform, no computed dispatch, only required tensors)
  // never reads its message prefix: the parameter is then `_pp`, as noUnusedParameters asks.
  const usesPrefix = [generated.temps, ...generated.body].some((l) => /\bpp\b/.test(l));
  const params = [usesPrefix ? "pp" : "_pp", "s", ...scratchRefs.map((_, i) => `c${i}`)];
  const types = [": string", ": string", ...scratchRefs.map(() => ": number")];
  const signature = `(${params.map((p, i) => `${p}${ty(types[i]!)}`).join(", ")})${ty(": PassPlan")}`;
  const text = `${signature} {\n${generated.temps}${generated.body.join("\n")}\n  }`;
  let method = cx.passMethods.get(text);
  if (!method) {
    method = `y${cx.passMethods.size}`;
    cx.passMethods.set(text, method);
    g.shared(method, () => text);
  }
  return method;
}

/** Buffer types and binding kinds as a pass's layout gives them: code = type + 3 * kind (the prelude's BT and BK). */
const BUFFER_TYPES: readonly string[] = ["storage", "read-only-storage", "uniform"];
const BINDING_KINDS: readonly string[] = ["input", "output", "scratch", "uniform"];

/** The largest binding of a kind the profile allows (WebGPU's defaults when the profile names none). */
function limitOf(facts: StaticFacts, name: "maxStorageBufferBindingSize" | "maxUniformBufferBindingSize"): number {
  const v = Object.hasOwn(facts.limits, name) ? facts.limits[name] : undefined;
  return v ?? (name === "maxStorageBufferBindingSize" ? 134217728 : 65536);
}

/**
 * The start of plan(): each output with a declared shape, in spec order, has its shape computed
 * and checked (a list of non-negative integers of the declared rank); a given output must have
 * it, an output left out is set to it. Returns the code of the plan's outputShapes record.
 */
function outputChecks(cx: AssignmentContext, lines: string[]): void {
  const { g, model, valid } = cx;
  const k = model.kernel;
  const name = k.spec.name;
  const inputIds = new Set(k.spec.inputs.map((i) => i.name));
  const shaped = k.spec.outputs.filter((o) => k.outputShapes.has(o.name));
  // With an output that may be absent, the record is filled as the outputs are checked.
  const conditional = shaped.some((o) => !valid.tensors.get(o.name)!.required);
  if (conditional) lines.push(`    const shapes${ty(": Record<string, readonly number[]>")} = {};`);
  const entries: string[] = [];
  shaped.forEach((o, j) => {
    const se = k.outputShapes.get(o.name)!;
    const slot = valid.tensors.get(o.name)!;
    const t = `this.t${slot.index}`;
    const ind = slot.required ? "    " : "      ";
    if (!slot.required) lines.push(`    if (${t} !== null) {`);
    const x: Code = g.expr(se.texpr, g.top, se);
    let value = x.code;
    if (x.value === undefined && !x.read) {
      const what = `the shape of output \`${o.name}\``;
      lines.push(`${ind}let o${j}${ty(": unknown")} = undefined;`, `${ind}try {`, `${ind}  o${j} = ${x.code};`);
      lines.push(`${ind}} catch (e) {`, `${ind}  $evalFail(e, ${q(name)}, ${q(what)});`, `${ind}}`);
      value = `o${j}`;
    }
    const h = `h${j}`;
    // The shape of a tensor validation fixed (present, of its declared rank) was checked when the call
    // was read: a list of non-negative integers of that rank, so it needs no check here.
    const leaf = se.texpr.k === "leaf" && se.texpr.leaf.ns === "shapes" ? valid.tensors.get(se.texpr.leaf.name) : undefined;
    const checked = x.read && leaf !== undefined && leaf.required && !leaf.filled && (o.rank === undefined || leaf.rank === o.rank);
    // The message of a shape $isShape refuses names the expression and the attributes and dimensions it read.
    const rank = o.rank ?? -1;
    const refused = `$badShape(${value}, ${rank}, ${q(name)}, ${q(o.name)}, ${q(se.source.text)}, ${g.reads(se, g.top)})`;
    lines.push(`${ind}const ${h} = ${checked ? value : `$isShape(${value}, ${rank}) ? ${value} : ${refused}`};`);
    const bad = (given: string): string => `$badOutput(${q(name)}, ${q(o.name)}, ${given}.shape, ${h}, ${q(se.source.text)})`;
    if (inputIds.has(o.name)) {
      const u = valid.aliasIndex.get(o.name);
      if (u !== undefined) lines.push(`${ind}if (this.u${u} !== null && !$same(this.u${u}.shape, ${h})) ${bad(`this.u${u}`)};`);
    } else if (slot.filled) {
      const param = k.spec.typeConstraints.some((tc) => tc.name === slot.dtype);
      const dtype = param ? cx.facts.dtypes[slot.dtype]! : slot.dtype;
      lines.push(`${ind}if (${t} === null) ${t} = { shape: ${h}, dtype: ${q(dtype)}, n: $product(${h}) };`);
      lines.push(`${ind}else if (!$same(${t}.shape, ${h})) ${bad(t)};`);
    } else {
      // An optional output is read where the call gives it (inside the `!== null` test), never
      // through the context's shape fields, which are read for every call.
      const given = slot.required ? g.shapeOf(o.name) : `${t}${ty("!")}.shape`;
      lines.push(`${ind}if (!$same(${given}, ${h})) ${bad(`${t}${ty("!")}`)};`);
    }
    if (conditional) lines.push(`${ind}shapes[${q(o.name)}] = ${h};`);
    if (!slot.required) lines.push(`    }`);
    entries.push(`${q(o.name)}: ${h}`);
  });
  if (!conditional) lines.push(`    const shapes = { ${entries.join(", ")} };`);
}

/**
 * Generates one dtype assignment's context type and functions (its plan() and everything it calls),
 * and the expression that makes its context (an object literal of plan0's locals).
 */
export function generateAssignment(
  model: KernelModel,
  a: AssignmentModel,
  cls: string,
  call: ValidatedCall,
  consts: string[],
  values: Map<string, string> = new Map(),
): { text: string; context: string } {
  const k = model.kernel;
  const name = k.spec.name;

  // Strings repeated across error paths (message prefixes) become module constants.
  const pool = new Map<string, string>();
  // A prefix is built on the longest pooled prefix that ends a quoted name (`…\``), or else on the
  // first such prefix ("Kernel: variant `v`"), so each message prefix spells its kernel and variant once.
  const sc = (text: string): string => {
    let n = pool.get(text);
    if (!n) {
      const ends: number[] = [];
      for (let i = text.indexOf("`"), open = true; i >= 0; i = text.indexOf("`", i + 1), open = !open) if (!open) ends.push(i + 1);
      const inner = ends.filter((e) => e < text.length);
      const pooled = inner.filter((e) => pool.has(text.slice(0, e)));
      const cut = pooled.length ? pooled[pooled.length - 1]! : inner[0];
      const base = cut === undefined ? undefined : sc(text.slice(0, cut));
      n = `${cls}S${pool.size}`;
      pool.set(text, n);
      consts.push(`const ${n} = ${base === undefined ? q(text) : `${base} + ${q(text.slice(cut))}`};`);
    }
    return n;
  };
  // `values` is the module's (a constant another kernel declared earlier is reused).
  let valueCount = 0;
  const konst = (code: string, type: string): string => {
    let n = values.get(code);
    if (!n) {
      n = `${cls}V${valueCount++}`;
      values.set(code, n);
      consts.push(`const ${n}${ty(`: ${type}`)} = ${code};`);
    }
    return n;
  };
  const g = new AssignmentGen(k, a.facts, call, konst);
  let shared = sharedFunctions.get(consts);
  if (!shared) sharedFunctions.set(consts, (shared = new Map()));
  const cx: AssignmentContext = {
    model,
    facts: a.facts,
    g,
    valid: call,
    sc,
    konst,
    cls,
    consts,
    shared,
    passMethods: new Map(),
    keyReads: new Map(),
  };
  const lines: string[] = [];
  const checks = g.scoped(() => {
    const out: string[] = [];
    outputChecks(cx, out);
    return out;
  });
  if (checks.temps) lines.push(checks.temps.replace(/\n$/, ""));
  lines.push(...checks.body);
  for (const c of k.when) {
    const cond = g.condMethod(c, g.top);
    lines.push(`    if (!${cond.holds}) $fail("contract", ${q(`${name}: condition \`${c.source.text}\` failed: `)} + ${cond.why});`);
  }
  // Variants in selection order; one without conditions always fits, and the ones after it never run.
  const rejected: string[] = [];
  // Variant tests: a condition several variants test is evaluated once per call, into a local.
  const tests: { conds: string[]; planCall: string }[] = [];
  const unconditional = a.variants.some((vm, vi) => {
    const v: CheckedVariant = vm.variant;
    const venv = g.env(g.top, deriveEnv(k, v), new Set(v.derive.keys()));
    const conds = v.when.map((c) => g.condMethod(c, venv));
    const plan = g.scoped(() => planBody(cx, vm, vi, venv));
    g.method(`p${vi}(shapes${ty(": Readonly<Record<string, readonly number[]>>")})${ty(": Plan")}`, plan.temps + plan.body.join("\n"));
    const planCall = `this.p${vi}(shapes)`;
    tests.push({ conds: conds.map((c) => c.holds), planCall });
    if (conds.length === 0) return true;
    // Why the variant was rejected (only asked when no variant fits): its first condition that does not hold.
    g.method(
      `r${vi}()${ty(": string")}`,
      [...conds.slice(0, -1).map((c) => `    if (!${c.holds}) return ${c.why};`), `    return ${conds[conds.length - 1]!.why};`].join("\n"),
    );
    rejected.push(`${q(`${v.id}: `)} + this.r${vi}()`);
    return false;
  });
  const uses = new Map<string, number>();
  for (const t of tests) for (const c of t.conds) uses.set(c, (uses.get(c) ?? 0) + 1);
  const locals = new Map([...uses].filter(([, n]) => n > 1).map(([c], i) => [c, `v${i}`]));
  if (locals.size) lines.push(`    let ${[...locals.values()].map((l) => `${l}${ty(": boolean | undefined")}`).join(", ")};`);
  for (const t of tests) {
    const held = t.conds.map((c) => (locals.has(c) ? `(${locals.get(c)!} ??= ${c})` : c));
    lines.push(held.length ? `    if (${held.join(" && ")}) return ${t.planCall};` : `    return ${t.planCall};`);
  }
  if (!unconditional) {
    const pruned = model.prunedVariants.length ? `; not built for profile ${model.profile}: ${model.prunedVariants.join(", ")}` : "";
    lines.push(
      `    return $fail("no_variant", ${q(`${name}: no variant fits this call on profile ${model.profile}: `)} + ${rejected.length ? rejected.join(` + "; " + `) : `""`}${pruned ? ` + ${q(pruned)}` : ""});`,
    );
  }
  g.method(`plan()${ty(": Plan")}`, lines.join("\n"));
  return { text: g.classText(cls), context: g.contextLiteral() };
}
