/**
 * PagedAttention test cases, shared by the GPU tests (test/gpu/paged-attention.test.ts, Dawn on
 * lavapipe) and the browser test (test/browser): random f16 inputs built like ORT's tests, every
 * cache slot that no visible key reads filled with garbage, and the CPU reference of a case.
 */
import { pagedAttentionReference, type PagedAttentionResult } from "../../src/reference/paged-attention.js";
import { f16ArrayToF32, f16ToF32, f32ArrayToF16, f32ToF16 } from "../../src/runtime/f16.js";
import type { Call, TensorDesc } from "../../src/model/plan.js";
import { F16_GARBAGE } from "./gpu.js";

/** fp16 attention: |got - want| <= TOL + TOL * |want| (atol = rtol = 5e-3). */
export const ATTENTION_TOL = 5e-3;

/**
 * Amplitude of query and key components (uniform in [-A, A]): with the 1/sqrt(H) scale the logits
 * have standard deviation A^2 / 3 = 4, as in trained models, so each softmax is peaked (a few keys
 * carry most of the weight) and a wrong scale, key or mask changes the output far beyond the tolerance.
 */
export const QK_AMPLITUDE = 3.5;

/** A fixed batch instead of a random one: each sequence's past length and new tokens (1: decode, more: prefill). */
export interface PagedBatch {
  readonly past: readonly number[];
  readonly newTokens: readonly number[];
}

export interface PagedCaseShape {
  readonly name: string;
  readonly numHeads: number;
  readonly kvNumHeads: number;
  readonly headSize: number;
  readonly blockSize: number;
  /** Largest batch: each run draws the batch size from 1..batch. */
  readonly batch: number;
  readonly maxPast: number;
  readonly maxNew: number;
  /**
   * Fewest block_table columns (default 1). The split-K variants need at least 2 * SPLIT_MIN_KEYS
   * keys of table (maxBlocks * blockSize); with one-key blocks a small random batch has fewer, and
   * the planner then rightly picks the single pass.
   */
  readonly minTableBlocks?: number;
  /** Head size not a multiple of 4: only the single-pass variants apply (split-K needs vec4 rows). */
  readonly scalarOnly?: boolean;
  /** Corrupt some block_table and slot_mapping entries that are used (negative, past the cache, huge). */
  readonly hostile?: boolean;
  /**
   * Amplitude of the query and key values (default QK_AMPLITUDE: peaked softmax, as in trained
   * models). A small one gives a nearly flat softmax, where every key's V row weighs in: what a
   * case needs to see a split-K merge that drops some splits.
   */
  readonly qkAmplitude?: number;
  /**
   * Amplitude of the value components (new V and the value cache; default 1). A large one (near
   * the f16 maximum) checks that the weighted sums are accumulated in f32, not f16; outputs then
   * compare at a tolerance scaled by it (attention is linear in V).
   */
  readonly vAmplitude?: number;
  /**
   * The `scale` attribute the call gives (absent: the call omits it and the kernels use
   * 1/sqrt(H)). With the peaked softmax of QK_AMPLITUDE, a kernel that ignored it (or took
   * 1/sqrt(H) anyway) fails.
   */
  readonly scale?: number;
}

/**
 * Random f16 tensors for one call, built like ORT's tests (shuffled blocks, mixed prefill/decode).
 * Caches are f16 bits: every slot that no visible key reads (the rest of a sequence's last block,
 * spare blocks, blocks named only by unused or corrupted block_table entries) holds garbage
 * (F16_GARBAGE: NaN, infinities, huge finite values) that must never reach an output.
 */
export interface PagedCaseData {
  readonly call: Call;
  readonly query: Float32Array;
  readonly key: Float32Array | null;
  readonly value: Float32Array | null;
  readonly keyCache: Uint16Array;
  readonly valueCache: Uint16Array;
  readonly cum: Int32Array;
  readonly past: Int32Array;
  readonly blockTable: Int32Array;
  readonly slotMapping: Int32Array | null;
  /** Cache rows (block * bs + offset) that some visible key reads. */
  readonly liveRows: number;
  readonly summary: string;
}

/** Values uniform in [-amp, amp], rounded to f16. */
export function randomValues(n: number, rand: () => number, amp: number): Float32Array {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (rand() * 2 - 1) * amp;
  return f16ArrayToF32(f32ArrayToF16(v));
}

export function makePagedCase(
  shape: PagedCaseShape,
  packed: boolean,
  slots: boolean,
  rand: () => number,
  batch?: PagedBatch,
): PagedCaseData {
  const { numHeads: N, kvNumHeads: Nkv, headSize: H, blockSize: bs } = shape;
  const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
  let B: number;
  let past: Int32Array;
  let newTokens: number[];
  if (batch) {
    if (batch.past.length !== batch.newTokens.length || batch.past.length === 0)
      throw new Error(`makePagedCase: batch.past and batch.newTokens must have the same non-zero length`);
    B = batch.past.length;
    past = Int32Array.from(batch.past);
    newTokens = [...batch.newTokens];
  } else {
    B = int(1, shape.batch);
    past = new Int32Array(B);
    newTokens = [];
    for (let b = 0; b < B; b++) {
      past[b] = int(0, shape.maxPast);
      // A third decode, a third prefill, the rest zero or a few tokens.
      const kind = rand();
      newTokens.push(kind < 0.35 ? 1 : kind < 0.7 ? int(2, shape.maxNew) : int(0, 2));
    }
    if (!newTokens.some((n) => n > 0)) newTokens[0] = 1;
  }
  const cum = new Int32Array(B + 1);
  for (let b = 0; b < B; b++) cum[b + 1] = cum[b] + newTokens[b];
  const T = cum[B];
  const blocksOf = Array.from(past, (p, b) => Math.ceil((p + newTokens[b]) / bs));
  const maxBlocks = Math.max(shape.minTableBlocks ?? 1, Math.max(1, ...blocksOf) + int(0, 2));
  const needed = blocksOf.reduce((x, y) => x + y, 0);
  const numBlocks = Math.max(1, 2 * needed + int(0, 3));
  const perm = Array.from({ length: numBlocks }, (_, i) => i);
  for (let i = perm.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [perm[i], perm[j]] = [perm[j], perm[i]];
  }
  // Mostly block 0 is spare (vLLM reserves it as its null block), so it holds garbage: masked keys
  // that read "row 0, inside the buffer" instead of a real row must still contribute nothing.
  if (rand() < 0.8) perm.push(...perm.splice(perm.indexOf(0), 1));
  const blockTable = new Int32Array(B * maxBlocks);
  let next = 0;
  for (let b = 0; b < B; b++) {
    for (let l = 0; l < maxBlocks; l++) {
      // Entries past what a sequence needs are garbage the kernels must never follow: -1, a block
      // past the cache, or a spare block of the cache (filled with garbage below).
      const spare = (): number => (numBlocks > needed ? perm[needed + int(0, numBlocks - needed - 1)] : -1);
      const pick = rand();
      blockTable[b * maxBlocks + l] = l < blocksOf[b] ? perm[next++] : pick < 0.3 ? -1 : pick < 0.5 ? 1_000_000 + int(0, 9) : spare();
    }
  }
  const hostileBlock = (): number => [-1, -7, numBlocks, numBlocks + 3, 0x3fffffff, 0x7fffffff][int(0, 5)];
  const hostileSlot = (): number => [-1, -7, numBlocks * bs, numBlocks * bs + 5, 0x40000000, 0x7fffffff][int(0, 5)];
  let slotMapping: Int32Array | null = null;
  if (slots) {
    slotMapping = new Int32Array(T);
    for (let b = 0; b < B; b++) {
      for (let t = cum[b]; t < cum[b + 1]; t++) {
        const pos = past[b] + t - cum[b];
        // Token 0 always writes, so every slot case has at least one write to check.
        slotMapping[t] = t > 0 && rand() < 0.2 ? -1 : blockTable[b * maxBlocks + Math.floor(pos / bs)] * bs + (pos % bs);
        if (shape.hostile && rand() < 0.3) slotMapping[t] = hostileSlot();
      }
    }
  }
  if (shape.hostile) {
    for (let b = 0; b < B; b++) for (let l = 0; l < blocksOf[b]; l++) if (rand() < 0.3) blockTable[b * maxBlocks + l] = hostileBlock();
    // One sequence with new tokens has no mapped block at all: its tokens see no key, and their
    // outputs must be zeros (not NaN from dividing by a zero sum).
    const empty = [...Array(B).keys()].reverse().find((b) => cum[b + 1] > cum[b]);
    if (empty !== undefined) for (let l = 0; l < blocksOf[empty]; l++) blockTable[empty * maxBlocks + l] = hostileBlock();
  }
  const qWidth = packed ? (N + 2 * Nkv) * H : N * H;
  // Query rows: Q and K parts with the model-like amplitude, V parts with vAmplitude (default 1).
  const qk = shape.qkAmplitude ?? QK_AMPLITUDE;
  const vAmp = shape.vAmplitude ?? 1;
  const query = randomValues(T * qWidth, rand, qk);
  const vFrom = (N + Nkv) * H;
  if (packed) for (let t = 0; t < T; t++) query.set(randomValues(Nkv * H, rand, vAmp), t * qWidth + vFrom);
  // Rows some visible key reads: positions [0, past + new) of each sequence through the final table.
  const live = new Uint8Array(numBlocks * bs);
  for (let b = 0; b < B; b++) {
    for (let s = 0; s < past[b] + newTokens[b]; s++) {
      const logical = Math.floor(s / bs);
      const blk = logical < maxBlocks ? blockTable[b * maxBlocks + logical] : -1;
      if (blk >= 0 && blk < numBlocks) live[blk * bs + (s % bs)] = 1;
    }
  }
  const cacheBits = (amp: number): Uint16Array => {
    const bits = f32ArrayToF16(randomValues(numBlocks * bs * Nkv * H, rand, amp));
    for (let i = 0; i < bits.length; i++) if (!live[Math.floor(i / (Nkv * H))]) bits[i] = F16_GARBAGE[i % F16_GARBAGE.length];
    return bits;
  };
  const f16 = (shp: number[]): TensorDesc => ({ shape: shp, dtype: "float16" });
  const i32 = (shp: number[]): TensorDesc => ({ shape: shp, dtype: "int32" });
  const inputs: Record<string, TensorDesc | null> = {
    queryT: f16([T, qWidth]),
    keyT: packed ? null : f16([T, Nkv * H]),
    valueT: packed ? null : f16([T, Nkv * H]),
    keyCacheT: f16([numBlocks, bs, Nkv, H]),
    valueCacheT: f16([numBlocks, bs, Nkv, H]),
    cumulativeSequenceLengthT: i32([B + 1]),
    pastSeqlensT: i32([B]),
    blockTableT: i32([B, maxBlocks]),
    slotMappingT: slots ? i32([T]) : null,
  };
  const liveRows = live.reduce((a, x) => a + x, 0);
  return {
    call: {
      inputs,
      outputs: { outputT: f16([T, N * H]) },
      attrs: { num_heads: N, kv_num_heads: Nkv, ...(shape.scale === undefined ? {} : { scale: shape.scale }) },
    },
    query,
    key: packed ? null : randomValues(T * Nkv * H, rand, qk),
    value: packed ? null : randomValues(T * Nkv * H, rand, vAmp),
    keyCache: cacheBits(qk),
    valueCache: cacheBits(vAmp),
    cum,
    past,
    blockTable,
    slotMapping,
    liveRows,
    summary: `B=${B} T=${T} past=[${Array.from(past)}] new=[${newTokens}] blocks=${numBlocks} maxBlocks=${maxBlocks} live rows=${liveRows}/${numBlocks * bs}`,
  };
}

/** The bytes of a case's input tensors by tensor id (caches as their f16 bits, garbage included). */
export function pagedCaseTensors(c: PagedCaseData): Record<string, Uint8Array> {
  const f16Bytes = (v: Float32Array): Uint8Array => new Uint8Array(f32ArrayToF16(v).buffer);
  const i32Bytes = (v: Int32Array): Uint8Array => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  const u16Bytes = (v: Uint16Array): Uint8Array => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  const tensors: Record<string, Uint8Array> = {
    queryT: f16Bytes(c.query),
    keyCacheT: u16Bytes(c.keyCache),
    valueCacheT: u16Bytes(c.valueCache),
    cumulativeSequenceLengthT: i32Bytes(c.cum),
    pastSeqlensT: i32Bytes(c.past),
    blockTableT: i32Bytes(c.blockTable),
  };
  if (c.key && c.value) {
    tensors.keyT = f16Bytes(c.key);
    tensors.valueT = f16Bytes(c.value);
  }
  if (c.slotMapping) tensors.slotMappingT = i32Bytes(c.slotMapping);
  return tensors;
}

/** The CPU reference (src/reference/paged-attention.ts) of a case: output and updated caches. */
export function pagedCaseReference(shape: PagedCaseShape, c: PagedCaseData): PagedAttentionResult {
  return pagedAttentionReference({
    numHeads: shape.numHeads,
    kvNumHeads: shape.kvNumHeads,
    scale: shape.scale,
    query: c.query,
    key: c.key,
    value: c.value,
    keyCache: f16ArrayToF32(c.keyCache),
    valueCache: f16ArrayToF32(c.valueCache),
    blockSize: shape.blockSize,
    headSize: shape.headSize,
    cumulativeSequenceLength: c.cum,
    pastSeqlens: c.past,
    blockTable: c.blockTable,
    slotMapping: c.slotMapping,
  });
}

/** How a run's output and caches compare with the CPU reference of its case. */
export interface PagedComparison {
  readonly ref: PagedAttentionResult;
  readonly maxErr: number;
  /** max |got - want| / (atol + TOL * |want|), atol = TOL * vAmplitude; Infinity for a NaN. At most 1 passes. */
  readonly maxRatio: number;
  /** Where the worst output element is and its values ("" when every element is exact). */
  readonly worst: string;
  /** The first few cache elements that differ from what the reference wrote or from their old bits. */
  readonly cacheErrors: readonly string[];
}

/**
 * Compares a run (outputT, keyCacheT, valueCacheT as read back) with the reference: the output
 * within atol = rtol = ATTENTION_TOL (atol scaled by the shape's value amplitude: attention is
 * linear in V), the caches bit for bit (written rows hold the new K and V, every other element,
 * garbage included, keeps its bits).
 */
export function comparePagedRun(shape: PagedCaseShape, c: PagedCaseData, got: Readonly<Record<string, ArrayBuffer>>): PagedComparison {
  const ref = pagedCaseReference(shape, c);
  const out = new Uint16Array(got.outputT);
  const atol = ATTENTION_TOL * (shape.vAmplitude ?? 1);
  let maxErr = 0;
  let maxRatio = 0;
  let at = -1;
  for (let k = 0; k < ref.output.length; k++) {
    const err = Math.abs(f16ToF32(out[k]) - ref.output[k]);
    const ratio = err / (atol + ATTENTION_TOL * Math.abs(ref.output[k]));
    if (!(ratio <= maxRatio)) {
      maxRatio = Number.isNaN(ratio) ? Infinity : ratio;
      at = k;
    }
    if (err > maxErr || Number.isNaN(err)) maxErr = Number.isNaN(err) ? Infinity : err;
  }
  const { headSize: H, numHeads: N } = shape;
  const worst =
    at >= 0
      ? `token ${Math.floor(at / (N * H))} head ${Math.floor(at / H) % N} channel ${at % H}: got ${f16ToF32(out[at])}, want ${ref.output[at]}`
      : "";
  const cacheErrors: string[] = [];
  for (const [id, before, want] of [
    ["keyCacheT", c.keyCache, ref.keyCache],
    ["valueCacheT", c.valueCache, ref.valueCache],
  ] as const) {
    const cache = new Uint16Array(got[id]);
    for (let k = 0; k < before.length && cacheErrors.length < 8; k++) {
      const expected = ref.written[k] ? f32ToF16(want[k]) : before[k];
      if (cache[k] !== expected)
        cacheErrors.push(`${id}[${k}] (written=${ref.written[k]}): bits ${cache[k].toString(16)}, want ${expected.toString(16)}`);
    }
  }
  return { ref, maxErr, maxRatio, worst, cacheErrors };
}
