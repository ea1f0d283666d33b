#include "decode/decode_kernels.h"

#include <cmath>

#include "core/parallel.h"
#include "core/step_profile.h"
#include "kernels/fast_exp.h"
#include "kernels/vector_math.h"

namespace rfa {
template <typename T>
void rmsnorm_rows(T* out, const T* x, const T* weight, int B, int C, double eps) {
  // reads x, writes out: 2 B C elements; 4 flop per element (square-add, scale twice)
  ProfileScope profile(ProfiledKernel::rmsnorm, 4.0 * double(B) * C, sizeof(T) * 2.0 * double(B) * C);
  for (int b = 0; b < B; ++b) {
    const T* xb = x + int64_t(b) * C;
    T* ob = out + int64_t(b) * C;
    const T r = static_cast<T>(1.0 / std::sqrt(static_cast<double>(row_sum_squares(xb, C)) / C + eps));
#pragma omp simd
    for (int c = 0; c < C; ++c) ob[c] = xb[c] * r * weight[c];
  }
}

// Rows split over the pool from a few tens of rows (an exp costs about 16 multiply-adds' time:
// 64 rows of Hf 1024 took 35 us on one core, Zen 5); a row's values do not depend on the split.
template <typename T>
void swiglu_rows(T* out, const T* gate_up, int B, int Hf) {
  ProfileScope profile(ProfiledKernel::swiglu, 0, sizeof(T) * 3.0 * double(B) * Hf);  // reads 2 Hf, writes Hf a row
  parallel_for(B, parallel_grain(int64_t(16) * Hf), [&](int64_t b) {
    const T* gate = gate_up + b * 2 * Hf;
    const T* up = gate + Hf;
    T* y = out + b * Hf;
#pragma omp simd
    for (int i = 0; i < Hf; ++i) {
      const T g = gate[i];
      y[i] = g / (T(1) + exp_of(-g)) * up[i];
    }
  });
}

#define RFA_INSTANTIATE(T)                                                              \
  template void rmsnorm_rows<T>(T*, const T*, const T*, int, int, double);              \
  template void swiglu_rows<T>(T*, const T*, int, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
