#include "train/train_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "core/cpu_timer.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/dist.h"
#include "kernels/bf16.h"
#include "kernels/peak_probes.h"
#include "kernels/gemm.h"
#include "kernels/gemm_peak.h"
#include "model/model_flops.h"
#include "tensor/arena.h"
#include "train/train_dist.h"
#include "train/train_session.h"

namespace rfa {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// The pool's rate from the fastest call; the rate per core from the process's CPU time over
// all the calls together, at least kGemmCpuWindowS of them: Linux adds a running thread's CPU time
// to the process's clock only at a tick or a switch, so one short call's CPU time misses most of
// a worker that spins through it (OpenMP's default wait policy), and the least of many such
// readings put sgemm at twice the FMA peak per core.
constexpr double kGemmCpuWindowS = 0.25;
GemmRate gemm_gflops(int64_t M, int64_t N, int64_t K, int repeats) {
  Arena<float> a(M * K), b(K * N), c(M * N);
  for (int64_t i = 0; i < M * K; ++i) a.data()[i] = float(i % 7) * 0.1f;
  for (int64_t i = 0; i < K * N; ++i) b.data()[i] = float(i % 5) * 0.1f;
  gemm(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N);
  double best = 1e30;
  int calls = 0;
  Timer window;
  const double cpu0 = process_cpu_seconds();
  while (calls < repeats || window.seconds() < kGemmCpuWindowS) {
    Timer t;
    gemm(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N);
    best = std::min(best, t.seconds());
    ++calls;
  }
  const double cpu = process_cpu_seconds() - cpu0;
  const double flop = 2.0 * double(M) * N * K;
  return GemmRate{flop / best / 1e9, flop * calls / cpu / 1e9};
}

TrainBenchResult train_bench(const Config& config, int steps, int warmup, bool profile) {
  if (config.model.vocab_size <= 0)
    fail("bench needs model.vocab_size > 0 (got {}); pass --set model.vocab_size=N", config.model.vocab_size);
  if (steps < 1 || warmup < 0) fail("bench --steps {} must be >= 1 and --warmup {} >= 0", steps, warmup);
  train_dist_kernels_check();
  const ModelSpec spec = model_spec_make(config.model, config.attention);
  const int B = config.train.batch_size, T = spec.model.context_length;
  // Random tokens: the step's cost does not depend on the text. At least 64 windows, and
  // one window per stateful stream (ranks x grad_accum x B streams of T+1 tokens or more).
  const int64_t micro_batches = int64_t(config.train.grad_accum) * dist_size();
  const int64_t n_tokens = int64_t(B) * (T + 1) * std::max<int64_t>(64, micro_batches);
  // Token ids as a token file stores them: 2 bytes, or 4 past 65536 (little-endian).
  const int width = spec.V <= 65536 ? 2 : 4;
  std::vector<unsigned char> tokens(static_cast<size_t>(n_tokens * width));
  CounterRng rng(config.train.seed, 0xbe7c);
  for (int64_t i = 0; i < n_tokens; ++i) {
    const uint32_t t = static_cast<uint32_t>(rng.below(static_cast<uint64_t>(spec.V)));
    std::memcpy(tokens.data() + i * width, &t, static_cast<size_t>(width));
  }
  TokenSplit split(tokens.data(), width, n_tokens, n_tokens);
  TrainSession session(config, spec);
  BatchSampler sampler(split, B, T, config.train.seed);
  std::optional<StreamSampler> streams;  // train.stateful: the carried states cost their copy-in and out
  if (config.train.stateful) streams.emplace(split, B, T, config.train.grad_accum * dist_size());
  std::vector<double> total, cpu, fwd, bwd, opt, reduce;
  for (int s = 0; s < warmup + steps; ++s) {
    if (profile && s == warmup) step_profile_enable(true);
    Timer t;
    const double cpu0 = process_cpu_seconds();
    StepStats st = streams ? session.step(s, *streams) : session.step(s, sampler);
    double ms = t.ms();
    if (s < warmup) continue;
    total.push_back(ms);
    cpu.push_back((process_cpu_seconds() - cpu0) * 1e3);
    fwd.push_back(st.forward_ms);
    bwd.push_back(st.backward_ms);
    opt.push_back(st.optimizer_ms + st.setup_ms);
    reduce.push_back(st.allreduce_ms);
  }
  TrainBenchResult r;
  if (profile) {
    for (int k = 0; k < kProfiledKernels; ++k) r.profile[size_t(k)] = step_profile_row(static_cast<ProfiledKernel>(k));
    for (int i = 0; i < step_profile_shape_count(); ++i) r.product_shapes.push_back(step_profile_shape(i));
    r.other_shapes = step_profile_other_shapes();
    step_profile_enable(false);
    r.profiled = true;
    const FmaPeak peak = fma_peak_measure();
    r.fma_peak_gflops = peak.gflops;
    r.fma_peak_gflops_per_core = peak.gflops_per_core;
    r.vector_floats = peak.vector_floats;
    // The largest tensor a row kernel streams: the FFN's (B T, 2 Hf) gate and up projections.
    const BandwidthPeak bw = bandwidth_peak_measure(int64_t(B) * T * 2 * spec.Hf * int64_t(sizeof(float)));
    r.bandwidth_gbs = bw.gbs;
    r.bandwidth_bytes = bw.bytes;
  }
  r.timed_steps = steps;
  for (double ms : total) r.mean_ms += ms / double(steps);
  r.activation_bytes = session.activation_bytes();
  r.grad_copy_bytes = session.grad_copy_bytes();
  r.thread_split = session.thread_split();
  r.optimizer_bytes = session.optimizer_bytes();
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) == 0) r.peak_rss_bytes = int64_t(usage.ru_maxrss) * 1024;  // KiB on Linux
  r.median_ms = median(total);
  r.min_ms = *std::min_element(total.begin(), total.end());
  r.median_cpu_ms = median(cpu);
  r.median_forward_ms = median(fwd);
  r.median_backward_ms = median(bwd);
  r.median_optimizer_ms = median(opt);
  r.median_allreduce_ms = median(reduce);
  r.ranks = dist_size();
  const double tokens_per_step = double(B) * T * config.train.grad_accum * r.ranks;
  r.tokens_per_s = tokens_per_step / (r.median_ms / 1e3);
  FlopCount f = model_train_flops(spec, int64_t(B) * config.train.grad_accum * r.ranks, T);
  r.gflops = f.total() / (r.median_ms / 1e3) / 1e9;
  r.matmul_gflops = f.matmul / (r.median_ms / 1e3) / 1e9;
  // The model's largest matmul (the FFN's up projection) and a large square one.
  const int64_t N = int64_t(B) * T;
  const GemmRate model_shape = gemm_gflops(N, 2 * spec.Hf, spec.C, 20), square = gemm_gflops(1024, 1024, 1024, 5);
  r.gemm_peak_gflops = std::max(model_shape.gflops, square.gflops);
  r.gemm_peak_gflops_per_core = std::max(model_shape.gflops_per_core, square.gflops_per_core);
  if (bf16_native())  // the same two shapes with bf16 operands (gemm_bf16)
    r.gemm_bf16_peak_gflops = std::max(gemm_peak_bf16(N, 2 * spec.Hf, spec.C, 20).gflops_best,
                                       gemm_peak_bf16(1024, 1024, 1024, 5).gflops_best);
  return r;
}

}  // namespace rfa
