#pragma once
// Row reductions for the layer kernels. Strict IEEE order forbids the compiler
// from vectorising a plain float sum; `omp simd reduction` grants it the
// reassociation for this loop only (no threads are involved), so these run at
// AVX-512 width without -ffast-math. Results depend on n only, not on threads.
#include <cstdint>

namespace rfa {

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
