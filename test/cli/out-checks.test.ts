/**
 * Checks that check (issue 9.3) and partial builds (9.2): `--check` and the no-op detection look
 * at what is on disk (symlinks, extra files, hand edits even with their hash written into
 * build-info.json); `--force` keeps none of it; `build --profile core` and `--kernel` replace only
 * what they built; out/ keeps the user's umask.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { hashedVersions, inputsHash } from "../../src/cli/build-info.js";
import { loadConfig } from "../../src/plan/config.js";
import { kernelc, makeProject, removeProjects, repoRoot, touchTemplate } from "./out-project.js";

afterAll(removeProjects);

const sha = (s: string | Buffer): string => createHash("sha256").update(s).digest("hex");

/** A project with a full build in out/. */
async function built(): Promise<string> {
  const root = makeProject();
  const r = await kernelc(["build"], root);
  expect(r.stderr).toMatch(/wrote out\/: 9 profiles/);
  expect(r.code).toBe(0);
  return root;
}

describe("--check and the no-op detection compare what is on disk", () => {
  it("a symlink in out/ is an error for --check and for a build (--force too), which keep it; removed, the build goes on", async () => {
    const root = await built();
    const target = path.join(path.dirname(root), "sentinel.txt");
    fs.symlinkSync(target, path.join(root, "out/core/extra.ts"));
    const check = await kernelc(["build", "--check"], root);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/error\[out_unexpected\]: out\/core\/extra\.ts \(symbolic link\) is not part of the build/);
    expect(check.stderr).toMatch(/move it out of out\/ or delete it \(kernelc never removes what it did not write\)/);
    const noop = await kernelc(["build"], root);
    expect(noop.code).toBe(1);
    expect(noop.stderr).not.toMatch(/up to date/);
    expect(noop.stderr).toMatch(/error\[out_unexpected\]: out\/core\/extra\.ts \(symbolic link\) was not written by kernelc/);
    expect(fs.lstatSync(path.join(root, "out/core/extra.ts")).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(target, "utf8")).toBe("parent sentinel\n");
    fs.symlinkSync("../profiles.json", path.join(root, "out/shaders/link.wgsl"));
    const forced = await kernelc(["build", "--force"], root);
    expect(forced.code).toBe(1);
    expect(forced.stderr).toMatch(/out\/shaders\/link\.wgsl \(symbolic link\) was not written by kernelc/);
    expect(fs.lstatSync(path.join(root, "out/shaders/link.wgsl")).isSymbolicLink()).toBe(true);
    fs.rmSync(path.join(root, "out/core/extra.ts"));
    fs.rmSync(path.join(root, "out/shaders/link.wgsl"));
    expect((await kernelc(["build"], root)).code).toBe(0);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("a symlink replacing a generated file is an error even when it points at identical content, and is kept", async () => {
    const root = await built();
    const file = path.join(root, "out/core/manifest.json");
    fs.copyFileSync(file, path.join(root, "copy.json"));
    fs.rmSync(file);
    fs.symlinkSync(path.join(root, "copy.json"), file);
    const check = await kernelc(["build", "--check"], root);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/core\/manifest\.json \(symbolic link\)/);
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_unexpected\]: out\/core\/manifest\.json \(symbolic link\) was not written by kernelc/);
    expect(fs.lstatSync(file).isSymbolicLink()).toBe(true);
    fs.rmSync(file);
    expect((await kernelc(["build"], root)).stderr).toMatch(/wrote out\//);
    expect(fs.lstatSync(file).isFile()).toBe(true);
  });

  it("an extra file in out/ fails --check and the next build, which names each and keeps them", async () => {
    const root = await built();
    fs.writeFileSync(path.join(root, "out/notes.md"), "stray\n");
    const check = await kernelc(["build", "--check"], root);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/error\[out_unexpected\]: out\/notes\.md is not part of the build/);
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_unexpected\]: out\/notes\.md \(a file\) was not written by kernelc/);
    expect(fs.readFileSync(path.join(root, "out/notes.md"), "utf8")).toBe("stray\n");
    for (let i = 0; i < 12; i++) fs.writeFileSync(path.join(root, `out/stray${i}.txt`), "x\n");
    const many = await kernelc(["build"], root);
    expect(many.code).toBe(1);
    expect(many.stderr.match(/error\[out_unexpected\]/g)).toHaveLength(13);
    for (let i = 0; i < 12; i++) expect(many.stderr).toContain(`out/stray${i}.txt (a file) was not written by kernelc`);
    expect(fs.readdirSync(path.join(root, "out")).filter((n) => n.startsWith("stray"))).toHaveLength(12);
  });

  it("an empty folder in out/ fails --check", async () => {
    const root = await built();
    fs.mkdirSync(path.join(root, "out/empty"));
    const check = await kernelc(["build", "--check"], root);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/out\/empty\/ \(empty folder\)/);
  });

  it("a hand-edited dispatcher whose hash was written into build-info.json: --check catches it, a build refuses and keeps it", async () => {
    const root = await built();
    const file = path.join(root, "out/core/dispatcher.ts");
    const original = fs.readFileSync(file, "utf8");
    fs.appendFileSync(file, "export const injected = 1;\n");
    const infoFile = path.join(root, "out/build-info.json");
    const info = JSON.parse(fs.readFileSync(infoFile, "utf8")) as { files: Record<string, string> };
    info.files["core/dispatcher.ts"] = sha(fs.readFileSync(file));
    fs.writeFileSync(infoFile, JSON.stringify(info, null, 2) + "\n");
    const check = await kernelc(["build", "--check"], root);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/error\[out_stale\].*core\/dispatcher\.ts/);
    const r = await kernelc(["build"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_modified\]: out\/build-info\.json was edited after kernelc wrote it/);
    expect(fs.readFileSync(file, "utf8")).toBe(`${original}export const injected = 1;\n`);
    // Out of the way, the build writes out/ afresh.
    fs.rmSync(path.join(root, "out"), { recursive: true });
    expect((await kernelc(["build"], root)).code).toBe(0);
    expect(fs.readFileSync(file, "utf8")).toBe(original);
  });

  it("a changed file is not 'up to date', --check names it, a build refuses to overwrite it", async () => {
    const root = await built();
    fs.writeFileSync(path.join(root, "out/profiles.json"), "{}\n");
    expect((await kernelc(["build", "--check"], root)).stderr).toMatch(/out_stale.*profiles\.json/);
    const refused = await kernelc(["build"], root);
    expect(refused.code).toBe(1);
    expect(refused.stderr).not.toMatch(/up to date/);
    expect(refused.stderr).toMatch(/error\[out_modified\]: out\/profiles\.json was changed after kernelc wrote it/);
    expect(fs.readFileSync(path.join(root, "out/profiles.json"), "utf8")).toBe("{}\n");
    fs.rmSync(path.join(root, "out/profiles.json"));
    expect((await kernelc(["build"], root)).stderr).toMatch(/wrote out\//);
    const again = await kernelc(["build"], root);
    expect(again.stderr).toMatch(/out\/ is up to date/);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("--check on an output folder that is a file says so (not that the build's files differ), and changes nothing", async () => {
    const root = makeProject();
    fs.writeFileSync(path.join(root, "notes.txt"), "mine\n");
    const r = await kernelc(["build", "--check", "--out", "notes.txt"], root);
    expect(r.stderr).toMatch(/error\[out_unexpected\]: notes\.txt is a file, not the folder of a build/);
    expect(r.stderr).not.toMatch(/out_stale|files differ/);
    expect(r.code).toBe(1);
    expect(fs.readFileSync(path.join(root, "notes.txt"), "utf8")).toBe("mine\n");
  });

  it("--check without an output folder says it does not exist and how to make it", async () => {
    const root = makeProject();
    const r = await kernelc(["build", "--check"], root);
    expect(r.stderr).toMatch(/error\[out_stale\]: out\/ does not exist/);
    expect(r.stderr).toMatch(/hint: run `npx kernelc build`/);
    expect(r.code).toBe(1);
    expect(fs.existsSync(path.join(root, "out"))).toBe(false);
  });

  it("--check expects the marker", async () => {
    const root = await built();
    fs.rmSync(path.join(root, "out/.kernelc-out"));
    const check = await kernelc(["build", "--check"], root);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/out_stale.*\.kernelc-out/);
  });

  it("the inputs hash covers the templates, the profiles asked for, and changes with them", () => {
    const root = makeProject();
    const loaded = loadConfig(root);
    const a = inputsHash(loaded);
    expect(inputsHash(loaded)).toBe(a);
    expect(inputsHash(loaded, { profiles: ["core"] })).not.toBe(a);
    expect(inputsHash(loaded, { kernels: ["Axpby"] })).not.toBe(a);
    touchTemplate(root, "x");
    expect(inputsHash(loaded)).not.toBe(a);
  });

  it("the inputs hash records the versions of kernelc, nunjucks and the WGSL validator (webgpu) as installed", () => {
    const version = (dir: string): string =>
      (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version;
    expect(hashedVersions()).toEqual({
      kernelc: version(repoRoot),
      nunjucks: version(path.join(repoRoot, "node_modules/nunjucks")),
      webgpu: version(path.join(repoRoot, "node_modules/webgpu")),
    });
  });

  it("out/ folders and files keep the user's umask (not mkdtemp's 0700)", async () => {
    const root = await built();
    const mask = process.umask();
    expect(fs.statSync(path.join(root, "out")).mode & 0o777).toBe(0o777 & ~mask);
    expect(fs.statSync(path.join(root, "out/core")).mode & 0o777).toBe(0o777 & ~mask);
    expect(fs.statSync(path.join(root, "out/core/dispatcher.ts")).mode & 0o777).toBe(0o666 & ~mask);
  });
});

describe("partial builds replace only what they built", () => {
  it("build --profile core keeps every other profile and the shaders their manifests reference", async () => {
    const root = await built();
    const profiles = fs.readFileSync(path.join(root, "out/profiles.json"), "utf8");
    const desktop = fs.readFileSync(path.join(root, "out/desktop-64k/dispatcher.ts"), "utf8");
    touchTemplate(root, "core only");
    const r = await kernelc(["build", "--profile", "core"], root);
    expect(r.stderr).toMatch(/wrote out\/: 9 profiles/);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(root, "out/profiles.json"), "utf8")).toBe(profiles);
    expect(fs.readFileSync(path.join(root, "out/desktop-64k/dispatcher.ts"), "utf8")).toBe(desktop);
    // Every manifest's shaders are there; core's are the new ones.
    for (const p of JSON.parse(profiles).profiles as { name: string }[]) {
      const m = JSON.parse(fs.readFileSync(path.join(root, "out", p.name, "manifest.json"), "utf8")) as { shaders: Record<string, string> };
      for (const ref of Object.values(m.shaders)) {
        const text = fs.readFileSync(path.join(root, "out", p.name, ref), "utf8");
        expect(text.includes("// core only"), `${p.name} ${ref}`).toBe(p.name === "core");
      }
    }
    // No shader is left that no manifest references.
    const referenced = new Set<string>();
    for (const p of JSON.parse(profiles).profiles as { name: string }[]) {
      const m = JSON.parse(fs.readFileSync(path.join(root, "out", p.name, "manifest.json"), "utf8")) as { shaders: Record<string, string> };
      for (const ref of Object.values(m.shaders)) referenced.add(path.basename(ref));
    }
    expect(fs.readdirSync(path.join(root, "out/shaders")).sort()).toEqual([...referenced].sort());
    // build-info describes the merged folder exactly, so the next partial build accepts it.
    expect((await kernelc(["build", "--profile", "mobile-256"], root)).code).toBe(0);
    // A full build brings every profile up to date again.
    expect((await kernelc(["build"], root)).stderr).toMatch(/wrote out\//);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });

  it("build --profile core with unchanged inputs changes nothing", async () => {
    const root = await built();
    const r = await kernelc(["build", "--profile", "core"], root);
    expect(r.stderr).toMatch(/unchanged out\//);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
    expect((await kernelc(["build", "--check", "--profile", "core"], root)).code).toBe(0);
  });

  it("build --profile into an empty out/ writes just that profile", async () => {
    const root = makeProject();
    const r = await kernelc(["build", "--profile", "core", "compat"], root);
    expect(r.code).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(root, "out/profiles.json"), "utf8")).profiles.map((p: { name: string }) => p.name)).toEqual(
      ["core", "compat"],
    );
  });

  it("a partial build refuses to keep a hand-edited file", async () => {
    const root = await built();
    fs.appendFileSync(path.join(root, "out/desktop-64k/dispatcher.ts"), "// edit\n");
    const r = await kernelc(["build", "--profile", "core"], root);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error\[out_modified\]: out\/desktop-64k\/dispatcher\.ts was changed after kernelc wrote it/);
    expect(fs.readFileSync(path.join(root, "out/desktop-64k/dispatcher.ts"), "utf8")).toMatch(/\/\/ edit\n$/);
  });

  it("build --kernel Axpby rebuilds that kernel; an unknown kernel is an error", async () => {
    const root = await built();
    const before = fs.readFileSync(path.join(root, "out/profiles.json"), "utf8");
    const r = await kernelc(["build", "--kernel", "Axpby"], root);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(root, "out/profiles.json"), "utf8")).toBe(before);
    const bad = await kernelc(["build", "--kernel", "Nope"], root);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/error\[unknown_kernel\]: no spec defines kernel `Nope`/);
    const typo = await kernelc(["build", "--kernel", "Axpbi"], root);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain("hint: did you mean `Axpby`? kernels: Axpby");
  });

  it("build --kernel A keeps kernel B's shaders, and refuses when B's shaders changed since out/ was built", async () => {
    const root = makeProject();
    const spec = fs.readFileSync(path.join(root, "specs/Axpby.json"), "utf8");
    fs.writeFileSync(
      path.join(root, "specs/Bxpby.json"),
      spec.replace('"name": "Axpby"', '"name": "Bxpby"').replaceAll("axpby.wgsl.jinja", "bxpby.wgsl.jinja").replaceAll("Axpby.", "Bxpby."),
    );
    fs.writeFileSync(
      path.join(root, "templates/bxpby.wgsl.jinja"),
      fs.readFileSync(path.join(root, "templates/axpby.wgsl.jinja"), "utf8") + "// B\n",
    );
    expect((await kernelc(["build"], root)).code).toBe(0);
    const shaders = (): string[] =>
      fs.readdirSync(path.join(root, "out/shaders")).map((f) => fs.readFileSync(path.join(root, "out/shaders", f), "utf8"));
    const bBefore = shaders()
      .filter((t) => t.includes("// B"))
      .sort();
    expect(bBefore.length).toBeGreaterThan(0);
    touchTemplate(root, "A changed");
    const r = await kernelc(["build", "--kernel", "Axpby"], root);
    expect(r.stderr).toMatch(/wrote out\//);
    expect(r.code).toBe(0);
    expect(
      shaders()
        .filter((t) => t.includes("// B"))
        .sort(),
    ).toEqual(bBefore);
    expect(shaders().filter((t) => t.includes("// A changed")).length).toBeGreaterThan(0);
    // The dispatchers still cover both kernels.
    expect(fs.readFileSync(path.join(root, "out/core/dispatcher.ts"), "utf8")).toMatch(/"Bxpby": plan1/);
    // B's template changed: its new shaders were neither validated nor written, so --kernel Axpby refuses.
    fs.appendFileSync(path.join(root, "templates/bxpby.wgsl.jinja"), "// B changed\n");
    const bad = await kernelc(["build", "--kernel", "Axpby"], root);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /error\[out_modified\]: shaders\/[0-9a-f]{16}\.wgsl, which profile \S+ needs, is not in out\/: another kernel's shaders changed/,
    );
    expect(shaders().filter((t) => t.includes("// B changed"))).toEqual([]);
    expect((await kernelc(["build"], root)).code).toBe(0);
    expect((await kernelc(["build", "--check"], root)).code).toBe(0);
  });
});
