/**
 * Call generators for the differential and property tests: random PagedAttention and
 * SparseAttention calls (mostly valid, near the configured instances, every variant reachable,
 * with random faults), a generic one for any kernel, and fixed calls at the edges of the kernels'
 * conditions (`==` and `<=` limits met exactly and missed by one, zero and maximum sizes).
 */
import type { KernelModel } from "../../src/plan/dispatch-model.js";
import type { Call, TensorDesc } from "../../src/model/plan.js";

type R = () => number;
type Tensors = Record<string, TensorDesc | null>;
type Attrs = Record<string, number | string | number[]>;

const pickOf =
  (r: R) =>
  <T>(xs: readonly T[]): T =>
    xs[Math.floor(r() * xs.length)]!;

const f16 = (shape: number[]): TensorDesc => ({ shape, dtype: "float16" });
const i32 = (shape: number[]): TensorDesc => ({ shape, dtype: "int32" });

/**
 * Values of `scale` (an f32 uniform field in both kernels) at the edges of f32's range: past it on
 * either side (an error), the first double that rounds to Infinity (an error), the last one that
 * rounds to the largest f32 (a plan), and values that round to a subnormal, to zero and to minus
 * zero (-1e-50: a literal -0 would read as 0 where a test passes calls as JSON).
 */
const F32_EDGES = [1e39, -1e39, 3.4028235677973366e38, 3.4028235677973362e38, -3.4028235677973362e38, 1e-45, 1e-50, -1e-50];

/** Values given for a 0/1 flag attribute: the flags themselves, and a bool, a string and 2 (each an invalid_call). */
const FLAG_EDGES: readonly unknown[] = [0, 1, true, false, "true", 2];

/** The knobs of a PagedAttention call; `pagedFrom` turns them into a call. */
interface PagedShape {
  nh: number;
  kvh: number;
  hs: number;
  bs: number;
  batch: number;
  tokens: number;
  maxBlocks: number;
  packed: boolean;
  slots: boolean;
  omitOutput?: boolean;
}

function pagedFrom(p: PagedShape): { inputs: Tensors; outputs: Tensors; attrs: Attrs } {
  const inputs: Tensors = {
    queryT: f16([p.tokens, p.packed ? (p.nh + 2 * p.kvh) * p.hs : p.nh * p.hs]),
    keyCacheT: f16([64, p.bs, p.kvh, p.hs]),
    valueCacheT: f16([64, p.bs, p.kvh, p.hs]),
    cumulativeSequenceLengthT: i32([p.batch + 1]),
    pastSeqlensT: i32([p.batch]),
    blockTableT: i32([p.batch, p.maxBlocks]),
  };
  if (!p.packed) {
    inputs.keyT = f16([p.tokens, p.kvh * p.hs]);
    inputs.valueT = f16([p.tokens, p.kvh * p.hs]);
  }
  if (p.slots) inputs.slotMappingT = i32([p.tokens]);
  const outputs: Tensors = p.omitOutput ? {} : { outputT: f16([p.tokens, p.nh * p.hs]) };
  return { inputs, outputs, attrs: { num_heads: p.nh, kv_num_heads: p.kvh } };
}

/** A random PagedAttention call: mostly valid, on the configured instances, with random faults. */
export function pagedCall(r: R): Call {
  const pick = pickOf(r);
  const [nh, kvh, hs] = pick([
    [32, 8, 128],
    [32, 32, 128],
    [28, 4, 128],
    [32, 32, 96],
    [8, 2, 64],
    [4, 4, 64],
    [6, 4, 128],
    [32, 0, 128],
  ] as const);
  const batch = 1 + Math.floor(r() * 5);
  // Short key ceilings (few blocks) and many tokens make the single-pass variants win; the rest split.
  const single = r() < 0.35;
  const tokens = single && r() < 0.5 ? 300 + Math.floor(r() * 200) : batch * (1 + Math.floor(r() * 3)) + (r() < 0.05 ? 1 : 0);
  const maxBlocks = single ? 1 + Math.floor(r() * 7) : 1 + Math.floor(r() * 300);
  const { inputs, outputs, attrs } = pagedFrom({
    nh,
    kvh,
    hs,
    bs: pick([16, 32, 8]),
    batch,
    tokens,
    maxBlocks,
    packed: r() < 0.5,
    slots: r() < 0.45,
    omitOutput: r() < 0.1,
  });
  if (r() < 0.03) inputs.queryT = { shape: inputs.queryT!.shape, dtype: "float32" };
  if (r() < 0.03) inputs.keyCacheT = f16([64, 16, kvh, hs + 1]);
  if (r() < 0.03) inputs.pastSeqlensT = i32([batch + 1]);
  if (!inputs.queryT || r() < 0.03) inputs.queryT = f16([tokens]);
  if (inputs.keyT && r() < 0.05) delete inputs.valueT;
  if (inputs.slotMappingT && r() < 0.05) inputs.slotMappingT = i32([tokens + 1]);
  if (r() < 0.02) delete inputs.blockTableT;
  if (r() < 0.02) inputs.bogusT = i32([1]);
  if (r() < 0.5) attrs.scale = pick([0, 0.125, 0.088388, 1.5]);
  if (r() < 0.03) attrs.is_causal = 0;
  if (r() < 0.02) attrs.num_heads = "32";
  if (r() < 0.02) delete attrs.kv_num_heads;
  if (r() < 0.02) attrs.num_heads = 32.5;
  // A given output with a shape other than the spec's.
  if (outputs.outputT && r() < 0.04) outputs.outputT = f16([tokens, nh * hs + 1]);
  return { inputs, outputs, attrs };
}

/** The knobs of a SparseAttention call; `sparseFrom` turns them into a call. */
interface SparseShape {
  nh: number;
  kvh: number;
  hs: number;
  batch: number;
  seq: number;
  cacheSeq: number;
  layouts: number;
  maxBlocks: number;
  nnz: number;
  block: number;
  packed: boolean;
  rotary: boolean;
  rotaryHalf: number;
  omitOutput?: boolean;
}

function sparseFrom(p: SparseShape): { inputs: Tensors; outputs: Tensors; attrs: Attrs } {
  const qHidden = p.nh * p.hs;
  const kvHidden = p.kvh * p.hs;
  const inputs: Tensors = {
    queryT: f16([p.batch, p.seq, p.packed ? qHidden + 2 * kvHidden : qHidden]),
    pastKeyT: f16([p.batch, p.kvh, p.cacheSeq, p.hs]),
    pastValueT: f16([p.batch, p.kvh, p.cacheSeq, p.hs]),
    blockRowIndicesT: i32([p.layouts, p.maxBlocks + 1]),
    blockColIndicesT: i32([p.layouts, p.nnz]),
    totalSequenceLengthT: i32([1]),
    keyTotalSequenceLengthsT: i32([p.batch]),
  };
  if (!p.packed) {
    inputs.keyT = f16([p.batch, p.seq, kvHidden]);
    inputs.valueT = f16([p.batch, p.seq, kvHidden]);
  }
  if (p.rotary) {
    inputs.cosCacheT = f16([p.cacheSeq, p.rotaryHalf]);
    inputs.sinCacheT = f16([p.cacheSeq, p.rotaryHalf]);
  }
  const outputs: Tensors = p.omitOutput ? {} : { outputT: f16([p.batch, p.seq, qHidden]) };
  const attrs: Attrs = { num_heads: p.nh, kv_num_heads: p.kvh, sparse_block_size: p.block, do_rotary: p.rotary ? 1 : 0 };
  return { inputs, outputs, attrs };
}

/** A random SparseAttention call: mostly valid and on the configured instances (so it plans), with random faults. */
export function sparseCall(r: R): Call {
  const pick = pickOf(r);
  const onInstance = r() < 0.85;
  const [nh, kvh, hs] = onInstance
    ? [32, 8, 128]
    : pick([
        [32, 8, 128],
        [16, 16, 64],
        [32, 1, 128],
        [24, 8, 136],
      ] as const);
  const maxBlocks = pick([1, 2, 16, 128]);
  const p: SparseShape = {
    nh,
    kvh,
    hs,
    batch: 1 + Math.floor(r() * 2),
    // Short sequences split the keys; from 16 tokens on a single pass does.
    seq: pick([1, 2, 4, 16, 64]),
    cacheSeq: onInstance ? 8192 : pick([8192, 256, 1]),
    layouts: pick([1, 2, 4, 8]),
    maxBlocks,
    nnz: Math.max(1, Math.floor(r() * maxBlocks * maxBlocks) + (r() < 0.05 ? maxBlocks * maxBlocks : 0)),
    block: onInstance ? 64 : pick([64, 32, 0]),
    packed: r() < 0.5,
    rotary: r() < 0.5,
    rotaryHalf: onInstance ? 64 : pick([64, 8, 12, 72]),
    omitOutput: r() < 0.1,
  };
  const { inputs, outputs, attrs } = sparseFrom(p);
  if (r() < 0.3) attrs.scale = pick([0, 0.088388, 0.125]);
  if (r() < 0.2) attrs.rotary_interleaved = pick([0, 1, 2]);
  if (r() < 0.03) attrs.do_rotary = 2;
  if (r() < 0.03) delete attrs.sparse_block_size;
  if (r() < 0.03) inputs.totalSequenceLengthT = i32([2]);
  if (r() < 0.03) inputs.pastValueT = f16([p.batch, p.kvh, p.cacheSeq + 1, p.hs]);
  if (r() < 0.03) delete inputs.cosCacheT;
  if (r() < 0.02) inputs.keyTotalSequenceLengthsT = { shape: [p.batch], dtype: "int64" };
  if (outputs.outputT && r() < 0.04) outputs.outputT = f16([p.batch, p.seq + 1, nh * hs]);
  return { inputs, outputs, attrs };
}

/** A random call for any kernel: random shapes of the declared ranks from a small pool of sizes. */
export function genericCall(model: KernelModel, r: R): Call {
  const pool = [0, 1, 2, 3, 4, 8, 16, 32, 64, 128];
  const inputs: Tensors = {};
  const outputs: Tensors = {};
  const spec = model.kernel.spec;
  const dtypeOf = (param: string): string => spec.typeConstraints.find((t) => t.name === param)?.types[0] ?? param;
  for (const i of spec.inputs) {
    if (i.optional && r() < 0.4) continue;
    const rank = i.rank ?? 1 + Math.floor(r() * 3);
    inputs[i.name] = {
      shape: Array.from({ length: r() < 0.05 ? rank + 1 : rank }, () => pool[Math.floor(r() * pool.length)]!),
      dtype: dtypeOf(i.dtype),
    };
  }
  for (const o of spec.outputs) {
    if (spec.inputs.some((i) => i.name === o.name) || r() < 0.2) continue;
    const rank = o.rank ?? 2;
    outputs[o.name] = { shape: Array.from({ length: rank }, () => pool[Math.floor(r() * pool.length)]!), dtype: dtypeOf(o.dtype) };
  }
  const attrs: Attrs = {};
  for (const a of spec.attributes) if (r() < 0.8) attrs[a.name] = Math.floor(r() * 5);
  return { inputs, outputs, attrs };
}

const MAX = Number.MAX_SAFE_INTEGER;

/** A call with one field changed, for edge lists. */
const variantOf = (
  c: { inputs: Tensors; outputs: Tensors; attrs: Attrs },
  f: (c: { inputs: Tensors; outputs: Tensors; attrs: Attrs }) => void,
): Call => {
  f(c);
  return c;
};

/**
 * PagedAttention calls at the edges of its conditions: every variant's choice made and missed by
 * one (split-K by key ceiling and by base workgroups), `tokenCount <= 65535` and
 * `attrs.num_heads <= 65535` met exactly and missed by one, the `==` shape checks met and missed
 * by one, zero-sized and maximum-sized dimensions.
 */
export function pagedEdges(): Call[] {
  const base: PagedShape = { nh: 32, kvh: 8, hs: 128, bs: 16, batch: 2, tokens: 2, maxBlocks: 64, packed: false, slots: false };
  const out: Call[] = [];
  for (const packed of [false, true]) {
    for (const slots of [false, true]) {
      // Key ceiling maxBlocks * 16 against SPLIT_MIN_KEYS (128) * 2: 15 blocks cannot split, 16 can.
      for (const maxBlocks of [1, 15, 16, 17, 300]) out.push(pagedFrom({ ...base, packed, slots, maxBlocks }));
      // Base workgroups tokens * kv_num_heads against the split target: many tokens make one split.
      for (const tokens of [255, 256, 257, 511, 512, 513, 1024]) out.push(pagedFrom({ ...base, packed, slots, tokens, batch: 1 }));
    }
  }
  for (const tokens of [0, 1, 65535, 65536, MAX]) out.push(pagedFrom({ ...base, tokens }));
  for (const nh of [65528, 65535, 65536]) out.push(pagedFrom({ ...base, nh, kvh: nh, tokens: 1 }));
  for (const maxBlocks of [0, MAX]) out.push(pagedFrom({ ...base, maxBlocks }));
  for (const batch of [0, 1, MAX - 1]) out.push(pagedFrom({ ...base, batch }));
  for (const bs of [0, 1, MAX]) out.push(pagedFrom({ ...base, bs }));
  for (const hs of [0, 4, 6, MAX]) out.push(pagedFrom({ ...base, hs }));
  out.push(variantOf(pagedFrom(base), (c) => (c.outputs.outputT = f16([2, 32 * 128 - 1]))));
  out.push(variantOf(pagedFrom(base), (c) => (c.outputs.outputT = f16([3, 32 * 128]))));
  out.push(variantOf(pagedFrom(base), (c) => (c.inputs.keyT = f16([2, 8 * 128 + 1]))));
  out.push(variantOf(pagedFrom(base), (c) => (c.inputs.pastSeqlensT = i32([3]))));
  out.push(variantOf(pagedFrom(base), (c) => (c.inputs.blockTableT = i32([3, 64]))));
  out.push(variantOf(pagedFrom(base), (c) => (c.inputs.valueCacheT = f16([64, 16, 8, 127]))));
  out.push(variantOf(pagedFrom(base), (c) => (c.attrs.kv_num_heads = 7)));
  out.push(variantOf(pagedFrom(base), (c) => (c.attrs.num_heads = 0)));
  out.push(variantOf(pagedFrom({ ...base, slots: true }), (c) => (c.inputs.slotMappingT = i32([3]))));
  out.push(pagedFrom({ ...base, omitOutput: true }));
  out.push(pagedFrom({ ...base, packed: true, omitOutput: true }));
  for (const packed of [false, true])
    for (const scale of F32_EDGES) out.push(variantOf(pagedFrom({ ...base, packed }), (c) => (c.attrs.scale = scale)));
  for (const flag of FLAG_EDGES) out.push(variantOf(pagedFrom(base), (c) => ((c.attrs as Record<string, unknown>).is_causal = flag)));
  return out;
}

/**
 * SparseAttention calls at the edges of its conditions: `maxNnz <= maxBlocks * maxBlocks`,
 * `rotaryDim <= headSize` and `qPerKv <= 32` met exactly and missed by one, `maxNnz >= 1`,
 * `maxCacheSeq >= 1`, split and single-pass choices either side of the split target, zero and
 * maximum sizes, output shapes given right, wrong by one, and left out.
 */
export function sparseEdges(): Call[] {
  const base: SparseShape = {
    nh: 32,
    kvh: 8,
    hs: 128,
    batch: 1,
    seq: 1,
    cacheSeq: 8192,
    layouts: 2,
    maxBlocks: 4,
    nnz: 16,
    block: 64,
    packed: false,
    rotary: false,
    rotaryHalf: 64,
  };
  const out: Call[] = [];
  for (const packed of [false, true]) {
    for (const rotary of [false, true]) {
      // Base workgroups batch * seq * 8 against the split target (128): 16 tokens is one split.
      for (const seq of [1, 15, 16, 17]) out.push(sparseFrom({ ...base, packed, rotary, seq }));
      for (const maxBlocks of [1, 2]) out.push(sparseFrom({ ...base, packed, rotary, maxBlocks, nnz: maxBlocks * maxBlocks }));
    }
  }
  for (const nnz of [0, 1, 16, 17]) out.push(sparseFrom({ ...base, nnz }));
  for (const rotaryHalf of [56, 64, 72]) out.push(sparseFrom({ ...base, rotary: true, rotaryHalf }));
  for (const [nh, kvh] of [
    [32, 1],
    [33, 1],
    [64, 2],
    [66, 2],
  ] as const)
    out.push(sparseFrom({ ...base, nh, kvh, layouts: 1 }));
  for (const cacheSeq of [0, 1, MAX]) out.push(sparseFrom({ ...base, cacheSeq }));
  for (const seq of [0, 65535, 65536, MAX]) out.push(sparseFrom({ ...base, seq }));
  for (const batch of [0, MAX]) out.push(sparseFrom({ ...base, batch }));
  for (const hs of [0, 8, 120, MAX]) out.push(sparseFrom({ ...base, hs }));
  out.push(variantOf(sparseFrom(base), (c) => (c.outputs.outputT = f16([1, 1, 32 * 128 + 1]))));
  out.push(variantOf(sparseFrom(base), (c) => (c.inputs.keyTotalSequenceLengthsT = i32([2]))));
  out.push(variantOf(sparseFrom(base), (c) => (c.attrs.do_rotary = 1)));
  out.push(variantOf(sparseFrom({ ...base, rotary: true }), (c) => (c.attrs.do_rotary = 0)));
  out.push(sparseFrom({ ...base, omitOutput: true }));
  out.push(sparseFrom({ ...base, packed: true, rotary: true, omitOutput: true }));
  // The output's shape overflows (an eval error before the contract); a rotary cache past the binding limit.
  out.push(
    variantOf(sparseFrom({ ...base, nh: 2 ** 50, kvh: 1, layouts: 1, omitOutput: true }), (c) => (c.inputs.queryT = f16([1, 1, 128]))),
  );
  for (const rows of [2 ** 20, 2 ** 31]) {
    out.push(variantOf(sparseFrom({ ...base, rotary: true }), (c) => (c.inputs.cosCacheT = c.inputs.sinCacheT = f16([rows, 64]))));
  }
  for (const packed of [false, true])
    for (const scale of F32_EDGES) out.push(variantOf(sparseFrom({ ...base, packed }), (c) => (c.attrs.scale = scale)));
  for (const flag of FLAG_EDGES) {
    out.push(variantOf(sparseFrom({ ...base, rotary: true }), (c) => ((c.attrs as Record<string, unknown>).rotary_interleaved = flag)));
  }
  return out;
}
