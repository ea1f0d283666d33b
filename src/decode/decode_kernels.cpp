#include "decode/decode_kernels.h"

#include <cmath>

#include "kernels/fast_exp.h"
#include "kernels/vector_math.h"

namespace rfa {
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

#define RFA_INSTANTIATE(T)                                                              \
  template void rmsnorm_rows<T>(T*, const T*, const T*, int, int, double);              \
  template void swiglu_rows<T>(T*, const T*, int, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
