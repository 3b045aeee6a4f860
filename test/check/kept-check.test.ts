/**
 * Checks kept across compilations (kernelc watch): a spec's check is taken again while its text is
 * the same and its templates resolve to the same files with the same reads, and made again when a
 * read changes or a template goes missing.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { makeCheckContext } from "../../src/api/lint.js";
import { checkKernel, type KeptCheck } from "../../src/check/check-spec.js";
import { loadSpecFile } from "../../src/load/load-spec.js";
import { probeSpec } from "./probe-spec.js";

describe("kept checks", () => {
  it("are taken while the spec and its templates' reads are unchanged, and made again otherwise", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-kept-check-"));
    const template = path.join(dir, "probe.wgsl.jinja");
    fs.writeFileSync(template, "// {{ ratio }}\n");
    const kept = new Map<string, KeptCheck>();
    const text = JSON.stringify(probeSpec(), null, 2);
    const check = (specText = text) => {
      const loaded = loadSpecFile(path.join(dir, "probe.json"), specText);
      return checkKernel(loaded.spec!, makeCheckContext(dir, new Map(), undefined, kept));
    };
    const first = check();
    expect(first.kernel).toBeDefined();
    expect(check()).toBe(first);
    // A comment changes the text, not the reads.
    fs.appendFileSync(template, "{# a comment #}\n// more text\n");
    expect(check()).toBe(first);
    // A new read: checked again.
    fs.appendFileSync(template, "// {{ half }}\n");
    const second = check();
    expect(second).not.toBe(first);
    expect([...second.kernel!.variants[0].passes[0].reads!.names]).toContain("half");
    expect(check()).toBe(second);
    // Another spec text: checked again.
    const third = check(text.replace('"ratio": "1.5"', '"ratio": "2.5"'));
    expect(third).not.toBe(second);
    // The template gone: checked again, and not kept.
    fs.rmSync(template);
    const missing = check(text.replace('"ratio": "1.5"', '"ratio": "2.5"'));
    expect(missing.diagnostics.map((d) => d.code)).toContain("shader_missing");
    expect(kept.size).toBe(0);
    fs.writeFileSync(template, "// {{ ratio }}\n");
    expect(check().diagnostics.map((d) => d.code)).not.toContain("shader_missing");
  });
});
