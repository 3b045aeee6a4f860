/**
 * A small CPU reference of one PagedAttention decode step (one new token per sequence, no
 * slot_mapping): write each sequence's new K and V at its position through the block table, then
 * attend the token over positions 0..past. Values are f16 numbers held in JS numbers; the softmax
 * and the weighted sums accumulate in double precision.
 */
import { roundToF16 } from "kernelc/runtime";

/** The sizes of one decode call. */
export interface DecodeShape {
  readonly numHeads: number;
  readonly kvNumHeads: number;
  readonly headSize: number;
  readonly blockSize: number;
  readonly numBlocks: number;
  readonly maxBlocks: number;
}

/** The inputs of one decode call, flat row-major, f16 tensors as f16-representable numbers. */
export interface DecodeInputs {
  readonly query: Float32Array;
  readonly key: Float32Array;
  readonly value: Float32Array;
  readonly keyCache: Float32Array;
  readonly valueCache: Float32Array;
  readonly pastSeqlens: Int32Array;
  readonly blockTable: Int32Array;
}

/** The attention output `[batch, numHeads * headSize]`, rounded to f16. */
export function decodeReference(s: DecodeShape, x: DecodeInputs): Float64Array {
  const { numHeads: N, kvNumHeads: Nkv, headSize: H, blockSize: bs, maxBlocks } = s;
  const batch = x.pastSeqlens.length;
  const keyCache = Float64Array.from(x.keyCache);
  const valueCache = Float64Array.from(x.valueCache);
  const row = (b: number, pos: number, kvh: number): number => {
    const block = x.blockTable[b * maxBlocks + Math.floor(pos / bs)] ?? -1;
    return ((block * bs + (pos % bs)) * Nkv + kvh) * H;
  };
  for (let b = 0; b < batch; b++) {
    const pos = x.pastSeqlens[b] ?? 0;
    for (let kvh = 0; kvh < Nkv; kvh++) {
      for (let c = 0; c < H; c++) {
        keyCache[row(b, pos, kvh) + c] = x.key[(b * Nkv + kvh) * H + c] ?? 0;
        valueCache[row(b, pos, kvh) + c] = x.value[(b * Nkv + kvh) * H + c] ?? 0;
      }
    }
  }
  const out = new Float64Array(batch * N * H);
  const scale = 1 / Math.sqrt(H);
  for (let b = 0; b < batch; b++) {
    const past = x.pastSeqlens[b] ?? 0;
    for (let h = 0; h < N; h++) {
      const kvh = Math.floor(h / (N / Nkv));
      const scores: number[] = [];
      for (let p = 0; p <= past; p++) {
        let dot = 0;
        for (let c = 0; c < H; c++) dot += (x.query[(b * N + h) * H + c] ?? 0) * (keyCache[row(b, p, kvh) + c] ?? 0);
        scores.push(dot * scale);
      }
      const max = Math.max(...scores);
      const weights = scores.map((v) => Math.exp(v - max));
      const sum = weights.reduce((a, v) => a + v, 0);
      for (let c = 0; c < H; c++) {
        let acc = 0;
        weights.forEach((w, p) => (acc += w * (valueCache[row(b, p, kvh) + c] ?? 0)));
        out[(b * N + h) * H + c] = roundToF16(acc / sum);
      }
    }
  }
  return out;
}
