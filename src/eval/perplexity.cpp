#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/error.h"
#include "core/log.h"
#include "core/memory_check.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "decode/decode_memory.h"
#include "decode/decoder.h"
#include "kernels/logit_rows.h"
#include "model/model_spec.h"

namespace rfa {
namespace {

// Logs "[tag] what done/total tokens, rate, ETA" at most every 5 seconds (RFA_TEST_PROGRESS_SECONDS in
// RFA_TEST_HOOKS builds: the e2e tests' passes take milliseconds).
class Progress {
 public:
  Progress(int64_t total, PassProgress p) : total_(total), p_(p) {
#ifdef RFA_TEST_HOOKS
    if (const char* s = std::getenv("RFA_TEST_PROGRESS_SECONDS")) interval_ = std::atof(s);
#endif
  }
  void update(int64_t done) {
    if (!p_.tag || since_.seconds() < interval_) return;
    since_.reset();
    const double rate = done / std::max(1e-9, clock_.seconds());
    log_info(p_.tag, "{}{}/{} tokens ({:.0f}%), {:.0f} tokens/s, ETA {:.0f} s", p_.what, done, total_,
             100.0 * done / total_, rate, (total_ - done) / std::max(rate, 1e-9));
  }

 private:
  int64_t total_;
  PassProgress p_;
  double interval_ = 5.0;
  Timer clock_, since_;
};

// -log softmax(logits)[target] in double, or NaN when a logit is not finite (no throw: rows run in a
// parallel region). max + log Σ e^(l - max) - l_target, the exps of the double differences.
double row_nll(const float* logits, int V, int32_t target) {
  const LogitsMax m = logits_max(logits, V);
  if (!m.finite) return std::numeric_limits<double>::quiet_NaN();
  return double(m.max) + logits_log_sum_exp(logits, V, m.max) - double(logits[target]);
}

// A row's cost for the pool's grain, in multiply-adds (parallel_grain's unit): about 32 a logit, an
// estimate (the max pass, and ~16 vector operations per register of doubles for the exp and sum, weighed
// as the products' 16-lane multiply-adds are), not tuned: rows of V >= 2048 fork from a few rows on.
constexpr int64_t kNllWorkPerLogit = 32;

// One pass, the state carried across segments: logits of segment position t score x[t0 + t + 1].
constexpr double kStopped = std::numeric_limits<double>::quiet_NaN();

// The first document start after `t` (starts ascending; `next` walks forward), or `end`.
int64_t next_start(std::span<const int64_t> starts, size_t& next, int64_t t, int64_t end) {
  while (next < starts.size() && starts[next] <= t) ++next;
  return next < starts.size() && starts[next] < end ? starts[next] : end;
}

// Segments end early at a document start, where the state restarts.
double nll_recurrent(Decoder<float>& dec, int segment, std::span<const int32_t> x, std::span<const int64_t> starts,
                     Progress& progress, bool (*should_stop)()) {
  const int64_t inputs = static_cast<int64_t>(x.size()) - 1;
  const int V = dec.vocab();
  double sum = 0;
  dec.reset();
  size_t next = 0;
  for (int64_t t0 = 0; t0 < inputs;) {
    if (should_stop && should_stop()) return kStopped;
    const int64_t end = std::min<int64_t>(t0 + segment, inputs);
    const int64_t cut = next_start(starts, next, t0, end);
    const int S = static_cast<int>(cut - t0);
    const float* logits = dec.prefill(x.data() + t0, S);
    for_each_token_nll(logits, V, x.data() + t0 + 1, S, [&](int64_t, double nll) { sum += nll; });
    progress.update(t0 + S);
    if (cut < end) dec.reset();  // a document starts at `cut`
    t0 = cut;
  }
  return sum;
}

// Sliding windows of `window` inputs starting every `stride` tokens; each scores
// only targets beyond the previous window's last.
// With document starts a window runs in pieces, the decoder reset at each start.
double nll_windows(Decoder<float>& dec, int window, int stride, std::span<const int32_t> x,
                   std::span<const int64_t> starts, Progress& progress, bool (*should_stop)()) {
  const int64_t N = static_cast<int64_t>(x.size());
  const int V = dec.vocab();
  double sum = 0;
  int64_t next_target = 1;  // the first target index no window has scored yet
  for (int64_t a = 0; next_target < N; a += stride) {
    const int64_t e = std::min<int64_t>(a + window, N - 1);  // inputs [a, e), targets [a+1, e]
    if (e + 1 <= next_target) continue;
    if (should_stop && should_stop()) return kStopped;
    dec.reset();
    size_t next = 0;
    for (int64_t p = a; p < e;) {
      const int64_t q = next_start(starts, next, p, e);
      const float* logits = dec.prefill(x.data() + p, static_cast<int>(q - p));
      const int64_t j0 = std::max(p, next_target - 1);  // rows j0 - p .. q - p - 1 score x[j0 + 1 .. q]
      if (j0 < q)
        for_each_token_nll(logits + (j0 - p) * V, V, x.data() + j0 + 1, q - j0,
                           [&](int64_t, double nll) { sum += nll; });
      if (q < e) dec.reset();
      p = q;
    }
    next_target = e + 1;
    progress.update(next_target - 1);
  }
  return sum;
}

}  // namespace

double token_nll(const float* logits, int V, int32_t target) {
  const double nll = row_nll(logits, V, target);
  if (std::isnan(nll)) {
    const int i = logits_first_non_finite(logits, V);
    fail("logit of token {} is {}: the model produced a non-finite value; the checkpoint is broken or diverged", i,
         logits[i]);
  }
  return nll;
}

void token_nll_rows(const float* logits, int V, const int32_t* targets, int64_t rows, double* out) {
  parallel_for(rows, parallel_grain(kNllWorkPerLogit * V),
               [&](int64_t r) { out[r] = row_nll(logits + r * V, V, targets[r]); });
  for (int64_t r = 0; r < rows; ++r)
    if (std::isnan(out[r])) out[r] = token_nll(logits + r * V, V, targets[r]);  // throws, naming the logit
}

PerplexityPlan perplexity_plan(const ModelSpec& s, int64_t tokens, const PerplexityOptions& o) {
  if (tokens < 2) fail("perplexity needs at least 2 tokens, got {}; give a longer text", tokens);
  if (o.segment <= 0) fail("perplexity: segment {} must be positive", o.segment);
  PerplexityPlan p;
  if (o.window < 0) fail("perplexity: window {} must be positive (0 = the training context)", o.window);
  p.decoder.precision = o.precision;
  p.decoder.steps = false;  // prefills only: no packed step weights
  p.context = s.model.context_length;
  p.recurrent = !s.attn_state_grows() && !o.sliding && o.window == 0;
  if (p.recurrent) {
    p.segment = static_cast<int>(std::min<int64_t>(o.segment, tokens - 1));
    p.decoder.max_segment = p.segment;
    p.decoder.max_positions = tokens - 1;  // the RoPE table, when the attention uses one
  } else {
    p.window = o.window > 0 ? o.window : s.model.context_length;
    p.stride = o.stride > 0 ? std::min(o.stride, p.window) : std::max(1, p.window / 2);
    // A window past the text holds only the text's tokens - 1 inputs (nll_windows).
    p.decoder.max_segment = static_cast<int>(std::min<int64_t>(p.window, tokens - 1));
    p.decoder.max_positions = p.decoder.max_segment;
  }
  return p;
}

std::string perplexity_method(const PerplexityPlan& p) {
  if (p.recurrent)
    return fmt::format("one pass, recurrent state carried across segments of {} tokens (no context limit)",
                       p.segment);
  return fmt::format("sliding window of {} tokens{}, stride {}", p.window,
                     p.window == p.context ? " (the training context)" : "", p.stride);
}

double perplexity_nll_sum(Decoder<float>& dec, const PerplexityPlan& plan, std::span<const int32_t> x,
                          PassProgress progress_log, bool (*should_stop)(), std::span<const int64_t> starts) {
  RFA_ASSERT(x.size() >= 2, "perplexity over {} tokens", x.size());
  Progress progress(static_cast<int64_t>(x.size()) - 1, progress_log);
  return plan.recurrent ? nll_recurrent(dec, plan.segment, x, starts, progress, should_stop)
                        : nll_windows(dec, plan.window, plan.stride, x, starts, progress, should_stop);
}

PerplexityResult perplexity_evaluate(Model<float>& model, std::span<const int32_t> x, int64_t bytes,
                                     const PerplexityOptions& o, std::span<const int64_t> starts) {
  const ModelSpec& s = model.spec;
  if (bytes <= 0) fail("perplexity: the text has {} bytes; bits per byte needs a positive count", bytes);
  const PerplexityPlan plan = perplexity_plan(s, static_cast<int64_t>(x.size()), o);
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] < 0 || x[i] >= s.V)
      fail("token {} at index {} is outside the model's vocabulary [0, {}); wrong tokenizer?", x[i], i, s.V);
  const std::string limit = plan.recurrent ? fmt::format("--segment ({})", plan.segment)
                                           : plan.window == plan.context
                                                 ? fmt::format("model.context_length ({}, the window)", plan.window)
                                                 : fmt::format("--window ({})", plan.window);
  memory_require(memory_estimate_decoder(s, plan.decoder, thread_count(), limit, plan.recurrent ? "" : limit),
                 "evaluating");
  Timer clock;
  Decoder<float> dec(model, plan.decoder);
  PerplexityResult r;
  r.tokens = static_cast<int64_t>(x.size()) - 1;
  r.bytes = bytes;
  r.method = perplexity_method(plan);
  r.window = plan.window;
  r.stride = plan.stride;
  r.nll_sum = perplexity_nll_sum(dec, plan, x, o.progress ? PassProgress{"eval"} : PassProgress{}, nullptr, starts);
  if (!starts.empty()) r.method += ", restarted at each document (data.document_boundaries reset)";
  r.mean_nll = r.nll_sum / static_cast<double>(r.tokens);
  r.perplexity = std::exp(r.mean_nll);
  r.bits_per_byte = r.nll_sum / std::log(2.0) / static_cast<double>(bytes);
  r.seconds = clock.seconds();
  return r;
}

}  // namespace rfa
