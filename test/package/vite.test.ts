/**
 * The Vite plugin (kernelc/vite): builds on start, rebuilds on spec changes with an error overlay,
 * serves .wgsl as modules, writes out/ only where it may; and the example app built by Vite.
 */
import { describe, expect, it } from "vitest";
import { EventEmitter } from "node:events";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import kernelc from "../../src/vite/index.js";
import { MARKER, MARKER_TEXT, writeOut } from "../../src/vite/write-out.js";
import * as cliOut from "../../src/cli/out-dir.js";
import { main } from "../../src/cli/main.js";
import { INIT_FILES } from "../../src/cli/init-command.js";
import { UserError } from "../../src/core/diagnostic.js";
import { DEFAULT_PROFILES } from "../../src/plan/profiles.js";
import { writeProject } from "../support/temp-project.js";

const root = path.resolve(__dirname, "../..");

function project(): string {
  return writeProject("vite", INIT_FILES);
}

type Hook = (this: unknown, ...args: unknown[]) => unknown;
const hook = (plugin: object, name: string): Hook => (plugin as Record<string, Hook>)[name]!;

/** A dev server with what the plugin uses: a watcher, a websocket and a logger, recording what is sent. */
function fakeServer() {
  const watcher = Object.assign(new EventEmitter(), {
    watched: [] as string[],
    add(p: string[]) {
      this.watched.push(...p);
    },
  });
  const sent: {
    type: string;
    err?: { message: string; plugin: string; id?: string; loc?: { file: string; line: number; column: number } };
  }[] = [];
  const listeners: (() => void)[] = [];
  const logs: string[] = [];
  const ws = { send: (p: (typeof sent)[number]) => sent.push(p), on: (_e: string, f: () => void) => listeners.push(f) };
  const logger = { info: (m: string) => logs.push(m), warn: (m: string) => logs.push(m), error: (m: string) => logs.push(m) };
  return { server: { watcher, ws, config: { logger } }, watcher, sent, listeners, logs };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !condition(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(condition()).toBe(true);
}

describe("kernelc/vite plugin", () => {
  it("builds out/ on start, shows spec errors in the overlay, and reloads once the build is good again", async () => {
    const dir = project();
    const plugin = kernelc();
    hook(plugin, "configResolved").call(plugin, { root: dir, command: "serve" });
    const errors: string[] = [];
    await hook(plugin, "buildStart").call({ error: (m: string) => errors.push(m), warn: () => {} });
    expect(errors).toEqual([]);
    expect(fs.readFileSync(path.join(dir, "out", "index.ts"), "utf8")).toContain('name: "desktop-32k"');
    expect(JSON.parse(fs.readFileSync(path.join(dir, "out", "build-info.json"), "utf8")).files["index.ts"]).toMatch(/^[0-9a-f]{64}$/);

    const { server, watcher, sent, listeners } = fakeServer();
    hook(plugin, "configureServer").call(plugin, server);
    expect(watcher.watched).toEqual([path.join(dir, "specs"), path.join(dir, "templates"), path.join(dir, "kernelc.config.json")]);

    // A change outside the watched folders does nothing.
    watcher.emit("all", "change", path.join(dir, "out", "index.ts"));
    await new Promise((r) => setTimeout(r, 200));
    expect(sent).toEqual([]);

    const spec = path.join(dir, "specs", "Axpby.json");
    const good = fs.readFileSync(spec, "utf8");
    fs.writeFileSync(spec, good.replace('"groups": "ceilDiv(n, tunables.WG)"', '"groups": "ceilDiv(n, wgg)"'));
    watcher.emit("all", "change", spec);
    await until(() => sent.length === 1);
    const overlay = sent[0]!;
    expect(overlay.type).toBe("error");
    expect(overlay.err!.plugin).toBe("kernelc");
    expect(overlay.err!.message).toContain("error[unknown_name]");
    expect(overlay.err!.message).toContain("specs/Axpby.json");
    const line = good.split("\n").findIndex((l) => l.includes('"groups"')) + 1;
    expect(overlay.err!.loc).toMatchObject({ file: spec, line });
    // out/ keeps the last good build.
    expect(fs.readFileSync(path.join(dir, "out", "index.ts"), "utf8")).toContain("export default bundle;");
    // A browser that connects while the build is broken gets the overlay too.
    listeners.forEach((f) => f());
    expect(sent.map((p) => p.type)).toEqual(["error", "error"]);

    fs.writeFileSync(spec, good.replace('"default": 64', '"default": 256'));
    watcher.emit("all", "change", spec);
    await until(() => sent.length === 3);
    expect(sent[2]).toEqual({ type: "full-reload", path: "*" });
  });

  it("fails a vite build with the diagnostics when the bundle does not build", async () => {
    const dir = project();
    const template = path.join(dir, "templates", "axpby.wgsl.jinja");
    fs.writeFileSync(template, fs.readFileSync(template, "utf8").replace("let i = gid.x;", "let i: u32 = 1.5;"));
    const plugin = kernelc();
    hook(plugin, "configResolved").call(plugin, { root: dir, command: "build" });
    const errors: string[] = [];
    await hook(plugin, "buildStart").call({ error: (m: string) => errors.push(m), warn: () => {} });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("kernelc: the kernel bundle does not build");
    expect(errors[0]).toContain("error[wgsl_invalid]");
    expect(fs.existsSync(path.join(dir, "out"))).toBe(false);
  });

  it("serves a .wgsl file as a module whose default export is its text", () => {
    const dir = project();
    const file = path.join(dir, "k.wgsl");
    fs.writeFileSync(file, '@compute @workgroup_size(1) fn main() {} // "quoted"\n');
    const loaded = hook(kernelc(), "load").call({}, file) as { code: string };
    expect(loaded.code).toBe(`export default ${JSON.stringify(fs.readFileSync(file, "utf8"))};\n`);
    expect(hook(kernelc(), "load").call({}, path.join(dir, "k.ts"))).toBeNull();
  });
});

describe("kernelc/vite in a real Vite dev server", () => {
  it("serves out/index.ts as a module and the shaders it names as WGSL text", async () => {
    const dir = project();
    const vite = await import("vite");
    const server = await vite.createServer({
      root: dir,
      configFile: false,
      logLevel: "silent",
      plugins: [kernelc()],
      server: { host: "127.0.0.1", port: 0, ws: false },
    });
    try {
      await server.listen();
      const base = server.resolvedUrls!.local[0]!;
      const index = await (await fetch(new URL("out/index.ts", base))).text();
      expect(index).toContain("export default bundle");
      const urls = [...index.matchAll(/new URL\("([^"]+\.wgsl)"/g)].map((m) => new URL(m[1]!, new URL("out/index.ts", base)));
      expect(urls).toHaveLength(1);
      const shader = await fetch(urls[0]!);
      expect(shader.status).toBe(200);
      const file = path.join(dir, "out", "shaders", path.basename(urls[0]!.pathname));
      expect(await shader.text()).toBe(fs.readFileSync(file, "utf8"));
    } finally {
      await server.close();
    }
  });
});

describe("the plugin's out/ writer", () => {
  /** A generated file's text: kernelc's header line naming `rel`, then `body`. */
  const marked = (rel: string, body: string): string => `// Generated by kernelc test as ${rel} from test. Do not edit.\n${body}`;
  const files = (entries: Record<string, string>): Map<string, string> =>
    new Map(Object.entries(entries).map(([rel, body]) => [rel, marked(rel, body)]));

  it("writes only what changed, removes the files it wrote that are no longer built, and refuses to overwrite an edit", () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-out-")), "out");
    expect(writeOut(out, files({ "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" }))).toEqual({
      written: [MARKER, "a.ts", "s/x.wgsl", "s/y.wgsl"],
      removed: [],
    });
    expect(fs.readFileSync(path.join(out, MARKER), "utf8")).toBe(MARKER_TEXT);
    expect(writeOut(out, files({ "a.ts": "a", "s/x.wgsl": "x", "s/y.wgsl": "y" }))).toEqual({ written: [], removed: [] });
    fs.writeFileSync(path.join(out, "s", "y.wgsl"), "edited by hand");
    expect(() => writeOut(out, files({ "a.ts": "A" }))).toThrow(/s\/y\.wgsl was changed after kernelc wrote it/);
    expect(fs.readFileSync(path.join(out, "s", "y.wgsl"), "utf8")).toBe("edited by hand");
    expect(fs.readFileSync(path.join(out, "a.ts"), "utf8")).toBe(marked("a.ts", "a"));
    fs.writeFileSync(path.join(out, "s", "y.wgsl"), marked("s/y.wgsl", "y"));
    expect(writeOut(out, files({ "a.ts": "A" }))).toEqual({ written: ["a.ts"], removed: ["s/x.wgsl", "s/y.wgsl"] });
    expect(fs.readdirSync(out).sort()).toEqual([MARKER, "a.ts", "build-info.json"]);
    expect(fs.readFileSync(path.join(out, "a.ts"), "utf8")).toBe(marked("a.ts", "A"));
  });

  it("marks the folder as the CLI does, so `kernelc build` and the plugin take turns on one out/", async () => {
    expect([MARKER, MARKER_TEXT]).toEqual([cliOut.MARKER, cliOut.MARKER_TEXT]);
    const dir = project();
    const cli = async (): Promise<number> =>
      main(["build", "--force"], { stdout: () => {}, stderr: () => {}, cwd: dir, isTTY: false, env: {} });
    expect(await cli()).toBe(0);
    const plugin = kernelc();
    hook(plugin, "configResolved").call(plugin, { root: dir, command: "build" });
    const template = path.join(dir, "templates", "axpby.wgsl.jinja");
    fs.writeFileSync(template, fs.readFileSync(template, "utf8").replace("one element of", "one element (of"));
    const errors: string[] = [];
    await hook(plugin, "buildStart").call({ error: (m: string) => errors.push(m), warn: () => {} });
    expect(errors).toEqual([]);
    const shaders = fs.readdirSync(path.join(dir, "out", "shaders"));
    expect(shaders).toHaveLength(1);
    expect(fs.readFileSync(path.join(dir, "out", "shaders", shaders[0]!), "utf8")).toContain("one element (of");
    expect(await cli()).toBe(0);
    expect(fs.readdirSync(path.join(dir, "out", "shaders"))).toEqual(shaders);
  });

  it("refuses a folder with files but no kernelc build-info, and a file kernelc did not write", () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-out-"));
    const foreign = path.join(base, "foreign");
    fs.mkdirSync(foreign);
    fs.writeFileSync(path.join(foreign, "notes.txt"), "mine");
    const err = (() => {
      try {
        writeOut(foreign, files({ "a.ts": "a" }));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).diagnostics[0]).toMatchObject({ code: "out_not_ours" });
    expect(fs.readdirSync(foreign)).toEqual(["notes.txt"]);

    const ours = path.join(base, "ours");
    writeOut(ours, files({ "a.ts": "a" }));
    fs.writeFileSync(path.join(ours, "b.ts"), "someone else's");
    expect(() => writeOut(ours, files({ "a.ts": "a", "b.ts": "b" }))).toThrow("b.ts (a file) was not written by kernelc");
    expect(fs.readFileSync(path.join(ours, "b.ts"), "utf8")).toBe("someone else's");
  });
});

const distBuilt =
  fs.existsSync(path.join(root, "dist", "vite", "index.js")) && fs.existsSync(path.join(root, "dist", "runtime", "bundle.js"));

describe.runIf(distBuilt)("examples/vite-app built by Vite with the plugin", () => {
  it("bundles the dispatchers, the runtime and every shader file of the bundle", async () => {
    // The example as a user has it: kernelc and vite in node_modules, the repo's specs and templates two levels up.
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-vite-app-"));
    fs.mkdirSync(path.join(tmp, "node_modules"));
    fs.symlinkSync(root, path.join(tmp, "node_modules", "kernelc"), "dir");
    fs.symlinkSync(path.join(root, "node_modules", "vite"), path.join(tmp, "node_modules", "vite"), "dir");
    for (const d of ["specs", "templates"]) fs.cpSync(path.join(root, d), path.join(tmp, d), { recursive: true });
    // The example reads the repository's specs and templates (../../specs): kernelc allows folders
    // outside the project only inside the repository it is in, which a .git entry marks.
    fs.mkdirSync(path.join(tmp, ".git"));
    const app = path.join(tmp, "examples", "vite-app");
    fs.cpSync(path.join(root, "examples", "vite-app"), app, {
      recursive: true,
      filter: (src) => !/[/\\](out|dist|node_modules)$/.test(src),
    });
    const vite = await import("vite");
    const dist = path.join(tmp, "dist");
    await vite.build({ root: app, logLevel: "silent", build: { outDir: dist, emptyOutDir: true } });

    const outShaders = fs.readdirSync(path.join(app, "out", "shaders")).sort();
    expect(outShaders.length).toBeGreaterThan(3);
    const assets = fs.readdirSync(path.join(dist, "assets"));
    const js = assets.filter((a) => a.endsWith(".js")).map((a) => fs.readFileSync(path.join(dist, "assets", a), "utf8"));
    // Every shader is an asset with the same text (or, below Vite's inline limit, a data: URL of it).
    let files = 0;
    for (const shader of outShaders) {
      const id = shader.slice(0, -".wgsl".length);
      const text = fs.readFileSync(path.join(app, "out", "shaders", shader), "utf8");
      const asset = assets.find((a) => a.startsWith(`${id}-`) && a.endsWith(".wgsl"));
      if (asset) {
        files++;
        expect(fs.readFileSync(path.join(dist, "assets", asset), "utf8"), shader).toBe(text);
      } else {
        expect(
          js.some((code) => code.includes(`;base64,${Buffer.from(text).toString("base64")}`)),
          shader,
        ).toBe(true);
      }
    }
    expect(files).toBeGreaterThan(0);
    // One lazily loaded dispatcher chunk per profile (the example builds the default profiles), with the PagedAttention planner.
    const dispatchers = js.filter((code) => code.includes("KernelCallError") && code.includes("PagedAttention"));
    const profiles = DEFAULT_PROFILES.map((p) => p.name);
    expect(dispatchers.length).toBe(profiles.length);
    for (const profile of profiles)
      expect(
        dispatchers.filter((code) => new RegExp(`profile ${profile}(?![\\w-])`).test(code)),
        profile,
      ).toHaveLength(1);
    // The entry holds the runtime (loadBundle's error text) and the example's check.
    const html = fs.readFileSync(path.join(dist, "index.html"), "utf8");
    const entry = /<script type="module" crossorigin src="\/assets\/([^"]+\.js)"/.exec(html)![1]!;
    const entryCode = fs.readFileSync(path.join(dist, "assets", entry), "utf8");
    expect(entryCode).toContain("the bundle index lists no profile");
    expect(entryCode).toContain("matches the CPU reference");
  });
});
