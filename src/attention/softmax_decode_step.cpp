// The softmax decode step over a KV cache (linear or ring), each row at its own
// position: same math as the reference softmax_attention_step_reference
// (softmax_kv_cache.cpp), which the tests compare it against. Each (row, head) is a
// task: two matrix-vector products over that head's cache, written here (a dot per
// slot, then the probabilities' weighted sum of the value rows) so that the tasks can
// run across the pool; through oneDNN they had to run one after another on the
// calling thread (no gemm inside a parallel region), which left the second core idle
// when many rows step together.
#include <algorithm>
#include <cmath>

#include "attention/softmax_kv_cache.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

// o (Dh) = sum_j (s[j] inv) v_j over the n value rows vc (n, Dh), j ascending: axpy's sums, each
// element's multiply-adds in the same order, with o in NV registers (and a tail of fewer than W
// lanes in scalars) for the whole pass. Through memory each slot's += waited on the previous
// slot's store of o: a chain of store-forwarding and multiply-add latency as long as the cache.
template <typename T, int NV>
void weighted_rows_in_registers(T* o, const T* s, T inv, const T* vc, int n, int Dh) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  constexpr int kTailMax = W;
  V acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = V{};
  const int tail = Dh - NV * W;  // 0 .. W-1
  T tail_acc[kTailMax] = {};
  for (int j = 0; j < n; ++j) {
    const T* vj = vc + static_cast<size_t>(j) * Dh;
    const T a = s[j] * inv;
    for (int v = 0; v < NV; ++v) acc[v] += a * V(simd_load(vj + v * W));
    for (int e = 0; e < tail; ++e) tail_acc[e] += a * vj[NV * W + e];
  }
  for (int v = 0; v < NV; ++v) simd_store(o + v * W, acc[v]);
  for (int e = 0; e < tail; ++e) o[NV * W + e] = tail_acc[e];
}

template <typename T>
void weighted_rows(T* o, const T* s, T inv, const T* vc, int n, int Dh) {
  switch (Dh / Simd<T>::W) {  // the registers Dh fills; up to 8 (Dh 128 + a tail at 16 lanes)
    case 1: return weighted_rows_in_registers<T, 1>(o, s, inv, vc, n, Dh);
    case 2: return weighted_rows_in_registers<T, 2>(o, s, inv, vc, n, Dh);
    case 3: return weighted_rows_in_registers<T, 3>(o, s, inv, vc, n, Dh);
    case 4: return weighted_rows_in_registers<T, 4>(o, s, inv, vc, n, Dh);
    case 5: return weighted_rows_in_registers<T, 5>(o, s, inv, vc, n, Dh);
    case 6: return weighted_rows_in_registers<T, 6>(o, s, inv, vc, n, Dh);
    case 7: return weighted_rows_in_registers<T, 7>(o, s, inv, vc, n, Dh);
    case 8: return weighted_rows_in_registers<T, 8>(o, s, inv, vc, n, Dh);
    default:
      std::fill(o, o + Dh, T(0));
      for (int j = 0; j < n; ++j) axpy(o, s[j] * inv, vc + static_cast<size_t>(j) * Dh, Dh);
  }
}

}  // namespace

template <typename T>
void softmax_decode_step(T* out, const KvCacheView<T>& cache, const T* q, const T* k, const T* v,
                         const AttentionRows& rows) {
  const int H = cache.H, Dh = cache.Dh, C = H * Dh, L = cache.max_len;
  const T scale = T(1) / std::sqrt(T(Dh));
  for (int i = 0; i < rows.n && !cache.ring; ++i)  // before any row moves
    if (rows.pos[i] >= L)
      fail("kv cache full at {} positions; create the decoder with a larger max_positions (prompt + generated)", L);
  int64_t longest = 0;  // slots the longest row attends over: the work per task for the grain
  for (int i = 0; i < rows.n; ++i) longest = std::max<int64_t>(longest, std::min<int64_t>(rows.pos[i] + 1, L));
  parallel_for(int64_t(rows.n) * H, parallel_grain(2 * longest * Dh), [&](int64_t ih) {
    const int i = static_cast<int>(ih / H), h = static_cast<int>(ih % H);
    const int64_t t = rows.pos[i];
    // Ring: position t goes to slot t % L and the step attends over every filled
    // slot (positions t-L+1 .. t once full; slot order is irrelevant to softmax).
    const int slot = static_cast<int>(cache.ring ? t % L : t);
    const int n = static_cast<int>(cache.ring ? std::min<int64_t>(t + 1, L) : t + 1);
    const int64_t task = int64_t(rows.state_row(i)) * H + h;
    const size_t row = static_cast<size_t>(i) * C + static_cast<size_t>(h) * Dh;
    T* kc = cache.k + static_cast<size_t>(task) * L * Dh;  // (max_len, Dh)
    T* vc = cache.v + static_cast<size_t>(task) * L * Dh;
    std::copy(k + row, k + row + Dh, kc + static_cast<size_t>(slot) * Dh);
    std::copy(v + row, v + row + Dh, vc + static_cast<size_t>(slot) * Dh);
    // s = scale K q over the n filled slots, then out = softmax(s)ᵀ V.
    T* s = cache.scores + static_cast<size_t>(task) * L;  // (n)
    for (int j = 0; j < n; ++j) s[j] = scale * dot(q + row, kc + static_cast<size_t>(j) * Dh, Dh);
    const T max = row_max(s, n);
#pragma omp simd
    for (int j = 0; j < n; ++j) s[j] -= max;
    exp_row(s, n);
    const T inv = T(1) / row_sum(s, n);
    weighted_rows(out + row, s, inv, vc, n, Dh);
  });
}

template void softmax_decode_step<float>(float*, const KvCacheView<float>&, const float*, const float*, const float*,
                                         const AttentionRows&);
template void softmax_decode_step<double>(double*, const KvCacheView<double>&, const double*, const double*,
                                          const double*, const AttentionRows&);

}  // namespace rfa
