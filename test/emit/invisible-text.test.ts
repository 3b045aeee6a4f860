/**
 * Spec free text with bidirectional controls, invisible characters, C0/C1 controls, line and
 * paragraph separators, a BOM and a lone surrogate (a pass name, an attribute's string default and
 * allowed values, a template file name; onnx names too, which no generated file holds today) reaches the generated files only as `\uXXXX` escapes: in string
 * literals of the TypeScript and JavaScript dispatchers and the .d.ts, in the JSON files, and in
 * comments (TypeScript, JavaScript and WGSL). The modules still compile under the strict consumer's
 * options, and the JavaScript values are the spec's strings, character for character.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { axpbyProject } from "../support/axpby-project.js";
import { STRICT_CONSUMER, typeErrors } from "../support/strict-consumer.js";

/** Every kind of character that must not land raw in a generated file, between letters. */
const HOSTILE = "a\u202Eb\u200Bc\u2066d\u2028e\u2029f\uFEFFg\u0085h\u0007i\u007Fj\u200Fk\u2069l\uD800m";
/** What a generated file must not hold: controls (but newline), C1, bidi and invisible characters, separators, BOM, lone surrogates. */
const RAW =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/axpby");
/** A template file name with invisible characters (no lone surrogate: a file name cannot hold one). */
const SHADER = "axpby\u202E\u200B\u2028.wgsl.jinja";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function hostileProject(): string {
  const root = axpbyProject({
    spec: (spec) => {
      spec.inputs.xT.onnx = `x${HOSTILE}`;
      spec.outputs.yT.onnx = `y${HOSTILE}`;
      spec.variants[0].passes[0].name = `Axpby.${HOSTILE}`;
      spec.attributes.mode = { default: HOSTILE };
      spec.attributeConstraints = { mode: { values: [HOSTILE, "plain"] } };
      spec.variants[1].passes[0].shader = SHADER;
    },
    // A template file name reaches the WGSL header comment and kernels.json.
    templates: { [SHADER]: fs.readFileSync(path.join(FIXTURE, "templates/axpby.wgsl.jinja"), "utf8") },
  });
  dirs.push(root);
  return root;
}

let builds: Promise<{ ts: CompileResult; js: CompileResult }> | undefined;
function bothBuilds(): Promise<{ ts: CompileResult; js: CompileResult }> {
  builds ??= (async () => {
    const loaded = loadConfig(hostileProject());
    return { ts: await compile(loaded, { emit: "ts" }), js: await compile(loaded, { emit: "js" }) };
  })();
  return builds;
}

function writeTree(files: Iterable<[string, string]>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-invisible-"));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
  for (const [rel, text] of files) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

const CALL = {
  inputs: { xT: { shape: [8], dtype: "float32" } },
  outputs: { yT: { shape: [8], dtype: "float32" } },
  attrs: {},
};

describe("invisible and bidirectional characters in spec text", () => {
  it("land in no generated file raw, only as \\uXXXX escapes", async () => {
    const { ts, js } = await bothBuilds();
    for (const build of [ts, js]) {
      expect(build.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      for (const [rel, text] of build.files) {
        const line = text.split("\n").findIndex((l) => RAW.test(l));
        expect(line, `${rel}:${line + 1}: ${JSON.stringify(text.split("\n")[line])}`).toBe(-1);
      }
      const all = [...build.files.values()].join("\n").toLowerCase();
      for (const escape of [
        "\\u202e",
        "\\u200b",
        "\\u2066",
        "\\u2028",
        "\\u2029",
        "\\ufeff",
        "\\u0085",
        "\\u007f",
        "\\u200f",
        "\\u2069",
        "\\ud800",
      ])
        expect(all, escape).toContain(escape);
    }
  }, 120_000);

  it("the modules compile under the strict consumer's options, and the JavaScript values are the spec's strings", async () => {
    const { ts, js } = await bothBuilds();
    const tsDir = writeTree(ts.files);
    expect(typeErrors([path.join(tsDir, "core/dispatcher.ts")], STRICT_CONSUMER, tsDir)).toEqual([]);
    const jsDir = writeTree(js.files);
    expect(typeErrors([path.join(jsDir, "core/dispatcher.d.ts")], STRICT_CONSUMER, jsDir)).toEqual([]);
    const mod = (await import(pathToFileURL(path.join(jsDir, "core/dispatcher.js")).href)) as {
      planners: Record<string, (call: unknown) => { passes: { name: string }[] }>;
    };
    const plan = mod.planners.Axpby!(CALL);
    expect(plan.passes.map((p) => p.name)).toContain(`Axpby.${HOSTILE}`);
    expect(() => mod.planners.Axpby!({ ...CALL, attrs: { mode: "other" } })).toThrow(JSON.stringify(HOSTILE));
    const strings = (v: unknown): string[] =>
      typeof v === "string" ? [v] : v !== null && typeof v === "object" ? Object.values(v).flatMap(strings) : [];
    expect(strings(JSON.parse(js.files.get("core/kernels.json")!))).toContain(`Axpby.${HOSTILE}`);
  }, 120_000);
});
