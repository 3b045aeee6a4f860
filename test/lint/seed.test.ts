import { describe, expect, it } from "vitest";
import * as path from "node:path";
import { lintPaths, makeCheckContext } from "../../src/api/lint.js";
import { renderText } from "../../src/core/render-diagnostics.js";

const root = path.resolve(__dirname, "../..");

describe("lint of the seed spec", () => {
  it("has only missing-template errors, or none", () => {
    const r = lintPaths([path.join(root, "specs")], makeCheckContext(path.join(root, "templates")));
    const text = renderText(r.diagnostics, (f) => r.sources.get(f));
    console.log(text);
    expect(r.kernels.length).toBeGreaterThan(0);
  });
});
