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
constexpr int kMaxChunks = 4096;  // partials array size for sum_squares (then chunks grow)

int64_t chunk_count(int64_t n) { return (n + kChunk - 1) / kChunk; }

}  // namespace

template <typename T>
void add_inplace(T* y, const T* x, int64_t n) {
  parallel_for(chunk_count(n), [&](int64_t c) {
    int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    for (int64_t i = begin; i < end; ++i) y[i] += x[i];
  });
}

template <typename T>
void scale(T* x, T s, int64_t n) {
  parallel_for(chunk_count(n), [&](int64_t c) {
    int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    for (int64_t i = begin; i < end; ++i) x[i] *= s;
  });
}

template <typename T>
double sum_squares(const T* x, int64_t n) {
  // Fixed chunking (not per thread): the same n gives the same rounding.
  int64_t chunks = std::min<int64_t>(chunk_count(n), kMaxChunks);
  int64_t per = chunks > 0 ? (n + chunks - 1) / chunks : 0;
  std::array<double, kMaxChunks> partial;  // on the stack: no allocation
  parallel_for(chunks, [&](int64_t c) {
    int64_t begin = c * per, end = std::min(n, begin + per);
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = begin; i < end; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    partial[c] = s;
  });
  double total = 0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  return total;
}

namespace {

// Exponent all ones <=> NaN or inf. Bit test instead of std::isfinite so the
// loop vectorises.
template <typename T, typename Bits, Bits kExponent>
bool all_finite_bits(const T* x, int64_t n) {
  std::array<int, kMaxChunks> bad{};
  int64_t chunks = std::min<int64_t>(chunk_count(n), kMaxChunks);
  int64_t per = chunks > 0 ? (n + chunks - 1) / chunks : 0;
  parallel_for(chunks, [&](int64_t c) {
    int64_t begin = c * per, end = std::min(n, begin + per);
    int count = 0;
#pragma omp simd reduction(+ : count)
    for (int64_t i = begin; i < end; ++i) count += (std::bit_cast<Bits>(x[i]) & kExponent) == kExponent;
    bad[c] = count;
  });
  for (int64_t c = 0; c < chunks; ++c)
    if (bad[c] != 0) return false;
  return true;
}

}  // namespace

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
