/**
 * Dispatchers kept across compilations (kernelc watch): generated once with placeholders for the
 * shader ids and filled in with each compilation's ids, byte for byte what generateDispatcher
 * writes. Checked on the seed project (two kernels, shared decision functions, pooled strings)
 * across a template edit that changes shader ids, and on a spec whose text holds the placeholder
 * mark, which is then generated afresh.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import { createShaderCache } from "../../src/emit/shader-cache.js";
import { loadConfig } from "../../src/plan/config.js";
import { axpbyProject } from "../support/axpby-project.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PROFILES = ["desktop-64k", "mobile-256-f16", "compat"];

function seedCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-dispatcher-reuse-"));
  for (const p of ["specs", "templates", "kernelc.config.json"]) fs.cpSync(path.join(REPO, p), path.join(dir, p), { recursive: true });
  return dir;
}

const dispatchers = (r: CompileResult): string[] => [...r.files].filter(([rel]) => rel.includes("/dispatcher")).map(([, t]) => t);

describe("dispatchers kept across compilations", () => {
  it("are what a fresh compilation writes, before and after a template edit that changes shader ids; the second is not generated again", async () => {
    const dir = seedCopy();
    const cache = createShaderCache();
    const kept = await compile(loadConfig(dir), { profiles: PROFILES, cache });
    const fresh = await compile(loadConfig(dir), { profiles: PROFILES });
    expect(kept.diagnostics).toEqual([]);
    expect([...kept.files]).toEqual([...fresh.files]);
    expect(cache.dispatchers.size).toBe(PROFILES.length);
    const entries = [...cache.dispatchers.values()];

    for (const t of ["paged-attention.wgsl.jinja", "sparse-splitk-merge.wgsl.jinja"])
      fs.appendFileSync(path.join(dir, "templates", t), "// an edit\n");
    const keptAfter = await compile(loadConfig(dir), { profiles: PROFILES, cache });
    const freshAfter = await compile(loadConfig(dir), { profiles: PROFILES });
    expect(keptAfter.diagnostics).toEqual([]);
    // The edit changed shader ids, so the dispatchers' text.
    expect(dispatchers(freshAfter)).not.toEqual(dispatchers(fresh));
    expect([...keptAfter.files]).toEqual([...freshAfter.files]);
    // Filled in from the entries kept by the first compilation.
    expect([...cache.dispatchers.values()].every((e, i) => e === entries[i])).toBe(true);
  }, 120_000);

  it("are generated afresh when a spec's text holds the placeholder mark (here inside a condition the dispatcher quotes)", async () => {
    for (const mark of ["\uE000", "\\ue000"]) {
      const root = axpbyProject({
        spec: (s) => {
          s.variants[0].when.push(`n % 4 == 0 or "${mark}000000000000001" == "x"`);
        },
      });
      if (mark.startsWith("\\")) {
        const file = path.join(root, "specs/Axpby.json");
        fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("\\\\ue000", "\\ue000"));
      }
      const cache = createShaderCache();
      const kept = await compile(loadConfig(root), { cache });
      const fresh = await compile(loadConfig(root));
      expect(kept.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      expect(dispatchers(kept).some((t) => t.includes("\uE000000000000000001"))).toBe(true);
      expect([...kept.files]).toEqual([...fresh.files]);
      expect(cache.dispatchers.size).toBe(0);
    }
  }, 60_000);
});
