/**
 * CPU reference of com.microsoft.SparseAttention (docs/ops.md, "SparseAttention"): KV append
 * into the shared BNSH cache, rotary on Q and new K, block-sparse causal attention through a
 * CSR block mask per layout. Accumulates in double/f32 and rounds to f16 wherever the GPU
 * kernels store f16 (the cache rows, the rotated Q, the output), so GPU tests can compare
 * against it with a small absolute tolerance.
 *
 * Tensors are flat Float32Array/Int32Array in row-major order; f16 tensors hold f16-exact values.
 */
import { roundToF16 } from "../runtime/f16.js";

/** Attributes of the operator, as the ONNX node carries them. */
export interface SparseAttentionAttrs {
  readonly numHeads: number;
  readonly kvNumHeads: number;
  /** 0 or absent means 1/sqrt(head size). */
  readonly scale?: number;
  readonly sparseBlockSize: number;
  readonly doRotary?: boolean;
  readonly rotaryInterleaved?: boolean;
}

/** A CSR block mask: `numLayout` rows of `maxBlocks + 1` pointers and `maxNnz` columns (-1 padded). */
export interface CsrLayout {
  readonly numLayout: number;
  readonly maxBlocks: number;
  readonly maxNnz: number;
  readonly rowIndices: Int32Array;
  readonly colIndices: Int32Array;
}

/** The operator's inputs. `query` is [B, S, N*H] or packed [B, S, (N + 2*Nkv)*H]. */
export interface SparseAttentionInputs {
  readonly batchSize: number;
  readonly seqLen: number;
  readonly headSize: number;
  readonly maxCacheSeq: number;
  readonly query: Float32Array;
  /** [B, S, Nkv*H]; absent with packed QKV. */
  readonly key?: Float32Array;
  readonly value?: Float32Array;
  /** [B, Nkv, maxCacheSeq, H]. */
  readonly pastKey: Float32Array;
  readonly pastValue: Float32Array;
  readonly layout: CsrLayout;
  readonly totalSequenceLength: number;
  readonly keyTotalSequenceLengths: ArrayLike<number>;
  /** [maxRotarySeq, R/2] each, when rotary is on. */
  readonly cosCache?: Float32Array;
  readonly sinCache?: Float32Array;
  readonly rotaryHalf?: number;
}

/** Outputs: `output` [B, S, N*H] and the caches after the append (new arrays; inputs are untouched). */
export interface SparseAttentionResult {
  readonly output: Float32Array;
  readonly presentKey: Float32Array;
  readonly presentValue: Float32Array;
  /** past_b per batch entry, as the kernels compute it. */
  readonly pastLengths: readonly number[];
  /**
   * presentKey before its rounding to f16: for the written rows the (rotated) key in f32, as the
   * kernel computes it before storing; elsewhere equal to presentKey. WGSL lets an f32 → f16
   * conversion round to either neighbour, so a test compares rotated keys against this.
   */
  readonly presentKeyF32: Float32Array;
}

/**
 * past_b for each batch entry: 0 in prompt mode (total_sequence_length == S), else
 * key_total_sequence_lengths[b] - S clamped at 0 (the seed append template's rule).
 */
export function pastLengths(totalSequenceLength: number, keyTotalSequenceLengths: ArrayLike<number>, seqLen: number): number[] {
  const out: number[] = [];
  for (let b = 0; b < keyTotalSequenceLengths.length; b++) {
    out.push(totalSequenceLength === seqLen ? 0 : Math.max(0, keyTotalSequenceLengths[b] - seqLen));
  }
  return out;
}

/**
 * The key blocks a query block row of one layout lists (CSR entries, -1 padding and entries
 * outside the column array skipped), in CSR order.
 */
export function layoutRowBlocks(layout: CsrLayout, l: number, queryBlock: number): number[] {
  if (queryBlock < 0 || queryBlock >= layout.maxBlocks) {
    return [];
  }
  const rowStride = layout.maxBlocks + 1;
  const start = Math.max(0, Math.min(layout.maxNnz, layout.rowIndices[l * rowStride + queryBlock]));
  const end = Math.max(start, Math.min(layout.maxNnz, layout.rowIndices[l * rowStride + queryBlock + 1]));
  const blocks: number[] = [];
  for (let i = start; i < end; i++) {
    const col = layout.colIndices[l * layout.maxNnz + i];
    if (col >= 0) {
      blocks.push(col);
    }
  }
  return blocks;
}

/** The keys query position `qa` of a head with layout `l` attends to, ascending. */
export function visibleKeys(layout: CsrLayout, l: number, qa: number, blockSize: number): number[] {
  const qBlock = Math.floor(qa / blockSize);
  const blocks = [...new Set(layoutRowBlocks(layout, l, qBlock))].filter((blk) => blk <= qBlock).sort((a, b) => a - b);
  const keys: number[] = [];
  for (const blk of blocks) {
    for (let k = blk * blockSize; k < (blk + 1) * blockSize && k <= qa; k++) {
      keys.push(k);
    }
  }
  return keys;
}

/**
 * Applies rotary embedding to one head vector `x` (length H) at table row `position`;
 * components at or past `2 * half` pass through. Returns a new array (not rounded).
 */
export function applyRotary(
  x: ArrayLike<number>,
  position: number,
  cosCache: Float32Array,
  sinCache: Float32Array,
  half: number,
  interleaved: boolean,
): number[] {
  const out = Array.from(x);
  for (let d = 0; d < 2 * half; d++) {
    const slot = interleaved ? Math.floor(d / 2) : d < half ? d : d - half;
    const partner = interleaved ? (d % 2 === 0 ? d + 1 : d - 1) : d < half ? d + half : d - half;
    const first = interleaved ? d % 2 === 0 : d < half;
    const cs = cosCache[position * half + slot];
    const sn = sinCache[position * half + slot];
    out[d] = first ? x[d] * cs - x[partner] * sn : x[d] * cs + x[partner] * sn;
  }
  return out;
}

/**
 * Runs the operator on the CPU. A new row whose position past_b + s falls outside the cache
 * (ORT rejects such calls) is not written, as the kernels do; keys at or past maxCacheSeq are
 * not attended to.
 */
export function sparseAttentionReference(inputs: SparseAttentionInputs, attrs: SparseAttentionAttrs): SparseAttentionResult {
  const { batchSize: B, seqLen: S, headSize: H, maxCacheSeq: M, layout } = inputs;
  const N = attrs.numHeads;
  const Nkv = attrs.kvNumHeads;
  const G = N / Nkv;
  const packed = inputs.key === undefined;
  const qStride = packed ? (N + 2 * Nkv) * H : N * H;
  const kvStride = Nkv * H;
  const scale = attrs.scale ? Math.fround(attrs.scale) : 1 / Math.sqrt(H);
  const bs = attrs.sparseBlockSize;
  const rotary = attrs.doRotary === true;
  const half = inputs.rotaryHalf ?? 0;
  if (rotary && (!inputs.cosCache || !inputs.sinCache || half <= 0)) {
    throw new Error("do_rotary needs cos_cache, sin_cache and rotaryHalf");
  }

  const presentKey = Float32Array.from(inputs.pastKey);
  const presentKeyF32 = Float32Array.from(inputs.pastKey);
  const presentValue = Float32Array.from(inputs.pastValue);
  const past = pastLengths(inputs.totalSequenceLength, inputs.keyTotalSequenceLengths, S);

  const rotate = (x: ArrayLike<number>, position: number): number[] =>
    rotary ? applyRotary(x, position, inputs.cosCache!, inputs.sinCache!, half, attrs.rotaryInterleaved === true) : Array.from(x);

  // 1. Append the new K (rotated) and V rows at past_b + s.
  for (let b = 0; b < B; b++) {
    for (let s = 0; s < S; s++) {
      const pos = past[b] + s;
      // ORT rejects a call whose rows do not fit the cache; a kernel cannot see that before it
      // runs, so such a row is dropped (not written into the next head's rows).
      if (pos >= M) {
        continue;
      }
      for (let kvh = 0; kvh < Nkv; kvh++) {
        const kSrc = packed ? inputs.query : inputs.key!;
        const vSrc = packed ? inputs.query : inputs.value!;
        const kOff = packed ? (b * S + s) * qStride + (N + kvh) * H : (b * S + s) * kvStride + kvh * H;
        const vOff = packed ? (b * S + s) * qStride + (N + Nkv + kvh) * H : (b * S + s) * kvStride + kvh * H;
        const k = rotate(kSrc.subarray(kOff, kOff + H), pos);
        const dst = ((b * Nkv + kvh) * M + pos) * H;
        for (let d = 0; d < H; d++) {
          // The kernel rotates in f32 (the products of f16 values are exact there, the sum is
          // rounded once), then stores f16.
          presentKeyF32[dst + d] = k[d];
          presentKey[dst + d] = roundToF16(presentKeyF32[dst + d]);
          presentValue[dst + d] = vSrc[vOff + d];
        }
      }
    }
  }

  // 2. Attend over the updated cache.
  const output = new Float32Array(B * S * N * H);
  for (let b = 0; b < B; b++) {
    for (let s = 0; s < S; s++) {
      const qa = past[b] + s;
      for (let h = 0; h < N; h++) {
        const kvh = Math.floor(h / G);
        const qOff = (b * S + s) * qStride + h * H;
        const q = rotate(inputs.query.subarray(qOff, qOff + H), qa).map((v) => roundToF16(v));
        const keys = visibleKeys(layout, h % layout.numLayout, qa, bs).filter((k) => k < M);
        const scores = keys.map((k) => {
          const kRow = ((b * Nkv + kvh) * M + k) * H;
          let acc = 0;
          for (let d = 0; d < H; d++) {
            acc += q[d] * presentKey[kRow + d];
          }
          return acc * scale;
        });
        const outOff = (b * S + s) * N * H + h * H;
        if (keys.length === 0) {
          continue;
        }
        const max = Math.max(...scores);
        const weights = scores.map((v) => Math.exp(v - max));
        const sum = weights.reduce((a, v) => a + v, 0);
        for (let d = 0; d < H; d++) {
          let acc = 0;
          for (let i = 0; i < keys.length; i++) {
            acc += weights[i] * presentValue[((b * Nkv + kvh) * M + keys[i]) * H + d];
          }
          output[outOff + d] = roundToF16(acc / sum);
        }
      }
    }
  }
  return { output, presentKey, presentValue, pastLengths: past, presentKeyF32 };
}

/**
 * The dense block mask ORT's tests build: mask[l][q][k] = q >= k and (q - k < localBlocks or
 * (k + l * strideStep + 1) % vertStride == 0), strideStep = max(1, floor(vertStride / numLayout)).
 * Returned flat as [numLayout][maxBlocks][maxBlocks] of 0/1.
 */
export function buildBlockMask(numLayout: number, maxBlocks: number, localBlocks: number, vertStride: number): Uint8Array {
  const strideStep = Math.max(1, Math.floor(vertStride / numLayout));
  const mask = new Uint8Array(numLayout * maxBlocks * maxBlocks);
  for (let l = 0; l < numLayout; l++) {
    for (let q = 0; q < maxBlocks; q++) {
      for (let k = 0; k < maxBlocks; k++) {
        const vertical = (k + l * strideStep + 1) % vertStride === 0;
        mask[(l * maxBlocks + q) * maxBlocks + k] = q >= k && (q - k < localBlocks || vertical) ? 1 : 0;
      }
    }
  }
  return mask;
}

/** Converts a dense [numLayout][maxBlocks][maxBlocks] block mask to CSR, columns right-padded with -1 to the longest layout. */
export function blockMaskToCsr(mask: Uint8Array, numLayout: number, maxBlocks: number): CsrLayout {
  const rows: number[][] = [];
  const cols: number[][] = [];
  for (let l = 0; l < numLayout; l++) {
    const row = [0];
    const col: number[] = [];
    for (let q = 0; q < maxBlocks; q++) {
      for (let k = 0; k < maxBlocks; k++) {
        if (mask[(l * maxBlocks + q) * maxBlocks + k]) {
          col.push(k);
        }
      }
      row.push(col.length);
    }
    rows.push(row);
    cols.push(col);
  }
  const maxNnz = Math.max(1, ...cols.map((c) => c.length));
  const rowIndices = new Int32Array(numLayout * (maxBlocks + 1));
  const colIndices = new Int32Array(numLayout * maxNnz).fill(-1);
  for (let l = 0; l < numLayout; l++) {
    rowIndices.set(rows[l], l * (maxBlocks + 1));
    colIndices.set(cols[l], l * maxNnz);
  }
  return { numLayout, maxBlocks, maxNnz, rowIndices, colIndices };
}

/** ORT's test layout (local blocks plus vertical stride) as CSR. */
export function buildSparseLayout(numLayout: number, maxBlocks: number, localBlocks: number, vertStride: number): CsrLayout {
  return blockMaskToCsr(buildBlockMask(numLayout, maxBlocks, localBlocks, vertStride), numLayout, maxBlocks);
}
