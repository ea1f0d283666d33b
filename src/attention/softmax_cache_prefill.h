#pragma once
// Softmax prefill over a KV cache: a segment of S new tokens per batch row is
// appended to the cache at positions len .. len+S-1 (len: the row's own length,
// its position), then token t of the segment attends over cache positions
// 0 .. len+t (causal across the whole history).
// With len = 0 this is causal softmax attention over the segment; S = 1 is
// softmax_attention_step_reference. Per (b, h) two matrix products (gemm):
//   P = softmax(mask(Q Kᵀ / sqrt(Dh))) (S, len+S),   out = P V
// O(S·(len+S)·Dh) per head; no allocation.
//
// A ring cache (window L = max_len) gives each token the last L positions only,
// exactly as stepping the tokens one by one would: the segment goes in blocks of
// at most L tokens, each attending over the ring and its own keys (masked to the
// window) before its keys overwrite the oldest slots. O(S·2L·Dh) per head.
#include "attention/attention_dims.h"
#include "attention/softmax_kv_cache.h"

namespace rfa {

// out: (B, S, C) overwritten; q, k, v: (B, S, C) (RoPE already applied at their
// absolute positions); len: (B) each row's length before the segment (the caller adds S).
// scores: softmax_cache_prefill_scratch(S, cache.max_len, cache.ring) elements. Throws
// Error if a row's len + S exceeds a linear cache (before any row changes).
template <typename T>
void softmax_cache_prefill(T* out, const KvCacheView<T>& cache, Workspace<T> scores, const T* q, const T* k,
                           const T* v, int S, const int64_t* len);

// Linear: (S, max_len); ring: one block (b, max_len + b) with b = min(S, max_len).
inline size_t softmax_cache_prefill_scratch(int S, int max_len, bool ring = false) {
  const size_t b = static_cast<size_t>(S < max_len ? S : max_len);
  return ring ? b * (static_cast<size_t>(max_len) + b) : static_cast<size_t>(S) * max_len;
}

}  // namespace rfa
