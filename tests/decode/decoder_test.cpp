// The decoder against the training forward: for every attention kind, logits
// from token-by-token decoding, from prefill-then-step and from prefill in
// uneven segments all equal the logits of one full model_forward at every
// position (double: to rounding; float: to float tolerance). bf16: decoder_bf16_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "config/config_enums.h"
#include "decode/decoder.h"
#include "model/activations.h"
#include "model/model.h"
#include "model/model_forward.h"
#include "support/attention_variants.h"
#include "support/conv_taps.h"
#include "support/decoder_cases.h"
#include "support/gradcheck.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

using namespace test::decoder_cases;

template <typename T>
void check_kind(const ModelSpec& spec, double rtol, double atol) {
  Model<T> model(spec);
  model_init(model, 11);
  test::conv_taps_randomize(model, 11);  // the short convolution's variants: not the identity
  const std::vector<int32_t> tokens = tokens_make(5);
  const std::vector<T> full = full_forward(model, tokens);
  const size_t n = full.size();
  const std::vector<T> steps = decode(model, tokens, 0, 1);
  test::check_close("step-only vs full forward", steps.data(), full.data(), n, rtol, atol);
  const std::vector<T> prefill_all = decode(model, tokens, kT, kT);
  test::check_close("one prefill vs full forward", prefill_all.data(), full.data(), n, rtol, atol);
  const std::vector<T> pieces = decode(model, tokens, kT, 5);  // segments 5, 5, 3
  test::check_close("segmented prefill vs full forward", pieces.data(), full.data(), n, rtol, atol);
  for (int prefill : {1, 6, 12}) {
    INFO("prefill ", prefill, " then steps");
    const std::vector<T> mixed = decode(model, tokens, prefill, 4);
    test::check_close("prefill-then-step vs step-only", mixed.data(), steps.data(), n, rtol, atol);
  }
  // The test would be vacuous if the logits did not depend on the context.
  double spread = 0;
  for (int v = 0; v < kV; ++v) spread = std::max(spread, std::abs(double(full[v]) - double(full[(kT - 1) * kV + v])));
  CHECK(spread > 1e-2);
}

}  // namespace

TEST_CASE("decoder equals the full forward: softmax with rope (KV cache)") {
  check_kind<double>(small_spec(AttentionKind::softmax), 1e-10, 1e-12);
  check_kind<float>(small_spec(AttentionKind::softmax), 5e-4, 5e-5);
}

TEST_CASE("decoder: windowed softmax prefills as it steps; a window past the text is the full forward") {
  Model<double> model(small_spec(AttentionKind::softmax));
  model_init(model, 11);
  const std::vector<int32_t> tokens = tokens_make(5);
  const size_t n = size_t(kB) * kT * kV;
  const std::vector<double> full = full_forward(model, tokens);
  const std::vector<double> wide = decode(model, tokens, 6, 4, kT + 3);
  test::check_close("window > T vs full forward", wide.data(), full.data(), n, 1e-10, 1e-12);
  // Window 4 over 13 positions: prompts longer than the window, in any segmentation.
  const std::vector<double> steps = decode(model, tokens, 0, 1, 4);
  for (auto [prefill, segment] : {std::pair{kT, kT}, std::pair{kT, 5}, std::pair{9, 3}, std::pair{4, 4}}) {
    INFO("prefill ", prefill, " in segments of ", segment);
    const std::vector<double> got = decode(model, tokens, prefill, segment, 4);
    test::check_close("windowed prefill vs steps", got.data(), steps.data(), n, 1e-10, 1e-12);
  }
  double spread = 0;  // the window must change the logits past position 4
  for (size_t i = 0; i < n; ++i) spread = std::max(spread, std::abs(steps[i] - full[i]));
  CHECK(spread > 1e-3);
}

// A trained window (attention.window): the training forward masks keys older than w, and the
// decoder's ring of exactly w slots gives the same logits at every position, w < T included.
TEST_CASE("decoder equals the full forward: softmax with a trained window, at positions past it") {
  for (int w : {1, 3, kT + 4}) {
    CAPTURE(w);
    Config c = test::tiny_config(AttentionKind::softmax,
                                 {.vocab = kV, .context = kT, .num_features = 5, .chunk_size = 4, .init_std = 0.3});
    c.attention.window = w;
    const ModelSpec spec = test::tiny_spec(c);
    REQUIRE(!spec.attn_state_grows());
    check_kind<double>(spec, 1e-10, 1e-12);
    check_kind<float>(spec, 5e-4, 5e-5);
    // The decoder's --window does not change a trained window's layer: it keeps its w slots.
    Model<double> model(spec);
    model_init(model, 11);
    const std::vector<int32_t> tokens = tokens_make(5);
    const std::vector<double> own = decode(model, tokens, 6, 4), other = decode(model, tokens, 6, 4, 5);
    CHECK(own == other);
    // Not vacuous: a window shorter than the text changes the logits.
    if (w < kT) {
      Model<double> full(small_spec(AttentionKind::softmax));
      model_init(full, 11);
      const std::vector<double> a = full_forward(full, tokens), b = full_forward(model, tokens);
      double diff = 0;
      for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
      CHECK(diff > 1e-3);
    }
  }
}

TEST_CASE("decoder: a trained window's state is w slots, fixed, whatever the positions") {
  Config c = test::tiny_config(AttentionKind::softmax, {.vocab = kV, .context = kT});
  c.attention.window = 3;
  Model<float> model(test::tiny_spec(c));
  model_init(model, 1);
  DecoderOptions o;
  o.batch = 1;
  o.max_segment = 8;
  o.max_positions = 100;
  o.window = 0;  // the decoder's own window (full softmax layers) is not the trained one
  Decoder<float> dec(model, o);
  const int64_t capacity = dec.state_capacity_bytes();
  CHECK(capacity == 2 * 2 * 2 * 3 * 8 * 4);  // L * (k, v) * H * w * Dh * 4
  int32_t tok = 3;
  for (int i = 0; i < 100; ++i) dec.step(&tok);
  CHECK(dec.state_bytes() == capacity);
  CHECK(dec.state_capacity_bytes() == capacity);
  CHECK_THROWS_AS(dec.step(&tok), Error);  // past max_positions: the RoPE table, not the cache
}

TEST_CASE("decoder equals the full forward: rfa gaussian") {
  check_kind<double>(small_spec(AttentionKind::rfa), 1e-10, 1e-12);
  check_kind<float>(small_spec(AttentionKind::rfa), 5e-4, 5e-5);
}

TEST_CASE("decoder equals the full forward: rfa_gate gaussian") {
  check_kind<double>(small_spec(AttentionKind::rfa_gate), 1e-10, 1e-12);
  check_kind<float>(small_spec(AttentionKind::rfa_gate), 5e-4, 5e-5);
}

TEST_CASE("decoder equals the full forward: rfa_gate arccos") {
  check_kind<double>(small_spec(AttentionKind::rfa_gate, FeatureMapKind::arccos), 1e-10, 1e-12);
  check_kind<float>(small_spec(AttentionKind::rfa_gate, FeatureMapKind::arccos), 5e-4, 5e-5);
}

// The discount reads each row's absolute position: prefill segments and steps must pass it.
TEST_CASE("decoder equals the full forward: rfa_gate with the feature gate, and with the time discount") {
  for (GateKind gate : {GateKind::feature, GateKind::scalar})
    for (FeatureMapKind map : {FeatureMapKind::gaussian, FeatureMapKind::arccos}) {
      CAPTURE(int(gate));
      CAPTURE(int(map));
      Config c = test::tiny_config(AttentionKind::rfa_gate,
                                   {.vocab = kV, .context = kT, .num_features = 5, .chunk_size = 4, .init_std = 0.3});
      c.attention.feature_map = map;
      c.attention.gate_bias_init = 0.5;
      c.attention.gate = gate;
      c.attention.time_discount = TimeDiscountKind::log;
      check_kind<double>(test::tiny_spec(c), 1e-10, 1e-12);
      check_kind<float>(test::tiny_spec(c), 5e-4, 5e-5);
    }
}

// Each layer decodes with its own kind and state (attention.layers), and a prefill, a step and
// a prefill in segments still give the full forward's logits at every position.
TEST_CASE("decoder equals the full forward: models whose layers differ") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    if (!v.mixed) continue;
    INFO("variant: ", std::string(v.name));
    Config c = test::tiny_config(AttentionKind::rfa_gate, {.vocab = kV, .context = kT, .n_layers = 3,
                                                          .num_features = 5, .chunk_size = 4, .init_std = 0.3});
    c.attention.gate_bias_init = 0.5;
    v.apply(c);
    const ModelSpec spec = test::tiny_spec(c);
    REQUIRE(!spec.attn_uniform());
    check_kind<double>(spec, 1e-10, 1e-12);
    check_kind<float>(spec, 5e-4, 5e-5);
  }
}

// The attention rotates q and k itself, in every path; its RoPE table bounds the positions.
TEST_CASE("decoder equals the full forward: rfa and rfa_gate with rope") {
  for (AttentionKind kind : {AttentionKind::rfa, AttentionKind::rfa_gate}) {
    INFO(enum_name(kind));
    const ModelSpec spec = small_spec(kind, FeatureMapKind::gaussian, PositionKind::rope);
    REQUIRE(spec.attn[0].rope);
    check_kind<double>(spec, 1e-10, 1e-12);
    check_kind<float>(spec, 5e-4, 5e-5);
    // Not vacuous: the same weights without rope give other logits.
    Model<double> with(spec), without(small_spec(kind));
    model_init(with, 11);
    model_init(without, 11);
    const std::vector<int32_t> tokens = tokens_make(5);
    const std::vector<double> a = full_forward(with, tokens), b = full_forward(without, tokens);
    double diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
    CHECK(diff > 1e-3);
    // A decoder without max_positions is refused: the RoPE table needs its length.
    Model<float> model(spec);
    model_init(model, 1);
    DecoderOptions o;
    CHECK_THROWS_AS(Decoder<float>(model, o), Error);
  }
}

TEST_CASE("decoder: RFA state size does not grow with position; softmax cache does") {
  Model<float> rfa_model(small_spec(AttentionKind::rfa_gate));
  model_init(rfa_model, 1);
  DecoderOptions o;
  o.batch = 1;
  o.max_segment = 8;
  Decoder<float> rfa_dec(rfa_model, o);
  const int64_t before = rfa_dec.state_bytes();
  // Far past the training context: RFA has no length limit.
  int32_t tok = 3;
  for (int i = 0; i < 100; ++i) rfa_dec.step(&tok);
  CHECK(rfa_dec.state_bytes() == before);
  // L * H * F * (Dh+1) floats: 2 * 2 * 10 * 9 * 4 bytes.
  CHECK(before == 2 * 2 * 10 * 9 * 4);

  Model<float> sm_model(small_spec(AttentionKind::softmax));
  model_init(sm_model, 1);
  o.max_positions = 4;
  Decoder<float> sm_dec(sm_model, o);
  for (int i = 0; i < 4; ++i) sm_dec.step(&tok);
  CHECK(sm_dec.state_bytes() == 2 * 2 * 4 * 2 * 8 * 4);  // L * (k, v) * H * len * Dh * 4
  CHECK_THROWS_AS(sm_dec.step(&tok), Error);  // cache full: an error, not a silent overwrite

  // Windowed: the cache holds the window, allocated once, however far the text goes.
  o.max_positions = 100;
  o.window = 3;
  Decoder<float> win_dec(sm_model, o);
  const int64_t capacity = win_dec.state_capacity_bytes();
  CHECK(capacity == 2 * 2 * 3 * 2 * 8 * 4);
  for (int i = 0; i < 100; ++i) win_dec.step(&tok);
  CHECK(win_dec.state_bytes() == capacity);
  CHECK(win_dec.state_capacity_bytes() == capacity);
  CHECK_THROWS_AS(win_dec.step(&tok), Error);  // past max_positions (the RoPE table)
  int32_t bad = kV;
  CHECK_THROWS_AS(rfa_dec.step(&bad), Error);
}
