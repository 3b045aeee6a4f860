/**
 * `env.wgsl.resourceDeclarations`: the WGSL text that declares a pass's bindings, generated from
 * checked data only. Every identifier and element type is validated here, so no spec text can
 * inject WGSL into a shader (the same discipline Ajv applies to the JavaScript it generates).
 */

import { boolElementTypeProblem } from "../check/bool-binding.js";
import { isWgslIdentifier, uniformStructName } from "../check/wgsl-names.js";
import type { F16Storage } from "../plan/f16-storage.js";

export { isWgslIdentifier, uniformStructName };

/** How a binding is bound: a read-write storage buffer, a read-only one, or the params uniform. */
export type BufferType = "storage" | "read-only-storage" | "uniform";

/** One field of a uniform struct: 4 bytes each, in declared order. */
export interface UniformField {
  readonly name: string;
  readonly type: "u32" | "i32" | "f32";
}

/** One binding of a pass, as the declarations generator needs it. */
export interface DeclBinding {
  readonly binding: number;
  readonly name: string;
  readonly type: BufferType;
  /** resolved WGSL element type for storage bindings, e.g. "f16", "vec4<f32>" */
  readonly elementType?: string;
  /** uniform struct fields in order */
  readonly fields?: readonly UniformField[];
  /**
   * The binding holds an ONNX bool tensor (1 byte per element): bound as u32 words of 4 elements,
   * its element type must be `u32` (BOOL_ELEMENT_TYPE), and it gets the bool helpers.
   */
  readonly bool?: boolean;
}

const SCALARS = ["f16", "f32", "i32", "u32"];

/** Every element type a storage binding may have: the four scalars and their 2-, 3- and 4-vectors. */
export const ELEMENT_TYPES: ReadonlySet<string> = new Set([...SCALARS, ...SCALARS.flatMap((s) => [2, 3, 4].map((n) => `vec${n}<${s}>`))]);

const UNIFORM_FIELD_TYPES: ReadonlySet<string> = new Set(["u32", "i32", "f32"]);

function checkIdentifier(name: unknown, what: string): string {
  if (typeof name !== "string" || !isWgslIdentifier(name)) {
    throw new Error(
      `${what} ${JSON.stringify(name)} is not a usable WGSL identifier (ASCII letters, digits and _, not a keyword or reserved word)`,
    );
  }
  return name;
}

/**
 * The WGSL text of env.wgsl.resourceDeclarations with f16 bindings in native form (the contract
 * before packed storage existed): `enable f16;` first when enableF16, and an f16 binding without it
 * is an error. Lines are joined by "\n" with no trailing newline. Throws a plain Error on any
 * identifier, element type, binding number or uniform field that is not valid.
 */
export function resourceDeclarations(bindings: readonly DeclBinding[], enableF16: boolean): string {
  const f16 = bindings.find((b) => b.type !== "uniform" && typeof b.elementType === "string" && b.elementType.includes("f16"));
  if (f16 && !enableF16)
    throw new Error(`binding ${f16.name} has element type ${String(f16.elementType)} but the shader does not enable f16`);
  const d = declareResources(bindings, "native", { enableF16 });
  return d.text;
}

/** How a storage binding's data is stored: an f16 form, or `bool` (bytes in u32 words). */
export type StorageForm = F16Storage | "bool";

/** A storage binding as the shader sees it: its declared element type and how it is stored. */
export interface StorageBinding {
  readonly name: string;
  /** The element type the spec gives (`f16`, `vec4<f16>`, `f32`, …; `u32` for a bool tensor). */
  readonly elementType: string;
  /** "packed" for an f16 binding on a profile without shader-f16, "bool" for a bool tensor, else "native". */
  readonly storage: StorageForm;
  /** The scalar to compute in: the element's scalar, f32 for packed f16, `bool` for a bool tensor. */
  readonly scalar: string;
  readonly access: "read" | "read_write";
}

/** An accessor helper left out because its name is taken. */
export interface WithheldHelper {
  /** Whose helper it is and what takes its name, e.g. "the accessor helper of binding `x`, but the pass's binding `load_x` has that name". */
  readonly why: string;
  /** The binding whose (WGSL) name to change so that the helper is declared. */
  readonly rename: string;
}

/** A pass's declarations with the f16 storage form applied, and the accessor helpers it may call. */
export interface Declarations {
  /** `enable f16;` when needed, then every binding's declaration (no helpers). */
  readonly text: string;
  /** The storage bindings by name, in binding order. */
  readonly storage: ReadonlyMap<string, StorageBinding>;
  /** Every accessor helper a template may call, by function name, in a fixed order. */
  readonly helpers: ReadonlyMap<string, string>;
  /**
   * The accessor helpers left out because their name is taken (by a binding, or by a helper of
   * another binding), by function name: why, and the binding to rename, for the error of a template
   * that calls one.
   */
  readonly withheld: ReadonlyMap<string, WithheldHelper>;
  /** The declarations followed by the helpers whose names are in `used` (in their fixed order). */
  withHelpers(used: ReadonlySet<string>): string;
}

/**
 * Declares a pass's bindings for one f16 storage form. In native form an f16 binding is
 * `array<f16>` (or `array<vecN<f16>>`) and `enable f16;` comes first; in packed form the same
 * bytes are `array<u32>` (f16, vec2<f16>) or `array<vec2<u32>>` (vec3<f16>, vec4<f16>). The
 * helpers read and write a binding in either form (docs/f16.md); `enableF16` forces the enable line
 * (a variant that requires shader-f16 may compute in f16 without any f16 binding). Throws a plain
 * Error on any identifier, element type, binding number or uniform field that is not valid.
 */
export function declareResources(
  bindings: readonly DeclBinding[],
  form: F16Storage,
  options: { readonly enableF16?: boolean } = {},
): Declarations {
  const lines: string[] = [];
  const names = new Set<string>();
  const numbers = new Set<number>();
  const storage = new Map<string, StorageBinding>();
  for (const b of bindings) {
    const name = checkIdentifier(b.name, "binding name");
    if (names.has(name)) throw new Error(`two bindings are named ${JSON.stringify(name)}`);
    names.add(name);
    if (!Number.isSafeInteger(b.binding) || b.binding < 0)
      throw new Error(`binding number ${String(b.binding)} of ${name} is not a non-negative integer`);
    if (numbers.has(b.binding)) throw new Error(`two bindings use @binding(${b.binding})`);
    numbers.add(b.binding);
    switch (b.type) {
      case "uniform":
        lines.push(...uniformLines(b, name, names));
        break;
      case "storage":
      case "read-only-storage": {
        const elem = b.elementType;
        if (typeof elem !== "string" || !ELEMENT_TYPES.has(elem)) {
          throw new Error(`element type ${JSON.stringify(elem)} of binding ${name} is not one of ${[...ELEMENT_TYPES].join(", ")}`);
        }
        const access = b.type === "storage" ? "read_write" : "read";
        if (b.bool) {
          const problem = boolElementTypeProblem(elem);
          if (problem) throw new Error(`binding ${name}: ${problem}`);
          storage.set(name, { name, elementType: elem, storage: "bool", scalar: "bool", access });
          const word = access === "read_write" ? "atomic<u32>" : "u32";
          lines.push(`@group(0) @binding(${b.binding}) var<storage, ${access}> ${name}: array<${word}>;`);
          break;
        }
        const packed = form === "packed" && scalarOf(elem) === "f16";
        storage.set(name, {
          name,
          elementType: elem,
          storage: packed ? "packed" : "native",
          scalar: packed ? "f32" : scalarOf(elem),
          access,
        });
        lines.push(`@group(0) @binding(${b.binding}) var<storage, ${access}> ${name}: array<${packed ? packedWordType(elem) : elem}>;`);
        break;
      }
      default:
        throw new Error(`binding ${name} has unknown buffer type ${JSON.stringify(b.type)}`);
    }
  }
  const nativeF16 = [...storage.values()].some((s) => s.storage === "native" && s.scalar === "f16");
  if (nativeF16 || options.enableF16) lines.unshift("enable f16;", "");
  const text = lines.join("\n");
  const { helpers, withheld } = accessorHelpers([...storage.values()], names);
  return {
    text,
    storage,
    helpers,
    withheld,
    withHelpers(used) {
      const picked = [...helpers.entries()].filter(([n]) => used.has(n)).map(([, t]) => t);
      return picked.length === 0 ? text : `${text}\n\n${picked.join("\n\n")}`;
    },
  };
}

/** The scalar of an element type: `f16` of `vec4<f16>`. */
function scalarOf(elem: string): string {
  const m = /^vec[234]<(\w+)>$/.exec(elem);
  return m ? m[1] : elem;
}

/** Lanes of an element type: 1 for a scalar, N for vecN. */
function widthOf(elem: string): number {
  const m = /^vec([234])</.exec(elem);
  return m ? Number(m[1]) : 1;
}

/** The u32 form of a packed f16 element: a scalar or vec2<f16> fits one u32 (a scalar shares it), vec3/vec4<f16> take vec2<u32> (vec3's array stride is 8 bytes). */
function packedWordType(elem: string): string {
  return widthOf(elem) <= 2 ? "u32" : "vec2<u32>";
}

/**
 * The accessor helpers of every storage binding, by name. Element indices count elements of the
 * binding's element type; the 2- and 4-element forms of a scalar binding take an even index. A
 * name that collides with a binding (or with a helper of another binding) is left out, withheld
 * with the reason (a template that calls it is an error naming the binding to rename).
 */
function accessorHelpers(
  bindings: readonly StorageBinding[],
  taken: ReadonlySet<string>,
): { helpers: Map<string, string>; withheld: Map<string, WithheldHelper> } {
  const all: [string, string, string][] = bindings.flatMap((b) =>
    helpersOf(b).map(([n, text]): [string, string, string] => [n, text, b.name]),
  );
  const owners = new Map<string, string[]>();
  for (const [n, , owner] of all) owners.set(n, [...(owners.get(n) ?? []), owner]);
  const helpers = new Map<string, string>();
  const withheld = new Map<string, WithheldHelper>();
  for (const [n, text] of all) {
    const of = owners.get(n)!;
    if (taken.has(n))
      withheld.set(n, {
        why: `the accessor helper of binding \`${of[0]}\`, but the pass's binding (or uniform struct type) \`${n}\` has that name`,
        rename: n,
      });
    else if (of.length > 1)
      withheld.set(n, {
        why: `the accessor helper of both bindings ${of.map((o) => `\`${o}\``).join(" and ")}`,
        rename: of[of.length - 1]!,
      });
    else helpers.set(n, text);
  }
  return { helpers, withheld };
}

/** The parameter and local names of the accessor helpers' bodies. */
const HELPER_LOCALS = ["i", "v", "bits", "word", "j", "h", "shift"] as const;

/** A placeholder for the binding's name in a helper body, replaced last (it is no identifier character). */
const BINDING = "\u0000";

/**
 * A helper function's text from its signature and body, written with `BINDING` where the binding is
 * named: a parameter or local that has the binding's own name (a binding called `i` or `v`) would
 * hide the binding inside the helper, so it becomes `name_` there; then the binding's name is put in.
 */
function helperFn(binding: string, name: string, sig: string, body: readonly string[]): [string, string] {
  let text = [`${sig} {`, ...body.map((l) => `  ${l}`), "}"].join("\n");
  for (const local of HELPER_LOCALS) if (local === binding) text = text.replace(new RegExp(`\\b${local}\\b`, "g"), `${local}_`);
  return [name, `fn ${name}${text.split(BINDING).join(binding)}`];
}

function helpersOf(b: StorageBinding): [string, string][] {
  if (b.storage === "bool") return boolHelpersOf(b);
  const n = BINDING;
  const w = widthOf(b.elementType);
  const packed = b.storage === "packed";
  const s = b.scalar;
  const vecOf = (k: number): string => (k === 1 ? s : `vec${k}<${s}>`);
  const value = vecOf(w);
  const fn = (name: string, sig: string, ...body: string[]): [string, string] =>
    helperFn(b.name, name.split(BINDING).join(b.name), sig, body);
  const out: [string, string][] = [];
  const write = b.access === "read_write";
  out.push(fn(`len_${n}`, "() -> u32", `return arrayLength(&${n})${packed && w === 1 ? " * 2u" : ""};`));
  if (!packed) {
    out.push(fn(`load_${n}`, `(i: u32) -> ${value}`, `return ${n}[i];`));
    if (write) out.push(fn(`store_${n}`, `(i: u32, v: ${value})`, `${n}[i] = v;`));
  } else if (w === 1) {
    out.push(fn(`load_${n}`, "(i: u32) -> f32", `return unpack2x16float(${n}[i >> 1u])[i & 1u];`));
    if (write) {
      out.push(
        fn(
          `store_${n}`,
          "(i: u32, v: f32)",
          "// Replaces one half of the word; the other half keeps its bits. Only the invocation that",
          "// owns both halves may call this (docs/f16.md).",
          "let shift = (i & 1u) * 16u;",
          `${n}[i >> 1u] = (${n}[i >> 1u] & ~(0xffffu << shift)) | ((pack2x16float(vec2<f32>(v, 0.0)) & 0xffffu) << shift);`,
        ),
      );
    }
  } else if (w === 2) {
    out.push(fn(`load_${n}`, "(i: u32) -> vec2<f32>", `return unpack2x16float(${n}[i]);`));
    if (write) out.push(fn(`store_${n}`, "(i: u32, v: vec2<f32>)", `${n}[i] = pack2x16float(v);`));
  } else {
    const get =
      w === 4
        ? "vec4<f32>(unpack2x16float(word.x), unpack2x16float(word.y))"
        : "vec3<f32>(unpack2x16float(word.x), unpack2x16float(word.y).x)";
    out.push(fn(`load_${n}`, `(i: u32) -> ${value}`, `let word = ${n}[i];`, `return ${get};`));
    const put =
      w === 4
        ? "vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw))"
        : "vec2<u32>(pack2x16float(v.xy), pack2x16float(vec2<f32>(v.z, 0.0)))";
    if (write) out.push(fn(`store_${n}`, `(i: u32, v: ${value})`, `${n}[i] = ${put};`));
  }
  if (w === 1) {
    // Two and four consecutive elements from an even index, and their raw bits.
    const idx = (k: number): string => (k === 0 ? "i" : `i + ${k}u`);
    if (!packed) {
      out.push(fn(`load2_${n}`, `(i: u32) -> ${vecOf(2)}`, `return ${vecOf(2)}(${n}[i], ${n}[i + 1u]);`));
      out.push(
        fn(`load4_${n}`, `(i: u32) -> ${vecOf(4)}`, `return ${vecOf(4)}(${[0, 1, 2, 3].map((k) => `${n}[${idx(k)}]`).join(", ")});`),
      );
      if (write) {
        out.push(fn(`store2_${n}`, `(i: u32, v: ${vecOf(2)})`, `${n}[i] = v.x;`, `${n}[i + 1u] = v.y;`));
        out.push(fn(`store4_${n}`, `(i: u32, v: ${vecOf(4)})`, ...["x", "y", "z", "w"].map((c, k) => `${n}[${idx(k)}] = v.${c};`)));
      }
    } else {
      out.push(fn(`load2_${n}`, "(i: u32) -> vec2<f32>", `return unpack2x16float(${n}[i >> 1u]);`));
      out.push(
        fn(
          `load4_${n}`,
          "(i: u32) -> vec4<f32>",
          "let j = i >> 1u;",
          `return vec4<f32>(unpack2x16float(${n}[j]), unpack2x16float(${n}[j + 1u]));`,
        ),
      );
      if (write) {
        out.push(fn(`store2_${n}`, "(i: u32, v: vec2<f32>)", `${n}[i >> 1u] = pack2x16float(v);`));
        out.push(
          fn(
            `store4_${n}`,
            "(i: u32, v: vec4<f32>)",
            "let j = i >> 1u;",
            `${n}[j] = pack2x16float(v.xy);`,
            `${n}[j + 1u] = pack2x16float(v.zw);`,
          ),
        );
      }
    }
    if (s === "f16" || packed) {
      out.push(
        fn(`raw2_${n}`, "(i: u32) -> u32", packed ? `return ${n}[i >> 1u];` : `return bitcast<u32>(vec2<f16>(${n}[i], ${n}[i + 1u]));`),
      );
      if (write) {
        out.push(
          packed
            ? fn(`store_raw2_${n}`, "(i: u32, bits: u32)", `${n}[i >> 1u] = bits;`)
            : fn(`store_raw2_${n}`, "(i: u32, bits: u32)", "let h = bitcast<vec2<f16>>(bits);", `${n}[i] = h.x;`, `${n}[i + 1u] = h.y;`),
        );
      }
    } else {
      out.push(fn(`raw2_${n}`, "(i: u32) -> vec2<u32>", `return vec2<u32>(bitcast<u32>(${n}[i]), bitcast<u32>(${n}[i + 1u]));`));
      if (write)
        out.push(
          fn(`store_raw2_${n}`, "(i: u32, bits: vec2<u32>)", `${n}[i] = bitcast<${s}>(bits.x);`, `${n}[i + 1u] = bitcast<${s}>(bits.y);`),
        );
    }
  } else if (w !== 3) {
    // The raw bits of one vector element: vec2<f16> is one u32, vec4<f16> two; 32-bit lanes one each.
    const raw = s === "f16" || packed ? (w === 2 ? "u32" : "vec2<u32>") : `vec${w}<u32>`;
    out.push(fn(`raw_${n}`, `(i: u32) -> ${raw}`, packed ? `return ${n}[i];` : `return bitcast<${raw}>(${n}[i]);`));
    if (write)
      out.push(fn(`store_raw_${n}`, `(i: u32, bits: ${raw})`, packed ? `${n}[i] = bits;` : `${n}[i] = bitcast<${b.elementType}>(bits);`));
  }
  return out;
}

/**
 * The helpers of a bool binding: element i is byte i % 4 of word i / 4, true when nonzero. A
 * read-write binding is `array<atomic<u32>>`: `store_NAME` clears the element's byte with
 * atomicAnd and sets its low bit with atomicOr, so invocations writing different elements of one
 * word never lose each other's bytes (the other three bytes, padding included, keep their bits);
 * `store4_NAME` writes a whole word with atomicStore, for an invocation that owns the word.
 */
function boolHelpersOf(b: StorageBinding): [string, string][] {
  const n = BINDING;
  const write = b.access === "read_write";
  const word = (index: string): string => (write ? `atomicLoad(&${n}[${index}])` : `${n}[${index}]`);
  const fn = (name: string, sig: string, ...body: string[]): [string, string] =>
    helperFn(b.name, name.split(BINDING).join(b.name), sig, body);
  const out: [string, string][] = [
    fn(`len_${n}`, "() -> u32", `return arrayLength(&${n}) * 4u;`),
    fn(`load_${n}`, "(i: u32) -> bool", `return ((${word("i >> 2u")} >> ((i & 3u) * 8u)) & 0xffu) != 0u;`),
    fn(
      `load4_${n}`,
      "(i: u32) -> vec4<bool>",
      `return ((vec4<u32>(${word("i >> 2u")}) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu)) != vec4<u32>(0u);`,
    ),
  ];
  if (write) {
    out.push(
      fn(
        `store_${n}`,
        "(i: u32, v: bool)",
        "// Changes only element i's byte, atomically: other invocations may write the word's other bytes.",
        `atomicAnd(&${n}[i >> 2u], ~(0xffu << ((i & 3u) * 8u)));`,
        "if (v) {",
        `  atomicOr(&${n}[i >> 2u], 1u << ((i & 3u) * 8u));`,
        "}",
      ),
      fn(
        `store4_${n}`,
        "(i: u32, v: vec4<bool>)",
        "// Writes elements i .. i + 3 (i a multiple of 4) as one word: only the invocation that owns the word may call this.",
        `atomicStore(&${n}[i >> 2u], dot(select(vec4<u32>(0u), vec4<u32>(1u, 0x100u, 0x10000u, 0x1000000u), v), vec4<u32>(1u)));`,
      ),
    );
  }
  return out;
}

function uniformLines(b: DeclBinding, name: string, names: Set<string>): string[] {
  const fields = b.fields;
  if (!fields || fields.length === 0) throw new Error(`uniform binding ${name} has no fields (WGSL structs cannot be empty)`);
  const struct = checkIdentifier(uniformStructName(name), "uniform struct name");
  if (names.has(struct)) throw new Error(`uniform struct name ${struct} collides with a binding name`);
  names.add(struct);
  const fieldNames = new Set<string>();
  const lines = [`struct ${struct} {`];
  for (const f of fields) {
    const fname = checkIdentifier(f.name, `field name of uniform ${name}:`);
    if (fieldNames.has(fname)) throw new Error(`uniform ${name} has two fields named ${fname}`);
    fieldNames.add(fname);
    if (!UNIFORM_FIELD_TYPES.has(f.type))
      throw new Error(`field ${fname} of uniform ${name} has type ${JSON.stringify(f.type)}; only u32, i32 and f32 are allowed`);
    lines.push(`  ${fname}: ${f.type},`);
  }
  lines.push("}", `@group(0) @binding(${b.binding}) var<uniform> ${name}: ${struct};`);
  return lines;
}

/** Byte size of the uniform struct (fields 4 bytes each, rounded up to 16; at least 16). */
export function uniformSize(fields: readonly UniformField[]): number {
  return Math.max(16, Math.ceil((fields.length * 4) / 16) * 16);
}
