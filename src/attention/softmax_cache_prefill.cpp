#include "attention/softmax_cache_prefill.h"

#include <algorithm>
#include <cmath>

#include "kernels/fast_exp.h"
#include "kernels/vector_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/gemm.h"

namespace rfa {

namespace {

// One block of b <= L new tokens (rows t0 .. t0+b-1 of the segment) of batch row bi
// through its ring of L slots holding positions < p0. Row t (position
// p0+t) sees the cached positions >= p0+t-L+1 and the block's keys 0..t; the
// block's keys are read from k, v directly and written to the ring only after
// every row attended, so no key a row needs is overwritten first. Per (b, h):
//   P = softmax(mask(Q [K_ring; K_block]ᵀ / sqrt(Dh))) (b, filled + b),
//   out = P[:, :filled] V_ring + P[:, filled:] V_block.
template <typename T>
void ring_prefill_block(T* out, const KvCacheView<T>& cache, T* P, const T* q, const T* k, const T* v, int S, int bi,
                        int64_t p0, int t0, int b) {
  const int H = cache.H, Dh = cache.Dh, C = H * Dh, L = cache.max_len;
  const int filled = static_cast<int>(std::min<int64_t>(p0, L)), n = filled + b;
  const T scale = T(1) / std::sqrt(T(Dh));
  for (int h = 0; h < H; ++h) {
    const int64_t task = int64_t(bi) * H + h;
    T* kc = cache.k + static_cast<size_t>(task) * L * Dh;  // (L, Dh) slots
    T* vc = cache.v + static_cast<size_t>(task) * L * Dh;
    // Row 0 of the block's (b, Dh) head slice at stride C.
    const size_t head = static_cast<size_t>(bi) * S * C + static_cast<size_t>(t0) * C + static_cast<size_t>(h) * Dh;
    if (filled > 0) gemm<T>(false, true, b, filled, Dh, scale, q + head, C, kc, Dh, T(0), P, n);
    gemm<T>(false, true, b, b, Dh, scale, q + head, C, k + head, C, T(0), P + filled, n);
    // Slot s (< filled) holds position p0-1 - ((p0-1-s) mod L), the newest one congruent to s: with
    // r0 = (p0-1) mod L, that is p0-1-r0 + s for s <= r0 and L less for s > r0 (no division per
    // slot: a 64-bit idiv per slot and row was most of a ring prefill after its exp).
    const int64_t r0 = filled > 0 ? (p0 - 1) % L : 0, base = p0 - 1 - r0;
    parallel_for(b, [&](int64_t t) {
      T* p = P + t * n;
      const int64_t first = int64_t(p0) + t - L + 1;  // oldest position row t may see
      for (int s = 0; s < filled; ++s)
        if (base + s - (s > r0 ? L : 0) < first) p[s] = -INFINITY;
      for (int j = static_cast<int>(t) + 1; j < b; ++j) p[filled + j] = -INFINITY;
      const T max = row_max(p, n);  // finite: the row's own key is always visible
      // exp_of as the linear cache's rows (exp_row), a vector of lanes at a time, the masked ones
      // then 0 (exp_of of -inf is its clamp's 1e-38, not 0). With libm's scalar std::exp this loop
      // was nearly all of a ring prefill: 3,000 tokens through a 2048-slot window took twice the time
      // of the same prompt over the whole cache.
#pragma omp simd
      for (int j = 0; j < n; ++j) {
        const T e = exp_of(p[j] - max);
        p[j] = p[j] == -INFINITY ? T(0) : e;
      }
      const T inv = T(1) / row_sum(p, n);
      for (int j = 0; j < n; ++j) p[j] *= inv;
    });
    if (filled > 0) gemm<T>(false, false, b, Dh, filled, T(1), P, n, vc, Dh, T(0), out + head, C);
    gemm<T>(false, false, b, Dh, b, T(1), P + filled, n, v + head, C, filled > 0 ? T(1) : T(0), out + head, C);
    for (int j = 0; j < b; ++j) {
      const size_t slot = static_cast<size_t>((p0 + j) % L) * Dh, src = head + static_cast<size_t>(j) * C;
      std::copy(k + src, k + src + Dh, kc + slot);
      std::copy(v + src, v + src + Dh, vc + slot);
    }
  }
}

}  // namespace

template <typename T>
void softmax_cache_prefill(T* out, const KvCacheView<T>& cache, Workspace<T> scores, const T* q, const T* k,
                           const T* v, int S, const int64_t* len) {
  if (S <= 0) fail("softmax prefill: segment length {} must be positive", S);
  RFA_ASSERT(scores.size >= softmax_cache_prefill_scratch(S, cache.max_len, cache.ring), "prefill scores {} < {}",
             scores.size, softmax_cache_prefill_scratch(S, cache.max_len, cache.ring));
  if (cache.ring) {
    // Per row, blocks of at most L tokens: a block's keys all lie within the window of its rows.
    for (int b = 0; b < cache.B; ++b)
      for (int t0 = 0; t0 < S; t0 += cache.max_len)
        ring_prefill_block(out, cache, scores.data, q, k, v, S, b, len[b] + t0, t0, std::min(cache.max_len, S - t0));
    return;
  }
  for (int b = 0; b < cache.B; ++b)
    if (len[b] + S > cache.max_len)
      fail("kv cache holds {} positions; {} filled + {} new do not fit. Create the decoder with a larger "
           "max_positions (prompt + tokens to generate)",
           cache.max_len, len[b], S);
  const int H = cache.H, Dh = cache.Dh, C = H * Dh, L = cache.max_len;
  const T scale = T(1) / std::sqrt(T(Dh));
  for (int64_t task = 0; task < int64_t(cache.B) * H; ++task) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const int len0 = static_cast<int>(len[b]), n = len0 + S;
    T* kc = cache.k + static_cast<size_t>(task) * L * Dh;  // (max_len, Dh)
    T* vc = cache.v + static_cast<size_t>(task) * L * Dh;
    const size_t head = static_cast<size_t>(b) * S * C + static_cast<size_t>(h) * Dh;  // row 0 of (S, Dh) at stride C
    for (int t = 0; t < S; ++t) {
      std::copy(k + head + size_t(t) * C, k + head + size_t(t) * C + Dh, kc + static_cast<size_t>(len0 + t) * Dh);
      std::copy(v + head + size_t(t) * C, v + head + size_t(t) * C + Dh, vc + static_cast<size_t>(len0 + t) * Dh);
    }
    T* P = scores.data;  // (S, n)
    gemm<T>(false, true, S, n, Dh, scale, q + head, C, kc, Dh, T(0), P, n);
    // Row t sees keys 0 .. len0 + t: softmax over them, zeros after.
    parallel_for(S, [&](int64_t t) {
      T* p = P + t * n;
      const int seen = len0 + static_cast<int>(t) + 1;
      const T max = row_max(p, seen);
      for (int j = 0; j < seen; ++j) p[j] -= max;
      exp_row(p, seen);
      const T inv = T(1) / row_sum(p, seen);
      for (int j = 0; j < seen; ++j) p[j] *= inv;
      std::fill(p + seen, p + n, T(0));
    });
    gemm<T>(false, false, S, Dh, n, T(1), P, n, vc, Dh, T(0), out + head, C);
  }
}

template void softmax_cache_prefill<float>(float*, const KvCacheView<float>&, Workspace<float>, const float*,
                                          const float*, const float*, int, const int64_t*);
template void softmax_cache_prefill<double>(double*, const KvCacheView<double>&, Workspace<double>, const double*,
                                           const double*, const double*, int, const int64_t*);

}  // namespace rfa
