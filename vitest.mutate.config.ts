import { defineConfig } from "vitest/config";
import { assertGoldenPolicy } from "./test/support/golden.js";

assertGoldenPolicy(process.env);

/**
 * The tests Stryker runs against each mutant (`npm run mutate`, stryker.config.mjs): the fast
 * tests of the expression language, the checker and the dispatcher generator, without a GPU, a
 * full build or a tsc run. MUTATE_TESTS (comma-separated globs) narrows them for a scoped run.
 */
const DEFAULT_TESTS = [
  "test/parse/**/*.test.ts",
  "test/check/**/*.test.ts",
  "test/lint/corpus.test.ts",
  "test/lint/seed.test.ts",
  "test/dispatcher/**/*.test.ts",
];

export default defineConfig({
  test: {
    include: process.env.MUTATE_TESTS
      ? process.env.MUTATE_TESTS.split(",")
          .map((s) => s.trim())
          .filter(Boolean)
      : DEFAULT_TESTS,
    pool: "forks",
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
});
