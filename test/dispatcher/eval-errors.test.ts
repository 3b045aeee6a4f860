/**
 * The plan-building paths that the shipped kernels' contracts keep calls away from: a binding of an
 * absent optional tensor, uniform fields out of their u32/i32 range, f32 fields, a dispatch count
 * past the device limit, scratch and output shapes whose evaluation fails, a scratch shape with a
 * negative dimension, and several of these in
 * one call (the first in plan order must be the one reported); also integer overflow in checked
 * and in run-time-typed arithmetic, and integer division, modulo and ceilDiv by constants of both
 * signs on operands of both signs; a field that repeats an earlier field's product (read from its
 * temporary in the generated code) failing where the earlier one did not. A variant of the Axpby
 * fixture reaches them; the generated dispatcher and the interpreter must agree on every call.
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

/** Axpby with an optional bias bound in its scalar variants, attribute-driven uniforms, dispatch, scratch and output shape. */
function evalSpec(): unknown {
  const spec = JSON.parse(fs.readFileSync(path.join(fixture, "specs/Axpby.json"), "utf8"));
  spec.inputs.biasT = { onnx: "bias", dtype: "T", rank: 1, optional: true };
  spec.outputs.yT.shape = "[n // attrs.e * attrs.e]";
  spec.attributes = { ...spec.attributes, k: {}, groups: {}, d: { default: 1 }, e: { default: 1 } };
  spec.bindings.bias = { arg: "biasT", elementType: "$scalar" };
  spec.bindings.tmp = { scratch: "tmp", elementType: "f32" };
  spec.bindings.params.struct.push(
    { name: "k", type: "u32", value: "attrs.k" },
    { name: "k2", type: "i32", value: "attrs.k * 65536" },
    // Repeats k2's product: the generated code reads k2's value for it (a guarded value computed before).
    { name: "k3", type: "i32", value: "attrs.k * 65536 * 2" },
    { name: "kf", type: "f32", value: "attrs.k / 3" },
    { name: "nm", type: "i32", value: "(n - 10) % -3 + (n - 10) % 3" },
    { name: "nq", type: "i32", value: "(n - 10) // 4 + (n - 10) / -4 + ceilDiv(n - 10, 3) + ceilDiv(n - 10, -3)" },
  );
  for (const v of spec.variants) {
    if (!v.id.startsWith("scalar")) continue;
    v.intermediates = [{ id: "tmp", dtype: "float32", shape: "[n // attrs.d, n * 1125899906842624]" }];
    v.passes[0].bindings = ["x", "y", "bias", "tmp", "params"];
    v.passes[0].dispatch = { x: "groups", y: "attrs.groups" };
  }
  return spec;
}

function randomCall(r: () => number): Call {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const n = pick([1, 3, 7, 64, 1027]);
  const dtype = pick(["float32", "float16"]);
  const t = (shape: number[]): TensorDesc => ({ shape, dtype });
  const inputs: Record<string, TensorDesc> = { xT: t([n]) };
  if (r() < 0.6) inputs.biasT = t([n]);
  const attrs: Record<string, number> = {};
  for (const [name, values] of [
    ["k", [0, 1, 7, -1, 20000, 2 ** 31, 2 ** 32, 2 ** 40, 1.5]],
    ["groups", [0, 1, 65535, 65536, -1, 0.5]],
    ["d", [1, 2, 0, -5]],
    ["e", [1, 0]],
  ] as const) {
    if (r() < 0.9) attrs[name] = pick(values);
  }
  return { inputs, outputs: { yT: t([n]) }, attrs };
}

describe("generated dispatcher vs interpreter on evaluation errors", () => {
  it("agree on plans and on the first failing binding, dispatch or shape", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kernelc-eval-"));
    fs.cpSync(path.join(fixture, "templates"), path.join(dir, "templates"), { recursive: true });
    fs.mkdirSync(path.join(dir, "specs"));
    fs.writeFileSync(path.join(dir, "specs/Axpby.json"), JSON.stringify(evalSpec(), null, 2));
    const result = await compile(loadConfig(dir), { profiles: ["desktop-64k"] });
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const model = result.profiles[0].kernels.find((k) => k.model.kernel.spec.name === "Axpby")!.model;
    const mod = await importDispatcher(result.files.get("desktop-64k/dispatcher.ts")!);
    const plan = (mod.planners as Record<string, (c: Call) => unknown>).Axpby;
    const seed = Number(process.env.KERNELC_SEED ?? Date.now() % 1_000_000);
    console.log(`eval-errors seed ${seed} (replay with KERNELC_SEED=${seed})`);
    const r = rng(seed);
    const messages = new Set<string>();
    let plans = 0;
    for (let i = 0; i < 3000; i++) {
      const call = randomCall(r);
      const want = outcome(() => interpretPlan(model, call));
      const got = outcome(() => plan(call));
      if (JSON.stringify(got) !== JSON.stringify(want)) expect({ call, got }).toEqual({ call, got: want });
      if ("plan" in want) plans++;
      else if (want.error.kind === "eval") messages.add(want.error.message);
    }
    expect(plans).toBeGreaterThan(0);
    // Every kind of evaluation failure was reached.
    const all = [...messages].join("\n");
    for (const what of [
      "uniform field `params.k2` failed: integer overflow",
      "the shape of intermediate `tmp` failed: integer overflow",
      // d = -5 makes the first dimension negative: refused, never a negative scratch size.
      "the shape of intermediate `tmp` has the dimension -",
      "binding `bias` needs tensor `biasT`",
      "uniform field `params.k` (u32)",
      "uniform field `params.k2` (i32)",
      "uniform field `params.k3` (i32)",
      "dispatch y",
      "the shape of intermediate `tmp`",
      "the shape of output `yT`",
    ]) {
      expect(all).toContain(what);
    }
  }, 120_000);
});
