#pragma once
// Decoding with softmax attention: a KV cache holds the keys and values of the
// tokens seen so far; each step appends one token per batch row and attends over
// all of them (O(t) per token). Memory grows with position, unlike RFA's state.
// Every row has its own length: the position it is at (the decoder's), passed in.
//
// A ring cache (window > 0) keeps only the last `max_len` positions: position p
// lives in slot p % max_len and a step attends over min(p+1, max_len) slots. The
// slot order does not matter: RoPE rotated each key at its own absolute position
// before it was cached, and softmax attention is a sum over keys. Relative
// distances stay < max_len, as in training with context max_len.
#include <vector>

#include "attention/attention_dims.h"

namespace rfa {

// The cache of B rows, in memory the caller owns (a decoding state's tensors).
template <typename T>
struct KvCacheView {
  int B = 0, H = 0, Dh = 0;
  int max_len = 0;        // slots: positions a row can hold (ring: the window)
  bool ring = false;      // slot = position % max_len, attend over the last max_len positions
  T* k = nullptr;         // (B, H, max_len, Dh)
  T* v = nullptr;         // (B, H, max_len, Dh)
  T* scores = nullptr;    // (B, H, max_len) step scratch
};

// Slots a row at position `len` (tokens appended) fills: min(len, max_len) for a ring, len otherwise.
inline int kv_cache_filled(int len, int max_len) { return len < max_len ? len : max_len; }

// An owning cache whose rows all stand at one length (the tests' and the references').
template <typename T>
struct KvCache {
  int B = 0, H = 0, Dh = 0;
  int max_len = 0;
  bool ring = false;
  int len = 0;         // positions appended so far, every row; ring: may exceed max_len
  std::vector<T> k;    // (B, H, max_len, Dh)
  std::vector<T> v;    // (B, H, max_len, Dh)
  std::vector<T> scores;  // (B, H, max_len)
  KvCacheView<T> view() { return {B, H, Dh, max_len, ring, k.data(), v.data(), scores.data()}; }
};

// ring = false: a linear cache of max_len positions; ring = true: a window of the last max_len.
template <typename T>
KvCache<T> kv_cache_create(int B, int H, int Dh, int max_len, bool ring = false);
template <typename T>
void kv_cache_reset(KvCache<T>& cache);  // len = 0

// Appends k, v at position cache.len, attends q over positions 0..len, writes out; len += 1.
// out, q, k, v: (B, C) one token per batch row (RoPE already applied at that position).
// Throws rfa::Error when the cache is full. The plain reference: linear caches only.
template <typename T>
void softmax_attention_step_reference(T* out, KvCache<T>& cache, const T* q, const T* k, const T* v);

// The decoding step (softmax_decode_step.cpp): the same through gemm, for the listed rows
// (input row i is cache row rows.state_row(i) at position rows.pos[i]), and for a ring cache
// too, which appends at slot pos % max_len and attends over the last max_len positions
// (min(pos+1, max_len) slots); a ring never fills. out, q, k, v: (rows.n, C).
// Throws Error when a linear cache is full.
template <typename T>
void softmax_decode_step(T* out, const KvCacheView<T>& cache, const T* q, const T* k, const T* v,
                         const AttentionRows& rows);

}  // namespace rfa
