#include "decode/softmax_cache_prefill.h"

#include <algorithm>
#include <cmath>

#include "attention/vector_math.h"
#include "core/error.h"
#include "core/parallel.h"

namespace rfa {

template <typename T>
void softmax_cache_prefill(T* out, KvCache<T>& cache, const T* q, const T* k, const T* v, int S) {
  if (S <= 0) fail("softmax prefill: segment length {} must be positive", S);
  if (int64_t(cache.len) + S > cache.max_len)
    fail("kv cache holds {} positions; {} filled + {} new do not fit. Create the decoder with a larger "
         "max_positions (prompt + tokens to generate)",
         cache.max_len, cache.len, S);
  const int H = cache.H, Dh = cache.Dh, C = H * Dh, L = cache.max_len, len0 = cache.len;
  const T scale = T(1) / std::sqrt(T(Dh));
  parallel_for(int64_t(cache.B) * H, [&](int64_t task) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    T* kc = cache.k.data() + static_cast<size_t>(task) * L * Dh;  // (max_len, Dh)
    T* vc = cache.v.data() + static_cast<size_t>(task) * L * Dh;
    T* s = cache.scores.data() + static_cast<size_t>(task) * L;  // (max_len)
    for (int t = 0; t < S; ++t) {
      const size_t row = (static_cast<size_t>(b) * S + t) * C + static_cast<size_t>(h) * Dh;
      std::copy(k + row, k + row + Dh, kc + static_cast<size_t>(len0 + t) * Dh);
      std::copy(v + row, v + row + Dh, vc + static_cast<size_t>(len0 + t) * Dh);
    }
    for (int t = 0; t < S; ++t) {
      const size_t row = (static_cast<size_t>(b) * S + t) * C + static_cast<size_t>(h) * Dh;
      const int n = len0 + t + 1;  // keys visible to this query
      T max = -INFINITY;
      for (int j = 0; j < n; ++j) {
        s[j] = scale * dot(q + row, kc + static_cast<size_t>(j) * Dh, Dh);
        max = s[j] > max ? s[j] : max;
      }
      for (int j = 0; j < n; ++j) s[j] -= max;
      exp_row(s, n);
      T sum = 0;
      for (int j = 0; j < n; ++j) sum += s[j];
      const T inv = T(1) / sum;
      T* o = out + row;
      std::fill(o, o + Dh, T(0));
      for (int j = 0; j < n; ++j) axpy(o, s[j] * inv, vc + static_cast<size_t>(j) * Dh, Dh);
    }
  });
  cache.len = len0 + S;
}

template void softmax_cache_prefill<float>(float*, KvCache<float>&, const float*, const float*, const float*, int);
template void softmax_cache_prefill<double>(double*, KvCache<double>&, const double*, const double*,
                                            const double*, int);

}  // namespace rfa
