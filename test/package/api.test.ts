/** The programmatic API (`import { build, lint, explain, loadConfig } from "kernelc"`) and the bundle index it builds. */
import { describe, expect, it } from "vitest";
import * as fs from "node:fs";
import * as path from "node:path";
import { build, explain, formatDiagnostics, lint, loadConfig, version } from "../../src/api/index.js";
import { INIT_FILES } from "../../src/cli/init-command.js";
import { main } from "../../src/cli/main.js";
import { writeProject } from "../support/temp-project.js";

/** A fresh copy of the `kernelc init` project. */
function project(): string {
  return writeProject("api", INIT_FILES);
}

describe("kernelc API", () => {
  it("build() returns the bundle's files and reports progress, writing nothing", async () => {
    const dir = project();
    const steps: string[] = [];
    const r = await build({ cwd: dir, onProgress: (s) => steps.push(s) });
    expect(r.ok).toBe(true);
    expect(r.diagnostics).toEqual([]);
    expect(r.profiles).toEqual(["desktop-32k", "core"]);
    expect(r.outDir).toBe(path.join(dir, "out"));
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
    const names = [...r.files.keys()];
    expect(names.filter((n) => !n.startsWith("shaders/"))).toEqual([
      "core/dispatcher.ts",
      "core/kernels.json",
      "core/manifest.json",
      "core/manifest.ts",
      "desktop-32k/dispatcher.ts",
      "desktop-32k/kernels.json",
      "desktop-32k/manifest.json",
      "desktop-32k/manifest.ts",
      "index.ts",
      "profiles.json",
    ]);
    expect(names.filter((n) => n.startsWith("shaders/"))).toHaveLength(1);
    expect(steps[0]).toBe("checking specs");
    expect(steps.some((s) => s.startsWith("validating"))).toBe(true);
    // emit: "js" gives the same bundle with JavaScript modules and their declarations.
    const js = await build({ cwd: dir, emit: "js" });
    expect(js.ok).toBe(true);
    expect([...js.files.keys()].filter((n) => !n.startsWith("shaders/"))).toEqual([
      "core/dispatcher.d.ts",
      "core/dispatcher.js",
      "core/kernels.json",
      "core/manifest.d.ts",
      "core/manifest.js",
      "core/manifest.json",
      "desktop-32k/dispatcher.d.ts",
      "desktop-32k/dispatcher.js",
      "desktop-32k/kernels.json",
      "desktop-32k/manifest.d.ts",
      "desktop-32k/manifest.js",
      "desktop-32k/manifest.json",
      "index.d.ts",
      "index.js",
      "profiles.json",
    ]);
    expect(js.files.get("core/manifest.json")).toBe(r.files.get("core/manifest.json"));
    // The manifest holds what the runtime reads; the variants' descriptions are in kernels.json.
    const manifest = JSON.parse(r.files.get("core/manifest.json")!) as Record<string, unknown>;
    expect(Object.keys(manifest).sort()).toEqual(["generatedBy", "pipelines", "profile", "requiredFeatures", "requiredLimits", "shaders"]);
    const described = JSON.parse(r.files.get("core/kernels.json")!) as Record<string, unknown>;
    expect(manifest.generatedBy).toBe("kernelc 0.1.0 as core/manifest.json from specs/Axpby.json; do not edit");
    expect(described).toMatchObject({
      generatedBy: "kernelc 0.1.0 as core/kernels.json from specs/Axpby.json; do not edit",
      profile: "core",
      kernels: { Axpby: { variants: expect.any(Array) } },
    });
  });

  it("build() returns diagnostics, not files, for a broken spec; loadConfig() for a broken config", async () => {
    const dir = project();
    const spec = path.join(dir, "specs", "Axpby.json");
    fs.writeFileSync(spec, fs.readFileSync(spec, "utf8").replace('"groups": "ceilDiv(n, tunables.WG)"', '"groups": "ceilDiv(n, wgg)"'));
    const r = await build({ cwd: dir });
    expect(r.ok).toBe(false);
    expect(r.files.size).toBe(0);
    expect(r.diagnostics.map((d) => d.code)).toContain("unknown_name");
    const text = formatDiagnostics(r.diagnostics, r.sources);
    expect(text).toContain("error[unknown_name]");
    expect(text).toContain("ceilDiv(n, wgg)");
    expect(text).toMatch(/\d+ errors?, \d+ warnings?\n$/);

    fs.writeFileSync(path.join(dir, "kernelc.config.json"), '{ "profiles": ["desktop-99k"] }');
    const c = loadConfig({ cwd: dir });
    expect(c.ok).toBe(false);
    expect(c.config).toBeUndefined();
    expect(c.diagnostics[0]!.message).toContain("desktop-99k");
    const b = await build({ cwd: dir });
    expect(b.ok).toBe(false);
    expect(b.diagnostics).toEqual(c.diagnostics);
    expect(loadConfig({ cwd: dir, config: "missing.json" }).diagnostics[0]!.code).toBe("file_unreadable");
  });

  it("build() from JavaScript with an emit other than ts or js is a usage diagnostic, not the JavaScript modules", async () => {
    const r = await build({ cwd: project(), emit: "py" as "js" });
    expect(r.ok).toBe(false);
    expect(r.files.size).toBe(0);
    expect(r.diagnostics.map((d) => [d.code, d.message])).toEqual([["usage", 'emit must be "ts" or "js", got "py"']]);
  });

  it("lint() checks the config's specs folder by default, or the paths given", () => {
    const dir = project();
    expect(lint({ cwd: dir })).toMatchObject({ ok: true, diagnostics: [], kernels: ["Axpby"] });
    const bad = path.join(dir, "bad.json");
    fs.writeFileSync(bad, "{ nope");
    const r = lint({ cwd: dir, paths: ["bad.json"] });
    expect(r.ok).toBe(false);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["json_syntax"]);
    expect(r.diagnostics[0]!.location?.file).toBe(bad);
  });

  it("explain() returns the candidates, the report and the call's choice as data", async () => {
    const dir = project();
    const call = JSON.parse(INIT_FILES.get("calls/axpby.json")!) as { inputs: Record<string, { shape: number[]; dtype: string }> };
    const r = await explain("Axpby", { cwd: dir, profile: "core", call });
    expect(r.ok).toBe(true);
    expect(r.candidates.map((c) => [c.variant, c.tunables, c.status])).toEqual([
      ["scalar", { WG: 256 }, "emitted"],
      ["scalar", { WG: 64 }, "not-dispatched"],
    ]);
    expect(r.text).toContain("Axpby on profile core");
    expect(r.text).toContain("picked scalar");
    expect(JSON.stringify(r.call)).toContain('"scalar"');
    const unknown = await explain("Nope", { cwd: dir, profile: "core" });
    expect(unknown.ok).toBe(false);
    expect(unknown.diagnostics.at(-1)!.message).toBe("no kernel named `Nope`");
    const badProfile = await explain("Axpby", { cwd: dir, profile: "nope" });
    expect(badProfile.diagnostics[0]!.code).toBe("unknown_profile");
  });

  it("exposes the package version", () => {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../package.json"), "utf8")) as { version: string };
    expect(version).toBe(pkg.version);
  });
});

describe("the bundle index (out/index.ts)", () => {
  it("lists the profiles in preference order with their requirements, lazy imports, and every shader", async () => {
    const dir = project();
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify({ profiles: ["desktop-32k", "mobile-256", "core"] }));
    const r = await build({ cwd: dir });
    const index = r.files.get("index.ts")!;
    expect(index.split("\n")[0]).toBe(
      "// Generated by kernelc 0.1.0 as index.ts from specs/Axpby.json: the bundle index, for profile order desktop-32k, mobile-256, core. Do not edit.",
    );
    const names = [...index.matchAll(/^ {4}name: "([^"]+)",$/gm)].map((m) => m[1]);
    expect(names).toEqual(["desktop-32k", "mobile-256", "core"]);
    for (const p of names) {
      expect(index).toContain(`    dispatcher: () => import("./${p}/dispatcher.js"),`);
      expect(index).toContain(`    manifest: () => import("./${p}/manifest.js").then((m) => m.default),`);
      // The requirements are the manifest's.
      const manifest = JSON.parse(r.files.get(`${p}/manifest.json`)!) as {
        requiredLimits: Record<string, number>;
        requiredFeatures: string[];
      };
      // The profiles' values (after their type, which the module states for isolatedDeclarations).
      const values = index.slice(index.indexOf("] = ["));
      const entry = values.slice(values.indexOf(`name: "${p}",`));
      const limits = /requiredLimits: (\{[^}]*\})/.exec(entry)![1]!;
      expect(JSON.parse(limits)).toEqual(manifest.requiredLimits);
      expect(JSON.parse(/requiredFeatures: (\[[^\]]*\])/.exec(entry)![1]!)).toEqual(manifest.requiredFeatures);
    }
    const shaderFiles = [...r.files.keys()].filter((f) => f.startsWith("shaders/")).map((f) => f.slice("shaders/".length, -".wgsl".length));
    const listed = [...index.matchAll(/^ {2}"([0-9a-f]+)": \(\) => new URL\("\.\/shaders\/([0-9a-f]+)\.wgsl", import\.meta\.url\),$/gm)];
    expect(listed.map((m) => m[1])).toEqual(shaderFiles);
    expect(listed.every((m) => m[1] === m[2])).toBe(true);
    expect(index).toContain("export default bundle;");
  });

  it("stays the whole bundle's index after a partial build (`build --profile core`), byte for byte", async () => {
    const dir = project();
    fs.writeFileSync(path.join(dir, "kernelc.config.json"), JSON.stringify({ profiles: ["desktop-32k", "mobile-256", "core"] }));
    const io = { stdout: () => {}, stderr: () => {}, cwd: dir, isTTY: false, env: {} };
    expect(await main(["build"], io)).toBe(0);
    const full = fs.readFileSync(path.join(dir, "out", "index.ts"), "utf8");
    // A template change rebuilds core's shaders only; the index must list every profile and the new shader set.
    const template = path.join(dir, "templates", "axpby.wgsl.jinja");
    fs.writeFileSync(template, fs.readFileSync(template, "utf8").replace("one element of", "one element (of"));
    expect(await main(["build", "--profile", "core"], io)).toBe(0);
    const partial = fs.readFileSync(path.join(dir, "out", "index.ts"), "utf8");
    expect([...partial.matchAll(/^ {4}name: "([^"]+)",$/gm)].map((m) => m[1])).toEqual(["desktop-32k", "mobile-256", "core"]);
    const onDisk = fs
      .readdirSync(path.join(dir, "out", "shaders"))
      .map((f) => f.slice(0, -".wgsl".length))
      .sort();
    expect([...partial.matchAll(/^ {2}"([0-9a-f]+)": /gm)].map((m) => m[1])).toEqual(onDisk);
    expect(onDisk).toHaveLength(2);
    // Back to the original template: a full build gives the same index as the first one.
    fs.writeFileSync(template, fs.readFileSync(template, "utf8").replace("one element (of", "one element of"));
    expect(await main(["build"], io)).toBe(0);
    expect(fs.readFileSync(path.join(dir, "out", "index.ts"), "utf8")).toBe(full);
    expect(await main(["build", "--profile", "core", "--force"], io)).toBe(0);
    expect(fs.readFileSync(path.join(dir, "out", "index.ts"), "utf8")).toBe(full);
    expect(await main(["build", "--check"], io)).toBe(0);
  });
});
