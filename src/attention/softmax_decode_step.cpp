// The softmax decode step over a KV cache (linear or ring), each row at its own
// position: same math as the reference softmax_attention_step_reference
// (softmax_kv_cache.cpp), which the tests compare it against, with the two products
// per head through gemm.
#include <algorithm>
#include <cmath>

#include "attention/softmax_kv_cache.h"
#include "kernels/vector_math.h"
#include "core/error.h"
#include "kernels/gemm.h"

namespace rfa {

template <typename T>
void softmax_decode_step(T* out, const KvCacheView<T>& cache, const T* q, const T* k, const T* v,
                         const AttentionRows& rows) {
  const int H = cache.H, Dh = cache.Dh, C = H * Dh, L = cache.max_len;
  const T scale = T(1) / std::sqrt(T(Dh));
  for (int i = 0; i < rows.n && !cache.ring; ++i)  // before any row moves
    if (rows.pos[i] >= L)
      fail("kv cache full at {} positions; create the decoder with a larger max_positions (prompt + generated)", L);
  for (int i = 0; i < rows.n; ++i) {
    const int64_t t = rows.pos[i];
    // Ring: position t goes to slot t % L and the step attends over every filled
    // slot (positions t-L+1 .. t once full; slot order is irrelevant to softmax).
    const int slot = static_cast<int>(cache.ring ? t % L : t);
    const int n = static_cast<int>(cache.ring ? std::min<int64_t>(t + 1, L) : t + 1);
    const int b = rows.state_row(i);
    // Per (row, h), two matrix-vector products over the cache (oneDNN streams them;
    // threaded only when long): s = scale K q, out = softmax(s)ᵀ V.
    for (int h = 0; h < H; ++h) {
      const int64_t task = int64_t(b) * H + h;
      const size_t row = static_cast<size_t>(i) * C + static_cast<size_t>(h) * Dh;
      T* kc = cache.k + static_cast<size_t>(task) * L * Dh;  // (max_len, Dh)
      T* vc = cache.v + static_cast<size_t>(task) * L * Dh;
      std::copy(k + row, k + row + Dh, kc + static_cast<size_t>(slot) * Dh);
      std::copy(v + row, v + row + Dh, vc + static_cast<size_t>(slot) * Dh);
      T* s = cache.scores + static_cast<size_t>(task) * L;  // (n)
      gemm<T>(false, true, 1, n, Dh, scale, q + row, Dh, kc, Dh, T(0), s, n, GemmThreads::one);
      const T max = row_max(s, n);
#pragma omp simd
      for (int j = 0; j < n; ++j) s[j] -= max;
      exp_row(s, n);
      const T inv = T(1) / row_sum(s, n);
      gemm<T>(false, false, 1, Dh, n, inv, s, n, vc, Dh, T(0), out + row, C, GemmThreads::one);
    }
  }
}

template void softmax_decode_step<float>(float*, const KvCacheView<float>&, const float*, const float*, const float*,
                                         const AttentionRows&);
template void softmax_decode_step<double>(double*, const KvCacheView<double>&, const double*, const double*,
                                          const double*, const AttentionRows&);

}  // namespace rfa
