#pragma once
// Decoding with softmax attention: a KV cache holds the keys and values of the
// tokens seen so far; each step appends one token per batch row and attends over
// all of them (O(t) per token). Memory grows with position, unlike RFA's state.
#include <vector>

#include "attention/attention_dims.h"

namespace rfa {

template <typename T>
struct KvCache {
  int B = 0, H = 0, Dh = 0;
  int max_len = 0;     // positions the cache can hold
  int len = 0;         // positions filled so far (same for every batch row)
  std::vector<T> k;    // (B, H, max_len, Dh)
  std::vector<T> v;    // (B, H, max_len, Dh)
  std::vector<T> scores;  // (B, H, max_len) step scratch, owned so the step never allocates
};

template <typename T>
KvCache<T> kv_cache_create(int B, int H, int Dh, int max_len);
template <typename T>
void kv_cache_reset(KvCache<T>& cache);  // len = 0

// Appends k, v at position cache.len, attends q over positions 0..len, writes out; len += 1.
// out, q, k, v: (B, C) one token per batch row (RoPE already applied at that position).
// Throws rfa::Error when the cache is full.
template <typename T>
void softmax_attention_step(T* out, KvCache<T>& cache, const T* q, const T* k, const T* v);

}  // namespace rfa
