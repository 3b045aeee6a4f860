#!/usr/bin/env node
// `kernelc lint` of the seed specs with rendering and Tint validation (the default), for the
// config's profiles. Figures, medians of repeats: the command as a user runs it (a fresh
// `node bin/kernelc.js lint` process: startup, module loading and Dawn included), cold (`--no-cache`:
// every shader is rendered and goes through Tint, as with an empty .kernelc-cache/) and warm (the
// verdicts, renders and template reads of an earlier run kept in .kernelc-cache/, as a user re-running
// lint), the two runs interleaved; and the lint's compile() alone in a warm process (no caches).
// On Linux also the CPU time of the command's main thread and of its other threads (the validation
// worker, V8's compiler and GC threads), from bench/thread-cpu.cjs. Target: at most 1.5 s for the
// command.
// Run alone with `node bench/lint-render.js` (after `npm run compile`), or as part of bench/run.js.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Rows [what, time, figure] for the lint-with-rendering case. */
export async function lintRenderRows({ repeats = 7 } = {}) {
  // The command's CPU time (user + system, all its threads: the validation workers included) comes
  // from GNU time where there is one (Linux); Node cannot read a child's resource usage.
  const timer = fs.existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
  const runs = { cold: { wall: [], cpu: [], main: [], other: [] }, warm: { wall: [], cpu: [], main: [], other: [] } };
  const lint = (extra) => {
    const argv = [process.execPath, "-r", path.join(root, "bench/thread-cpu.cjs"), path.join(root, "bin/kernelc.js"), "lint", ...extra];
    const t0 = performance.now();
    const p = timer
      ? spawnSync(timer, ["-f", "kernelc-cpu %U %S", ...argv], { cwd: root, encoding: "utf8" })
      : spawnSync(argv[0], argv.slice(1), { cwd: root, encoding: "utf8" });
    const wall = performance.now() - t0;
    if (p.status !== 0) throw new Error(`kernelc lint failed:\n${p.stderr}`);
    const m = /kernelc-cpu ([\d.]+) ([\d.]+)/.exec(p.stderr);
    const t = /kernelc-threads (\d+) (\d+)/.exec(p.stderr);
    return {
      wall,
      cpu: m ? (Number(m[1]) + Number(m[2])) * 1000 : undefined,
      threads: t ? { main: Number(t[1]), other: Number(t[2]) } : undefined,
    };
  };
  lint([]); // fills the verdict cache for the warm runs
  for (let r = 0; r < repeats; r++) {
    for (const [kind, extra] of [
      ["cold", ["--no-cache"]],
      ["warm", []],
    ]) {
      const { wall, cpu, threads } = lint(extra);
      runs[kind].wall.push(wall);
      if (cpu !== undefined) runs[kind].cpu.push(cpu);
      if (threads) runs[kind].main.push(threads.main);
      if (threads) runs[kind].other.push(threads.other);
    }
  }
  const figure = (kind) =>
    `${(median(runs[kind].wall) / 1500).toFixed(2)} of the 1.5 s target${runs[kind].cpu.length ? `; CPU ${median(runs[kind].cpu).toFixed(0)} ms (median)` : ""}${
      runs[kind].main.length
        ? `, main thread ${median(runs[kind].main).toFixed(0)} ms, other threads ${median(runs[kind].other).toFixed(0)} ms`
        : ""
    }`;
  const { compile } = await import(pathToFileURL(path.join(root, "dist/api/compile.js")).href);
  const { loadConfig } = await import(pathToFileURL(path.join(root, "dist/plan/config.js")).href);
  const loaded = loadConfig(root);
  const inProcess = [];
  const cpu = [];
  let shaders = 0;
  for (let r = 0; r < repeats + 1; r++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const res = await compile(loaded, { generate: false });
    const c = process.cpuUsage(c0);
    if (r > 0) inProcess.push(performance.now() - t0);
    if (r > 0) cpu.push((c.user + c.system) / 1000);
    shaders = res.shaderCount;
  }
  return [
    [
      `kernelc lint, 2 seed specs, ${loaded.profiles.length} profiles, ${shaders} shaders rendered + Tint, cold (--no-cache)`,
      `${median(runs.cold.wall).toFixed(0)} ms`,
      figure("cold"),
    ],
    [
      `  the same, warm (verdicts, renders and template reads kept in .kernelc-cache/)`,
      `${median(runs.warm.wall).toFixed(0)} ms`,
      figure("warm"),
    ],
    ["  the same lint's compile() in a warm process", `${median(inProcess).toFixed(0)} ms`, `CPU ${median(cpu).toFixed(0)} ms (median)`],
  ];
}

/** The machine and its load (the 1-minute load average), for the record of a run. */
const machineLine = () =>
  `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, Node ${process.version}, ${os.platform()} ${os.arch()}; load average ${os.loadavg()[0].toFixed(2)}`;

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`before: ${machineLine()}`);
  for (const r of await lintRenderRows()) console.log(r.join("  ").trimEnd());
  console.log(`after: ${machineLine()}`);
}
