// rfa bench decode --batch K,K,...: K rows decoded in one batched step, as rfa generate
// --num-samples K decodes them (or, with --slots S, K rows of a decoder of S, as rfa serve
// --parallel S steps its K busy slots). At each position one row is prefilled and copied to
// the K rows; then --steps batched steps are timed (--repeats runs, the median), wall and
// process CPU time, for rfa_gate and softmax (full KV cache). Reported: ms per batched step and
// the aggregate tokens/s (K tokens a step), with each K's gain over K = 1.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/bench_decode.h"
#include "config/config_enums.h"
#include "core/cpu_timer.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "io/json.h"

namespace rfa {
namespace {

struct RowsResult {
  double ms = 0, cpu_ms = 0;  // median per batched step
  double tokens_per_s(int K) const { return K * 1e3 / ms; }
  double tokens_per_cpu_s(int K) const { return K * 1e3 / cpu_ms; }
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
    std::vector<double> runs, cpu_runs;
    for (int rep = -1; rep < a.repeats; ++rep) {  // rep -1 warms caches up; not recorded
      for (int b = 0; b < K; ++b) dec.row_restore(b, row.data());
      const double cpu0 = process_cpu_seconds();
      Timer t;
      for (int i = 0; i < a.steps; ++i) {
        const int32_t* step_tokens = tokens.data() + size_t(i) * K;
        if (o.batch == K)
          dec.step(step_tokens);
        else
          dec.step_rows(rows.data(), K, step_tokens);
      }
      if (rep < 0) continue;
      runs.push_back(t.ms() / a.steps);
      cpu_runs.push_back((process_cpu_seconds() - cpu0) * 1e3 / a.steps);
    }
    out.push_back({bench_median(runs), bench_median(cpu_runs)});
    log_info("bench", "{} x{} rows at position {}: {:.4f} ms/step wall, {:.0f} tokens/s", enum_name(kind), K, p,
             out.back().ms, out.back().tokens_per_s(K));
  }
  return out;
}

}  // namespace

void bench_decode_rows(const Config& cfg, const BenchDecodeArgs& a) {
  std::vector<AttentionKind> kinds = {AttentionKind::rfa_gate};
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
  const ModelConfig& m = cfg.model;
  std::printf("{\"bench\": \"decode rows\", \"precision\": \"%s\", \"n_layers\": %d, \"d_model\": %d, \"n_heads\": %d, "
              "\"vocab\": %d, \"num_features\": %d, \"threads\": %d, \"slots\": %d, \"steps\": %d, \"repeats\": %d, "
              "\"results\": [%s]}\n",
              enum_name(a.precision), m.n_layers, m.d_model, m.n_heads, a.vocab, cfg.attention.num_features,
              thread_count(), a.slots, a.steps, a.repeats, rows.c_str());
  std::fflush(stdout);
}

}  // namespace rfa
