#pragma once
// Measures sgemm (and bf16 matmul) throughput for one shape, for `rfa bench`. Allocates its own
// operands; not for use inside a training step.
#include <cstdint>

namespace rfa {

struct GemmPeak {
  int64_t M = 0, N = 0, K = 0;
  int repeats = 0;
  double ms_median = 0;      // one product, median over repeats
  double ms_best = 0;        // fastest single product
  double gflops_median = 0;  // 2 M N K / ms_median
  double gflops_best = 0;    // 2 M N K / ms_best
};

// Times `repeats` products C (M, N) = A (M, K) B (K, N) through gemm<float>
// after two warm-up calls. Throws Error when a size or repeats is below 1.
GemmPeak gemm_peak(int64_t M, int64_t N, int64_t K, int repeats = 20);

// The same product with bf16 operands and an f32 result (gemm_bf16). Throws Error
// on a CPU without AVX512-BF16.
GemmPeak gemm_peak_bf16(int64_t M, int64_t N, int64_t K, int repeats = 20);

}  // namespace rfa
