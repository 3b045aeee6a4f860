/**
 * Property tests with hostile call objects: the generated dispatcher (and the interpreter) read
 * each property of a call at most once, so getters and Proxies that answer differently on a second
 * read cannot change a plan; they read only own properties, so a polluted Object.prototype or
 * Array.prototype has no effect; and anything at all in place of a call, a bag, a tensor, a shape,
 * a dtype (Symbols included) or an attribute gets a KernelCallError, never a TypeError.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { compile } from "../../src/api/compile.js";
import { loadConfig } from "../../src/plan/config.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { KernelModel } from "../../src/plan/dispatch-model.js";
import type { Call } from "../../src/model/plan.js";
import { outcome, type Outcome } from "../support/plan-outcome.js";
import { importDispatcher, repoRoot } from "../support/project-build.js";
import { rng } from "../support/rng.js";
import { pagedCall, pagedEdges, sparseCall, sparseEdges } from "./calls.js";

interface Kernel {
  readonly model: KernelModel;
  readonly plan: (c: unknown) => unknown;
  readonly calls: (seed: number) => Call;
}

const seed = Number(process.env.KERNELC_SEED ?? Date.now() % 1_000_000);
const runs = { seed, numRuns: 150 };

/** A call as plain data (what the hostile wrappers below answer on a first read). */
const plain = (c: Call): Call => JSON.parse(JSON.stringify(c)) as Call;

/**
 * Wraps a call so that every property is a getter (every shape a Proxy) that answers truly on
 * its first read and lies afterwards, counting reads per path.
 */
function liar(value: unknown, reads: Map<string, number>, path = "call"): unknown {
  const count = (p: string): number => {
    const n = (reads.get(p) ?? 0) + 1;
    reads.set(p, n);
    return n;
  };
  if (Array.isArray(value)) {
    const items = value.map((x, i) => liar(x, reads, `${path}[${i}]`));
    return new Proxy(items, {
      get(target, key, receiver) {
        if (typeof key === "string" && (key === "length" || /^\d+$/.test(key))) {
          const first = count(`${path}.${key}`) === 1;
          if (!first) return key === "length" ? 1 : 7;
        }
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  }
  if (typeof value !== "object" || value === null) return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    const inner = liar(v, reads, `${path}.${k}`);
    const lie = typeof v === "string" ? "bogus" : typeof v === "number" ? v + 1 : Array.isArray(v) ? [1] : null;
    Object.defineProperty(out, k, { enumerable: true, configurable: true, get: () => (count(`${path}.${k}`) === 1 ? inner : lie) });
  }
  return out;
}

/** Runs `f` with Object.prototype and Array.prototype polluted, restoring them before the result is inspected. */
function polluted(f: () => unknown): Outcome {
  const names = [
    "inputs",
    "outputs",
    "attrs",
    "shape",
    "dtype",
    "queryT",
    "keyT",
    "valueT",
    "slotMappingT",
    "outputT",
    "cosCacheT",
    "sinCacheT",
    "num_heads",
    "kv_num_heads",
    "scale",
    "do_rotary",
    "sparse_block_size",
    "is_causal",
  ];
  const values: Record<string, unknown> = {
    shape: [1, 2],
    dtype: "float16",
    scale: 0.5,
    num_heads: 32,
    kv_num_heads: 8,
    do_rotary: 1,
    sparse_block_size: 64,
    is_causal: 0,
  };
  const tensor = { shape: [2, 4096], dtype: "float16" };
  for (const n of names)
    Object.defineProperty(Object.prototype, n, { value: values[n] ?? tensor, enumerable: true, configurable: true, writable: true });
  for (let i = 0; i < 4; i++) Object.defineProperty(Array.prototype, i, { value: 5, enumerable: true, configurable: true, writable: true });
  let result: { value: unknown } | { error: unknown };
  try {
    result = { value: f() };
  } catch (error) {
    result = { error };
  } finally {
    for (const n of names) delete (Object.prototype as Record<string, unknown>)[n];
    for (let i = 0; i < 4; i++) delete (Array.prototype as unknown as Record<number, unknown>)[i];
  }
  return outcome(() => {
    if ("error" in result) throw result.error;
    return result.value;
  });
}

/** Removes properties a polluted prototype could stand in for: a dtype, a shape, a hole in a shape, an input, an attribute, a bag. */
function damage(call: Call, r: () => number): Call {
  const c = plain(call) as {
    inputs: Record<string, Record<string, unknown>>;
    outputs?: Record<string, unknown>;
    attrs?: Record<string, unknown>;
  };
  const ids = Object.keys(c.inputs);
  const id = ids[Math.floor(r() * ids.length)]!;
  const t = c.inputs[id]!;
  switch (Math.floor(r() * 7)) {
    case 0:
      delete t.dtype;
      break;
    case 1:
      delete t.shape;
      break;
    case 2: {
      const shape = t.shape as number[];
      if (shape.length > 1) delete shape[Math.floor(r() * shape.length)];
      break;
    }
    case 3:
      delete c.inputs[id];
      break;
    case 4:
      if (c.attrs) delete c.attrs[Object.keys(c.attrs)[0] ?? ""];
      break;
    case 5:
      delete c.outputs;
      break;
    default:
      delete c.attrs;
  }
  return c as unknown as Call;
}

describe("hostile call objects", () => {
  const kernels: Kernel[] = [];
  beforeAll(async () => {
    const result = await compile(loadConfig(repoRoot), { profiles: ["desktop-64k"] });
    const mod = await importDispatcher(result.files.get("desktop-64k/dispatcher.ts")!);
    const planners = mod.planners as Record<string, (c: unknown) => unknown>;
    const edges: Record<string, Call[]> = { PagedAttention: pagedEdges(), SparseAttention: sparseEdges() };
    for (const { model } of result.profiles[0]!.kernels) {
      const name = model.kernel.spec.name;
      const random = name === "PagedAttention" ? pagedCall : sparseCall;
      const fixed = edges[name]!;
      // Half edge calls, half random ones (most of them plan).
      const calls = (s: number): Call => (s % 2 === 0 ? fixed[(s >>> 1) % fixed.length]! : random(rng(s)));
      kernels.push({ model, plan: planners[name]!, calls });
    }
    console.log(`hostile-calls seed ${seed} (replay with KERNELC_SEED=${seed})`);
  }, 120_000);

  it("getters and Proxies that change their answer after the first read change nothing; nothing is read twice", () => {
    let plans = 0;
    fc.assert(
      fc.property(fc.nat(), fc.nat(1), (s, ki) => {
        const k = kernels[ki % kernels.length]!;
        const call = plain(k.calls(s));
        const want = outcome(() => k.plan(call));
        if ("plan" in want) plans++;
        const reads = new Map<string, number>();
        expect(outcome(() => k.plan(liar(call, reads)))).toEqual(want);
        expect([...reads].filter(([, n]) => n > 1)).toEqual([]);
        expect(outcome(() => interpretPlan(k.model, liar(call, new Map())))).toEqual(want);
      }),
      runs,
    );
    expect(plans).toBeGreaterThan(10);
  });

  it("a tensor's own shape and dtype are read when they are not enumerable, and inherited ones never", () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(1), fc.nat(3), (s, ki, form) => {
        const k = kernels[ki % kernels.length]!;
        const call = plain(k.calls(s)) as unknown as { inputs: Record<string, { shape: unknown; dtype: unknown }> };
        const want = outcome(() => k.plan(call));
        for (const [id, t] of Object.entries(call.inputs)) {
          if (t === null || typeof t !== "object") continue;
          // 0: both own and not enumerable; 1: shape so, dtype enumerable; 2: dtype so, shape enumerable;
          // 3: both inherited from the tensor's prototype (a missing shape, as if absent).
          const proto = form === 3 ? { shape: t.shape, dtype: t.dtype } : {};
          const hidden = Object.create(proto) as Record<string, unknown>;
          if (form !== 3) {
            if (form === 2) hidden.shape = t.shape;
            else Object.defineProperty(hidden, "shape", { value: t.shape });
            if (form === 1) hidden.dtype = t.dtype;
            else Object.defineProperty(hidden, "dtype", { value: t.dtype });
          }
          call.inputs[id] = hidden as { shape: unknown; dtype: unknown };
        }
        const got = outcome(() => k.plan(call));
        if (form !== 3) expect(got).toEqual(want);
        else expect(got).toMatchObject({ error: { kind: "invalid_call" } });
        expect(outcome(() => interpretPlan(k.model, call as unknown as Call))).toEqual(got);
      }),
      runs,
    );
  });

  it("a polluted Object.prototype or Array.prototype has no effect", () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(1), fc.nat(), (s, ki, d) => {
        const k = kernels[ki % kernels.length]!;
        const call = damage(k.calls(s), rng(d));
        const want = outcome(() => k.plan(call));
        expect(outcome(() => interpretPlan(k.model, call))).toEqual(want);
        expect(polluted(() => k.plan(call))).toEqual(want);
        expect(polluted(() => interpretPlan(k.model, call))).toEqual(want);
      }),
      runs,
    );
  });

  it("anything in place of a call, bag, tensor, shape, dtype or attribute is a KernelCallError", () => {
    const junk = fc.oneof(
      fc.anything({
        withBigInt: true,
        withNullPrototype: true,
        withBoxedValues: true,
        withMap: true,
        withSet: true,
        withDate: true,
        withTypedArray: true,
        withSparseArray: true,
      }),
      fc.constantFrom(
        Symbol("float16"),
        Symbol.iterator,
        () => 1,
        new Proxy({}, {}),
        new Proxy([1, 2], {}),
        Object.create(null),
        NaN,
        -0,
        Infinity,
        2 ** 53,
      ),
    );
    const where = fc.constantFrom("call", "inputs", "outputs", "attrs", "tensor", "shape", "dim", "dtype", "attr");
    fc.assert(
      fc.property(fc.nat(), fc.nat(1), where, junk, (s, ki, at, value) => {
        const k = kernels[ki % kernels.length]!;
        const c = plain(k.calls(s)) as unknown as {
          inputs: Record<string, { shape: unknown[]; dtype: unknown }>;
          outputs?: unknown;
          attrs?: Record<string, unknown>;
        };
        let call: unknown = c;
        const id = Object.keys(c.inputs)[0]!;
        if (at === "call") call = value;
        else if (at === "inputs" || at === "outputs" || at === "attrs") (c as Record<string, unknown>)[at] = value;
        else if (at === "tensor") (c.inputs as Record<string, unknown>)[id] = value;
        else if (at === "shape") (c.inputs[id] as Record<string, unknown>).shape = value;
        else if (at === "dim") c.inputs[id]!.shape[0] = value;
        else if (at === "dtype") c.inputs[id]!.dtype = value;
        else (c.attrs ??= {}).num_heads = value;
        // outcome() rethrows anything but a KernelCallError, which fails the property.
        const want = outcome(() => interpretPlan(k.model, call));
        expect(outcome(() => k.plan(call))).toEqual(want);
      }),
      runs,
    );
  });

  it("a list nested a million deep, a long list or a long string is a KernelCallError with a short message (the nested list overflowed the stack)", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    const values = [deep, new Array<string>(100_000).fill("x"), "f".repeat(1_000_000), [[[[[[[[[[1]]]]]]]]]]];
    for (const k of kernels) {
      for (const value of values) {
        for (const at of ["shape", "dtype", "attr"] as const) {
          const c = plain(k.calls(0)) as unknown as { inputs: Record<string, Record<string, unknown>>; attrs?: Record<string, unknown> };
          const id = Object.keys(c.inputs)[0]!;
          if (at === "attr") (c.attrs ??= {}).num_heads = value;
          else c.inputs[id]![at] = value;
          const want = outcome(() => interpretPlan(k.model, c));
          expect(outcome(() => k.plan(c))).toEqual(want);
          expect(want).toMatchObject({ error: { kind: "invalid_call" } });
          const message = (want as { error: { message: string } }).error.message;
          expect(message.length).toBeLessThan(3000);
        }
      }
    }
  });

  it("a long dtype string or unknown tensor or attribute name is cut in the message, the same in the dispatcher and the interpreter", () => {
    const long = (c: string): string => c.repeat(1_000_000);
    for (const k of kernels) {
      const cases: unknown[] = [];
      const base = (): {
        inputs: Record<string, Record<string, unknown>>;
        outputs?: Record<string, unknown>;
        attrs?: Record<string, unknown>;
      } => plain(k.calls(0)) as never;
      // Every input's dtype in turn: a type parameter's (not allowed, or clashing with an earlier tensor's) or a fixed one's.
      for (const id of Object.keys(base().inputs)) {
        const c = base();
        c.inputs[id]!.dtype = long("f");
        cases.push(c);
      }
      for (const bag of ["inputs", "outputs", "attrs"] as const) {
        const c = base() as Record<string, Record<string, unknown> | undefined>;
        (c[bag] ??= {})[long("k")] = bag === "attrs" ? 1 : { shape: [1], dtype: "float16" };
        cases.push(c);
      }
      for (const c of cases) {
        const want = outcome(() => interpretPlan(k.model, c as Call));
        expect(outcome(() => k.plan(c))).toEqual(want);
        expect(want).toMatchObject({ error: { kind: "invalid_call" } });
        const message = (want as { error: { message: string } }).error.message;
        expect(message.length).toBeLessThan(3000);
        expect(message).toMatch(/\u2026 \(1000000 characters\)/);
      }
    }
  });
});
