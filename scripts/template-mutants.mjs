#!/usr/bin/env node
// Template mutants: deliberate bugs in templates/ (a flipped comparison, an off-by-one loop bound,
// a changed scale, masking by multiplication, an unwritten result), applied one at a time to a
// copy of the repository, each followed by the GPU tests that should catch it on lavapipe. A
// mutant the tests let pass "survived": the tests cannot see that bug. docs/testing.md records
// the results.
//
//   node scripts/template-mutants.mjs                 every mutant
//   node scripts/template-mutants.mjs --list          the mutants, with whether each still applies
//   node scripts/template-mutants.mjs --only a,b      some of them
//   node scripts/template-mutants.mjs --json f.json   also write the results as JSON
//   node scripts/template-mutants.mjs --timeout 900   seconds per test run (default 1200)
//   node scripts/template-mutants.mjs --full          whole GPU test files, not the few cases each mutant names
//
// The copy is made in a temporary folder (tracked and untracked-but-not-ignored files; node_modules
// and .lavapipe linked; LAVAPIPE_DIR names another lavapipe folder), so the working tree is never
// touched. A run without a GPU is reported as an error, never as a kill. The tests run with CI=true, so a
// missing GPU fails them instead of skipping (a skipped test would let every mutant "survive"), and
// an unmutated baseline run must pass first. A mutant whose text no longer occurs exactly as
// expected in its template (templates change) is reported "stale", never run.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PAGED = "test/gpu/paged-attention.test.ts";
const SPARSE = "test/gpu/sparse-attention.test.ts";
// A few cases per file (vitest -t patterns), chosen to take the mutated path: the whole GPU files
// take tens of minutes on a shared lavapipe machine. --full runs the whole files instead.
const PAGED_SINGLE = "separate_derived: (G1 H64 bs16|G4 H64 bs16 hostile tables)$";
const PAGED_SPLIT = "separate_derived_splitk: (G1 H64 bs16|G4 H64 bs16 hostile tables)$";
// Blocks of 32 tokens: the key-per-lane design (mobile-1024-f16).
const PAGED_KPL = "mobile-1024-f16: separate_derived(_splitk)?: G8 H64 bs32 long scale 0.09$";
// The row design built for the adapter's subgroup width (8 on lavapipe) without its fallback: a
// split-K decode case (f16 native) and a single-pass case (f16 packed).
const ROW = "test/gpu/paged-attention-row.test.ts";
const ROW_FEW = "(desktop-32k: separate_derived_splitk|desktop-48k: packed_derived): ";
const ROW_SPLIT = "(desktop-32k: separate_derived_splitk|desktop-48k: packed_slot_splitk): ";
const SPARSE_FEW = "(single|splitk): (golden CSR, prompt, separate|decode S=3 at 61/125, G=1, H=128, sbs 64)$";

/**
 * The mutants: `file` under templates/, the exact text `find` (it must occur `count` times, default
 * 1; every occurrence is replaced), its replacement, the GPU test files that should kill it, and
 * the test-name pattern of the cases run (unless --full).
 */
const MUTANTS = [
  {
    id: "paged-mask-by-multiplication",
    kind: "masking by multiplication",
    file: "paged-attention-shared-rows.wgsl.jinja",
    find: "let v{{ k }}_{{ j }} = select(accum(0.0), accum(vn{{ k }}_{{ j }}), ok{{ k }});",
    replace: "let v{{ k }}_{{ j }} = accum(vn{{ k }}_{{ j }}) * f32(ok{{ k }});",
    tests: [PAGED],
    filter: PAGED_SINGLE,
  },
  {
    id: "paged-unwritten-split-stats",
    kind: "unwritten result",
    file: "paged-attention-shared-rows.wgsl.jinja",
    find: "partial_stats[slot] = vec2<f32>(select(NEG_BIG, m_head[g], l > 0.0), l);",
    replace: "_ = vec2<f32>(select(NEG_BIG, m_head[g], l > 0.0), l);",
    tests: [PAGED],
    filter: PAGED_SPLIT,
  },
  {
    id: "merge-skips-last-split",
    kind: "off-by-one loop bound",
    file: "lib/splitk-merge.wgsl.jinja",
    find: "for (var i = g; i < num_splits; i += GROUPS) {",
    count: 1,
    replace: "for (var i = g; i + GROUPS < num_splits; i += GROUPS) {",
    tests: [PAGED],
    filter: PAGED_SPLIT,
  },
  {
    id: "merge-drops-last-group",
    kind: "off-by-one loop bound",
    file: "lib/splitk-merge.wgsl.jinja",
    find: "for (var j = 1u; j < GROUPS; j++) {",
    count: 1,
    replace: "for (var j = 1u; j + 1u < GROUPS; j++) {",
    // The last of the merge's 8 groups holds splits 7, 15, …: the long case has 16 non-empty
    // splits, and its flat-softmax copy lets every split's partial weigh in.
    tests: [PAGED],
    filter: "separate_derived_splitk: G8 H64 bs32 long flat$",
  },
  {
    id: "sparse-causal-strict",
    kind: "comparison flip",
    file: "sparse-attention.wgsl.jinja",
    find: "key <= qa && key < params.maxCacheSeq",
    replace: "key < qa && key < params.maxCacheSeq",
    tests: [SPARSE],
    filter: SPARSE_FEW,
  },
  {
    id: "sparse-scale-0.8",
    kind: "scale change",
    file: "sparse-attention.wgsl.jinja",
    find: "q_sh[i] = v * scale;",
    replace: "q_sh[i] = v * scale * 0.8;",
    tests: [SPARSE],
    filter: SPARSE_FEW,
  },
  {
    id: "paged-output-guard-inclusive",
    kind: "comparison flip",
    file: "paged-attention-shared-rows.wgsl.jinja",
    find: "let inv = select(0.0, 1.0 / l, l > 0.0);",
    replace: "let inv = select(0.0, 1.0 / l, l >= 0.0);",
    tests: [PAGED],
    filter: PAGED_SINGLE,
  },
  {
    id: "kpl-mask-by-multiplication",
    kind: "masking by multiplication",
    file: "lib/paged-key-per-lane.wgsl.jinja",
    find: "return select(accum(0.0), accum(load_value_cache(select(0u, row, live) * ROW_ELEMS + c)), live);",
    replace: "return accum(load_value_cache(select(0u, row, live) * ROW_ELEMS + c)) * f32(live);",
    tests: [PAGED],
    filter: PAGED_KPL,
  },
  {
    id: "row-mask-by-multiplication",
    kind: "masking by multiplication",
    file: "paged-attention-row.wgsl.jinja",
    find: "let v{{ s }}{{ sfx(j) }} = select(vec4<f32>(0.0), vec4<f32>(vr{{ s }}{{ sfx(j) }}), ((valid >> {{ s }}u) & 1u) != 0u);",
    replace: "let v{{ s }}{{ sfx(j) }} = vec4<f32>(vr{{ s }}{{ sfx(j) }}) * f32(((valid >> {{ s }}u) & 1u) != 0u);",
    tests: [ROW],
    filter: ROW_FEW,
  },
  {
    id: "row-unwritten-split-stats",
    kind: "unwritten result",
    file: "paged-attention-row.wgsl.jinja",
    find: "partial_stats[slot] = vec2<f32>(select(NEG_BIG, m{{ g }}, l > 0.0), l);",
    replace: "_ = vec2<f32>(select(NEG_BIG, m{{ g }}, l > 0.0), l);",
    tests: [ROW],
    filter: ROW_SPLIT,
  },
  {
    id: "row-butterfly-sends-kept-half",
    kind: "butterfly index flip",
    file: "paged-attention-row.wgsl.jinja",
    find: "subgroupShuffleXor(select(v{{ k }}_{{ j + half }}, v{{ k }}_{{ j }}, hi{{ k }}), {{ 2 ** k }}u)",
    replace: "subgroupShuffleXor(select(v{{ k }}_{{ j }}, v{{ k }}_{{ j + half }}, hi{{ k }}), {{ 2 ** k }}u)",
    tests: [ROW],
    filter: ROW_FEW,
  },
  {
    id: "row-guard-always-fallback",
    kind: "comparison flip (the row path never runs)",
    file: "paged-attention-row.wgsl.jinja",
    find: "if (sg_size != {{ W }}u || sg_id != lane % {{ W }}u) {",
    replace: "if (sg_size == {{ W }}u || sg_id != lane % {{ W }}u) {",
    tests: [ROW],
    filter: ROW_FEW,
  },
];

function parseArgs(argv) {
  const opts = { only: undefined, list: false, json: undefined, timeout: 1200, full: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--list") opts.list = true;
    else if (a === "--only")
      opts.only = argv[++i]
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
    else if (a === "--json") opts.json = path.resolve(argv[++i]);
    else if (a === "--timeout") opts.timeout = Number(argv[++i]);
    else if (a === "--full") opts.full = true;
    else throw new Error(`unknown argument ${a} (see the comment at the top of scripts/template-mutants.mjs)`);
  }
  if (opts.only) {
    const unknown = opts.only.filter((id) => !MUTANTS.some((m) => m.id === id));
    if (unknown.length) throw new Error(`unknown mutant${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}; --list shows them`);
  }
  if (!Number.isFinite(opts.timeout) || opts.timeout <= 0) throw new Error("--timeout takes a positive number of seconds");
  return opts;
}

function occurrences(text, find) {
  let n = 0;
  for (let i = text.indexOf(find); i >= 0; i = text.indexOf(find, i + find.length)) n++;
  return n;
}

/** Whether the mutant still applies to `templatesDir`: its text occurs exactly `count` times. */
function applies(m, templatesDir) {
  const file = path.join(templatesDir, m.file);
  if (!fs.existsSync(file)) return `templates/${m.file} does not exist`;
  const n = occurrences(fs.readFileSync(file, "utf8"), m.find);
  const want = m.count ?? 1;
  return n === want ? undefined : `its text occurs ${n} time${n === 1 ? "" : "s"} in templates/${m.file}, expected ${want}`;
}

/** Copies the repository's files (tracked, and untracked but not ignored) to a temp folder. */
function copyRepo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-mutants-"));
  const ls = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (ls.status !== 0) throw new Error(`git ls-files failed: ${ls.stderr}`);
  for (const rel of ls.stdout.split("\0").filter(Boolean)) {
    if (rel === "node_modules" || rel === ".lavapipe") continue;
    const from = path.join(root, rel);
    if (!fs.existsSync(from)) continue; // deleted in the working tree
    const to = path.join(dir, rel);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.cpSync(from, to, { verbatimSymlinks: true });
  }
  // LAVAPIPE_DIR (as for scripts/setup-lavapipe.sh) names another lavapipe folder.
  const links = { node_modules: path.join(root, "node_modules"), ".lavapipe": process.env.LAVAPIPE_DIR || path.join(root, ".lavapipe") };
  for (const [link, from] of Object.entries(links)) fs.symlinkSync(fs.realpathSync(from), path.join(dir, link));
  return dir;
}

/** Runs the test files in the copy; returns "passed", "failed" or "timeout", with the seconds taken and the output's tail. */
function runTests(dir, tests, filter, timeoutS) {
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [path.join(dir, "node_modules/vitest/vitest.mjs"), "run", ...tests, ...(filter ? ["-t", filter] : [])],
    {
      cwd: dir,
      encoding: "utf8",
      timeout: timeoutS * 1000,
      maxBuffer: 256 << 20,
      env: {
        ...process.env,
        CI: "true",
        UPDATE_GOLDEN: "",
        VK_DRIVER_FILES: path.join(dir, ".lavapipe/lvp_icd.json"),
        XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR || "/tmp",
        NO_COLOR: "1",
        FORCE_COLOR: "0",
        KERNELC_TEST_TIMEOUT_MS: String(timeoutS * 1000),
      },
    },
  );
  const seconds = Math.round((Date.now() - started) / 1000);
  const output = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  const tail = output
    .split("\n")
    .filter((l) => /Test Files|Tests |FAIL|AssertionError|Error:/.test(l))
    .slice(0, 8)
    .join("\n");
  // No GPU (a missing or broken lavapipe) judges nothing: the run is an error, never a kill.
  if (/no WebGPU device for GPU tests|Tests +no tests/.test(output)) return { outcome: "error", seconds, tail };
  // A run or a test past the limit (a shader that never finishes) is a timeout, not a failed check.
  if ((r.error && r.error.code === "ETIMEDOUT") || /(Test|Hook) timed out in/.test(output)) return { outcome: "timeout", seconds, tail };
  return { outcome: r.status === 0 ? "passed" : "failed", seconds, tail };
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const chosen = MUTANTS.filter((m) => !opts.only || opts.only.includes(m.id));
  if (opts.list) {
    for (const m of chosen) {
      const stale = applies(m, path.join(root, "templates"));
      console.log(`${m.id.padEnd(32)} ${m.kind.padEnd(26)} ${m.file}${stale ? `  STALE: ${stale}` : ""}`);
    }
    return 0;
  }
  const dir = copyRepo();
  const templatesDir = path.join(dir, "templates");
  console.log(`copy of the repository: ${dir}`);
  const results = [];
  try {
    // The baseline: every distinct (files, cases) run of the chosen mutants, unmutated.
    const runsOf = (m) => ({ tests: m.tests, filter: opts.full ? undefined : m.filter });
    const baselines = [...new Map(chosen.map((m) => [JSON.stringify(runsOf(m)), runsOf(m)])).values()];
    for (const b of baselines) {
      console.log(`baseline (no mutant): ${b.tests.join(" ")}${b.filter ? ` -t "${b.filter}"` : ""}`);
      const base = runTests(dir, b.tests, b.filter, opts.timeout);
      console.log(`  ${base.outcome} in ${base.seconds}s`);
      if (base.outcome !== "passed") {
        console.error(`the unmutated tests do not pass; no mutant can be judged:\n${base.tail}`);
        return 2;
      }
      if (!/Tests +[1-9]\d* passed/.test(base.tail)) {
        console.error(`the baseline ran no test (a filter that matches nothing?):\n${base.tail}`);
        return 2;
      }
    }
    for (const m of chosen) {
      const stale = applies(m, templatesDir);
      if (stale) {
        console.log(`${m.id}: STALE (${stale})`);
        results.push({ id: m.id, kind: m.kind, file: m.file, status: "stale", reason: stale });
        continue;
      }
      const file = path.join(templatesDir, m.file);
      const original = fs.readFileSync(file, "utf8");
      fs.writeFileSync(file, original.split(m.find).join(m.replace));
      try {
        const run = runsOf(m);
        console.log(`${m.id} (${m.kind}, templates/${m.file}): ${run.tests.join(" ")}${run.filter ? ` -t "${run.filter}"` : ""}`);
        const r = runTests(dir, run.tests, run.filter, opts.timeout);
        const status =
          r.outcome === "passed" ? "survived" : r.outcome === "timeout" ? "killed (timeout)" : r.outcome === "error" ? "error" : "killed";
        console.log(
          `  ${status.toUpperCase()} in ${r.seconds}s${r.outcome === "failed" || r.outcome === "error" ? `\n${r.tail.replace(/^/gm, "    ")}` : ""}`,
        );
        results.push({ id: m.id, kind: m.kind, file: m.file, status, seconds: r.seconds, cases: run.filter ?? "all" });
      } finally {
        fs.writeFileSync(file, original);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const judged = results.filter((r) => r.status !== "stale" && r.status !== "error");
  const killed = judged.filter((r) => r.status.startsWith("killed")).length;
  console.log(
    `\n${killed}/${judged.length} mutants killed${judged.length < results.length ? `, ${results.length - judged.length} stale or not run (error)` : ""}`,
  );
  for (const r of results) console.log(`  ${r.status.padEnd(17)} ${r.id}`);
  if (opts.json) fs.writeFileSync(opts.json, JSON.stringify({ date: new Date().toISOString(), results }, null, 2) + "\n");
  if (judged.length < results.filter((r) => r.status !== "stale").length) return 2;
  return killed === judged.length ? 0 : 1;
}

try {
  process.exitCode = main();
} catch (err) {
  console.error(`template-mutants: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 2;
}
