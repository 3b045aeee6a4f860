#!/usr/bin/env node
// kernelc's compiler benchmarks (run `npm run bench`; needs `npm run compile` first):
//  1. lint of 200 copies of the seed spec in one process (specs per second), and lint of one
//     spec with 40,000 unknown top-level keys (every one a diagnostic: lint is linear in spec size);
//  2. cold build of all default profiles, and a no-op build (out/ already current);
//  3. plan cost per call: the generated dispatcher against the interpreter on the same calls
//     (bench/plan-time.mjs, run in a process of its own);
//  4. the authoring loop (lint with rendering, watch);
//  5. size: desktop-32k's dispatcher + runtime minified by esbuild (bench/size.mjs).
// Each figure is the median of repeats; ratios are taken within this one run. Prints a table.
// `--lint-only` runs only (1).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => pathToFileURL(path.join(root, "dist", p)).href;
const { lintPaths, makeCheckContext } = await import(dist("api/lint.js"));
const { compile } = await import(dist("api/compile.js"));
const { loadConfig } = await import(dist("plan/config.js"));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => Number(process.hrtime.bigint()) / 1e6;
/** CPU time of this process (user + system), in ms: steadier than wall time on a shared machine. */
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const machine = `${os.cpus()[0]?.model ?? "unknown CPU"} (${os.cpus().length} cores), Node ${process.version}, ${os.platform()} ${os.arch()}`;
const rows = [];

// 1. Lint throughput.
{
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-lint-"));
  const seed = fs.readFileSync(path.join(root, "specs/PagedAttention.json"), "utf8");
  for (let i = 0; i < 200; i++)
    fs.writeFileSync(
      path.join(dir, `s${String(i).padStart(3, "0")}.json`),
      seed.replace('"name": "PagedAttention"', `"name": "PagedAttention${i}"`),
    );
  const ctx = makeCheckContext(path.join(root, "templates"));
  const times = [];
  const cpus = [];
  for (let r = 0; r < 5; r++) {
    const t0 = now();
    const c0 = cpu();
    const res = lintPaths([dir], ctx);
    times.push(now() - t0);
    cpus.push(cpu() - c0);
    if (res.kernels.length !== 200) throw new Error(`expected 200 kernels, got ${res.kernels.length}`);
  }
  const ms = median(times);
  rows.push(["lint 200 seed specs", `${ms.toFixed(0)} ms`, `${((200 / ms) * 1000).toFixed(0)} specs/s; CPU ${median(cpus).toFixed(0)} ms`]);
}

// 1b. Lint of a spec with 40,000 unknown keys, diagnostics rendered as text (code frames included).
{
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-lint-keys-"));
  const spec = JSON.parse(fs.readFileSync(path.join(root, "specs/PagedAttention.json"), "utf8"));
  for (let i = 0; i < 40000; i++) spec[`unknownKey${i}`] = i;
  fs.writeFileSync(path.join(dir, "Keys.json"), JSON.stringify(spec));
  const { renderText } = await import(dist("core/render-diagnostics.js"));
  const ctx = makeCheckContext(path.join(root, "templates"));
  const times = [];
  const cpus = [];
  for (let r = 0; r < 3; r++) {
    const t0 = now();
    const c0 = cpu();
    const res = lintPaths([dir], ctx);
    renderText(res.diagnostics, (f) => res.sources.get(f));
    times.push(now() - t0);
    cpus.push(cpu() - c0);
    if (res.diagnostics.length < 40000) throw new Error(`expected 40000 diagnostics, got ${res.diagnostics.length}`);
  }
  const ms = median(times);
  rows.push([
    "lint 1 spec with 40,000 unknown keys (text output)",
    `${ms.toFixed(0)} ms`,
    `${((40000 / ms) * 1000).toFixed(0)} diagnostics/s; CPU ${median(cpus).toFixed(0)} ms`,
  ]);
}

// 2. Cold and no-op build of the default profiles.
if (!process.argv.includes("--lint-only")) {
  const loaded = loadConfig(root);
  const cold = [];
  let files;
  for (let r = 0; r < 3; r++) {
    const t0 = now();
    const res = await compile(loaded);
    files = res.files;
    cold.push(now() - t0);
  }
  // The no-op build runs on a copy of the project: kernelc only writes an out/ inside its project.
  const project = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-out-"));
  for (const f of ["specs", "templates", "kernelc.config.json"]) fs.cpSync(path.join(root, f), path.join(project, f), { recursive: true });
  const { main } = await import(dist("cli/main.js"));
  const io = { stdout: () => {}, stderr: () => {}, cwd: project, isTTY: false, env: {} };
  if ((await main(["build"], io)) !== 0) throw new Error("build of the project copy failed");
  const noop = [];
  for (let r = 0; r < 3; r++) {
    const t0 = now();
    const code = await main(["build"], io);
    noop.push(now() - t0);
    if (code !== 0) throw new Error("no-op build failed");
  }
  const shaders = [...files.keys()].filter((f) => f.startsWith("shaders/")).length;
  rows.push([`cold build, ${loaded.profiles.length} profiles, ${shaders} shaders`, `${median(cold).toFixed(0)} ms`, ""]);
  rows.push([
    "no-op build (out/ current, nothing written)",
    `${median(noop).toFixed(0)} ms`,
    `${(median(cold) / median(noop)).toFixed(2)}x faster than cold`,
  ]);

  // 3. Plan cost: generated dispatcher vs interpreter, same calls, measured by bench/plan-time.mjs in a
  // process of its own: the heap this process has grown by the lint and build runs above (hundreds of
  // MB) makes every young-generation collection of a plan loop dearer, which no application that
  // only plans calls pays (in this process the figure was about 10% higher).
  const planRun = spawnSync(process.execPath, [path.join(root, "bench/plan-time.mjs")], { encoding: "utf8" });
  if (planRun.status !== 0) throw new Error(`bench/plan-time.mjs failed:\n${planRun.stderr}`);
  const figure = (label) => {
    const m = new RegExp(`^${label}\\s+([0-9.]+) µs`, "m").exec(planRun.stdout);
    if (!m) throw new Error(`bench/plan-time.mjs printed no "${label}":\n${planRun.stdout}`);
    return Number(m[1]);
  };
  const gen = figure("plan, generated dispatcher \\(per call\\)");
  const interp = figure("plan, interpreter \\(per call\\)");
  rows.push(["plan, generated dispatcher (per call)", `${gen.toFixed(3)} µs`, "bench/plan-time.mjs, a process of its own"]);
  rows.push(["plan, interpreter (per call)", `${interp.toFixed(1)} µs`, `dispatcher ${(interp / gen).toFixed(0)}x faster`]);
}

// 4. Authoring loop: lint with rendering and Tint (bench/lint-render.js), watch rebuilds (bench/watch.js).
{
  const { lintRenderRows } = await import("./lint-render.js");
  const { watchRows } = await import("./watch.js");
  rows.push(...(await lintRenderRows()), ...(await watchRows()));
}

// 5. Size: desktop-32k's dispatcher + the runtime, minified by esbuild (bench/size.mjs).
{
  const { sizeRows } = await import("./size.mjs");
  rows.push(...(await sizeRows()));
}

console.log(`machine: ${machine}`);
const w = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c].length)));
for (const r of rows)
  console.log(
    r
      .map((x, i) => x.padEnd(w[i]))
      .join("  ")
      .trimEnd(),
  );
