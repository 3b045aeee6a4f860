/**
 * The operator contract of docs/ops.md (shared docs), item by item, as the generated dispatcher
 * (what users run) and the interpreter apply it: every call ops.md defines and the kernels support
 * plans (the variant it takes, the scale the kernels receive, zero workgroups for T = 0), and every
 * call outside that support is rejected with an error that names what is wrong — never planned and
 * computed wrongly. The numbers themselves are checked on lavapipe (test/gpu).
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { Call, Plan, TensorDesc } from "../../src/model/plan.js";
import { interpretPlan } from "../../src/plan/interpret.js";
import type { KernelModel } from "../../src/plan/dispatch-model.js";
import { compileForCalls, type CompiledPlanner } from "../support/compiled-plan.js";
import { makePagedCase, type PagedCaseShape } from "../support/paged-cases.js";
import { outcome, type Outcome } from "../support/plan-outcome.js";
import { rng } from "../support/rng.js";
import { makeSparseCase, type SparseCase } from "../support/sparse-cases.js";

const PROFILE = "mobile-1024-f16";

const f16 = (shape: number[]): TensorDesc => ({ shape, dtype: "float16" });
const i32 = (shape: number[]): TensorDesc => ({ shape, dtype: "int32" });
const clone = (c: Call): Call => JSON.parse(JSON.stringify(c)) as Call;
type Mutable = { inputs: Record<string, TensorDesc | null>; outputs: Record<string, TensorDesc | null>; attrs: Record<string, unknown> };
const edit = (c: Call, f: (m: Mutable) => void): Call => {
  const m = clone(c) as unknown as Mutable;
  f(m);
  return m as unknown as Call;
};

interface Kernel {
  readonly planner: CompiledPlanner;
  readonly model: KernelModel;
}

/** The dispatcher's outcome, checked to be the interpreter's. */
function planOf(k: Kernel, call: Call): Outcome {
  const got = outcome(() => k.planner.plan(call));
  expect(got).toEqual(outcome(() => interpretPlan(k.model, call)));
  return got;
}

function expectPlan(k: Kernel, call: Call): Plan {
  const o = planOf(k, call);
  if (!("plan" in o)) throw new Error(`expected a plan, got ${o.error.kind}: ${o.error.message}`);
  return o.plan as Plan;
}

function expectRejected(k: Kernel, call: Call, kind: string, message: RegExp): void {
  const o = planOf(k, call);
  expect("error" in o ? o.error.kind : "a plan", JSON.stringify(o).slice(0, 300)).toBe(kind);
  if ("error" in o) expect(o.error.message).toMatch(message);
}

/**
 * Both kernels' key/value layout contract: a call without value, one without key, and each call of
 * `bad` (a query row or a key of the wrong width) is a `contract` error naming `qkvLayoutOk`.
 */
function expectKvLayoutRejected(k: Kernel, separate: () => Call, bad: readonly Call[]): void {
  const layout = /`qkvLayoutOk`: `separateKv or packedKv` is false/;
  const calls = [edit(separate(), (m) => delete m.inputs.valueT), edit(separate(), (m) => delete m.inputs.keyT), ...bad];
  for (const call of calls) expectRejected(k, call, "contract", layout);
}

/** The f32 value of the uniform field `scale` the attention pass receives. */
function scaleUniform(plan: Plan, pass: string): number {
  const p = plan.passes.find((x) => x.id === pass)!;
  const i = p.bindings.findIndex((b) => b.kind === "uniform");
  const words = p.resources[i] as readonly number[];
  // params_main is { batchSize: u32, scale: f32 }; params (attend) of SparseAttention has scale last of 7.
  const at = words.length >= 8 ? 6 : 1;
  return new Float32Array(new Uint32Array([words[at]!]).buffer)[0]!;
}

const modelOf = (c: CompiledPlanner, name: string): KernelModel =>
  c.build.profiles[0]!.kernels.find((k) => k.model.kernel.spec.name === name)!.model;

describe("PagedAttention: ops.md contract", () => {
  const shape = (G: number, H = 64, bs = 16): PagedCaseShape => ({
    name: `G${G}`,
    numHeads: 8,
    kvNumHeads: 8 / G,
    headSize: H,
    blockSize: bs,
    batch: 3,
    maxPast: 40,
    maxNew: 4,
  });
  const base = (G = 4, packed = false, slots = false): Call => makePagedCase(shape(G), packed, slots, rng(3)).call;
  let k: Kernel;
  beforeAll(async () => {
    const calls = [1, 2, 4, 8].flatMap((G) => [false, true].flatMap((p) => [false, true].map((s) => base(G, p, s))));
    const planner = await compileForCalls("PagedAttention", calls, PROFILE, { MAX_SPLITS: 1 });
    k = { planner, model: modelOf(planner, "PagedAttention") };
  }, 120_000);

  it("plans separate and packed QKV, with and without slot_mapping, for G = 1, 2, 4, 8", () => {
    for (const G of [1, 2, 4, 8])
      for (const packed of [false, true])
        for (const slots of [false, true])
          expect(expectPlan(k, base(G, packed, slots)).variant).toBe(`${packed ? "packed" : "separate"}_${slots ? "slot" : "derived"}`);
  });

  it("scale: absent or 0 reach the kernels as 0 (they use 1/sqrt(H)); any other value as its f32", () => {
    expect(scaleUniform(expectPlan(k, base()), "main")).toBe(0);
    for (const s of [0, 0.125, -0.5, 0.3])
      expect(
        scaleUniform(
          expectPlan(
            k,
            edit(base(), (m) => (m.attrs.scale = s)),
          ),
          "main",
        ),
      ).toBe(Math.fround(s));
  });

  it("is_causal: 1 (the default) plans, 0 is rejected", () => {
    expectPlan(
      k,
      edit(base(), (m) => (m.attrs.is_causal = 1)),
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.attrs.is_causal = 0)),
      "invalid_call",
      /attribute `is_causal` is 0; allowed values: 1/,
    );
  });

  it("T = 0 plans with zero workgroups in every pass (nothing runs)", () => {
    const call = edit(base(), (m) => {
      for (const id of ["queryT", "keyT", "valueT"]) m.inputs[id]!.shape[0] = 0;
      m.outputs.outputT!.shape[0] = 0;
    });
    const plan = expectPlan(k, call);
    for (const p of plan.passes) expect([p.x, p.y, p.z], p.id).toContain(0);
  });

  it("attributes and inputs ORT's PagedAttention has but this spec does not support are rejected", () => {
    for (const [attr, v] of [
      ["softcap", 30],
      ["local_window_size", 128],
      ["do_rotary", 1],
      ["rotary_interleaved", 1],
    ] as const)
      expectRejected(
        k,
        edit(base(), (m) => (m.attrs[attr] = v)),
        "invalid_call",
        new RegExp(`unknown attribute \`${attr}\``),
      );
    for (const id of ["cosCacheT", "sinCacheT"])
      expectRejected(
        k,
        edit(base(), (m) => (m.inputs[id] = f16([64, 32]))),
        "invalid_call",
        new RegExp(`unknown input \`${id}\``),
      );
  });

  it("key and value: both or neither; a query row that is neither N*H nor (N + 2*Nkv)*H is rejected", () => {
    expectKvLayoutRejected(k, () => base(), [
      edit(base(4, true), (m) => (m.inputs.queryT!.shape[1] -= 64)),
      edit(base(), (m) => (m.inputs.keyT!.shape[1] += 64)),
    ]);
  });

  it("head counts: kv_num_heads required, N % Nkv == 0, the caches' head axis is Nkv", () => {
    expectRejected(
      k,
      edit(base(), (m) => delete m.attrs.kv_num_heads),
      "invalid_call",
      /attribute `kv_num_heads` is required/,
    );
    expectRejected(
      k,
      edit(base(), (m) => delete m.attrs.num_heads),
      "invalid_call",
      /attribute `num_heads` is required/,
    );
    // N = 6 over Nkv = 4 (caches, key and value shaped for 4 KV heads).
    const g = makePagedCase({ ...shape(1), numHeads: 6, kvNumHeads: 4 }, false, false, rng(5)).call;
    expectRejected(k, g, "contract", /`attrs.num_heads % attrs.kv_num_heads == 0` is false/);
    expectRejected(
      k,
      edit(base(), (m) => (m.attrs.kv_num_heads = 4)),
      "contract",
      /`dim\(shapes.keyCacheT, 2\) == attrs.kv_num_heads` is false/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.valueCacheT!.shape[1] *= 2)),
      "contract",
      /sameShape\(shapes.valueCacheT, shapes.keyCacheT\)/,
    );
  });

  it("schedule shapes: past_seqlens [B], block_table [B, *], slot_mapping [T], output [T, N*H], caches as outputs alias the inputs' shapes", () => {
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.pastSeqlensT = i32([m.inputs.cumulativeSequenceLengthT!.shape[0]!]))),
      "contract",
      /`dim\(shapes.pastSeqlensT, 0\) == batchSize` is false/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.blockTableT!.shape[0] += 1)),
      "contract",
      /`dim\(shapes.blockTableT, 0\) == batchSize` is false/,
    );
    expectRejected(
      k,
      edit(base(4, false, true), (m) => (m.inputs.slotMappingT!.shape[0] += 1)),
      "contract",
      /`dim\(shapes.slotMappingT, 0\) == tokenCount` is false/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.outputs.outputT!.shape[1] += 4)),
      "invalid_call",
      /output `outputT` has shape/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.outputs.keyCacheT = f16([...m.inputs.keyCacheT!.shape.slice(0, 3), 32]))),
      "invalid_call",
      /output `keyCacheT` has shape/,
    );
    const aliased = edit(base(), (m) => {
      m.outputs.keyCacheT = m.inputs.keyCacheT;
      m.outputs.valueCacheT = m.inputs.valueCacheT;
    });
    expect(expectPlan(k, aliased).variant).toBe("separate_derived");
  });

  it("only float16 tensors and int32 schedules", () => {
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.queryT!.dtype = "float32")),
      "invalid_call",
      /float32/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.blockTableT!.dtype = "int64")),
      "invalid_call",
      /int64/,
    );
  });
});

describe("SparseAttention: ops.md contract", () => {
  const spec: SparseCase = {
    name: "contract",
    B: 2,
    S: 1,
    N: 4,
    Nkv: 2,
    H: 32,
    sbs: 16,
    maxCacheSeq: 64,
    layout: [2, 1, 2],
    past: [3, 40],
    rotary: "off",
    packed: false,
  };
  const base = (over: Partial<SparseCase> = {}): Call => makeSparseCase({ ...spec, ...over }, rng(7)).call;
  let k: Kernel;
  beforeAll(async () => {
    const calls = [
      base(),
      base({ packed: true }),
      base({ rotary: "split" }),
      base({ rotary: "interleaved", rotaryDim: 16 }),
      base({ packed: true, rotary: "split", rotaryDim: 16 }),
      base({ N: 8, Nkv: 1 }),
    ];
    const planner = await compileForCalls("SparseAttention", calls, PROFILE, { MAX_SPLITS: 1 });
    k = { planner, model: modelOf(planner, "SparseAttention") };
  }, 120_000);

  it("plans separate and packed QKV, with and without rotary (full and partial, split and interleaved), G = 2 and 8", () => {
    expect(expectPlan(k, base()).variant).toBe("separate");
    expect(expectPlan(k, base({ packed: true })).variant).toBe("packed");
    expect(expectPlan(k, base({ rotary: "split" })).variant).toBe("separate_rotary");
    expect(expectPlan(k, base({ rotary: "interleaved", rotaryDim: 16 })).variant).toBe("separate_rotary");
    expect(expectPlan(k, base({ packed: true, rotary: "split", rotaryDim: 16 })).variant).toBe("packed_rotary");
    expect(expectPlan(k, base({ N: 8, Nkv: 1 })).variant).toBe("separate");
  });

  it("scale: 0 (the default) reaches the kernels as 0 (they use 1/sqrt(H)); any other value as its f32", () => {
    expect(
      scaleUniform(
        expectPlan(
          k,
          edit(base(), (m) => delete m.attrs.scale),
        ),
        "attend",
      ),
    ).toBe(0);
    for (const s of [0, 0.3, -0.25])
      expect(
        scaleUniform(
          expectPlan(
            k,
            edit(base(), (m) => (m.attrs.scale = s)),
          ),
          "attend",
        ),
      ).toBe(Math.fround(s));
  });

  it("do_rotary needs cos_cache and sin_cache [*, R/2] with R/2 a multiple of 8 and R <= H; without it they must be absent", () => {
    const rot = base({ rotary: "split" });
    expectRejected(
      k,
      edit(rot, (m) => {
        delete m.inputs.cosCacheT;
        delete m.inputs.sinCacheT;
      }),
      "contract",
      /`rotaryOk`: `present.cosCacheT` is false/,
    );
    expectRejected(
      k,
      edit(rot, (m) => delete m.inputs.sinCacheT),
      "contract",
      /`rotaryOk`: `present.sinCacheT` is false/,
    );
    expectRejected(
      k,
      edit(rot, (m) => (m.attrs.do_rotary = 0)),
      "contract",
      /`rotaryOk`: `not present.cosCacheT` is false/,
    );
    expectRejected(
      k,
      edit(rot, (m) => (m.inputs.cosCacheT = m.inputs.sinCacheT = f16([64, 24]))),
      "contract",
      /`rotaryDim <= headSize` is false/,
    );
    expectRejected(
      k,
      edit(rot, (m) => (m.inputs.cosCacheT = m.inputs.sinCacheT = f16([64, 12]))),
      "contract",
      /`rotaryHalf % 8 == 0` is false/,
    );
    expectRejected(
      k,
      edit(rot, (m) => (m.inputs.sinCacheT = f16([64, 8]))),
      "contract",
      /sameShape\(shapes.sinCacheT, shapes.cosCacheT\)/,
    );
    expectRejected(
      k,
      edit(rot, (m) => (m.attrs.do_rotary = 2)),
      "invalid_call",
      /attribute `do_rotary` is 2; allowed values: 0, 1/,
    );
    expectRejected(
      k,
      edit(rot, (m) => (m.attrs.rotary_interleaved = 2)),
      "invalid_call",
      /attribute `rotary_interleaved` is 2; allowed values: 0, 1/,
    );
  });

  it("do_rotary: cos_cache and sin_cache need a row for every token of the call (the last one's position is at least S - 1)", () => {
    const rot = base({ S: 4, rotary: "split" });
    expect(expectPlan(k, rot).variant).toBe("separate_rotary");
    // Four rows cover the positions of a prompt of four tokens; whether they cover a decode's
    // positions (past_b + s) depends on key_total_sequence_lengths, data the plan does not read.
    expect(
      expectPlan(
        k,
        edit(rot, (m) => (m.inputs.cosCacheT = m.inputs.sinCacheT = f16([4, 16]))),
      ).variant,
    ).toBe("separate_rotary");
    expectRejected(
      k,
      edit(rot, (m) => (m.inputs.cosCacheT = m.inputs.sinCacheT = f16([3, 16]))),
      "contract",
      /`rotaryOk`: `dim\(shapes\.cosCacheT, 0\) >= seqLen` is false \(dim\(shapes\.cosCacheT, 0\) = 3, seqLen = 4\)/,
    );
  });

  it("head size: a multiple of 8, of 16 with rotary", () => {
    expectRejected(k, base({ H: 36 }), "contract", /`headSize % 8 == 0` is false/);
    expectRejected(k, base({ H: 40, rotary: "split", rotaryDim: 32 }), "contract", /headSize % 16 == 0/);
  });

  it("heads and layouts: N % Nkv == 0, N % num_layout == 0, sparse_block_size required and positive", () => {
    expectRejected(k, base({ N: 6, Nkv: 4, layout: [1, 1, 2] }), "contract", /`attrs.num_heads % attrs.kv_num_heads == 0` is false/);
    expectRejected(k, base({ layout: [3, 1, 2] }), "contract", /`attrs.num_heads % numLayout == 0` is false/);
    expectRejected(
      k,
      edit(base(), (m) => delete m.attrs.sparse_block_size),
      "invalid_call",
      /attribute `sparse_block_size` is required/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.attrs.sparse_block_size = 0)),
      "contract",
      /`attrs.sparse_block_size > 0` is false/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.attrs.local_window_size = 4)),
      "invalid_call",
      /unknown attribute `local_window_size`/,
    );
  });

  it("CSR shapes: [L, max_blocks + 1] and [L, max_nnz] with max_nnz <= max_blocks²", () => {
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.blockColIndicesT!.shape[0] += 1)),
      "contract",
      /`dim\(shapes.blockColIndicesT, 0\) == numLayout` is false/,
    );
    const mb = base().inputs.blockRowIndicesT!.shape[1]! - 1;
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.blockColIndicesT!.shape[1] = mb * mb + 1)),
      "contract",
      /`maxNnz <= maxBlocks \* maxBlocks` is false/,
    );
  });

  it("lengths and caches: total_sequence_length [1], key_total_sequence_lengths [B], caches [B, Nkv, M, H], present_* alias past_*", () => {
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.totalSequenceLengthT = i32([2]))),
      "contract",
      /`dim\(shapes.totalSequenceLengthT, 0\) == 1` is false/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.keyTotalSequenceLengthsT = i32([3]))),
      "contract",
      /`dim\(shapes.keyTotalSequenceLengthsT, 0\) == batchSize` is false/,
    );
    expectRejected(
      k,
      edit(base(), (m) => {
        m.inputs.pastKeyT!.shape[0] = 3;
        m.inputs.pastValueT!.shape[0] = 3;
      }),
      "contract",
      /`dim\(shapes.pastKeyT, 0\) == batchSize` is false/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.inputs.pastValueT!.shape[2] = 32)),
      "contract",
      /sameShape\(shapes.pastValueT, shapes.pastKeyT\)/,
    );
    expectRejected(
      k,
      edit(base(), (m) => (m.outputs.pastKeyT = f16([2, 2, 32, 32]))),
      "invalid_call",
      /output `pastKeyT` has shape \[2, 2, 32, 32\], expected \[2, 2, 64, 32\]/,
    );
    const aliased = edit(base(), (m) => {
      m.outputs.pastKeyT = m.inputs.pastKeyT;
      m.outputs.pastValueT = m.inputs.pastValueT;
    });
    expect(expectPlan(k, aliased).variant).toBe("separate");
  });

  it("key and value: both or neither; a query row that is neither N*H nor (N + 2*Nkv)*H is rejected", () => {
    expectKvLayoutRejected(k, () => base(), [edit(base({ packed: true }), (m) => (m.inputs.queryT!.shape[2] -= 32))]);
  });
});
