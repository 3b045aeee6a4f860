/**
 * Tint's verdicts kept between runs (.kernelc-cache/tint-verdicts.json): a second lint validates
 * nothing it validated before, and the cache never changes a result: an edit that makes a template
 * invalid is still reported, a cache written by another validator (another webgpu version) or of
 * the wrong shape is not used, and --no-cache neither reads nor writes it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadProjectConfig } from "../../src/api/config.js";
import { writeCacheJson } from "../../src/cli/cache-file.js";
import { VERDICT_CACHE, VerdictCache, validatorIdentity } from "../../src/cli/verdict-cache.js";
import { sha256Hex } from "../../src/core/hash.js";
import { createShaderCache } from "../../src/emit/shader-cache.js";
import { runCli } from "../support/cli.js";
import { writeProject } from "../support/temp-project.js";

/** The CLI in-process; its exit code and stderr (stdout is not asserted here). */
async function run(argv: string[], cwd: string): Promise<{ code: number; stderr: string }> {
  const { code, stderr } = await runCli(argv, cwd);
  return { code, stderr };
}

const SPEC = {
  domain: "com.example",
  name: "Scale",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "T", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" } },
  typeConstraints: { T: ["float32"] },
  tunables: { WG: { default: 64 } },
  derive: { n: "dim(shapes.xT, 0)", groups: "ceilDiv(n, tunables.WG)" },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: { struct: [{ name: "n", type: "u32", value: "n" }] },
  },
  variants: [
    {
      id: "main",
      passes: [{ id: "main", name: "Scale", shader: "scale.wgsl.jinja", bindings: ["x", "y", "params"], dispatch: { x: "groups" } }],
    },
  ],
};

const TEMPLATE = [
  "{{ env.wgsl.resourceDeclarations }}",
  "",
  "@compute @workgroup_size({{ tunables.WG }})",
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
  "  let i = gid.x;",
  "  if (i >= params.n) {",
  "    return;",
  "  }",
  "  y[i] = x[i] * 2.0;",
  "}",
  "",
].join("\n");

const INVALID = TEMPLATE.replace("x[i] * 2.0", "max(x[i], 2i)");

function project(): string {
  return writeProject("verdicts", {
    "specs/Scale.json": JSON.stringify(SPEC, null, 2) + "\n",
    "templates/scale.wgsl.jinja": TEMPLATE,
    "kernelc.config.json": JSON.stringify({ profiles: ["desktop-64k", "core"] }) + "\n",
  });
}

/** Compiles (no generation) with the project's verdict cache; returns the stats and the shader texts. */
async function lintWithCache(dir: string): Promise<{ validated: number; storeReused: number; bodies: string[]; errors: string[] }> {
  const cache = createShaderCache();
  const verdicts = VerdictCache.open(dir);
  const r = await compile(loadProjectConfig(dir), { generate: false, cache, verdicts });
  verdicts.save();
  return {
    validated: cache.stats.validated,
    storeReused: cache.stats.storeReused,
    bodies: [...cache.renders.values()].flatMap((x) => ("wgsl" in x ? [x.wgsl] : [])),
    errors: r.diagnostics.filter((d) => d.severity === "error").map((d) => d.code),
  };
}

/**
 * A cache file whose every listed text is said to be valid: signed with this user's key as kernelc
 * signs what it writes, or (`signed` false) as a pull request could commit it.
 */
function forge(dir: string, validator: string, texts: readonly string[], signed = true): void {
  const verdicts = Object.fromEntries(texts.map((t) => [sha256Hex(`\n${t}`), []]));
  fs.mkdirSync(path.join(dir, ".kernelc-cache"), { recursive: true });
  const content = { generatedBy: "test", validator, verdicts };
  if (signed) writeCacheJson(path.join(dir, VERDICT_CACHE), content);
  else fs.writeFileSync(path.join(dir, VERDICT_CACHE), JSON.stringify(content));
}

describe("the verdict cache", () => {
  it("a second run takes the verdicts of the first and validates nothing", async () => {
    const dir = project();
    const first = await lintWithCache(dir);
    expect(first).toMatchObject({ validated: 1, storeReused: 0, errors: [] });
    expect(fs.existsSync(path.join(dir, VERDICT_CACHE))).toBe(true);
    const second = await lintWithCache(dir);
    expect(second).toMatchObject({ validated: 0, storeReused: 1, errors: [] });
    // The CLI reads and writes the same file.
    expect(await run(["lint"], dir)).toEqual({
      code: 0,
      stderr: "1 spec checked, 1 shader rendered and validated for 2 profiles, no problems\n",
    });
  });

  it("an edit that makes the template invalid is reported with a warm cache, and again on the next run (the error's verdict is kept)", async () => {
    const dir = project();
    await lintWithCache(dir);
    fs.writeFileSync(path.join(dir, "templates", "scale.wgsl.jinja"), INVALID);
    const edited = await lintWithCache(dir);
    expect(edited).toMatchObject({ validated: 1, storeReused: 0, errors: ["wgsl_invalid"] });
    const again = await run(["lint"], dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("error[wgsl_invalid]: Tint rejects the rendered WGSL: no matching call to 'max(f32, i32)'");
    expect(await lintWithCache(dir)).toMatchObject({ validated: 0, storeReused: 1, errors: ["wgsl_invalid"] });
  });

  it("a cache written by another validator (another webgpu version) is not used, even for the exact text", async () => {
    const dir = project();
    fs.writeFileSync(path.join(dir, "templates", "scale.wgsl.jinja"), INVALID);
    const { bodies } = await lintWithCache(dir);
    fs.rmSync(path.join(dir, ".kernelc-cache"), { recursive: true });
    const other = validatorIdentity().replace(/^webgpu [^;]*/, "webgpu 0.0.1");
    expect(other).not.toBe(validatorIdentity());
    forge(dir, other, bodies);
    expect(await lintWithCache(dir)).toMatchObject({ validated: 1, storeReused: 0, errors: ["wgsl_invalid"] });
    // The same forged verdict under this validator's identity is taken: a verdict is trusted for its exact text.
    forge(dir, validatorIdentity(), bodies);
    expect(await lintWithCache(dir)).toMatchObject({ validated: 0, storeReused: 1, errors: [] });
  });

  it("a cache file this user's kernelc did not write (one committed to a pull request) is not used: the invalid shader is reported (it was taken as valid)", async () => {
    const dir = project();
    fs.writeFileSync(path.join(dir, "templates", "scale.wgsl.jinja"), INVALID);
    const { bodies } = await lintWithCache(dir);
    fs.rmSync(path.join(dir, ".kernelc-cache"), { recursive: true });
    forge(dir, validatorIdentity(), bodies, false);
    expect(await lintWithCache(dir)).toMatchObject({ validated: 1, storeReused: 0, errors: ["wgsl_invalid"] });
    forge(dir, validatorIdentity(), bodies, false);
    for (const args of [["lint"], ["build"]]) {
      const r = await run(args, dir);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("error[wgsl_invalid]");
    }
    // Signed, then edited by hand: not used either.
    forge(dir, validatorIdentity(), bodies);
    const file = path.join(dir, VERDICT_CACHE);
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace('"generatedBy":"test"', '"generatedBy":"tesT"'));
    expect(await lintWithCache(dir)).toMatchObject({ validated: 1, storeReused: 0, errors: ["wgsl_invalid"] });
  });

  it("entries of the wrong shape and unreadable files are ignored", async () => {
    const dir = project();
    const { bodies } = await lintWithCache(dir);
    const key = sha256Hex(`\n${bodies[0]}`);
    const file = path.join(dir, VERDICT_CACHE);
    for (const verdict of [[{ line: 1 }], "clean", { length: 0 }, [{ line: 1, column: 1, length: 1, message: "x", severity: "info" }]]) {
      writeCacheJson(file, { validator: validatorIdentity(), verdicts: { [key]: verdict } });
      expect(await lintWithCache(dir)).toMatchObject({ validated: 1, storeReused: 0 });
    }
    fs.writeFileSync(file, "{ not json");
    expect(await lintWithCache(dir)).toMatchObject({ validated: 1, storeReused: 0, errors: [] });
  });

  it("build writes it, build --check (which writes nothing) only reads it", async () => {
    const dir = project();
    expect((await run(["build", "--check"], dir)).code).toBe(1);
    expect(fs.existsSync(path.join(dir, ".kernelc-cache"))).toBe(false);
    expect((await run(["build"], dir)).code).toBe(0);
    const kept = fs.readFileSync(path.join(dir, VERDICT_CACHE), "utf8");
    fs.writeFileSync(path.join(dir, "templates", "scale.wgsl.jinja"), TEMPLATE + "// edited\n");
    expect((await run(["build", "--check"], dir)).code).toBe(1);
    expect(fs.readFileSync(path.join(dir, VERDICT_CACHE), "utf8")).toBe(kept);
  });

  it("--no-cache neither reads nor writes it; a .kernelc-cache that is a file is left alone", async () => {
    const dir = project();
    expect((await run(["lint", "--no-cache"], dir)).code).toBe(0);
    expect(fs.existsSync(path.join(dir, ".kernelc-cache"))).toBe(false);
    fs.writeFileSync(path.join(dir, "templates", "scale.wgsl.jinja"), INVALID);
    const { bodies } = await lintWithCache(dir);
    forge(dir, validatorIdentity(), bodies);
    expect((await run(["lint", "--no-cache"], dir)).code).toBe(1);
    fs.rmSync(path.join(dir, ".kernelc-cache"), { recursive: true });
    fs.writeFileSync(path.join(dir, ".kernelc-cache"), "not a folder\n");
    expect((await run(["lint"], dir)).code).toBe(1);
    expect(fs.readFileSync(path.join(dir, ".kernelc-cache"), "utf8")).toBe("not a folder\n");
  });
});
