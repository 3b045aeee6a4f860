/**
 * A user's own `when` conditions, written inline with checked arithmetic (`n % 4 == 0`, as the
 * tutorial's next step suggests), give dispatchers that compile under a strict consumer's flags:
 * the explanation of a condition that cannot fail declares only the temporaries it reads
 * (noUnusedLocals). determinism.test.ts checks the same for this repository's specs.
 */
import * as fs from "node:fs";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { INIT_FILES } from "../../src/cli/init-command.js";
import { loadConfig } from "../../src/plan/config.js";
import { dispatcherTypeErrors } from "../support/strict-consumer.js";
import { writeProject } from "../support/temp-project.js";

const CONDITIONS = ["n % 4 == 0", "n // 2 >= 1 and n % 8 == 0", "max(n, 4) % 4 == 0", "n % 16 == 0 or n % 5 == 0"];

/** The init project's Axpby with one more variant per condition, each above the scalar one. */
function project(): string {
  const spec = JSON.parse(INIT_FILES.get("specs/Axpby.json")!) as { variants: { id: string; priority?: number; when: string[] }[] };
  const scalar = spec.variants[0]!;
  spec.variants = [...CONDITIONS.map((c, i) => ({ ...structuredClone(scalar), id: `v${i}`, priority: 10 - i, when: [c] })), scalar];
  return writeProject("strict-conditions", [
    ...INIT_FILES,
    ["specs/Axpby.json", JSON.stringify(spec, null, 2)],
    ["package.json", JSON.stringify({ type: "module" })],
  ]);
}

describe("inline checked arithmetic in `when`", () => {
  it("gives dispatchers without unused locals under strict flags", async () => {
    const dir = project();
    try {
      const result = await compile(loadConfig(dir), { profiles: ["core"] });
      expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      expect(dispatcherTypeErrors(dir, result.files.get("core/dispatcher.ts")!)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
