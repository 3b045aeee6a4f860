/**
 * The Vite plugin (`import kernelc from "kernelc/vite"`): builds the project's bundle into its out
 * folder when Vite starts, rebuilds it when a spec, a template or the config changes (showing the
 * diagnostics in Vite's error overlay, and reloading the page once the build is good again), and
 * serves `.wgsl` files as modules whose default export is the shader's text. The app imports the
 * generated out/index.ts and dispatchers like any other module; the shader files that
 * out/index.ts names with `new URL(…, import.meta.url)` become assets of the Vite build.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Plugin, ResolvedConfig, ViteDevServer } from "vite";
import { UserError, type Diagnostic } from "../core/diagnostic.js";
import { renderJson } from "../core/render-diagnostics.js";
import { build, formatDiagnostics, loadConfig } from "../api/index.js";
import { writeOut } from "./write-out.js";

/** Options of the kernelc Vite plugin. */
export interface KernelcPluginOptions {
  /** The config file, relative to Vite's root; default: the root's kernelc.config.json, else the defaults. */
  readonly config?: string | undefined;
  /** Build only these profiles; default: the config's. */
  readonly profiles?: readonly string[] | undefined;
}

/** One build's outcome: the diagnostics as text, and the first error's place for the overlay. */
interface Outcome {
  readonly ok: boolean;
  readonly text: string;
  readonly diagnostics: readonly Diagnostic[];
  readonly changed: boolean;
  readonly sources: ReadonlyMap<string, string>;
}

/** The kernelc Vite plugin: builds the bundle on start, rebuilds on spec/template/config changes. */
export default function kernelc(options: KernelcPluginOptions = {}): Plugin {
  let root = process.cwd();
  let command: ResolvedConfig["command"] = "serve";
  let server: ViteDevServer | undefined;
  let last: Outcome | undefined;
  let running: Promise<Outcome> | undefined;
  let again = false;

  const runBuild = async (): Promise<Outcome> => {
    const result = await build({
      cwd: root,
      ...(options.config !== undefined ? { config: options.config } : {}),
      ...(options.profiles ? { profiles: options.profiles } : {}),
    });
    if (!result.ok || !result.outDir)
      return {
        ok: false,
        text: formatDiagnostics(relative(result.diagnostics), relativeSources(result.sources)),
        diagnostics: result.diagnostics,
        changed: false,
        sources: result.sources,
      };
    try {
      const wrote = writeOut(result.outDir, result.files, rel(result.outDir));
      return {
        ok: true,
        text: formatDiagnostics(relative(result.diagnostics), relativeSources(result.sources)),
        diagnostics: result.diagnostics,
        changed: wrote.written.length + wrote.removed.length > 0,
        sources: result.sources,
      };
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      return {
        ok: false,
        text: formatDiagnostics(relative(err.diagnostics)),
        diagnostics: err.diagnostics,
        changed: false,
        sources: new Map(),
      };
    }
  };
  const relative = (diags: readonly Diagnostic[]): Diagnostic[] =>
    diags.map((d) => (d.location ? { ...d, location: { ...d.location, file: rel(d.location.file) } } : d));
  const relativeSources = (sources: ReadonlyMap<string, string>): Map<string, string> => new Map([...sources].map(([f, t]) => [rel(f), t]));
  const rel = (file: string): string => {
    const r = path.relative(root, file);
    return r.startsWith("..") || path.isAbsolute(r) ? file : r.split(path.sep).join("/");
  };

  /** Builds now, or once more after the build in progress (changes during a build are not lost). */
  const rebuild = (): Promise<Outcome> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let outcome: Outcome;
      do {
        again = false;
        outcome = await runBuild();
      } while (again);
      running = undefined;
      return outcome;
    })();
    return running;
  };

  const report = (outcome: Outcome): void => {
    const wasBad = last !== undefined && !last.ok;
    last = outcome;
    if (!server) return;
    const logger = server.config.logger;
    if (!outcome.ok) {
      logger.error(`[kernelc] build failed:\n${outcome.text}`, { timestamp: true });
      server.ws.send({ type: "error", err: overlayError(outcome, root) });
      return;
    }
    if (outcome.text) logger.warn(`[kernelc]\n${outcome.text}`, { timestamp: true });
    if (outcome.changed || wasBad) {
      logger.info("[kernelc] bundle rebuilt", { timestamp: true });
      server.ws.send({ type: "full-reload", path: "*" });
    }
  };

  return {
    name: "kernelc",
    enforce: "pre",
    configResolved(config) {
      root = config.root;
      command = config.command;
    },
    async buildStart() {
      const outcome = await rebuild();
      if (command === "build" && !outcome.ok) this.error(`kernelc: the kernel bundle does not build:\n${outcome.text}`);
      if (command === "build" && outcome.text) this.warn(`kernelc:\n${outcome.text}`);
      report(outcome);
    },
    configureServer(devServer) {
      server = devServer;
      const loaded = loadConfig({ cwd: root, ...(options.config !== undefined ? { config: options.config } : {}) });
      const project = loaded.config;
      const configFile = path.resolve(root, options.config ?? "kernelc.config.json");
      const watched = project
        ? [path.resolve(project.root, project.config.specs), path.resolve(project.root, project.config.templates)]
        : [];
      devServer.watcher.add([...watched, configFile]);
      const inside = (file: string): boolean =>
        path.resolve(file) === configFile ||
        watched.some(
          (dir) => !path.relative(dir, path.resolve(file)).startsWith("..") && !path.isAbsolute(path.relative(dir, path.resolve(file))),
        );
      devServer.watcher.on("all", (_event: string, file: string) => {
        if (inside(file)) void rebuild().then(report);
      });
      devServer.ws.on("connection", () => {
        if (last && !last.ok) devServer.ws.send({ type: "error", err: overlayError(last, root) });
      });
    },
    load(id) {
      if (!id.endsWith(".wgsl") || id.startsWith("\0")) return null;
      let text: string;
      try {
        text = fs.readFileSync(id, "utf8");
      } catch {
        return null;
      }
      return { code: `export default ${JSON.stringify(text)};\n`, map: null };
    },
  };
}

export { kernelc };

/** Vite's error-overlay payload for a failed build: every diagnostic, and the first error's file, line and column. */
function overlayError(
  outcome: Outcome,
  root: string,
): { message: string; stack: string; plugin: string; id?: string; loc?: { file: string; line: number; column: number } } {
  const rows = JSON.parse(
    renderJson(
      outcome.diagnostics.filter((d) => d.severity === "error"),
      (f) => outcome.sources.get(f) ?? readOrUndefined(f),
    ),
  ) as { file: string | null; line: number | null; column: number | null }[];
  const first = rows.find((r) => r.file !== null);
  const file = first?.file ? path.resolve(root, first.file) : undefined;
  return {
    message: `kernelc: the kernel bundle does not build\n\n${outcome.text}`,
    stack: "",
    plugin: "kernelc",
    ...(file ? { id: file } : {}),
    ...(file && first?.line != null ? { loc: { file, line: first.line, column: first.column ?? 1 } } : {}),
  };
}

function readOrUndefined(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
