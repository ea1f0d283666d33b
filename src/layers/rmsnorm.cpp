#include "layers/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/parallel.h"
#include "core/step_profile.h"
#include "kernels/vector_math.h"

namespace rfa {

// Channels per block of the dweight reduction: 64 floats = 4 independent
// AVX-512 accumulator chains (a 16-wide block is latency-bound, ~1.5x slower),
// and blocks start on cache-line boundaries so threads never share a line.
constexpr int kColumnBlock = 64;

namespace {

// acc[c] += sum_n dy[n, c] x[n, c] r[n] for c in [c0, c0 + width).
template <typename T, int kWidth>
void dweight_block(T* acc, const T* dout, const T* inp, const T* rstd, int64_t N, int C, int c0, int width) {
  const int w = kWidth > 0 ? kWidth : width;  // compile-time width for full blocks
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C + c0;
    const T* dy = dout + n * C + c0;
    T r = rstd[n];
    RFA_OMP_SIMD_FULL
    for (int c = 0; c < w; ++c) acc[c] += dy[c] * x[c] * r;
  }
}

// Rows per block of the forward: every row's sum of squares in the block first, then the
// roots and divisions, then the scaling. One row at a time, each row's sum -> sqrt -> divide ->
// scale chain stalled the next (a throwaway harness, one thread, x86-64-v3: 384 rows of 128
// 9.4 -> 6.8 µs, 2048 rows of 384 182 -> 114 µs; the same bits).
constexpr int kNormBlock = 16;

// Row kernels take their pointers as parameters: read through a lambda's
// captures inside the OpenMP outlined body, `weight[c]` compiled to a gather.
// y = x r w for rows [begin, end), r = (mean_j x_j^2 + eps)^(-1/2) (in double, as rstd).
// X = T (a writable x): x += residual first, the residual add fused into the norm's row pass;
// X = const T: no residual.
template <typename T, typename X>
void forward_rows(T* y, T* rstd, X* x, const T* residual, const T* weight, int64_t begin, int64_t end, int C,
                  double eps) {
  constexpr bool kResidual = !std::is_const_v<X>;
  double sums[kNormBlock];
  for (int64_t n0 = begin; n0 < end; n0 += kNormBlock) {
    const int m = static_cast<int>(std::min<int64_t>(kNormBlock, end - n0));
    for (int i = 0; i < m; ++i) {
      X* xi = x + (n0 + i) * C;
      if constexpr (kResidual) {
        const T* ri = residual + (n0 + i) * C;
        RFA_OMP_SIMD_FULL
        for (int c = 0; c < C; ++c) xi[c] += ri[c];
      }
      sums[i] = static_cast<double>(row_sum_squares(xi, C));
    }
#pragma omp simd  // (-fno-math-errno: the vector sqrt, the same bits as one at a time)
    for (int i = 0; i < m; ++i) rstd[n0 + i] = static_cast<T>(1.0 / std::sqrt(sums[i] / C + eps));
    for (int i = 0; i < m; ++i) {
      const T r = rstd[n0 + i];
      const T* xi = x + (n0 + i) * C;
      T* yi = y + (n0 + i) * C;
      RFA_OMP_SIMD_FULL  // (kernels/simd.h: the whole register; y never overlaps x or weight)
      for (int c = 0; c < C; ++c) yi[c] = xi[c] * r * weight[c];
    }
  }
}

template <typename T, bool kOverwrite>
void backward_row(T* dx, const T* dy, const T* x, const T* weight, T r, int C) {
  T dot = 0;  // sum_j dy_j w_j x_j
#pragma omp simd reduction(+ : dot)
  for (int c = 0; c < C; ++c) dot += dy[c] * weight[c] * x[c];
  T k = r * r * r * dot / static_cast<T>(C);
  RFA_OMP_SIMD_FULL  // (dx never overlaps the inputs)
  for (int c = 0; c < C; ++c) {
    T d = r * weight[c] * dy[c] - k * x[c];
    dx[c] = kOverwrite ? d : dx[c] + d;
  }
}

// forward: y_c = x_c r w_c,  r = (mean_j x_j^2 + eps)^(-1/2),  dr/dx_c = -r^3 x_c / C
// dx_c = r w_c dy_c - x_c r^3 / C * sum_j dy_j w_j x_j
// dw_c += sum_n dy_nc x_nc r_n.
// One parallel region for both passes (one fork/join less per call): neither
// reads what the other writes. Thread t takes a static share of the rows, then
// the channel blocks t, t + nt, ...: blocks (not rows) so no two threads add
// into the same dweight entry, and each block sums its rows in a fixed order.
template <typename T, bool kOverwrite>
void backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd, int64_t N,
              int C) {
  const int blocks = (C + kColumnBlock - 1) / kColumnBlock;
  parallel_region([&](int t, int nt) {
    const int64_t n_begin = N * t / nt, n_end = N * (t + 1) / nt;
    for (int64_t n = n_begin; n < n_end; ++n)
      backward_row<T, kOverwrite>(dinp + n * C, dout + n * C, inp + n * C, weight, rstd[n], C);
    for (int b = t; b < blocks; b += nt) {
      int c0 = b * kColumnBlock;
      int width = std::min(kColumnBlock, C - c0);
      T acc[kColumnBlock] = {};
      if (width == kColumnBlock)
        dweight_block<T, kColumnBlock>(acc, dout, inp, rstd, N, C, c0, width);
      else
        dweight_block<T, 0>(acc, dout, inp, rstd, N, C, c0, width);
      for (int c = 0; c < width; ++c) dweight[c0 + c] += acc[c];
    }
  });
}

}  // namespace

// Thread t takes rows [N t / nt, N (t + 1) / nt): the static partition of the products
// split by rows (kernels/gemm.h) and of the backward, so a row stays on its core.
template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int64_t N, int C, double eps) {
  // reads inp, writes out: 2 N C elements; 4 flop per element (square-add, scale twice)
  ProfileScope profile(ProfiledKernel::rmsnorm, 4.0 * double(N) * C, sizeof(T) * 2.0 * double(N) * C);
  parallel_region([&](int t, int nt) {
    forward_rows<T, const T>(out, rstd, inp, nullptr, weight, N * t / nt, N * (t + 1) / nt, C, eps);
  });
}

template <typename T>
void residual_rmsnorm_forward(T* out, T* rstd, T* inp, const T* residual, const T* weight, int64_t N, int C,
                              double eps) {
  // reads inp and residual, writes inp and out: 4 N C elements
  ProfileScope profile(ProfiledKernel::rmsnorm, 5.0 * double(N) * C, sizeof(T) * 4.0 * double(N) * C);
  parallel_region([&](int t, int nt) {
    forward_rows<T, T>(out, rstd, inp, residual, weight, N * t / nt, N * (t + 1) / nt, C, eps);
  });
}

template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd, int64_t N,
                      int C, GradWrite dinp_write) {
  // reads dout and inp (and dinp when adding), writes dinp: 3-4 N C elements
  const double elements = (dinp_write == GradWrite::overwrite ? 3.0 : 4.0) * double(N) * C;
  ProfileScope profile(ProfiledKernel::rmsnorm, 8.0 * double(N) * C, sizeof(T) * elements);
  if (dinp_write == GradWrite::overwrite)
    backward<T, true>(dinp, dweight, dout, inp, weight, rstd, N, C);
  else
    backward<T, false>(dinp, dweight, dout, inp, weight, rstd, N, C);
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int64_t, int, double);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, int64_t, int, double);
template void residual_rmsnorm_forward<float>(float*, float*, float*, const float*, const float*, int64_t, int,
                                              double);
template void residual_rmsnorm_forward<double>(double*, double*, double*, const double*, const double*, int64_t,
                                               int, double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*,
                                      int64_t, int, GradWrite);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*, const double*,
                                       const double*, int64_t, int, GradWrite);

}  // namespace rfa
