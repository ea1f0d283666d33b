#include "kernels/elementwise.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

#include "core/parallel.h"

namespace rfa {

namespace {

// Large flat loops are split into fixed chunks so the work spreads across
// threads while results (sum_squares) stay independent of the thread count.
constexpr int64_t kChunk = 1 << 15;
constexpr int kMaxChunks = 4096;  // partials array size (beyond it, chunks grow)

struct Chunks {
  int64_t count, per;
};

Chunks chunks_of(int64_t n) {
  int64_t count = std::min<int64_t>((n + kChunk - 1) / kChunk, kMaxChunks);
  return {count, count > 0 ? (n + count - 1) / count : 0};
}

// The chunk bodies take pointers as parameters: read through a lambda's
// captures inside the OpenMP outlined body, loads compiled to gathers.
template <typename T>
void add_chunk(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

template <typename T>
void scale_chunk(T* x, T s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

template <typename T>
double sum_squares_chunk(const T* x, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

// Exponent bits all ones <=> NaN or inf. A bit test instead of std::isfinite
// so the loop vectorises.
template <typename T, typename Bits, Bits kExponent>
int64_t nonfinite_chunk(const T* x, int64_t n) {
  int64_t count = 0;
#pragma omp simd reduction(+ : count)
  for (int64_t i = 0; i < n; ++i) count += (std::bit_cast<Bits>(x[i]) & kExponent) == kExponent;
  return count;
}

template <typename T, typename Bits, Bits kExponent>
bool all_finite_bits(const T* x, int64_t n) {
  Chunks ch = chunks_of(n);
  std::array<int64_t, kMaxChunks> bad;  // on the stack: no allocation
  parallel_for(ch.count, [&](int64_t c) {
    int64_t begin = c * ch.per;
    bad[c] = nonfinite_chunk<T, Bits, kExponent>(x + begin, std::min(n, begin + ch.per) - begin);
  });
  for (int64_t c = 0; c < ch.count; ++c)
    if (bad[c] != 0) return false;
  return true;
}

}  // namespace

template <typename T>
void add_inplace(T* y, const T* x, int64_t n) {
  Chunks ch = chunks_of(n);
  parallel_for(ch.count, [&](int64_t c) {
    int64_t begin = c * ch.per;
    add_chunk(y + begin, x + begin, std::min(n, begin + ch.per) - begin);
  });
}

template <typename T>
void scale(T* x, T s, int64_t n) {
  Chunks ch = chunks_of(n);
  parallel_for(ch.count, [&](int64_t c) {
    int64_t begin = c * ch.per;
    scale_chunk(x + begin, s, std::min(n, begin + ch.per) - begin);
  });
}

template <typename T>
double sum_squares(const T* x, int64_t n) {
  // Fixed chunking (not per thread): the same n gives the same rounding.
  Chunks ch = chunks_of(n);
  std::array<double, kMaxChunks> partial;  // on the stack: no allocation
  parallel_for(ch.count, [&](int64_t c) {
    int64_t begin = c * ch.per;
    partial[c] = sum_squares_chunk(x + begin, std::min(n, begin + ch.per) - begin);
  });
  double total = 0;
  for (int64_t c = 0; c < ch.count; ++c) total += partial[c];
  return total;
}

bool all_finite(const float* x, int64_t n) { return all_finite_bits<float, uint32_t, 0x7f800000u>(x, n); }
bool all_finite(const double* x, int64_t n) {
  return all_finite_bits<double, uint64_t, 0x7ff0000000000000ull>(x, n);
}

template void add_inplace<float>(float*, const float*, int64_t);
template void add_inplace<double>(double*, const double*, int64_t);
template void scale<float>(float*, float, int64_t);
template void scale<double>(double*, double, int64_t);
template double sum_squares<float>(const float*, int64_t);
template double sum_squares<double>(const double*, int64_t);

}  // namespace rfa
