/**
 * The words WGSL keeps for itself, and whether a name from a spec (a binding's variable name, a
 * uniform field) can be pasted into WGSL as an identifier. The check reports a name that cannot at
 * its place in the spec (reserved_name); the declarations generator (emit/wgsl-declarations.ts)
 * refuses one all the same.
 */

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

const KEYWORD_SET: ReadonlySet<string> = new Set(KEYWORDS);
const RESERVED_SET: ReadonlySet<string> = new Set(RESERVED);
const PREDECLARED_SET: ReadonlySet<string> = new Set(PREDECLARED_TYPES);

/**
 * Why `name` cannot be a WGSL identifier kernelc writes, as a phrase ("a WGSL keyword"), or
 * undefined when it can: ASCII letters, digits and `_`, not starting with a digit, not `_` alone,
 * not starting with `__` (WGSL reserves those), and not a keyword, reserved word or predeclared type name.
 */
export function wgslNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return "not an identifier (ASCII letters, digits and `_`)";
  if (name === "_") return "WGSL's placeholder `_`";
  if (name.startsWith("__")) return "a name WGSL reserves (it starts with `__`)";
  if (KEYWORD_SET.has(name)) return "a WGSL keyword";
  if (RESERVED_SET.has(name)) return "a WGSL reserved word";
  if (PREDECLARED_SET.has(name)) return "a WGSL predeclared type";
  return undefined;
}

/** Whether `name` is an identifier kernelc may paste into WGSL (wgslNameProblem finds nothing). */
export function isWgslIdentifier(name: string): boolean {
  return wgslNameProblem(name) === undefined;
}

/** The struct type name of a uniform binding: the var name with its first letter upper-cased. */
export function uniformStructName(varName: string): string {
  return varName.charAt(0).toUpperCase() + varName.slice(1);
}
