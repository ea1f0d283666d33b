// Perplexity against a hand computation from the training forward's logits:
// RFA carries its state across segments (equal to one forward over the whole
// text); softmax's sliding windows score each target once from the first window
// that covers it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "config/config_enums.h"
#include "eval/perplexity.h"
#include "model/activations.h"
#include "model/model_forward.h"
#include "support/gradcheck.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

constexpr int kV = 13;

ModelSpec spec_of(AttentionKind kind, int context) {
  return test::tiny_spec(kind, {.vocab = kV, .context = context, .num_features = 6, .chunk_size = 8, .init_std = 0.3});
}

std::vector<int32_t> text(int n) {
  CounterRng rng(9);
  std::vector<int32_t> x(static_cast<size_t>(n));
  for (auto& t : x) t = static_cast<int32_t>(rng.below(kV));
  return x;
}

// -log softmax(row)[target] written out plainly.
double nll_by_hand(const float* row, int32_t target) {
  double z = 0;
  for (int v = 0; v < kV; ++v) z += std::exp(double(row[v]));
  return -(double(row[target]) - std::log(z));
}

// Logits of model_forward over inputs x[a, a+len), row t predicts x[a+t+1].
std::vector<float> forward_logits(Model<float>& model, const std::vector<int32_t>& x, int a, int len) {
  Activations<float> acts(model.spec, 1, len);
  model_forward(model, acts, x.data() + a, nullptr, model.random_fixed());
  return std::vector<float>(acts.logits, acts.logits + static_cast<size_t>(len) * kV);
}

}  // namespace

TEST_CASE("perplexity: rfa_gate, one pass with state carried across segments") {
  const int N = 50;
  Model<float> model(spec_of(AttentionKind::rfa_gate, 64));
  model_init(model, 4);
  const std::vector<int32_t> x = text(N);
  const std::vector<float> logits = forward_logits(model, x, 0, N - 1);
  double sum = 0;
  for (int t = 0; t < N - 1; ++t) sum += nll_by_hand(logits.data() + t * kV, x[static_cast<size_t>(t + 1)]);
  for (int segment : {7, 16, 100}) {
    INFO("segment ", segment);
    PerplexityOptions o;
    o.segment = segment;
    o.progress = false;
    PerplexityResult r = perplexity_evaluate(model, x, 123, o);
    CHECK(r.tokens == N - 1);
    CHECK(r.nll_sum == doctest::Approx(sum).epsilon(1e-5));
    CHECK(r.mean_nll == doctest::Approx(sum / (N - 1)).epsilon(1e-5));
    CHECK(r.perplexity == doctest::Approx(std::exp(sum / (N - 1))).epsilon(1e-5));
    CHECK(r.bits_per_byte == doctest::Approx(sum / std::log(2.0) / 123).epsilon(1e-5));
  }
}

// A model trained with attention.positions=rope evaluates in one pass far past
// its table of one segment (the decoder's rope table slides along the text).
TEST_CASE("perplexity: rfa and rfa_gate with rope, one pass equals one forward") {
  const int N = 50;
  for (AttentionKind kind : {AttentionKind::rfa, AttentionKind::rfa_gate}) {
    INFO(enum_name(kind));
    Config c = test::tiny_config(kind, {.vocab = kV, .context = 64, .num_features = 6, .chunk_size = 8, .init_std = 0.3});
    c.attention.positions = PositionKind::rope;
    Model<float> model(test::tiny_spec(c));
    REQUIRE(model.spec.attn[0].rope);
    model_init(model, 4);
    const std::vector<int32_t> x = text(N);
    const std::vector<float> logits = forward_logits(model, x, 0, N - 1);
    double sum = 0;
    for (int t = 0; t < N - 1; ++t) sum += nll_by_hand(logits.data() + t * kV, x[static_cast<size_t>(t + 1)]);
    for (int segment : {1, 7, 100}) {
      INFO("segment ", segment);
      PerplexityOptions o;
      o.segment = segment;
      o.progress = false;
      CHECK(perplexity_evaluate(model, x, 123, o).nll_sum == doctest::Approx(sum).epsilon(1e-5));
    }
  }
}

// The trainer's use: one decoder, many passes; each pass starts from an empty
// state and gives what a fresh perplexity_evaluate gives, bit for bit.
TEST_CASE("perplexity: a reused decoder gives the same sum as a fresh evaluation") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    INFO(enum_name(kind));
    Model<float> model(spec_of(kind, 8));
    model_init(model, 4);
    const std::vector<int32_t> x = text(40);
    PerplexityOptions o;
    o.segment = 16;
    o.progress = false;
    const PerplexityPlan plan = perplexity_plan(model.spec, 40, o);
    CHECK(plan.recurrent == (kind != AttentionKind::softmax));
    Decoder<float> dec(model, plan.decoder);
    const double first = perplexity_nll_sum(dec, plan, x, PassProgress{});
    CHECK(perplexity_nll_sum(dec, plan, x, PassProgress{}) == first);
    CHECK(perplexity_evaluate(model, x, 40, o).nll_sum == first);
  }
}

namespace {

// window 0: the training context (8), else --window (RFA kinds then slide without --sliding).
void check_sliding(AttentionKind kind, int window = 0) {
  const int N = 30, ctx = window > 0 ? window : 8;
  Model<float> model(spec_of(kind, 8));
  model_init(model, 4);
  // The reference forward runs windows of ctx: the same weights in a model of that context.
  Model<float> ref(spec_of(kind, ctx));
  std::copy_n(model.params(), model.param_size(), ref.params());
  std::copy_n(model.random_fixed(), model.random_size, ref.random_fixed());
  const std::vector<int32_t> x = text(N);
  for (int stride : {3, 8}) {
    INFO("stride ", stride);
    // Target i comes from the first window a = 0, stride, 2 stride, ... whose
    // inputs [a, min(a + ctx, N - 1)) reach position i - 1.
    double sum = 0;
    for (int i = 1; i < N; ++i) {
      int a = 0;
      while (std::min(a + ctx, N - 1) < i) a += stride;
      const int len = std::min(ctx, N - 1 - a);
      const std::vector<float> logits = forward_logits(ref, x, a, len);
      sum += nll_by_hand(logits.data() + (i - 1 - a) * kV, x[static_cast<size_t>(i)]);
    }
    PerplexityOptions o;
    o.stride = stride;
    o.window = window;
    o.sliding = window == 0;  // needed by RFA kinds only, unless a window is given
    o.progress = false;
    PerplexityResult r = perplexity_evaluate(model, x, 77, o);
    CHECK(r.window == ctx);
    CHECK(r.stride == stride);
    CHECK(r.tokens == N - 1);
    CHECK(r.nll_sum == doctest::Approx(sum).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("perplexity: softmax sliding window scores each target once") { check_sliding(AttentionKind::softmax); }

TEST_CASE("perplexity: rfa_gate with --sliding uses the same windows") { check_sliding(AttentionKind::rfa_gate); }

TEST_CASE("perplexity: --window slides windows longer than the training context") {
  check_sliding(AttentionKind::softmax, 12);  // RoPE positions past the training context
  check_sliding(AttentionKind::rfa_gate, 12);
}

TEST_CASE("perplexity: token_nll and input errors") {
  const std::vector<float> row = {0.f, std::log(3.f)};  // probabilities 1/4, 3/4
  CHECK(token_nll(row.data(), 2, 0) == doctest::Approx(std::log(4.0)));
  CHECK(token_nll(row.data(), 2, 1) == doctest::Approx(std::log(4.0 / 3.0)));
  std::vector<float> bad = {0.f, NAN};
  CHECK_THROWS_AS(token_nll(bad.data(), 2, 0), Error);
  Model<float> model(spec_of(AttentionKind::rfa, 16));
  model_init(model, 1);
  PerplexityOptions o;
  o.progress = false;
  CHECK_THROWS_AS(perplexity_evaluate(model, std::vector<int32_t>{1}, 10, o), Error);
  CHECK_THROWS_AS(perplexity_evaluate(model, std::vector<int32_t>{1, kV}, 10, o), Error);
}

// The rows on the pool give each row the value token_nll gives it alone, and for_each_token_nll
// hands them out in row order across its stack blocks (sums the same doubles as a serial pass).
TEST_CASE("perplexity: rows scored on the pool equal token_nll row by row, in order; a bad row throws") {
  const int V = 2048;  // enough work a row that the pool forks
  CounterRng rng(21);
  for (int rows : {1, 255, 256, 257, 600}) {
    INFO("rows ", rows);
    std::vector<float> logits(static_cast<size_t>(rows) * V);
    for (auto& l : logits) l = float(rng.uniform()) * 12.0f - 6.0f;
    std::vector<int32_t> targets(static_cast<size_t>(rows));
    for (auto& t : targets) t = static_cast<int32_t>(rng.below(V));
    int64_t next = 0, differ = 0;
    double sum = 0, serial = 0;
    for_each_token_nll(logits.data(), V, targets.data(), rows, [&](int64_t r, double nll) {
      differ += r != next++;
      differ += nll != token_nll(logits.data() + r * V, V, targets[static_cast<size_t>(r)]);
      sum += nll;
    });
    for (int64_t r = 0; r < rows; ++r) serial += token_nll(logits.data() + r * V, V, targets[static_cast<size_t>(r)]);
    CHECK(next == rows);
    CHECK(differ == 0);
    CHECK(sum == serial);
    logits[static_cast<size_t>(rows - 1) * V + 5] = INFINITY;  // the last row: thrown after the region
    std::vector<double> out(static_cast<size_t>(rows));
    CHECK_THROWS_WITH_AS(token_nll_rows(logits.data(), V, targets.data(), rows, out.data()),
                         doctest::Contains("logit of token 5 is inf"), Error);
  }
}

TEST_CASE("perplexity: a window past the text holds the text; the default window is named the training context") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    INFO(enum_name(kind));
    Model<float> model(spec_of(kind, 8));
    model_init(model, 4);
    const std::vector<int32_t> x = text(30);
    PerplexityOptions o;
    o.progress = false;
    o.sliding = true;
    const PerplexityPlan context = perplexity_plan(model.spec, 30, o);
    CHECK(context.window == 8);
    CHECK(perplexity_method(context).find("(the training context)") != std::string::npos);
    // A window of 10^8 over 30 tokens: one window of 29 inputs, sized so (it used to be refused
    // for memory, the decoder sized for 10^8 positions).
    o.window = 100000000;
    const PerplexityPlan wide = perplexity_plan(model.spec, 30, o);
    CHECK(wide.window == 100000000);
    CHECK(wide.decoder.max_segment == 29);
    CHECK(wide.decoder.max_positions == 29);
    CHECK(perplexity_method(wide).find("training context") == std::string::npos);
    const double sum = perplexity_evaluate(model, x, 30, o).nll_sum;
    o.window = 29;
    CHECK(perplexity_evaluate(model, x, 30, o).nll_sum == sum);
  }
}

TEST_CASE("perplexity: with document starts, each document is scored from its own tokens") {
  // data.document_boundaries reset: the decoder restarts at 13 and 30; the logits at a
  // document's last token still score the next one's first (as training's targets do), so the
  // sum is that of the texts x[0, 14), x[13, 31) and x[30, 40) each scored alone.
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    INFO(enum_name(kind));
    Model<float> model(spec_of(kind, 8));
    model_init(model, 4);
    const std::vector<int32_t> x = text(40);
    PerplexityOptions o;
    o.segment = 16;
    if (kind == AttentionKind::softmax) o.window = 40;  // one window over the text: the pieces see what it sees
    o.progress = false;
    const PerplexityPlan plan = perplexity_plan(model.spec, 40, o);
    Decoder<float> dec(model, plan.decoder);
    const std::vector<int64_t> starts = {0, 13, 30};
    const double packed = perplexity_nll_sum(dec, plan, x, PassProgress{}, nullptr, starts);
    double pieces = 0;
    for (auto [a, e] : {std::pair{0, 14}, {13, 31}, {30, 40}})
      pieces += perplexity_nll_sum(dec, plan, std::span<const int32_t>(x.data() + a, size_t(e - a)), PassProgress{});
    CHECK(packed == doctest::Approx(pieces).epsilon(1e-5));
    CHECK(packed != doctest::Approx(perplexity_nll_sum(dec, plan, x, PassProgress{})).epsilon(1e-5));
  }
}
