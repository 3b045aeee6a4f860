/**
 * SparseAttention test cases, shared by the GPU test (test/gpu/sparse-attention.test.ts, Dawn on
 * lavapipe) and the browser test (test/browser): random f16 inputs, past cache rows that no query
 * row sees filled with garbage, the call, the input bytes and the CPU reference of a case.
 */
import type { Call } from "../../src/model/plan.js";
import { f16ArrayToF32, f16ToF32, f32ArrayToF16, f32ToF16, roundToF16 } from "../../src/runtime/f16.js";
import {
  buildSparseLayout,
  layoutRowBlocks,
  pastLengths,
  sparseAttentionReference,
  visibleKeys,
  type CsrLayout,
  type SparseAttentionAttrs,
  type SparseAttentionInputs,
  type SparseAttentionResult,
} from "../../src/reference/sparse-attention.js";
import { F16_GARBAGE } from "./gpu.js";
import { QK_AMPLITUDE } from "./paged-cases.js";

/** The CSR example of docs/ops.md: two layouts of four blocks. */
export const GOLDEN: CsrLayout = {
  numLayout: 2,
  maxBlocks: 4,
  maxNnz: 9,
  rowIndices: Int32Array.from([0, 1, 3, 5, 8, 0, 1, 3, 6, 9]),
  colIndices: Int32Array.from([0, 0, 1, 1, 2, 1, 2, 3, -1, 0, 0, 1, 0, 1, 2, 0, 2, 3]),
};

/** One SparseAttention case: sizes, layout, past lengths (decode) or none (prompt), rotary, QKV packing. */
export interface SparseCase {
  readonly name: string;
  readonly B: number;
  readonly S: number;
  readonly N: number;
  readonly Nkv: number;
  readonly H: number;
  readonly sbs: number;
  readonly maxCacheSeq: number;
  /** [numLayout, localBlocks, vertStride], or the golden CSR example. */
  readonly layout: readonly [number, number, number] | "golden";
  /**
   * undefined: prompt (past 0); else past length per batch entry (decode; key total = past + S, so a
   * negative past gives a key total below S, which the kernels clamp to past 0, and past + S past
   * maxCacheSeq gives rows the kernels drop).
   */
  readonly past?: readonly number[];
  readonly rotary: "off" | "split" | "interleaved";
  /** Rotary dim R (cos/sin tables have R/2 columns); default H. */
  readonly rotaryDim?: number;
  readonly packed: boolean;
  readonly scale?: number;
  readonly tunables?: Readonly<Record<string, number>>;
  /** The layout rewritten by hostileCsr: entries a kernel must skip, rows in shuffled order. */
  readonly hostileCsr?: boolean;
  /** Amplitude of query and key components (default QK_AMPLITUDE); a large one gives scores past the f16 range. */
  readonly qkAmplitude?: number;
  /** Amplitude of value components (default 1); outputs compare at a tolerance scaled by it. */
  readonly vAmplitude?: number;
}

/** The inputs of one case: the reference's inputs and attributes, the call, and the caches as f16 bits (garbage included). */
export interface SparseCaseData {
  readonly layout: CsrLayout;
  readonly totalSequenceLength: number;
  readonly inputs: SparseAttentionInputs & { readonly keyTotalSequenceLengths: readonly number[] };
  readonly attrs: SparseAttentionAttrs;
  readonly call: Call;
  readonly pastKeyBits: Uint16Array;
  readonly pastValueBits: Uint16Array;
  /** Half the rotary dimension (the cos/sin tables' columns); 0 without rotary. */
  readonly half: number;
}

/**
 * Random inputs for a case. Query and key components have amplitude qkAmplitude (default
 * QK_AMPLITUDE: peaked softmax), values vAmplitude (default 1). Past cache rows that some query row of the call sees hold random keys and
 * values; every other row holds F16_GARBAGE.
 */
export function makeSparseCase(c: SparseCase, rand: () => number): SparseCaseData {
  const fill = (n: number, amp = 1): Float32Array => Float32Array.from({ length: n }, () => roundToF16((rand() * 2 - 1) * amp));

  const built = c.layout === "golden" ? GOLDEN : buildSparseLayout(c.layout[0], Math.ceil(c.maxCacheSeq / c.sbs), c.layout[1], c.layout[2]);
  const layout = c.hostileCsr ? hostileCsr(built, rand) : built;
  const qStride = c.packed ? (c.N + 2 * c.Nkv) * c.H : c.N * c.H;
  const past = c.past ?? Array(c.B).fill(0);
  const keyTotals = past.map((p) => p + c.S);
  // Prompt: total == S. Decode: the max over the batch of past + S (which differs from S here).
  const totalSequenceLength = c.past ? Math.max(...keyTotals) : c.S;
  const half = c.rotary === "off" ? 0 : (c.rotaryDim ?? c.H) / 2;
  const angles = Float32Array.from({ length: c.maxCacheSeq * half }, () => rand() * 2 * Math.PI);
  // Past cache rows that some query row of the call sees (any head of the KV head's group) hold
  // random keys and values; every other row (beyond the history, in blocks no head lists)
  // holds garbage (NaN, infinities, huge values) that must never reach an output.
  const keyTotalsGiven = c.past ? keyTotals : keyTotals.map((t, b) => (b % 2 === 1 ? Math.max(1, t - 5) : t));
  const pasts = pastLengths(totalSequenceLength, keyTotalsGiven, c.S);
  const G = c.N / c.Nkv;
  const live = new Uint8Array(c.B * c.Nkv * c.maxCacheSeq);
  for (let b = 0; b < c.B; b++) {
    for (let s = 0; s < c.S; s++) {
      for (let h = 0; h < c.N; h++) {
        for (const k of visibleKeys(layout, h % layout.numLayout, pasts[b] + s, c.sbs)) {
          if (k < c.maxCacheSeq) live[(b * c.Nkv + Math.floor(h / G)) * c.maxCacheSeq + k] = 1;
        }
      }
    }
  }
  const cacheBits = (amp: number): Uint16Array => {
    const bits = f32ArrayToF16(fill(c.B * c.Nkv * c.maxCacheSeq * c.H, amp));
    for (let i = 0; i < bits.length; i++) if (!live[Math.floor(i / c.H)]) bits[i] = F16_GARBAGE[i % F16_GARBAGE.length];
    return bits;
  };
  const qk = c.qkAmplitude ?? QK_AMPLITUDE;
  const vAmp = c.vAmplitude ?? 1;
  const pastKeyBits = cacheBits(qk);
  const pastValueBits = cacheBits(vAmp);
  // Q and K with the model-like amplitude, V with 1 (packed rows: [Q | K | V]).
  const query = fill(c.B * c.S * qStride, qk);
  if (c.packed) {
    for (let r = 0; r < c.B * c.S; r++) query.set(fill(c.Nkv * c.H, vAmp), r * qStride + (c.N + c.Nkv) * c.H);
  }
  const inputs = {
    batchSize: c.B,
    seqLen: c.S,
    headSize: c.H,
    maxCacheSeq: c.maxCacheSeq,
    query,
    key: c.packed ? undefined : fill(c.B * c.S * c.Nkv * c.H, qk),
    value: c.packed ? undefined : fill(c.B * c.S * c.Nkv * c.H, vAmp),
    pastKey: f16ArrayToF32(pastKeyBits),
    pastValue: f16ArrayToF32(pastValueBits),
    layout,
    totalSequenceLength,
    // A prompt row's key total may be shorter than S (padding): prompt mode ignores it.
    keyTotalSequenceLengths: keyTotalsGiven,
    cosCache: half ? angles.map((a) => roundToF16(Math.cos(a))) : undefined,
    sinCache: half ? angles.map((a) => roundToF16(Math.sin(a))) : undefined,
    rotaryHalf: half || undefined,
  };
  const attrs = {
    numHeads: c.N,
    kvNumHeads: c.Nkv,
    scale: c.scale ?? 0,
    sparseBlockSize: c.sbs,
    doRotary: c.rotary !== "off",
    rotaryInterleaved: c.rotary === "interleaved",
  };

  const f16 = (shape: number[]) => ({ shape, dtype: "float16" });
  const i32 = (shape: number[]) => ({ shape, dtype: "int32" });
  const cacheShape = [c.B, c.Nkv, c.maxCacheSeq, c.H];
  const call: Call = {
    inputs: {
      queryT: f16([c.B, c.S, qStride]),
      keyT: c.packed ? null : f16([c.B, c.S, c.Nkv * c.H]),
      valueT: c.packed ? null : f16([c.B, c.S, c.Nkv * c.H]),
      pastKeyT: f16(cacheShape),
      pastValueT: f16(cacheShape),
      blockRowIndicesT: i32([layout.numLayout, layout.maxBlocks + 1]),
      blockColIndicesT: i32([layout.numLayout, layout.maxNnz]),
      totalSequenceLengthT: i32([1]),
      keyTotalSequenceLengthsT: i32([c.B]),
      cosCacheT: half ? f16([c.maxCacheSeq, half]) : null,
      sinCacheT: half ? f16([c.maxCacheSeq, half]) : null,
    },
    outputs: { outputT: f16([c.B, c.S, c.N * c.H]) },
    attrs: {
      num_heads: c.N,
      kv_num_heads: c.Nkv,
      scale: c.scale ?? 0,
      sparse_block_size: c.sbs,
      do_rotary: c.rotary === "off" ? 0 : 1,
      rotary_interleaved: c.rotary === "interleaved" ? 1 : 0,
    },
  };
  return { layout, totalSequenceLength, inputs, attrs, call, pastKeyBits, pastValueBits, half };
}

/**
 * The same rows as `layout` (every block a row lists stays listed, none is added), rewritten the
 * way a hostile or careless producer might: each row in shuffled order, with columns a kernel must
 * skip (negative, past the layout's blocks, past the row's diagonal block) and a duplicate of a
 * listed block, as far as the contract allows (at most maxBlocks² entries per layout); padding
 * after the rows holds a huge column, and the last row pointer of each layout points past
 * maxNnz (kernels and the reference clamp it, so that row reads the padding).
 */
export function hostileCsr(layout: CsrLayout, rand: () => number): CsrLayout {
  const { numLayout, maxBlocks } = layout;
  const cap = maxBlocks * maxBlocks;
  const rows: number[][][] = [];
  for (let l = 0; l < numLayout; l++) {
    const listed = [];
    for (let q = 0; q < maxBlocks; q++) listed.push(layoutRowBlocks(layout, l, q));
    let room = cap - listed.reduce((n, r) => n + r.length, 0);
    rows.push(
      listed.map((cols, q) => {
        const row = [...cols];
        const junk = [-1 - Math.floor(rand() * 9), 2 ** 30 + Math.floor(rand() * 1000), maxBlocks + Math.floor(rand() * 4)];
        if (q + 1 < maxBlocks) junk.push(q + 1 + Math.floor(rand() * (maxBlocks - q - 1)));
        if (cols.length) junk.push(cols[Math.floor(rand() * cols.length)]);
        for (const j of junk) {
          if (room === 0) break;
          row.push(j);
          room--;
        }
        for (let i = row.length - 1; i > 0; i--) {
          const k = Math.floor(rand() * (i + 1));
          [row[i], row[k]] = [row[k], row[i]];
        }
        return row;
      }),
    );
  }
  const maxNnz = Math.max(1, ...rows.map((r) => r.reduce((n, row) => n + row.length, 0)));
  const rowIndices = new Int32Array(numLayout * (maxBlocks + 1));
  const colIndices = new Int32Array(numLayout * maxNnz).fill(2 ** 30);
  rows.forEach((layoutRows, l) => {
    let at = 0;
    layoutRows.forEach((row, q) => {
      rowIndices[l * (maxBlocks + 1) + q] = at;
      colIndices.set(row, l * maxNnz + at);
      at += row.length;
    });
    rowIndices[l * (maxBlocks + 1) + maxBlocks] = maxNnz + 1000;
  });
  return { numLayout, maxBlocks, maxNnz, rowIndices, colIndices };
}

/** The bytes of a case's input tensors by tensor id (the output is not included). */
export function sparseCaseTensors(d: SparseCaseData): Record<string, ArrayBufferView> {
  const tensors: Record<string, ArrayBufferView> = {
    queryT: f32ArrayToF16(d.inputs.query),
    pastKeyT: d.pastKeyBits,
    pastValueT: d.pastValueBits,
    blockRowIndicesT: d.layout.rowIndices,
    blockColIndicesT: d.layout.colIndices,
    totalSequenceLengthT: Int32Array.from([d.totalSequenceLength]),
    keyTotalSequenceLengthsT: Int32Array.from(d.inputs.keyTotalSequenceLengths),
  };
  if (d.inputs.key && d.inputs.value) {
    tensors.keyT = f32ArrayToF16(d.inputs.key);
    tensors.valueT = f32ArrayToF16(d.inputs.value);
  }
  if (d.inputs.cosCache && d.inputs.sinCache) {
    tensors.cosCacheT = f32ArrayToF16(d.inputs.cosCache);
    tensors.sinCacheT = f32ArrayToF16(d.inputs.sinCache);
  }
  return tensors;
}

/** The CPU reference (src/reference/sparse-attention.ts) of a case. */
export function sparseCaseReference(d: SparseCaseData): SparseAttentionResult {
  return sparseAttentionReference(d.inputs, d.attrs);
}

/**
 * 1 for every cache element the call writes (rows past_b .. past_b + S - 1 of each batch entry and
 * KV head that lie inside the cache: rows at or past maxCacheSeq are dropped), else 0.
 */
export function sparseWrittenMask(c: SparseCase, expected: SparseAttentionResult): Uint8Array {
  const written = new Uint8Array(expected.presentKey.length);
  for (let b = 0; b < c.B; b++) {
    for (let kvh = 0; kvh < c.Nkv; kvh++) {
      const first = expected.pastLengths[b];
      const end = Math.min(first + c.S, c.maxCacheSeq);
      if (end <= first) continue;
      const row0 = (b * c.Nkv + kvh) * c.maxCacheSeq;
      written.fill(1, (row0 + first) * c.H, (row0 + end) * c.H);
    }
  }
  return written;
}

/**
 * The first few cache elements of a run that differ from the reference: the written rows
 * (past_b + s) must hold the reference's f16 values, every other element (garbage included) its
 * old bits. A rotated key may also be the other f16 neighbour of the f32 rotation (WGSL lets an
 * f32 -> f16 conversion round either way).
 */
export function sparseCacheErrors(
  c: SparseCase,
  d: SparseCaseData,
  expected: SparseAttentionResult,
  presentKey: Uint16Array,
  presentValue: Uint16Array,
): string[] {
  const written = sparseWrittenMask(c, expected);
  const rotaryDim = c.rotary === "off" ? 0 : 2 * d.half;
  const bad: string[] = [];
  for (const [name, got, want, before] of [
    ["present_key", presentKey, expected.presentKey, d.pastKeyBits],
    ["present_value", presentValue, expected.presentValue, d.pastValueBits],
  ] as const) {
    for (let i = 0; i < before.length && bad.length < 8; i++) {
      const wantBits = written[i] ? f32ToF16(want[i]) : before[i];
      if (got[i] === wantBits) continue;
      // The other neighbour: adjacent bits, and the f32 value lies strictly between the two.
      const exact = expected.presentKeyF32[i];
      const [lo, hi] = [f16ToF32(got[i]), want[i]].sort((x, y) => x - y);
      const rotated = name === "present_key" && written[i] === 1 && i % c.H < rotaryDim;
      const otherNeighbour = rotated && Math.abs(got[i] - wantBits) === 1 && lo < exact && exact < hi;
      if (!otherNeighbour) bad.push(`${name}[${i}] written=${written[i]} got ${got[i].toString(16)} want ${wantBits.toString(16)}`);
    }
  }
  return bad;
}
