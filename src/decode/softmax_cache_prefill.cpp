#include "decode/softmax_cache_prefill.h"

#include <algorithm>
#include <cmath>

#include "attention/vector_math.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/gemm.h"
#include "kernels/reduce.h"

namespace rfa {

template <typename T>
void softmax_cache_prefill(T* out, KvCache<T>& cache, Workspace<T> scores, const T* q, const T* k, const T* v,
                           int S) {
  if (S <= 0) fail("softmax prefill: segment length {} must be positive", S);
  if (int64_t(cache.len) + S > cache.max_len)
    fail("kv cache holds {} positions; {} filled + {} new do not fit. Create the decoder with a larger "
         "max_positions (prompt + tokens to generate)",
         cache.max_len, cache.len, S);
  RFA_ASSERT(scores.size >= softmax_cache_prefill_scratch(S, cache.max_len), "prefill scores {} < {}", scores.size,
             softmax_cache_prefill_scratch(S, cache.max_len));
  const int H = cache.H, Dh = cache.Dh, C = H * Dh, L = cache.max_len, len0 = cache.len, n = len0 + S;
  const T scale = T(1) / std::sqrt(T(Dh));
  for (int64_t task = 0; task < int64_t(cache.B) * H; ++task) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    T* kc = cache.k.data() + static_cast<size_t>(task) * L * Dh;  // (max_len, Dh)
    T* vc = cache.v.data() + static_cast<size_t>(task) * L * Dh;
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
  cache.len = n;
}

template void softmax_cache_prefill<float>(float*, KvCache<float>&, Workspace<float>, const float*, const float*,
                                          const float*, int);
template void softmax_cache_prefill<double>(double*, KvCache<double>&, Workspace<double>, const double*,
                                           const double*, const double*, int);

}  // namespace rfa
