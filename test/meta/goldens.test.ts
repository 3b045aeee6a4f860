/**
 * Goldens cannot be blessed by CI: UPDATE_GOLDEN=1 with CI=true fails the run (vitest.config.ts
 * calls assertGoldenPolicy before any test), and every test decides whether to rewrite a golden
 * through test/support/golden.ts, never by reading UPDATE_GOLDEN itself.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { assertGoldenPolicy } from "../support/golden.js";

const root = path.resolve(__dirname, "../..");

function filesUnder(rel: string, keep: (name: string) => boolean): string[] {
  return fs.readdirSync(path.join(root, rel), { withFileTypes: true }).flatMap((e) => {
    const child = `${rel}/${e.name}`;
    if (e.isDirectory()) return e.name === "node_modules" ? [] : filesUnder(child, keep);
    return e.isFile() && keep(e.name) ? [child] : [];
  });
}

describe("golden policy", () => {
  it("UPDATE_GOLDEN=1 rewrites only outside CI", () => {
    expect(assertGoldenPolicy({})).toBe(false);
    expect(assertGoldenPolicy({ CI: "true" })).toBe(false);
    expect(assertGoldenPolicy({ UPDATE_GOLDEN: "1" })).toBe(true);
    expect(assertGoldenPolicy({ UPDATE_GOLDEN: "1", CI: "false" })).toBe(true);
    expect(assertGoldenPolicy({ UPDATE_GOLDEN: "0", CI: "true" })).toBe(false);
    expect(() => assertGoldenPolicy({ UPDATE_GOLDEN: "1", CI: "true" })).toThrow(/goldens cannot be rewritten in CI/);
    expect(() => assertGoldenPolicy({ UPDATE_GOLDEN: "1", CI: "1" })).toThrow(/goldens cannot be rewritten in CI/);
    expect(() => assertGoldenPolicy({ UPDATE_GOLDEN: "yes" })).toThrow(/set UPDATE_GOLDEN=1/);
  });

  it("vitest.config.ts applies the policy before any test runs", () => {
    const config = fs.readFileSync(path.join(root, "vitest.config.ts"), "utf8");
    expect(config).toMatch(/^import \{ assertGoldenPolicy \} from "\.\/test\/support\/golden\.js";$/m);
    expect(config).toMatch(/^assertGoldenPolicy\(process\.env\);$/m);
  });

  it("no test, script or bench reads UPDATE_GOLDEN except through test/support/golden.ts", () => {
    const readers = [
      ...filesUnder("test", (n) => /\.(ts|js|mjs)$/.test(n)),
      ...filesUnder("scripts", () => true),
      ...filesUnder("bench", (n) => /\.(ts|js|mjs)$/.test(n)),
    ]
      .filter((f) => f !== "test/support/golden.ts")
      .filter((f) => /env\s*(\.\s*UPDATE_GOLDEN|\[\s*["'`]UPDATE_GOLDEN)/.test(fs.readFileSync(path.join(root, f), "utf8")));
    expect(readers, "use updatingGoldens() or golden() from test/support/golden.ts: they refuse UPDATE_GOLDEN under CI").toEqual([]);
  });
});
