import { defineConfig } from "vitest/config";

// A test that hangs (a GPU driver that never answers, say) must fail the run, not stall CI.
export default defineConfig({
  test: {
    pool: "forks",
    testTimeout: 120_000,
    hookTimeout: 300_000,
    teardownTimeout: 30_000,
  },
});
