import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runCli } from "../support/cli.js";

const root = path.resolve(__dirname, "../..");

const run = (argv: readonly string[], cwd = root): ReturnType<typeof runCli> => runCli(argv, cwd);

/** A project folder with one broken spec (two errors, one message spanning lines in its hint). */
function brokenProject(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-cli-"));
  fs.mkdirSync(path.join(dir, "specs"));
  fs.mkdirSync(path.join(dir, "templates"));
  const spec = {
    domain: "test",
    name: "Broken",
    sinceVersion: 1,
    inputs: { x: { onnx: "X", dtype: "T" } },
    outputs: {},
    typeConstraints: { T: ["float32"] },
    derive: { rows: "dim(shapes.x, 0)", bad: "rowz + 1" },
    variants: [{ id: "v", passes: [{ id: "p", name: "P", shader: "k.wgsl.jinja", bindings: [], dispatch: { x: "bad" } }] }],
  };
  fs.writeFileSync(path.join(dir, "specs", "broken.json"), JSON.stringify(spec, null, 2) + "\n");
  return dir;
}

describe("kernelc lint (in-process)", () => {
  it("lints the seed: exit 0, warnings only, on stderr in text format", async () => {
    const r = await run(["lint", "specs"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).not.toMatch(/^error\[/m);
    expect(r.stderr).toMatch(
      /^(\d+ errors?, \d+ warnings?|\d+ specs? checked, (\d+ shaders rendered and validated for \d+ profiles?, )?no problems)\n$/m,
    );
    expect(r.stderr).toMatch(/^0 errors, \d+ warnings?\n$|no problems/m);
    for (const m of r.stderr.matchAll(/^ {2}--> (\S+):(\d+):(\d+) \((\/[^)]*)\)$/gm)) {
      expect(m[1]).toMatch(/^specs\/\w+\.json$/);
    }
  });

  it("lints the default path (specs) when none is given", async () => {
    const a = await run(["lint"]);
    const b = await run(["lint", "specs"]);
    expect(a).toEqual(b);
  });

  it("exits 1 with text diagnostics for a broken spec, paths relative to cwd", async () => {
    const dir = brokenProject();
    const r = await run(["lint"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      [
        "error[unknown_name]: unknown name `rowz`: it is not a derive entry or a namespace",
        "  --> specs/broken.json:19:13 (/derive/bad)",
        "     |",
        '  19 |     "bad": "rowz + 1"',
        "     |             ^^^^",
        "  = hint: did you mean `rows`?",
        "",
        "error[shader_missing]: shader template `k.wgsl.jinja` of pass `p` does not exist in templates/",
        "  --> specs/broken.json:28:21 (/variants/0/passes/0/shader)",
        "     |",
        '  28 |           "shader": "k.wgsl.jinja",',
        "     |                     ^^^^^^^^^^^^^^",
        "  = hint: create templates/k.wgsl.jinja or fix the name",
        "2 errors, 0 warnings",
        "",
      ].join("\n"),
    );
  });

  it("a template named on the command line is read as a spec, and the hint says what lint takes", async () => {
    const r = await run(["lint", "--no-render", "specs/PagedAttention.json", "templates/paged-attention.wgsl.jinja"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error\[json_syntax\]: .*\n {2}--> templates\/paged-attention\.wgsl\.jinja:/m);
    expect(r.stderr).toContain(
      "  = hint: the file is read as a spec because the command line names it: kernelc lint takes spec files (*.json) and folders of them, and checks each template through the passes that name it\n",
    );
  });

  it("--format json prints a JSON array on stdout with every field", async () => {
    const dir = brokenProject();
    const r = await run(["lint", "--format", "json"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("");
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual({
      code: "unknown_name",
      severity: "error",
      message: "unknown name `rowz`: it is not a derive entry or a namespace",
      hint: "did you mean `rows`?",
      file: "specs/broken.json",
      line: 19,
      column: 13,
      endLine: 19,
      endColumn: 17,
      pointer: "/derive/bad",
      notes: [],
    });
    expect(rows[1]).toMatchObject({ code: "shader_missing", line: 28, column: 21, pointer: "/variants/0/passes/0/shader" });
  });

  it("--format json of a clean run is an empty array", async () => {
    const dir = brokenProject();
    const clean = JSON.parse(fs.readFileSync(path.join(dir, "specs/broken.json"), "utf8"));
    clean.derive = { rows: "dim(shapes.x, 0)" };
    clean.variants[0].passes[0].dispatch.x = "rows";
    fs.writeFileSync(path.join(dir, "specs/broken.json"), JSON.stringify(clean));
    fs.writeFileSync(
      path.join(dir, "templates/k.wgsl.jinja"),
      "{{ env.wgsl.resourceDeclarations }}\n@compute @workgroup_size(1)\nfn main() {}\n",
    );
    const r = await run(["lint", "--format", "json"], dir);
    expect(r).toEqual({ code: 0, stdout: "[]\n", stderr: "" });
    const text = await run(["lint"], dir);
    expect(text).toEqual({ code: 0, stdout: "", stderr: "1 spec checked, 1 shader rendered and validated for 9 profiles, no problems\n" });
    const specOnly = await run(["lint", "--no-render"], dir);
    expect(specOnly).toEqual({ code: 0, stdout: "", stderr: "1 spec checked, no problems\n" });
  });

  it("--format github prints workflow commands with escaped newlines", async () => {
    const dir = brokenProject();
    const r = await run(["lint", "--format", "github"], dir);
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toEqual([
      "::error file=specs/broken.json,line=19,col=13,endLine=19,endColumn=17,title=kernelc unknown_name::unknown name `rowz`: it is not a derive entry or a namespace [/derive/bad]%0Ahint: did you mean `rows`?",
      "::error file=specs/broken.json,line=28,col=21,endLine=28,endColumn=35,title=kernelc shader_missing::shader template `k.wgsl.jinja` of pass `p` does not exist in templates/ [/variants/0/passes/0/shader]%0Ahint: create templates/k.wgsl.jinja or fix the name",
    ]);
    for (const l of lines) expect(l).toMatch(/^::(error|warning) file=[^,]+,line=\d+,col=\d+,/);
  });

  it("--format github on the seed: one ::warning line per diagnostic", async () => {
    const r = await run(["lint", "specs", "--format", "github"]);
    expect(r.code).toBe(0);
    for (const l of r.stdout.split("\n").filter(Boolean))
      expect(l).toMatch(/^::warning file=specs\/\w+\.json,line=\d+,col=\d+,.*::.*%0Ahint: /);
  });

  it("a missing path is a user error (exit 1)", async () => {
    const r = await run(["lint", "no-such-folder"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error\[file_unreadable\]: cannot read .*no-such-folder: it does not exist$/m);
  });

  it("a bad --format is a usage error: exit 2", async () => {
    const r = await run(["lint", "--format", "xml"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("argument 'xml' is invalid. Allowed choices are text, json, github.");
    expect(r.stderr).toContain("(run `kernelc --help` for usage)");
    expect(r.stdout).toBe("");
  });

  it("an unknown command or option is a usage error: exit 2", async () => {
    expect((await run(["lnt"])).code).toBe(2);
    expect((await run(["lint", "--frmat", "json"])).code).toBe(2);
  });

  it("--help exits 0 and lists the commands", async () => {
    const r = await run(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: kernelc");
    for (const c of ["lint", "build", "explain", "profiles"]) expect(r.stdout).toContain(c);
    const lint = await run(["lint", "--help"]);
    expect(lint.code).toBe(0);
    expect(lint.stdout).toContain("--format <format>");
    expect(lint.stdout).toContain("--templates <dir>");
  });
});

describe("bin/kernelc.js (smoke test)", () => {
  // The binary runs from a temporary install: bin/ and package.json copied, schema/ and
  // node_modules/ linked, and dist/ compiled there from the current sources by tsc, whose exit
  // status must be 0. The repository's own dist/ is neither read nor written.
  let install = "";
  let bin = "";
  beforeAll(() => {
    install = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bin-"));
    fs.cpSync(path.join(root, "bin"), path.join(install, "bin"), { recursive: true });
    fs.copyFileSync(path.join(root, "package.json"), path.join(install, "package.json"));
    fs.symlinkSync(path.join(root, "schema"), path.join(install, "schema"));
    fs.symlinkSync(path.join(root, "node_modules"), path.join(install, "node_modules"));
    const tsc = spawnSync(
      process.execPath,
      [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json", "--outDir", path.join(install, "dist")],
      { cwd: root, encoding: "utf8" },
    );
    expect(tsc.status, `tsc failed:\n${tsc.stdout}${tsc.stderr}`).toBe(0);
    bin = path.join(install, "bin/kernelc.js");
    expect(fs.existsSync(path.join(install, "dist/cli/main.js"))).toBe(true);
  }, 240_000);

  afterAll(() => {
    if (install) fs.rmSync(install, { recursive: true, force: true });
  });

  it("node bin/kernelc.js lint specs exits 0 and prints what the in-process CLI prints", async () => {
    const r = spawnSync(process.execPath, [bin, "lint", "specs"], { cwd: root, encoding: "utf8" });
    expect(r.status).toBe(0);
    const inProcess = await run(["lint", "specs"]);
    expect(r.stderr).toBe(inProcess.stderr);
    expect(r.stdout).toBe("");
  });

  it("exits 1 on a broken spec and 2 on a usage error", () => {
    const dir = brokenProject();
    const broken = spawnSync(process.execPath, [bin, "lint"], { cwd: dir, encoding: "utf8" });
    expect(broken.status).toBe(1);
    expect(broken.stderr).toMatch(/^error\[unknown_name\]: /m);
    expect(spawnSync(process.execPath, [bin, "lint", "--format", "xml"], { cwd: dir, encoding: "utf8" }).status).toBe(2);
  });
});
