/** `kernelc --version`, `kernelc init` (the result lints, builds and explains) and `lint` reading the config. */
import { describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { INIT_FILES } from "../../src/cli/init-command.js";
import { KERNELC_VERSION } from "../../src/core/version.js";
import { runCli } from "../support/cli.js";

const root = path.resolve(__dirname, "../..");

const run = runCli;

const tmp = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-init-"));

describe("kernelc --version", () => {
  it("prints package.json's version, which the compiler stamps into generated files", async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };
    expect(KERNELC_VERSION).toBe(pkg.version);
    for (const flag of ["--version", "-V"]) {
      const r = await run([flag], root);
      expect(r).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: "" });
    }
  });
});

describe("kernelc init", () => {
  it("writes a commented config, spec, template and call into a new folder, and the project lints, builds and explains", async () => {
    const dir = tmp();
    const r = await run(["init", "proj"], dir);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      "created proj/kernelc.config.json, proj/specs/Axpby.json, proj/templates/axpby.wgsl.jinja, proj/calls/axpby.json",
    );
    const proj = path.join(dir, "proj");
    for (const [rel, text] of INIT_FILES) expect(fs.readFileSync(path.join(proj, rel), "utf8")).toBe(text);
    for (const rel of ["kernelc.config.json", "specs/Axpby.json", "calls/axpby.json"]) {
      expect((JSON.parse(INIT_FILES.get(rel)!) as { $comment?: unknown }).$comment, rel).toBeInstanceOf(Array);
    }
    expect(INIT_FILES.get("templates/axpby.wgsl.jinja")).toMatch(/^\{#[\s\S]+#\}/);

    const lint = await run(["lint"], proj);
    expect(lint).toMatchObject({ code: 0, stdout: "" });
    expect(lint.stderr).toMatch(/^1 spec checked, 1 shader rendered and validated for \d+ profiles?, no problems\n$/);
    const build = await run(["build"], proj);
    expect(build.stderr).toBe("wrote out/: 2 profiles, 1 shader\n");
    expect(build.code).toBe(0);
    const out = fs.readdirSync(path.join(proj, "out")).sort();
    expect(out).toEqual([".kernelc-out", "build-info.json", "core", "desktop-32k", "index.ts", "profiles.json", "shaders"]);
    const explain = await run(["explain", "Axpby", "--profile", "core", "--call", "calls/axpby.json"], proj);
    expect(explain.code).toBe(0);
    expect(explain.stdout).toContain("call of Axpby on profile core:\n  picked scalar");
    // The example's tunable is an ordered fallback, as its comment says: 256 where it fits, 64 on
    // compat, whose 128 invocations per workgroup prune 256 (the example listed `values` that no
    // condition could ever reach, and its comment said a shader was built for each value).
    expect(explain.stdout).toContain("candidates for T=float32; WG=256 (built):");
    expect(explain.stdout).toContain("candidates for T=float32; WG=64 (skipped: an earlier combination is built):");
    const compat = await run(["explain", "Axpby", "--profile", "compat"], proj);
    expect(compat.code).toBe(0);
    expect(compat.stdout).toContain("candidates for T=float32; WG=256 (no variant survives):");
    expect(compat.stdout).toContain("candidates for T=float32; WG=64 (built):");
    expect(INIT_FILES.get("specs/Axpby.json")).not.toContain("for each value");
  });

  it("writes into the current folder when it holds other files, but never over an existing file", async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, "package.json"), "{}\n");
    expect((await run(["init"], dir)).code).toBe(0);
    expect(fs.readFileSync(path.join(dir, "package.json"), "utf8")).toBe("{}\n");

    const other = tmp();
    fs.mkdirSync(path.join(other, "specs"));
    fs.writeFileSync(path.join(other, "specs", "Axpby.json"), "mine\n");
    const r = await run(["init"], other);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[init_file_exists]: `specs/Axpby.json` already exists; kernelc init never overwrites a file");
    expect(r.stderr).toContain("hint: run kernelc init in an empty or new folder");
    expect(r.stderr).not.toContain("kernelc.config.json");
    // All or nothing: no other file was written.
    expect(fs.readdirSync(other).sort()).toEqual(["specs"]);
    expect(fs.readdirSync(path.join(other, "specs"))).toEqual(["Axpby.json"]);
    expect(fs.readFileSync(path.join(other, "specs", "Axpby.json"), "utf8")).toBe("mine\n");
  });

  it("refuses a target that is a file, or a project folder that is a file, with a diagnostic (no stack trace)", async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, "templates"), "not a folder\n");
    const r = await run(["init"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[init_file_exists]: `templates` exists and is not a folder kernelc init can write into");
    expect(r.stderr).not.toMatch(/\n\s+at /);
    fs.writeFileSync(path.join(dir, "proj"), "x");
    expect((await run(["init", "proj"], dir)).code).toBe(1);
  });
});

describe("kernelc lint and the config", () => {
  it("lints the config's specs folder with its templates when no path is given, and takes --config", async () => {
    const dir = tmp();
    expect((await run(["init", "p"], dir)).code).toBe(0);
    // Move the project's folders and point a second config at them.
    fs.renameSync(path.join(dir, "p", "specs"), path.join(dir, "p", "kernels"));
    fs.renameSync(path.join(dir, "p", "templates"), path.join(dir, "p", "wgsl"));
    fs.writeFileSync(path.join(dir, "p", "other.json"), JSON.stringify({ specs: "kernels", templates: "wgsl" }));
    const viaConfig = await run(["lint", "--config", "p/other.json"], dir);
    expect(viaConfig).toMatchObject({ code: 0, stdout: "" });
    // Every default profile: WG 256 where it fits, 64 on compat.
    expect(viaConfig.stderr).toBe("1 spec checked, 2 shaders rendered and validated for 9 profiles, no problems\n");
    // The default config still names specs/ and templates/, which are gone now.
    const viaDefault = await run(["lint"], path.join(dir, "p"));
    expect(viaDefault.code).toBe(1);
    expect(viaDefault.stderr).toContain("specs");
    // A path given on the command line is linted with the config's templates folder.
    fs.writeFileSync(path.join(dir, "p", "kernelc.config.json"), JSON.stringify({ templates: "wgsl" }));
    expect((await run(["lint", "kernels"], path.join(dir, "p"))).code).toBe(0);
    const missing = await run(["lint", "--config", "nope.json"], dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("cannot read the config file");
  });
});
