/**
 * The one place tests decide whether to rewrite golden files. `UPDATE_GOLDEN=1` rewrites them on a
 * developer's machine; under CI (`CI=true`) it is an error, so a CI run can never bless its own
 * output. vitest.config.ts calls `assertGoldenPolicy` too, so the whole run fails before any test.
 */
import * as fs from "node:fs";

type Env = Readonly<Record<string, string | undefined>>;

/** Throws when UPDATE_GOLDEN is set under CI=true; returns whether goldens are to be rewritten. */
export function assertGoldenPolicy(env: Env = process.env): boolean {
  const update = env.UPDATE_GOLDEN !== undefined && env.UPDATE_GOLDEN !== "" && env.UPDATE_GOLDEN !== "0";
  if (update && env.CI !== undefined && env.CI !== "" && env.CI !== "false" && env.CI !== "0") {
    throw new Error(
      `UPDATE_GOLDEN=${env.UPDATE_GOLDEN} with CI=${env.CI}: goldens cannot be rewritten in CI; regenerate them locally, review the diff and commit it`,
    );
  }
  if (update && env.UPDATE_GOLDEN !== "1")
    throw new Error(`UPDATE_GOLDEN=${env.UPDATE_GOLDEN}: set UPDATE_GOLDEN=1 to rewrite goldens, or leave it unset`);
  return update;
}

/** Whether this run rewrites goldens (UPDATE_GOLDEN=1, never under CI). */
export function updatingGoldens(): boolean {
  return assertGoldenPolicy(process.env);
}

/** Rewrites `file` with `actual` when updating goldens; returns the golden text to compare with (undefined when the file is missing). */
export function golden(file: string, actual: string): string | undefined {
  if (updatingGoldens()) fs.writeFileSync(file, actual);
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
}
