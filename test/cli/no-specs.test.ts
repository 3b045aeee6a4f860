/**
 * Linting or building nothing is an error, not a success: a specs folder with no .json file, paths
 * that hold none, and a specs folder that does not exist each fail with exit 1 and a diagnostic
 * that says what was searched and how to fix it (`no_specs`, or `file_unreadable` for a missing
 * path), in the CLI and in the API alike.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { build, lint } from "../../src/api/index.js";
import { runCli } from "../support/cli.js";
import { writeProject } from "../support/temp-project.js";

const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A project with `files`, an empty specs/ and templates/ unless `files` fills them. */
function project(files: Record<string, string> = {}): string {
  const dir = writeProject("no-specs", files);
  made.push(dir);
  fs.mkdirSync(path.join(dir, "specs"), { recursive: true });
  fs.mkdirSync(path.join(dir, "templates"), { recursive: true });
  return dir;
}

const headers = (stderr: string): string[] => [...stderr.matchAll(/^(?:error|warning)\[[a-z_0-9]+\]: .*$/gm)].map((m) => m[0]);
const hints = (stderr: string): string[] => [...stderr.matchAll(/^ {2}= hint: (.*)$/gm)].map((m) => m[1]!);

describe("kernelc lint and build with no spec files", () => {
  it("lint of an empty specs folder (with and without rendering): no_specs, exit 1, no success line", async () => {
    const dir = project({ "kernelc.config.json": '{ "profiles": ["core"] }\n' });
    for (const args of [["lint"], ["lint", "--no-render"]]) {
      const r = await runCli(args, dir);
      expect(r.code, args.join(" ")).toBe(1);
      expect(headers(r.stderr)).toEqual([
        `error[no_specs]: no spec files: the specs folder ${path.join(dir, "specs")} holds no .json file`,
      ]);
      expect(r.stderr).toContain("  --> specs\n");
      expect(hints(r.stderr)[0]).toContain('set the "specs" field of kernelc.config.json (now "specs")');
      expect(r.stderr).not.toContain("no problems");
    }
  });

  it("without a config, the hint says how to name the folder; specs in a subfolder are not read, and the hint says so", async () => {
    const dir = project({ "specs/nested/Axpby.json": "{}\n" });
    const r = await runCli(["lint"], dir);
    expect(r.code).toBe(1);
    expect(headers(r.stderr)).toEqual([`error[no_specs]: no spec files: the specs folder ${path.join(dir, "specs")} holds no .json file`]);
    expect(hints(r.stderr)).toEqual([
      "add a kernel spec (a .json file) to the folder (`npx kernelc init` writes an example), or create kernelc.config.json with \"specs\" naming the folder that holds your specs; only a folder's own .json files are read, not its subfolders'",
    ]);
  });

  it("lint of paths that hold no .json file names the paths given", async () => {
    const dir = project({ "notes/readme.txt": "not a spec\n" });
    const one = await runCli(["lint", "notes"], dir);
    expect(one.code).toBe(1);
    expect(headers(one.stderr)).toEqual(["error[no_specs]: no spec files: notes holds no .json file"]);
    expect(hints(one.stderr)).toEqual([
      "give spec files (*.json) or folders that hold them; only a folder's own .json files are read, not its subfolders'",
    ]);
    const two = await runCli(["lint", "--no-render", "notes", "templates"], dir);
    expect(two.code).toBe(1);
    expect(headers(two.stderr)).toEqual(["error[no_specs]: no spec files: none of notes, templates holds a .json file"]);
  });

  it("a specs folder that does not exist: file_unreadable, with a hint at the config's field or at the path given", async () => {
    const dir = project({ "kernelc.config.json": '{ "specs": "kernels", "profiles": ["core"] }\n' });
    const fromConfig = await runCli(["lint"], dir);
    expect(fromConfig.code).toBe(1);
    expect(headers(fromConfig.stderr)).toEqual([`error[file_unreadable]: cannot read ${path.join(dir, "kernels")}: it does not exist`]);
    expect(hints(fromConfig.stderr)).toEqual([
      'the "specs" field of kernelc.config.json names this folder ("kernels"): create it and add a spec, or set "specs" to the folder that holds your specs',
    ]);
    const given = await runCli(["lint", "--no-render", "nope"], dir);
    expect(given.code).toBe(1);
    expect(hints(given.stderr)).toEqual(["check the path: spec files and folders are relative to the current folder"]);
  });

  it("build of an empty specs folder fails and writes nothing", async () => {
    const dir = project({ "kernelc.config.json": '{ "profiles": ["core"] }\n' });
    const r = await runCli(["build"], dir);
    expect(r.code).toBe(1);
    expect(headers(r.stderr)).toEqual([`error[no_specs]: no spec files: the specs folder ${path.join(dir, "specs")} holds no .json file`]);
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
  });

  it("the API's lint() and build() report no_specs as data", async () => {
    const dir = project();
    const linted = lint({ cwd: dir });
    expect(linted.ok).toBe(false);
    expect(linted.diagnostics.map((d) => [d.code, d.location?.file])).toEqual([["no_specs", path.join(dir, "specs")]]);
    const built = await build({ cwd: dir });
    expect(built.ok).toBe(false);
    expect(built.files.size).toBe(0);
    expect(built.diagnostics.map((d) => d.code)).toEqual(["no_specs"]);
    fs.mkdirSync(path.join(dir, "empty"));
    expect(lint({ cwd: dir, paths: ["empty"] }).diagnostics.map((d) => d.message)).toEqual(["no spec files: empty holds no .json file"]);
  });
});
