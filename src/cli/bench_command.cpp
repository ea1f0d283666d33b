// rfa bench train --config F [--steps N] [--warmup N]: median ms/step,
// tokens/s and achieved GFLOP/s of the training step, against the sgemm peak.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cli/bench_machine.h"
#include "cli/bench_vocab.h"
#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "cli/config_options.h"
#include "config/config_enums.h"
#include "core/log.h"
#include "core/parallel.h"
#include "dist/dist.h"
#include "core/memory_check.h"
#include "core/step_profile.h"
#include "kernels/cpu_target.h"
#include "model/memory_estimate.h"
#include "train/thread_split.h"
#include "model/model_flops.h"
#include "model/model_params.h"
#include "train/train_bench.h"

namespace rfa {
namespace {

struct BenchOptions {
  ConfigOptions config;
  int steps = 20;
  int warmup = 3;
  bool profile = false;
};

// --profile, the gemm row by product shape, the most time first: the shapes far below the peak are
// where the products lose time (e.g. a product with 4 output columns, or one whose operands
// come from the other core's cache). "A·Bᵀ" etc. name the operands' transposes (gemm.h).
void bench_product_shapes_report(const TrainBenchResult& r, Precision precision) {
  if (r.product_shapes.empty()) return;
  // bf16 products against the bf16 matmul peak (measured beside the sgemm one), fp32 against sgemm's.
  const bool bf16 = precision == Precision::bf16 && r.gemm_bf16_peak_gflops > 0;
  const double peak = bf16 ? r.gemm_bf16_peak_gflops : r.gemm_peak_gflops;
  const double steps = r.timed_steps;
  std::vector<ProductProfileRow> rows = r.product_shapes;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.row.ms > b.row.ms; });
  // By wall time over the pool: a call of a few microseconds is too short for the process's CPU
  // clock (Linux adds the other threads' time at ticks and switches), so per shape the per-core
  // rate would read high; the wall rate counts a neighbour's interference instead.
  log_info("bench", "  products by shape (C (M, N) = op(A) op(B)), the most time first; GFLOP/s by wall time over the "
           "pool, against the {} peak over the pool {:.1f}:", bf16 ? "bf16 matmul" : "sgemm", peak);
  log_info("bench", "  {:<9} {:>18} {:>6} {:>8} {:>6} {:>8} {:>7}", "product", "M x N x K", "calls", "ms", "share",
           "GFLOP/s", "% peak");
  for (const ProductProfileRow& p : rows) {
    const ProfileRow& row = p.row;
    const double ms = row.ms / steps, rate = row.ms > 0 ? row.flop / (row.ms * 1e6) : 0;
    const std::string op = fmt::format("A{}·B{}", p.shape.trans_a ? "ᵀ" : "", p.shape.trans_b ? "ᵀ" : "");
    log_info("bench", "  {:<9} {:>18} {:>6.1f} {:>8.2f} {:>5.1f}% {:>8.1f} {:>7}", op,
             fmt::format("{} x {} x {}", p.shape.M, p.shape.N, p.shape.K), double(row.calls) / steps, ms,
             100 * ms / r.mean_ms, rate,
             peak > 0 ? fmt::format("{:.0f}%", 100 * rate / peak) : "-");
  }
  if (r.other_shapes.calls > 0)
    log_info("bench", "  {:<28} {:>6.1f} {:>8.2f}  (shapes past the table's {})", "other shapes",
             double(r.other_shapes.calls) / steps, r.other_shapes.ms / steps, kProfiledShapes);
}

// --profile: where the step's time goes, kernel by kernel (core/step_profile.h), each
// against its roof: the products against the measured sgemm peak, the hand-written
// kernels against the measured FMA peak of this build's vectors; bandwidth-bound
// kernels show the bytes they move instead. Rates per core are per second of CPU
// time (the process's, inside the calls): what a kernel does with the cores while it
// has them, which other processes on a shared machine do not change; wall-time
// rates beside them.
void bench_profile_report(const TrainBenchResult& r, Precision precision) {
  const double steps = r.timed_steps;
  log_info("bench", "profile over {} steps (mean {:.2f} ms/step), {} threads; roofs measured in this process: "
           "FMA of this build's {}-float vectors {:.1f} GFLOP/s per core ({:.1f} over the pool by wall time), "
           "sgemm {:.1f} per core ({:.1f} by wall time), y = a x + y over two {:.1f} MB buffers {:.1f} GB/s",
           r.timed_steps, r.mean_ms, thread_count(), r.vector_floats, r.fma_peak_gflops_per_core, r.fma_peak_gflops,
           r.gemm_peak_gflops_per_core, r.gemm_peak_gflops, r.bandwidth_bytes / 1e6, r.bandwidth_gbs);
  log_info("bench", "  {:<19} {:>6} {:>8} {:>6} {:>8} {:>9} {:>7} {:>8} {:>6} {:>5}", "kernel", "calls", "ms",
           "share", "CPU ms", "GF/core", "% peak", "MB", "GB/s", "% bw");
  double accounted = 0;
  for (int k = 0; k < kProfiledKernels; ++k) {
    const ProfileRow& row = r.profile[size_t(k)];
    if (row.calls == 0) continue;
    const double ms = row.ms / steps;
    accounted += ms;
    const bool product = static_cast<ProfiledKernel>(k) == ProfiledKernel::gemm;
    const double roof = product ? r.gemm_peak_gflops_per_core : r.fma_peak_gflops_per_core;
    const double per_core = row.cpu_ms > 0 ? row.flop / (row.cpu_ms * 1e6) : 0;
    const bool counted = row.flop > 0 && row.cpu_ms > 0;
    const double gbs = row.ms > 0 ? row.bytes / (row.ms * 1e6) : 0;
    const bool moved = row.bytes > 0 && row.ms > 0 && !product;  // the products are bound by their FLOPs
    const bool waited = static_cast<ProfiledKernel>(k) == ProfiledKernel::split_wait;  // wall time only
    log_info("bench", "  {:<19} {:>6.1f} {:>8.2f} {:>5.1f}% {:>8} {:>9} {:>7} {:>8} {:>6} {:>5}",
             profiled_kernel_name(static_cast<ProfiledKernel>(k)), double(row.calls) / steps, ms,
             100 * ms / r.mean_ms, waited ? "-" : fmt::format("{:.2f}", row.cpu_ms / steps),
             counted ? fmt::format("{:.1f}", per_core) : "-",
             counted && roof > 0 ? fmt::format("{:.0f}%", 100 * per_core / roof) : "-",
             row.bytes > 0 ? fmt::format("{:.1f}", row.bytes / steps / 1e6) : "-",
             moved ? fmt::format("{:.1f}", gbs) : "-",
             moved && r.bandwidth_gbs > 0 ? fmt::format("{:.0f}%", 100 * gbs / r.bandwidth_gbs) : "-");
  }
  const double other = r.mean_ms - accounted;
  log_info("bench", "  {:<19} {:>6} {:>8.2f} {:>5.1f}%  (the rest of the step: batch, loss sums, stop polls)", "other",
           "", other, 100 * other / r.mean_ms);
  const ProfileRow& wait = r.profile[size_t(ProfiledKernel::split_wait)];
  if (wait.calls > 0)
    log_info("bench", "  batch split join: the first thread waiting for the others at the end of each forward and "
             "backward; equal shares, so a large one says the cores ran at different speeds (another process, a "
             "VM's vCPUs, a hybrid CPU's small cores), not that a kernel was slow");
  log_info("bench", "  GF/core: GFLOP per CPU-second inside the calls; % peak: that against the per-core roof (sgemm's "
           "for gemm, the FMA's for the rest); GB/s by wall time, % bw against the y = a x + y roof");
  bench_product_shapes_report(r, precision);
  if (r.gemm_peak_gflops_per_core > 1.15 * r.fma_peak_gflops_per_core && r.vector_floats >= 16)
    log_warn("bench", "sgemm ran {:.1f} GFLOP/s per core, above the FMA peak {:.1f} of the same vectors: the FMA probe "
             "is wrong or the clocks moved between the probes", r.gemm_peak_gflops_per_core, r.fma_peak_gflops_per_core);
}

void bench_train(Config config, const BenchOptions& o) {
  if (config.model.vocab_size == 0) config.model.vocab_size = config_model_vocab(config);
  const ModelSpec spec = model_spec_make(config.model, config.attention);
  MemoryEstimate need = memory_estimate_train(spec, config.train, thread_count(), 1,
                                              thread_split_resolve(config, spec, thread_count()));
  need.add_copies("the other ranks on this machine", dist_local_size() - 1,
                  fmt::format("the ranks per machine (mpirun -np: {} here)", dist_local_size()));
  memory_require(need, "the training benchmark");
  const int B = config.train.batch_size, T = spec.model.context_length;
  const ParamTable table = model_param_table(spec);
  log_info("bench", "{} attention, {} products, L={} C={} H={} T={} V={} B={}x{}: {} parameters ({:.1f} MB of fp32 "
           "gradient), {} threads, {} steps after {} warm-up",
           model_spec_attention_text(spec), enum_name(config.train.precision), spec.L, spec.C, spec.H, T, spec.V, B,
           config.train.grad_accum,
           table.count(), table.size() * 4.0 / 1e6, thread_count(), o.steps, o.warmup);
  log_info("bench", "kernels: {}", cpu_target_description());
  bench_log_core_distance();
  TrainBenchResult r = train_bench(config, o.steps, o.warmup, o.profile);
  log_info("bench", "{}", thread_split_text(r.thread_split, B, thread_count()));
  FlopCount f = model_train_flops(spec, int64_t(B) * config.train.grad_accum * r.ranks, T);
  log_info("bench", "median {:.2f} ms/step (min {:.2f}): forward {:.2f}, backward {:.2f}, optimizer {:.2f}",
           r.median_ms, r.min_ms, r.median_forward_ms, r.median_backward_ms, r.median_optimizer_ms);
  log_info("bench", "CPU time {:.2f} ms/step over {} threads: {:.0f} tokens per CPU-second", r.median_cpu_ms,
           thread_count(), r.tokens_per_s * r.median_ms / r.median_cpu_ms);
  if (r.ranks > 1)
    log_info("bench", "{} ranks (data parallel): gradient all-reduce {:.2f} ms/step median = {:.1f}% of the step; "
             "tokens/s and GFLOP/s below count all ranks",
             r.ranks, r.median_allreduce_ms, 100.0 * r.median_allreduce_ms / r.median_ms);
  log_info("bench", "{:.0f} tokens/s; {:.3f} GFLOP/step ({:.3f} matmul 6*N*tokens + {:.3f} attention)", r.tokens_per_s,
           f.total() / 1e9, f.matmul / 1e9, f.attention / 1e9);
  log_info("bench", "{:.1f} GFLOP/s achieved = {:.0f}% of the measured sgemm peak {:.1f} GFLOP/s", r.gflops,
           100.0 * r.gflops / r.gemm_peak_gflops, r.gemm_peak_gflops);
  if (r.gemm_bf16_peak_gflops > 0 && config.train.precision == Precision::bf16)
    log_info("bench", "{:.1f} GFLOP/s achieved = {:.0f}% of the measured bf16 matmul peak {:.1f} GFLOP/s "
             "(bf16 peak / sgemm peak = {:.2f})",
             r.gflops, 100.0 * r.gflops / r.gemm_bf16_peak_gflops, r.gemm_bf16_peak_gflops,
             r.gemm_bf16_peak_gflops / r.gemm_peak_gflops);
  else if (r.gemm_bf16_peak_gflops > 0)
    log_info("bench", "measured bf16 matmul peak {:.1f} GFLOP/s = {:.2f}x the sgemm peak (train.precision bf16 "
             "runs the products there)",
             r.gemm_bf16_peak_gflops, r.gemm_bf16_peak_gflops / r.gemm_peak_gflops);
  log_info("bench", "memory: activation arena{} {}, AdamW m+v {}{}, peak RSS {}",
           r.thread_split == ThreadSplit::batch ? "s" : "", bytes_text(double(r.activation_bytes)),
           bytes_text(double(r.optimizer_bytes)),
           r.grad_copy_bytes > 0 ? fmt::format(", gradient copies {}", bytes_text(double(r.grad_copy_bytes))) : "",
           bytes_text(double(r.peak_rss_bytes)));
  if (r.profiled) bench_profile_report(r, config.train.precision);
}

}  // namespace

void register_bench_command(CLI::App& app, CommandAction& action) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  CLI::App* train = bench->add_subcommand("train", "Time the training step on random tokens");
  auto o = std::make_shared<BenchOptions>();
  config_options_add(*train, o->config);
  train->add_option("--steps", o->steps, "Timed steps")->capture_default_str()->check(cli_integer<int>(1));
  train->add_option("--warmup", o->warmup, "Untimed steps first")->capture_default_str()->check(cli_integer<int>(0));
  train->add_flag("--profile", o->profile,
                  "Also time each kernel of the step (ms, GFLOP/s against the measured FMA and sgemm peaks, GB/s)");
  train->callback([&action, o] {
    action = [o] {
      std::optional<Config> config = config_options_load(o->config);
      if (config) bench_train(*config, *o);
    };
  });
}

}  // namespace rfa
