/**
 * Hostile names in every place a spec or the config names something (the kernel, its tensors,
 * attributes, type parameters, tunables, derive entries, bindings, WGSL names, uniform fields,
 * variants, passes, a template's variables, instances, profiles; and the free text of ONNX names,
 * pass names and attribute string values): JavaScript and TypeScript reserved words, Object's
 * members (`__proto__`, `constructor`, `toString`, `then`), the generated module's own names
 * (`K0`, `plan0`, `planners`, `Plan`), WGSL keywords and reserved words, words of the expression
 * language and the template context, names differing only by case from a neighbour, the longest
 * names allowed and one past them, characters an identifier cannot hold, and — in free text —
 * quotes, backslashes, line breaks of JavaScript and WGSL, `*\/`, `${`, bidirectional and
 * invisible characters and lone surrogates, each carrying a payload that would compile if it
 * broke out of its string or comment.
 *
 * Every name either builds, in both emits, into modules that compile under the strict consumer's
 * flags (the .ts modules, the .d.ts files of `--emit js`, and a consumer calling the planner with
 * the name as a key) and plan a valid call in plain Node (the .js modules), or is refused at lint
 * with a located diagnostic that says how to fix it — never an internal error, an `eval_error`
 * naming nothing, or generated code that does not compile. No payload leaves its literal.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import type { Diagnostic } from "../../src/core/diagnostic.js";
import type { EmitKind } from "../../src/emit/code-writer.js";
import { loadConfig } from "../../src/plan/config.js";
import { STRICT_CONSUMER, typeErrors } from "./strict-consumer.js";
import { writeProject } from "./temp-project.js";

/** The places a name can be put, each with its name in the base project. */
const BASE = {
  kernel: "Kern",
  input: "xT",
  output: "yT",
  typeParam: "T",
  attribute: "alpha",
  tunable: "WG",
  derive: "size",
  binding: "xb",
  wgslName: "yv",
  field: "count",
  variant: "even",
  pass: "main",
  templateVar: "wg",
  instance: "small",
  profile: "hostile",
  onnx: "X",
  passName: "Kern.Even",
  value: "fast",
} as const;
export type Place = keyof typeof BASE;
export type Names = Record<Place, string>;

/** Each place's neighbour in the base project: the name a case-only twin differs from. */
const NEIGHBOUR: Partial<Record<Place, string>> = {
  kernel: BASE.kernel, // a second kernel
  input: BASE.output,
  output: BASE.input,
  attribute: "beta",
  derive: "n",
  binding: "yb",
  wgslName: "xb",
  field: "alpha",
  variant: "plain",
  pass: "main",
  instance: "large",
  profile: "core",
  passName: "Kern.Plain",
  value: "slow",
};

/** A JSON object's text from entries whose values are JSON text already (keys such as `__proto__` stay own keys). */
const obj = (entries: readonly (readonly [string, string])[]): string =>
  `{ ${entries.map(([k, v]) => `${JSON.stringify(k)}: ${v}`).join(", ")} }`;
const q = (s: string): string => JSON.stringify(s);

/** The spec of a kernel with `n`'s names. */
function specText(n: Names): string {
  const shape = `shapes.${n.input}`;
  return obj([
    ["domain", q("test")],
    ["name", q(n.kernel)],
    ["sinceVersion", "1"],
    [
      "inputs",
      obj([
        [
          n.input,
          obj([
            ["onnx", q(n.onnx)],
            ["dtype", q(n.typeParam)],
            ["rank", "1"],
          ]),
        ],
      ]),
    ],
    [
      "outputs",
      obj([
        [
          n.output,
          obj([
            ["onnx", q("Y")],
            ["dtype", q(n.typeParam)],
            ["rank", "1"],
            ["shape", q(shape)],
          ]),
        ],
      ]),
    ],
    [
      "attributes",
      obj([
        [n.attribute, obj([["default", "1.5"]])],
        ["beta", obj([["default", "0.5"]])],
        ["mode", obj([["default", q(n.value)]])],
      ]),
    ],
    ["attributeConstraints", obj([["mode", obj([["values", `[${q(n.value)}, ${q(NEIGHBOUR.value!)}]`]])]])],
    ["typeConstraints", obj([[n.typeParam, `[${q("float32")}]`]])],
    [
      "tunables",
      obj([
        [
          n.tunable,
          obj([
            ["default", "64"],
            ["values", "[64, 128]"],
          ]),
        ],
      ]),
    ],
    [
      "derive",
      obj([
        ["n", q(`dim(${shape}, 0)`)],
        [n.derive, q(`tunables.${n.tunable}`)],
        ["groups", q(`ceilDiv(n, ${n.derive})`)],
        ["fits", q(`groups <= device.limits.maxComputeWorkgroupsPerDimension`)],
        ["sameIo", q(`sameShape(shapes.${n.output}, ${shape})`)],
      ]),
    ],
    ["when", `[${q("sameIo")}, ${q("fits")}]`],
    [
      "bindings",
      obj([
        [
          n.binding,
          obj([
            ["arg", q(n.input)],
            ["elementType", q("f32")],
          ]),
        ],
        [
          "yb",
          obj([
            ["arg", q(n.output)],
            ["name", q(n.wgslName)],
            ["elementType", q("f32")],
          ]),
        ],
        [
          "params",
          obj([
            [
              "struct",
              `[${obj([
                ["name", q(n.field)],
                ["type", q("u32")],
                ["value", q("n")],
              ])}, ${obj([
                ["name", q("alpha")],
                ["type", q("f32")],
                ["value", q(`attrs.${n.attribute} + attrs.beta`)],
              ])}]`,
            ],
          ]),
        ],
      ]),
    ],
    [
      "variants",
      `[${[
        [n.variant, "10", q('n % 2 == 0 and attrs.mode != ""'), n.pass, n.passName],
        [NEIGHBOUR.variant!, "0", q("true"), "main", NEIGHBOUR.passName!],
      ]
        .map(([id, priority, when, pass, name]) =>
          obj([
            ["id", q(id!)],
            ["priority", priority!],
            ["when", `[${when}]`],
            [
              "passes",
              `[${obj([
                ["id", q(pass!)],
                ["name", q(name!)],
                ["shader", q("k.wgsl.jinja")],
                ["bindings", `[${q(n.binding)}, ${q("yb")}, ${q("params")}]`],
                ["dispatch", obj([["x", q("groups")]])],
              ])}]`,
            ],
          ]),
        )
        .join(", ")}]`,
    ],
  ]);
}

/** The template: it sets a variable to the tunable, reads a derive entry, both tensors' helpers and the uniform fields. */
function templateText(n: Names): string {
  return [
    "{{ env.wgsl.resourceDeclarations }}",
    `{% set ${n.templateVar} = tunables.${n.tunable} %}`,
    `const WG = {{ ${n.templateVar} }}u;`,
    `const SIZE = {{ ${n.derive} }}u;`,
    "",
    "@compute @workgroup_size(WG)",
    "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
    "  let i = gid.x;",
    `  if (i >= params.${n.field} || SIZE == 0u) {`,
    "    return;",
    "  }",
    `  store_${n.wgslName}(i, load_${n.binding}(i) * params.alpha);`,
    "}",
    "",
  ].join("\n");
}

/** The config: the profile, and (`instances`) two instances of the kernel. */
function configText(n: Names, instances: boolean): string {
  const instance = (name: string, size: number) =>
    obj([
      ["name", q(name)],
      ["values", obj([[`dim(shapes.${n.input}, 0)`, String(size)]])],
    ]);
  return obj([
    ["defineProfiles", `[${obj([["name", q(n.profile)]])}]`],
    ["profiles", `[${q(n.profile)}]`],
    ...(instances ? [["instances", obj([[n.kernel, `[${instance(n.instance, 8)}, ${instance(NEIGHBOUR.instance!, 64)}]`]])] as const] : []),
  ]);
}

// --- The hostile names, by class ---------------------------------------------------------------

/** A payload that would compile as a statement if it left its string or comment. */
const PWN = "globalThis.pwned = 1";
const swapCase = (s: string): string => [...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join("");

/** Names an identifier place can hold (or refuse by name), by class. */
const IDENTIFIER_CLASSES: Record<string, readonly string[]> = {
  jsReserved: ["class", "default", "await", "enum", "yield", "new", "function", "null", "delete", "interface"],
  objectMember: ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "then", "__defineGetter__"],
  generatedName: [
    "K0",
    "plan0",
    "planners",
    "Plan",
    "TensorDesc",
    "KernelCallError",
    "PROFILE",
    "shapes",
    "o",
    "t0",
    "call",
    "arguments",
    "undefined",
    "NaN",
  ],
  wgslWord: ["fn", "let", "f32", "_", "__x", "self", "NULL", "var", "array", "main", "params", "gid"],
  templateWord: ["in", "not", "None", "true", "attrs", "dim", "env", "range", "loop", "tunables"],
  // 64 characters (the most an identifier may have), and 65.
  long: ["L" + "o".repeat(61) + "ng", "Q" + "_".repeat(63), "T" + "o".repeat(64)],
  // Names of what kernelc makes of others, one per place (the place's index): the call type
  // `<Kernel>Call`, the dispatcher's numbered names, a uniform's struct type `Params`, and the
  // accessor helpers `store_yv` and `load_xb` of the bindings `yv` and `xb`, which the template calls.
  mangled: ["KernCall", "K0A0", "xT_", "T0", "K0A0_p0", "WG_", "K0A0_d0", "store_yv", "load_xb", "Params", "K0A0V0", "main_", "load_xb"],
  badCharacters: ['a"b', "a\nb", "a*/b", "a${b}", "a\u200bb", "\u202eab", "a\ud800", "\u00e9", "1a", "a-b", ""],
};

/** Free text: each carries the payload past the end of a string, a comment or a line. */
const FREE_TEXT: readonly string[] = [
  `"; ${PWN}; //`,
  `'; ${PWN}; //`,
  `\`; ${PWN}; //`,
  `\${${PWN}}`,
  `*/ ${PWN}; /*`,
  `\\"; ${PWN}; //`,
  `a\n${PWN}; //`,
  `a\r${PWN}; //`,
  `a\u2028${PWN}; //`,
  `a\u2029${PWN}; //`,
  `a\u0085${PWN}; //`,
  `</script><!-- ${PWN}`,
  `\u202e${PWN}\u2066`,
  `a\u200b\ufeff${PWN}`,
  `a\ud800${PWN}\udfff`,
  `\u0000${PWN}`,
  "__proto__",
  "constructor",
  "x".repeat(128),
];

/** Names of profiles and instances (their own character sets): classes of what those allow and refuse. */
const FOLDER_NAMES: readonly string[] = [
  "constructor",
  "__proto__",
  "prototype",
  "tostring",
  "then",
  "class",
  "default",
  "shaders",
  "index",
  "node_modules",
  "con",
  "a-b",
  "a.b",
  "..",
  "1",
  "p".repeat(64),
  "p".repeat(65),
  "Core",
  "a/b",
  'a"b',
  "a b",
];

/** Which classes a place takes: identifiers, free text, or folder-like names. */
const IDENTIFIER_PLACES: readonly Place[] = [
  "kernel",
  "input",
  "output",
  "typeParam",
  "attribute",
  "tunable",
  "derive",
  "binding",
  "wgslName",
  "field",
  "variant",
  "pass",
  "templateVar",
];
const FREE_TEXT_PLACES: readonly Place[] = ["onnx", "passName", "value"];
const FOLDER_PLACES: readonly Place[] = ["profile", "instance"];

export interface Case {
  readonly place: Place;
  readonly name: string;
  /** A second kernel named as the base one (the case-only twin of a kernel name). */
  readonly twin?: boolean;
}

/** A name of each class per identifier place (rotating through the class), every free text, every folder name. */
function cases(): Case[] {
  const out: Case[] = [];
  IDENTIFIER_PLACES.forEach((place, p) => {
    for (const names of Object.values(IDENTIFIER_CLASSES)) out.push({ place, name: names[p % names.length]! });
    const neighbour = NEIGHBOUR[place];
    if (neighbour !== undefined) out.push({ place, name: swapCase(neighbour), twin: place === "kernel" });
  });
  for (const place of FREE_TEXT_PLACES) {
    for (const name of FREE_TEXT) out.push({ place, name });
    const neighbour = NEIGHBOUR[place];
    if (neighbour !== undefined) out.push({ place, name: swapCase(neighbour) });
  }
  for (const place of FOLDER_PLACES) for (const name of FOLDER_NAMES) out.push({ place, name });
  return out;
}

/** A case as messages and the pinned refusals show it: the place and the name as an ASCII JSON string. */
const show = (c: Case): string =>
  `${c.place} ${JSON.stringify(c.name).replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`)}`;

// --- Building ----------------------------------------------------------------------------------

export interface Built {
  readonly c: Case;
  readonly names: Names;
  readonly root: string;
  readonly result: CompileResult;
}

const roots: string[] = [];

/** Removes the projects `build` wrote (a test file's afterAll). */
export function removeHostileProjects(): void {
  for (const d of roots.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/** Writes the project of case `c` (the base project with `c`'s name in its place) and compiles it. */
export async function build(c: Case, emit: EmitKind): Promise<Built> {
  const names = { ...BASE, [c.place]: c.name } as Names;
  const files: [string, string][] = [
    // Instances double the dispatcher's code: only where their names are what is tested.
    ["kernelc.config.json", configText(names, ["instance", "kernel", "input"].includes(c.place))],
    ["specs/Kern.json", specText(names)],
    ["templates/k.wgsl.jinja", templateText(names)],
  ];
  if (c.twin) files.push(["specs/Twin.json", specText(BASE)]);
  const root = writeProject("hostile", files);
  roots.push(root);
  return { c, names, root, result: await compile(loadConfig(root), { emit }) };
}

const errorsOf = (r: CompileResult): Diagnostic[] => r.diagnostics.filter((d) => d.severity === "error");

/** A refusal as the test pins it: the place, the name, and the codes of its errors. */
const refusal = (b: Built): string => `${show(b.c)}: ${[...new Set(errorsOf(b.result).map((d) => d.code))].join(", ")}`;

/** The generated modules of a build: .ts, or .js and .d.ts. */
const modulesOf = (b: Built): string[] => [...b.result.files.keys()].filter((rel) => /\.(ts|js)$/.test(rel));

/** Every identifier node of a module named `name` (spec text that left its string or comment becomes one). */
function identifiersNamed(file: string, text: string, name: string): number {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false, file.endsWith(".js") ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  let n = 0;
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === name) n++;
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return n;
}

/** Every string of a JSON value, keys included. */
function stringsOf(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(stringsOf);
  if (typeof v === "object" && v !== null) return Object.entries(v).flatMap(([k, x]) => [k, ...stringsOf(x)]);
  return [];
}

/** A module's tokens without its comments and spacing (one per line). */
function tokens(text: string): string {
  const scanner = ts.createScanner(ts.ScriptTarget.ES2022, true, ts.LanguageVariant.Standard, text);
  const out: string[] = [];
  while (scanner.scan() !== ts.SyntaxKind.EndOfFileToken) out.push(scanner.getTokenText());
  return out.join("\n");
}

/** WGSL with its comments removed (line comments end at any of WGSL's line breaks; block comments nest). */
function wgslCode(text: string): string {
  let out = "";
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    if (depth === 0 && text.startsWith("//", i)) {
      while (i < text.length && !/[\n\v\f\r\u0085\u2028\u2029]/.test(text[i]!)) i++;
      out += "\n";
    } else if (text.startsWith("/*", i)) {
      depth++;
      i++;
    } else if (depth > 0 && text.startsWith("*/", i)) {
      depth--;
      i++;
    } else if (depth === 0) out += text[i];
  }
  return out;
}

/** A consumer of a build: it calls the kernel's planner with each hostile name as a key, typed by the generated call type. */
function consumerText(n: Names): string {
  return [
    `import bundle from "./out/index.js";`,
    `import { planners } from "./out/${n.profile}/dispatcher.js";`,
    `export const plan = planners[${q(n.kernel)}]({`,
    `  inputs: { [${q(n.input)}]: { shape: [8], dtype: "float32" } },`,
    `  outputs: { [${q(n.output)}]: { shape: [8], dtype: "float32" } },`,
    `  attrs: { [${q(n.attribute)}]: 2, mode: ${q(n.value)} },`,
    `});`,
    `export const profile: ${q(n.profile)} = bundle.profiles[0].name;`,
    "",
  ].join("\n");
}

/** The call the consumer and the Node run plan (the instance's size), as JSON. */
const callOf = (n: Names): string =>
  obj([
    ["inputs", obj([[n.input, `{ "shape": [8], "dtype": "float32" }`]])],
    ["outputs", obj([[n.output, `{ "shape": [8], "dtype": "float32" }`]])],
    [
      "attrs",
      obj([
        [n.attribute, "2"],
        ["mode", q(n.value)],
      ]),
    ],
  ]);

/** What the Node run reports of each build's plan of its call; the names it should hold. */
const expectedPlan = (n: Names) => ({
  profile: n.profile,
  kernel: n.kernel,
  variant: n.variant,
  pass: n.pass,
  passName: n.passName,
  bindings: [n.binding, n.wgslName, "params"],
  tensors: [n.input, n.output],
  shaderListed: true,
});

/** The script that imports each build's index and dispatcher (.js) in plain Node and plans its call. */
const RUN = `import * as fs from "node:fs";
const list = JSON.parse(fs.readFileSync(new URL("./list.json", import.meta.url), "utf8"));
const out = [];
for (const { dir, profile, kernel } of list) {
  try {
    const call = JSON.parse(fs.readFileSync(new URL("./" + dir + "/call.json", import.meta.url), "utf8"));
    const index = await import("./" + dir + "/out/index.js");
    const d = await index.profiles[0].dispatcher();
    const manifest = await index.profiles[0].manifest();
    const plan = d.planners[kernel](call);
    const p = plan.passes[0];
    out.push({
      profile: index.profiles[0].name,
      kernel: plan.kernel,
      variant: plan.variant,
      pass: p.id,
      passName: p.name,
      bindings: p.bindings.map((b) => b.name),
      tensors: p.bindings.filter((b) => b.tensor !== undefined).map((b) => b.tensor),
      shaderListed: Object.prototype.hasOwnProperty.call(manifest.shaders, p.shader),
    });
  } catch (e) {
    out.push({ error: String(e && e.stack) });
  }
}
fs.writeFileSync(new URL("./out.json", import.meta.url), JSON.stringify(out));
`;

/**
 * The cases refused at lint, each with its error codes: names that are not identifiers or are too
 * long (schema_value), keys that could change an object's prototype (json_forbidden_key), WGSL
 * words as WGSL names and the context's names as derive entries (reserved_name), a WGSL name that
 * takes the name of an accessor helper the template calls (template_error), names a profile or an
 * instance cannot have. Every other case builds, without a warning.
 */
const REFUSED: readonly string[] = [
  'kernel "__proto__": json_forbidden_key',
  'kernel "a\\"b": schema_value',
  'input "constructor": json_forbidden_key',
  'input "a\\nb": schema_value',
  'output "prototype": json_forbidden_key',
  'output "Toooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo": schema_value',
  'output "a*/b": schema_value',
  'typeParam "a${b}": schema_value',
  'attribute "a\\u200bb": schema_value',
  'tunable "Toooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo": schema_value',
  'tunable "\\u202eab": schema_value',
  'derive "env": reserved_name',
  'derive "a\\ud800": schema_value',
  'binding "null": reserved_name',
  'binding "__defineGetter__": reserved_name',
  'binding "var": reserved_name',
  'binding "store_yv": template_error',
  'binding "\\u00e9": schema_value',
  'wgslName "delete": reserved_name',
  'wgslName "__proto__": json_forbidden_key',
  'wgslName "array": reserved_name',
  'wgslName "loop": reserved_name',
  'wgslName "Toooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo": schema_value',
  'wgslName "load_xb": template_error',
  'wgslName "1a": schema_value',
  'field "interface": reserved_name',
  'field "a-b": schema_value',
  'variant "": schema_value',
  'pass "Toooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo": schema_value',
  'pass "a\\"b": schema_value',
  'templateVar "a\\nb": template_error',
  'passName "__proto__": json_forbidden_key',
  'profile "__proto__": profile_invalid',
  'profile "shaders": profile_invalid',
  'profile "con": profile_invalid',
  'profile "a.b": profile_invalid',
  'profile "..": profile_invalid',
  'profile "ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp": profile_invalid',
  'profile "Core": profile_invalid',
  'profile "a/b": profile_invalid',
  'profile "a\\"b": profile_invalid',
  'profile "a b": profile_invalid',
  'instance "__proto__": config_invalid',
  'instance "..": config_invalid',
  'instance "ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp": config_invalid',
  'instance "a/b": config_invalid',
  'instance "a\\"b": config_invalid',
  'instance "a b": config_invalid',
];

/**
 * The tests of one emit (test/package/hostile-names-ts.test.ts and -js.test.ts, two files so that
 * they run side by side): every case built, the refusals as pinned, the modules type-checked in one
 * program, the payloads kept in their literals, and (js) every build's planner run in plain Node.
 */
export function hostileNameTests(emit: EmitKind): void {
  afterAll(removeHostileProjects);
  describe(`hostile names, emitted as ${emit}`, () => {
    let built: Built[] = [];
    beforeAll(async () => {
      built = [];
      for (const c of cases()) built.push(await build(c, emit));
    }, 300_000);

    it("are refused at lint with a located, fix-giving diagnostic, or build", () => {
      const bad: string[] = [];
      for (const b of built) {
        const errors = errorsOf(b.result);
        for (const d of errors) {
          const where = d.location?.file !== undefined && (d.location.span !== undefined || d.location.pointer !== undefined);
          if (!where || /^(internal|eval_error)/.test(d.code) || /internal error/i.test(d.message))
            bad.push(`${show(b.c)}: ${d.code} ${d.message} (at ${JSON.stringify(d.location)})`);
        }
        if (errors.length > 0 && !errors.some((d) => d.hint))
          bad.push(`${show(b.c)}: no error says how to fix it: ${errors.map((d) => d.message).join("; ")}`);
        if (errors.length === 0 && b.result.files.size === 0) bad.push(`${show(b.c)}: no error and no files`);
        // A name that builds builds as the base project does: without a warning.
        if (errors.length === 0)
          for (const d of b.result.diagnostics) bad.push(`${show(b.c)}: ${d.severity} ${d.code} ${d.message} (at ${d.location?.pointer})`);
      }
      expect(bad).toEqual([]);
      expect(built.filter((b) => errorsOf(b.result).length > 0).map(refusal)).toEqual(REFUSED);
    });

    it("build modules that compile under the strict flags, with a consumer calling the planner by each name", () => {
      // Builds whose modules and consumer are the same code (a name that reaches only comments, a JSON file or a shader) are
      // checked once; the next test keeps every comment a comment.
      const seen = new Set<string>();
      const ok = built.filter((b) => {
        if (errorsOf(b.result).length > 0) return false;
        const key = JSON.stringify([consumerText(b.names), ...modulesOf(b).map((rel) => [rel, tokens(b.result.files.get(rel)!)])]);
        return !seen.has(key) && seen.add(key) !== undefined;
      });
      expect(ok.length).toBeGreaterThan(50);
      const files: [string, string][] = [["package.json", JSON.stringify({ type: "module" })]];
      const rootsOf: string[] = [];
      ok.forEach((b, i) => {
        for (const [rel, text] of b.result.files) files.push([`p${i}/out/${rel}`, text]);
        files.push([`p${i}/use.ts`, consumerText(b.names)]);
        rootsOf.push(
          `p${i}/use.ts`,
          ...modulesOf(b)
            .filter((rel) => !rel.endsWith(".js"))
            .map((rel) => `p${i}/out/${rel}`),
        );
      });
      const dir = writeProject("hostile-tsc", files);
      roots.push(dir);
      const options: ts.CompilerOptions = { ...STRICT_CONSUMER, skipLibCheck: false, lib: ["lib.es2020.d.ts", "lib.dom.d.ts"] };
      const errors = typeErrors(
        rootsOf.map((rel) => path.join(dir, rel)),
        options,
        dir,
      );
      expect(errors).toEqual([]);
    }, 120_000);

    it("keep every payload inside its literal or comment, in every generated file, and JSON files hold the name as written", () => {
      const bad: string[] = [];
      const reached = new Set<string>();
      for (const b of built.filter((x) => x.c.name.includes("pwned")))
        for (const [rel, text] of b.result.files) {
          const kind = rel.slice(rel.lastIndexOf("."));
          if (text.includes("pwned")) reached.add(kind);
          if (kind === ".ts" || kind === ".js") {
            if (identifiersNamed(rel, text, "pwned") > 0) bad.push(`${show(b.c)}: ${rel} has \`pwned\` as code`);
          } else if (kind === ".json") {
            let strings: string[] = [];
            try {
              strings = stringsOf(JSON.parse(text));
            } catch (e) {
              bad.push(`${show(b.c)}: ${rel} is not JSON: ${String(e)}`);
            }
            if (text.includes("pwned") && !strings.includes(b.c.name)) bad.push(`${show(b.c)}: ${rel} holds the name changed`);
          } else if (kind === ".wgsl" && wgslCode(text).includes("pwned")) bad.push(`${show(b.c)}: ${rel} has \`pwned\` as code`);
        }
      expect(bad).toEqual([]);
      // The payloads reached the modules and the JSON files (the checks above are not vacuous).
      expect([...reached].sort()).toEqual(expect.arrayContaining([".json", emit === "ts" ? ".ts" : ".js"]));
    });

    if (emit === "js")
      it("plan a valid call in plain Node (the .js modules), the plan holding each name as written", () => {
        const ok = built.filter((b) => errorsOf(b.result).length === 0);
        const files: [string, string][] = [
          ["package.json", JSON.stringify({ type: "module" })],
          ["run.mjs", RUN],
        ];
        ok.forEach((b, i) => {
          for (const [rel, text] of b.result.files) files.push([`p${i}/out/${rel}`, text]);
          files.push([`p${i}/call.json`, callOf(b.names)]);
        });
        files.push(["list.json", JSON.stringify(ok.map((b, i) => ({ dir: `p${i}`, profile: b.names.profile, kernel: b.names.kernel })))]);
        const dir = writeProject("hostile-node", files);
        roots.push(dir);
        const env = { ...process.env };
        delete env.NODE_OPTIONS;
        const r = spawnSync(process.execPath, ["run.mjs"], { cwd: dir, encoding: "utf8", env, timeout: 120_000 });
        expect(r.status, r.stderr).toBe(0);
        const got = JSON.parse(fs.readFileSync(path.join(dir, "out.json"), "utf8")) as unknown[];
        const want = ok.map((b) => expectedPlan(b.names));
        const diff = ok.flatMap((b, i) =>
          JSON.stringify(got[i]) === JSON.stringify(want[i]) ? [] : [`${show(b.c)}: ${JSON.stringify(got[i])}`],
        );
        expect(diff).toEqual([]);
      }, 120_000);
  });
}
