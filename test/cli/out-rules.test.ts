/**
 * Where a build may write (issue 9.1): every reproduction of the issue (`--out .`, `..`, `/`,
 * `specs`, config `"out": "../victim"`, a symlink `up -> ..`) exits 1 with `out_unsafe` and leaves
 * every file in place; an existing folder kernelc did not write is refused (`out_not_ours`); an
 * out/ written before the marker existed is accepted when its build-info.json matches every file.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildInfoDigest } from "../../src/core/out-folder.js";
import { kernelc, makeProject, removeProjects, snapshot, touchTemplate } from "./out-project.js";

afterAll(removeProjects);

/** Runs a build that must be refused, and checks that nothing changed in the project's parent folder. */
async function expectRefused(root: string, argv: string[], code: string, message: RegExp): Promise<void> {
  const parent = path.dirname(root);
  const before = snapshot(parent);
  const r = await kernelc(["build", ...argv], root);
  expect(r.stderr).toMatch(new RegExp(`error\\[${code}\\]`));
  expect(r.stderr).toMatch(message);
  expect(r.stderr).toMatch(/hint: /);
  expect(r.stderr).not.toMatch(/internal error/);
  expect(r.code).toBe(1);
  expect(snapshot(parent)).toEqual(before);
  expect(fs.readFileSync(path.join(root, "sentinel.txt"), "utf8")).toBe("project sentinel\n");
  expect(fs.readFileSync(path.join(parent, "sentinel.txt"), "utf8")).toBe("parent sentinel\n");
}

describe("build --out: unsafe folders are refused and nothing is touched", () => {
  const cases: [string, RegExp][] = [
    [".", /\(--out \.\): it is the project root/],
    ["..", /it contains the project root/],
    ["/", /refusing to write the output folder \/ .*it contains the project root/],
    ["specs", /it is the specs folder "specs"/],
    ["specs/generated", /it is inside the specs folder/],
    ["templates", /it is the templates folder/],
    ["../victim", /it is outside the project/],
    [".git", /it is the \.git folder/],
    ["node_modules/kernels", /it is inside the node_modules folder/],
    ["pkg/node_modules/x", /it is inside a node_modules folder/],
    ["out/../..", /it contains the project root/],
    ["gen\u001b[2Jx", /its path holds a control character/],
    ["gen\nerror: fake", /its path holds a control character/],
    // Names Windows cannot create: refused on every system, so that a project and its committed out/ work there too.
    ["gen/CON", /\(--out gen\/CON\): it cannot be created on Windows: "CON" is a name Windows reserves for a device/],
    ["nul.txt", /it cannot be created on Windows: "nul\.txt" is \(by its base "nul"\) a name Windows reserves/],
    ["Com9/x", /"Com9" is a name Windows reserves/],
    ["lpt\u00b2", /"lpt\u00b2" is a name Windows reserves/],
    ["out.", /"out\." ends with a dot, which Windows drops from a name/],
    ["gen/out ", /"out " ends with a space/],
    ["a:b", /"a:b" holds :, which Windows does not allow in a name/],
    ["gen/a<b", /holds </],
    ["a>b", /holds >/],
    ['a"b', /holds "/],
    ["a|b", /holds \|/],
    ["a?b", /holds \?/],
    ["a*b", /holds \*/],
  ];
  for (const [out, message] of cases) {
    it(`--out ${out}`, async () => {
      const root = makeProject();
      fs.mkdirSync(path.join(root, ".git"));
      fs.writeFileSync(path.join(root, ".git/HEAD"), "ref: refs/heads/main\n");
      fs.mkdirSync(path.join(path.dirname(root), "victim"));
      fs.writeFileSync(path.join(path.dirname(root), "victim/keep.txt"), "victim sentinel\n");
      await expectRefused(root, ["--out", out], "out_unsafe", message);
    });
  }

  it("--out a name Windows cannot create: the hint names --out and a portable name; the config's out names its key", async () => {
    const root = makeProject();
    const r = await kernelc(["build", "--out", "gen/Aux.d"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error\[out_unsafe\]: refusing to write the output folder \S+ \(--out gen\/Aux\.d\): it cannot be created on Windows/,
    );
    expect(r.stderr).toMatch(/hint: use a portable path, such as --out gen\/Aux-out\.d \(no device name like CON or NUL/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(fs.existsSync(path.join(root, "gen"))).toBe(false);
    fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify({ out: "gen/Aux.d" }));
    const c = await kernelc(["build"], root);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(
      /error\[config_invalid\]: out "gen\/Aux\.d" cannot be created on Windows: "Aux\.d" is \(by its base "Aux"\) a name Windows reserves/,
    );
    expect(c.stderr).toMatch(/kernelc\.config\.json:1:\d+ \(\/out\)/);
    expect(c.stderr).toMatch(/hint: rename the folder and set "out" to a portable path, such as "gen\/Aux-out\.d"/);
    expect(fs.existsSync(path.join(root, "gen"))).toBe(false);
    // A portable --out builds.
    fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify({ specs: "specs", profiles: ["core"] }));
    expect((await kernelc(["build", "--out", "gen/out"], root)).code).toBe(0);
  });

  it("a specs or templates folder Windows cannot create builds and lints here, with a warning naming the key", async () => {
    const root = makeProject();
    fs.renameSync(path.join(root, "templates"), path.join(root, "templates."));
    fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify({ templates: "templates.", profiles: ["core"] }));
    for (const argv of [["build"], ["lint"], ["lint", "--no-render"]]) {
      const r = await kernelc(argv, root);
      expect(r.code, `${argv.join(" ")}\n${r.stderr}`).toBe(0);
      expect(r.stderr, argv.join(" ")).toMatch(
        /warning\[config_invalid\]: templates "templates\." cannot be created on Windows: "templates\." ends with a dot/,
      );
      expect(r.stderr, argv.join(" ")).toMatch(/hint: rename the folder and set "templates" to a portable path, such as "templates"/);
    }
  });

  it("--out an absolute path outside the project", async () => {
    const root = makeProject();
    await expectRefused(root, ["--out", path.join(path.dirname(root), "elsewhere")], "out_unsafe", /it is outside the project/);
  });

  it("--out a folder that contains specs/ (specs moved under it by the config)", async () => {
    const root = makeProject({ specs: "src/specs" });
    fs.mkdirSync(path.join(root, "src"));
    fs.renameSync(path.join(root, "specs"), path.join(root, "src/specs"));
    await expectRefused(root, ["--out", "src"], "out_unsafe", /it contains the specs folder "src\/specs"/);
  });

  it("--format json prints the refusal as data", async () => {
    const root = makeProject();
    const r = await kernelc(["build", "--out", "..", "--format", "json"], root);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as unknown;
    expect(JSON.stringify(out)).toMatch(/"code":"out_unsafe"/);
  });

  it("--check refuses an unsafe folder too (it never reads / into memory)", async () => {
    const root = makeProject();
    const r = await kernelc(["build", "--check", "--out", "/"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_unsafe\]/);
  });
});

describe("config out: unsafe folders are refused, also through symlinks", () => {
  it('"out": "../victim" empties nothing', async () => {
    const root = makeProject({ out: "../victim" });
    fs.mkdirSync(path.join(path.dirname(root), "victim"));
    fs.writeFileSync(path.join(path.dirname(root), "victim/keep.txt"), "victim sentinel\n");
    await expectRefused(root, [], "out_unsafe", /the config's out "\.\.\/victim".*outside the project/);
    const r = await kernelc(["build"], root);
    expect(r.stderr).toMatch(/kernelc\.config\.json/);
  });

  it('"out": "up/victim" with up -> .. is outside the project', async () => {
    const root = makeProject({ out: "up/victim" });
    fs.symlinkSync("..", path.join(root, "up"));
    fs.mkdirSync(path.join(path.dirname(root), "victim"));
    fs.writeFileSync(path.join(path.dirname(root), "victim/keep.txt"), "victim sentinel\n");
    await expectRefused(root, [], "out_unsafe", /victim.*it is outside the project/);
  });

  it('"out": "up/proj" with up -> .. is the project root itself', async () => {
    const root = makeProject({ out: "up/proj" });
    fs.symlinkSync("..", path.join(root, "up"));
    await expectRefused(root, [], "out_unsafe", /it is the project root/);
  });

  it('"out": "link/out" with link -> specs is inside specs/', async () => {
    const root = makeProject({ out: "link/out" });
    fs.symlinkSync("specs", path.join(root, "link"));
    await expectRefused(root, [], "out_unsafe", /it is inside the specs folder/);
  });

  it("--out up/../x resolves .. after following the symlink, as the OS does", async () => {
    const root = makeProject();
    fs.mkdirSync(path.join(root, "deep/er"), { recursive: true });
    fs.symlinkSync("deep/er", path.join(root, "up"));
    // up/.. is deep/, so this is deep/x inside the project: allowed.
    const r = await kernelc(["build", "--profile", "core", "--out", "up/../x"], root);
    expect(r.stderr).toMatch(/wrote deep\/x\//);
    expect(r.code).toBe(0);
    expect(fs.existsSync(path.join(root, "deep/x/.kernelc-out"))).toBe(true);
    expect(fs.existsSync(path.join(root, "x"))).toBe(false);
  });
});

describe("an existing folder kernelc did not write is never replaced", () => {
  it("a non-empty folder without the marker is refused", async () => {
    const root = makeProject();
    fs.mkdirSync(path.join(root, "out"));
    fs.writeFileSync(path.join(root, "out/notes.md"), "mine\n");
    await expectRefused(root, [], "out_not_ours", /out\/ exists and was not written by kernelc/);
  });

  it("a file where out/ should be is refused", async () => {
    const root = makeProject();
    fs.writeFileSync(path.join(root, "out"), "a file\n");
    await expectRefused(root, [], "out_not_ours", /it is not a folder/);
  });

  it("an empty folder is used, and the build marks it", async () => {
    const root = makeProject();
    fs.mkdirSync(path.join(root, "out"));
    const r = await kernelc(["build", "--profile", "core"], root);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(root, "out/.kernelc-out"), "utf8")).toMatch(/written by kernelc/);
  });

  it("an empty folder of the user's (--out) is filled in place, never removed and made again; a failed build leaves it empty", async () => {
    const root = makeProject();
    const mine = path.join(root, "gen/mine");
    fs.mkdirSync(mine, { recursive: true });
    const ino = fs.statSync(mine).ino;
    // A spec error: nothing is written, the folder stays as it was.
    fs.writeFileSync(path.join(root, "specs/Broken.json"), "{");
    expect((await kernelc(["build", "--out", "gen/mine"], root)).code).toBe(1);
    expect(fs.readdirSync(mine)).toEqual([]);
    fs.rmSync(path.join(root, "specs/Broken.json"));
    const r = await kernelc(["build", "--out", "gen/mine"], root);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.statSync(mine).ino).toBe(ino);
    expect(fs.readdirSync(mine)).toContain(".kernelc-out");
    expect(fs.existsSync(path.join(mine, ".kernelc-pending.json"))).toBe(false);
    expect(fs.readdirSync(path.join(root, "gen"))).toEqual(["mine"]);
    expect((await kernelc(["build", "--check", "--out", "gen/mine"], root)).code).toBe(0);
  });

  it("a user's folder (no marker) holding a copy of a generated file under another name, listed in a forged build-info.json, is refused", async () => {
    const { sha256Hex } = await import("../../src/core/hash.js");
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    // A copy of out/ without its dotfiles (kernelc's, were it not for the copy inside it).
    const mine = path.join(root, "mine");
    fs.cpSync(path.join(root, "out"), mine, { recursive: true });
    fs.rmSync(path.join(mine, ".kernelc-out"));
    fs.copyFileSync(path.join(mine, "core/dispatcher.ts"), path.join(mine, "core/dispatcher.backup.ts"));
    const infoFile = path.join(mine, "build-info.json");
    const info = JSON.parse(fs.readFileSync(infoFile, "utf8")) as { inputs: string; files: Record<string, string>; digest: string };
    info.files["core/dispatcher.backup.ts"] = sha256Hex(fs.readFileSync(path.join(mine, "core/dispatcher.backup.ts")));
    info.digest = buildInfoDigest(info.inputs, info.files);
    fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
    await expectRefused(
      root,
      ["--out", "mine"],
      "out_not_ours",
      /core\/dispatcher\.backup\.ts lacks kernelc's generated-file mark for its path/,
    );
    await expectRefused(root, ["--out", "mine", "--force"], "out_not_ours", /core\/dispatcher\.backup\.ts lacks/);
  });

  it("an out/ without the marker whose build-info.json matches every file is accepted and gets the marker, only while its digest binds it", async () => {
    const root = makeProject();
    expect((await kernelc(["build", "--profile", "core"], root)).code).toBe(0);
    fs.rmSync(path.join(root, "out/.kernelc-out"));
    const infoFile = path.join(root, "out/build-info.json");
    const info = JSON.parse(fs.readFileSync(infoFile, "utf8")) as { inputs: string; files: Record<string, string>; digest?: string };
    delete info.files[".kernelc-out"];
    // Without the digest kernelc writes into every build-info.json, the record proves nothing.
    delete info.digest;
    fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
    await expectRefused(
      root,
      ["--profile", "core"],
      "out_not_ours",
      /not exactly the build its build-info\.json describes \(build-info\.json was edited \(it has no digest\)\)/,
    );
    info.digest = buildInfoDigest(info.inputs, info.files);
    fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
    const r = await kernelc(["build", "--profile", "core"], root);
    expect(r.stderr).toMatch(/wrote out\//);
    expect(r.code).toBe(0);
    expect(fs.existsSync(path.join(root, "out/.kernelc-out"))).toBe(true);
  });

  it("an out/ whose marker alone was lost (copied without dotfiles) but that matches its build-info.json is kernelc's: rebuilt, marker back", async () => {
    const root = makeProject();
    expect((await kernelc(["build"], root)).code).toBe(0);
    fs.rmSync(path.join(root, "out/.kernelc-out"));
    touchTemplate(root, "marker-lost");
    const r = await kernelc(["build"], root);
    expect(r.stderr).toMatch(/^wrote out\//);
    expect(r.code).toBe(0);
    expect(fs.existsSync(path.join(root, "out/.kernelc-out"))).toBe(true);
    // With a file changed as well, nothing proves it is kernelc's.
    fs.rmSync(path.join(root, "out/.kernelc-out"));
    fs.appendFileSync(path.join(root, "out/core/dispatcher.ts"), "// my change\n");
    await expectRefused(root, [], "out_not_ours", /core\/dispatcher\.ts was changed/);
  });

  it("a legacy out/ with a file that differs from its build-info.json is refused", async () => {
    const root = makeProject();
    expect((await kernelc(["build", "--profile", "core"], root)).code).toBe(0);
    fs.rmSync(path.join(root, "out/.kernelc-out"));
    fs.appendFileSync(path.join(root, "out/core/dispatcher.ts"), "// my change\n");
    await expectRefused(
      root,
      ["--force"],
      "out_not_ours",
      /not exactly the build its build-info\.json describes \(.*core\/dispatcher\.ts was changed/,
    );
  });

  it("a user's folder (no marker) with a build-info.json forged to list its files with their real hashes is refused", async () => {
    const { sha256Hex } = await import("../../src/core/hash.js");
    const root = makeProject();
    const out = path.join(root, "out");
    fs.mkdirSync(path.join(out, "notes"), { recursive: true });
    fs.writeFileSync(path.join(out, "notes/todo.md"), "my notes\n");
    fs.writeFileSync(path.join(out, "helpers.ts"), "export const mine = 1;\n");
    const files: Record<string, string> = {};
    for (const rel of ["notes/todo.md", "helpers.ts"]) files[rel] = sha256Hex(fs.readFileSync(path.join(out, rel)));
    for (const withDigest of [false, true]) {
      const info = {
        generatedBy: "kernelc 0.1.0; do not edit",
        inputs: "x",
        files,
        ...(withDigest ? { digest: buildInfoDigest("x", files) } : {}),
      };
      fs.writeFileSync(path.join(out, "build-info.json"), JSON.stringify(info, null, 2) + "\n");
      await expectRefused(
        root,
        [],
        "out_not_ours",
        /not exactly the build its build-info\.json describes \((?:build-info\.json was edited \(it has no digest\); )?notes\/todo\.md lacks kernelc's generated-file mark for its path; helpers\.ts lacks/,
      );
      await expectRefused(root, ["--force"], "out_not_ours", /helpers\.ts lacks kernelc's generated-file mark for its path/);
    }
  });

  it("a folder whose build-info.json is not kernelc's is refused", async () => {
    const root = makeProject();
    fs.mkdirSync(path.join(root, "out"));
    fs.writeFileSync(path.join(root, "out/build-info.json"), JSON.stringify({ generatedBy: "someone else", inputs: "x", files: {} }));
    await expectRefused(root, [], "out_not_ours", /no \.kernelc-out marker and no build-info\.json of kernelc/);
  });

  it("the repository's committed out/ counts as kernelc's (legacy or marked)", async () => {
    const { checkOwnership } = await import("../../src/cli/out-dir.js");
    const out = path.resolve(__dirname, "../../out");
    expect(["legacy", "marked"]).toContain(checkOwnership({ dir: out, shown: "out" }));
  });
});
