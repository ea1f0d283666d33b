#pragma once
// Row kernels of the one-token decoding step. A step over B = 1 row is tiny
// (~1 MFLOP for the reference model): an OpenMP fork/join costs as much as the
// work, so these run serially below kDecodeParallelWork multiply-adds and split
// across threads above it. Plain loops written so -O3 vectorises them (omp simd
// reductions, no -ffast-math). The layer kernels (layers/) are their reference
// twins in the tests.
#include <cstdint>

#include "core/parallel.h"
#include "layers/rope.h"

namespace rfa {

inline constexpr int64_t kDecodeParallelWork = int64_t(1) << 18;

// body(i) for i in [0, n): serially when work (multiply-adds in all) is small, else across threads.
template <typename Body>
inline void decode_for(int64_t n, int64_t work, Body&& body) {
  if (work < kDecodeParallelWork || n < 2) {
    for (int64_t i = 0; i < n; ++i) body(i);
  } else {
    parallel_for(n, body);
  }
}

// out = x · Wᵀ (accumulate: out += x · Wᵀ) through gemm (oneDNN's matrix-vector
// kernel streams the weights faster than a plain loop), on one thread: a thread
// fork per product costs more than the product, and far more on a busy machine
// where the second thread may not be running.
template <typename T>
void matvec_forward(T* out, const T* x, const T* W, int B, int IC, int OC, bool accumulate);

// gemm (kernels/gemm.h, same arguments) on one thread: the decode step's products have M = B rows.
template <typename T>
void gemm_decode(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                 const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// out = x * rstd * weight, rstd = 1/sqrt(mean(x²) + eps), per row.
template <typename T>
void rmsnorm_rows(T* out /*(B, C)*/, const T* x /*(B, C)*/, const T* weight /*(C)*/, int B, int C, double eps);

// out = silu(gate) * up with gate_up rows [gate (Hf) | up (Hf)].
template <typename T>
void swiglu_rows(T* out /*(B, Hf)*/, const T* gate_up /*(B, 2Hf)*/, int B, int Hf);

// Rotates every head of one token per row at absolute position `pos` (as rope_forward), in place.
template <typename T>
void rope_rows(T* x /*(B, H, Dh)*/, const RopeTable& table, int B, int H, int Dh, int64_t pos);

}  // namespace rfa
