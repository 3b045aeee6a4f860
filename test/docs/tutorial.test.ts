/**
 * docs/tutorial.md is executed: its files are written to a fresh project, its `npx kernelc`
 * commands run through the CLI in-process, the dispatchers are compiled with tsc, and run.mjs runs
 * on a real adapter (lavapipe) when there is one. Each `text output` block must match what the
 * commands before it printed.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";

const root = path.resolve(__dirname, "../..");
const icd = process.env.KERNELC_VK_ICD ?? path.join(root, ".lavapipe", "lvp_icd.json");
const hasGpu = fs.existsSync(icd);

interface Block {
  readonly lang: string;
  readonly info: string;
  readonly text: string;
}

function blocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\w*)([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], info: m[2].trim(), text: m[3] }));
}

/** Runs one shell line of the tutorial in `dir`; returns what it printed (stdout + stderr for kernelc, stdout for node). */
async function runLine(line: string, dir: string): Promise<string | undefined> {
  if (line.startsWith("npx kernelc ")) {
    let out = "";
    const code = await main(line.slice("npx kernelc ".length).split(/\s+/), { stdout: (s) => (out += s), stderr: (s) => (out += s), cwd: dir, isTTY: false, env: {} });
    expect(code, `${line}\n${out}`).toBe(0);
    return out;
  }
  if (line.startsWith("npx tsc ")) {
    const tsc = `"${process.execPath}" "${path.join(root, "node_modules/typescript/bin/tsc")}"`;
    const r = spawnSync("bash", ["-c", tsc + line.slice("npx tsc".length)], { cwd: dir, encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    return "";
  }
  if (line.startsWith("node ")) {
    if (!hasGpu) {
      if (process.env.CI === "true") throw new Error(`no lavapipe at ${icd}: run scripts/setup-lavapipe.sh`);
      return undefined;
    }
    const env = { ...process.env, VK_DRIVER_FILES: icd, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? "/tmp" };
    const r = spawnSync(process.execPath, line.slice("node ".length).split(/\s+/), { cwd: dir, encoding: "utf8", env, timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  }
  throw new Error(`the tutorial test does not know how to run: ${line}`);
}

describe("docs/tutorial.md", () => {
  it("every file, command and output of the tutorial is what kernelc does", async () => {
    const doc = blocks(fs.readFileSync(path.join(root, "docs/tutorial.md"), "utf8"));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-tutorial-"));
    // What `npm install kernelc webgpu` gives: the package (this repository) and Dawn.
    fs.mkdirSync(path.join(dir, "node_modules"));
    fs.symlinkSync(root, path.join(dir, "node_modules", "kernelc"));
    fs.symlinkSync(path.join(root, "node_modules", "webgpu"), path.join(dir, "node_modules", "webgpu"));
    let printed: string | undefined = "";
    let checked = 0;
    for (const b of doc) {
      const file = /(?:^|\s)file=(\S+)/.exec(b.info)?.[1];
      if (file) {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        fs.writeFileSync(path.join(dir, file), b.text);
      } else if (b.lang === "sh") {
        printed = "";
        for (const line of b.text.split("\n").filter((l) => l.trim() !== "")) {
          const out = await runLine(line.trim(), dir);
          printed = out === undefined || printed === undefined ? undefined : printed + out;
        }
      } else if (b.lang === "text" && b.info === "output") {
        if (printed !== undefined) {
          expect(printed).toBe(b.text);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(hasGpu ? 3 : 2);
    expect(fs.existsSync(path.join(dir, "out", "core", "dispatcher.ts"))).toBe(true);
  }, 180_000);
});
