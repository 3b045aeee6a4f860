/**
 * `env.wgsl.resourceDeclarations`: the WGSL text that declares a pass's bindings, generated from
 * checked data only. Every identifier and element type is validated here, so no spec text can
 * inject WGSL into a shader (the same discipline Ajv applies to the JavaScript it generates).
 */

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
}

/** WGSL keywords (WGSL spec §15.2): never valid identifiers. */
const KEYWORDS = [
  "alias",
  "break",
  "case",
  "const",
  "const_assert",
  "continue",
  "continuing",
  "default",
  "diagnostic",
  "discard",
  "else",
  "enable",
  "false",
  "fn",
  "for",
  "if",
  "let",
  "loop",
  "override",
  "requires",
  "return",
  "struct",
  "switch",
  "true",
  "var",
  "while",
];

/** WGSL reserved words (WGSL spec §15.3): never valid identifiers. */
const RESERVED = [
  "NULL",
  "Self",
  "abstract",
  "active",
  "alignas",
  "alignof",
  "as",
  "asm",
  "asm_fragment",
  "async",
  "attribute",
  "auto",
  "await",
  "become",
  "binding_array",
  "cast",
  "catch",
  "class",
  "co_await",
  "co_return",
  "co_yield",
  "coherent",
  "column_major",
  "common",
  "compile",
  "compile_fragment",
  "concept",
  "const_cast",
  "consteval",
  "constexpr",
  "constinit",
  "crate",
  "debugger",
  "decltype",
  "delete",
  "demote",
  "demote_to_helper",
  "do",
  "dynamic_cast",
  "enum",
  "explicit",
  "export",
  "extends",
  "extern",
  "external",
  "fallthrough",
  "filter",
  "final",
  "finally",
  "friend",
  "from",
  "fxgroup",
  "get",
  "goto",
  "groupshared",
  "highp",
  "impl",
  "implements",
  "import",
  "inline",
  "instanceof",
  "interface",
  "layout",
  "lowp",
  "macro",
  "macro_rules",
  "match",
  "mediump",
  "meta",
  "mod",
  "module",
  "move",
  "mut",
  "mutable",
  "namespace",
  "new",
  "nil",
  "noexcept",
  "noinline",
  "nointerpolation",
  "non_coherent",
  "noncoherent",
  "noperspective",
  "null",
  "nullptr",
  "of",
  "operator",
  "package",
  "packoffset",
  "partition",
  "pass",
  "patch",
  "pixelfragment",
  "precise",
  "precision",
  "premerge",
  "priv",
  "protected",
  "pub",
  "public",
  "readonly",
  "ref",
  "regardless",
  "register",
  "reinterpret_cast",
  "require",
  "resource",
  "restrict",
  "self",
  "set",
  "shared",
  "sizeof",
  "smooth",
  "snorm",
  "static",
  "static_assert",
  "static_cast",
  "std",
  "subroutine",
  "super",
  "target",
  "template",
  "this",
  "thread_local",
  "throw",
  "trait",
  "try",
  "type",
  "typedef",
  "typeid",
  "typename",
  "typeof",
  "union",
  "unless",
  "unorm",
  "unsafe",
  "unsized",
  "use",
  "using",
  "varying",
  "virtual",
  "volatile",
  "wgsl",
  "where",
  "with",
  "writeonly",
  "yield",
];

/**
 * Predeclared type names. WGSL lets a module-scope declaration shadow them, but a binding named
 * `f32` would break every `array<f32>` after it, so kernelc refuses them too.
 */
const PREDECLARED_TYPES = [
  "bool",
  "f16",
  "f32",
  "i32",
  "u32",
  "vec2",
  "vec3",
  "vec4",
  "array",
  "atomic",
  "ptr",
  "sampler",
  "sampler_comparison",
  "mat2x2",
  "mat2x3",
  "mat2x4",
  "mat3x2",
  "mat3x3",
  "mat3x4",
  "mat4x2",
  "mat4x3",
  "mat4x4",
  ...["vec2", "vec3", "vec4", "mat2x2", "mat2x3", "mat2x4", "mat3x2", "mat3x3", "mat3x4", "mat4x2", "mat4x3", "mat4x4"].flatMap((base) =>
    ["f", "h", "i", "u"].map((s) => base + s),
  ),
];

const FORBIDDEN = new Set<string>([...KEYWORDS, ...RESERVED, ...PREDECLARED_TYPES]);

const SCALARS = ["f16", "f32", "i32", "u32"];

/** Every element type a storage binding may have: the four scalars and their 2-, 3- and 4-vectors. */
export const ELEMENT_TYPES: ReadonlySet<string> = new Set([...SCALARS, ...SCALARS.flatMap((s) => [2, 3, 4].map((n) => `vec${n}<${s}>`))]);

const UNIFORM_FIELD_TYPES: ReadonlySet<string> = new Set(["u32", "i32", "f32"]);

/**
 * Whether `name` is an identifier kernelc may paste into WGSL: ASCII letters, digits and `_`, not
 * starting with a digit, not `_` alone, not starting with `__` (WGSL reserves those), and not a
 * keyword, reserved word or predeclared type name.
 */
export function isWgslIdentifier(name: string): boolean {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return false;
  if (name === "_" || name.startsWith("__")) return false;
  return !FORBIDDEN.has(name);
}

function checkIdentifier(name: unknown, what: string): string {
  if (typeof name !== "string" || !isWgslIdentifier(name)) {
    throw new Error(
      `${what} ${JSON.stringify(name)} is not a usable WGSL identifier (ASCII letters, digits and _, not a keyword or reserved word)`,
    );
  }
  return name;
}

/** The struct type name of a uniform binding: the var name with its first letter upper-cased. */
export function uniformStructName(varName: string): string {
  return varName.charAt(0).toUpperCase() + varName.slice(1);
}

/**
 * The WGSL text of env.wgsl.resourceDeclarations, exactly per the contract (enable f16 first when
 * enableF16). Lines are joined by "\n" with no trailing newline. Throws a plain Error on any
 * identifier, element type, binding number or uniform field that is not valid.
 */
export function resourceDeclarations(bindings: readonly DeclBinding[], enableF16: boolean): string {
  const lines: string[] = [];
  if (enableF16) lines.push("enable f16;", "");
  const names = new Set<string>();
  const numbers = new Set<number>();
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
        if (elem.includes("f16") && !enableF16)
          throw new Error(`binding ${name} has element type ${elem} but the shader does not enable f16`);
        const access = b.type === "storage" ? "read_write" : "read";
        lines.push(`@group(0) @binding(${b.binding}) var<storage, ${access}> ${name}: array<${elem}>;`);
        break;
      }
      default:
        throw new Error(`binding ${name} has unknown buffer type ${JSON.stringify(b.type)}`);
    }
  }
  return lines.join("\n");
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
