#pragma once
// Register-tiled small matrix product for the blockwise softmax's (64, 64)
// tiles: C[0:m, 0:n] (+)= alpha * A[0:m, 0:k] B[0:k, 0:n], row-major. Eight
// rows of C by two registers of columns per step: 16 accumulators, two loads of
// B and eight broadcasts of A per 16 FMAs (vector_math.h's matmul does 4 rows by
// one register, which leaves the FMA units half idle on these shapes).
// B needs ldb >= pad16(n) with readable padding (extra lanes are computed and
// dropped); A is read exactly (k entries per row), so it may be a strided view.
// Runs inside a parallel_for body: it neither allocates nor calls gemm.
#include <cstddef>

#include "kernels/vector_math.h"

namespace rfa {

namespace tile_detail {

// R rows of C, columns [j0, j0 + NV*W) (stores masked to n).
template <typename T, int R, int NV>
inline void tile_block(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int k, int n, int j0,
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
      const T a = A[r * lda + p];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += a * bv[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int col = j0 + v * W;
      if (col >= n) continue;
      T* out = C + r * ldc + col;
      const V res = alpha * acc[r][v];
      if (n - col >= W) {
        simd_store(out, accumulate ? simd_load(out) + res : res);
      } else {
        for (int l = 0; l < n - col; ++l) out[l] = accumulate ? out[l] + res[l] : res[l];
      }
    }
}

template <typename T, int R>
inline void tile_rows(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int k, int n, T alpha,
                      bool accumulate) {
  constexpr int W = Simd<T>::W;
  int j0 = 0;
  for (; j0 + W < n; j0 += 2 * W) tile_block<T, R, 2>(C, ldc, A, lda, B, ldb, k, n, j0, alpha, accumulate);
  if (j0 < n) tile_block<T, R, 1>(C, ldc, A, lda, B, ldb, k, n, j0, alpha, accumulate);
}

}  // namespace tile_detail

template <typename T>
inline void tile_matmul(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                        T alpha, bool accumulate) {
  int i = 0;
  for (; i + 8 <= m; i += 8)
    tile_detail::tile_rows<T, 8>(C + i * ldc, ldc, A + i * lda, lda, B, ldb, k, n, alpha, accumulate);
  for (; i + 4 <= m; i += 4)
    tile_detail::tile_rows<T, 4>(C + i * ldc, ldc, A + i * lda, lda, B, ldb, k, n, alpha, accumulate);
  for (; i < m; ++i)
    tile_detail::tile_rows<T, 1>(C + i * ldc, ldc, A + i * lda, lda, B, ldb, k, n, alpha, accumulate);
}

}  // namespace rfa
