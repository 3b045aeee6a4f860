/**
 * Spec text never becomes code: a spec whose condition strings hold comment terminators and
 * line breaks builds into a dispatcher that compiles, runs, and executes none of that text.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { importDispatcher } from "../support/project-build.js";

const fixture = path.resolve(__dirname, "../fixtures/axpby");

describe("generated code and spec text", () => {
  it("quotes every literal: comment terminators and line breaks in spec text stay inert", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-inject-"));
    fs.cpSync(path.join(fixture, "templates"), path.join(dir, "templates"), { recursive: true });
    fs.mkdirSync(path.join(dir, "specs"));
    const spec = JSON.parse(fs.readFileSync(path.join(fixture, "specs/Axpby.json"), "utf8"));
    const payload = "*/ globalThis.kernelcPwned = 1; /* \n globalThis.kernelcPwned = 2; //";
    spec.when = [...spec.when, `${JSON.stringify(payload)} != dtypes.T`];
    fs.writeFileSync(path.join(dir, "specs/Axpby.json"), JSON.stringify(spec, null, 2));
    const result = await compile(loadConfig(dir), { profiles: ["desktop-64k"] });
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const source = result.files.get("desktop-64k/dispatcher.ts")!;
    // The payload may appear in string literals and comments only: never as an identifier token,
    // and the module must have no syntax error.
    const scanner = ts.createScanner(ts.ScriptTarget.ES2022, false, ts.LanguageVariant.Standard, source);
    const identifiers: string[] = [];
    for (let tok = scanner.scan(); tok !== ts.SyntaxKind.EndOfFileToken; tok = scanner.scan()) {
      if (tok === ts.SyntaxKind.Identifier && scanner.getTokenValue() === "kernelcPwned") identifiers.push(scanner.getTokenText());
    }
    expect(identifiers).toEqual([]);
    const out = ts.transpileModule(source, {
      reportDiagnostics: true,
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
    });
    expect((out.diagnostics ?? []).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))).toEqual([]);
    const mod = await importDispatcher(source);
    const planners = mod.planners as Record<string, (c: unknown) => { variant: string }>;
    const plan = planners.Axpby({ inputs: { xT: { shape: [8], dtype: "float32" } }, outputs: { yT: { shape: [8], dtype: "float32" } } });
    expect(plan.variant).toBe("vec4");
    expect((globalThis as Record<string, unknown>).kernelcPwned).toBeUndefined();
  }, 120_000);

  it("leaves `this.` in spec text as it is when methods become module functions (o.x, Cls_m(o))", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-inject-this-"));
    fs.cpSync(path.join(fixture, "templates"), path.join(dir, "templates"), { recursive: true });
    fs.mkdirSync(path.join(dir, "specs"));
    const spec = JSON.parse(fs.readFileSync(path.join(fixture, "specs/Axpby.json"), "utf8"));
    const text = 'this.m0 ?? this.d0() /* this.t0 */ \\" this.c0()';
    spec.when = [...spec.when, `dim(shapes.xT, 0) == 9 or ${JSON.stringify(text)} == dtypes.T`];
    fs.writeFileSync(path.join(dir, "specs/Axpby.json"), JSON.stringify(spec, null, 2));
    const result = await compile(loadConfig(dir), { profiles: ["desktop-64k"] });
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const source = result.files.get("desktop-64k/dispatcher.ts")!;
    const mod = await importDispatcher(source);
    const planners = mod.planners as Record<string, (c: unknown) => unknown>;
    const call = { inputs: { xT: { shape: [8], dtype: "float32" } }, outputs: { yT: { shape: [8], dtype: "float32" } } };
    // The condition is false for every call: its message quotes the text exactly as the spec has it.
    expect(() => planners.Axpby!(call)).toThrow(`condition \`dim(shapes.xT, 0) == 9 or ${JSON.stringify(text)} == dtypes.T\` failed`);
  }, 120_000);
});
