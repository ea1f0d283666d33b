// The output norm and gate (output_gate.h; the math: docs/output-gate.md).
#include "attention/output_gate.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "core/step_profile.h"
#include "kernels/fast_exp.h"
#include "kernels/step_gemm.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

// Channels per block of the d w_norm reduction (as rmsnorm.cpp's: cache-line aligned blocks,
// several accumulator chains).
constexpr int kColumnBlock = 64;

template <typename T>
T sigmoid_of(T z) {
  return T(1) / (T(1) + exp_of(-z));
}

// r = (mean_d o[d]^2 + eps)^(-1/2) over one head's Dh values (the sum as rmsnorm.cpp's).
template <typename T>
T head_rstd(const T* o, int Dh, double eps) {
  return static_cast<T>(1.0 / std::sqrt(static_cast<double>(row_sum_squares(o, Dh)) / Dh + eps));
}

// One token (C = H Dh): out = (o_h r_h) * w * SiLU(z). Row kernels take plain pointers (see rmsnorm.cpp).
template <typename T>
void forward_row(T* out, const T* o, const T* z, const T* w, int H, int Dh, double eps) {
  for (int h = 0; h < H; ++h) {
    const int c0 = h * Dh;
    const T r = head_rstd(o + c0, Dh, eps);
#pragma omp simd
    for (int d = 0; d < Dh; ++d) {
      const int c = c0 + d;
      const T zc = z[c];
      out[c] = o[c] * r * w[c] * (zc * sigmoid_of(zc));
    }
  }
}

// One token's backward (the formulas in output_gate.h); prod = du * y for the d w_norm sum.
template <typename T>
void backward_row(T* d_o, T* dz, T* prod, const T* dout, const T* o, const T* z, const T* w, int H, int Dh,
                  double eps) {
  for (int h = 0; h < H; ++h) {
    const int c0 = h * Dh;
    const T r = head_rstd(o + c0, Dh, eps);
    T dot = 0;  // sum_d dy_d y_d
#pragma omp simd reduction(+ : dot)
    for (int d = 0; d < Dh; ++d) {
      const int c = c0 + d;
      const T zc = z[c], s = sigmoid_of(zc);
      const T y = o[c] * r, u = y * w[c];
      const T du = dout[c] * zc * s;
      dz[c] = dout[c] * u * s * (T(1) + zc * (T(1) - s));
      prod[c] = du * y;
      const T dy = du * w[c];
      d_o[c] = dy;  // dy for now; d o once the dot is known
      dot += dy * y;
    }
    const T mean = dot / T(Dh);
#pragma omp simd
    for (int d = 0; d < Dh; ++d) {
      const int c = c0 + d;
      d_o[c] = r * (d_o[c] - o[c] * r * mean);
    }
  }
}

// acc[c] += sum_n prod[n, c0 + c], rows in order.
template <typename T>
void column_sum(T* acc, const T* prod, int64_t N, int C, int c0, int width) {
  for (int64_t n = 0; n < N; ++n) {
    const T* p = prod + n * C + c0;
#pragma omp simd
    for (int c = 0; c < width; ++c) acc[c] += p[c];
  }
}

// One of the gate's three (N, C) x (C, C) products: 2 N C² FLOPs; the two (N, C) operands and W_g.
double product_flop(int64_t N, int C) { return 2.0 * double(N) * C * C; }
template <typename T>
double product_bytes(int64_t N, int C) {
  return sizeof(T) * (2.0 * double(N) * C + double(C) * C);
}

// The gemm row's scope for one of those products (training).
template <typename T>
ProfileScope product_profile(ProductShape shape, int64_t N, int C) {
  return ProfileScope(shape, product_flop(N, C), product_bytes<T>(N, C));
}

}  // namespace

int64_t output_gate_saved_size(const AttentionSpec& s, int B, int T) {
  return s.output_gate ? 2 * int64_t(B) * T * s.C() : 0;
}

int64_t output_gate_scratch_size(const AttentionSpec& s, int B, int T) {
  return s.output_gate ? 3 * int64_t(B) * T * s.C() : 0;
}

template <typename T>
void output_gate_forward(T* out, const T* o, const T* z, const T* w, int64_t N, int H, int Dh, double eps) {
  const int C = H * Dh;
  parallel_for(N, parallel_grain(8 * C), [&](int64_t n) {
    forward_row(out + n * C, o + n * C, z + n * C, w, H, Dh, eps);
  });
}

template <typename T>
void output_gate_backward(T* d_o, T* dz, T* prod, T* dw, const T* dout, const T* o, const T* z, const T* w,
                          int64_t N, int H, int Dh, double eps) {
  const int C = H * Dh;
  parallel_for(N, parallel_grain(16 * C), [&](int64_t n) {
    const int64_t at = n * C;
    backward_row(d_o + at, dz + at, prod + at, dout + at, o + at, z + at, w, H, Dh, eps);
  });
  // d w_norm: channel blocks, each summed by one thread over the rows in order.
  const int blocks = (C + kColumnBlock - 1) / kColumnBlock;
  parallel_for(blocks, [&](int64_t b) {
    const int c0 = static_cast<int>(b) * kColumnBlock, width = std::min(kColumnBlock, C - c0);
    T acc[kColumnBlock] = {};
    column_sum(acc, prod, N, C, c0, width);
    for (int c = 0; c < width; ++c) dw[c0 + c] += acc[c];
  });
}

template <typename T>
void output_gate_apply(const AttentionSpec& s, const T* w_norm, const T* w_gate, T* out, const T* o, T* z,
                       const T* n, int64_t N, GemmThreads threads, const T* step_packed) {
  const bool step = step_packed != nullptr;
  const int C = s.C();
  if (step) {  // z (N, C) = n (N, C) · W_gᵀ: a decode step's product, counted with the step's others
    const ProfileScope profile(ProfiledKernel::step_products, product_flop(N, C), product_bytes<T>(N, C));
    step_gemm<T>(N, C, C, n, step_packed, z, false, threads);
  } else {  // z (N, C) = n (N, C) · W_gᵀ, W_g (C_out, C_in) as the projections are stored
    ProfileScope profile = product_profile<T>({false, true, N, C, C}, N, C);
    gemm<T>(false, true, N, C, C, T(1), n, C, w_gate, C, T(0), z, C, threads);
  }
  // o and z read, out written
  ProfileScope profile(ProfiledKernel::output_gate, 8.0 * double(N) * C, sizeof(T) * 3.0 * double(N) * C);
  if (threads == GemmThreads::one || (step && N * C < kParallelMinWork))  // a decode step of few rows: no fork
    for (int64_t r = 0; r < N; ++r) forward_row(out + r * C, o + r * C, z + r * C, w_norm, s.H, s.Dh, s.norm_eps);
  else
    output_gate_forward(out, o, z, w_norm, N, s.H, s.Dh, s.norm_eps);
}

template <typename T>
void output_gate_apply_backward(const AttentionSpec& s, const T* w_norm, T* dw_norm, T* dw_gate, T* scratch,
                                const T* dout, const T* o, const T* z, const T* n, int64_t N) {
  const int C = s.C();
  T* d_o = scratch;
  T* dz = scratch + N * C;
  T* prod = scratch + 2 * N * C;
  {  // dout, o, z read; d o, dz, prod written (prod read again by the column sums)
    ProfileScope profile(ProfiledKernel::output_gate, 16.0 * double(N) * C, sizeof(T) * 6.0 * double(N) * C);
    output_gate_backward(d_o, dz, prod, dw_norm, dout, o, z, w_norm, N, s.H, s.Dh, s.norm_eps);
  }
  // dW_g (C, C) += dzᵀ (C, N) · n (N, C)
  ProfileScope profile = product_profile<T>({true, false, C, C, N}, N, C);
  gemm<T>(true, false, C, C, N, T(1), dz, C, n, C, T(1), dw_gate, C);
}

template <typename T>
void output_gate_apply_backward_dn(const AttentionSpec& s, const T* w_gate, const T* scratch, T* dn, bool add,
                                   int64_t N) {
  const int C = s.C();
  // dn (N, C) (+)= dz (N, C) · W_g (C, C)
  ProfileScope profile = product_profile<T>({false, false, N, C, C}, N, C);
  gemm<T>(false, false, N, C, C, T(1), scratch + N * C, C, w_gate, C, add ? T(1) : T(0), dn, C);
}

#define RFA_INSTANTIATE(T)                                                                                      \
  template void output_gate_forward<T>(T*, const T*, const T*, const T*, int64_t, int, int, double);           \
  template void output_gate_backward<T>(T*, T*, T*, T*, const T*, const T*, const T*, const T*, int64_t, int,  \
                                        int, double);                                                           \
  template void output_gate_apply<T>(const AttentionSpec&, const T*, const T*, T*, const T*, T*, const T*,      \
                                     int64_t, GemmThreads, const T*);                                           \
  template void output_gate_apply_backward<T>(const AttentionSpec&, const T*, T*, T*, T*, const T*, const T*,   \
                                              const T*, const T*, int64_t);                                     \
  template void output_gate_apply_backward_dn<T>(const AttentionSpec&, const T*, const T*, T*, bool, int64_t);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
