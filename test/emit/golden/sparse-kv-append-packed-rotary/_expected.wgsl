enable f16;

@group(0) @binding(0) var<storage, read> query: array<f16>;
@group(0) @binding(1) var<storage, read> total_sequence_length: array<i32>;
@group(0) @binding(2) var<storage, read> key_total_sequence_lengths: array<i32>;
@group(0) @binding(3) var<storage, read> cos_cache: array<f16>;
@group(0) @binding(4) var<storage, read> sin_cache: array<f16>;
@group(0) @binding(5) var<storage, read_write> present_key: array<f16>;
@group(0) @binding(6) var<storage, read_write> present_value: array<f16>;
struct Params {
  seqLen: u32,
  batchSize: u32,
}
@group(0) @binding(7) var<uniform> params: Params;

fn load_query(i: u32) -> f16 {
  return query[i];
}

fn raw2_query(i: u32) -> u32 {
  return bitcast<u32>(vec2<f16>(query[i], query[i + 1u]));
}

fn load_cos_cache(i: u32) -> f16 {
  return cos_cache[i];
}

fn load_sin_cache(i: u32) -> f16 {
  return sin_cache[i];
}

fn store2_present_key(i: u32, v: vec2<f16>) {
  present_key[i] = v.x;
  present_key[i + 1u] = v.y;
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
// Packed layout: query carries [Q | K | V] on one row, so K starts after the query
// heads and V after the key heads.
const Q_STRIDE: u32 = 6144u;
const PACKED_K_OFFSET: u32 = 4096u;
const PACKED_V_OFFSET: u32 = 5120u;
const WG: u32 = 64u;
const ROTARY_HALF: u32 = 32u;
const ROTARY_DIM: u32 = 64u;

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

// Which cos/sin entry a component uses, and which member of its rotation pair it is.
// The two layouts differ only here: the NeoX split pairs d with d + ROTARY_HALF, and the
// interleaved layout pairs the even lane with the odd one beside it.
fn rotary_slot(d: u32) -> u32 {
  return select(d - ROTARY_HALF, d, d < ROTARY_HALF);
}

fn rotary_partner(d: u32) -> u32 {
  return select(d - ROTARY_HALF, d + ROTARY_HALF, d < ROTARY_HALF);
}

fn rotary_is_first(d: u32) -> bool {
  return d < ROTARY_HALF;
}

// One component of the rotation, written from the component's own point of view so a
// single expression covers both members of the pair: the leading one subtracts its
// partner's sine term, the trailing one adds it.
fn rotary_value(own: f32, partner: f32, cs: f32, sn: f32, first: bool) -> f32 {
  return select(own * cs + partner * sn, own * cs - partner * sn, first);
}

// Component d of the key row at `k_base`, rotated at absolute position `position`.
fn rotated_key(position: u32, k_base: u32, d: u32) -> f32 {
  let own = f32(load_query(k_base + d));
  if (d >= ROTARY_DIM) {
    return own;
  }
  let slot = rotary_slot(d);
  let cs = f32(load_cos_cache(position * ROTARY_HALF + slot));
  let sn = f32(load_sin_cache(position * ROTARY_HALF + slot));
  let partner = f32(load_query(k_base + rotary_partner(d)));
  return rotary_value(own, partner, cs, sn, rotary_is_first(d));
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
  let row = (batch * params.seqLen + t) * Q_STRIDE;
  let k_base = row + PACKED_K_OFFSET + kv_head * HEAD_DIM;
  let v_base = row + PACKED_V_OFFSET + kv_head * HEAD_DIM;

  // The key is rotated at its own absolute position before it enters the cache, so the
  // cache holds post-rotary keys and the attention pass never rotates again.
  let k = vec2<f32>(rotated_key(position, k_base, d), rotated_key(position, k_base, d + 1u));
  store2_present_key(dst, vec2<f16>(k));
  store_raw2_present_value(dst, raw2_query(v_base + d));
}
