#!/usr/bin/env node
// Makes template folders for the row design's device experiments (bench-only, never shipped):
// copies of templates/ with one edit each, for BENCH_TEMPLATES.
// - pad2k, pad8k, pad16k, pad24k (the occupancy probe): the PagedAttention row shader declares extra
//   workgroup memory (touched only when params.scale is -12345, which no bench call passes, so the
//   results are unchanged), which caps the workgroups an SM can hold: with 228 KB of shared memory
//   per SM, about 19 (+8 KB), 11 (+16 KB) or 8 (+24 KB) of these 32-invocation workgroups. If a cap
//   leaves a shape's time unchanged, fewer workgroups than that were resident already (registers
//   are the other limit, which Dawn does not report).
// - nobfly: session 9's diagnostic (wrong results, the same memory traffic): the butterfly's
//   shuffles removed.
// - noloop: see below.
// - vsplit, vat1 (where a tile's V loads are issued; same results, same traffic): the shipped
//   template issues all 32 V rows at chunk V_AT = GP - AHEAD (chunk 2 of 4 with 4 heads per KV head
//   and two chunks ahead); vsplit has each chunk c issue the V rows of its own keys (c*KC .. c*KC +
//   KC - 1), vat1 all V rows at chunk 1.
// - ahead3: three chunks ahead (see below).
// - nok, nov, nokv: K / V / both rows read from cache row 0 (see below).
// - loadsfirst: each chunk's loads issued before its own K rows are converted (see below).
// - l2pfk, l2pfv, l2pfkv, l2pf2k, l2pf2kv: sector prefetch into L2 (see below).
// Usage: node bench/experiments/template-variants.mjs <name>...; writes .exp-<name>/ and prints the
// folder list for BENCH_TEMPLATES.
import * as fs from "node:fs";

const vAnchor = `{% elif c == V_AT %}
{% for s in range(W) %}
{% for j in range(V4) %}
    let vr{{ s }}{{ sfx(j, W) }} = load_value_cache(({{ rowOf(s) }}) * 32u + {{ col(j, W) }});
{% endfor %}
{% endfor %}
{% endif %}
`;
const vLoad = vAnchor.slice(vAnchor.indexOf("{% for j"));
/** Replaces the row template's V-load block by `rows`: Jinja that opens a condition and a loop over s. */
function vSchedule(f, rows) {
  const p = `${f}/paged-attention-row.wgsl.jinja`;
  const text = fs.readFileSync(p, "utf8");
  if (!text.includes(vAnchor)) throw new Error("the V-load block was not found");
  fs.writeFileSync(p, text.replace(vAnchor, `{% endif %}\n${rows}\n${vLoad}`));
}

const edits = {
  vsplit: (f) => vSchedule(f, "{% if true %}\n{% for s in range(c * KC, c * KC + KC) %}"),
  vat1: (f) => vSchedule(f, "{% if c == (1 if GP > 1 else 0) %}\n{% for s in range(W) %}"),
  // Diagnostic (wrong results): the tile loop is compiled but never runs (its bound is false unless
  // params.scale is -12345), so a pass of this build costs the launch, the prologue (the first
  // tile's block entry, K loads, queries) and the epilogue (the partial writes) alone.
  noloop: (f) => {
    const p = `${f}/paged-attention-row.wgsl.jinja`;
    const text = fs.readFileSync(p, "utf8");
    const loop = "for (var tile_start = key_begin; tile_start < key_end;";
    if (!text.includes(loop)) throw new Error("noloop: the tile loop was not found");
    fs.writeFileSync(
      p,
      text.replace(loop, "for (var tile_start = key_begin; tile_start < select(key_begin, key_end, params.scale == -12345.0);"),
    );
  },
  // ahead3 (same results, same traffic): loads three chunks ahead instead of two, so with four
  // chunks a tile (4 query heads per KV head) all of a tile's K rows are in flight when it starts and
  // its V rows are issued at chunk 1; 16 more registers a lane for the fourth K buffer.
  ahead3: (f) => aheadN(f, 3),
  // ahead4 (same results, same traffic): with four chunks a tile, every K row of the next tile is
  // issued right after this tile's softmax (before its V fold), and a tile's V rows at its chunk 0
  // (ahead4) or its last chunk (ahead4late): a whole tile of K in flight per workgroup while it folds.
  ahead4: (f) => aheadN(f, 4),
  ahead4late: (f) => aheadN(f, 4, "GP - 1"),
  // loadsfirst (same results, same traffic): each chunk issues its loads (chunk c + AHEAD's K rows, or
  // at V_AT the tile's V rows) before it converts its own K rows, in case the compiler keeps the source
  // order and those loads otherwise wait for chunk c's rows to arrive.
  loadsfirst: (f) => {
    const p = `${f}/paged-attention-row.wgsl.jinja`;
    const text = fs.readFileSync(p, "utf8");
    const convert = `{% for k in range(KC) %}
{% for j in range(V4) %}
    let k{{ c }}_{{ k }}{{ sfx(j, W) }} = vec4<f32>(kr{{ c % (AHEAD + 1) }}_{{ k }}{{ sfx(j, W) }});
{% endfor %}
{% endfor %}
`;
    const start = text.indexOf(convert);
    const loadsEnd = text.indexOf("    var part{{ c }}: array<f32, {{ W }}>;", start);
    if (start < 0 || loadsEnd < 0) throw new Error("loadsfirst: anchors not found");
    const loads = text.slice(start + convert.length, loadsEnd);
    if (!loads.startsWith("{% if c + AHEAD < GP %}")) throw new Error("loadsfirst: the load block was not found");
    fs.writeFileSync(p, text.slice(0, start) + loads + convert + text.slice(loadsEnd));
  },
  // l2pfk, l2pfv, l2pfkv (same results, same traffic): with the next tile's first K rows, each lane
  // also reads one word of each 32-byte sector of the next tile's later K rows (chunks from AHEAD on;
  // l2pfk), of its V rows (l2pfv) or both (l2pfkv), and folds the words into a sink one tile later:
  // the sectors come into L2 a tile before the real loads ask for them, for one register a word
  // instead of a row's worth. The sink reaches the result only for an impossible params.scale.
  l2pfk: (f) => l2Prefetch(f, ["key"]),
  l2pfv: (f) => l2Prefetch(f, ["value"]),
  l2pfkv: (f) => l2Prefetch(f, ["key", "value"]),
  // l2pf2k, l2pf2kv: the same two tiles ahead (all of that tile's K rows; and its V rows), the block
  // entries of the tile after next loaded at each tile's start.
  l2pf2k: (f) => l2Prefetch(f, ["key"], 2),
  l2pf2kv: (f) => l2Prefetch(f, ["key", "value"], 2),
  pad2k: (f) => pad(f, 128),
  pad8k: (f) => pad(f, 512),
  pad16k: (f) => pad(f, 1024),
  pad24k: (f) => pad(f, 1536),
  // Diagnostics (wrong results): the same shader with the K rows' (nok), the V rows' (nov) or both
  // (nokv) loads reading this lane's column of cache row 0 for every key (L1 hits after the first)
  // instead of the key's row: what a tile costs without waiting for its rows from memory.
  nok: (f) => cacheRow0(f, ["key"]),
  nov: (f) => cacheRow0(f, ["value"]),
  nokv: (f) => cacheRow0(f, ["key", "value"]),
  nobfly: (f) => {
    const p = `${f}/lib/row.wgsl.jinja`;
    const text = fs.readFileSync(p, "utf8");
    const out = text.replace(/subgroupShuffleXor\((.*), \{\{ 2 \*\* k \}\}u\)/g, "($1)");
    if (out === text) throw new Error("nobfly: no butterfly shuffle found");
    fs.writeFileSync(p, out);
  },
};
function aheadN(f, n, vAt) {
  const p = `${f}/paged-attention-row.wgsl.jinja`;
  let text = fs.readFileSync(p, "utf8");
  const set = '{% set AHEAD = 1 if entryMode == "key" else pagedRowAhead %}';
  const check = "{% if pagedRowAhead != 1 and pagedRowAhead != 2 %}";
  const vSet = "{% set V_AT = (GP - AHEAD) if GP > AHEAD else 0 %}";
  if (!text.includes(set) || !text.includes(check) || !text.includes(vSet)) throw new Error(`ahead${n}: anchors not found`);
  text = text.replace(set, `{% set AHEAD = 1 if entryMode == "key" else ${n} %}`).replace(check, "{% if false %}");
  if (vAt) text = text.replace(vSet, `{% set V_AT = (GP - AHEAD) if GP > AHEAD else (${vAt}) %}`);
  fs.writeFileSync(p, text);
}
function l2Prefetch(f, which, ahead = 1) {
  const p = `${f}/paged-attention-row.wgsl.jinja`;
  let text = fs.readFileSync(p, "utf8");
  const loop = "  for (var tile_start = key_begin; tile_start < key_end;";
  const phase1 = "    // Phase 1: scores, chunk by chunk.\n";
  const fold = '{% endif %}\n    {{ rowPart("fold", G, W, headSize, ST) | trim | indent(4) }}';
  const sums = '  {{ rowPart("sums", G, W, headSize) | trim | indent(2) }}';
  if (![loop, phase1, fold, sums].every((a) => text.includes(a))) throw new Error("l2pf: anchors not found");
  const entries = '{% for e in range(((W / blockSize) | int) if entryMode == "multi" else 1) %}\n';
  // One tile ahead: the next tile's row bases nb{e}, which the shipped template computes there;
  // two tiles ahead: the block entries of the tile after next, loaded at this tile's start.
  let bases = "nb";
  let entryLoads = "";
  if (ahead === 2) {
    bases = "pfb";
    entryLoads =
      entries +
      "    let pf_entry{{ e }} = block_entry(b, (tile_start + {{ 2 * STEP }}u) / BLOCK_SIZE + {{ e }}u, max_blocks);\n{% endfor %}\n";
  }
  // Groups of 4 rows (one word per sector: lane / 8 picks the row, lane % 8 the sector).
  let decl = "  var pf_sink = 0u;\n";
  let body = "    // Sector prefetch of later tiles' rows (one word a sector), consumed a tile later.\n";
  if (ahead === 2)
    body += entries + "    let pfb{{ e }} = row_base(pf_entry{{ e }}, tile_start + {{ 2 * STEP }}u, kv_head, num_blocks);\n{% endfor %}\n";
  for (const w of which) {
    const from = w === "key" && ahead === 1 ? "(AHEAD * KC / 4) | int" : "0";
    decl += `{% for i in range(${from}, (W / 4) | int) %}\n  var pf_${w}{{ i }} = 0u;\n{% endfor %}\n`;
    body +=
      `{% for i in range(${from}, (W / 4) | int) %}\n` +
      `    pf_sink ^= pf_${w}{{ i }};\n` +
      `    pf_${w}{{ i }} = bitcast<vec2<u32>>(load_${w}_cache((${bases}{{ ((i * 4) / blockSize) | int if entryMode == "multi" else 0 }} + ` +
      `({{ (i * 4) % blockSize }}u + lane / 8u) * {{ kvNumHeads }}u) * 32u + (lane % 8u) * 4u)).x;\n{% endfor %}\n`;
  }
  text = text.replace(loop, decl + loop);
  text = text.replace(phase1, phase1 + entryLoads);
  text = text.replace(fold, body + fold);
  text = text.replace(sums, "  l_part += select(0.0, 1.0, pf_sink == 0x9e3779b9u && params.scale == -12345.0);\n" + sums);
  fs.writeFileSync(p, text);
}
function cacheRow0(f, which) {
  const p = `${f}/paged-attention-row.wgsl.jinja`;
  let text = fs.readFileSync(p, "utf8");
  for (const w of which) {
    const re = new RegExp(`load_${w}_cache\\(\\(.*?\\) \\* 32u \\+ (\\{\\{ col\\(j, W\\) \\}\\})\\)`, "g");
    const out = text.replace(re, `load_${w}_cache($1)`);
    if (out === text) throw new Error(`cacheRow0: no ${w} load found`);
    text = out;
  }
  fs.writeFileSync(p, text);
}
function pad(f, vec4s) {
  const p = `${f}/paged-attention-row.wgsl.jinja`;
  let text = fs.readFileSync(p, "utf8");
  const decl = "var<workgroup> subgroup_split: u32;";
  const body = "  let t = wid.x;\n  let kv_head = wid.y;\n";
  if (!text.includes(decl) || !text.includes(body)) throw new Error("pad: anchor not found");
  text = text.replace(decl, `${decl}\nvar<workgroup> occupancy_pad: array<vec4<f32>, ${vec4s}>;`);
  text = text.replace(body, `${body}  if (params.scale == -12345.0) {\n    occupancy_pad[lane] = vec4<f32>(1.0);\n  }\n`);
  fs.writeFileSync(p, text);
}
const dirs = [];
for (const name of process.argv.slice(2)) {
  if (!Object.hasOwn(edits, name)) throw new Error(`unknown variant ${name}: ${Object.keys(edits).join(", ")}`);
  const dir = `.exp-${name}`;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync("templates", dir, { recursive: true });
  edits[name](dir);
  dirs.push(dir);
}
console.log(dirs.join(","));
