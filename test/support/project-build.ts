/** Builds this repository's specs and templates in memory (once per test file) and loads the generated dispatchers. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";

export const repoRoot = path.resolve(__dirname, "../..");

let cached: Promise<CompileResult> | undefined;

/** The in-memory build of the repository (all configured profiles). */
export function repoBuild(): Promise<CompileResult> {
  cached ??= (async () => {
    const loaded = loadConfig(repoRoot);
    if (loaded.diagnostics.some((d) => d.severity === "error")) throw new Error("config has errors");
    return compile(loaded);
  })();
  return cached;
}

/** Transpiles a generated dispatcher module to JavaScript and imports it. */
export async function importDispatcher(source: string): Promise<Record<string, unknown>> {
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-dispatcher-"));
  const file = path.join(dir, "dispatcher.mjs");
  fs.writeFileSync(file, js);
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
}
