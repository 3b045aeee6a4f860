/**
 * Renders kept between lint runs (.kernelc-cache/renders.json): a second lint renders nothing it
 * rendered before, an edit re-renders what it affects, and the cache never changes a result. A
 * cache written by another renderer, or an entry whose text is not the one its hash names, is not
 * used; --no-cache neither reads nor writes it; build does not use it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadProjectConfig } from "../../src/api/config.js";
import { readCacheJson, writeCacheJson } from "../../src/cli/cache-file.js";
import { RENDER_CACHE, RenderCache } from "../../src/cli/render-cache.js";
import { sha256Hex } from "../../src/core/hash.js";
import { createShaderCache } from "../../src/emit/shader-cache.js";
import { runCli } from "../support/cli.js";
import { writeProject } from "../support/temp-project.js";

const run = runCli;

const pass = (shader: string) => ({ id: "main", name: "Scale", shader, bindings: ["x", "y", "params"], dispatch: { x: "groups" } });
const SPEC = {
  domain: "com.example",
  name: "Scale",
  sinceVersion: 1,
  inputs: { xT: { onnx: "x", dtype: "T", rank: 1 } },
  outputs: { yT: { onnx: "y", dtype: "T", rank: 1, shape: "shapes.xT" } },
  typeConstraints: { T: ["float32"] },
  tunables: { WG: { default: 64 } },
  derive: { n: "dim(shapes.xT, 0)", groups: "ceilDiv(n, tunables.WG)", big: "n > 65536" },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: { struct: [{ name: "n", type: "u32", value: "n" }] },
  },
  variants: [
    { id: "big", priority: 1, when: ["big"], passes: [pass("big.wgsl.jinja")] },
    { id: "small", passes: [pass("small.wgsl.jinja")] },
  ],
};

const body = (extra: string): string =>
  [
    "{{ env.wgsl.resourceDeclarations }}",
    "",
    "@compute @workgroup_size({{ tunables.WG }})",
    "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
    "  let i = gid.x;",
    "  if (i >= params.n) {",
    "    return;",
    "  }",
    `  y[i] = x[i] * 2.0${extra};`,
    "}",
    "",
  ].join("\n");

function project(): string {
  return writeProject("renders", {
    "specs/Scale.json": JSON.stringify(SPEC, null, 2) + "\n",
    "templates/big.wgsl.jinja": body(""),
    "templates/small.wgsl.jinja": body(" + 1.0"),
    "kernelc.config.json": JSON.stringify({ profiles: ["desktop-64k", "core"] }) + "\n",
  });
}

/** Compiles (no generation) with the project's render cache; returns the stats and the shader texts. */
async function lintWithCache(dir: string): Promise<{ rendered: number; renderReused: number; bodies: string[]; errors: string[] }> {
  const cache = createShaderCache();
  const renders = RenderCache.open(dir);
  const r = await compile(loadProjectConfig(dir), { generate: false, cache, renders });
  renders.save();
  const fresh = await compile(loadProjectConfig(dir), { generate: false });
  const errors = r.diagnostics.map((d) => `${d.code}: ${d.message}`);
  expect(errors).toEqual(fresh.diagnostics.map((d) => `${d.code}: ${d.message}`));
  return {
    rendered: cache.stats.rendered,
    renderReused: cache.stats.renderReused,
    bodies: bodiesOf(r),
    errors,
  };
}

const bodiesOf = (r: Awaited<ReturnType<typeof compile>>): string[] =>
  r.profiles.flatMap((p) =>
    p.kernels.flatMap((k) =>
      k.model.assignments.flatMap((a) => a.variants.flatMap((v) => v.passes.flatMap((pm) => [...pm.shaders.values()]))),
    ),
  );

describe("renders kept between lint runs", () => {
  it("a second run takes the renders of the first and renders nothing; an edit re-renders only what it affects", async () => {
    const dir = project();
    const first = await lintWithCache(dir);
    expect(first).toMatchObject({ rendered: 2, renderReused: 2, errors: [] });
    const second = await lintWithCache(dir);
    expect(second).toMatchObject({ rendered: 0, renderReused: 4, errors: [] });
    expect(second.bodies).toEqual(first.bodies);
    fs.appendFileSync(path.join(dir, "templates", "small.wgsl.jinja"), "// edited\n");
    const third = await lintWithCache(dir);
    expect(third).toMatchObject({ rendered: 1, renderReused: 3, errors: [] });
    expect(third.bodies).not.toEqual(first.bodies);
  });

  it("a cache written by another renderer is not used, nor an entry whose text is not the one its hash names", async () => {
    const dir = project();
    await lintWithCache(dir);
    const file = path.join(dir, RENDER_CACHE);
    const data = readCacheJson(file) as { renderer: string; texts: Record<string, string> };
    writeCacheJson(file, { ...data, renderer: data.renderer.replace("nunjucks", "nunjucks 0.0.0") });
    expect(await lintWithCache(dir)).toMatchObject({ rendered: 2 });
    const kept = readCacheJson(file) as { texts: Record<string, string> };
    // Every text changed under its old hash: no entry can be taken.
    for (const h of Object.keys(kept.texts)) kept.texts[h] = kept.texts[h].replace("2.0", "3.0");
    writeCacheJson(file, kept);
    const after = await lintWithCache(dir);
    expect(after).toMatchObject({ rendered: 2 });
    expect(after.bodies.join("")).not.toContain("3.0");
  });

  it("keeps what each template reads: a second lint parses no template, and an edit that breaks one is reported", async () => {
    const dir = project();
    // A derive entry nothing reads: lint warns about it.
    const specFile = path.join(dir, "specs", "Scale.json");
    fs.writeFileSync(specFile, JSON.stringify({ ...SPEC, derive: { ...SPEC.derive, spare: "tunables.WG * 2" } }, null, 2) + "\n");
    const first = await run(["lint", "--format", "json"], dir);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("unused_derive");
    const kept = readCacheJson(path.join(dir, RENDER_CACHE)) as { reads: Record<string, { names: string[] }> };
    const small = fs.readFileSync(path.join(dir, "templates", "small.wgsl.jinja"), "utf8");
    expect(kept.reads[sha256Hex(small)]?.names).toContain("env");
    expect(await run(["lint", "--format", "json"], dir)).toEqual(first);
    // The kept reads are taken (the templates are not parsed again): poisoned to read `spare`, the warning goes.
    for (const r of Object.values(kept.reads)) r.names.push("spare");
    writeCacheJson(path.join(dir, RENDER_CACHE), kept);
    expect((await run(["lint", "--format", "json"], dir)).stdout).not.toContain("unused_derive");
    expect(await run(["lint", "--format", "json", "--no-cache"], dir)).toEqual(first);
    fs.writeFileSync(
      path.join(dir, "templates", "small.wgsl.jinja"),
      small.replace("{{ env.wgsl.resourceDeclarations }}", "{{ env.wgsl.resourceDeclarations }"),
    );
    const broken = await run(["lint"], dir);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain("template syntax error");
    expect(broken.stderr).toEqual((await run(["lint", "--no-cache"], dir)).stderr);
  });

  it("keeps each shader's workgroup facts: a kept entry is taken, one of the wrong shape is not", async () => {
    const dir = project();
    expect((await run(["lint"], dir)).code).toBe(0);
    const file = path.join(dir, RENDER_CACHE);
    const kept = readCacheJson(file) as { facts: Record<string, { workgroupSize?: unknown }> };
    expect(Object.values(kept.facts).map((f) => f.workgroupSize)).toEqual([
      [64, 1, 1],
      [64, 1, 1],
    ]);
    // Poisoned to a workgroup no profile allows: the warm lint takes it, --no-cache does not.
    for (const f of Object.values(kept.facts)) f.workgroupSize = [4096, 1, 1];
    writeCacheJson(file, kept);
    expect((await run(["lint"], dir)).stderr).toContain("wgsl_limit_exceeded");
    expect((await run(["lint", "--no-cache"], dir)).code).toBe(0);
    for (const f of Object.values(kept.facts)) f.workgroupSize = [4096, 1];
    writeCacheJson(file, kept);
    expect((await run(["lint"], dir)).code).toBe(0);
  });

  it("--no-cache neither reads nor writes it; build neither", async () => {
    const dir = project();
    expect((await run(["lint", "--no-cache"], dir)).code).toBe(0);
    expect(fs.existsSync(path.join(dir, RENDER_CACHE))).toBe(false);
    expect((await run(["build"], dir)).code).toBe(0);
    expect(fs.existsSync(path.join(dir, RENDER_CACHE))).toBe(false);
    expect((await run(["lint"], dir)).code).toBe(0);
    expect(fs.existsSync(path.join(dir, RENDER_CACHE))).toBe(true);
    // A kept render that lint takes is one it would make: poisoned with a valid hash, --no-cache ignores it.
    const file = path.join(dir, RENDER_CACHE);
    const data = readCacheJson(file) as { texts: Record<string, string>; renders: Record<string, { wgsl: string }> };
    for (const entry of Object.values(data.renders)) {
      const text = data.texts[entry.wgsl].replace("y[i] = x[i] * 2.0", "y[i] = max(x[i], 2i)");
      entry.wgsl = sha256Hex(text);
      data.texts[entry.wgsl] = text;
    }
    writeCacheJson(file, data);
    expect((await run(["lint"], dir)).stderr).toContain("wgsl_invalid");
    const clean = await run(["lint", "--no-cache"], dir);
    expect(clean.code).toBe(0);
  });
});
