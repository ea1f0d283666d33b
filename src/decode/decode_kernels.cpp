#include "decode/decode_kernels.h"

#include <cmath>

#include "kernels/fast_exp.h"
#include "kernels/gemm.h"
#include "kernels/reduce.h"

namespace rfa {
template <typename T>
void matvec_forward(T* out, const T* x, const T* W, int B, int IC, int OC, bool accumulate) {
  gemm<T>(false, true, B, OC, IC, T(1), x, IC, W, IC, accumulate ? T(1) : T(0), out, OC, GemmThreads::one);
}

template <typename T>
void rmsnorm_rows(T* out, const T* x, const T* weight, int B, int C, double eps) {
  for (int b = 0; b < B; ++b) {
    const T* xb = x + int64_t(b) * C;
    T* ob = out + int64_t(b) * C;
    const T r = static_cast<T>(1.0 / std::sqrt(static_cast<double>(row_sum_squares(xb, C)) / C + eps));
#pragma omp simd
    for (int c = 0; c < C; ++c) ob[c] = xb[c] * r * weight[c];
  }
}

template <typename T>
void swiglu_rows(T* out, const T* gate_up, int B, int Hf) {
  for (int b = 0; b < B; ++b) {
    const T* gate = gate_up + int64_t(b) * 2 * Hf;
    const T* up = gate + Hf;
    T* y = out + int64_t(b) * Hf;
#pragma omp simd
    for (int i = 0; i < Hf; ++i) {
      const T g = gate[i];
      y[i] = g / (T(1) + exp_of(-g)) * up[i];
    }
  }
}

template <typename T>
void rope_rows(T* x, const RopeTable& table, int B, int H, int Dh, int64_t pos) {
  const int half = Dh / 2;
  const T* cs = table.cos_row<T>(pos);
  const T* sn = table.sin_row<T>(pos);
  for (int64_t r = 0; r < int64_t(B) * H; ++r) {
    T* y = x + r * Dh;
    for (int i = 0; i < half; ++i) {
      const T x0 = y[2 * i], x1 = y[2 * i + 1];
      y[2 * i] = x0 * cs[i] - x1 * sn[i];
      y[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
    }
  }
}

#define RFA_INSTANTIATE(T)                                                              \
  template void matvec_forward<T>(T*, const T*, const T*, int, int, int, bool);         \
  template void rmsnorm_rows<T>(T*, const T*, const T*, int, int, double);              \
  template void swiglu_rows<T>(T*, const T*, int, int);                                 \
  template void rope_rows<T>(T*, const RopeTable&, int, int, int, int64_t);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
