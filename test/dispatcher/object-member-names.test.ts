/**
 * Tensor ids and attribute names that every JavaScript object inherits (`toString`, `valueOf`,
 * `isPrototypeOf`, …; `constructor` is refused as a spec key) are ordinary ids in a spec. The generated call type must still let a call
 * leave such an optional tensor or attribute out: TypeScript checks an object literal's inherited
 * `toString: () => string` against the key's declared type, so a plain `TensorDesc | undefined`
 * made every call that omits it a compile error. The planners read a bag's own keys only, so an
 * inherited member is an absent tensor or attribute, as the interpreter has it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { Call } from "../../src/model/plan.js";
import { coreProject } from "../support/project-build.js";
import { typeErrors } from "../support/strict-consumer.js";
import { onePassVariants, perElementShader } from "../support/one-pass.js";

const spec = {
  domain: "com.example",
  name: "Members",
  sinceVersion: 1,
  inputs: {
    xT: { onnx: "x", dtype: "float32", rank: 1 },
    toString: { onnx: "bias", dtype: "float32", rank: 1, optional: true },
  },
  outputs: {
    yT: { onnx: "y", dtype: "float32", rank: 1, shape: "shapes.xT" },
    valueOf: { onnx: "extra", dtype: "float32", rank: 1, optional: true },
  },
  attributes: { hasOwnProperty: { default: 2 }, isPrototypeOf: {} },
  derive: {
    n: "dim(shapes.xT, 0)",
    biased: "1 if present.toString else 0",
    scale: "attrs.hasOwnProperty",
    offset: 'attrs.isPrototypeOf if has(attrs, "isPrototypeOf") else 0',
  },
  bindings: {
    x: { arg: "xT", elementType: "f32" },
    y: { arg: "yT", elementType: "f32" },
    params: {
      struct: [
        { name: "n", type: "u32", value: "n" },
        { name: "biased", type: "u32", value: "biased" },
        { name: "scale", type: "f32", value: "scale" },
        { name: "offset", type: "f32", value: "offset" },
      ],
    },
  },
  variants: onePassVariants("Members", "m.wgsl.jinja"),
};

const template = perElementShader("y[gid.x] = x[gid.x] * params.scale + params.offset + f32(params.biased);");

/** Calls a consumer writes: the optional tensors, output and attribute left out, then given. */
const consumer = [
  'import { planners } from "./dispatcher.js";',
  'const x = { shape: [4], dtype: "float32" } as const;',
  "export const a = planners.Members({ inputs: { xT: x } });",
  "export const b = planners.Members({ inputs: { xT: x, toString: x }, outputs: { yT: x, valueOf: x }, attrs: { hasOwnProperty: 3, isPrototypeOf: 1 } });",
  "export const c = planners.Members({ inputs: { xT: x }, attrs: {} });",
  "// @ts-expect-error a misspelled tensor id is still a compile error",
  "export const d = planners.Members({ inputs: { xT: x, toStrin: x } });",
  "",
].join("\n");

describe("tensor ids and attribute names that objects inherit", async () => {
  const { root, result, source, both } = await coreProject("object-members", {
    "specs/Members.json": JSON.stringify(spec, null, 2),
    "templates/m.wgsl.jinja": template,
  });

  it("build without errors", () => {
    expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(source).toBeDefined();
  });

  it("can be left out of a call, or given, under a strict consumer's flags", () => {
    fs.writeFileSync(path.join(root, "package.json"), JSON.stringify({ type: "module" }));
    fs.writeFileSync(path.join(root, "dispatcher.ts"), source!);
    const file = path.join(root, "use.ts");
    fs.writeFileSync(file, consumer);
    const errors = typeErrors([file]);
    expect(errors).toEqual([]);
  });

  it("plan as the interpreter does: an inherited member is absent, an own one is read", () => {
    const x = { shape: [4], dtype: "float32" };
    const calls: Call[] = [
      { inputs: { xT: x } },
      { inputs: { xT: x, toString: x }, attrs: { hasOwnProperty: 3, isPrototypeOf: 1 } },
      { inputs: { xT: x }, outputs: { yT: x, valueOf: x }, attrs: {} },
    ];
    const words: unknown[] = [];
    for (const call of calls) {
      const generated = both("Members", call);
      expect(generated.error, JSON.stringify(call)).toBeUndefined();
      words.push(JSON.parse(JSON.stringify(generated.plan)).passes[0].resources[2]);
    }
    // n, biased, scale (f32 bits), offset (f32 bits).
    const f = (v: number): number => new Uint32Array(new Float32Array([v]).buffer)[0]!;
    expect(words).toEqual([
      [4, 0, f(2), f(0)],
      [4, 1, f(3), f(1)],
      [4, 0, f(2), f(0)],
    ]);
  });
});
