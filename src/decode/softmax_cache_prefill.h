#pragma once
// Softmax prefill over a KV cache: a segment of S new tokens per batch row is
// appended to the cache at positions len .. len+S-1, then token t of the segment
// attends over cache positions 0 .. len+t (causal across the whole history).
// With len = 0 this is causal softmax attention over the segment; S = 1 is
// softmax_attention_step. Per (b, h) two matrix products (gemm):
//   P = softmax(mask(Q Kᵀ / sqrt(Dh))) (S, len+S),   out = P V
// O(S·(len+S)·Dh) per head; no allocation.
#include "attention/attention_dims.h"
#include "attention/softmax_kv_cache.h"

namespace rfa {

// out: (B, S, C) overwritten; q, k, v: (B, S, C) (RoPE already applied at their
// absolute positions). scores: softmax_cache_prefill_scratch(S, cache.max_len)
// elements. Throws Error if len + S exceeds the cache; len += S.
template <typename T>
void softmax_cache_prefill(T* out, KvCache<T>& cache, Workspace<T> scores, const T* q, const T* k, const T* v,
                           int S);

inline size_t softmax_cache_prefill_scratch(int S, int max_len) { return static_cast<size_t>(S) * max_len; }

}  // namespace rfa
