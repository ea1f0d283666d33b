#pragma once
// Flat elementwise helpers over n contiguous values (the model's residual adds,
// gradient scaling, gradient norm, finiteness checks).
#include <cstdint>

namespace rfa {

// y[i] += x[i]   (residual add; y and x may not overlap partially)
template <typename T>
void add_inplace(T* y, const T* x, int64_t n);

// x[i] *= s
template <typename T>
void scale(T* x, T s, int64_t n);

// sum of x[i]^2, accumulated in double (for the global gradient norm).
template <typename T>
double sum_squares(const T* x, int64_t n);

// true when no entry is NaN or +-inf.
bool all_finite(const float* x, int64_t n);
bool all_finite(const double* x, int64_t n);

}  // namespace rfa
