#pragma once
// Softmax prefill over a KV cache: a segment of S new tokens per batch row is
// appended to the cache at positions len .. len+S-1, then token t of the segment
// attends over cache positions 0 .. len+t (causal across the whole history).
// With len = 0 this is causal softmax attention over the segment; S = 1 is
// softmax_attention_step. O(S·(len+S)·Dh) per head; no allocation (scores use
// the cache's own (B, H, max_len) scratch row of the (b, h) task).
#include "attention/softmax_kv_cache.h"

namespace rfa {

// out: (B, S, C) overwritten; q, k, v: (B, S, C) (RoPE already applied at their
// absolute positions). Throws Error if len + S exceeds the cache; len += S.
template <typename T>
void softmax_cache_prefill(T* out, KvCache<T>& cache, const T* q, const T* k, const T* v, int S);

}  // namespace rfa
