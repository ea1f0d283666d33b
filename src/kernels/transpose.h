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

inline V8 load8(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof(V8));
  return v;
}
inline void store8(float* p, V8 v) { std::memcpy(p, &v, sizeof(V8)); }

// The 8 x 8 block at src (rows lds apart) into dst (rows ldd apart), transposed: every value a named
// variable, no array and no loop. (The same steps over arrays r[8], t[8], u[8] in loops were kept in
// memory by GCC, -O3 too: 50 cycles a block instead of 10; a 64 x 64 transpose 810 -> 150 ns.)
__attribute__((always_inline)) inline void block8(float* dst, size_t ldd, const float* src, size_t lds) {
  const V8 r0 = load8(src), r1 = load8(src + lds), r2 = load8(src + 2 * lds), r3 = load8(src + 3 * lds);
  const V8 r4 = load8(src + 4 * lds), r5 = load8(src + 5 * lds), r6 = load8(src + 6 * lds), r7 = load8(src + 7 * lds);
  // Pairs of rows interleaved (unpack within 128-bit lanes): t0 = r0 r1 lo, t1 = r0 r1 hi, ...
  const V8 t0 = __builtin_shufflevector(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);
  const V8 t1 = __builtin_shufflevector(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);
  const V8 t2 = __builtin_shufflevector(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
  const V8 t3 = __builtin_shufflevector(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
  const V8 t4 = __builtin_shufflevector(r4, r5, 0, 8, 1, 9, 4, 12, 5, 13);
  const V8 t5 = __builtin_shufflevector(r4, r5, 2, 10, 3, 11, 6, 14, 7, 15);
  const V8 t6 = __builtin_shufflevector(r6, r7, 0, 8, 1, 9, 4, 12, 5, 13);
  const V8 t7 = __builtin_shufflevector(r6, r7, 2, 10, 3, 11, 6, 14, 7, 15);
  // Pairs of pairs: u0..u3 hold columns 0, 1, 2, 3 of rows 0-3 (columns 4-7 in the high lanes), u4..u7 of rows 4-7.
  const V8 u0 = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
  const V8 u1 = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
  const V8 u2 = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
  const V8 u3 = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
  const V8 u4 = __builtin_shufflevector(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);
  const V8 u5 = __builtin_shufflevector(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);
  const V8 u6 = __builtin_shufflevector(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);
  const V8 u7 = __builtin_shufflevector(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);
  // The halves: column j of the block is row j of dst.
  store8(dst, __builtin_shufflevector(u0, u4, 0, 1, 2, 3, 8, 9, 10, 11));
  store8(dst + ldd, __builtin_shufflevector(u1, u5, 0, 1, 2, 3, 8, 9, 10, 11));
  store8(dst + 2 * ldd, __builtin_shufflevector(u2, u6, 0, 1, 2, 3, 8, 9, 10, 11));
  store8(dst + 3 * ldd, __builtin_shufflevector(u3, u7, 0, 1, 2, 3, 8, 9, 10, 11));
  store8(dst + 4 * ldd, __builtin_shufflevector(u0, u4, 4, 5, 6, 7, 12, 13, 14, 15));
  store8(dst + 5 * ldd, __builtin_shufflevector(u1, u5, 4, 5, 6, 7, 12, 13, 14, 15));
  store8(dst + 6 * ldd, __builtin_shufflevector(u2, u6, 4, 5, 6, 7, 12, 13, 14, 15));
  store8(dst + 7 * ldd, __builtin_shufflevector(u3, u7, 4, 5, 6, 7, 12, 13, 14, 15));
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
