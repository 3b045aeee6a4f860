/**
 * `kernelc explain --call` of a call that cannot be planned: the explanation is printed (each
 * variant's reason, the planner's error) and the command fails, exit 1, with `call_invalid` (the
 * call's form, a tensor, a dtype, a shape, an attribute) or `call_rejected` (no variant accepts
 * it), located at the JSON pointer of the value at fault in the call file. An accepted call exits 0.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

const FIXTURE = path.resolve(__dirname, "../fixtures/axpby");
const made: string[] = [];
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A call file with `text` in a fresh folder; returns its path. */
function callFile(text: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-call-"));
  made.push(dir);
  const file = path.join(dir, "call.json");
  fs.writeFileSync(file, text);
  return file;
}

const t = (shape: number[], dtype = "float32"): { shape: number[]; dtype: string } => ({ shape, dtype });
const explainCall = (text: string, ...more: string[]) =>
  runCli(["explain", "Axpby", "--profile", "desktop-64k", "--call", callFile(text), ...more], FIXTURE);

/** The header line of each diagnostic in a text rendering: `error[code]: message`. */
const headers = (stderr: string): string[] => [...stderr.matchAll(/^(?:error|warning)\[[a-z_0-9]+\]: .*$/gm)].map((m) => m[0]);
/** The `--> file:line:col (pointer)` line of each diagnostic. */
const wheres = (stderr: string): string[] =>
  [...stderr.matchAll(/^ {2}--> (.*)$/gm)].map((m) => m[1]!.replace(/^.*call\.json/, "call.json"));

describe("kernelc explain --call: a call that cannot be planned fails with exit 1", () => {
  const good = { inputs: { xT: t([4096]) }, outputs: { yT: t([4096]) } };
  const cases: [string, unknown, string, string][] = [
    [
      "an array",
      [],
      "error[call_invalid]: invalid call of Axpby: a call must be an object { inputs, outputs, attrs }, got []",
      "call.json:1:1 (/)",
    ],
    [
      "a number",
      5,
      "error[call_invalid]: invalid call of Axpby: a call must be an object { inputs, outputs, attrs }, got 5",
      "call.json:1:1 (/)",
    ],
    ["no inputs", {}, "error[call_invalid]: invalid call of Axpby: required input `xT` is missing", "call.json:1:1 (/)"],
    [
      "inputs as an array",
      { inputs: [t([4])] },
      "error[call_invalid]: invalid call of Axpby: call.inputs must be an object keyed by tensor id, got [(object)]",
      "call.json:1:2 (/inputs)",
    ],
    [
      "a tensor id the kernel does not have",
      { inputs: { zT: t([4096]) } },
      "error[call_invalid]: invalid call of Axpby: unknown input `zT`; inputs are xT",
      "call.json:1:12 (/inputs/zT)",
    ],
    [
      "a dtype the kernel does not take",
      { inputs: { xT: t([4096], "bf99") }, outputs: { yT: t([4096], "bf99") } },
      "error[call_invalid]: invalid call of Axpby: input `xT` has dtype bf99, which T does not allow; allowed: float16, float32",
      "call.json:1:33 (/inputs/xT/dtype)",
    ],
    [
      "a first tensor of a dtype the kernel does not take, the next of one it does",
      { inputs: { xT: t([4096], "float64") }, outputs: { yT: t([4096], "float32") } },
      "error[call_invalid]: invalid call of Axpby: input `xT` has dtype float64, which T does not allow; allowed: float16, float32",
      "call.json:1:33 (/inputs/xT/dtype)",
    ],
    [
      "tensors of dtypes the kernel takes, but not the same one",
      { inputs: { xT: t([4096], "float16") }, outputs: { yT: t([4096], "float32") } },
      "error[call_invalid]: invalid call of Axpby: output `yT` has dtype float32, but `xT` makes T = float16: every tensor of T must have the dtype of the first one the call gives",
      "call.json:1:85 (/outputs/yT/dtype)",
    ],
    [
      "a dtype that is not a string",
      { inputs: { xT: { shape: [4096], dtype: 1 } } },
      'error[call_invalid]: invalid call of Axpby: input `xT` has dtype 1; a dtype must be a string such as "float16"',
      "call.json:1:33 (/inputs/xT/dtype)",
    ],
    [
      "a shape that is not an array",
      { inputs: { xT: { shape: 4096, dtype: "float32" } } },
      "error[call_invalid]: invalid call of Axpby: input `xT` has shape 4096; a shape must be an array of non-negative integers",
      "call.json:1:18 (/inputs/xT/shape)",
    ],
    [
      "the wrong rank",
      { inputs: { xT: t([64, 64]) }, outputs: { yT: t([64, 64]) } },
      "error[call_invalid]: invalid call of Axpby: input `xT` must have rank 1, got 2",
      "call.json:1:18 (/inputs/xT/shape)",
    ],
    [
      "an output of the wrong shape",
      { inputs: { xT: t([4096]) }, outputs: { yT: t([4095]) } },
      "error[call_invalid]: invalid call of Axpby: output `yT` has shape [4095], expected [4096] (`shapes.xT`)",
      "call.json:1:70 (/outputs/yT/shape)",
    ],
    [
      "an attribute of the wrong type",
      { ...good, attrs: { alpha: "two" } },
      'error[call_invalid]: invalid call of Axpby: attribute `alpha` must be a finite number, got "two"',
      "call.json:1:114 (/attrs/alpha)",
    ],
    [
      "an attribute the kernel does not have",
      { ...good, attrs: { gamma: 1 } },
      "error[call_invalid]: invalid call of Axpby: unknown attribute `gamma`; attributes are alpha, beta",
      "call.json:1:114 (/attrs/gamma)",
    ],
  ];
  it.each(cases)("%s: call_invalid at its pointer", async (_name, call, header, where) => {
    const r = await explainCall(JSON.stringify(call));
    expect(r.code).toBe(1);
    // The explanation is printed all the same: the candidates, then the call's error.
    expect(r.stdout).toContain("Axpby on profile desktop-64k\n");
    expect(r.stdout).toMatch(/\ncall of Axpby on profile desktop-64k:\n(?:.*\n)*  error \(invalid_call\): Axpby: /);
    expect(headers(r.stderr)).toEqual([header]);
    expect(wheres(r.stderr)).toEqual([where]);
    expect(r.stderr).toContain(
      "= hint: a call of Axpby has inputs xT (T, rank 1); outputs yT (T, rank 1, optional); attrs alpha, beta; T is float16 or float32",
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("a call no variant accepts: the explanation of each rejection, then call_rejected with a note per variant", async () => {
    const big = { inputs: { xT: t([400000000]) }, outputs: { yT: t([400000000]) } };
    const r = await explainCall(JSON.stringify(big));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /\n {2}rejected vec4: in `dispatchFits`: .*\n {2}rejected scalar: in `dispatchFits`: .*\n {2}error \(no_variant\): /,
    );
    expect(headers(r.stderr)).toEqual(["error[call_rejected]: no variant of Axpby accepts the call on profile desktop-64k"]);
    expect(r.stderr).toMatch(/\n {2}= note: variant `vec4` rejected it: in `dispatchFits`: `groups <= min\(.*\(groups = 390625, /);
    expect(r.stderr).toMatch(/\n {2}= note: variant `scalar` rejected it: in `dispatchFits`: /);
  });

  it("a key other than inputs, outputs and attrs is call_invalid with a did-you-mean; `$comment` is allowed", async () => {
    const r = await explainCall(JSON.stringify({ ...good, attributes: { alpha: 2 } }));
    expect(r.code).toBe(1);
    // The planner refuses the call too (it would otherwise plan with alpha's default); one diagnostic.
    expect(r.stdout).toContain(
      '  error (invalid_call): Axpby: the call has an unknown key "attributes"; a call is an object { inputs, outputs, attrs }\n',
    );
    expect(headers(r.stderr)).toEqual([
      "error[call_invalid]: unknown key `attributes` in the call of Axpby: a call has only inputs, outputs and attrs (and $-keys for comments), and a planner refuses other keys",
    ]);
    expect(wheres(r.stderr)).toEqual(["call.json:1:105 (/attributes)"]);
    expect(r.stderr).toContain("= hint: did you mean `attrs`? (a call of Axpby has");
    const commented = await explainCall(JSON.stringify({ $comment: "a note", ...good }));
    expect(commented.code).toBe(0);
    expect(commented.stderr).toBe("");
  });

  it("a key other than shape and dtype in a tensor entry is call_invalid at its pointer, naming the allowed keys; `$comment` is allowed", async () => {
    const call = { inputs: { xT: { ...t([4096]), data: [1, 2] } }, outputs: { yT: { ...t([4096]), shapes: [4096] } } };
    const r = await explainCall(JSON.stringify(call));
    expect(r.code).toBe(1);
    expect(headers(r.stderr)).toEqual([
      "error[call_invalid]: unknown key `data` in input `xT` of the call of Axpby: a tensor entry has only shape and dtype (and $-keys for comments)",
      "error[call_invalid]: unknown key `shapes` in output `yT` of the call of Axpby: a tensor entry has only shape and dtype (and $-keys for comments)",
    ]);
    expect(wheres(r.stderr)).toEqual(["call.json:1:51 (/inputs/xT/data)", "call.json:1:116 (/outputs/yT/shapes)"]);
    expect(r.stderr).toContain("= hint: remove it; a tensor entry is { shape, dtype }");
    expect(r.stderr).toContain("= hint: did you mean `shape`? a tensor entry is { shape, dtype }");
    const json = await explainCall(JSON.stringify(call), "--format", "json");
    expect(json.code).toBe(1);
    const data = JSON.parse(json.stdout) as { diagnostics: { code: string; pointer: string }[] };
    expect(data.diagnostics.map((d) => [d.code, d.pointer])).toEqual([
      ["call_invalid", "/inputs/xT/data"],
      ["call_invalid", "/outputs/yT/shapes"],
    ]);
    const commented = await explainCall(JSON.stringify({ inputs: { xT: { ...t([4096]), $comment: "x" } }, outputs: { yT: t([4096]) } }));
    expect(commented.code).toBe(0);
    expect(commented.stderr).toBe("");
  });

  it("an accepted call exits 0 and prints no diagnostic", async () => {
    const r = await explainCall(JSON.stringify({ ...good, attrs: { alpha: 2 } }));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("call of Axpby on profile desktop-64k:\n  picked vec4\n");
    expect(r.stderr).toBe("");
    const rejectedFirst = await explainCall(JSON.stringify({ inputs: { xT: t([4094]) }, outputs: { yT: t([4094]) } }));
    expect(rejectedFirst.code).toBe(0);
    expect(rejectedFirst.stdout).toContain("  rejected vec4: `n % 4 == 0` is false (n % 4 = 2)\n  picked scalar\n");
  });

  it("--format json: one document with the call's outcome and its diagnostics; exit 1 for a rejected call, 0 for an accepted one", async () => {
    const r = await explainCall(JSON.stringify({ inputs: { xT: t([64, 64]) } }), "--format", "json");
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("");
    const data = JSON.parse(r.stdout) as {
      candidates: unknown[];
      call: { error: { kind: string; pointer: string } };
      diagnostics: { code: string; file: string; line: number; pointer: string }[];
    };
    expect(data.candidates.length).toBeGreaterThan(0);
    expect(data.call.error).toMatchObject({ kind: "invalid_call", pointer: "/inputs/xT/shape" });
    expect(data.diagnostics.map((d) => [d.code, path.basename(d.file), d.line, d.pointer])).toEqual([
      ["call_invalid", "call.json", 1, "/inputs/xT/shape"],
    ]);
    const ok = await explainCall(JSON.stringify(good), "--format", "json");
    expect(ok.code).toBe(0);
    expect((JSON.parse(ok.stdout) as { diagnostics: unknown[] }).diagnostics).toEqual([]);
  });

  it("--format github: the explanation, then an annotation at the call file", async () => {
    const r = await explainCall(JSON.stringify({ inputs: { zT: t([4]) } }), "--format", "github");
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("call of Axpby on profile desktop-64k:\n");
    expect(r.stdout).toMatch(
      /^::error file=.*call\.json,line=1,col=12,endLine=1,endColumn=16,title=kernelc call_invalid::invalid call of Axpby: unknown input `zT`/m,
    );
  });

  it("a call file that is missing, a folder, or not JSON: exit 1 with a diagnostic naming it, nothing explained", async () => {
    const missing = await runCli(["explain", "Axpby", "--profile", "desktop-64k", "--call", "no-such-call.json"], FIXTURE);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(headers(missing.stderr)).toEqual([
      `error[file_unreadable]: cannot read the call file ${path.join(FIXTURE, "no-such-call.json")}: it does not exist`,
    ]);
    expect(missing.stderr).toContain("= hint: check the --call path (relative to the current folder); a call is JSON:");
    const folder = await runCli(["explain", "Axpby", "--profile", "desktop-64k", "--call", "specs"], FIXTURE);
    expect(folder.code).toBe(1);
    expect(headers(folder.stderr)).toEqual([
      `error[file_unreadable]: cannot read the call file ${path.join(FIXTURE, "specs")}: it is a folder, not a regular file`,
    ]);
    const notJson = await explainCall("inputs: xT");
    expect(notJson.code).toBe(1);
    expect(notJson.stdout).toBe("");
    expect(headers(notJson.stderr)[0]).toMatch(/^error\[json_syntax\]: /);
  });
});
