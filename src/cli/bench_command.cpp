// rfa bench train --config F [--steps N] [--warmup N]: median ms/step,
// tokens/s and achieved GFLOP/s of the training step, against the sgemm peak.
#include <memory>

#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "cli/config_options.h"
#include "config/config_enums.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/memory_check.h"
#include "model/memory_estimate.h"
#include "model/model_flops.h"
#include "tokenizer/tokenizer.h"
#include "model/model_params.h"
#include "train/train_bench.h"

#include <filesystem>

namespace rfa {
namespace {

struct BenchOptions {
  ConfigOptions config;
  int steps = 20;
  int warmup = 3;
};

void bench_train(Config config, const BenchOptions& o) {
  if (config.model.vocab_size == 0) {
    // Follow the tokenizer when it exists; else its configured size stands in.
    const std::string tokenizer_path = config_tokenizer_path(config);
    config.model.vocab_size = std::filesystem::exists(tokenizer_path) ? Tokenizer::load(tokenizer_path).vocab_size()
                                                                      : config.tokenizer.vocab_size;
  }
  const ModelSpec spec = model_spec_make(config.model, config.attention);
  memory_require(memory_estimate_train(spec, config.train, thread_count()), "the training benchmark");
  const int B = config.train.batch_size, T = spec.model.context_length;
  const ParamTable table = model_param_table(spec);
  log_info("bench", "{} attention, {} products, L={} C={} H={} T={} V={} B={}x{}: {} parameters ({:.1f} MB of fp32 "
           "gradient), {} threads, {} steps after {} warm-up",
           enum_name(spec.attention.kind), enum_name(config.train.precision), spec.L, spec.C, spec.H, T, spec.V, B,
           config.train.grad_accum,
           table.count(), table.size() * 4.0 / 1e6, thread_count(), o.steps, o.warmup);
  TrainBenchResult r = train_bench(config, o.steps, o.warmup);
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
  log_info("bench", "memory: activation arena {}, AdamW m+v {}, peak RSS {}", bytes_text(double(r.activation_bytes)),
           bytes_text(double(r.optimizer_bytes)), bytes_text(double(r.peak_rss_bytes)));
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
  train->callback([&action, o] {
    action = [o] {
      std::optional<Config> config = config_options_load(o->config);
      if (config) bench_train(*config, *o);
    };
  });
}

}  // namespace rfa
