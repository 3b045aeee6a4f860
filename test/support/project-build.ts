/** Builds this repository's specs and templates in memory (once per test file) and loads the generated dispatchers. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { Call } from "../../src/model/plan.js";
import { expect } from "vitest";
import { outcome, type Outcome } from "./plan-outcome.js";
import { writeProject } from "./temp-project.js";

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

/** Builds the project at `root` (all its profiles), asserting that neither its config nor the build has a diagnostic. */
export async function cleanBuild(root: string): Promise<CompileResult> {
  const loaded = loadConfig(root);
  expect(loaded.diagnostics).toEqual([]);
  const built = await compile(loaded);
  expect(built.diagnostics).toEqual([]);
  return built;
}

/** Transpiles a generated dispatcher module to JavaScript and imports it. */
export async function importDispatcher(source: string): Promise<Record<string, unknown>> {
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-dispatcher-"));
  const file = path.join(dir, "dispatcher.mjs");
  fs.writeFileSync(file, js);
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
}

/** A temporary project built for profile core, with each kernel's generated planner held to the interpreter. */
export interface CoreProject {
  readonly root: string;
  readonly result: CompileResult;
  /** out/core/dispatcher.ts as generated (undefined when the build failed). */
  readonly source: string | undefined;
  /** What kernel `name`'s generated planner does with `call`, asserted equal to what the interpreter does. */
  both(name: string, call: unknown): Outcome;
}

/**
 * Writes `files` (specs/…, templates/…) with a config of profile core into a temporary project
 * named `kernelc-<prefix>-…`, compiles it and imports its generated dispatcher.
 */
export async function coreProject(prefix: string, files: Readonly<Record<string, string>>): Promise<CoreProject> {
  const root = writeProject(prefix, { "kernelc.config.json": JSON.stringify({ profiles: ["core"] }), ...files });
  const result = await compile(loadConfig(root));
  const source = result.files.get("core/dispatcher.ts");
  const planners = (source ? (await importDispatcher(source)).planners : {}) as Record<string, (c: unknown) => unknown>;
  return {
    root,
    result,
    source,
    both(name, call) {
      const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === name)!.model;
      const generated = outcome(() => planners[name]!(call));
      expect(generated, JSON.stringify(call)).toEqual(outcome(() => interpretPlan(model, call as Call)));
      return generated;
    },
  };
}
