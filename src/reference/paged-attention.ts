/**
 * CPU reference of com.microsoft.PagedAttention as docs/ops.md defines it: write the new K and V
 * into the paged caches, then causal attention of each new token over its sequence's keys read
 * through block_table. Values are f16 numbers held in JS numbers; every value the GPU stores as
 * f16 (inputs, caches, output) is rounded to f16 here, and the softmax and weighted sums
 * accumulate in double precision (at least the f32 the kernels use).
 *
 * Two choices beyond ORT, matching the kernels: a write whose slot falls outside the cache is
 * dropped, and a key whose block_table entry is outside [0, num_blocks) (or whose logical block
 * is past max_blocks) is not attended to. A token with no attended key outputs zeros.
 */
import { f16ArrayToF32, f32ArrayToF16, roundToF16 } from "../runtime/f16.js";

/** One PagedAttention call: flat row-major tensors with the shapes of docs/ops.md. */
export interface PagedAttentionArgs {
  readonly numHeads: number;
  readonly kvNumHeads: number;
  /** Absent or 0 means 1/sqrt(headSize). */
  readonly scale?: number;
  /** `[T, N*H]`, or packed `[T, (N + 2*Nkv)*H]` when key and value are absent. */
  readonly query: ArrayLike<number>;
  readonly key?: ArrayLike<number> | null;
  readonly value?: ArrayLike<number> | null;
  /** `[numBlocks, blockSize, Nkv, H]`; not modified (the result holds the updated copies). */
  readonly keyCache: ArrayLike<number>;
  readonly valueCache: ArrayLike<number>;
  readonly blockSize: number;
  readonly headSize: number;
  /** `[B + 1]` */
  readonly cumulativeSequenceLength: ArrayLike<number>;
  /** `[B]` */
  readonly pastSeqlens: ArrayLike<number>;
  /** `[B, maxBlocks]` */
  readonly blockTable: ArrayLike<number>;
  /** `[T]`; -1 (any negative) skips the token's write. */
  readonly slotMapping?: ArrayLike<number> | null;
}

/** The reference's outputs: the f16-rounded attention output and the updated caches. */
export interface PagedAttentionResult {
  /** `[T, N*H]`, f16 values. */
  readonly output: Float64Array;
  readonly keyCache: Float64Array;
  readonly valueCache: Float64Array;
  /** 1 for every cache element this call wrote (same for both caches), else 0. */
  readonly written: Uint8Array;
}

/** Rounds every value to f16 (one conversion pass, no per-element allocation). */
function toF16Values(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(f16ArrayToF32(f32ArrayToF16(values)));
}

/** The sequence index b with cum[b] <= t < cum[b+1] (the last b with cum[b] <= t). */
export function sequenceOfToken(cum: ArrayLike<number>, t: number): number {
  let b = 0;
  for (let i = 1; i < cum.length - 1; i++) if (cum[i] <= t) b = i;
  return b;
}

/** Computes PagedAttention on the CPU: cache writes first, then attention through block_table. */
export function pagedAttentionReference(a: PagedAttentionArgs): PagedAttentionResult {
  const { numHeads: N, kvNumHeads: Nkv, headSize: H, blockSize: bs } = a;
  if (N <= 0 || Nkv <= 0 || N % Nkv !== 0) throw new Error(`num_heads ${N} must be a positive multiple of kv_num_heads ${Nkv}`);
  const G = N / Nkv;
  const B = a.cumulativeSequenceLength.length - 1;
  const T = B >= 0 ? a.cumulativeSequenceLength[B] : 0;
  const packed = !a.key;
  const qStride = packed ? (N + 2 * Nkv) * H : N * H;
  const rowElems = bs * Nkv * H;
  const numBlocks = Math.floor(a.keyCache.length / rowElems);
  const maxBlocks = B > 0 ? Math.floor(a.blockTable.length / B) : 0;
  const scale = a.scale === undefined || a.scale === 0 ? 1 / Math.sqrt(H) : a.scale;

  const query = toF16Values(a.query);
  const keyCache = toF16Values(a.keyCache);
  const valueCache = toF16Values(a.valueCache);
  const written = new Uint8Array(keyCache.length);
  const newK = (t: number, kvh: number, c: number): number =>
    packed ? query[t * qStride + (N + kvh) * H + c] : roundToF16((a.key as ArrayLike<number>)[(t * Nkv + kvh) * H + c]);
  const newV = (t: number, kvh: number, c: number): number =>
    packed ? query[t * qStride + (N + Nkv + kvh) * H + c] : roundToF16((a.value as ArrayLike<number>)[(t * Nkv + kvh) * H + c]);

  // 1. Write.
  for (let t = 0; t < T; t++) {
    const b = sequenceOfToken(a.cumulativeSequenceLength, t);
    let blk: number;
    let off: number;
    if (a.slotMapping) {
      const slot = a.slotMapping[t];
      if (slot < 0) continue;
      blk = Math.floor(slot / bs);
      off = slot % bs;
    } else {
      const pos = a.pastSeqlens[b] + (t - a.cumulativeSequenceLength[b]);
      if (pos < 0 || Math.floor(pos / bs) >= maxBlocks) continue;
      blk = a.blockTable[b * maxBlocks + Math.floor(pos / bs)];
      off = pos % bs;
    }
    if (blk < 0 || blk >= numBlocks) continue;
    for (let kvh = 0; kvh < Nkv; kvh++) {
      for (let c = 0; c < H; c++) {
        const dst = ((blk * bs + off) * Nkv + kvh) * H + c;
        keyCache[dst] = newK(t, kvh, c);
        valueCache[dst] = newV(t, kvh, c);
        written[dst] = 1;
      }
    }
  }

  // 2. Attend.
  const output = new Float64Array(T * N * H);
  const scores: number[] = [];
  const rows: number[] = [];
  for (let t = 0; t < T; t++) {
    const b = sequenceOfToken(a.cumulativeSequenceLength, t);
    const pos = a.pastSeqlens[b] + (t - a.cumulativeSequenceLength[b]);
    for (let h = 0; h < N; h++) {
      const kvh = Math.floor(h / G);
      const qBase = t * qStride + h * H;
      scores.length = 0;
      rows.length = 0;
      let max = -Infinity;
      for (let s = 0; s <= pos; s++) {
        const logical = Math.floor(s / bs);
        if (logical >= maxBlocks) continue;
        const blk = a.blockTable[b * maxBlocks + logical];
        if (blk < 0 || blk >= numBlocks) continue;
        const row = ((blk * bs + (s % bs)) * Nkv + kvh) * H;
        let dot = 0;
        for (let c = 0; c < H; c++) dot += query[qBase + c] * keyCache[row + c];
        const score = scale * dot;
        scores.push(score);
        rows.push(row);
        if (score > max) max = score;
      }
      let sum = 0;
      for (let i = 0; i < scores.length; i++) {
        scores[i] = Math.exp(scores[i] - max);
        sum += scores[i];
      }
      for (let c = 0; c < H; c++) {
        let acc = 0;
        for (let i = 0; i < scores.length; i++) acc += scores[i] * valueCache[rows[i] + c];
        output[(t * N + h) * H + c] = sum > 0 ? roundToF16(acc / sum) : 0;
      }
    }
  }
  return { output, keyCache, valueCache, written };
}
