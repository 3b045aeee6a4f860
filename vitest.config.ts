import { configDefaults, defineConfig } from "vitest/config";
import { assertGoldenPolicy } from "./test/support/golden.js";

// UPDATE_GOLDEN=1 under CI=true fails the whole run here, before any test: CI never rewrites goldens.
assertGoldenPolicy(process.env);

// A test that hangs (a GPU driver that never answers, say) must fail the run, not stall CI.
export default defineConfig({
  test: {
    // Stryker's sandboxes (npm run mutate) hold copies of the tests.
    exclude: [...configDefaults.exclude, "**/.stryker-tmp/**"],
    pool: "forks",
    // Two files at a time even on a 2-core machine (vitest's default is one fewer than the cores):
    // many files wait on child processes, npm and the software GPU's threads. KERNELC_TEST_WORKERS overrides.
    maxWorkers: Number(process.env.KERNELC_TEST_WORKERS ?? 2),
    // KERNELC_TEST_TIMEOUT_MS: a longer limit where a loaded machine needs it (scripts/template-mutants.mjs).
    testTimeout: Number(process.env.KERNELC_TEST_TIMEOUT_MS ?? 120_000),
    hookTimeout: 300_000,
    teardownTimeout: 30_000,
  },
});
