import { describe, expect, test } from "vitest";
import { pagedAttentionReference, sequenceOfToken } from "../../src/reference/paged-attention.js";
import { roundToF16 } from "../../src/runtime/f16.js";

// Hand-computed cases: 1 KV head, H = 4, block size 2, so every number can be checked on paper.
const H = 4;
const BS = 2;
const E = Math.E;

describe("pagedAttentionReference", () => {
  test("decode over one cached key and one new key (by hand)", () => {
    // Cache: 3 blocks; sequence 0's logical block 0 is physical block 2. Key 0 is already there.
    const keyCache = new Array(3 * BS * H).fill(0);
    const valueCache = new Array(3 * BS * H).fill(0);
    // block 2, offset 0: k0 = [0,0,0,0], v0 = [1,2,3,4]
    valueCache.splice(2 * BS * H, 4, 1, 2, 3, 4);
    const r = pagedAttentionReference({
      numHeads: 1,
      kvNumHeads: 1,
      query: [1, 0, 0, 0],
      key: [2, 0, 0, 0],
      value: [5, 6, 7, 8],
      keyCache,
      valueCache,
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 1],
      pastSeqlens: [1],
      blockTable: [2, 0],
    });
    // New key lands at position 1 = block_table[0] = 2, offset 1: flat ((2*2 + 1)*1 + 0)*4.
    expect(Array.from(r.keyCache.slice(20, 24))).toEqual([2, 0, 0, 0]);
    expect(Array.from(r.valueCache.slice(20, 24))).toEqual([5, 6, 7, 8]);
    expect(Array.from(r.written).reduce((x, y) => x + y, 0)).toBe(4);
    // scale = 1/sqrt(4) = 0.5: scores 0 and 1; p1 = e / (1 + e); out = v0 + p1 * (v1 - v0).
    const p1 = E / (1 + E);
    const expected = [1, 2, 3, 4].map((v) => v + 4 * p1);
    expect(expected[0]).toBeCloseTo(3.924234, 5);
    for (let c = 0; c < H; c++) {
      expect(r.output[c]).toBe(roundToF16(expected[c]));
      expect(Math.abs(r.output[c] - expected[c])).toBeLessThan(2 ** -9);
    }
  });

  test("prefill is causal and an explicit scale is used", () => {
    // Two new tokens, no past: token 0 sees only itself, token 1 sees both.
    const keyCache = new Array(2 * BS * H).fill(0);
    const valueCache = new Array(2 * BS * H).fill(0);
    const r = pagedAttentionReference({
      numHeads: 1,
      kvNumHeads: 1,
      scale: 1,
      query: [1, 1, 0, 0, 0, 1, 0, 0],
      key: [1, 0, 0, 0, 0, 1, 0, 0],
      value: [2, 0, 0, 0, 0, 0, 0, 4],
      keyCache,
      valueCache,
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 2],
      pastSeqlens: [0],
      blockTable: [1],
    });
    expect(Array.from(r.output.slice(0, 4))).toEqual([2, 0, 0, 0]);
    // Token 1: q = [0,1,0,0], scores q.k0 = 0, q.k1 = 1 -> p = [1, e] / (1 + e).
    const p0 = 1 / (1 + E);
    const p1 = E / (1 + E);
    expect(r.output[4]).toBe(roundToF16(2 * p0));
    expect(r.output[7]).toBe(roundToF16(4 * p1));
    expect(r.output[5]).toBe(0);
    // Both keys land in physical block 1.
    expect(Array.from(r.keyCache.slice(8, 16))).toEqual([1, 0, 0, 0, 0, 1, 0, 0]);
    expect(Array.from(r.keyCache.slice(0, 8))).toEqual(new Array(8).fill(0));
  });

  test("GQA: two query heads share one KV head", () => {
    const keyCache = new Array(BS * H).fill(0);
    const valueCache = new Array(BS * H).fill(0);
    // Packed row: [q head 0 | q head 1 | k | v].
    const r = pagedAttentionReference({
      numHeads: 2,
      kvNumHeads: 1,
      query: [1, 0, 0, 0, 0, 1, 0, 0, 3, 3, 0, 0, 7, 8, 9, 10],
      keyCache,
      valueCache,
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 1],
      pastSeqlens: [0],
      blockTable: [0],
    });
    // One visible key: both heads output v exactly.
    expect(Array.from(r.output)).toEqual([7, 8, 9, 10, 7, 8, 9, 10]);
    expect(Array.from(r.keyCache.slice(0, 4))).toEqual([3, 3, 0, 0]);
  });

  test("slot_mapping: -1 skips the write, reads still go through block_table", () => {
    const keyCache = new Array(2 * BS * H).fill(0.5);
    const valueCache = new Array(2 * BS * H).fill(1);
    const r = pagedAttentionReference({
      numHeads: 1,
      kvNumHeads: 1,
      query: [0, 0, 0, 0, 0, 0, 0, 0],
      key: [1, 1, 1, 1, 2, 2, 2, 2],
      value: [3, 3, 3, 3, 5, 5, 5, 5],
      keyCache,
      valueCache,
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 1, 2],
      pastSeqlens: [0, 1],
      blockTable: [1, 0],
      slotMapping: [-1, 2],
    });
    // Token 0 is skipped; token 1 goes to slot 2 = block 1, offset 0.
    expect(Array.from(r.valueCache.slice(8, 12))).toEqual([5, 5, 5, 5]);
    expect(Array.from(r.written).reduce((x, y) => x + y, 0)).toBe(4);
    // Token 0 (sequence 0, pos 0) reads block 1 offset 0 = just written V = 5 (query is zero: uniform softmax).
    expect(Array.from(r.output.slice(0, 4))).toEqual([5, 5, 5, 5]);
    // Token 1 (sequence 1, pos 1) reads block 0 offsets 0 and 1: both untouched V = 1.
    expect(Array.from(r.output.slice(4, 8))).toEqual([1, 1, 1, 1]);
  });

  test("out-of-range block ids are neither written nor read; zero visible keys give zeros", () => {
    const keyCache = new Array(BS * H).fill(0);
    const valueCache = new Array(BS * H).fill(9);
    const r = pagedAttentionReference({
      numHeads: 1,
      kvNumHeads: 1,
      query: [1, 0, 0, 0],
      key: [1, 0, 0, 0],
      value: [1, 0, 0, 0],
      keyCache,
      valueCache,
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 1],
      pastSeqlens: [0],
      blockTable: [7],
    });
    expect(Array.from(r.written).every((w) => w === 0)).toBe(true);
    expect(Array.from(r.valueCache)).toEqual(new Array(BS * H).fill(9));
    expect(Array.from(r.output)).toEqual([0, 0, 0, 0]);
  });

  test("inputs are rounded to f16", () => {
    const r = pagedAttentionReference({
      numHeads: 1,
      kvNumHeads: 1,
      query: [0, 0, 0, 0],
      key: [0, 0, 0, 0],
      value: [1 + 2 ** -12, 0, 0, 0],
      keyCache: new Array(BS * H).fill(0),
      valueCache: new Array(BS * H).fill(0),
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 1],
      pastSeqlens: [0],
      blockTable: [0],
    });
    expect(r.valueCache[0]).toBe(1);
    expect(r.output[0]).toBe(1);
  });

  test("packed QKV rows [Q heads | K heads | V heads] give what separate key and value give; scale 0 means 1/sqrt(H)", () => {
    // G = 2 (2 query heads, 1 KV head), two new tokens after one cached key.
    const keyCache = new Array(2 * BS * H).fill(0);
    const valueCache = new Array(2 * BS * H).fill(0);
    keyCache.splice(BS * H, 4, 1, 1, 0, 0); // block 1, offset 0: k0
    valueCache.splice(BS * H, 4, 4, 0, 0, 0);
    const q = [
      [1, 0, 0, 0, 0, 2, 0, 0],
      [0, 0, 1, 0, 1, 1, 1, 1],
    ];
    const k = [
      [0, 2, 0, 0],
      [0, 0, 2, 0],
    ];
    const v = [
      [0, 4, 0, 0],
      [0, 0, 4, 0],
    ];
    const common = {
      numHeads: 2,
      kvNumHeads: 1,
      keyCache,
      valueCache,
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 2],
      pastSeqlens: [1],
      blockTable: [1, 0],
    };
    const separate = pagedAttentionReference({ ...common, query: q.flat(), key: k.flat(), value: v.flat() });
    const packed = pagedAttentionReference({ ...common, query: q.flatMap((row, t) => [...row, ...k[t], ...v[t]]), scale: 0 });
    expect(Array.from(packed.output)).toEqual(Array.from(separate.output));
    expect(Array.from(packed.keyCache)).toEqual(Array.from(separate.keyCache));
    expect(Array.from(packed.valueCache)).toEqual(Array.from(separate.valueCache));
    // Keys at positions 1, 2: block 1 offset 1, then block 0 offset 0.
    expect(Array.from(packed.keyCache.slice(BS * H + H, BS * H + 2 * H))).toEqual(k[0]);
    expect(Array.from(packed.valueCache.slice(0, H))).toEqual(v[1]);
    // Token 0 (position 1), head 1: q = [0,2,0,0] with scale 1/2 scores k0 -> 1, k1 -> 2.
    const w = [E, E * E];
    const want = [(4 * w[0]) / (w[0] + w[1]), (4 * w[1]) / (w[0] + w[1]), 0, 0];
    expect(Array.from(packed.output.slice(H, 2 * H))).toEqual(want.map(roundToF16));
  });

  test("T = 0 changes nothing and outputs nothing", () => {
    const keyCache = new Array(BS * H).fill(3);
    const r = pagedAttentionReference({
      numHeads: 1,
      kvNumHeads: 1,
      query: [],
      keyCache,
      valueCache: keyCache,
      blockSize: BS,
      headSize: H,
      cumulativeSequenceLength: [0, 0],
      pastSeqlens: [1],
      blockTable: [0],
    });
    expect(r.output.length).toBe(0);
    expect(Array.from(r.keyCache)).toEqual(keyCache);
    expect(Array.from(r.written).every((x) => x === 0)).toBe(true);
  });

  test("sequenceOfToken skips empty sequences", () => {
    expect(sequenceOfToken([0, 0, 2, 2, 3], 0)).toBe(1);
    expect(sequenceOfToken([0, 0, 2, 2, 3], 2)).toBe(3);
  });
});
