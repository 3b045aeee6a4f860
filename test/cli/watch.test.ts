/**
 * `kernelc watch`: a template edit rebuilds out/ re-rendering only the shaders whose templates
 * include the edited file; Tint sees only new shader texts; errors leave out/ as it was.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { startWatch, type WatchSession } from "../../src/cli/watch-command.js";
import { rebuilds } from "../support/rebuilds.js";
import { writeProject } from "../support/temp-project.js";

const pass = (id: string, shader: string) => ({ id: "main", name: id, shader, bindings: ["x", "y", "params"], dispatch: { x: "groups" } });
const SPEC = {
  domain: "com.example",
  name: "Scale",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "T", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" } },
  attributes: { alpha: { default: 1.0 } },
  typeConstraints: { T: ["float32"] },
  tunables: { WG: { default: 64 } },
  derive: { n: "dim(shapes.xT, 0)", groups: "ceilDiv(n, tunables.WG)", big: "n > 65536" },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: {
      struct: [
        { name: "n", type: "u32", value: "n" },
        { name: "alpha", type: "f32", value: "attrs.alpha" },
      ],
    },
  },
  variants: [
    { id: "big", priority: 1, when: ["big"], passes: [pass("Big", "big.wgsl.jinja")] },
    { id: "small", passes: [pass("Small", "small.wgsl.jinja")] },
  ],
};
const body = (extra: string) =>
  `{{ env.wgsl.resourceDeclarations }}\n{% from "lib.wgsl.jinja" import scaled %}\nconst WG = {{ tunables.WG }}u;\n@compute @workgroup_size(WG)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n  let i = gid.x;\n  if (i >= params.n) {\n    return;\n  }\n  y[i] = {{ scaled("x[i]") }}${extra};\n}\n`;

function project(): string {
  return writeProject("watch", {
    "specs/Scale.json": JSON.stringify(SPEC, null, 2),
    "templates/lib.wgsl.jinja": "{% macro scaled(v) %}{{ v }} * params.alpha{% endmacro %}\n",
    "templates/big.wgsl.jinja": body(""),
    "templates/small.wgsl.jinja": body(" + 0.0"),
    "kernelc.config.json": JSON.stringify({ profiles: ["desktop-64k", "core"] }),
  });
}

const shaders = (dir: string): string[] =>
  fs
    .readdirSync(path.join(dir, "out", "shaders"))
    .map((f) => fs.readFileSync(path.join(dir, "out", "shaders", f), "utf8"))
    .sort();

let session: WatchSession | undefined;
afterEach(async () => {
  await session?.close();
  session = undefined;
});

describe("kernelc watch", () => {
  it("builds, then re-renders only the shaders whose templates include the edited one", async () => {
    const dir = project();
    const log = rebuilds();
    let stderr = "";
    session = startWatch(
      { stdout: () => {}, stderr: (s) => (stderr += s), cwd: dir, isTTY: false, env: {} },
      { format: "text", onRebuild: log.onRebuild },
    );
    const first = await log.next();
    expect(first).toMatchObject({ wrote: true, errors: false });
    // Two templates; the profiles share each render (the templates read nothing of the device) and
    // each verdict (the shaders enable no feature).
    expect(first.stats).toEqual({ rendered: 2, renderReused: 2, validated: 2, validationReused: 2, storeReused: 0 });
    expect(shaders(dir)).toHaveLength(2);

    fs.appendFileSync(path.join(dir, "templates", "small.wgsl.jinja"), "// edited small\n");
    const second = await log.next();
    expect(second).toMatchObject({ wrote: true, errors: false });
    expect(second.stats).toEqual({ rendered: 1, renderReused: 3, validated: 1, validationReused: 3, storeReused: 0 });
    expect(shaders(dir).filter((s) => s.includes("// edited small"))).toHaveLength(1);

    // lib is imported by both templates: both re-render.
    fs.writeFileSync(path.join(dir, "templates", "lib.wgsl.jinja"), "{% macro scaled(v) %}({{ v }}) * params.alpha{% endmacro %}\n");
    const third = await log.next();
    expect(third.stats).toEqual({ rendered: 2, renderReused: 2, validated: 2, validationReused: 2, storeReused: 0 });
    expect(shaders(dir).every((s) => s.includes("y[i] = (x[i]) * params.alpha"))).toBe(true);
    expect(fs.readFileSync(path.join(dir, "out", "build-info.json"), "utf8")).toContain('"inputs"');
    expect(stderr).toMatch(/^wrote out\/: 2 profiles, 2 shaders\nrebuilt in \d+ ms \(1 rendered, 3 reused; 1 validated, 3 reused\)$/m);
  }, 60_000);

  it("a rebuild writes only the files the edit changed, and out/ is then what a fresh build writes", async () => {
    const dir = project();
    const log = rebuilds();
    session = startWatch(
      { stdout: () => {}, stderr: () => {}, cwd: dir, isTTY: false, env: {} },
      { format: "json", onRebuild: log.onRebuild },
    );
    await log.next();
    const out = path.join(dir, "out");
    const list = (): string[] =>
      fs
        .readdirSync(out, { recursive: true, encoding: "utf8" })
        .filter((rel) => fs.statSync(path.join(out, rel)).isFile())
        .sort();
    const inode = (rel: string): number => fs.statSync(path.join(out, rel)).ino;
    const before = new Map(list().map((rel) => [rel, fs.readFileSync(path.join(out, rel), "utf8")]));
    const inodes = new Map(list().map((rel) => [rel, inode(rel)]));
    const bigShader = [...before].find(([rel, text]) => rel.startsWith("shaders") && text.includes("big.wgsl.jinja"))![0];

    fs.appendFileSync(path.join(dir, "templates", "small.wgsl.jinja"), "// edited small\n");
    expect(await log.next()).toMatchObject({ wrote: true, errors: false });
    const after = list();
    // The shader of the unedited template and the marker were left as they were (same file);
    // the edited template's shader was replaced by a new one, and nothing else is left over.
    expect(inode(bigShader)).toBe(inodes.get(bigShader));
    expect(inode(".kernelc-out")).toBe(inodes.get(".kernelc-out"));
    expect(after.filter((rel) => rel.startsWith("shaders/"))).toHaveLength(2);
    expect(after.some((rel) => /\.tmp-/.test(rel))).toBe(false);
    const changed = after.filter((rel) => before.get(rel) !== fs.readFileSync(path.join(out, rel), "utf8"));
    expect(changed).toContain("build-info.json");
    expect(changed).not.toContain(bigShader);

    // A fresh build of the edited project finds out/ current, byte for byte.
    await session.close();
    session = undefined;
    let stderr = "";
    const check = await main(["build", "--check"], { stdout: () => {}, stderr: (t) => (stderr += t), cwd: dir, isTTY: false, env: {} });
    expect(check, stderr).toBe(0);
  }, 60_000);

  it("an edit with an error leaves out/ as it was; the fix writes it", async () => {
    const dir = project();
    const log = rebuilds();
    let stderr = "";
    session = startWatch(
      { stdout: () => {}, stderr: (s) => (stderr += s), cwd: dir, isTTY: false, env: {} },
      { format: "text", onRebuild: log.onRebuild },
    );
    await log.next();
    const before = shaders(dir);
    const big = path.join(dir, "templates", "big.wgsl.jinja");
    fs.writeFileSync(big, body(" + {{ nope }}"));
    const broken = await log.next();
    expect(broken).toMatchObject({ wrote: false, errors: true });
    expect(stderr).toContain("error[template_error]: template big.wgsl.jinja failed to render: `{{ nope }}` is undefined");
    expect(shaders(dir)).toEqual(before);
    fs.writeFileSync(big, body(" + 1.0"));
    const fixed = await log.next();
    expect(fixed).toMatchObject({ wrote: true, errors: false });
    expect(shaders(dir).some((s) => s.includes("y[i] = x[i] * params.alpha + 1.0;"))).toBe(true);
  }, 60_000);

  it("edits of the spec, of what a template reads and of the config enumerate again: out/ is each time what a fresh build writes", async () => {
    const dir = project();
    const log = rebuilds();
    session = startWatch(
      { stdout: () => {}, stderr: () => {}, cwd: dir, isTTY: false, env: {} },
      { format: "json", onRebuild: log.onRebuild },
    );
    await log.next();
    const fresh = async (): Promise<void> => {
      let stderr = "";
      const io = { stdout: () => {}, stderr: (t: string) => (stderr += t), cwd: dir, isTTY: false, env: {} };
      expect(await main(["build", "--check"], io), stderr).toBe(0);
    };
    const specFile = path.join(dir, "specs", "Scale.json");
    fs.writeFileSync(specFile, JSON.stringify({ ...SPEC, tunables: { WG: { default: 128 } } }, null, 2));
    expect(await log.next()).toMatchObject({ wrote: true, errors: false });
    expect(shaders(dir).every((t) => t.includes("const WG = 128u;"))).toBe(true);
    await fresh();
    const config = {
      profiles: ["desktop-64k", "core", "compat"],
      instances: { Scale: [{ name: "a", values: { "dim(shapes.xT, 0)": 4096 } }] },
    };
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify(config));
    expect(await log.next()).toMatchObject({ wrote: true, errors: false });
    expect(fs.existsSync(path.join(dir, "out", "compat"))).toBe(true);
    await fresh();
    // The template now reads a run-time value: its shaders are keyed by it.
    fs.writeFileSync(path.join(dir, "templates", "small.wgsl.jinja"), body(" + f32({{ n }})"));
    expect(await log.next()).toMatchObject({ wrote: true, errors: false });
    expect(shaders(dir).some((t) => t.includes("+ f32(4096)"))).toBe(true);
    await fresh();
  }, 60_000);

  it("is a command: `kernelc watch --help`", async () => {
    let stdout = "";
    const code = await main(["watch", "--help"], {
      stdout: (s) => (stdout += s),
      stderr: () => {},
      cwd: os.tmpdir(),
      isTTY: false,
      env: {},
    });
    expect(code).toBe(0);
    expect(stdout).toContain("Usage: kernelc watch");
  });
});
