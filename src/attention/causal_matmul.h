#pragma once
// The chunked attention cores' products with a causal (triangular) operand or result,
// computed over the blocks that can be nonzero only: matmul (kernels/vector_math.h)
// over the whole chunk computes each row tile against every key, twice the multiply-adds
// of the triangle. Same register tiles and row split as matmul_rows (tiles of kTileRows,
// 4 and 2 rows over the first m - m % 4 rows, vecmat for the rest), each output summing
// p in order over the range it reads; the ranges left out hold only zeros of the operand
// (or outputs that are never read), so the results are matmul's.
//   matmul_lower_a: C = alpha A B with A (m, k) zero right of its diagonal (A_ip = 0 for
//     p > i): the tile of rows [i0, i0 + R) reads p < min(i0 + R, k).
//   matmul_at_upper: C = alpha Aᵀ B with A stored (k, m) zero right of its diagonal
//     (A_pr = 0 for r > p, so (Aᵀ)_rp = 0 for p < r): the tile of rows [i0, ...) reads p >= i0.
//   matmul_lower_c: C = alpha A B where only C's lower triangle (columns j <= i) is wanted:
//     the tile of rows [i0, i0 + R) computes columns < min(i0 + R, n); the columns right of
//     that are not written (the caller zeroes or ignores them).
//   matmul_upper_c: C = alpha A B where only C's upper triangle (columns j >= i) is wanted:
//     the tile of rows [i0, i0 + R) computes columns from i0 rounded down to a register's
//     width; the columns left of that are not written (the caller zeroes or ignores them).
//   matmul_upper_a: C = alpha A B with A (m, k) zero left of its diagonal (A_ip = 0 for
//     p < i): the tile of rows [i0, i0 + R) reads p >= i0 (upper_at's band on a row-major A).
//   matmul_upper_b: C = alpha A B with B (k, n) zero left of its diagonal (B_pj = 0 for
//     j < p): tile_matmul (attention/tile_matmul.h, every row a tile) by blocks of two registers
//     of columns [j0, j0 + 2W), each reading p < j0 + 2W.
// Runs inside a parallel_for body: it neither allocates nor calls gemm.
#include <algorithm>
#include <cstddef>

#include "attention/tile_matmul.h"
#include "kernels/vector_math.h"

namespace rfa {

namespace causal_detail {
enum class Band { lower_a, upper_at, lower_c, upper_c };

// Rows [i0, i0 + R) of C: the p range and the columns the band allows, then one tile (R > 1)
// or vecmat (R == 1, a remainder row).
template <typename T, int R, Band kBand>
inline void band_rows(T* C, size_t ldc, const T* A, simd_detail::MatView av, const T* B, size_t ldb, int i0, int k,
                      int n, T alpha, bool accumulate) {
  int p0 = 0, p1 = k, j0 = 0, cols = n;
  if constexpr (kBand == Band::lower_a) p1 = std::min(i0 + R, k);
  if constexpr (kBand == Band::upper_at) p0 = std::min(i0, k);
  if constexpr (kBand == Band::lower_c) cols = std::min(i0 + R, n);
  if constexpr (kBand == Band::upper_c) {
    j0 = std::min(i0 / Simd<T>::W * Simd<T>::W, n);
    cols = n - j0;
  }
  const T* a = A + i0 * av.ar + p0 * av.ap;
  const T* b = B + p0 * ldb + j0;
  if constexpr (R == 1)
    vecmat(C + i0 * ldc + j0, a, b, p1 - p0, cols, ldb, alpha, accumulate, av.ap);
  else
    simd_detail::tile_rows<T, R>(C + i0 * ldc + j0, ldc, a, av, b, ldb, p1 - p0, cols, alpha, accumulate);
}

template <typename T, Band kBand>
inline void band_matmul(T* C, size_t ldc, const T* A, simd_detail::MatView av, const T* B, size_t ldb, int m, int k,
                        int n, T alpha, bool accumulate) {
  const int m4 = m - m % 4;
  int i = 0;
  for (; i + kTileRows <= m4; i += kTileRows)
    band_rows<T, kTileRows, kBand>(C, ldc, A, av, B, ldb, i, k, n, alpha, accumulate);
  for (; i + 4 <= m4; i += 4) band_rows<T, 4, kBand>(C, ldc, A, av, B, ldb, i, k, n, alpha, accumulate);
  for (; i + 2 <= m4; i += 2) band_rows<T, 2, kBand>(C, ldc, A, av, B, ldb, i, k, n, alpha, accumulate);
  for (; i < m; ++i) band_rows<T, 1, kBand>(C, ldc, A, av, B, ldb, i, k, n, alpha, accumulate);
}
}  // namespace causal_detail

template <typename T>
inline void matmul_lower_a(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                           T alpha, bool accumulate) {
  causal_detail::band_matmul<T, causal_detail::Band::lower_a>(C, ldc, A, {lda, 1}, B, ldb, m, k, n, alpha,
                                                              accumulate);
}

template <typename T>
inline void matmul_at_upper(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                            T alpha, bool accumulate) {
  causal_detail::band_matmul<T, causal_detail::Band::upper_at>(C, ldc, A, {1, lda}, B, ldb, m, k, n, alpha,
                                                               accumulate);
}

template <typename T>
inline void matmul_upper_a(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                           T alpha, bool accumulate) {
  causal_detail::band_matmul<T, causal_detail::Band::upper_at>(C, ldc, A, {lda, 1}, B, ldb, m, k, n, alpha,
                                                               accumulate);
}

template <typename T>
inline void matmul_upper_c(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                           T alpha, bool accumulate) {
  causal_detail::band_matmul<T, causal_detail::Band::upper_c>(C, ldc, A, {lda, 1}, B, ldb, m, k, n, alpha,
                                                              accumulate);
}

template <typename T>
inline void matmul_upper_b(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                           T alpha, bool accumulate) {
  constexpr int kCols = 2 * Simd<T>::W;  // the tiles' width: tile_matmul's tiles, its columns in blocks
  for (int j0 = 0; j0 < n; j0 += kCols)
    tile_matmul(C + j0, ldc, A, lda, B + j0, ldb, m, std::min(j0 + kCols, k), std::min(kCols, n - j0), alpha,
                accumulate);
}

template <typename T>
inline void matmul_lower_c(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                           T alpha, bool accumulate) {
  causal_detail::band_matmul<T, causal_detail::Band::lower_c>(C, ldc, A, {lda, 1}, B, ldb, m, k, n, alpha,
                                                              accumulate);
}

}  // namespace rfa
