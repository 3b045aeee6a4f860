#!/usr/bin/env node
// Plan cost per call (section 3 of bench/run.js, on its own): the generated dispatcher of
// desktop-64k against the interpreter on the same 64 mixed PagedAttention calls; medians of 9
// repeats. Run `npm run compile` first. Prints the machine and the figures. With a dispatcher file
// as argument (`node bench/plan-time.mjs old/dispatcher.ts`), also times the two in turn. Also prints
// the dispatcher's CPU time per call (user + system of the process, the steadier figure on a shared
// host) and the load average before and after.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { pagedPlanCalls } from "./plan-calls.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => pathToFileURL(path.join(root, "dist", p)).href;
const { compile } = await import(dist("api/compile.js"));
const { loadConfig } = await import(dist("plan/config.js"));
const { interpretPlan } = await import(dist("plan/interpret.js"));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => Number(process.hrtime.bigint()) / 1e6;
const machine = `${os.cpus()[0]?.model ?? "unknown CPU"} (${os.cpus().length} cores), Node ${process.version}, ${os.platform()} ${os.arch()}`;
const loadBefore = os.loadavg()[0];

const res = await compile(loadConfig(root), { profiles: ["desktop-64k"] });
const src = res.files.get("desktop-64k/dispatcher.ts");
const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
const modFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-disp-")), "dispatcher.mjs");
fs.writeFileSync(modFile, js);
const mod = await import(pathToFileURL(modFile).href);
const model = res.profiles[0].kernels.find((k) => k.model.kernel.spec.name === "PagedAttention").model;
const calls = pagedPlanCalls();
for (const c of calls)
  if (JSON.stringify(mod.planners.PagedAttention(c).variant) !== JSON.stringify(interpretPlan(model, c).variant))
    throw new Error("dispatcher and interpreter disagree");
const load = async (text) => {
  const out = ts.transpileModule(text, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-disp-")), "dispatcher.mjs");
  fs.writeFileSync(file, out);
  return import(pathToFileURL(file).href);
};
const other = process.argv[2] ? await load(fs.readFileSync(process.argv[2], "utf8")) : undefined;
const time = (f, reps) => {
  const samples = [];
  for (let r = 0; r < 9; r++) {
    const t0 = now();
    for (let k = 0; k < reps; k++) for (const c of calls) f(c);
    samples.push(((now() - t0) * 1000) / (reps * calls.length));
  }
  return median(samples);
};
time((c) => mod.planners.PagedAttention(c), 200);
const gen = time((c) => mod.planners.PagedAttention(c), 400);
const interp = time((c) => interpretPlan(model, c), 10);
/** The median over 9 repeats of the process's CPU time (user + system) per call, in µs. */
const cpu = (f, reps) => {
  const samples = [];
  for (let r = 0; r < 9; r++) {
    const t0 = process.cpuUsage();
    for (let k = 0; k < reps; k++) for (const c of calls) f(c);
    const t = process.cpuUsage(t0);
    samples.push((t.user + t.system) / (reps * calls.length));
  }
  return median(samples);
};
const genCpu = cpu((c) => mod.planners.PagedAttention(c), 400);
if (other) {
  // This dispatcher and the other one in turn (the order alternating), 16 rounds each: medians of the
  // rounds and of their ratios, in wall time and in the process's CPU time (the steadier figure on a
  // shared host).
  const cpuTime = (f, reps) => {
    const t0 = process.cpuUsage();
    for (let k = 0; k < reps; k++) for (const c of calls) f(c);
    const t = process.cpuUsage(t0);
    return (t.user + t.system) / (reps * calls.length);
  };
  const mine = (c) => mod.planners.PagedAttention(c);
  const theirs = (c) => other.planners.PagedAttention(c);
  const a = [];
  const b = [];
  const ca = [];
  const cb = [];
  for (let round = 0; round < 16; round++) {
    const pair = round % 2 ? [theirs, mine] : [mine, theirs];
    const w = pair.map((f) => time(f, 100));
    const u = pair.map((f) => cpuTime(f, 300));
    if (round % 2) (w.reverse(), u.reverse());
    a.push(w[0]);
    b.push(w[1]);
    ca.push(u[0]);
    cb.push(u[1]);
  }
  const ratio = (x, y) => {
    const r = x.map((v, i) => v / y[i]);
    return `${median(r).toFixed(2)} (${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)})`;
  };
  console.log(`in turn, wall: this ${median(a).toFixed(3)} µs, ${process.argv[2]} ${median(b).toFixed(3)} µs, ratio ${ratio(a, b)}`);
  console.log(
    `in turn, CPU time: this ${median(ca).toFixed(3)} µs, ${process.argv[2]} ${median(cb).toFixed(3)} µs, ratio ${ratio(ca, cb)}`,
  );
}
console.log(`machine: ${machine}; load average ${loadBefore.toFixed(2)} before, ${os.loadavg()[0].toFixed(2)} after`);
console.log(`plan, generated dispatcher (per call)  ${gen.toFixed(3)} µs (CPU time ${genCpu.toFixed(3)} µs)`);
console.log(`plan, interpreter (per call)           ${interp.toFixed(1)} µs  dispatcher ${(interp / gen).toFixed(0)}x faster`);
