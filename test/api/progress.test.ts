/** build()'s onProgress steps: one description per step, counted in words a reader can take as they are. */
import { describe, expect, it } from "vitest";
import { build } from "../../src/api/index.js";
import { INIT_FILES } from "../../src/cli/init-command.js";
import { writeProject } from "../support/temp-project.js";

describe("build() onProgress", () => {
  it("reports each profile's kernels with the shader count so far, singular for one", async () => {
    const steps: string[] = [];
    const result = await build({ cwd: writeProject("progress", INIT_FILES), onProgress: (s) => steps.push(s) });
    expect(result.ok).toBe(true);
    expect(steps).toContain("checking specs");
    expect(steps).toContain("desktop-32k: Axpby (0 shaders so far)");
    expect(steps).toContain("core: Axpby (1 shader so far)");
    expect(steps).toContain("validating 1 shader");
    expect(steps.filter((s) => /\b1 shaders\b/.test(s))).toEqual([]);
  });
});
