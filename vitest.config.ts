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
    // KERNELC_TEST_TIMEOUT_MS: a longer limit where a loaded machine needs it (scripts/template-mutants.mjs).
    testTimeout: Number(process.env.KERNELC_TEST_TIMEOUT_MS ?? 120_000),
    hookTimeout: 300_000,
    teardownTimeout: 30_000,
  },
});
