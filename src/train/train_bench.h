#pragma once
// `rfa bench train`: times the real training step (the same TrainSession code
// as `rfa train`) on random tokens, and compares the achieved FLOP rate with
// the machine's sgemm rate measured in the same process. Under mpirun (dist/dist.h)
// every rank runs it and the step includes the gradient all-reduce.
#include <cstdint>

#include "config/config.h"

namespace rfa {

struct TrainBenchResult {
  double median_ms = 0;          // per optimizer step
  double min_ms = 0;
  double median_cpu_ms = 0;      // CPU time of all threads per step: on a shared machine it does not count
                                 // the time other processes held the cores (OMP_WAIT_POLICY=passive)
  double tokens_per_s = 0;       // at the median
  double gflops = 0;             // model_train_flops / median
  double matmul_gflops = 0;      // the matmul share of it
  double gemm_peak_gflops = 0;   // best of the sgemm probes
  double gemm_bf16_peak_gflops = 0;  // best of the same probes as bf16 matmuls (0 without AVX512-BF16)
  double median_forward_ms = 0, median_backward_ms = 0, median_optimizer_ms = 0;
  int64_t activation_bytes = 0;  // the activation arena (includes attention's saved tensors and scratch)
  int64_t optimizer_bytes = 0;   // AdamW m and v
  int64_t peak_rss_bytes = 0;    // getrusage's ru_maxrss after the timed steps (whole process)
  double median_allreduce_ms = 0;  // data parallel: the gradient all-reduce (0 with one rank)
  int ranks = 1;                   // tokens_per_s counts all ranks' tokens; the times are rank 0's
};

// config.model.vocab_size must be set (> 0).
TrainBenchResult train_bench(const Config& config, int steps, int warmup);

// GFLOP/s of one sgemm C (M, N) = A (M, K) B (K, N), best of `repeats` after a warm-up.
double gemm_gflops(int64_t M, int64_t N, int64_t K, int repeats);

}  // namespace rfa
