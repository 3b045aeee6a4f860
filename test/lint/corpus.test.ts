/**
 * The lint corpus: one folder per broken spec under corpus/, with the exact text diagnostics the
 * CLI prints (stderr, paths relative to the case folder) in expected.txt, whose first line is
 * `exit: N`. `UPDATE_GOLDEN=1 npx vitest run test/lint/corpus.test.ts` rewrites expected.txt.
 *
 * Each case is linted in a temporary copy of the corpus, so a case's setup.json can add what git
 * does not keep well: `symlinks` (path in the case -> link target) and `padToBytes` (spec.json is
 * padded with trailing spaces to that size, for the file-size limit).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { main } from "../../src/cli/main.js";
import { updatingGoldens } from "../support/golden.js";

const corpusDir = path.resolve(__dirname, "corpus");
const update = updatingGoldens();
const cases = fs
  .readdirSync(corpusDir)
  .filter((n) => !n.startsWith("_") && fs.statSync(path.join(corpusDir, n)).isDirectory())
  .sort();

interface Setup {
  readonly symlinks?: Readonly<Record<string, string>>;
  readonly padToBytes?: number;
}

let work = "";

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-corpus-"));
  fs.cpSync(corpusDir, work, { recursive: true });
  for (const name of cases) {
    const setupFile = path.join(work, name, "setup.json");
    if (!fs.existsSync(setupFile)) continue;
    const setup = JSON.parse(fs.readFileSync(setupFile, "utf8")) as Setup;
    for (const [link, target] of Object.entries(setup.symlinks ?? {})) {
      const at = path.join(work, name, link);
      fs.mkdirSync(path.dirname(at), { recursive: true });
      fs.symlinkSync(target, at);
    }
    if (setup.padToBytes !== undefined) {
      const spec = path.join(work, name, "spec.json");
      const size = fs.statSync(spec).size;
      fs.appendFileSync(spec, " ".repeat(setup.padToBytes - size));
    }
  }
});

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Lints one case in-process, as `kernelc lint spec.json --templates <dir>` run in the case folder. */
async function lintCase(name: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const cwd = path.join(work, name);
  const templates = fs.existsSync(path.join(cwd, "templates")) ? "templates" : "../_templates";
  let stdout = "";
  let stderr = "";
  const code = await main(["lint", "spec.json", "--templates", templates], {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    cwd,
    isTTY: false,
    env: {},
  });
  return { code, stdout, stderr };
}

/** Cases whose only diagnostic cannot have a line or a pointer: the file is not read at all. */
const NO_POSITION = new Set(["58-file-too-large"]);
/** Diagnostics that point into a template, not into the spec: no JSON pointer. */
const NO_POINTER_CODES = ["template_error"];

describe("lint corpus", () => {
  it("has at least 45 cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(45);
  });

  it.each(cases)("%s", async (name) => {
    const r = await lintCase(name);
    const actual = `exit: ${r.code}\n${r.stderr}`;
    const expectedFile = path.join(corpusDir, name, "expected.txt");
    if (update) fs.writeFileSync(expectedFile, actual);
    expect(fs.existsSync(expectedFile), `${name}/expected.txt is missing; run with UPDATE_GOLDEN=1`).toBe(true);
    expect(actual).toBe(fs.readFileSync(expectedFile, "utf8"));

    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/^error\[[a-z_]+\]: \S/m);
    expect(r.stderr).toMatch(/^\d+ errors?, \d+ warnings?\n$/m);
    if (!NO_POSITION.has(name)) {
      expect(r.stderr).toMatch(/^ {2}--> [\w./-]+:\d+:\d+/m);
      const codes = [...r.stderr.matchAll(/^(?:error|warning)\[([a-z_]+)\]/gm)].map((m) => m[1]);
      if (!codes.every((c) => NO_POINTER_CODES.includes(c))) expect(r.stderr).toMatch(/^ {2}--> spec\.json:\d+:\d+ \(\/[^)]*\)$/m);
    }
    expect(r.stderr).not.toMatch(/^ {4}at /m);
    expect(r.stderr).not.toContain("internal error");
  });
});
