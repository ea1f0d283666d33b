// rfa bench decode --batch K,K,...: K rows decoded in one batched step, as rfa generate
// --num-samples K decodes them (or, with --slots S, K rows of a decoder of S, as rfa serve
// --parallel S steps its K busy slots). At each position one row is prefilled and copied to
// the K rows; then --steps batched steps are timed (--repeats runs, the median), wall and
// process CPU time, for rfa_gate and softmax (full KV cache). Reported: ms per batched step and
// the aggregate tokens/s (K tokens a step), with each K's gain over K = 1.
//   With --profile, one more run of the steps at each position is timed kernel by kernel
// (core/step_profile.h, wall clock only) and reported against roofs measured here: the FMA peak over
// the pool for the products and the hand-written kernels, and y = a x + y over buffers the size of
// the step's working set (the packed weights and the K rows' states) for the bytes. From those, the
// step at the roofs, its phases one after another as it runs them: the products at the FMA peak (or
// their bytes at that bandwidth, whichever is longer), then the states' bytes at that bandwidth.
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/bench_decode.h"
#include "config/config_enums.h"
#include "core/cpu_timer.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/step_profile.h"
#include "core/timer.h"
#include "io/json.h"
#include "kernels/peak_probes.h"

namespace rfa {
namespace {

struct RowsResult {
  double ms = 0, cpu_ms = 0;  // median per batched step
  double tokens_per_s(int K) const { return K * 1e3 / ms; }
  double tokens_per_cpu_s(int K) const { return K * 1e3 / cpu_ms; }
  // --profile: each kernel's sums over the profiled run's steps, its mean step, and the K rows'
  // state bytes (what the bandwidth roof is measured over).
  bool profiled = false;
  std::array<ProfileRow, kProfiledKernels> profile{};
  double profiled_ms = 0;
  int64_t state_bytes = 0, weight_bytes = 0;
};

// (positions) results for K rows of one kind.
std::vector<RowsResult> bench_rows(const Config& base, AttentionKind kind, const BenchDecodeArgs& a, int K) {
  Model<float> model(bench_decode_spec(base, kind, a), a.precision);
  model_init(model, 1);
  model.bf16_refresh();
  const DecoderOptions o = bench_decoder_options(a, a.slots > 0 ? a.slots : K);
  Decoder<float> dec(model, o);
  std::vector<int> rows(static_cast<size_t>(K));
  for (int b = 0; b < K; ++b) rows[static_cast<size_t>(b)] = b;
  CounterRng rng(7);
  std::vector<int32_t> tokens(static_cast<size_t>(o.max_positions) * K);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.below(static_cast<uint64_t>(a.vocab)));
  std::vector<uint8_t> row(static_cast<size_t>(dec.row_bytes()));
  std::vector<RowsResult> out;
  for (int64_t p : a.positions) {
    dec.reset();
    for (int64_t t0 = 0; t0 < p; t0 += o.max_segment)
      dec.prefill_row(0, tokens.data() + t0, static_cast<int>(std::min<int64_t>(o.max_segment, p - t0)));
    dec.row_save(0, row.data());  // every repeat starts the K rows from this row at p
    auto run_steps = [&] {  // --steps batched steps of the K rows
      for (int i = 0; i < a.steps; ++i) {
        const int32_t* step_tokens = tokens.data() + size_t(i) * K;
        if (o.batch == K)
          dec.step(step_tokens);
        else
          dec.step_rows(rows.data(), K, step_tokens);
      }
    };
    std::vector<double> runs, cpu_runs;
    for (int rep = -1; rep < a.repeats; ++rep) {  // rep -1 warms caches up; not recorded
      for (int b = 0; b < K; ++b) dec.row_restore(b, row.data());
      const double cpu0 = process_cpu_seconds();
      Timer t;
      run_steps();
      if (rep < 0) continue;
      runs.push_back(t.ms() / a.steps);
      cpu_runs.push_back((process_cpu_seconds() - cpu0) * 1e3 / a.steps);
    }
    out.push_back({bench_median(runs), bench_median(cpu_runs)});
    if (a.profile) {  // the same steps again from the same rows, each kernel call timed
      RowsResult& r = out.back();
      for (int b = 0; b < K; ++b) dec.row_restore(b, row.data());
      r.state_bytes = int64_t(K) * dec.row_state_size(p) * int64_t(sizeof(float));
      r.weight_bytes = dec.step_weights_bytes();
      step_profile_enable(true, false);
      Timer t;
      run_steps();
      r.profiled_ms = t.ms() / a.steps;
      for (int k = 0; k < kProfiledKernels; ++k) r.profile[size_t(k)] = step_profile_row(static_cast<ProfiledKernel>(k));
      step_profile_enable(false);
      r.profiled = true;
    }
    log_info("bench", "{} x{} rows at position {}: {:.4f} ms/step wall, {:.0f} tokens/s", enum_name(kind), K, p,
             out.back().ms, out.back().tokens_per_s(K));
  }
  return out;
}

// The bytes of the rows' states a profiled run moved: the attention's, and the short
// convolution's history and rows beside them (its own row of the table).
double state_step_bytes(const RowsResult& r) {
  return r.profile[size_t(ProfiledKernel::attention_step)].bytes + r.profile[size_t(ProfiledKernel::short_conv)].bytes;
}

// The step at the roofs (ms), its phases one after another as the step runs them: the products at
// the FMA peak over the pool or their bytes at the bandwidth roof, whichever is longer, then the
// attention step's bytes (the states) at the bandwidth roof. None where the roofs do not bound it
// (bf16 products run above the fp32 FMA peak).
struct StepBound {
  double products_ms = 0, state_ms = 0;
  double ms() const { return products_ms + state_ms; }
};

StepBound step_bound(const RowsResult& r, int steps, const FmaPeak& fma, double bandwidth_gbs, Precision precision) {
  StepBound b;
  if (precision == Precision::bf16 || fma.gflops <= 0 || bandwidth_gbs <= 0) return b;
  const ProfileRow& products = r.profile[size_t(ProfiledKernel::step_products)];
  b.products_ms = std::max(products.flop / (fma.gflops * 1e6), products.bytes / (bandwidth_gbs * 1e6)) / steps;
  b.state_ms = state_step_bytes(r) / (bandwidth_gbs * 1e6) / steps;
  return b;
}

// --profile's table for one (kind, K, position): each kernel's share of the profiled run's mean step,
// its rate by wall time over the pool against the FMA peak over the pool (a row split's first thread
// counts for all rows, so its calls' time is the step's), and its bytes against the bandwidth roof;
// then the step at the roofs.
void profile_report(AttentionKind kind, int K, int64_t position, const RowsResult& r, const RowsResult& first,
                    int first_K, const FmaPeak& fma, const BandwidthPeak& bw, const BenchDecodeArgs& a) {
  const double steps = a.steps;
  log_info("bench", "profile of {} x{} rows at position {}: one more run of {} steps, each kernel call timed "
           "(wall clock), {:.4f} ms/step ({:.4f} timed); roofs measured here: FMA of this build's {}-float vectors "
           "{:.1f} GFLOP/s over the pool of {} threads, y = a x + y over two {:.2f} MB buffers (the packed weights, "
           "{:.2f} MB, and the rows' states, {:.2f} MB) {:.1f} GB/s",
           enum_name(kind), K, position, a.steps, r.profiled_ms, r.ms, fma.vector_floats, fma.gflops, thread_count(),
           bw.bytes / 1e6, r.weight_bytes / 1e6, r.state_bytes / 1e6, bw.gbs);
  log_info("bench", "  {:<19} {:>6} {:>8} {:>6} {:>8} {:>7} {:>8} {:>6} {:>5}", "kernel", "calls", "ms", "share",
           "GFLOP/s", "% peak", "MB", "GB/s", "% bw");
  double accounted = 0;
  for (int k = 0; k < kProfiledKernels; ++k) {
    const ProfileRow& row = r.profile[size_t(k)];
    if (row.calls == 0) continue;
    const ProfiledKernel kernel = static_cast<ProfiledKernel>(k);
    const double ms = row.ms / steps;
    accounted += ms;
    const bool timed = row.ms > 0;
    const double gflops = timed ? row.flop / (row.ms * 1e6) : 0, gbs = timed ? row.bytes / (row.ms * 1e6) : 0;
    log_info("bench", "  {:<19} {:>6.1f} {:>8.4f} {:>5.1f}% {:>8} {:>7} {:>8} {:>6} {:>5}",
             kernel == ProfiledKernel::split_wait ? "row split join" : profiled_kernel_name(kernel),
             double(row.calls) / steps, ms, 100 * ms / r.profiled_ms,
             row.flop > 0 && timed ? fmt::format("{:.1f}", gflops) : "-",
             row.flop > 0 && timed && fma.gflops > 0 ? fmt::format("{:.0f}%", 100 * gflops / fma.gflops) : "-",
             row.bytes > 0 ? fmt::format("{:.2f}", row.bytes / steps / 1e6) : "-",
             row.bytes > 0 && timed ? fmt::format("{:.1f}", gbs) : "-",
             row.bytes > 0 && timed && bw.gbs > 0 ? fmt::format("{:.0f}%", 100 * gbs / bw.gbs) : "-");
  }
  const double other = r.profiled_ms - accounted;
  log_info("bench", "  {:<19} {:>6} {:>8.4f} {:>5.1f}%  (the rest: the logits' copies, the forks, the clock reads)",
           "other", "", other, 100 * other / r.profiled_ms);
  const StepBound b = step_bound(r, a.steps, fma, bw.gbs, a.precision);
  if (b.ms() <= 0) {
    log_info("bench", "  (bf16 products: the fp32 FMA roof does not bound them; no step at the roofs given)");
    return;
  }
  const double first_rate = first.tokens_per_s(first_K);
  log_info("bench", "  the step at the roofs, with nothing else in it: the products {:.4f} ms ({:.2f} MFLOP, {:.2f} "
           "MB), then the states' {:.2f} MB {:.4f} ms = {:.4f} ms: {:.0f} tokens/s, {:.2f}x the x{} rate timed above "
           "(timed: {:.2f}x)",
           b.products_ms, r.profile[size_t(ProfiledKernel::step_products)].flop / steps / 1e6,
           r.profile[size_t(ProfiledKernel::step_products)].bytes / steps / 1e6,
           state_step_bytes(r) / steps / 1e6, b.state_ms, b.ms(), K * 1e3 / b.ms(),
           K * 1e3 / b.ms() / first_rate, first_K, r.tokens_per_s(K) / first_rate);
}

}  // namespace

void bench_decode_rows(const Config& cfg, const BenchDecodeArgs& a) {
  std::vector<AttentionKind> kinds = {bench_decode_recurrent_kind(cfg)};
  if (!a.rfa_only) kinds.push_back(AttentionKind::softmax);
  for (int K : a.batch)
    for (AttentionKind kind : kinds) bench_decode_memory_require(cfg, kind, a, a.slots > 0 ? a.slots : K);
  // results[kind][K index][position index]
  std::vector<std::vector<std::vector<RowsResult>>> results(kinds.size());
  for (size_t k = 0; k < kinds.size(); ++k)
    for (int K : a.batch) results[k].push_back(bench_rows(cfg, kinds[k], a, K));

  if (a.slots > 0)
    std::printf("K rows of a decoder of %d in one batched step (rfa serve --parallel %d, K slots busy); softmax over "
                "its full KV cache\n", a.slots, a.slots);
  else
    std::printf("K rows in one batched step (rfa generate --num-samples K); softmax over its full KV cache\n");
  std::printf("%6s | %9s | %-8s | %12s | %12s | %14s | %12s | %9s\n", "rows", "position", "kind", "ms/step", "tokens/s",
              "tokens/CPU s", "CPU ms/step", "x K=1");
  std::string rows;
  for (size_t k = 0; k < kinds.size(); ++k)
    for (size_t j = 0; j < a.batch.size(); ++j)
      for (size_t i = 0; i < a.positions.size(); ++i) {
        const int K = a.batch[j];
        const RowsResult& r = results[k][j][i];
        // The gain over the first K of the list (K = 1 when it starts the list), by wall and by CPU time.
        const RowsResult& first = results[k][0][i];
        const double gain = r.tokens_per_s(K) / first.tokens_per_s(a.batch[0]);
        const double cpu_gain = r.tokens_per_cpu_s(K) / first.tokens_per_cpu_s(a.batch[0]);
        std::printf("%6d | %9lld | %-8s | %12.4f | %12.0f | %14.0f | %12.4f | %9.2f\n", K,
                    static_cast<long long>(a.positions[i]), enum_name(kinds[k]), r.ms, r.tokens_per_s(K),
                    r.tokens_per_cpu_s(K), r.cpu_ms, gain);
        rows += fmt::format("{}{{\"kind\": \"{}\", \"rows\": {}, \"position\": {}, \"ms_per_step\": {}, "
                            "\"tokens_per_s\": {}, \"cpu_ms_per_step\": {}, \"tokens_per_cpu_s\": {}, "
                            "\"gain\": {}, \"cpu_gain\": {}}}",
                            rows.empty() ? "" : ", ", enum_name(kinds[k]), K, a.positions[i], json_number(r.ms),
                            json_number(r.tokens_per_s(K)), json_number(r.cpu_ms), json_number(r.tokens_per_cpu_s(K)),
                            json_number(gain), json_number(cpu_gain));
      }
  if (a.profile) {  // the roofs measured after the timed runs, each profiled (kind, K, position) against them
    const FmaPeak fma = fma_peak_measure();
    for (size_t k = 0; k < kinds.size(); ++k)
      for (size_t j = 0; j < a.batch.size(); ++j)
        for (size_t i = 0; i < a.positions.size(); ++i) {
          const RowsResult& r = results[k][j][i];
          if (!r.profiled) continue;
          const BandwidthPeak bw = bandwidth_peak_measure(r.weight_bytes + r.state_bytes);
          profile_report(kinds[k], a.batch[j], a.positions[i], r, results[k][0][i], a.batch[0], fma, bw, a);
        }
  }
  const ModelConfig& m = cfg.model;
  std::printf("{\"bench\": \"decode rows\", \"precision\": \"%s\", \"n_layers\": %d, \"d_model\": %d, \"n_heads\": %d, "
              "\"vocab\": %d, \"num_features\": %d, \"threads\": %d, \"slots\": %d, \"steps\": %d, \"repeats\": %d, "
              "\"results\": [%s]}\n",
              enum_name(a.precision), m.n_layers, m.d_model, m.n_heads, a.vocab, cfg.attention.num_features,
              thread_count(), a.slots, a.steps, a.repeats, rows.c_str());
  std::fflush(stdout);
}

}  // namespace rfa
