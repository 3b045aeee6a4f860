#!/usr/bin/env node
// `kernelc watch` on a copy of the project: the time from saving a template to an updated out/
// (fs.watch latency, the rebuild, and writing out/ included), for edits of three templates in
// turn. Each edit appends a comment line, so the shaders of every pass whose template includes
// the file change and are rendered and validated again. Target: at most 300 ms.
// Run alone with `node bench/watch.js` (after `npm run compile`), or as part of bench/run.js.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const TEMPLATES = ["paged-attention.wgsl.jinja", "sparse-splitk-merge.wgsl.jinja", "paged-scatter-kv.wgsl.jinja"];

/** Rows [what, time, figure] for the watch case. */
export async function watchRows({ edits = 12 } = {}) {
  const { startWatch } = await import(pathToFileURL(path.join(root, "dist/cli/watch-command.js")).href);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-watch-"));
  for (const p of ["specs", "templates", "kernelc.config.json"]) fs.cpSync(path.join(root, p), path.join(dir, p), { recursive: true });
  let resolveNext;
  const session = startWatch(
    { stdout: () => {}, stderr: () => {}, cwd: dir, isTTY: false, env: {} },
    { format: "json", onRebuild: (r) => resolveNext?.(r) },
  );
  await session.ready;
  const times = [];
  const cpu = [];
  const rerendered = [];
  try {
    for (let i = 0; i < edits; i++) {
      const file = path.join(dir, "templates", TEMPLATES[i % TEMPLATES.length]);
      const done = new Promise((resolve) => (resolveNext = resolve));
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      fs.appendFileSync(file, `// bench edit ${i}\n`);
      const r = await done;
      times.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
      if (!r.wrote || r.errors) throw new Error(`rebuild after edit ${i} did not write out/`);
      rerendered.push(r.stats.rendered);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await session.close();
  }
  return [
    [
      `watch: template save → out/ updated (${edits} edits of ${TEMPLATES.length} templates)`,
      `${median(times).toFixed(0)} ms`,
      `max ${Math.max(...times).toFixed(0)} ms; CPU ${median(cpu).toFixed(0)} ms (median); ${Math.min(...rerendered)}–${Math.max(...rerendered)} renders redone per edit`,
    ],
  ];
}

/** The machine and its load (the 1-minute load average), for the record of a run. */
const machineLine = () =>
  `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, Node ${process.version}, ${os.platform()} ${os.arch()}; load average ${os.loadavg()[0].toFixed(2)}`;

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`before: ${machineLine()}`);
  for (const r of await watchRows()) console.log(r.join("  ").trimEnd());
  console.log(`after: ${machineLine()}`);
}
