/**
 * Input files a pull request can put in place that are not what they seem: a FIFO, a symlink to
 * /dev/zero, a file of gigabytes, a specs or templates folder outside the project. `kernelc lint`
 * and `build` each end with a located diagnostic and exit 1 (or build, where kernelc never reads
 * the file) — never a hang on a FIFO (readFileSync blocks until a writer opens it), an out-of-memory
 * abort on a device, an internal error past 2 GiB, or a diagnostic that quotes a file from
 * elsewhere on the machine.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { axpbyProject } from "../support/axpby-project.js";
import { runCli } from "../support/cli.js";

const posix = process.platform !== "win32";
const MiB = 1024 * 1024;

/** A FIFO (named pipe) at `file`, replacing what is there. */
function mkfifo(file: string): void {
  fs.rmSync(file, { force: true });
  execFileSync("mkfifo", [file]);
}

/** A sparse file of `bytes` bytes (no disk space used). */
function sparse(file: string, bytes: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, "");
  fs.truncateSync(file, bytes);
}

async function lintAndBuild(
  root: string,
): Promise<{ lint: Awaited<ReturnType<typeof runCli>>; build: Awaited<ReturnType<typeof runCli>> }> {
  const lint = await runCli(["lint"], root);
  const build = await runCli(["build"], root);
  for (const r of [lint, build]) expect(r.stdout + r.stderr).not.toMatch(/\n\s+at |internal error/);
  return { lint, build };
}

/** Both fail with `code`, the message matching `message`, and the build writes nothing. */
async function expectRefused(root: string, code: string, message: RegExp): Promise<void> {
  const { lint, build } = await lintAndBuild(root);
  for (const r of [lint, build]) {
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error[${code}]`);
    expect(r.stderr).toMatch(message);
  }
  expect(fs.existsSync(path.join(root, "out"))).toBe(false);
}

describe.runIf(posix)("templates that are not regular files of a sane size", () => {
  it("an included FIFO inside templates/ is a template_error at the include, not a hang", async () => {
    const root = axpbyProject({ appendTemplate: '{% include "lib/pipe.jinja" %}\n' });
    fs.mkdirSync(path.join(root, "templates/lib"));
    mkfifo(path.join(root, "templates/lib/pipe.jinja"));
    await expectRefused(root, "template_error", /cannot load template "lib\/pipe\.jinja": it is a FIFO \(named pipe\), not a regular file/);
  }, 60_000);

  it("an included symlink to /dev/zero is refused as outside the folder (it was read until memory ran out)", async () => {
    const root = axpbyProject({ appendTemplate: '{% include "lib/zero.jinja" %}\n' });
    fs.mkdirSync(path.join(root, "templates/lib"));
    fs.symlinkSync("/dev/zero", path.join(root, "templates/lib/zero.jinja"));
    await expectRefused(root, "template_error", /resolves \(through a symlink\) to \/dev\/zero, outside the templates folder/);
  }, 60_000);

  it("an included template over 4 MiB is a template_limit_exceeded at the include", async () => {
    const root = axpbyProject({ appendTemplate: '{% include "big.jinja" %}\n' });
    sparse(path.join(root, "templates/big.jinja"), 5 * MiB);
    await expectRefused(
      root,
      "template_limit_exceeded",
      /cannot load template "big\.jinja": it is 5242880 bytes, more than the limit of 4194304 bytes/,
    );
  }, 60_000);

  it("a pass's shader over 4 MiB is file_too_large at the pass's shader", async () => {
    const root = axpbyProject({ spec: (s) => (s.variants[0].passes[0].shader = "big.wgsl.jinja") });
    sparse(path.join(root, "templates/big.wgsl.jinja"), 5 * MiB);
    await expectRefused(
      root,
      "file_too_large",
      /shader template `big\.wgsl\.jinja` of pass `main` is 5242880 bytes[^]*\(\/variants\/0\/passes\/0\/shader\)/,
    );
  }, 60_000);
});

describe.runIf(posix)("the config, the tune file and specs", () => {
  it("kernelc.config.json as a FIFO or a symlink to /dev/zero is file_unreadable; over 4 MiB file_too_large", async () => {
    const root = axpbyProject();
    const config = path.join(root, "kernelc.config.json");
    mkfifo(config);
    await expectRefused(root, "file_unreadable", /cannot read kernelc\.config\.json: it is a FIFO \(named pipe\), not a regular file/);
    fs.rmSync(config);
    fs.symlinkSync("/dev/zero", config);
    await expectRefused(root, "file_unreadable", /cannot read kernelc\.config\.json: it is a device, not a regular file/);
    fs.rmSync(config);
    sparse(config, 5 * MiB);
    await expectRefused(
      root,
      "file_too_large",
      /cannot read kernelc\.config\.json: it is 5242880 bytes, more than the limit of 4194304 bytes/,
    );
  }, 60_000);

  it("--config and --call naming a FIFO, /dev/zero, a folder, a missing or a huge file: file_unreadable or file_too_large, never a hang", async () => {
    const root = axpbyProject();
    mkfifo(path.join(root, "pipe.json"));
    fs.mkdirSync(path.join(root, "folder.json"));
    sparse(path.join(root, "huge.json"), 5 * MiB);
    const cases: [string, string, RegExp][] = [
      ["pipe.json", "file_unreadable", /pipe\.json: it is a FIFO \(named pipe\), not a regular file/],
      ["/dev/zero", "file_unreadable", /\/dev\/zero: it is a device, not a regular file/],
      ["folder.json", "file_unreadable", /folder\.json: it is a folder, not a regular file/],
      ["missing.json", "file_unreadable", /missing\.json: it does not exist/],
      ["huge.json", "file_too_large", /huge\.json: it is 5242880 bytes, more than the limit of 4194304 bytes/],
    ];
    for (const [file, code, message] of cases) {
      for (const argv of [
        ["build", "--config", file],
        ["explain", "Axpby", "--profile", "core", "--call", file],
      ]) {
        const r = await runCli(argv, root);
        expect(r.stdout + r.stderr, argv.join(" ")).not.toMatch(/\n\s+at |internal error|ENOENT:|EISDIR:/);
        expect(r.stderr, argv.join(" ")).toContain(`error[${code}]: cannot read the ${argv[0] === "build" ? "config" : "call"} file `);
        expect(r.stderr, argv.join(" ")).toMatch(message);
        expect(r.code, argv.join(" ")).toBe(1);
      }
    }
    expect(fs.existsSync(path.join(root, "out"))).toBe(false);
  }, 60_000);

  it("kernelc.tune.json as a FIFO is file_unreadable", async () => {
    const root = axpbyProject();
    mkfifo(path.join(root, "kernelc.tune.json"));
    await expectRefused(root, "file_unreadable", /cannot read kernelc\.tune\.json: it is a FIFO/);
  }, 60_000);

  it("a spec named on the command line that is a FIFO is file_unreadable", async () => {
    const root = axpbyProject();
    mkfifo(path.join(root, "specs/Pipe.json"));
    const r = await runCli(["lint", "specs/Pipe.json"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[file_unreadable\]: cannot read .*Pipe\.json: it is a FIFO/);
  }, 60_000);

  it("a file over 2 GiB that kernelc never reads, under specs/ or templates/, does not stop the build (it is hashed in chunks)", async () => {
    const root = axpbyProject();
    sparse(path.join(root, "templates/assets/blob.bin"), 2 * 1024 * MiB + 1);
    const { lint, build } = await lintAndBuild(root);
    expect(lint.code).toBe(0);
    expect(build.code).toBe(0);
    expect((await runCli(["build", "--check"], root)).code).toBe(0);
  }, 120_000);
});

describe("specs and templates folders stay inside the project", () => {
  it("a config templates folder outside the project is config_invalid (with /etc and a shader `passwd`, a Tint error quoted its first line)", async () => {
    const root = axpbyProject({
      config: { profiles: ["core"], templates: os.tmpdir() },
      spec: (s) => (s.variants[0].passes[0].shader = "x.jinja"),
    });
    await expectRefused(root, "config_invalid", /templates ".*" is not a folder inside the project/);
  }, 60_000);

  it('config "specs": "../elsewhere" is config_invalid, at /specs', async () => {
    const root = axpbyProject({ config: { profiles: ["core"], specs: "../elsewhere" } });
    const { lint } = await lintAndBuild(root);
    expect(lint.code).toBe(1);
    expect(lint.stderr).toMatch(/error\[config_invalid\]: specs "\.\.\/elsewhere" is not a folder inside the project[^]*\(\/specs\)/);
  }, 60_000);

  it.runIf(posix)(
    "a committed symlink templates -> a folder outside is config_invalid, with or without a config file",
    async () => {
      const outside = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-outside-"));
      fs.writeFileSync(path.join(outside, "secret.jinja"), "TOKEN=hunter2\n");
      const root = axpbyProject({ spec: (s) => (s.variants[0].passes[0].shader = "secret.jinja") });
      fs.rmSync(path.join(root, "templates"), { recursive: true });
      fs.symlinkSync(outside, path.join(root, "templates"));
      await expectRefused(root, "config_invalid", /templates "templates" is not a folder inside the project .* resolves to /);
      fs.rmSync(path.join(root, "kernelc.config.json"));
      const { lint, build } = await lintAndBuild(root);
      for (const r of [lint, build]) {
        expect(r.code).toBe(1);
        expect(r.stderr).toContain("error[config_invalid]");
        expect(r.stderr).not.toContain("hunter2");
      }
    },
    60_000,
  );

  it("a project in a repository (a .git entry above it) reads specs and templates of that repository, and nothing outside it", async () => {
    const repo = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-repo-"));
    fs.mkdirSync(path.join(repo, ".git"));
    const root = axpbyProject();
    const app = path.join(repo, "examples", "app");
    fs.mkdirSync(app, { recursive: true });
    fs.renameSync(path.join(root, "specs"), path.join(repo, "specs"));
    fs.renameSync(path.join(root, "templates"), path.join(repo, "templates"));
    fs.writeFileSync(
      path.join(app, "kernelc.config.json"),
      JSON.stringify({ profiles: ["core"], specs: "../../specs", templates: "../../templates" }),
    );
    const { lint, build } = await lintAndBuild(app);
    expect([lint.code, build.code], lint.stderr + build.stderr).toEqual([0, 0]);
    fs.writeFileSync(path.join(app, "kernelc.config.json"), JSON.stringify({ profiles: ["core"], templates: "../../../elsewhere" }));
    const refused = await lintAndBuild(app);
    expect(refused.lint.code).toBe(1);
    expect(refused.lint.stderr).toMatch(
      /error\[config_invalid\]: templates "\.\.\/\.\.\/\.\.\/elsewhere" is not a folder inside the repository .*kernelc-repo-[^ ]* \(the project is /,
    );
  }, 120_000);

  it.runIf(posix)(
    "a templates folder that is a symlink to a folder inside the project is fine",
    async () => {
      const root = axpbyProject();
      fs.mkdirSync(path.join(root, "shared"));
      fs.renameSync(path.join(root, "templates"), path.join(root, "shared/templates"));
      fs.symlinkSync("shared/templates", path.join(root, "templates"));
      const { lint, build } = await lintAndBuild(root);
      expect([lint.code, build.code]).toEqual([0, 0]);
    },
    60_000,
  );
});

describe("config pins name what exists", () => {
  it("a pin of a tunable the kernel does not declare is unknown_tunable at the pin, naming the declared ones (it was ignored silently)", async () => {
    const root = axpbyProject({ config: { profiles: ["core"], tunables: { "*": { Axpby: { WG_SIZE: 128 } } } } });
    const { lint, build } = await lintAndBuild(root);
    for (const r of [lint, build]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/error\[unknown_tunable\]: the config pins tunable `WG_SIZE` of Axpby, but Axpby declares no such tunable/);
      expect(r.stderr).toMatch(/kernelc\.config\.json:\d+:\d+ \(\/tunables\/\*\/Axpby\/WG_SIZE\)/);
      expect(r.stderr).toMatch(/hint: the tunables of Axpby are WG/);
    }
  }, 60_000);

  it("a pin of a kernel no spec defines is config_invalid in a build of all specs", async () => {
    const root = axpbyProject({ config: { profiles: ["core"], tunables: { core: { Axbpy: { WG: 128 } } } } });
    const build = await runCli(["build"], root);
    expect(build.code).toBe(1);
    expect(build.stderr).toMatch(
      /error\[config_invalid\]: the config pins tunables of kernel `Axbpy`, which no spec defines[^]*\(\/tunables\/core\/Axbpy\)[^]*Axpby/,
    );
  }, 60_000);

  it("pins of declared tunables are fine", async () => {
    const root = axpbyProject({ config: { profiles: ["core"], tunables: { "*": { Axpby: { WG: 128 } } } } });
    const { lint, build } = await lintAndBuild(root);
    expect([lint.code, build.code]).toEqual([0, 0]);
  }, 60_000);
});

describe("kernelc.tune.json looked up by names that Object.prototype has", () => {
  const tuneFile = (profiles: object): string => JSON.stringify({ generatedBy: "kernelc 0.1.0", profiles });

  it("explain of a kernel named `constructor`, with a tune file whose profile has no record of it, explains (it was an internal error)", async () => {
    const root = axpbyProject({ spec: (s) => (s.name = "constructor") });
    fs.writeFileSync(path.join(root, "kernelc.tune.json"), tuneFile({ core: {} }));
    const r = await runCli(["explain", "constructor", "--profile", "core"], root);
    expect(r.stdout + r.stderr).not.toMatch(/\n\s+at |internal error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^constructor on profile core/);
    expect(r.stdout).not.toMatch(/tuned \(kernelc\.tune\.json\)/);
  }, 60_000);

  it("explain and build on a profile named `constructor` of a kernel named `assign` ignore Object's members", async () => {
    const root = axpbyProject({
      spec: (s) => (s.name = "assign"),
      config: { profiles: ["constructor"], defineProfiles: [{ name: "constructor" }] },
    });
    fs.writeFileSync(path.join(root, "kernelc.tune.json"), tuneFile({}));
    const explain = await runCli(["explain", "assign", "--profile", "constructor"], root);
    const build = await runCli(["build"], root);
    for (const r of [explain, build]) {
      expect(r.stdout + r.stderr).not.toMatch(/\n\s+at |internal error/);
      expect(r.code).toBe(0);
    }
    expect(explain.stdout).not.toMatch(/tuned \(kernelc\.tune\.json\)/);
  }, 60_000);
});

describe.runIf(posix)("kernelc.config.json and kernelc.tune.json that a symbolic link takes out of the project", () => {
  it("are refused unread, never quoted (a json_syntax code frame quoted the first line of the file they point at)", async () => {
    const secret = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-secret-")), "token.txt");
    fs.writeFileSync(secret, "SECRET_TOKEN=abc123\n");
    const withConfig = axpbyProject();
    fs.rmSync(path.join(withConfig, "kernelc.config.json"));
    fs.symlinkSync(secret, path.join(withConfig, "kernelc.config.json"));
    const withTune = axpbyProject();
    fs.symlinkSync(secret, path.join(withTune, "kernelc.tune.json"));
    for (const [root, code, name] of [
      [withConfig, "config_invalid", "kernelc.config.json"],
      [withTune, "tune_file_invalid", "kernelc.tune.json"],
    ] as const) {
      const { lint, build } = await lintAndBuild(root);
      for (const r of [lint, build]) {
        expect(r.code).toBe(1);
        expect(r.stdout + r.stderr).not.toContain("SECRET_TOKEN");
        expect(r.stderr).toContain(
          `error[${code}]: ${name} resolves (through a symbolic link) to ${fs.realpathSync(secret)}, outside the project`,
        );
      }
      expect(fs.existsSync(path.join(root, "out"))).toBe(false);
    }
  }, 60_000);

  it("a link to a file inside the project is read as the file", async () => {
    const root = axpbyProject();
    fs.renameSync(path.join(root, "kernelc.config.json"), path.join(root, "real-config.json"));
    fs.symlinkSync("real-config.json", path.join(root, "kernelc.config.json"));
    const { lint } = await lintAndBuild(root);
    expect(lint.code).toBe(0);
  }, 60_000);
});
