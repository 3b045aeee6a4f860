/** Lint and build of a temporary project (axpbyProject and the like), as `kernelc lint` and `kernelc build` see it. */
import * as path from "node:path";
import { expect } from "vitest";
import { compile } from "../../src/api/compile.js";
import { lintPaths, makeCheckContext, type LintResult } from "../../src/api/lint.js";
import { loadConfig } from "../../src/plan/config.js";

/** Lints the project's specs/ against its templates/. */
export function lintProject(root: string): LintResult {
  return lintPaths([path.join(root, "specs")], makeCheckContext(path.join(root, "templates")));
}

/**
 * Asserts that lint reports nothing and the build no error, and returns the built shaders' text
 * (at least one).
 */
export async function cleanShaders(root: string): Promise<string[]> {
  expect(lintProject(root).diagnostics).toEqual([]);
  const built = await compile(loadConfig(root));
  expect(built.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  const shaders = [...built.files].filter(([name]) => name.endsWith(".wgsl")).map(([, text]) => String(text));
  expect(shaders.length).toBeGreaterThan(0);
  return shaders;
}
