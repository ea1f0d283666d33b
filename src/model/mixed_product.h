#pragma once
// The model's matrix products in either precision (docs/bf16.md). An operand is
// its float values plus, in a bf16 run, a bf16 copy of them; a product whose two
// operands both carry a copy runs in bf16 (f32 accumulation, f32 output), any
// other through gemm<T>. fp32 runs and the double gradient checks pass no copies,
// so they run exactly the products they always ran.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/step_profile.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"

namespace rfa {

template <typename T>
struct MatOperand {
  const T* x = nullptr;         // the float (or double) values
  const uint16_t* h = nullptr;  // their bf16 copy, same layout; null = none
};

// {x, h} after writing bf16(x[0..n)) into h; {x, null} when h is null.
template <typename T>
MatOperand<T> mat_operand_bf16(const T* x, uint16_t* h, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (h) bf16_from_float(h, x, n);
  } else {
    RFA_ASSERT(h == nullptr, "bf16 copies exist for float models only");
  }
  return {x, h};
}

// C (M, N) = op(A) · op(B) + beta C (beta 0 or 1), as gemm.h lays it out.
template <typename T>
void mat_product(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, MatOperand<T> A, int64_t lda,
                 MatOperand<T> B, int64_t ldb, T beta, T* C, int64_t ldc, GemmThreads threads = GemmThreads::pool) {
  RFA_ASSERT((A.h == nullptr) == (B.h == nullptr), "a bf16 product needs both operands in bf16");
  // A, B read once and C written (read too when beta is 1), in the operands' element size
  const double elements = double(M) * K + double(K) * N + double(M) * N * (beta == T(0) ? 1 : 2);
  ProfileScope profile(ProductShape{trans_a, trans_b, M, N, K}, 2.0 * double(M) * N * K,
                       elements * (A.h ? 2.0 : double(sizeof(T))));
  if constexpr (std::is_same_v<T, float>) {
    if (A.h) {
      RFA_ASSERT(beta == 0.0f || beta == 1.0f, "bf16 products overwrite or accumulate, beta {}", beta);
      gemm_bf16(trans_a, trans_b, M, N, K, A.h, lda, B.h, ldb, beta == 1.0f, C, ldc, threads);
      return;
    }
  }
  gemm<T>(trans_a, trans_b, M, N, K, T(1), A.x, lda, B.x, ldb, beta, C, ldc, threads);
}

// bf16 copies of one block's weight matrices (BlockWeights' shapes); null in fp32.
struct BlockWeightsBf16 {
  const uint16_t* wq = nullptr;   // (C, C)
  const uint16_t* wk = nullptr;   // (C, C)
  const uint16_t* wv = nullptr;   // (C, C)
  const uint16_t* wo = nullptr;   // (C, C)
  const uint16_t* w13 = nullptr;  // (2Hf, C)
  const uint16_t* w2 = nullptr;   // (Hf, C)
};

struct ModelWeightsBf16 {
  std::vector<BlockWeightsBf16> layers;
  const uint16_t* lm_head = nullptr;  // (V, C); the embedding's copy when tied
};

}  // namespace rfa
