#pragma once
// The attention of one decoding step, fused for speed; same math and state as
// the reference steps rfa_step (attention/rfa_recurrent.h) and
// softmax_attention_step (attention/softmax_kv_cache.h), which the tests
// compare them against. Work per (row, head) runs serially when small (see
// parallel_grain): at B = 1 a thread fork costs more than the whole step.
#include "attention/rfa_recurrent.h"
#include "attention/softmax_kv_cache.h"

namespace rfa {

// RFA / RFA-Gate, design section 2, one token per row:
//   S = g S + beta phi(k) [v, 1]ᵀ,  [num, den] = phi(q)ᵀ S,  out = num / max(den, eps_d)
// in one pass over S. out: (B, C); in.q, in.k, in.v, in.n: (B, C). Wt: p.W transposed per
// head, (H, Dh, D), so u = W (sigma ⊙ x̄) is Dh vector updates instead of D dot products.
template <typename T>
void rfa_decode_step(T* out, RfaState<T>& state, const RfaInputs<T>& in, const RfaParams<T>& p, const T* Wt,
                     const RfaConfig& c);

// Wt (H, Dh, D) from W (H, D, Dh).
template <typename T>
void rfa_random_transpose(T* Wt, const T* W, int H, int D, int Dh);

// Softmax over the KV cache: appends k, v at cache.len and attends q over 0..len.
// A ring cache appends at slot len % max_len and attends over the last max_len
// positions (min(len+1, max_len) slots); it never fills. out, q, k, v: (B, C).
// Throws Error when a linear cache is full.
template <typename T>
void softmax_decode_step(T* out, KvCache<T>& cache, const T* q, const T* k, const T* v);

}  // namespace rfa
