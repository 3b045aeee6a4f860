/** `kernelc explain`: tunable combinations after the first with a surviving variant are reported as skipped, not built. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

const FIXTURE = path.resolve(__dirname, "../fixtures/axpby");

const run = runCli;

describe("kernelc explain: the ordered fallback over tunable values", () => {
  it("on compat, WG=256 (the default) is built and WG=64 is skipped, its instances too", async () => {
    const r = await run(["explain", "Axpby", "--profile", "compat"], FIXTURE);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("candidates for T=float32; WG=256 (built):\n");
    // float16 is built too: compat has no shader-f16, so its f16 data is packed in u32 pairs.
    expect(r.stdout).toContain("candidates for T=float16; WG=256 (built):\n");
    const skipped = r.stdout.slice(r.stdout.indexOf("candidates for T=float32; WG=64"));
    expect(skipped).toContain("candidates for T=float32; WG=64 (skipped: an earlier combination is built):\n");
    expect(skipped).toContain(
      [
        "  SKIPPED vec4 (priority 10)",
        "      not built: WG=256 comes earlier in the order of tunable values and a variant survives there",
        "      instance (no instance): skipped",
      ].join("\n"),
    );
    expect(skipped).not.toMatch(/: built\b/);
    expect(r.stdout.slice(0, r.stdout.indexOf("candidates for T=float32; WG=64"))).toMatch(
      /EMITTED scalar \(priority 0\)\n {6}instance \(no instance\): built\n/,
    );
  });

  it("--format json gives the same statuses as data", async () => {
    const r = await run(["explain", "Axpby", "--profile", "compat", "--format", "json"], FIXTURE);
    const data = JSON.parse(r.stdout) as {
      candidates: { tunables: { WG: number }; dtypes: { T: string }; variant: string; status: string; instances: { status: string }[] }[];
    };
    const wg64 = data.candidates.filter((c) => c.dtypes.T === "float32" && c.tunables.WG === 64 && c.status !== "pruned");
    expect(wg64.map((c) => [c.variant, c.status, c.instances.map((i) => i.status)])).toEqual([
      ["vec4", "not-dispatched", ["skipped"]],
      ["scalar", "not-dispatched", ["skipped"]],
    ]);
  });
});

describe("kernelc explain --call: the call file is read with the located JSON reader", () => {
  const callFile = (text: string): string => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-call-")), "call.json");
    fs.writeFileSync(file, text);
    return file;
  };

  it("a malformed call file is reported at its line and column with a code frame (exit 1)", async () => {
    const file = callFile('{\n  "inputs": {\n    "xT": { "shape": [4096] "dtype": "float32" }\n  }\n}\n');
    const r = await run(["explain", "Axpby", "--profile", "compat", "--call", file], FIXTURE);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      [
        'error[json_syntax]: expected `,` or `}` after an object member, found `"`',
        `  --> ${file}:3:29 (/inputs/xT)`,
        "    |",
        '  3 |     "xT": { "shape": [4096] "dtype": "float32" }',
        "    |                             ^",
        '  = hint: a call is JSON: {"inputs": {"queryT": {"shape": [4, 4096], "dtype": "float16"}, …}, "outputs": {…}, "attrs": {…}}',
        "1 error, 0 warnings",
        "",
      ].join("\n"),
    );
  });

  it("a duplicate key is an error too; a missing file is file_unreadable", async () => {
    const dup = await run(["explain", "Axpby", "--profile", "compat", "--call", callFile('{"inputs": {}, "inputs": {}}')], FIXTURE);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/^error\[json_duplicate_key\]: .*\n {2}--> .*call\.json:1:16/m);
    const missing = await run(["explain", "Axpby", "--profile", "compat", "--call", "no-such-call.json"], FIXTURE);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error\[file_unreadable\]: cannot read the call file/m);
  });

  it("a well-formed call picks a variant", async () => {
    const file = callFile(
      JSON.stringify({
        inputs: { xT: { shape: [4096], dtype: "float32" } },
        outputs: { yT: { shape: [4096], dtype: "float32" } },
        attrs: {},
      }),
    );
    const r = await run(["explain", "Axpby", "--profile", "desktop-64k", "--call", file], FIXTURE);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("call of Axpby on profile desktop-64k:\n  picked vec4\n");
  });
});

describe("kernelc explain of a kernel whose template does not build", () => {
  it("reports the Tint error at the template's line and column with a code frame, as lint and build do", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-explain-tint-"));
    fs.cpSync(FIXTURE, root, { recursive: true });
    fs.rmSync(path.join(root, "out"), { recursive: true, force: true });
    const template = path.join(root, "templates", "axpby.wgsl.jinja");
    const lines = fs.readFileSync(template, "utf8").split("\n");
    const at = lines.findIndex((l) => l.includes("fn main"));
    expect(at).toBeGreaterThan(0);
    lines.splice(at + 2, 0, "  undefinedThing[0] = 1.0;");
    fs.writeFileSync(template, lines.join("\n"));
    const lint = await run(["lint"], root);
    const explain = await run(["explain", "Axpby", "--profile", "compat"], root);
    expect(explain.code).toBe(1);
    const header = `  --> templates/axpby.wgsl.jinja:${at + 3}:3\n`;
    expect(lint.stderr).toContain(header);
    expect(explain.stderr).toContain(header);
    expect(explain.stderr).toContain(`${at + 3} |   undefinedThing[0] = 1.0;\n`);
  });
});
