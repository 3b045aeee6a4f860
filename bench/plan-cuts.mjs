#!/usr/bin/env node
// Where the plan step's time goes, by cuts (docs/performance.md, "Where the plan step's time goes"):
// the generated desktop-64k dispatcher, compiled in memory as bench/plan-time.mjs does, against copies
// of its JavaScript edited so that one part of the plan step is skipped or replaced by a constant.
// The edited copies do not make valid plans: they are measurements only. Each copy and the dispatcher
// plan the same 64 PagedAttention calls in turn in a process of their own (one per cut, so that no
// other copy's code shares it; the order alternating), CPU time (user + system) per call; printed
// per cut: the median over the rounds of its time / the dispatcher's, with the range. Run `npm run
// compile` first. `node bench/plan-cuts.mjs [rounds]` (default 12; a cut whose pattern is not found
// in the generated code is reported, not timed).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { pagedPlanCalls } from "./plan-calls.mjs";

/** Replaces every match of `re` in the dispatcher's JavaScript (by `by`), or null when nothing matches. */
const edit =
  (re, by, extra = "") =>
  (src) =>
    src.search(re) >= 0 ? src.replace(re, by) + extra : null;
// PagedAttention is the module's first kernel (K0); its split-K variants plan three passes.
const cuts = [
  ["the same dispatcher (the noise)", (src) => src],
  ["validation only (stops before the context object)", edit(/return K0A0_plan\(\{/, "return null; ({")],
  ["no plan built (conditions and variant selection done)", edit(/return K0A0_p(\d)\(o, shapes\)/g, "return shapes")],
  [
    "no conditions (variant chosen by the tensors given; plan built)",
    (src) => {
      const i = src.indexOf("function K0A0_plan(o) {");
      const j = i < 0 ? -1 : src.indexOf("    if (!K0A0_c0(o))", i);
      const k = j < 0 ? -1 : src.indexOf("\n}\n", j);
      if (k < 0) return null;
      const pick =
        "    const sep = o.t1 !== null, slot = o.t8 !== null;\n" +
        "    if (sep) return slot ? K0A0_p1(o, shapes) : K0A0_p0(o, shapes);\n" +
        "    return slot ? K0A0_p3(o, shapes) : K0A0_p2(o, shapes);";
      return src.slice(0, j) + pick + src.slice(k);
    },
  ],
  [
    "split-K plans: shaders and scratch sizes, no pass",
    edit(/return \$plan\([^,]+, "[a-z_]+", \[K0A0_y\d\([^)]*\), K0A0_y\d\([^)]*\), K0A0_y\d\([^)]*\)\], [^;]*;/g, "return shapes;"),
  ],
  [
    "split-K plans: the first pass only",
    edit(/return \$plan\([^,]+, "[a-z_]+", \[(K0A0_y\d\([^)]*\)), K0A0_y\d\([^)]*\), K0A0_y\d\([^)]*\)\], [^;]*;/g, "return $1;"),
  ],
  [
    "uniforms: one shared array of words, no field checks",
    edit(/= \[\$(?:u32|i32|f32)\([^;]*\];/g, "= $U32X;", "\nconst $U32X = [0, 0, 0, 0];\n"),
  ],
  ["tensor resources (byte sizes): one constant", edit(/function \$buf\(t, id, bytes, lim\) \{/, "$& return 4;")],
  [
    "own elements by `in` where the prototype is Array.prototype (not exact for a Proxy)",
    edit(
      /    for \(let i = 0; i < n; i\+\+\) \{\n        const d = \$hasOwn\.call\(s, i\) \? s\[i\] : undefined;/,
      "    const fast = Object.getPrototypeOf(s) === Array.prototype;\n" +
        "    for (let i = 0; i < n; i++) {\n" +
        "        const d = (fast ? i in s && (!(i in Array.prototype) || $hasOwn.call(s, i)) : $hasOwn.call(s, i)) ? s[i] : undefined;",
    ),
  ],
  ["1 KB more garbage per call (new Array(124))", edit(/return K0A0_plan\(\{/, "$GARB = new Array(124); $&", "\nlet $GARB;\n")],
];

const calls = pagedPlanCalls();
const cpuTime = (f, reps) => {
  const t0 = process.cpuUsage();
  for (let k = 0; k < reps; k++) for (const c of calls) f(c);
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / (reps * calls.length);
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Times the dispatchers in files a and b in turn, rounds times; prints the median of b's time / a's, with the range. */
async function pair(a, b, rounds) {
  const load = async (file) => (await import(pathToFileURL(file).href)).planners.PagedAttention;
  const base = await load(a);
  const f = await load(b);
  cpuTime(base, 300);
  cpuTime(f, 300);
  const r = [];
  for (let round = 0; round < rounds; round++) {
    let x, y;
    if (round % 2) {
      y = cpuTime(f, 300);
      x = cpuTime(base, 300);
    } else {
      x = cpuTime(base, 300);
      y = cpuTime(f, 300);
    }
    r.push(y / x);
  }
  console.log(`${median(r).toFixed(2)} (${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)})`);
}

if (process.argv[2] === "--pair") {
  await pair(process.argv[3], process.argv[4], Number(process.argv[5]));
} else {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const dist = (p) => pathToFileURL(path.join(root, "dist", p)).href;
  const { compile } = await import(dist("api/compile.js"));
  const { loadConfig } = await import(dist("plan/config.js"));
  const rounds = Number(process.argv[2] ?? 12);
  const loadBefore = os.loadavg()[0];
  const res = await compile(loadConfig(root), { profiles: ["desktop-64k"] });
  const js = ts.transpileModule(res.files.get("desktop-64k/dispatcher.ts"), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-bench-cuts-"));
  const baseFile = path.join(dir, "dispatcher.mjs");
  fs.writeFileSync(baseFile, js);
  console.log(`cut: this copy's CPU time / the dispatcher's, in turn, ${rounds} rounds of 300 × 64 calls: median (range)`);
  cuts.forEach(([name, cut], i) => {
    const text = cut(js);
    if (text === null) return console.log(`${name}: pattern not found in the generated code`);
    const file = path.join(dir, `cut${i}.mjs`);
    fs.writeFileSync(file, text);
    const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--pair", baseFile, file, String(rounds)], {
      encoding: "utf8",
    });
    if (out.status !== 0) throw new Error(`${name}: ${out.stderr}`);
    console.log(`${name}: ${out.stdout.trim()}`);
  });
  const machine = `${os.cpus()[0]?.model ?? "unknown CPU"} (${os.cpus().length} cores), Node ${process.version}`;
  console.log(`machine: ${machine}; load average ${loadBefore.toFixed(2)} before, ${os.loadavg()[0].toFixed(2)} after`);
}
