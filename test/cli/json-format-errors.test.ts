/**
 * `--format json` holds for the problems that stop a command before its own report: a config
 * that names an unknown profile, an unknown kernel, a template that does not build. lint and
 * explain printed these as text on stderr with nothing on stdout (build already gave JSON), so a
 * tool reading stdout got nothing to parse; explain, whose JSON is one document
 * `{ candidates, tuned, call, diagnostics }`, printed a bare array when the build failed.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

const FIXTURE = path.resolve(__dirname, "../fixtures/axpby");

/** A copy of the Axpby fixture with `edit` applied. */
function project(edit: (root: string) => void): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-json-errors-"));
  fs.cpSync(FIXTURE, root, { recursive: true });
  fs.rmSync(path.join(root, "out"), { recursive: true, force: true });
  edit(root);
  return root;
}

const badConfig = (root: string) => fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify({ profiles: ["nope"] }));

describe("--format json for errors that stop a command early", () => {
  it("lint and build print a config error as JSON on stdout, nothing on stderr", async () => {
    const root = project(badConfig);
    for (const cmd of [["lint"], ["build"]]) {
      const r = await runCli([...cmd, "--format", "json"], root);
      expect(r.code, cmd[0]).toBe(1);
      expect(r.stderr, cmd[0]).toBe("");
      const rows = JSON.parse(r.stdout) as { code: string; file: string; line: number }[];
      expect(
        rows.map((d) => [d.code, d.file, d.line]),
        cmd[0],
      ).toEqual([["unknown_profile", "kernelc.config.json", 1]]);
    }
  });

  it("lint --format github prints a config error as an annotation", async () => {
    const r = await runCli(["lint", "--format", "github"], project(badConfig));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^::error file=kernelc\.config\.json,line=1,.*title=kernelc unknown_profile::/);
  });

  it("explain prints its document with the diagnostics for an unknown kernel, a config error and a build error", async () => {
    const unknownKernel = await runCli(
      ["explain", "Axpbyy", "--profile", "core", "--format", "json"],
      project(() => {}),
    );
    const config = await runCli(["explain", "Axpby", "--profile", "core", "--format", "json"], project(badConfig));
    const broken = project((root) => {
      const t = path.join(root, "templates", "axpby.wgsl.jinja");
      fs.writeFileSync(t, fs.readFileSync(t, "utf8").replace("fn main", "fn main_oops"));
    });
    const build = await runCli(["explain", "Axpby", "--profile", "core", "--format", "json"], broken);
    const docs = [unknownKernel, config, build].map((r) => {
      expect(r.code).toBe(1);
      expect(r.stderr).toBe("");
      return JSON.parse(r.stdout) as { candidates: unknown[]; diagnostics: { code: string; message: string }[] };
    });
    expect(docs.map((d) => [d.candidates, d.diagnostics.map((x) => x.code)])).toEqual([
      [[], ["usage"]],
      [[], ["unknown_profile"]],
      [[], ["wgsl_invalid"]],
    ]);
    expect(docs[0]!.diagnostics[0]!.message).toBe("no kernel named `Axpbyy`");
  });
});
