#pragma once
// The decode step's matrix products, batch-invariant: each output element is the same sequence
// of operations whatever the number of rows M, the row's index among them and the thread count,
// so a sequence decoded beside 63 others gets the bits it gets alone (rfa serve, rfa generate
// --num-samples). oneDNN's sgemm does not promise that: it runs a matrix-vector kernel for one
// row, another for 2..15 rows and a third from 16 (measured on AMD Zen 5, oneDNN 2.6), each
// summing in its own order, and a near-tie between two tokens then went either way.
//
// out (M, N) (+)= x (M, K) · Wᵀ with W stored (N, K) (trans_w, the projections' layout), or
// x (M, K) · W with W stored (K, N). Row-major, leading dimensions K, K or N, and N.
// trans_w: out[m, n] = the lanes of x[m, :] * W[n, :] accumulated over K a register at a time
// (one chain per lane), folded as simd_sum folds, then the K % W tail in order.
// !trans_w: out[m, n] = x[m, 0] W[0, n] + ... + x[m, K-1] W[K-1, n], one chain in k order.
// Threads split the columns, never a sum. T = double runs gemm's reference (the same property).
#include <cstdint>

#include "kernels/gemm.h"

namespace rfa {

template <typename T>
void step_gemm(bool trans_w, int64_t M, int64_t N, int64_t K, const T* x, const T* W, T* out, bool accumulate,
               GemmThreads threads);

}  // namespace rfa
