#pragma once
// The vector helpers, in one place: row kernels written so -O3 -march=native
// vectorises them without -ffast-math.
//   dot, vecmat, matmul: explicit vector accumulators (the compiler may not
//     reorder a plain float sum), the attention cores' products;
//   row_dot, row_sum, row_sum_squares, row_max: `omp simd reduction`, which
//     grants the reassociation for one loop (no threads involved), the layer
//     kernels' and the decode step's reductions. (dot and row_dot sum in
//     different orders: each caller keeps the one its results were made with.)
//   axpy, exp_row, sincos_row.
// Results depend on n only, never on threads. double versions (gradient
// checks) call libm.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/fast_exp.h"

namespace rfa {

// One 64-byte SIMD register of T (GCC/Clang vector extension): explicit, so the
// accumulators below live in registers rather than in stack arrays.
template <typename T>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(64)));
  typedef float U __attribute__((vector_size(64), aligned(4), may_alias));  // unaligned access
  static constexpr int W = 16;
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(64)));
  typedef double U __attribute__((vector_size(64), aligned(8), may_alias));
  static constexpr int W = 8;
};
// The helpers take and give registers by reference, never by value: a 64-byte
// vector by value has one calling convention with AVX-512 (zmm registers) and
// another without (memory), so an out-of-line copy compiled without it (the
// sanitizer build has no -march=native) would not match a caller compiled with
// it, and GCC warns (-Wpsabi) wherever such a signature is compiled. Inlined,
// the code is the same.
template <typename T>
inline const typename Simd<T>::U& simd_load(const T* p) {
  return *reinterpret_cast<const typename Simd<T>::U*>(p);
}
template <typename T>
inline void simd_store(T* p, const typename Simd<T>::V& v) {
  *reinterpret_cast<typename Simd<T>::U*>(p) = v;
}

// Sum of a register's lanes: fold halves (the compiler turns the copies into
// lane extracts), then the last 128 bits in scalar.
template <typename T>
inline T simd_sum(const typename Simd<T>::V& v) {
  typedef T Half __attribute__((vector_size(32)));
  typedef T Quarter __attribute__((vector_size(16)));
  Half lo, hi;
  std::memcpy(&lo, &v, 32);
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + 32, 32);
  const Half h = lo + hi;
  Quarter a, b;
  std::memcpy(&a, &h, 16);
  std::memcpy(&b, reinterpret_cast<const char*>(&h) + 16, 16);
  const Quarter q = a + b;
  T s = 0;
  for (int l = 0; l < int(16 / sizeof(T)); ++l) s += q[l];
  return s;
}

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

// Leading dimension padded to a multiple of 16 elements (64 bytes of float), so
// vecmat may read whole registers past a row's last column.
inline int pad16(int n) { return (n + 15) / 16 * 16; }

// out[0:n] (+)= alpha * sum_p a[p] B[p, 0:n], B row-major with leading dimension
// ldb >= pad16(n): columns go a whole register at a time (extra lanes computed,
// never stored), four independent accumulators over p hide the FMA latency, and
// the accumulators stay in registers (repeated axpy into a short row would
// instead bounce every partial sum through memory).
template <typename T>
inline void vecmat(T* out, const T* a, const T* B, int k, int n, size_t ldb, T alpha, bool accumulate) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  for (int j0 = 0; j0 < n; j0 += W) {
    V acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {};
    const T* b = B + j0;
    int p = 0;
    for (; p + 4 <= k; p += 4, b += 4 * ldb) {
      acc0 += a[p] * simd_load(b);
      acc1 += a[p + 1] * simd_load(b + ldb);
      acc2 += a[p + 2] * simd_load(b + 2 * ldb);
      acc3 += a[p + 3] * simd_load(b + 3 * ldb);
    }
    for (; p < k; ++p, b += ldb) acc0 += a[p] * simd_load(b);
    const V r = alpha * ((acc0 + acc1) + (acc2 + acc3));
    if (n - j0 >= W) {
      simd_store(out + j0, accumulate ? simd_load(out + j0) + r : r);
    } else {
      for (int l = 0; l < n - j0; ++l) out[j0 + l] = accumulate ? out[j0 + l] + r[l] : r[l];
    }
  }
}

// C[0:m, 0:n] (+)= alpha * A[0:m, 0:k] B[0:k, 0:n], all row-major; ldb >= pad16(n)
// as for vecmat. Four rows of C at a time share each load of B (one load and
// four broadcasts per four FMAs); the remaining rows go through vecmat.
template <typename T>
inline void matmul(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n, T alpha,
                   bool accumulate) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  int i = 0;
  for (; i + 4 <= m; i += 4) {
    const T* a0 = A + i * lda;
    const T* a1 = a0 + lda;
    const T* a2 = a1 + lda;
    const T* a3 = a2 + lda;
    for (int j0 = 0; j0 < n; j0 += W) {
      V c0 = {}, c1 = {}, c2 = {}, c3 = {};
      const T* b = B + j0;
      for (int p = 0; p < k; ++p, b += ldb) {
        const V bv = simd_load(b);
        c0 += a0[p] * bv;
        c1 += a1[p] * bv;
        c2 += a2[p] * bv;
        c3 += a3[p] * bv;
      }
      const V r[4] = {alpha * c0, alpha * c1, alpha * c2, alpha * c3};
      for (int q = 0; q < 4; ++q) {
        T* out = C + (i + q) * ldc + j0;
        if (n - j0 >= W) {
          simd_store(out, accumulate ? simd_load(out) + r[q] : r[q]);
        } else {
          for (int l = 0; l < n - j0; ++l) out[l] = accumulate ? out[l] + r[q][l] : r[q][l];
        }
      }
    }
  }
  for (; i < m; ++i) vecmat(C + i * ldc, A + i * lda, B, k, n, ldb, alpha, accumulate);
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

// s = scale sin(u), c = scale cos(u). Vectorised (libm's
// scalar sinf/cosf would dominate the feature map's cost). float: Cody-Waite
// reduction by pi/2 in three parts plus the Cephes minimax polynomials on
// [-pi/4, pi/4]; absolute error ~1e-7 for |u| < 1e3, ~1e-5 up to 1e5, the range
// the feature map sees (|u| ~ |sigma| since |x̄| = 1 and W rows are Gaussian).
// double (gradient checks): plain libm.
inline void sincos_row(float* s, float* c, const float* u, int n, float scale = 1.0f) {
  for (int i = 0; i < n; ++i) {
    float x = u[i];
    const int ji = round_to_int(x * 0.636619772367581343f);  // nearest multiple of pi/2
    const float j = static_cast<float>(ji);
    const int quadrant = ji & 3;
    float r = ((x - j * 1.5703125f) - j * 4.837512969970703125e-4f) - j * 7.54978995489188216e-8f;
    float r2 = r * r;
    float sin_r = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
    float cos_r = 1.0f - 0.5f * r2 +
                  r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    float sin_x = (quadrant & 1) ? cos_r : sin_r;
    float cos_x = (quadrant & 1) ? sin_r : cos_r;
    s[i] = scale * ((quadrant & 2) ? -sin_x : sin_x);
    c[i] = scale * (((quadrant + 1) & 2) ? -cos_x : cos_x);
  }
}

inline void sincos_row(double* s, double* c, const double* u, int n, double scale = 1.0) {
  for (int i = 0; i < n; ++i) {
    s[i] = scale * std::sin(u[i]);
    c[i] = scale * std::cos(u[i]);
  }
}

// ---- Reductions (omp simd) ----

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
