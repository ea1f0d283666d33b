#pragma once
// `rfa bench train`: times the real training step (the same TrainSession code
// as `rfa train`) on random tokens, and compares the achieved FLOP rate with
// the machine's sgemm rate measured in the same process. Under mpirun (dist/dist.h)
// every rank runs it and the step includes the gradient all-reduce.
#include <array>
#include <vector>
#include <cstdint>

#include "config/config.h"
#include "core/step_profile.h"

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
  double gemm_peak_gflops_per_core = 0;  // the same per second of CPU time of one thread (shared machines)
  double gemm_bf16_peak_gflops = 0;  // best of the same probes as bf16 matmuls (0 without AVX512-BF16)
  double median_forward_ms = 0, median_backward_ms = 0, median_optimizer_ms = 0;
  int64_t activation_bytes = 0;  // the activation arena (includes attention's saved tensors and scratch)
  int64_t optimizer_bytes = 0;   // AdamW m and v
  int64_t grad_copy_bytes = 0;   // the batch split's gradient copies (0 under the kernel split)
  ThreadSplit thread_split = ThreadSplit::kernels;  // train.thread_split as the session resolved it
  int64_t peak_rss_bytes = 0;    // getrusage's ru_maxrss after the timed steps (whole process)
  double median_allreduce_ms = 0;  // data parallel: the gradient all-reduce (0 with one rank)
  int ranks = 1;                   // tokens_per_s counts all ranks' tokens; the times are rank 0's
  // With profile: each kernel's sums over the timed steps (core/step_profile.h), the mean
  // step they divide into, and the FMA peak of this build's own vector kernels.
  bool profiled = false;
  std::array<ProfileRow, kProfiledKernels> profile{};
  std::vector<ProductProfileRow> product_shapes;  // the gemm row by product shape, in the order first seen
  ProfileRow other_shapes;                        // products past the shape table's capacity
  int timed_steps = 0;
  double mean_ms = 0;
  double fma_peak_gflops = 0;
  double fma_peak_gflops_per_core = 0;
  int vector_floats = 0;
  double bandwidth_gbs = 0;      // y = a x + y over two buffers of the largest row kernel's size
  int64_t bandwidth_bytes = 0;
};

// config.model.vocab_size must be set (> 0).
// profile: time each kernel of the timed steps (slightly slower steps: a clock read per call).
TrainBenchResult train_bench(const Config& config, int steps, int warmup, bool profile = false);

// GFLOP/s of one sgemm C (M, N) = A (M, K) B (K, N), best of `repeats` after a warm-up:
// by wall time over the whole pool, and per second of the process's CPU time (one core's
// rate, which other processes on the machine do not lower).
struct GemmRate {
  double gflops = 0;
  double gflops_per_core = 0;
};
GemmRate gemm_gflops(int64_t M, int64_t N, int64_t K, int repeats);

}  // namespace rfa
