#pragma once
// The row kernels, in one place, on the build's register (kernels/simd.h): written so
// -O3 -march=native vectorises them without -ffast-math.
//   dot, vecmat, matmul: explicit vector accumulators (the compiler may not
//     reorder a plain float sum), the attention cores' products;
//   row_dot, row_sum, row_sum_squares, row_max: `omp simd reduction`, which
//     grants the reassociation for one loop (no threads involved), the layer
//     kernels' and the decode step's reductions. (dot and row_dot sum in
//     different orders: each caller keeps the one its results were made with.)
//   axpy, exp_row, sincos_row, copy_row, zero_row.
// Results depend on n only, never on threads. double versions (gradient
// checks) call libm.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/fast_exp.h"
#include "kernels/simd.h"

namespace rfa {

// sum_j a[j] b[j]: vector accumulators, then the tail.
template <typename T>
inline T dot(const T* a, const T* b, int n) {
  constexpr int W = Simd<T>::W;
  typename Simd<T>::V acc0 = {}, acc1 = {};
  int j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {
    acc0 += simd_load(a + j) * simd_load(b + j);
    acc1 += simd_load(a + j + W) * simd_load(b + j + W);
  }
  for (; j + W <= n; j += W) acc0 += simd_load(a + j) * simd_load(b + j);
  T s = simd_sum<T>(acc0 + acc1);
  for (; j < n; ++j) s += a[j] * b[j];
  return s;
}

// sum_j a[j], as dot sums (vector accumulators from a[0], then the tail): the order
// depends on n only, whatever a's alignment.
template <typename T>
inline T sum(const T* a, int n) {
  constexpr int W = Simd<T>::W;
  typename Simd<T>::V acc0 = {}, acc1 = {};
  int j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {
    acc0 += simd_load(a + j);
    acc1 += simd_load(a + j + W);
  }
  for (; j + W <= n; j += W) acc0 += simd_load(a + j);
  T s = simd_sum<T>(acc0 + acc1);
  for (; j < n; ++j) s += a[j];
  return s;
}

// Leading dimension padded to a multiple of 16 elements (64 bytes of float), so
// vecmat may read whole registers past a row's last column.
inline int pad16(int n) { return (n + 15) / 16 * 16; }

// dst[0:n) = src[0:n) and dst[0:n) = 0, inline, for the attention cores' short rows (a head's
// Dh, a state row's E = Dh + 1, a score row's part right of the diagonal): std::copy and
// std::fill there were memmove and memset calls (memmove alone 3.4% of the chunked RFA's
// samples at 6x384 on AVX-512), and a tile's partial register went out through the stack
// and `rep movs`.
template <typename T>
inline void copy_row(T* dst, const T* src, int n) {
  constexpr int W = Simd<T>::W;
  int i = 0;
  for (; i + W <= n; i += W) simd_store(dst + i, typename Simd<T>::V(simd_load(src + i)));  // (V(): an unaligned load)
  if (i < n) simd_store_first(dst + i, simd_load_first(src + i, n - i), n - i);
}
template <typename T>
inline void zero_row(T* dst, int n) {
  constexpr int W = Simd<T>::W;
  int i = 0;
  for (; i + W <= n; i += W) simd_store(dst + i, typename Simd<T>::V{});
  if (i < n) simd_store_first(dst + i, typename Simd<T>::V{}, n - i);
}

namespace simd_detail {
// out[0:W*NV) of a register tile: alpha * acc, stored, added, or cut to the n - col
// columns that exist.
template <typename T>
inline void tile_store(T* out, const typename Simd<T>::V& acc, int cols_left, T alpha, bool accumulate) {
  constexpr int W = Simd<T>::W;
  const typename Simd<T>::V r = alpha * acc;
  if (cols_left >= W) {
    simd_store(out, accumulate ? simd_load(out) + r : r);
  } else {
    simd_store_first(out, accumulate ? simd_load_first(out, cols_left) + r : r, cols_left);
  }
}

// vecmat's columns [j0, j0 + NV W): four accumulators over p per register of columns
// (4 NV independent FMA chains, enough to cover the FMA latency on two ports).
// a[p] is read at a[p * as] (as = 1: a row; a column of a row-major matrix otherwise).
template <typename T, int NV>
inline void vecmat_block(T* out, const T* a, size_t as, const T* B, int k, int n, size_t ldb, T alpha,
                         bool accumulate, int j0) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  V acc[4][NV] = {};
  const T* b = B + j0;
  int p = 0;
  for (; p + 4 <= k; p += 4, b += 4 * ldb)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      acc[0][v] += a[p * as] * simd_load(b + v * W);
      acc[1][v] += a[(p + 1) * as] * simd_load(b + ldb + v * W);
      acc[2][v] += a[(p + 2) * as] * simd_load(b + 2 * ldb + v * W);
      acc[3][v] += a[(p + 3) * as] * simd_load(b + 3 * ldb + v * W);
    }
  for (; p < k; ++p, b += ldb)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[0][v] += a[p * as] * simd_load(b + v * W);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v)
    tile_store(out + j0 + v * W, (acc[0][v] + acc[1][v]) + (acc[2][v] + acc[3][v]), n - j0 - v * W, alpha, accumulate);
}

// A's entry (row r, column p) is A[r * ar + p * ap]: (lda, 1) for a row-major A,
// (1, lda) for the transpose of one (A stored (k, m)).
struct MatView {
  size_t ar, ap;
};

// Rows [0, R) of C by columns [j0, j0 + NV W): R NV accumulators, NV loads of B and R
// broadcasts of A per R NV FMAs; each output sums p in order (0, 1, ..., k-1).
template <typename T, int R, int NV>
__attribute__((noinline)) void tile_block(T* C, size_t ldc, const T* A, MatView av, const T* B, size_t ldb, int k, int n, int j0,
                       T alpha, bool accumulate) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  V acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  const T* b = B + j0;
  for (int p = 0; p < k; ++p, b += ldb) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = simd_load(b + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const T ar = A[r * av.ar + p * av.ap];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += ar * bv[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      if (j0 + v * W < n) tile_store(C + r * ldc + j0 + v * W, acc[r][v], n - j0 - v * W, alpha, accumulate);
}

// Rows [0, R) of C, all n columns: two registers of columns at a time, one for the last odd one.
template <typename T, int R>
inline void tile_rows(T* C, size_t ldc, const T* A, MatView av, const T* B, size_t ldb, int k, int n, T alpha,
                      bool accumulate) {
  constexpr int W = Simd<T>::W;
  int j0 = 0;
  for (; j0 + W < n; j0 += 2 * W) tile_block<T, R, 2>(C, ldc, A, av, B, ldb, k, n, j0, alpha, accumulate);
  if (j0 < n) tile_block<T, R, 1>(C, ldc, A, av, B, ldb, k, n, j0, alpha, accumulate);
}

// The rows of matmul and matmul_at: tiles of kTileRows, 4 and 2 rows over the first
// m - m % 4 rows (each output summing p in order), vecmat for the rest.
template <typename T>
inline void matmul_rows(T* C, size_t ldc, const T* A, MatView av, const T* B, size_t ldb, int m, int k, int n,
                        T alpha, bool accumulate);
}  // namespace simd_detail

// out[0:n] (+)= alpha * sum_p a[p] B[p, 0:n], B row-major with leading dimension
// ldb >= pad16(n): columns go whole registers at a time (extra lanes computed,
// never stored), two registers of columns with four independent accumulators
// over p each hide the FMA latency, and the accumulators stay in registers
// (repeated axpy into a short row would instead bounce every partial sum
// through memory). Each output sums p in four interleaved partial sums
// whatever the width of the tile.
template <typename T>
inline void vecmat(T* out, const T* a, const T* B, int k, int n, size_t ldb, T alpha, bool accumulate,
                   size_t a_stride = 1) {
  constexpr int W = Simd<T>::W;
  int j0 = 0;
  for (; j0 + W < n; j0 += 2 * W)
    simd_detail::vecmat_block<T, 2>(out, a, a_stride, B, k, n, ldb, alpha, accumulate, j0);
  if (j0 < n) simd_detail::vecmat_block<T, 1>(out, a, a_stride, B, k, n, ldb, alpha, accumulate, j0);
}

// Rows of C per register tile: as many as keep 2 R accumulators, 2 loads of B and a
// broadcast of A in the register file. 32 registers (AVX-512, arm64): 8 rows, 16
// accumulators; 16 registers (AVX2, SSE): 6 rows, 12 accumulators + 2 + 1 = 15, where
// 8 rows would spill.
inline constexpr int kTileRows = kVectorRegisters >= 32 ? 8 : 6;

// C[0:m, 0:n] (+)= alpha * A[0:m, 0:k] B[0:k, 0:n], all row-major; ldb >= pad16(n)
// as for vecmat. Register tiles of kTileRows rows, then of four, by two registers of
// columns; the last m % 4 rows go through vecmat. Every output of a tile sums p in
// order, so the tile sizes (which follow the target) do not change a result: only
// which rows are the vecmat remainder does (the same on every target).
template <typename T>
inline void matmul(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n, T alpha,
                   bool accumulate) {
  simd_detail::matmul_rows(C, ldc, A, simd_detail::MatView{lda, 1}, B, ldb, m, k, n, alpha, accumulate);
}

// C[0:m, 0:n] (+)= alpha * Aᵀ B with A stored (k, m), leading dimension lda: the
// product matmul would give on a transposed copy of A, bit for bit, without the copy
// (the tiles broadcast A's entries from wherever they are).
template <typename T>
inline void matmul_at(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                      T alpha, bool accumulate) {
  simd_detail::matmul_rows(C, ldc, A, simd_detail::MatView{1, lda}, B, ldb, m, k, n, alpha, accumulate);
}

template <typename T>
inline void simd_detail::matmul_rows(T* C, size_t ldc, const T* A, MatView av, const T* B, size_t ldb, int m, int k,
                                     int n, T alpha, bool accumulate) {
  const int m4 = m - m % 4;  // rows in tiles; the rest through vecmat, on every target
  int i = 0;
  for (; i + kTileRows <= m4; i += kTileRows)
    tile_rows<T, kTileRows>(C + i * ldc, ldc, A + i * av.ar, av, B, ldb, k, n, alpha, accumulate);
  for (; i + 4 <= m4; i += 4) tile_rows<T, 4>(C + i * ldc, ldc, A + i * av.ar, av, B, ldb, k, n, alpha, accumulate);
  for (; i + 2 <= m4; i += 2)  // after tiles of 6: m4 - 6q is 0, 2 or 4
    tile_rows<T, 2>(C + i * ldc, ldc, A + i * av.ar, av, B, ldb, k, n, alpha, accumulate);
  for (; i < m; ++i) vecmat(C + i * ldc, A + i * av.ar, B, k, n, ldb, alpha, accumulate, av.ap);
}

// Nearest integer, as a float-to-int conversion the vectoriser accepts (std::floor
// and std::nearbyint are not vectorised without -ffast-math).
inline int round_to_int(float x) { return static_cast<int>(x + (x >= 0.0f ? 0.5f : -0.5f)); }

// y += alpha x
template <typename T>
inline void axpy(T* y, T alpha, const T* x, int n) {
  for (int j = 0; j < n; ++j) y[j] += alpha * x[j];
}

// y = exp(x) in place: kernels/fast_exp.h's vectorisable expf for float, libm for
// double (gradient checks).
template <typename T>
inline void exp_row(T* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = exp_of(x[i]);
}

// s = scale sin(u), c = scale cos(u). Vectorised (libm's scalar sinf/cosf would
// dominate the feature map's cost). float: u reduced by the nearest multiple j of pi/2,
// then the Cephes minimax polynomials on [-pi/4, pi/4]; absolute error ~1e-7 for
// |u| < 1e6 (the feature map sees |u| ~ |sigma|: |x̄| = 1 and W's rows are Gaussian).
// With FMA: j as the low bits of u 2/pi + 1.5 2^23 (round to nearest, |u| < 2^22; the
// build has no -ffast-math, so the shift is not folded away), pi/2 in two parts whose
// first product is exact inside the FMA, and the quadrant's swap and signs as bit
// operations: 35% fewer instructions than a float-to-int rounding, three-part
// reduction and blends (the feature maps' sine and cosine were a fifth of the chunked
// forward at nano). Without FMA (x86-64-v2 and older) the three-part Cody-Waite
// reduction, whose first parts multiply exactly without it. double (gradient checks): libm.
inline void sincos_row(float* s, float* c, const float* u, int n, float scale = 1.0f) {
  RFA_OMP_SIMD_FULL  // s, c and u never overlap
  for (int i = 0; i < n; ++i) {
    const float x = u[i];
#if defined(__FMA__) || defined(__aarch64__)
    const float shifted = x * 0.636619772367581343f + 12582912.0f;
    const float j = shifted - 12582912.0f;
    const uint32_t quadrant = std::bit_cast<uint32_t>(shifted);  // its low two bits
    const float r = __builtin_fmaf(-j, -4.37113900018624283e-8f, __builtin_fmaf(-j, 1.57079637050628662109375f, x));
#else
    const int ji = round_to_int(x * 0.636619772367581343f);
    const float j = static_cast<float>(ji);
    const uint32_t quadrant = static_cast<uint32_t>(ji);
    const float r = ((x - j * 1.5703125f) - j * 4.837512969970703125e-4f) - j * 7.54978995489188216e-8f;
#endif
    const float r2 = r * r;
    const float sin_r = scale * (r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f)));
    const float cos_r = scale * (1.0f - 0.5f * r2 + r2 * r2 * (4.166664568298827e-2f +
                                                                r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f)));
    // Odd quadrants swap sine and cosine; bit 1 of the quadrant negates the sine, of quadrant + 1 the cosine.
    const uint32_t sb = std::bit_cast<uint32_t>(sin_r), cb = std::bit_cast<uint32_t>(cos_r);
    const uint32_t swap = (sb ^ cb) & (0u - (quadrant & 1u));
    s[i] = std::bit_cast<float>((sb ^ swap) ^ ((quadrant << 30) & 0x80000000u));
    c[i] = std::bit_cast<float>((cb ^ swap) ^ (((quadrant + 1u) << 30) & 0x80000000u));
  }
}

inline void sincos_row(double* s, double* c, const double* u, int n, double scale = 1.0) {
  for (int i = 0; i < n; ++i) {
    s[i] = scale * std::sin(u[i]);
    c[i] = scale * std::cos(u[i]);
  }
}

// ---- Reductions (omp simd) ----
// (Not at RFA_OMP_SIMD_FULL's width: a 64-byte loop may be peeled to align its loads, and
// then the order of the sum would follow the address of x, not only n.)

// sum_i x[i]^2
template <typename T>
inline T row_sum_squares(const T* x, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

// sum_i a[i] * b[i]
template <typename T>
inline T row_dot(const T* a, const T* b, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// sum_i x[i]
template <typename T>
inline T row_sum(const T* x, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

// max_i x[i]; n >= 1. NaN entries may or may not win (callers check finiteness).
template <typename T>
inline T row_max(const T* x, int64_t n) {
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace rfa
