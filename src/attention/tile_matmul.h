#pragma once
// Register-tiled small matrix product for the blockwise softmax's (64, 64)
// tiles: C[0:m, 0:n] (+)= alpha * A[0:m, 0:k] B[0:k, 0:n], row-major, with the
// register tiles of kernels/vector_math.h's matmul (kTileRows rows by two
// registers of columns, sized to the target's register file). Unlike matmul, the
// last m % 4 rows are tiles of one row too, so every output sums p in order.
// B needs ldb >= pad16(n) with readable padding (extra lanes are computed and
// dropped); A is read exactly (k entries per row), so it may be a strided view.
// Runs inside a parallel_for body: it neither allocates nor calls gemm.
#include <cstddef>

#include "kernels/vector_math.h"

namespace rfa {

template <typename T>
inline void tile_matmul(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int m, int k, int n,
                        T alpha, bool accumulate) {
  const simd_detail::MatView av{lda, 1};
  int i = 0;
  for (; i + kTileRows <= m; i += kTileRows)
    simd_detail::tile_rows<T, kTileRows>(C + i * ldc, ldc, A + i * lda, av, B, ldb, k, n, alpha, accumulate);
  for (; i + 4 <= m; i += 4)
    simd_detail::tile_rows<T, 4>(C + i * ldc, ldc, A + i * lda, av, B, ldb, k, n, alpha, accumulate);
  for (; i + 2 <= m; i += 2)
    simd_detail::tile_rows<T, 2>(C + i * ldc, ldc, A + i * lda, av, B, ldb, k, n, alpha, accumulate);
  for (; i < m; ++i) simd_detail::tile_rows<T, 1>(C + i * ldc, ldc, A + i * lda, av, B, ldb, k, n, alpha, accumulate);
}

}  // namespace rfa
