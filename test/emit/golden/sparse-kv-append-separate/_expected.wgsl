enable f16;

@group(0) @binding(0) var<storage, read> key: array<f16>;
@group(0) @binding(1) var<storage, read> value: array<f16>;
@group(0) @binding(2) var<storage, read> total_sequence_length: array<i32>;
@group(0) @binding(3) var<storage, read> key_total_sequence_lengths: array<i32>;
@group(0) @binding(4) var<storage, read_write> present_key: array<f16>;
@group(0) @binding(5) var<storage, read_write> present_value: array<f16>;
struct Params {
  seqLen: u32,
  batchSize: u32,
}
@group(0) @binding(6) var<uniform> params: Params;

fn raw2_key(i: u32) -> u32 {
  return bitcast<u32>(vec2<f16>(key[i], key[i + 1u]));
}

fn raw2_value(i: u32) -> u32 {
  return bitcast<u32>(vec2<f16>(value[i], value[i + 1u]));
}

fn store_raw2_present_key(i: u32, bits: u32) {
  let h = bitcast<vec2<f16>>(bits);
  present_key[i] = h.x;
  present_key[i + 1u] = h.y;
}

fn store_raw2_present_value(i: u32, bits: u32) {
  let h = bitcast<vec2<f16>>(bits);
  present_value[i] = h.x;
  present_value[i + 1u] = h.y;
}

// com.microsoft.SparseAttention, KV append pass.
// past_key and present_key are the same allocation, so this writes only the new rows:
// one invocation per (batch, kv head, new token, component) of the BNSH cache, landing
// at absolute position past + t. Nothing rewrites the retained history.
const KV_HEADS: u32 = 8u;
const HEAD_DIM: u32 = 128u;
const MAX_CACHE_SEQ: u32 = 4096u;
const KV_HIDDEN: u32 = 1024u;
const WG: u32 = 64u;

// How much history precedes this call's tokens. Prompt mode is determined from
// scalar total_sequence_length rather than per-batch values and forces the past
// length to zero; a padded prompt row must not be read as if it had history.
fn past_sequence_length(batch: u32) -> u32 {
  if (u32(total_sequence_length[0]) == params.seqLen) {
    return 0u;
  }
  let total = u32(key_total_sequence_lengths[batch]);
  return select(0u, total - params.seqLen, total >= params.seqLen);
}

@compute @workgroup_size(WG, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  // 2D-folded flat index: gid.y carries the high bits past the dispatch's
  // per-axis workgroup fold width.
  let index = gid.x + gid.y * 65535u * WG;
  let count = params.batchSize * KV_HEADS * params.seqLen * HEAD_DIM;
  if (index >= count) {
    return;
  }
  let d = index % HEAD_DIM;
  // The even component writes the pair d, d + 1: one u32 of a packed f16 cache.
  if (d % 2u != 0u) {
    return;
  }
  let t = (index / HEAD_DIM) % params.seqLen;
  let kv_head = (index / (HEAD_DIM * params.seqLen)) % KV_HEADS;
  let batch = index / (HEAD_DIM * params.seqLen * KV_HEADS);

  let position = past_sequence_length(batch) + t;
  // A row past the cache's end (ORT rejects such calls; a kernel only sees the data) is dropped:
  // written at `position` it would land in the next KV head's rows.
  if (position >= MAX_CACHE_SEQ) {
    return;
  }
  let dst = ((batch * KV_HEADS + kv_head) * MAX_CACHE_SEQ + position) * HEAD_DIM + d;
  let k_base = ((batch * params.seqLen + t) * KV_HIDDEN) + kv_head * HEAD_DIM;
  let v_base = k_base;

  // Raw bits: the cache holds exactly the f16 values of the input.
  store_raw2_present_key(dst, raw2_key(k_base + d));
  store_raw2_present_value(dst, raw2_value(v_base + d));
}
