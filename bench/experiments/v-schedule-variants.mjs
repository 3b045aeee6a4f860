#!/usr/bin/env node
// Makes template folders that move where PagedAttention's row design issues a tile's V loads
// (bench-only, never shipped). The shipped template issues all 32 V rows at chunk V_AT = GP - AHEAD
// (chunk 2 of 4 with 4 heads per KV head and two chunks ahead), so they have two chunks and the
// softmax to arrive. Variants (same results, same traffic):
//   vsplit  - each chunk c issues the V rows of its own keys (c*KC .. c*KC + KC - 1): the first rows
//             get the whole tile to arrive, and fewer registers are live at chunk 2 (V rows come in
//             quarters instead of all at once);
//   vat0, vat1 - all V rows at chunk 0 or 1 (more lead time, more live registers).
// Usage: node bench/experiments/v-schedule-variants.mjs <name>...; writes .exp-<name>/ and prints the
// folder list for BENCH_TEMPLATES.
import * as fs from "node:fs";

const anchor = `{% elif c == V_AT %}
{% for s in range(W) %}
{% for j in range(V4) %}
    let vr{{ s }}{{ sfx(j, W) }} = load_value_cache(({{ rowOf(s) }}) * 32u + {{ col(j, W) }});
{% endfor %}
{% endfor %}
{% endif %}
`;
const vload = `{% for j in range(V4) %}
    let vr{{ s }}{{ sfx(j, W) }} = load_value_cache(({{ rowOf(s) }}) * 32u + {{ col(j, W) }});
{% endfor %}
{% endfor %}
{% endif %}
`;
const edits = {
  vsplit: `{% endif %}\n{% if true %}\n{% for s in range(c * KC, c * KC + KC) %}\n${vload}`,
  vat0: `{% endif %}\n{% if c == 0 %}\n{% for s in range(W) %}\n${vload}`,
  vat1: `{% endif %}\n{% if c == (1 if GP > 1 else 0) %}\n{% for s in range(W) %}\n${vload}`,
};
const dirs = [];
for (const name of process.argv.slice(2)) {
  if (!(name in edits)) throw new Error(`unknown variant ${name}: ${Object.keys(edits).join(", ")}`);
  const dir = `.exp-${name}`;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync("templates", dir, { recursive: true });
  const p = `${dir}/paged-attention-row.wgsl.jinja`;
  const text = fs.readFileSync(p, "utf8");
  if (!text.includes(anchor)) throw new Error(`${name}: the V-load block was not found`);
  fs.writeFileSync(p, text.replace(anchor, edits[name]));
  dirs.push(dir);
}
console.log(dirs.join(","));
