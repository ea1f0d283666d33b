#include "attention/softmax_kv_cache.h"

#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "kernels/vector_math.h"
#include "core/error.h"
#include "core/parallel.h"

namespace rfa {

template <typename T>
KvCache<T> kv_cache_create(int B, int H, int Dh, int max_len, bool ring) {
  if (B <= 0 || H <= 0 || Dh <= 0 || max_len <= 0)
    fail("kv cache: B={} H={} Dh={} max_len={} must all be positive", B, H, Dh, max_len);
  KvCache<T> c;
  c.B = B, c.H = H, c.Dh = Dh, c.max_len = max_len, c.ring = ring;
  c.k.assign(static_cast<size_t>(B) * H * max_len * Dh, T(0));
  c.v.assign(c.k.size(), T(0));
  c.scores.assign(static_cast<size_t>(B) * H * max_len, T(0));
  return c;
}

template <typename T>
void kv_cache_reset(KvCache<T>& cache) {
  cache.len = 0;
}

template <typename T>
void softmax_attention_step_reference(T* out, KvCache<T>& cache, const T* q, const T* k, const T* v) {
  RFA_ASSERT(!cache.ring, "softmax_attention_step_reference is the linear-cache reference; ring caches use softmax_decode_step");
  if (cache.len >= cache.max_len)
    fail("kv cache full at {} positions; create it with a larger max_len (decode length + prompt)",
         cache.max_len);
  const int H = cache.H, Dh = cache.Dh, C = H * Dh, L = cache.max_len, t = cache.len;
  const T scale = T(1) / std::sqrt(T(Dh));
  parallel_for(int64_t(cache.B) * H, parallel_grain(2 * int64_t(t + 1) * Dh), [&](int64_t task) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t row = static_cast<size_t>(b) * C + static_cast<size_t>(h) * Dh;
    T* kc = cache.k.data() + static_cast<size_t>(task) * L * Dh;  // (max_len, Dh)
    T* vc = cache.v.data() + static_cast<size_t>(task) * L * Dh;
    std::copy(k + row, k + row + Dh, kc + static_cast<size_t>(t) * Dh);
    std::copy(v + row, v + row + Dh, vc + static_cast<size_t>(t) * Dh);
    T* s = cache.scores.data() + static_cast<size_t>(task) * L;
    T max = -INFINITY;
    for (int j = 0; j <= t; ++j) {
      s[j] = scale * dot(q + row, kc + static_cast<size_t>(j) * Dh, Dh);
      max = s[j] > max ? s[j] : max;
    }
    for (int j = 0; j <= t; ++j) s[j] -= max;
    exp_row(s, t + 1);
    T sum = 0;
    for (int j = 0; j <= t; ++j) sum += s[j];
    T* o = out + row;
    for (int e = 0; e < Dh; ++e) o[e] = 0;
    for (int j = 0; j <= t; ++j) axpy(o, s[j] / sum, vc + static_cast<size_t>(j) * Dh, Dh);
  });
  cache.len = t + 1;
}

#define RFA_INSTANTIATE(T)                                           \
  template KvCache<T> kv_cache_create<T>(int, int, int, int, bool);  \
  template void kv_cache_reset<T>(KvCache<T>&);                      \
  template void softmax_attention_step_reference<T>(T*, KvCache<T>&, const T*, const T*, const T*);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
