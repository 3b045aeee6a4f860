// The 64 mixed PagedAttention calls the plan-time benchmarks plan (bench/run.js section 3,
// bench/plan-time.mjs, bench/plan-cuts.mjs): batch 1..8, one to three tokens per sequence, packed
// and separate QKV in turn, a slot mapping on every fourth call; a 4096 × 16-token cache of 8 KV
// heads of 128 channels, 32 query heads.
export function pagedPlanCalls() {
  const calls = [];
  for (let i = 0; i < 64; i++) {
    const batch = 1 + (i % 8);
    const tokens = batch * (1 + (i % 3));
    const packed = i % 2 === 0;
    const inputs = {
      queryT: { shape: [tokens, packed ? (32 + 16) * 128 : 32 * 128], dtype: "float16" },
      keyCacheT: { shape: [4096, 16, 8, 128], dtype: "float16" },
      valueCacheT: { shape: [4096, 16, 8, 128], dtype: "float16" },
      cumulativeSequenceLengthT: { shape: [batch + 1], dtype: "int32" },
      pastSeqlensT: { shape: [batch], dtype: "int32" },
      blockTableT: { shape: [batch, 256], dtype: "int32" },
    };
    if (!packed) {
      inputs.keyT = { shape: [tokens, 8 * 128], dtype: "float16" };
      inputs.valueT = { shape: [tokens, 8 * 128], dtype: "float16" };
    }
    if (i % 4 === 1) inputs.slotMappingT = { shape: [tokens], dtype: "int32" };
    calls.push({
      inputs,
      outputs: { outputT: { shape: [tokens, 32 * 128], dtype: "float16" } },
      attrs: { num_heads: 32, kv_num_heads: 8 },
    });
  }
  return calls;
}
