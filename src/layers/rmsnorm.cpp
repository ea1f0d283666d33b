#include "layers/rmsnorm.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "kernels/reduce.h"

namespace rfa {

// Channels per block of the dweight reduction (one cache line of floats).
constexpr int kColumnBlock = 16;

template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int64_t N, int C, double eps) {
  parallel_for(N, [&](int64_t n) {
    const T* x = inp + n * C;
    T* y = out + n * C;
    T r = static_cast<T>(1.0 / std::sqrt(static_cast<double>(row_sum_squares(x, C)) / C + eps));
    rstd[n] = r;
    for (int c = 0; c < C; ++c) y[c] = x[c] * r * weight[c];
  });
}

template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd, int64_t N,
                      int C) {
  // forward: y_c = x_c r w_c,  r = (mean_j x_j^2 + eps)^(-1/2),  dr/dx_c = -r^3 x_c / C
  // dx_c = r w_c dy_c - x_c r^3 / C * sum_j dy_j w_j x_j
  parallel_for(N, [&](int64_t n) {
    const T* x = inp + n * C;
    const T* dy = dout + n * C;
    T* dx = dinp + n * C;
    T r = rstd[n];
    T dot = 0;  // sum_j dy_j w_j x_j
#pragma omp simd reduction(+ : dot)
    for (int c = 0; c < C; ++c) dot += dy[c] * weight[c] * x[c];
    T k = r * r * r * dot / static_cast<T>(C);
    for (int c = 0; c < C; ++c) dx[c] += r * weight[c] * dy[c] - k * x[c];
  });
  // dw_c += sum_n dy_nc x_nc r_n. Split by channel block (not row) so no two
  // threads add into the same dweight entry; the row order is fixed.
  int64_t blocks = (C + kColumnBlock - 1) / kColumnBlock;
  parallel_for(blocks, [&](int64_t b) {
    int c0 = static_cast<int>(b) * kColumnBlock;
    int width = std::min(kColumnBlock, C - c0);
    double acc[kColumnBlock] = {};
    for (int64_t n = 0; n < N; ++n) {
      const T* x = inp + n * C + c0;
      const T* dy = dout + n * C + c0;
      double r = rstd[n];
      for (int c = 0; c < width; ++c) acc[c] += static_cast<double>(dy[c] * x[c]) * r;
    }
    for (int c = 0; c < width; ++c) dweight[c0 + c] += static_cast<T>(acc[c]);
  });
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int64_t, int, double);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, int64_t, int, double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*,
                                      int64_t, int);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*, const double*,
                                       const double*, int64_t, int);

}  // namespace rfa
