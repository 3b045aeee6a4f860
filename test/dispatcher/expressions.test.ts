/**
 * The expression code generator (src/emit/dispatcher-expr.ts) against the interpreter, operator by
 * operator: `and`/`or` with a build-time side on the left or the right (folded away) and with two
 * run-time sides, the comparisons, `==`/`!=` on lists and scalars, and `+ - * / // %` in the three
 * arithmetic modes (int, float, and `number` attributes whose kind is known per call), with
 * divisors that are constants of both signs, run-time values, and zero. Each expression is a
 * uniform field of a variant of the Axpby fixture; random calls must give byte-identical plans or
 * the same error on both sides. Written from the survivors of a Stryker run over the generator's
 * binary-operator code (docs/testing.md).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { Call, TensorDesc } from "../../src/model/plan.js";
import { outcome } from "../support/plan-outcome.js";
import { importDispatcher } from "../support/project-build.js";
import { rng } from "../support/rng.js";

const fixture = path.resolve(__dirname, "../fixtures/axpby");

/** Uniform fields: name, WGSL type, expression. `tunables.WG` is 256 (build-time), n and the attributes are per call. */
const FIELDS: readonly (readonly [string, "u32" | "i32" | "f32", string])[] = [
  // and / or: build-time left (folded), build-time right (folded), both at run time.
  ["and_lt", "u32", "1 if (tunables.WG > 100 and n > 3) else 0"],
  ["and_lf", "u32", "1 if (tunables.WG < 100 and n > 3) else 2"],
  ["or_lt", "u32", "1 if (tunables.WG > 100 or n > 3) else 0"],
  ["or_lf", "u32", "1 if (tunables.WG < 100 or n > 3) else 2"],
  ["and_rt", "u32", "1 if (n > 3 and tunables.WG > 100) else 0"],
  ["or_rf", "u32", "1 if (n > 3 or tunables.WG < 100) else 0"],
  ["and_rr", "u32", "1 if (n > 3 and attrs.a > 0) else 0"],
  ["or_rr", "u32", "1 if (n > 3 or attrs.a > 0) else 0"],
  // Comparisons on both sides of equality, int and number operands.
  ["lt", "u32", "1 if attrs.a < attrs.b else 0"],
  ["le", "u32", "1 if attrs.a <= attrs.b else 0"],
  ["gt", "u32", "1 if attrs.a > attrs.b else 0"],
  ["ge", "u32", "1 if attrs.a >= attrs.b else 0"],
  ["eq", "u32", "1 if attrs.a == attrs.b else 0"],
  ["ne", "u32", "1 if attrs.a != attrs.b else 0"],
  ["nle", "u32", "1 if n <= 7 else 0"],
  ["lst_eq", "u32", "1 if shapes.xT == shapes.yT else 0"],
  ["lst_ne", "u32", "1 if shapes.xT != [7] else 0"],
  // Arithmetic in the three modes.
  ["add_f", "f32", "attrs.f + attrs.a"],
  ["sub_f", "f32", "attrs.f - attrs.b"],
  ["mul_f", "f32", "attrs.f * 3.0"],
  ["div_f", "f32", "attrs.f / attrs.b"],
  ["fdiv_f", "f32", "attrs.f // attrs.b"],
  ["mod_f", "f32", "attrs.f % attrs.b"],
  ["add_n", "f32", "attrs.a + attrs.b"],
  ["mul_n", "f32", "attrs.a * attrs.b"],
  ["div_n", "f32", "attrs.a / attrs.b"],
  ["fdiv_n", "f32", "attrs.a // attrs.b"],
  ["mod_n", "f32", "attrs.a % attrs.b"],
  ["div_i", "i32", "(n - 10) / attrs.c"],
  ["fdiv_i", "i32", "(n - 10) // attrs.c"],
  ["mod_i", "i32", "(n - 10) % attrs.c"],
  ["div_ic", "i32", "(n - 10) / 4 + (n - 10) / -4"],
  ["mod_ic", "i32", "(n - 10) % 4 + (n - 10) % -4 + n % 1"],
  ["mix", "f32", "n * attrs.f - attrs.c * 2"],
  // Float mode proper: a float literal on one side.
  ["add_fl", "f32", "attrs.a + 0.25"],
  ["sub_fl", "f32", "attrs.a - 0.25"],
  ["mul_fl", "f32", "attrs.b * 1.5"],
  ["div_fl", "f32", "attrs.a / 0.5 + 0.5 / attrs.b"],
  ["fdiv_fl", "f32", "attrs.a // 0.75 + 0.75 // attrs.b"],
  ["mod_fl", "f32", "attrs.a % 0.75 + 0.75 % attrs.b"],
];

function exprSpec(): unknown {
  const spec = JSON.parse(fs.readFileSync(path.join(fixture, "specs/Axpby.json"), "utf8"));
  // a, b: numbers whose kind the spec does not fix; c: an int; f: a float.
  spec.attributes = { ...spec.attributes, a: {}, b: {}, c: { default: 2 }, f: { default: 0.5 } };
  for (const [name, type, value] of FIELDS) spec.bindings.params.struct.push({ name, type, value });
  return spec;
}

function randomCall(r: () => number): Call {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const n = pick([1, 3, 4, 7, 8, 10, 64, 1027]);
  const dtype = pick(["float32", "float16"]);
  const t = (shape: number[]): TensorDesc => ({ shape, dtype });
  const attrs: Record<string, number> = {};
  attrs.a = pick([1, 2, -3, 0, 1.5, 7, 2.5]);
  attrs.b = pick([2, 3, 0, -4, 2.5, 1.5, 7]);
  if (r() < 0.8) attrs.c = pick([2, 3, -3, 0, 1, 7]);
  if (r() < 0.8) attrs.f = pick([0.5, -1.25, 0, 3, 2.5]);
  return { inputs: { xT: t([n]) }, outputs: { yT: t([n]) }, attrs };
}

describe("generated dispatcher vs interpreter, operator by operator", () => {
  it("agree on every field's value or on the first error", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-expr-"));
    try {
      fs.cpSync(path.join(fixture, "templates"), path.join(dir, "templates"), { recursive: true });
      fs.mkdirSync(path.join(dir, "specs"));
      fs.writeFileSync(path.join(dir, "specs/Axpby.json"), JSON.stringify(exprSpec(), null, 2));
      const result = await compile(loadConfig(dir), { profiles: ["desktop-64k"] });
      expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      const model = result.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === "Axpby")!.model;
      const mod = await importDispatcher(result.files.get("desktop-64k/dispatcher.ts")!);
      const plan = (mod.planners as Record<string, (c: Call) => unknown>).Axpby!;
      const r = rng(20261203);
      let plans = 0;
      const errors = new Set<string>();
      for (let i = 0; i < 4000; i++) {
        const call = randomCall(r);
        const want = outcome(() => interpretPlan(model, call));
        const got = outcome(() => plan(call));
        if (JSON.stringify(got) !== JSON.stringify(want)) expect({ call, got }).toEqual({ call, got: want });
        if ("plan" in want) plans++;
        else errors.add(want.error.message.replace(/\d+/g, "#"));
      }
      // Both outcomes were reached: plans, and errors from the divisions by zero.
      expect(plans).toBeGreaterThan(500);
      expect([...errors].join("\n")).toMatch(/division by zero|by zero/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
