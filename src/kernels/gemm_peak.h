#pragma once
// Measures sgemm throughput for one shape, for `rfa bench`. Allocates its own
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

}  // namespace rfa
