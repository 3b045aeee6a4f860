/**
 * The generated bundle (out/index, the dispatchers and every module they import) is a guest in the
 * app's project: it must compile under the strict consumer's flags whatever `module` and
 * `moduleResolution` an ES module project uses (MODULE_SETTINGS: es2020/es2022/esnext/preserve with
 * bundler resolution, node16/node18/node20/nodenext), in both emits, without `resolveJsonModule`.
 * It once loaded each manifest with `import("./<profile>/manifest.json", { with: { type: "json" } })`,
 * which es2020 and es2022 reject (TS1324: a second argument of import() needs esnext, node16+ or
 * preserve) and node16/node18 reject without resolveJsonModule. And what `manifest()` gives at run
 * time is exactly the profile's manifest.json, in plain Node, from the .js and the .ts modules.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../src/api/compile.js";
import type { EmitKind } from "../../src/emit/code-writer.js";
import { loadConfig } from "../../src/plan/config.js";
import { axpbyProject } from "../support/axpby-project.js";
import { MODULE_SETTINGS, STRICT_CONSUMER, typeErrors } from "../support/strict-consumer.js";
import { writeProject } from "../support/temp-project.js";

const PROFILES = ["desktop-32k", "core"];
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const builds = new Map<EmitKind, Promise<CompileResult>>();
/** The axpby project built for two profiles in `emit`. */
function built(emit: EmitKind): Promise<CompileResult> {
  let b = builds.get(emit);
  if (!b) {
    const root = axpbyProject({ config: { profiles: PROFILES } });
    dirs.push(root);
    b = compile(loadConfig(root), { emit });
    builds.set(emit, b);
  }
  return b;
}

/** A consumer project (an ES module package) holding the build as out/, and `extra` files. */
async function consumer(emit: EmitKind, extra: Record<string, string>): Promise<{ dir: string; result: CompileResult }> {
  const result = await built(emit);
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  const dir = writeProject("module-settings", [
    ["package.json", JSON.stringify({ type: "module" })],
    ...[...result.files].map(([rel, text]): [string, string] => [`out/${rel}`, text]),
    ...Object.entries(extra),
  ]);
  dirs.push(dir);
  return { dir, result };
}

/** The app's use of the bundle: the index's exports, a lazily loaded manifest and dispatcher, a dispatcher imported directly. */
const USE = `import bundle, { profiles, shaders, type BundleManifest } from "./out/index.js";
import { planners, type AxpbyCall } from "./out/core/dispatcher.js";

export async function open(call: AxpbyCall): Promise<number> {
  const manifest: BundleManifest = await bundle.profiles[0].manifest();
  const core = await profiles[1].manifest();
  const dispatcher = await profiles[1].dispatcher();
  const url: URL | undefined = Object.values(shaders)[0]?.();
  const name: "desktop-32k" = profiles[0].name;
  return manifest.pipelines.length + core.pipelines.length + dispatcher.planners.Axpby(call).passes.length + planners.Axpby(call).passes.length + (url ? name.length : 0);
}
`;

describe.each<EmitKind>(["ts", "js"])("the bundle emitted as %s", (emit) => {
  it("compiles in a strict consumer under every module setting of an ES module project, without resolveJsonModule (and with its .js modules type-checked, for js)", async () => {
    const { dir, result } = await consumer(emit, { "use.ts": USE });
    // The consumer's file and every generated module (.ts), or every declaration file (.d.ts, checked, not skipped).
    const modules = [...result.files.keys()].filter((rel) => (emit === "ts" ? rel.endsWith(".ts") : rel.endsWith(".d.ts")));
    expect(modules).toContain(emit === "ts" ? "index.ts" : "index.d.ts");
    const roots = [path.join(dir, "use.ts"), ...modules.map((rel) => path.join(dir, "out", rel))];
    // A project that type-checks its JavaScript (allowJs + checkJs over the folder) takes in the .js modules too.
    const jsModules =
      emit === "js" ? [...result.files.keys()].filter((rel) => rel.endsWith(".js")).map((rel) => path.join(dir, "out", rel)) : [];
    const errors: Record<string, string[]> = {};
    for (const setting of MODULE_SETTINGS) {
      const options: ts.CompilerOptions = {
        ...(emit === "js" ? { allowJs: true, checkJs: true } : {}),
        ...STRICT_CONSUMER,
        module: setting.module,
        moduleResolution: setting.moduleResolution,
        resolveJsonModule: false,
        skipLibCheck: false,
        // The index names shaders by URL.
        lib: ["lib.es2020.d.ts", "lib.dom.d.ts"],
      };
      errors[setting.name] = typeErrors([...roots, ...jsModules], options, dir);
    }
    expect(errors).toEqual(Object.fromEntries(MODULE_SETTINGS.map((s) => [s.name, []])));
    // The check can fail: a wrong profile name in the consumer is an error under every setting.
    const bad = path.join(dir, "bad.ts");
    fs.writeFileSync(bad, USE.replace('name: "desktop-32k"', 'name: "core"'));
    for (const setting of MODULE_SETTINGS) {
      const options = {
        ...STRICT_CONSUMER,
        module: setting.module,
        moduleResolution: setting.moduleResolution,
        lib: ["lib.es2020.d.ts", "lib.dom.d.ts"],
      };
      expect(typeErrors([bad], options, dir).join("\n"), setting.name).toMatch(/"desktop-32k"' is not assignable to type '"core"'/);
    }
  }, 400_000);

  it("loads in plain Node, each profile's manifest() giving exactly its manifest.json", async () => {
    const script = [
      `import * as fs from "node:fs";`,
      `const index = await import("./out/index.js");`,
      `const out = [];`,
      `for (const p of index.profiles) {`,
      `  const json = JSON.parse(fs.readFileSync(new URL("./out/" + p.name + "/manifest.json", import.meta.url), "utf8"));`,
      `  const loaded = await p.manifest();`,
      `  out.push({ name: p.name, same: JSON.stringify(loaded) === JSON.stringify(json), profile: loaded.profile, pipelines: loaded.pipelines.length, planner: typeof (await p.dispatcher()).planners.Axpby });`,
      `}`,
      `console.log(JSON.stringify(out));`,
    ].join("\n");
    const { dir, result } = await consumer(emit, { "run.mjs": script });
    if (emit === "ts")
      // The .ts modules as a bundler or tsc hands them to Node: types stripped, each beside its source as .js.
      for (const rel of result.files.keys())
        if (rel.endsWith(".ts")) {
          const source = fs.readFileSync(path.join(dir, "out", rel), "utf8");
          const js = ts.transpileModule(source, {
            compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
          });
          fs.writeFileSync(path.join(dir, "out", rel.replace(/\.ts$/, ".js")), js.outputText);
        }
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const r = spawnSync(process.execPath, ["run.mjs"], { cwd: dir, encoding: "utf8", env, timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(
      PROFILES.map((name) => ({ name, same: true, profile: name, pipelines: expect.any(Number), planner: "function" })),
    );
  }, 400_000);
});
