// Mutation testing (`npm run mutate`; docs/testing.md): StrykerJS mutates the expression language
// (src/lang), the checker (src/check) and the dispatcher generator (src/emit/dispatcher*.ts), and
// runs the fast tests of vitest.mutate.config.ts against each mutant. Not part of `npm test`.
// Scope a run: `npx stryker run --mutate src/lang/ops.ts` (and MUTATE_TESTS=<globs> for the tests).
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutate.config.ts", related: false },
  plugins: ["@stryker-mutator/vitest-runner"],
  mutate: ["src/lang/**/*.ts", "src/check/**/*.ts", "src/emit/dispatcher*.ts"],
  coverageAnalysis: "perTest",
  ignorePatterns: ["out", "dist", "bench", ".lavapipe", ".device", "reports", "examples"],
  reporters: ["clear-text", "progress", "html", "json"],
  // MUTATE_REPORT=<name> keeps two scoped runs' reports apart.
  htmlReporter: { fileName: `reports/mutation/${process.env.MUTATE_REPORT ?? "mutation"}.html` },
  jsonReporter: { fileName: `reports/mutation/${process.env.MUTATE_REPORT ?? "mutation"}.json` },
  concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 2),
  timeoutMS: 30_000,
  tempDirName: ".stryker-tmp",
  cleanTempDir: true,
};
