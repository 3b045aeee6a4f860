import { describe, expect, it } from "vitest";
import {
  applyRotary,
  blockMaskToCsr,
  buildBlockMask,
  buildSparseLayout,
  layoutRowBlocks,
  pastLengths,
  sparseAttentionReference,
  visibleKeys,
  type CsrLayout,
} from "../../src/reference/sparse-attention.js";
import { roundToF16 } from "../../src/runtime/f16.js";

const GOLDEN_ROW = [
  [0, 1, 3, 5, 8],
  [0, 1, 3, 6, 9],
];
const GOLDEN_COL = [
  [0, 0, 1, 1, 2, 1, 2, 3, -1],
  [0, 0, 1, 0, 1, 2, 0, 2, 3],
];

function csr(rows: number[][], cols: number[][]): CsrLayout {
  return {
    numLayout: rows.length,
    maxBlocks: rows[0].length - 1,
    maxNnz: cols[0].length,
    rowIndices: Int32Array.from(rows.flat()),
    colIndices: Int32Array.from(cols.flat()),
  };
}

describe("layouts", () => {
  it("reproduces the golden CSR example (2 layouts, 4 blocks, local 2, vertical stride 2)", () => {
    const layout = buildSparseLayout(2, 4, 2, 2);
    expect(layout.maxNnz).toBe(9);
    expect(Array.from(layout.rowIndices)).toEqual(GOLDEN_ROW.flat());
    expect(Array.from(layout.colIndices)).toEqual(GOLDEN_COL.flat());
  });

  it("lists a layout row's blocks and the visible keys", () => {
    const layout = csr(GOLDEN_ROW, GOLDEN_COL);
    expect(layoutRowBlocks(layout, 0, 3)).toEqual([1, 2, 3]);
    expect(layoutRowBlocks(layout, 1, 3)).toEqual([0, 2, 3]);
    // Block size 2, query at position 6 (block 3): layout 1 sees blocks 0, 2 and the diagonal up to 6.
    expect(visibleKeys(layout, 1, 6, 2)).toEqual([0, 1, 4, 5, 6]);
    expect(visibleKeys(layout, 0, 5, 2)).toEqual([2, 3, 4, 5]);
  });

  it("visible keys equal the dense mask expanded per token, intersected with causality", () => {
    const [numLayout, maxBlocks, bs] = [3, 9, 4];
    const mask = buildBlockMask(numLayout, maxBlocks, 2, 3);
    const layout = blockMaskToCsr(mask, numLayout, maxBlocks);
    for (let l = 0; l < numLayout; l++) {
      for (let qa = 0; qa < maxBlocks * bs; qa++) {
        const expected: number[] = [];
        for (let k = 0; k <= qa; k++) {
          if (mask[(l * maxBlocks + Math.floor(qa / bs)) * maxBlocks + Math.floor(k / bs)]) {
            expected.push(k);
          }
        }
        expect(visibleKeys(layout, l, qa, bs)).toEqual(expected);
      }
    }
  });
});

describe("schedule and rotary", () => {
  it("uses past 0 in prompt mode and clamps decode lengths at 0", () => {
    expect(pastLengths(5, [9, 3], 5)).toEqual([0, 0]);
    expect(pastLengths(9, [9, 3], 2)).toEqual([7, 1]);
    expect(pastLengths(9, [1, 4], 2)).toEqual([0, 2]);
  });

  it("rotates split (NeoX) and interleaved pairs by the seed's convention", () => {
    const x = [1, 2, 3, 4, 5];
    // Position 1: entry 0 turns by 90 degrees (cos 0, sin 1), entry 1 is the identity.
    const cos = Float32Array.from([9, 9, 0, 1]);
    const sin = Float32Array.from([9, 9, 1, 0]);
    expect(applyRotary(x, 1, cos, sin, 2, false)).toEqual([-3, 2, 1, 4, 5]);
    expect(applyRotary(x, 1, cos, sin, 2, true)).toEqual([-2, 1, 3, 4, 5]);
  });
});

describe("sparseAttentionReference", () => {
  const H = 8;
  const unit = (i: number, v = 1): number[] => Array.from({ length: H }, (_, d) => (d === i ? v : 0));

  it("decodes one token over the listed blocks only, and appends K/V at past + s", () => {
    // Block size 1, 4 blocks; the row of block 2 lists blocks 0 and 2 (block 1 is skipped).
    const layout = csr([[0, 1, 2, 4, 5]], [[0, 1, 0, 2, 3]]);
    const M = 4;
    const pastKey = Float32Array.from([...unit(0), ...unit(0, 5), ...unit(7, 9), ...unit(7, 9)]);
    const pastValue = Float32Array.from([...unit(0), ...unit(3, 100), ...unit(7, 9), ...unit(7, 9)]);
    const result = sparseAttentionReference(
      {
        batchSize: 1,
        seqLen: 1,
        headSize: H,
        maxCacheSeq: M,
        query: Float32Array.from(unit(0)),
        key: Float32Array.from(unit(2)),
        value: Float32Array.from(unit(1)),
        pastKey,
        pastValue,
        layout,
        totalSequenceLength: 3,
        keyTotalSequenceLengths: [3],
      },
      { numHeads: 1, kvNumHeads: 1, scale: 1, sparseBlockSize: 1 },
    );
    expect(result.pastLengths).toEqual([2]);
    // Scores: key 0 -> 1, key 2 (the new key) -> 0; key 1 is masked out by the layout.
    const e = Math.E;
    expect(result.output[0]).toBe(roundToF16(e / (1 + e)));
    expect(result.output[1]).toBe(roundToF16(1 / (1 + e)));
    expect(Array.from(result.output.subarray(2))).toEqual(Array(H - 2).fill(0));
    expect(Array.from(result.presentKey.subarray(2 * H, 3 * H))).toEqual(unit(2));
    expect(Array.from(result.presentValue.subarray(2 * H, 3 * H))).toEqual(unit(1));
    expect(Array.from(result.presentKey.subarray(3 * H))).toEqual(unit(7, 9));
    expect(Array.from(result.presentKey.subarray(0, 2 * H))).toEqual(Array.from(pastKey.subarray(0, 2 * H)));
    // The inputs are not modified.
    expect(pastKey[2 * H + 7]).toBe(9);
  });

  it("prompt: causal inside the diagonal block, default scale, GQA with one layout per head", () => {
    // Two query heads share one KV head; head 0 uses layout 0 (only the diagonal block), head 1
    // layout 1 (both blocks). Block size 2, S = 4.
    const layout = csr(
      [
        [0, 1, 2],
        [0, 1, 3],
      ],
      [
        [0, 1, -1],
        [0, 0, 1],
      ],
    );
    const S = 4;
    const query = new Float32Array(S * 2 * H);
    const key = new Float32Array(S * H);
    const value = new Float32Array(S * H);
    for (let s = 0; s < S; s++) {
      query.set(unit(0, 2), (s * 2 + 0) * H);
      query.set(unit(0, 2), (s * 2 + 1) * H);
      key.set(unit(0, s), s * H);
      value.set(unit(s, 1), s * H);
    }
    const result = sparseAttentionReference(
      {
        batchSize: 1,
        seqLen: S,
        headSize: H,
        maxCacheSeq: 6,
        query,
        key,
        value,
        pastKey: new Float32Array(6 * H),
        pastValue: new Float32Array(6 * H),
        layout,
        totalSequenceLength: S,
        keyTotalSequenceLengths: [S],
      },
      { numHeads: 2, kvNumHeads: 1, sparseBlockSize: 2 },
    );
    const scale = 1 / Math.sqrt(H);
    const softmax = (keys: number[]): number[] => {
      const w = keys.map((k) => Math.exp(2 * k * scale));
      const sum = w.reduce((a, v) => a + v, 0);
      return w.map((v) => v / sum);
    };
    const out = (s: number, h: number): number[] => Array.from(result.output.subarray((s * 2 + h) * H, (s * 2 + h + 1) * H));
    // s = 0: only key 0. s = 1: keys 0, 1 for both heads.
    expect(out(0, 0)).toEqual(unit(0));
    const p01 = softmax([0, 1]);
    expect(out(1, 1)).toEqual([roundToF16(p01[0]), roundToF16(p01[1]), 0, 0, 0, 0, 0, 0]);
    // s = 3 (block 1): head 0 sees keys 2, 3; head 1 sees keys 0..3.
    const p23 = softmax([2, 3]);
    expect(out(3, 0)).toEqual([0, 0, roundToF16(p23[0]), roundToF16(p23[1]), 0, 0, 0, 0]);
    const pAll = softmax([0, 1, 2, 3]);
    expect(out(3, 1)).toEqual([...pAll.map(roundToF16), 0, 0, 0, 0]);
    // s = 2 (block 1, first key): head 0 sees key 2 only.
    expect(out(2, 0)).toEqual(unit(2));
  });

  it("gives the same result for packed and separate QKV, with rotary on Q and K", () => {
    const [B, S, N, Nkv, Hd, M, half] = [2, 3, 4, 2, 16, 8, 4];
    let seed = 7;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return roundToF16(seed / 2 ** 31 - 0.5);
    };
    const fill = (n: number): Float32Array => Float32Array.from({ length: n }, rand);
    const q = fill(B * S * N * Hd);
    const k = fill(B * S * Nkv * Hd);
    const v = fill(B * S * Nkv * Hd);
    const packed = new Float32Array(B * S * (N + 2 * Nkv) * Hd);
    for (let r = 0; r < B * S; r++) {
      packed.set(q.subarray(r * N * Hd, (r + 1) * N * Hd), r * (N + 2 * Nkv) * Hd);
      packed.set(k.subarray(r * Nkv * Hd, (r + 1) * Nkv * Hd), r * (N + 2 * Nkv) * Hd + N * Hd);
      packed.set(v.subarray(r * Nkv * Hd, (r + 1) * Nkv * Hd), r * (N + 2 * Nkv) * Hd + (N + Nkv) * Hd);
    }
    const common = {
      batchSize: B,
      seqLen: S,
      headSize: Hd,
      maxCacheSeq: M,
      pastKey: fill(B * Nkv * M * Hd),
      pastValue: fill(B * Nkv * M * Hd),
      layout: buildSparseLayout(2, 4, 1, 2),
      totalSequenceLength: 6,
      keyTotalSequenceLengths: [6, 4],
      cosCache: fill(M * half),
      sinCache: fill(M * half),
      rotaryHalf: half,
    };
    const attrs = { numHeads: N, kvNumHeads: Nkv, sparseBlockSize: 2, doRotary: true, rotaryInterleaved: true };
    const a = sparseAttentionReference({ ...common, query: q, key: k, value: v }, attrs);
    const b = sparseAttentionReference({ ...common, query: packed }, attrs);
    expect(a.pastLengths).toEqual([3, 1]);
    expect(Array.from(b.output)).toEqual(Array.from(a.output));
    expect(Array.from(b.presentKey)).toEqual(Array.from(a.presentKey));
    // The appended key of batch 1, step 0, KV head 0 is the rotated new key at position 1.
    const rotated = applyRotary(k.subarray(0 + 3 * Nkv * Hd, 3 * Nkv * Hd + Hd), 1, common.cosCache, common.sinCache, half, true);
    const row = ((1 * Nkv + 0) * M + 1) * Hd;
    expect(Array.from(a.presentKey.subarray(row, row + Hd))).toEqual(rotated.map(roundToF16));
    // Positions past what was written keep their old values.
    const untouched = ((1 * Nkv + 1) * M + 4) * Hd;
    expect(a.presentValue[untouched]).toBe(common.pastValue[untouched]);
  });

  it("head h uses layout h % num_layout and KV head h / (N / Nkv)", () => {
    // N = 4, Nkv = 2, 2 layouts, block size 1; decode S = 1 at position 1 (key total 2). Row 1 of
    // layout 0 lists block 1 only, of layout 1 blocks 0 and 1 (layout 0's columns padded with -1).
    // Zero query: uniform weights.
    const layout = csr(
      [
        [0, 1, 2],
        [0, 1, 3],
      ],
      [
        [0, 1, -1],
        [0, 0, 1],
      ],
    );
    const r = sparseAttentionReference(
      {
        batchSize: 1,
        seqLen: 1,
        headSize: 2,
        maxCacheSeq: 2,
        query: new Float32Array(4 * 2),
        key: new Float32Array(2 * 2),
        value: Float32Array.from([2, 2, 6, 6]),
        pastKey: new Float32Array(2 * 2 * 2),
        pastValue: Float32Array.from([4, 0, 9, 9, 0, 8, 9, 9]),
        layout,
        totalSequenceLength: 2,
        keyTotalSequenceLengths: [2],
      },
      { numHeads: 4, kvNumHeads: 2, sparseBlockSize: 1 },
    );
    // Head 0: layout 0, KV head 0 (key 1). Head 1: layout 1, KV head 0 (keys 0, 1). Head 2:
    // layout 0, KV head 1 (key 1). Head 3: layout 1, KV head 1 (keys 0, 1).
    expect(Array.from(r.output)).toEqual([2, 2, 3, 1, 6, 6, 3, 7]);
    expect(Array.from(r.presentValue)).toEqual([4, 0, 2, 2, 0, 8, 6, 6]);
  });

  it("rotates Q and the new K at past + s (never V), and attends with the rotated Q", () => {
    // H = R = 2, decode S = 1 at position 1 (key total 2), scale 1. Position 1 turns by 90
    // degrees (cos 0, sin 1): q = [1, 0] -> [0, 1]; the new key [1, 0] -> [0, 1] (stored rotated);
    // the cached key 0 is [1, 0]. Scores: 0 for key 0, 1 for key 1 (a Q left unrotated would
    // score 1 and 0). V = [0, 10] is stored as given.
    const r = sparseAttentionReference(
      {
        batchSize: 1,
        seqLen: 1,
        headSize: 2,
        maxCacheSeq: 2,
        query: Float32Array.from([1, 0]),
        key: Float32Array.from([1, 0]),
        value: Float32Array.from([0, 10]),
        pastKey: Float32Array.from([1, 0, 5, 5]),
        pastValue: Float32Array.from([10, 0, 5, 5]),
        layout: csr([[0, 1, 3]], [[0, 0, 1]]),
        totalSequenceLength: 2,
        keyTotalSequenceLengths: [2],
        cosCache: Float32Array.from([1, 0]),
        sinCache: Float32Array.from([0, 1]),
        rotaryHalf: 1,
      },
      { numHeads: 1, kvNumHeads: 1, scale: 1, sparseBlockSize: 1, doRotary: true },
    );
    expect(Array.from(r.presentKey)).toEqual([1, 0, 0, 1]);
    expect(Array.from(r.presentValue)).toEqual([10, 0, 0, 10]);
    const e = Math.E;
    expect(Array.from(r.output)).toEqual([roundToF16(10 / (1 + e)), roundToF16((10 * e) / (1 + e))]);
  });

  it("drops a row past the end of the cache (no write into the next head's rows) and attends to the cache's keys only", () => {
    // Two KV heads of 2 rows each; the call writes positions 1 and 2 (key total 3, S = 2): row 2
    // of head 0 would be row 0 of head 1.
    const Hd = 2;
    const pastKey = Float32Array.from([1, 0, 1, 0, 7, 7, 7, 7]);
    const pastValue = Float32Array.from([3, 3, 9, 9, 5, 5, 6, 6]);
    const r = sparseAttentionReference(
      {
        batchSize: 1,
        seqLen: 2,
        headSize: Hd,
        maxCacheSeq: 2,
        query: new Float32Array(2 * 2 * Hd),
        key: Float32Array.from([0, 0, 0, 0, 2, 2, 4, 4]),
        value: Float32Array.from([1, 1, 1, 1, 8, 8, 8, 8]),
        pastKey,
        pastValue,
        layout: buildSparseLayout(1, 2, 2, 1),
        totalSequenceLength: 3,
        keyTotalSequenceLengths: [3],
      },
      { numHeads: 2, kvNumHeads: 2, sparseBlockSize: 1 },
    );
    expect(r.pastLengths).toEqual([1]);
    // Head 0: row 1 written (s = 0), nothing else; head 1: row 1 written, row 0 untouched.
    expect(Array.from(r.presentKey)).toEqual([1, 0, 0, 0, 7, 7, 0, 0]);
    expect(Array.from(r.presentValue)).toEqual([3, 3, 1, 1, 5, 5, 1, 1]);
    // Query s = 0 (position 1) sees keys 0 and 1 of its head (zero query: uniform weights); s = 1
    // sits at position 2, in a query block past the layout's: it attends to nothing (zeros).
    expect(Array.from(r.output.subarray(0, 4))).toEqual([2, 2, 3, 3]);
    expect(Array.from(r.output.subarray(4, 8))).toEqual([0, 0, 0, 0]);
  });
});
