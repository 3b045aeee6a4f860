/** Small temporary projects (the axpby fixture) and ways to run kernelc on them, for the out/ safety tests. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { main } from "../../src/cli/main.js";

/** The repository root. */
export const repoRoot = path.resolve(__dirname, "../..");
const FIXTURE = path.join(repoRoot, "test/fixtures/axpby");

/** The kernelc command as installed (runs dist/). */
export const BIN = path.join(repoRoot, "bin/kernelc.js");

/** What a run of kernelc printed and returned. */
export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `kernelc argv` in-process in `cwd`. */
export async function kernelc(argv: string[], cwd: string, env: Record<string, string | undefined> = {}): Promise<RunResult> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), cwd, isTTY: false, env });
  return { code, stdout, stderr };
}

const created: string[] = [];

/** Removes the projects this test file made (call it in afterAll). */
export function removeProjects(): void {
  for (const base of created.splice(0)) fs.rmSync(base, { recursive: true, force: true });
}

/**
 * A fresh project `<tmp>/<name>` with the axpby spec and template, a sentinel file in its root and
 * one beside it (`<tmp>/sentinel`), and a config when given. Returns the project root.
 */
export function makeProject(config?: Record<string, unknown>, name = "proj"): string {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-out-"));
  created.push(base);
  const root = path.join(base, name);
  fs.mkdirSync(root);
  fs.cpSync(path.join(FIXTURE, "specs"), path.join(root, "specs"), { recursive: true });
  fs.cpSync(path.join(FIXTURE, "templates"), path.join(root, "templates"), { recursive: true });
  fs.writeFileSync(path.join(root, "sentinel.txt"), "project sentinel\n");
  fs.writeFileSync(path.join(base, "sentinel.txt"), "parent sentinel\n");
  if (config) fs.writeFileSync(path.join(root, "kernelc.config.json"), JSON.stringify(config, null, 2) + "\n");
  return root;
}

/** Every file and folder under `dir` with its content (files) or "dir"/"link -> target", for before/after comparisons. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const visit = (abs: string, rel: string): void => {
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const p = path.join(abs, e.name);
      if (e.isSymbolicLink()) out[r] = `link -> ${fs.readlinkSync(p)}`;
      else if (e.isDirectory()) {
        out[r] = "dir";
        visit(p, r);
      } else out[r] = fs.readFileSync(p, "utf8");
    }
  };
  visit(dir, "");
  return out;
}

/** Changes the template so that the next build differs from the last one (a new comment line in every shader). */
export function touchTemplate(root: string, tag: string): void {
  fs.appendFileSync(path.join(root, "templates/axpby.wgsl.jinja"), `// ${tag}\n`);
}

/** Entries beside out/ that an interrupted build leaves (`.out.tmp-*`, `.out.old-*`, the lock). */
export function leftovers(root: string): string[] {
  return fs.readdirSync(root).filter((n) => /^\.out\.(tmp|old|lock)/.test(n));
}

/** Fails with a clear message when dist/ (what bin/kernelc.js runs) is missing or older than src/. */
export function requireDist(): void {
  if (!fs.existsSync(path.join(repoRoot, "dist/cli/main.js")))
    throw new Error("dist/ is missing: run `npx tsc -p tsconfig.json` before these tests");
}

/** Starts `node bin/kernelc.js argv` in `cwd`. */
export function spawnKernelc(
  argv: string[],
  cwd: string,
  env: Record<string, string> = {},
): ChildProcess & { result: Promise<RunResult & { signal: NodeJS.Signals | null }> } {
  const child = spawn(process.execPath, [BIN, ...argv], {
    cwd,
    env: { ...process.env, CI: "true", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const result = new Promise<RunResult & { signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code: code ?? -1, signal, stdout, stderr })),
  );
  return Object.assign(child, { result });
}

/** Runs `node bin/kernelc.js argv` in `cwd` to completion. */
export function runKernelc(argv: string[], cwd: string, env: Record<string, string> = {}): RunResult {
  const r = spawnSync(process.execPath, [BIN, ...argv], { cwd, env: { ...process.env, CI: "true", ...env }, encoding: "utf8" });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Waits until `file` exists (the test hook's "reached" signal), failing after `ms`. */
export async function waitForFile(file: string, ms = 60_000): Promise<void> {
  const start = Date.now();
  while (!fs.existsSync(file)) {
    if (Date.now() - start > ms) throw new Error(`${file} did not appear within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
