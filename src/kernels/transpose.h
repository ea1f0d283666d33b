#pragma once
// dst (cols, rows) = srcᵀ for a (rows, cols) block, both row-major with leading
// dimensions lds and ldd: the small transposes of the attention cores (K̃ᵀ, V'ᵀ, the
// states), which a plain double loop runs as one scalar load and one strided scalar
// store per element (a tenth of the RFA forward's time). float: 8 x 8 blocks in
// registers (3 rounds of 8 shuffles: 32-byte vectors, ymm on AVX2 and AVX-512, two
// xmm on SSE and NEON), the edges in scalar; double (gradient checks): the plain loop.
// A copy: no arithmetic, the same values on every target. dst and src do not overlap.
#include <cstddef>
#include <cstring>

namespace rfa {

namespace transpose_detail {
typedef float V8 __attribute__((vector_size(32)));

// The 8 x 8 block at src (rows lds apart) into dst (rows ldd apart), transposed.
__attribute__((always_inline)) inline void block8(float* dst, size_t ldd, const float* src, size_t lds) {
  V8 r[8];
  for (int i = 0; i < 8; ++i) std::memcpy(&r[i], src + i * lds, sizeof(V8));
  // Pairs of rows interleaved (unpack within 128-bit lanes), then pairs of pairs, then the halves.
  V8 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4)
    for (int h = 0; h < 2; ++h) {
      u[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + 2 + h], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2 * h + 1] = __builtin_shufflevector(t[i + h], t[i + 2 + h], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  // u[0..3]: columns 0,1,2,3 (and 4..7 in the high lanes) of rows 0-3; u[4..7] the same for rows 4-7.
  for (int j = 0; j < 4; ++j) {
    const V8 lo = __builtin_shufflevector(u[j], u[4 + j], 0, 1, 2, 3, 8, 9, 10, 11);
    const V8 hi = __builtin_shufflevector(u[j], u[4 + j], 4, 5, 6, 7, 12, 13, 14, 15);
    std::memcpy(dst + j * ldd, &lo, sizeof(V8));
    std::memcpy(dst + (j + 4) * ldd, &hi, sizeof(V8));
  }
}
}  // namespace transpose_detail

template <typename T>
inline void transpose(T* dst, size_t ldd, const T* src, size_t lds, int rows, int cols) {
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
}

template <>
inline void transpose<float>(float* dst, size_t ldd, const float* src, size_t lds, int rows, int cols) {
  const int r8 = rows - rows % 8, c8 = cols - cols % 8;
  for (int i = 0; i < r8; i += 8)
    for (int j = 0; j < c8; j += 8) transpose_detail::block8(dst + j * ldd + i, ldd, src + i * lds + j, lds);
  for (int i = 0; i < r8; ++i)  // the last cols % 8 columns
    for (int j = c8; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
  for (int i = r8; i < rows; ++i)  // the last rows % 8 rows
    for (int j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
}

}  // namespace rfa
