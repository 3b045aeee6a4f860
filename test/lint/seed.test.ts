/**
 * The seed specs (specs/*.json, the repository's own kernels) lint clean: no error and no warning,
 * every spec file becomes a checked kernel, and every pass's shader was found under templates/
 * and read for the names it uses.
 */
import { describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as path from "node:path";
import { lintPaths, makeCheckContext } from "../../src/api/lint.js";
import { renderText } from "../../src/core/render-diagnostics.js";

const root = path.resolve(__dirname, "../..");
const specsDir = path.join(root, "specs");
const templatesDir = path.join(root, "templates");

describe("lint of the seed specs", () => {
  const r = lintPaths([specsDir], makeCheckContext(templatesDir));

  it("reports no diagnostic at all", () => {
    expect(
      renderText(r.diagnostics, (f) => r.sources.get(f)),
      "the seed specs must lint clean",
    ).toBe("");
    expect(r.diagnostics).toEqual([]);
  });

  it("checks one kernel per spec file, named as the file says", () => {
    const files = fs
      .readdirSync(specsDir)
      .filter((n) => n.endsWith(".json"))
      .sort();
    expect(files.length).toBeGreaterThanOrEqual(2);
    const declared = files.map((n) => (JSON.parse(fs.readFileSync(path.join(specsDir, n), "utf8")) as { name: string }).name).sort();
    expect(r.kernels.map((k) => k.spec.name).sort()).toEqual(declared);
  });

  it("resolves every pass's shader to a template file and reads its names", () => {
    for (const k of r.kernels) {
      expect(k.variants.length, k.spec.name).toBeGreaterThan(0);
      for (const v of k.variants) {
        for (const p of v.passes) {
          const where = `${k.spec.name}/${v.id}/${p.id}`;
          expect(p.shaderPath, where).toBeDefined();
          expect(path.relative(templatesDir, p.shaderPath!).startsWith(".."), where).toBe(false);
          expect(fs.statSync(p.shaderPath!).isFile(), where).toBe(true);
          expect(p.reads, where).toBeDefined();
        }
      }
    }
  });
});
