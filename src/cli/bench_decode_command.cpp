// rfa bench decode [--config FILE] [--set k=v]... [--positions 64,512,2048,8192] [--steps N] [--repeats R]
// ms/token of one decoding step at several positions, for rfa_gate (or the config's attention.kind
// when it is another recurrent kind: rfa, rfa_delta) and for softmax of the same width and depth
// (random weights: the cost does not depend on them). Median over repeats; printed as a table and as JSON.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "io/json.h"
#include "cli/bench_decode.h"
#include "cli/bench_machine.h"
#include "cli/bench_vocab.h"
#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "config/config_enums.h"
#include "config/config_keys.h"
#include "config/config_load.h"
#include "core/cpu_timer.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "core/memory_check.h"
#include "decode/decode_memory.h"
#include "decode/decoder.h"
#include "kernels/bf16.h"
#include "model/memory_estimate.h"
#include "model/model_spec.h"

namespace rfa {

double bench_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ModelSpec bench_decode_spec(const Config& base, AttentionKind kind, const BenchDecodeArgs& a) {
  ModelConfig mc = base.model;
  mc.vocab_size = a.vocab;
  AttentionConfig ac = base.attention;
  ac.kind = kind;
  ac.layers = "";  // every layer this kind: the bench compares two kinds
  return model_spec_make(mc, ac);
}

DecoderOptions bench_decoder_options(const BenchDecodeArgs& a, int batch) {
  DecoderOptions o;
  o.batch = batch;
  o.prefill_rows = 1;  // a row is prefilled, then copied to the others
  o.max_segment = 512;
  o.max_positions = *std::max_element(a.positions.begin(), a.positions.end()) + a.steps;
  o.window = 0;  // the full KV cache: this bench measures softmax's cost at position p, not rfa generate's window
  o.precision = a.precision;
  return o;
}

AttentionKind bench_decode_recurrent_kind(const Config& cfg) {
  return cfg.attention.kind == AttentionKind::softmax ? AttentionKind::rfa_gate : cfg.attention.kind;
}

void bench_decode_memory_require(const Config& base, AttentionKind kind, const BenchDecodeArgs& a, int batch) {
  const ModelSpec spec = bench_decode_spec(base, kind, a);
  const DecoderOptions o = bench_decoder_options(a, batch);
  const std::string positions = fmt::format("--positions (largest {})", o.max_positions - a.steps);
  MemoryEstimate need = memory_estimate_model(spec, a.precision, ModelUse::inference);
  for (const MemoryPart& part : memory_estimate_decoder(spec, o, thread_count(), "the model's size", positions).parts)
    need.parts.push_back(part);
  need.add("benchmark tokens", double(o.max_positions) * sizeof(int32_t), positions);
  memory_require(need, fmt::format("the {} decoding benchmark", enum_name(kind)));
}

namespace {

struct KindResult {
  std::vector<double> ms;          // per position: median wall ms/token
  std::vector<double> cpu_ms;      // per position: median process CPU ms/token (all threads)
  std::vector<int64_t> state;      // per position: state bytes
  double prefill_tokens_per_s = 0;
};

KindResult bench_kind(const Config& base, AttentionKind kind, const BenchDecodeArgs& a) {
  Model<float> model(bench_decode_spec(base, kind, a), a.precision);
  model_init(model, 1);
  model.bf16_refresh();
  const int64_t max_p = *std::max_element(a.positions.begin(), a.positions.end());
  const DecoderOptions o = bench_decoder_options(a, 1);
  Decoder<float> dec(model, o);
  std::vector<int32_t> tokens(static_cast<size_t>(max_p + a.steps));
  CounterRng rng(7);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.below(static_cast<uint64_t>(a.vocab)));

  KindResult r;
  const bool rfa = !model.spec.attn_state_grows();  // a fixed-size state: snapshot and restore it
  // A first prefill pays once for what later ones find ready (the workspace's pages, the pool's
  // threads): untimed, or a single --positions 512 read 12,000 rfa_gate tokens/s for 108,000.
  dec.prefill_all(tokens.data(), std::min<int64_t>(max_p, o.max_segment));
  dec.reset();
  if (!rfa) {
    // A causal cache truncated to P is exactly the cache after P tokens: prefill once.
    Timer t;
    dec.prefill_all(tokens.data(), max_p);
    r.prefill_tokens_per_s = max_p / t.seconds();
  }
  std::vector<uint8_t> snapshot(static_cast<size_t>(dec.row_bytes()));  // the row after its prefill
  // Longest first: a softmax cache can only be truncated, never extended for free.
  std::vector<size_t> order(a.positions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return a.positions[x] > a.positions[y]; });
  r.ms.assign(order.size(), 0);
  r.cpu_ms.assign(order.size(), 0);
  r.state.assign(order.size(), 0);
  for (size_t index : order) {
    const int64_t p = a.positions[index];
    if (rfa) {
      dec.reset();
      Timer t;
      dec.prefill_all(tokens.data(), p);
      r.prefill_tokens_per_s = std::max(r.prefill_tokens_per_s, p / t.seconds());
      dec.row_save(0, snapshot.data());
    }
    std::vector<double> runs, cpu_runs;
    for (int rep = -1; rep < a.repeats; ++rep) {  // rep -1 warms caches up after the prefill; not recorded
      if (rfa) dec.row_restore(0, snapshot.data());
      else dec.set_position(0, p);
      const double cpu0 = process_cpu_seconds();
      Timer t;
      for (int i = 0; i < a.steps; ++i) dec.step(&tokens[static_cast<size_t>(p + i)]);
      if (rep < 0) continue;
      runs.push_back(t.ms() / a.steps);
      cpu_runs.push_back((process_cpu_seconds() - cpu0) * 1e3 / a.steps);
    }
    // Back to position p for its state's bytes: a fixed-size state by restoring it (a ring that
    // wrapped cannot be truncated), a KV cache by truncating it.
    if (rfa) dec.row_restore(0, snapshot.data());
    else dec.set_position(0, p);
    r.ms[index] = bench_median(runs);
    r.cpu_ms[index] = bench_median(cpu_runs);
    r.state[index] = dec.state_bytes();
    log_info("bench", "{} position {}: {:.4f} ms/token wall, {:.4f} ms/token CPU", enum_name(kind), p,
             r.ms[index], r.cpu_ms[index]);
  }
  return r;
}

void run_bench_decode(const BenchDecodeArgs& a) {
  if (a.positions.empty()) fail("--positions is empty");
  for (int64_t p : a.positions)
    if (p < 1) fail("--positions: {} must be >= 1", p);
  if (a.steps < 1 || a.repeats < 1) fail("--steps {} and --repeats {} must be >= 1", a.steps, a.repeats);
  if (a.precision == Precision::bf16)
    bf16_require("--precision bf16", "pass --precision fp32 (the default) on this machine");
  const Config cfg = config_load(a.config, a.sets);
  const ModelConfig& m = cfg.model;
  log_info("bench", "decode: {} layers, width {}, {} heads, vocab {}, D {}, {} threads; {} steps x {} repeats; {} "
           "products",
           m.n_layers, m.d_model, m.n_heads, a.vocab, cfg.attention.num_features, thread_count(), a.steps, a.repeats,
           enum_name(a.precision));
  // The vocabulary is --vocab's, not the config's (the decode tables since 2026-12-01 are at 384):
  // say so when the config's model has another, whose output product costs more or less.
  if (!a.config.empty()) {
    try {
      const int config_vocab = config_model_vocab(cfg);
      if (config_vocab > 0 && config_vocab != a.vocab)
        log_info("bench", "vocab {} is --vocab's; the config's model has {} (--vocab {} times that one)", a.vocab,
                 config_vocab, config_vocab);
    } catch (const Error&) {
      // A note only: a tokenizer file that cannot be read leaves the benchmark as it was.
    }
  }
  bench_log_core_distance();
  if (a.slots > 0 && a.batch.empty()) fail("--slots {} needs --batch (the rows each step runs of them)", a.slots);
  for (int K : a.batch)
    if (a.slots > 0 && K > a.slots)
      fail("--batch {} is more rows than --slots {}: give --slots at least the largest --batch", K, a.slots);
  if (a.profile && a.batch.empty())
    fail("--profile times the kernels of a batched step: give it --batch too (e.g. --batch 1,8,64 --positions 512)");
  if (!a.batch.empty()) return bench_decode_rows(cfg, a);
  // The recurrent column (bench_decode_recurrent_kind). The JSON keeps its rfa_gate_* keys for that
  // column and names the kind in "rfa_kind".
  const AttentionKind rk = bench_decode_recurrent_kind(cfg);
  const std::string rn = enum_name(rk);
  bench_decode_memory_require(cfg, rk, a, 1);
  if (!a.rfa_only) bench_decode_memory_require(cfg, AttentionKind::softmax, a, 1);
  const KindResult rg = bench_kind(cfg, rk, a);
  const KindResult sm = a.rfa_only ? rg : bench_kind(cfg, AttentionKind::softmax, a);

  if (cfg.attention.window > 0)  // attention.window: the softmax model was trained with a sliding window
    std::printf("softmax attends over its trained window of %d positions (a ring, attention.window): cost at "
                "position p\n",
                cfg.attention.window);
  else
    std::printf("softmax attends over its full KV cache (no window, unlike rfa generate): cost at position p\n");
  std::printf("%9s | %15s | %15s | %16s | %12s | %12s | %14s | %14s\n", "position", (rn + " ms/tok").c_str(),
              "softmax ms/tok", ("softmax/" + rn).c_str(), (rn + " CPU").c_str(), "softmax CPU",
              (rn + " state").c_str(), "softmax state");
  std::string rows;
  for (size_t i = 0; i < a.positions.size(); ++i) {
    const double ratio = sm.ms[i] / rg.ms[i];
    std::printf("%9lld | %15.4f | %15.4f | %16.2f | %12.4f | %12.4f | %10.1f KiB | %10.1f KiB\n",
                static_cast<long long>(a.positions[i]), rg.ms[i], sm.ms[i], ratio, rg.cpu_ms[i], sm.cpu_ms[i],
                rg.state[i] / 1024.0, sm.state[i] / 1024.0);
    rows += fmt::format("{}{{\"position\": {}, \"rfa_gate_ms_per_token\": {}, \"softmax_ms_per_token\": {}, "
                        "\"softmax_over_rfa_gate\": {}, \"rfa_gate_cpu_ms_per_token\": {}, "
                        "\"softmax_cpu_ms_per_token\": {}, \"rfa_gate_state_bytes\": {}, \"softmax_state_bytes\": {}}}",
                        i ? ", " : "", a.positions[i], json_number(rg.ms[i]), json_number(sm.ms[i]),
                        json_number(ratio), json_number(rg.cpu_ms[i]), json_number(sm.cpu_ms[i]), rg.state[i],
                        sm.state[i]);
  }
  // Flatness of rfa_gate: cost at the last position over the first (CPU time: robust to a busy machine).
  const double flat = rg.cpu_ms.back() / rg.cpu_ms.front();
  std::printf("%s: %.0f tokens/s wall (%.0f per CPU second) at position %lld; CPU cost at %lld / at %lld = "
              "%.3f (%s 10%%)\n",
              rn.c_str(), 1e3 / rg.ms.front(), 1e3 / rg.cpu_ms.front(), static_cast<long long>(a.positions.front()),
              static_cast<long long>(a.positions.back()), static_cast<long long>(a.positions.front()), flat,
              flat <= 1.10 ? "within" : "NOT within");
  std::printf("prefill: %s %.0f tokens/s, softmax %.0f tokens/s\n", rn.c_str(), rg.prefill_tokens_per_s,
              sm.prefill_tokens_per_s);
  const std::string json = fmt::format(
      "{{\"bench\": \"decode\", \"rfa_kind\": \"{}\", \"precision\": \"{}\", \"n_layers\": {}, \"d_model\": {}, "
      "\"n_heads\": {}, \"vocab\": {}, "
      "\"num_features\": {}, \"threads\": {}, \"steps\": {}, \"repeats\": {}, \"rows\": [{}], "
      "\"rfa_gate_last_over_first\": {}, \"rfa_gate_prefill_tokens_per_s\": {}, \"softmax_prefill_tokens_per_s\": {}}}",
      rn, enum_name(a.precision), m.n_layers, m.d_model, m.n_heads, a.vocab, cfg.attention.num_features, thread_count(),
      a.steps, a.repeats, rows, json_number(flat), json_number(rg.prefill_tokens_per_s), json_number(sm.prefill_tokens_per_s));
  std::printf("%s\n", json.c_str());
  std::fflush(stdout);
}

}  // namespace

void register_bench_decode_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<BenchDecodeArgs>();
  CLI::App* group = subcommand_group(app, "bench", "Benchmarks (not tests)");
  CLI::App* cmd = group->add_subcommand(
      "decode", "ms/token of decoding at several positions, rfa_gate (or the config's recurrent kind) vs softmax");
  cmd->add_option("--config", args->config, "Model shape from this config (default: 4 layers, width 128)");
  cmd->add_option("--set", args->sets, "Override a config key: --set model.d_model=256");
  cmd->add_option("--positions", args->positions, "Positions to time at")
      ->delimiter(',')
      ->capture_default_str()
      ->check(cli_integer<int64_t>(1, int64_t(1) << 30));  // the decoder holds < 2^31 positions
  cmd->add_option("--steps", args->steps, "Decoding steps timed per run")
      ->capture_default_str()
      ->check(cli_integer<int>(1));
  cmd->add_option("--repeats", args->repeats, "Runs per position (the median is reported)")
      ->capture_default_str()
      ->check(cli_integer<int>(1));
  cmd->add_option("--vocab", args->vocab, "Vocabulary size of the benchmark models")
      ->capture_default_str()
      ->check(cli_integer<int>(1, kMaxVocab));
  cmd->add_option("--batch", args->batch,
                  "Rows decoded in one batched step (rfa generate --num-samples K): aggregate tokens/s for each "
                  "K of the list, e.g. --batch 1,8,64 --positions 512")
      ->delimiter(',')
      ->check(cli_integer<int>(1, 1 << 16));
  cmd->add_option("--slots", args->slots,
                  "With --batch: a decoder of this many rows steps K of them, the others idle, as `rfa serve "
                  "--parallel S` does with K busy slots (default: K rows of K)")
      ->check(cli_integer<int>(1, 1 << 16));
  cmd->add_flag("--rfa-only", args->rfa_only,
                "Time only the recurrent kind: rfa_gate, or the config's rfa / rfa_delta (softmax columns repeat it)");
  cmd->add_flag("--profile", args->profile,
                "With --batch: after the timed runs, one more run timed kernel by kernel (products, attention step, "
                "norms, SwiGLU) against the FMA and bandwidth roofs measured here, and the fastest step those roofs "
                "allow");
  cli_add_precision(*cmd, args->precision);
  cmd->callback([args, &action] { action = [args] { run_bench_decode(*args); }; });
}

}  // namespace rfa
