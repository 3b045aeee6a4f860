/**
 * The published package, as a user gets it: `npm pack` (its prepack compiles dist/) on a copy of
 * the sources, the tarball installed into a scratch consumer project (its declared dependencies
 * linked from this repo's node_modules, so it runs offline and fast), then `npx kernelc init`,
 * `lint`, `build` and `explain` there, the three entry points imported, and `tsc --noEmit` over
 * the generated out/ plus files using the API under a strict consumer tsconfig, with NodeNext and
 * with ESNext + bundler resolution. Runs when npm, tar and TypeScript are available.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { STRICT_FLAGS } from "../support/strict-consumer.js";

const root = path.resolve(__dirname, "../..");
const repoModules = path.join(root, "node_modules");
const tscBin = path.join(repoModules, "typescript", "bin", "tsc");

/**
 * The generated dispatchers compile with zero errors under the strict flags and a misspelled
 * tensor id is a compile error (issue 12, items 2 and 3): any such error fails the test.
 */
const DISPATCHERS_STRICT_CLEAN = true;

const can = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
const available = fs.existsSync(tscBin) && can("npm", ["--version"]) && can("tar", ["--version"]);

function run(cmd: string, args: readonly string[], cwd: string, timeout = 300_000): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    timeout,
    env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" },
  });
  if (r.error) throw r.error;
  return r;
}

function ok(r: SpawnSyncReturns<string>, what: string): SpawnSyncReturns<string> {
  expect(r.status, `${what} failed:\n${r.stdout}\n${r.stderr}`).toBe(0);
  return r;
}

/** Runs tsc -p on a config; resolves with its output (it exits 2 when there are errors). */
function tsc(project: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tscBin, "-p", project], { cwd: path.dirname(project) });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", () => resolve(out));
  });
}

const STRICT = {
  ...STRICT_FLAGS,
  resolveJsonModule: true,
  skipLibCheck: false,
  noEmit: true,
  target: "ES2022",
  lib: ["ES2022", "DOM"],
  types: ["@webgpu/types"],
};

/** A program using the API, the runtime, the bundle index and an imported manifest. */
const USAGE = `import { build, explain, formatDiagnostics, lint, loadConfig, type Diagnostic } from "kernelc";
import { executePlan, loadBundle, type Manifest, type Plan } from "kernelc/runtime";
import bundleIndex from "./out/index.js";
import coreManifest from "./out/core/manifest.json" with { type: "json" };

/** An imported manifest.json is a Manifest. */
export const manifest: Manifest = coreManifest;

/** Builds, lints and explains the project; returns every diagnostic. */
export async function check(): Promise<readonly Diagnostic[]> {
  const config = loadConfig({ cwd: "." });
  const built = await build({ cwd: ".", profiles: ["core"], onProgress: (step: string) => console.log(step) });
  const linted = lint({ cwd: ".", paths: ["specs"] });
  const explained = await explain("Axpby", { cwd: ".", profile: "core" });
  console.log(formatDiagnostics(built.diagnostics, built.sources), [...built.files.keys()], explained.text, config.config?.root);
  return [...config.diagnostics, ...built.diagnostics, ...linted.diagnostics, ...explained.diagnostics];
}

/** Opens the best profile of the bundle and runs a plan on it. */
export async function runPlan(adapter: GPUAdapter, plan: Plan, tensors: Readonly<Record<string, GPUBuffer>>): Promise<string> {
  const bundle = await loadBundle(adapter, bundleIndex, { readText: async (url: URL) => url.href });
  await executePlan(bundle.device, bundle.cache, plan, tensors);
  return bundle.profile + bundle.manifest.profile;
}
`;

/** Typed calls (the dispatcher branch's): the kernel's planner by name, and a misspelled tensor id rejected by the compiler. */
const TYPED_CALL = `import bundleIndex from "./out/index.js";
import { loadBundle, type Plan } from "kernelc/runtime";

/** Plans an Axpby call with the chosen profile's typed planner. */
export async function plan(adapter: GPUAdapter): Promise<Plan> {
  const bundle = await loadBundle(adapter, bundleIndex);
  const { planners } = bundle.dispatcher;
  // @ts-expect-error a misspelled tensor id is a compile error
  planners.Axpby({ inputs: { xt: { shape: [8], dtype: "float32" } }, outputs: { yT: { shape: [8], dtype: "float32" } } });
  return planners.Axpby({ inputs: { xT: { shape: [8], dtype: "float32" } }, outputs: { yT: { shape: [8], dtype: "float32" } }, attrs: { alpha: 2 } });
}
`;

/**
 * Options forwarded as they come, each possibly undefined, which the API and the runtime take as
 * left out: under exactOptionalPropertyTypes the option types must say so (`?: T | undefined`), and
 * a generated dispatcher's typed call (optional keys `?: … | undefined`) is an API `Call`.
 */
const FORWARDED = `import { build, explain, lint, loadConfig } from "kernelc";
import { executePlan, loadBundle, requestBundleDevice, type Manifest, type Plan } from "kernelc/runtime";
import bundleIndex from "./out/index.js";
import type { AxpbyCall } from "./out/core/dispatcher.js";

/** What a wrapper passes on. */
export interface Forwarded {
  readonly text?: string | undefined;
  readonly list?: readonly string[] | undefined;
  readonly flag?: boolean | undefined;
}

/** Calls every function with options that may be undefined. */
export async function forward(o: Forwarded, adapter: GPUAdapter, manifest: Manifest, plan: Plan, call: AxpbyCall): Promise<void> {
  loadConfig({ cwd: o.text, config: o.text });
  lint({ cwd: o.text, config: o.text, paths: o.list, templates: o.text });
  await build({ cwd: o.text, config: o.text, profiles: o.list, onProgress: undefined, emit: undefined });
  await explain("Axpby", { profile: "core", cwd: o.text, config: o.text, call: undefined, onProgress: undefined });
  await explain("Axpby", { profile: "core", call });
  const bundle = await loadBundle(adapter, bundleIndex, { readText: undefined, warmUp: o.flag, label: o.text });
  await requestBundleDevice(adapter, manifest, { profiles: undefined, label: o.text });
  const options = { scratchPool: undefined, timestampWrites: undefined, planTimestampWrites: undefined, checkErrors: o.flag, label: o.text };
  await executePlan(bundle.device, bundle.cache, plan, {}, options);
}
`;

describe.runIf(available)("the npm package (pack, install, use)", () => {
  let tmp = "";
  let consumer = "";
  let packed: { files: { path: string }[]; filename: string };
  const kernelc = (...args: string[]): SpawnSyncReturns<string> => run("npx", ["--no", "--", "kernelc", ...args], consumer);

  beforeAll(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-package-"));
    // A copy of the sources, so that prepack's fresh dist/ does not disturb this checkout's.
    const src = path.join(tmp, "src");
    for (const entry of ["package.json", "tsconfig.json", "LICENSE", "README.md", "bin", "docs", "schema", "scripts", "src"]) {
      fs.cpSync(path.join(root, entry), path.join(src, entry), { recursive: true });
    }
    fs.symlinkSync(repoModules, path.join(src, "node_modules"), "dir");
    const pack = ok(run("npm", ["pack", "--json", "--pack-destination", tmp], src), "npm pack");
    packed = (JSON.parse(pack.stdout) as (typeof packed)[])[0]!;

    // Install: the tarball as node_modules/kernelc, its bin linked, its declared dependencies linked from this repo.
    consumer = path.join(tmp, "consumer");
    const modules = path.join(consumer, "node_modules");
    fs.mkdirSync(path.join(modules, ".bin"), { recursive: true });
    fs.writeFileSync(
      path.join(consumer, "package.json"),
      JSON.stringify(
        { name: "consumer", private: true, type: "module", devDependencies: { kernelc: `file:../${packed.filename}` } },
        null,
        2,
      ),
    );
    ok(run("tar", ["-xzf", path.join(tmp, packed.filename), "-C", tmp]), "tar");
    fs.renameSync(path.join(tmp, "package"), path.join(modules, "kernelc"));
    const manifest = JSON.parse(fs.readFileSync(path.join(modules, "kernelc", "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
      bin: Record<string, string>;
    };
    for (const dep of Object.keys(manifest.dependencies)) {
      expect(fs.existsSync(path.join(repoModules, dep)), `dependency ${dep} is installed in the repo`).toBe(true);
      fs.mkdirSync(path.dirname(path.join(modules, dep)), { recursive: true });
      fs.symlinkSync(path.join(repoModules, dep), path.join(modules, dep), "dir");
    }
    for (const [name, file] of Object.entries(manifest.bin))
      fs.symlinkSync(path.join("..", "kernelc", file), path.join(modules, ".bin", name));
  });

  it("ships dist/ with types and no source maps, LICENSE, the schema and the docs; not src/, tests or dist/reference", () => {
    const files = packed.files.map((f) => f.path);
    for (const f of [
      "LICENSE",
      "README.md",
      "package.json",
      "bin/kernelc.js",
      "schema/kernel-spec.schema.json",
      "docs/api.md",
      "docs/vite.md",
      "dist/api/index.js",
      "dist/api/index.d.ts",
      "dist/runtime/index.js",
      "dist/runtime/index.d.ts",
      "dist/runtime/bundle.d.ts",
      "dist/vite/index.js",
      "dist/vite/index.d.ts",
      "dist/cli/main.js",
    ]) {
      expect(files, f).toContain(f);
    }
    expect(
      files.filter(
        (f) =>
          f.endsWith(".map") || f.startsWith("src/") || f.startsWith("test/") || f.startsWith("dist/reference/") || f.startsWith("out/"),
      ),
    ).toEqual([]);
    const pkg = JSON.parse(fs.readFileSync(path.join(consumer, "node_modules", "kernelc", "package.json"), "utf8")) as Record<
      string,
      unknown
    >;
    expect(pkg["sideEffects"]).toBe(false);
    expect(pkg["license"]).toBe("MIT");
    expect(Object.keys(pkg["exports"] as object)).toEqual([".", "./runtime", "./vite", "./package.json"]);
    expect((pkg["dependencies"] as Record<string, string>)["@webgpu/types"]).toBeDefined();
    expect((pkg["peerDependenciesMeta"] as Record<string, { optional: boolean }>)["vite"]).toEqual({ optional: true });
  });

  it("runs kernelc --version, init, lint, build and explain from the installed package", () => {
    expect(ok(kernelc("--version"), "kernelc --version").stdout.trim()).toBe(
      JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version,
    );
    ok(kernelc("init"), "kernelc init");
    expect(ok(kernelc("lint"), "kernelc lint").stderr).toMatch(
      /^1 spec checked, 1 shader rendered and validated for \d+ profiles?, no problems\n$/,
    );
    expect(ok(kernelc("build"), "kernelc build").stderr).toBe("wrote out/: 2 profiles, 1 shader\n");
    expect(ok(kernelc("explain", "Axpby", "--profile", "core", "--call", "calls/axpby.json"), "kernelc explain").stdout).toContain(
      "picked scalar",
    );
  }, 300_000);

  it("imports the API, the runtime and the Vite plugin; the runtime does not load the compiler", () => {
    const script = `
      import * as runtime from "kernelc/runtime";
      import("kernelc").then(async (api) => {
        const plugin = (await import("kernelc/vite")).default();
        const built = await api.build({ cwd: "." });
        console.log(JSON.stringify({ loadBundle: typeof runtime.loadBundle, ok: built.ok, files: built.files.size, plugin: plugin.name }));
      });`;
    const r = ok(run(process.execPath, ["--input-type=module", "-e", script], consumer), "node import");
    expect(JSON.parse(r.stdout)).toMatchObject({ loadBundle: "function", ok: true, plugin: "kernelc" });
    // Statically: every module of dist/runtime imports only dist/runtime and dist/model (plain data types).
    const dist = path.join(consumer, "node_modules", "kernelc", "dist");
    for (const file of fs.readdirSync(path.join(dist, "runtime")).filter((f) => f.endsWith(".js"))) {
      const text = fs.readFileSync(path.join(dist, "runtime", file), "utf8");
      for (const m of text.matchAll(/\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']/g)) {
        const spec = m[1] ?? m[2]!;
        expect(spec, `dist/runtime/${file}`).toMatch(/^\.\.?\//);
        const target = path.relative(dist, path.resolve(dist, "runtime", spec)).split(path.sep)[0];
        expect(["runtime", "model"], `dist/runtime/${file} imports ${spec}`).toContain(target);
      }
    }
  });

  it("out/ and code using the API compile with zero errors under a strict consumer tsconfig (NodeNext, and ESNext + bundler)", async () => {
    fs.writeFileSync(path.join(consumer, "usage.ts"), USAGE);
    fs.writeFileSync(path.join(consumer, "typed-call.ts"), TYPED_CALL);
    fs.writeFileSync(path.join(consumer, "forwarded.ts"), FORWARDED);
    const configs = {
      "tsconfig.nodenext.json": { ...STRICT, module: "NodeNext", moduleResolution: "NodeNext" },
      // The library declarations were checked above; here only the project's files (saves a second pass over lib.dom).
      "tsconfig.bundler.json": { ...STRICT, module: "ESNext", moduleResolution: "bundler", skipLibCheck: true },
    };
    for (const [name, compilerOptions] of Object.entries(configs)) {
      fs.writeFileSync(
        path.join(consumer, name),
        JSON.stringify({ compilerOptions, include: ["out/**/*.ts", "usage.ts", "typed-call.ts", "forwarded.ts"] }, null, 2),
      );
    }
    const outputs = await Promise.all(Object.keys(configs).map((name) => tsc(path.join(consumer, name))));
    Object.keys(configs).forEach((name, i) => {
      const errors = outputs[i]!.split("\n").filter((l) => /error TS\d+/.test(l));
      const soft = (l: string): boolean => /^out\/[^/]+\/dispatcher\.ts\(/.test(l) || l.startsWith("typed-call.ts(");
      expect(
        errors.filter((l) => !soft(l)),
        `${name}:\n${outputs[i]}`,
      ).toEqual([]);
      const pending = errors.filter(soft);
      if (DISPATCHERS_STRICT_CLEAN) expect(pending, `${name}:\n${outputs[i]}`).toEqual([]);
      else if (pending.length > 0)
        console.warn(
          `${name}: ${pending.length} strict-flag errors in the generated dispatchers / typed calls (the dispatcher branch fixes these), e.g.\n${pending.slice(0, 3).join("\n")}`,
        );
    });
  }, 300_000);
});
